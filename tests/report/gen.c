/* gen.c: synthetic traces with known behaviour (see gen.h). */
#include "gen.h"
#include "report.h"
#include "storm_shape.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int open_with(vtg *g, const char *path, int argc, const char *const *argv,
                     const vtg_head *hd)
{
    static uint64_t base; /* the first trace's start: later ones count from it */
    struct timespec now;
    if (!base) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        base = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec + 3600000000000ull;
    }
    g->failed = 0;
    g->t0 = base + hd->start_after_ns;
    vt_header h = {.format_version = VT_FORMAT_VERSION,
                   .pid = hd->pid ? hd->pid : 4242,
                   .host = "testhost",
                   .program = argc ? argv[0] : "synthetic",
                   .argc = (uint32_t)argc,
                   .argv = argv,
                   .start_wall_ns = 1700000000000000000ull,
                   .start_mono_ns = g->t0,
                   .vramtrace_version = "test",
                   .stack_depth = 64,
                   .ppid = hd->ppid,
                   .flags = hd->flags,
                   .run_id = hd->run_id};
    vt_writer_opts o = {.no_thread = true};
    char err[256];
    g->w = vt_writer_open(path, &h, &o, err, sizeof err);
    if (!g->w) {
        fprintf(stderr, "vtg_open %s: %s\n", path, err);
        return -1;
    }
    g->tb = vt_writer_attach(g->w, 100);
    return g->tb ? 0 : -1;
}

int vtg_open(vtg *g, const char *path, int argc, const char *const *argv)
{
    return open_with(g, path, argc, argv, &(vtg_head){0});
}

int vtg_open_head(vtg *g, const char *path, const vtg_head *h)
{
    return open_with(g, path, 0, NULL, h);
}

int vtg_close(vtg *g)
{
    vt_writer_detach(g->w, g->tb);
    int rc = vt_writer_close(g->w);
    return g->failed ? -1 : rc;
}

static void put(vtg *g, vt_event ev)
{
    if (vt_write(g->tb, &ev) != 0)
        g->failed = 1;
}

void vtg_string(vtg *g, uint32_t id, const char *text)
{
    put(g, (vt_event){.type = VT_REC_STRING, .u.string = {id, text}});
}

void vtg_module(vtg *g, uint32_t id, const char *path, uint64_t bias, uint64_t start, uint64_t end)
{
    vtg_module_id(g, id, path, bias, start, end, "");
}

void vtg_module_id(vtg *g, uint32_t id, const char *path, uint64_t bias, uint64_t start,
                   uint64_t end, const char *build_id)
{
    put(g, (vt_event){.type = VT_REC_MODULE, .u.module = {id, path, bias, start, end, build_id}});
}

void vtg_stack(vtg *g, uint32_t id, uint32_t parent, uint64_t ip)
{
    put(g, (vt_event){.type = VT_REC_STACK_NODE, .u.stack_node = {id, parent, ip}});
}

void vtg_py_frame(vtg *g, uint32_t id, uint32_t function, uint32_t file, uint32_t line)
{
    put(g, (vt_event){.type = VT_REC_PY_FRAME, .u.py_frame = {id, function, file, line}});
}

void vtg_py_stack(vtg *g, uint32_t id, uint32_t parent, uint32_t frame)
{
    put(g, (vt_event){.type = VT_REC_PY_STACK_NODE, .u.py_stack_node = {id, parent, frame}});
}

void vtg_device(vtg *g, int32_t id, const char *name, uint64_t total)
{
    put(g, (vt_event){.type = VT_REC_DEVICE, .u.device = {id, name, total}});
}

void vtg_note(vtg *g, const char *text)
{
    put(g, (vt_event){.type = VT_REC_NOTE, .u.note = {text}});
}

void vtg_alloc_on(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack, int32_t device,
                  enum vt_api api)
{
    put(g, (vt_event){.type = VT_REC_ALLOC,
                      .ts_ns = g->t0 + t,
                      .u.alloc = {addr, size, stack, device, api, 0}});
}

void vtg_alloc_api(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack,
                   enum vt_api api)
{
    vtg_alloc_on(g, t, addr, size, stack, 0, api);
}

void vtg_alloc(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    vtg_alloc_api(g, t, addr, size, stack, VT_API_CUDA_MALLOC);
}

void vtg_free_api(vtg *g, uint64_t t, uint64_t addr, enum vt_api api)
{
    put(g, (vt_event){.type = VT_REC_FREE, .ts_ns = g->t0 + t, .u.free = {addr, 0, api}});
}

void vtg_vmm_map(vtg *g, uint64_t t, uint64_t handle, uint64_t addr, uint64_t size)
{
    put(g, (vt_event){.type = VT_REC_VMM_MAP,
                      .ts_ns = g->t0 + t,
                      .u.vmm = {.handle = handle, .addr = addr, .size = size}});
}

void vtg_vmm_unmap(vtg *g, uint64_t t, uint64_t addr, uint64_t size)
{
    put(g, (vt_event){.type = VT_REC_VMM_UNMAP,
                      .ts_ns = g->t0 + t,
                      .u.vmm = {.addr = addr, .size = size}});
}

void vtg_free(vtg *g, uint64_t t, uint64_t addr)
{
    vtg_free_api(g, t, addr, VT_API_CUDA_MALLOC);
}

void vtg_failed_on(vtg *g, uint64_t t, uint64_t size, uint32_t stack, int32_t error, int32_t device,
                   enum vt_api api, uint64_t free_b, uint64_t total)
{
    put(g, (vt_event){.type = VT_REC_ALLOC_FAILED,
                      .ts_ns = g->t0 + t,
                      .u.failed = {size, error, stack, device, api, free_b, total}});
}

void vtg_failed(vtg *g, uint64_t t, uint64_t size, uint32_t stack, uint64_t free_b, uint64_t total)
{
    vtg_failed_on(g, t, size, stack, VT_ERROR_OUT_OF_MEMORY, 0, VT_API_CUDA_MALLOC, free_b, total);
}

void vtg_free_failed(vtg *g, uint64_t t, uint64_t addr, int32_t error, uint32_t stack,
                     uint32_t call, uint32_t flags)
{
    put(g, (vt_event){.type = VT_REC_FREE_FAILED,
                      .ts_ns = g->t0 + t,
                      .u.free_failed = {addr, error, stack, call, flags}});
}

void vtg_meminfo(vtg *g, uint64_t t, uint64_t free_b, uint64_t total)
{
    put(g, (vt_event){.type = VT_REC_MEMINFO, .ts_ns = g->t0 + t, .u.meminfo = {0, free_b, total}});
}

void vtg_pool_stat(vtg *g, uint64_t t, uint64_t pool, uint64_t reserved, uint64_t used)
{
    put(g,
        (vt_event){
            .type = VT_REC_POOL_STAT,
            .ts_ns = g->t0 + t,
            .u.pool = {.device = 0, .pool = pool, .reserved_bytes = reserved, .used_bytes = used}});
}

void vtg_push(vtg *g, uint64_t t, uint32_t name)
{
    put(g, (vt_event){.type = VT_REC_RANGE_PUSH, .ts_ns = g->t0 + t, .u.range = {0, name}});
}

void vtg_capture(vtg *g, uint64_t t, uint64_t stream, int began)
{
    put(g, (vt_event){.type = VT_REC_CAPTURE,
                      .ts_ns = g->t0 + t,
                      .u.capture = {.stream = stream, .began = (uint32_t)began}});
}

void vtg_pop(vtg *g, uint64_t t)
{
    put(g, (vt_event){.type = VT_REC_RANGE_POP, .ts_ns = g->t0 + t, .u.range = {0, 0}});
}

void vtg_heap(vtg *g, uint64_t t, uint64_t id, uint64_t addr, uint64_t size)
{
    put(g, (vt_event){
               .type = VT_REC_HEAP_REGISTER, .ts_ns = g->t0 + t, .u.heap = {id, addr, size, 0}});
}

void vtg_heap_free(vtg *g, uint64_t t, uint64_t id)
{
    put(g, (vt_event){.type = VT_REC_HEAP_UNREGISTER, .ts_ns = g->t0 + t, .u.heap = {id, 0, 0, 0}});
}

void vtg_region(vtg *g, uint64_t t, uint64_t heap, uint64_t addr, uint64_t size, uint32_t stack)
{
    put(g, (vt_event){.type = VT_REC_REGION_REGISTER,
                      .ts_ns = g->t0 + t,
                      .u.region = {heap, addr, size, stack, 0}});
}

void vtg_region_name(vtg *g, uint64_t t, uint64_t heap, uint64_t addr, uint32_t name)
{
    put(g, (vt_event){.type = VT_REC_REGION_NAME,
                      .ts_ns = g->t0 + t,
                      .u.region = {heap, addr, 0, 0, name}});
}

void vtg_region_free(vtg *g, uint64_t t, uint64_t heap, uint64_t addr)
{
    put(g, (vt_event){.type = VT_REC_REGION_UNREGISTER,
                      .ts_ns = g->t0 + t,
                      .u.region = {heap, addr, 0, 0, 0}});
}

void vtg_end(vtg *g, uint64_t t, int status)
{
    put(g, (vt_event){.type = VT_REC_END, .ts_ns = g->t0 + t, .u.end = {status, 0, "exit"}});
}

void vtg_end_signal(vtg *g, uint64_t t, int signal)
{
    put(g, (vt_event){.type = VT_REC_END, .ts_ns = g->t0 + t, .u.end = {0, signal, "killed"}});
}

/* ---- scenarios ------------------------------------------------------------- */

/* Stacks shared by the scenarios: leaves 2..5 under root 1, all in a user
 * library; leaf 6 is a vramtrace-internal frame on top of leaf 2 (folded
 * away by the report, so it merges with leaf 2). */
static void prelude(vtg *g, uint64_t total)
{
    vtg_module(g, 1, "/opt/fake/libuser.so", 0, 0x1000, 0x100000);
    vtg_module(g, 2, "/opt/fake/lib/libvramtrace.so", 0, 0x200000, 0x300000);
    vtg_stack(g, 1, 0, 0x1100);
    vtg_stack(g, 2, 1, 0x2200);
    vtg_stack(g, 3, 1, 0x3300);
    vtg_stack(g, 4, 1, 0x4400);
    vtg_stack(g, 5, 1, 0x5500);
    vtg_stack(g, 6, 2, 0x200100);
    vtg_string(g, 1, "train_step");
    vtg_string(g, 2, "init");
    vtg_string(g, 3, "forward");
    vtg_device(g, 0, "SimGPU", total);
}

/* peak 180 MiB at t=6000 (100 MiB site 2 in "init", 80 MiB site 3 in
 * "forward"); leaks: 101 MiB in 2 allocations at site 2, 4096 bytes in 1 at
 * site 3. */
static void sc_basic(vtg *g)
{
    prelude(g, GiB);
    vtg_meminfo(g, 500, GiB - 64 * MiB, GiB);
    vtg_push(g, 1000, 2);
    vtg_alloc(g, 2000, 0x10000000, 100 * MiB, 2);
    vtg_pop(g, 3000);
    vtg_push(g, 4000, 3);
    vtg_alloc(g, 5000, 0x20000000, 50 * MiB, 3);
    vtg_alloc(g, 6000, 0x30000000, 30 * MiB, 3);
    vtg_free(g, 7000, 0x20000000);
    vtg_alloc(g, 8000, 0x40000000, 40 * MiB, 3);
    vtg_pop(g, 9000);
    vtg_free(g, 10000, 0x30000000);
    vtg_free(g, 11000, 0x40000000);
    vtg_alloc(g, 12000, 0x50000000, 1 * MiB, 6);
    vtg_alloc(g, 13000, 0x60000000, 4096, 3);
    vtg_end(g, 14000, 0);
}

/* 10 iterations of train_step: site 2 keeps 1 MiB per iteration, site 3
 * allocates and frees 8 MiB. Growth: 1 MiB/iteration, R^2 = 1. */
static void sc_growth(vtg *g)
{
    prelude(g, GiB);
    uint64_t t = 1000;
    for (int i = 0; i < 10; i++) {
        vtg_push(g, t++, 1);
        vtg_alloc(g, t++, 0x10000000 + (uint64_t)i * MiB, MiB, 2);
        vtg_alloc(g, t++, 0x80000000, 8 * MiB, 3);
        vtg_free(g, t++, 0x80000000);
        vtg_pop(g, t++);
    }
    vtg_end(g, t, 0);
}

/* argv --batch 64; baseline 100 MiB; weights 200 MiB; 8 x 64 MiB of
 * activations; a 256 MiB request fails: capacity, largest batch 60. */
static void sc_capacity(vtg *g)
{
    prelude(g, GiB);
    vtg_meminfo(g, 100, GiB - 100 * MiB, GiB);
    vtg_alloc(g, 200, 0x10000000, 200 * MiB, 4);
    vtg_push(g, 300, 1);
    for (uint64_t i = 0; i < 8; i++)
        vtg_alloc(g, 400 + i, 0x100000000 + i * 64 * MiB, 64 * MiB, 3);
    vtg_failed(g, 500, 256 * MiB, 3, 212 * MiB, GiB);
    vtg_pop(g, 600);
    vtg_end(g, 700, 1);
}

/* 20 iterations each keeping 40 MiB at site 2 (plus 10 MiB temporary at
 * site 3) over 100 MiB of weights; iteration 21 fails: leak. */
static void sc_leakoom(vtg *g)
{
    prelude(g, GiB);
    vtg_meminfo(g, 100, GiB, GiB);
    vtg_alloc(g, 200, 0x10000000, 100 * MiB, 4);
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 20; i++) {
        vtg_push(g, t++, 1);
        vtg_alloc(g, t++, 0x100000000 + i * 64 * MiB, 40 * MiB, 2);
        vtg_alloc(g, t++, 0x80000000, 10 * MiB, 3);
        vtg_free(g, t++, 0x80000000);
        vtg_pop(g, t++);
    }
    vtg_push(g, t++, 1);
    vtg_failed(g, t++, 200 * MiB, 3, 124 * MiB, GiB);
    vtg_pop(g, t++);
    vtg_end(g, t, 1);
}

/* A 100 MiB heap (segment) with ten 10 MiB regions, every other one freed:
 * 50 MiB free in the heap, largest block 10 MiB; 900 MiB elsewhere; a
 * 30 MiB request fails: fragmentation. */
static void sc_frag(vtg *g)
{
    prelude(g, GiB);
    vtg_meminfo(g, 100, GiB, GiB);
    vtg_alloc(g, 200, 0x200000000, 900 * MiB, 4);
    vtg_alloc(g, 300, 0x10000000, 100 * MiB, 5);
    vtg_heap(g, 301, 1, 0x10000000, 100 * MiB);
    vtg_string(g, 20, "G.5.bn_out");
    vtg_string(g, 21, "<script>alert(4)</script>");
    for (uint64_t i = 0; i < 10; i++)
        vtg_region(g, 400 + i, 1, 0x10000000 + i * 10 * MiB, 10 * MiB, 2);
    /* NVTX Mem region names: shown beside the site (and escaped) */
    vtg_region_name(g, 420, 1, 0x10000000, 20);
    vtg_region_name(g, 421, 1, 0x10000000 + 10 * MiB, 21);
    for (uint64_t i = 1; i < 10; i += 2)
        vtg_region_free(g, 500 + i, 1, 0x10000000 + i * 10 * MiB);
    vtg_failed(g, 600, 30 * MiB, 3, 24 * MiB, GiB);
    vtg_end(g, 700, 1);
}

/* 50 MiB used outside the recording at start; 300 MiB recorded; the device
 * reports only 100 MiB free when a 200 MiB request fails: external. */
static void sc_external(vtg *g)
{
    prelude(g, GiB);
    vtg_meminfo(g, 100, GiB - 50 * MiB, GiB);
    vtg_alloc(g, 200, 0x10000000, 300 * MiB, 2);
    vtg_failed(g, 300, 200 * MiB, 3, 100 * MiB, GiB);
    vtg_end(g, 400, 1);
}

/* Every section of the report model non-empty at once (the sections test):
 * 20 iterations of train_step keeping 40 MiB each at site 2 inside
 * "forward" (growth, phases, range sites, leaks), a heap with regions every
 * other one freed (fragmentation), a pinned host buffer, a note, a failed
 * allocation (an OOM), and 4 KiB kept at each of VR_MAX_MERGED_SITES + 1
 * distinct stacks (report.h: a table left out in part). */
static void sc_sections(vtg *g)
{
    prelude(g, 4 * GiB);
    vtg_note(g, "a note from the recorder");
    vtg_meminfo(g, 100, 4 * GiB, 4 * GiB);
    vtg_alloc_api(g, 150, 0x7f0000000000, MiB, 5, VT_API_CUDA_MALLOC_HOST);
    vtg_alloc(g, 200, 0x10000000, 100 * MiB, 5);
    vtg_heap(g, 201, 1, 0x10000000, 100 * MiB);
    for (uint64_t i = 0; i < 10; i++)
        vtg_region(g, 300 + i, 1, 0x10000000 + i * 10 * MiB, 10 * MiB, 4);
    for (uint64_t i = 1; i < 10; i += 2)
        vtg_region_free(g, 400 + i, 1, 0x10000000 + i * 10 * MiB);
    for (uint32_t i = 0; i <= VR_MAX_MERGED_SITES; i++) {
        vtg_stack(g, 100 + i, 1, 0x10000 + 4 * (uint64_t)i);
        vtg_alloc(g, 500, 0x200000000 + (uint64_t)i * 4096, 4096, 100 + i);
    }
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 20; i++) {
        vtg_push(g, t++, 1);
        vtg_push(g, t++, 3);
        vtg_alloc(g, t++, 0x100000000 + i * 64 * MiB, 40 * MiB, 2);
        vtg_alloc(g, t++, 0x80000000, 10 * MiB, 3);
        vtg_free(g, t++, 0x80000000);
        vtg_pop(g, t++);
        vtg_pop(g, t++);
    }
    vtg_push(g, t++, 1);
    vtg_failed(g, t++, 8 * GiB, 3, 3 * GiB, 4 * GiB);
    vtg_pop(g, t++);
    vtg_string(g, 40, "cudaFree");
    vtg_free_failed(g, t++, 0x80000000, 1, 3, 40, 0); /* freed already */
    vtg_end(g, t, 1);
}

/* Strings from the trace that must come out escaped. */
static void sc_xss(vtg *g)
{
    prelude(g, GiB);
    vtg_module(g, 3, "/tmp/<script>alert(3)</script>/lib.so", 0, 0x400000, 0x500000);
    vtg_stack(g, 7, 1, 0x400100);
    vtg_string(g, 9, "<script>alert(1)</script>");
    vtg_note(g, "<script>alert(2)</script> & \"quotes\"");
    vtg_push(g, 100, 9);
    vtg_alloc(g, 200, 0x10000000, 10 * MiB, 7);
    vtg_alloc(g, 300, 0x20000000, 5 * MiB, 2);
    vtg_pop(g, 400);
    vtg_free(g, 500, 0x20000000);
    vtg_end(g, 600, 0);
}

/* basic without its END record (a program still running, or _exit). */
static void sc_noend(vtg *g)
{
    prelude(g, GiB);
    vtg_alloc(g, 100, 0x10000000, 10 * MiB, 2);
}

/* Definitions and an END but no memory event (a wrapper was traced). */
static void sc_empty(vtg *g)
{
    prelude(g, GiB);
    vtg_end(g, 100, 0);
}

/* argv (see vtg_scenario), an NVTX name and a module path that are not
 * valid UTF-8: the JSON, Chrome and HTML outputs must still be. */
static void sc_badutf8(vtg *g)
{
    prelude(g, GiB);
    vtg_module(g, 3, "/tmp/\xff\xfe/lib.so", 0, 0x400000, 0x500000);
    vtg_stack(g, 7, 1, 0x400100);
    vtg_string(g, 9, "range \xc3\x28 \xed\xa0\x80 \xf0\x9f\x98 end \xe2\x82\xac");
    vtg_push(g, 100, 9);
    vtg_alloc(g, 200, 0x10000000, 10 * MiB, 7);
    vtg_pop(g, 400);
    vtg_end(g, 600, 0);
}

/* An event of the failure kinds a report tells apart, on two devices: a
 * device-1 site larger than device 0's, odd-sized allocations (the driver's
 * rounding), a stream-ordered failure whose pool is at its own limit with room
 * on the device, a failure of another error (700), pinned host memory that
 * could not be had, and a device out-of-memory failure last. */
static void sc_failures(vtg *g)
{
    vtg_device(g, 0, "SimGPU", GiB);
    vtg_device(g, 1, "SimGPU", GiB);
    vtg_stack(g, 1, 0, 0x1100);
    vtg_stack(g, 2, 1, 0x1200);
    vtg_meminfo(g, 5, GiB, GiB);
    for (uint64_t i = 0; i < 8; i++)
        vtg_alloc(g, 10 + i, 0x10000000 + i * 4 * MiB, 3 * MiB + i, 1);
    vtg_alloc_on(g, 30, 0x40000000, 200 * MiB, 2, 1, VT_API_CUDA_MALLOC);
    vtg_alloc_on(g, 35, 0x7f0000000000, 64 * MiB, 2, -1, VT_API_CUDA_MALLOC_HOST);
    vtg_alloc_api(g, 40, 0x20000000, 30 * MiB, 2, VT_API_CUDA_MALLOC_ASYNC);
    vtg_pool_stat(g, 50, 0x5000, 32 * MiB, 30 * MiB);
    vtg_failed_on(g, 50, 8 * MiB, 2, 2, 0, VT_API_CUDA_MALLOC_ASYNC, 968 * MiB, GiB);
    vtg_failed_on(g, 60, MiB, 1, 700, 0, VT_API_CUDA_MALLOC, 800 * MiB, GiB);
    vtg_failed_on(g, 70, 64 * GiB, 2, 2, -1, VT_API_CUDA_MALLOC_HOST, 800 * MiB, GiB);
    vtg_failed_on(g, 80, 2 * GiB, 1, 2, 0, VT_API_CUDA_MALLOC, 700 * MiB, GiB);
    vtg_end(g, 100, 1);
}

/* The scenarios by name (vtg_scenario), with the argv of their header. */
static const struct {
    const char *name;
    void (*fn)(vtg *);
    int argc;
    const char *argv[4];
} scenarios[] = {
    {"basic", sc_basic, 1, {"basic"}},
    {"growth", sc_growth, 1, {"growth"}},
    {"capacity", sc_capacity, 3, {"train", "--batch", "64"}},
    {"leakoom", sc_leakoom, 1, {"leakoom"}},
    {"frag", sc_frag, 1, {"frag"}},
    {"external", sc_external, 1, {"external"}},
    {"xss", sc_xss, 2, {"xss", "<b>bold</b>"}},
    {"noend", sc_noend, 1, {"noend"}},
    {"empty", sc_empty, 1, {"empty"}},
    {"badutf8", sc_badutf8, 2, {"bad\xff", "arg\xc0\xafx"}},
    {"sections", sc_sections, 3, {"train", "--batch", "64"}},
    {"failures", sc_failures, 1, {"failures"}},
};

const char *vtg_scenario_name(size_t i)
{
    return i < sizeof scenarios / sizeof scenarios[0] ? scenarios[i].name : NULL;
}

int vtg_scenario(const char *name, const char *path)
{
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(scenarios[i].name, name) != 0)
            continue;
        vtg g;
        if (vtg_open(&g, path, scenarios[i].argc, scenarios[i].argv) < 0)
            return -1;
        scenarios[i].fn(&g);
        return vtg_close(&g);
    }
    return -1;
}

/* ---- big trace -------------------------------------------------------------- */

static uint64_t lcg(uint64_t *s)
{
    return vt_storm_next(s);
}

static void big_stacks(vtg *g)
{
    vtg_module(g, 1, "/opt/fake/libuser.so", 0, 0x1000, 0x10000000);
    vtg_string(g, 1, "train_step");
    vtg_device(g, 0, "SimGPU", 80 * GiB);
    uint32_t id = 1;
    for (uint32_t s = 0; s < VT_STORM_SITES; s++) { /* 8 frames per site, shared root */
        uint32_t parent = 0;
        for (uint32_t d = 0; d < 8; d++, id++) {
            vtg_stack(g, id, parent, 0x1000 + (d < 3 ? d : (uint64_t)s * 64 + d) * 16);
            parent = id;
        }
    }
}

int vtg_big(const char *path, uint64_t events)
{
    const char *argv[] = {"big"};
    vtg g;
    if (vtg_open(&g, path, 1, argv) < 0)
        return -1;
    big_stacks(&g);
    uint64_t *live = calloc(VT_STORM_LIVE, sizeof(uint64_t)), seed = VT_STORM_SEED, t = 1000, n = 0,
             next = 1;
    if (!live)
        return -1;
    while (n < events) {
        vtg_push(&g, t++, 1);
        for (int k = 0; k < VT_STORM_BLOCK && n < events; k++, n += 2) {
            uint64_t slot = lcg(&seed) % VT_STORM_LIVE;
            if (live[slot])
                vtg_free(&g, t++, live[slot]);
            live[slot] = (next++) << 12;
            uint32_t site = (uint32_t)(lcg(&seed) % VT_STORM_SITES);
            vtg_alloc(&g, t++, live[slot], 512 + lcg(&seed) % (4 * MiB), site * 8 + 8);
        }
        vtg_alloc(&g, t++, (next++) << 12, 1024, 8); /* a slow leak */
        vtg_pop(&g, t++);
        n += 3;
    }
    free(live);
    vtg_end(&g, t, 0);
    return vtg_close(&g);
}

/* ---- stress traces (what a small trace can multiply) ------------------------ */

/* n distinct stacks (a fresh leaf per allocation), each allocated and freed. */
static void stress_stacks(vtg *g, uint64_t n, uint64_t *t)
{
    vtg_module(g, 1, "/opt/fake/libuser.so", 0, 0x1000, 0x10000000);
    vtg_device(g, 0, "SimGPU", 80 * GiB);
    vtg_stack(g, 1, 0, 0x1000);
    for (uint64_t i = 0; i < n; i++) {
        vtg_stack(g, (uint32_t)(i + 2), 1, 0x2000 + i * 16);
        vtg_alloc(g, (*t)++, 0x100000000ull + (i << 12), 4096, (uint32_t)(i + 2));
        if (i % 2)
            vtg_free(g, (*t)++, 0x100000000ull + (i << 12));
    }
}

/* n NVTX ranges, each with its own name, pushed and never popped, one
 * allocation inside each. */
static void stress_ranges(vtg *g, uint64_t n, uint64_t *t)
{
    prelude(g, GiB);
    for (uint64_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "range %llu", (unsigned long long)i);
        vtg_string(g, (uint32_t)(i + 100), name);
        vtg_push(g, (*t)++, (uint32_t)(i + 100));
        vtg_alloc(g, (*t)++, 0x100000000ull + (i << 12), 4096, 2);
    }
}

/* n device ids, one allocation (then a free) on each. */
static void stress_devices(vtg *g, uint64_t n, uint64_t *t)
{
    prelude(g, GiB);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t addr = 0x100000000ull + (i << 12);
        put(g, (vt_event){.type = VT_REC_ALLOC,
                          .ts_ns = g->t0 + (*t)++,
                          .u.alloc = {.addr = addr,
                                      .size = 4096,
                                      .stack = 2,
                                      .device = (int32_t)i,
                                      .api = VT_API_CUDA_MALLOC}});
        put(g, (vt_event){.type = VT_REC_FREE,
                          .ts_ns = g->t0 + (*t)++,
                          .u.free = {addr, (int32_t)i, VT_API_CUDA_MALLOC}});
    }
}

/* n allocations on 200 call sites, never freed (the report's live map at n
 * entries: issue 18's memory per live allocation). */
static void stress_live(vtg *g, uint64_t n, uint64_t *t)
{
    big_stacks(g);
    for (uint64_t i = 0; i < n; i++)
        vtg_alloc(g, (*t)++, 0x100000000ull + (i << 12), 4096,
                  (uint32_t)(i % VT_STORM_SITES) * 8 + 8);
}

/* One heap (a sub-allocator's arena registered with the NVTX Mem API)
 * filled to n live regions of 4 KiB on 200 call sites as a first training
 * step does (two registered, one of them unregistered: a new peak before
 * every unregistration), then n regions freed and registered again at
 * random places in it (the report's regions of one heap at n entries). */
static void stress_regions(vtg *g, uint64_t n, uint64_t *t)
{
    big_stacks(g);
    uint64_t base = 0x100000000ull, seed = 7;
    vtg_alloc(g, (*t)++, base, (n + 1) << 12, 8);
    vtg_heap(g, (*t)++, 1, base, (n + 1) << 12);
    for (uint64_t i = 0; i < n; i++) {
        vtg_region(g, (*t)++, 1, base + (i << 12), 4096, (uint32_t)(i % VT_STORM_SITES) * 8 + 8);
        vtg_region(g, (*t)++, 1, base + ((i + 1) << 12), 4096, 8);
        vtg_region_free(g, (*t)++, 1, base + ((i + 1) << 12));
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = lcg(&seed) % n;
        vtg_region_free(g, (*t)++, 1, base + (k << 12));
        vtg_region(g, (*t)++, 1, base + (k << 12), 4096, (uint32_t)(k % VT_STORM_SITES) * 8 + 8);
    }
}

/* n heaps of 2 MiB (a caching allocator's small segments), each covering
 * its cudaMalloc, filled as a first step fills them: two regions
 * registered, one unregistered (a new peak before every unregistration,
 * where the fragmentation of all the device's heaps is measured). */
static void stress_heaps(vtg *g, uint64_t n, uint64_t *t)
{
    big_stacks(g);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = 0x100000000ull + i * (2 * MiB);
        vtg_alloc(g, (*t)++, a, 2 * MiB, 8);
        vtg_heap(g, (*t)++, i + 1, a, 2 * MiB);
        vtg_region(g, (*t)++, i + 1, a, 4096, (uint32_t)(i % VT_STORM_SITES) * 8 + 8);
        vtg_region(g, (*t)++, i + 1, a + 4096, 4096, 8);
        vtg_region_free(g, (*t)++, i + 1, a);
    }
}

/* n heaps registered on memory the trace never allocates (a sub-allocator
 * over VMM mappings, or over memory allocated before the recording: they
 * wait for their allocation until the end), then 10 n cudaMalloc/cudaFree
 * pairs elsewhere (each allocation is checked against the waiting heaps). */
static void stress_waiting(vtg *g, uint64_t n, uint64_t *t)
{
    big_stacks(g);
    for (uint64_t i = 0; i < n; i++)
        vtg_heap(g, (*t)++, i + 1, 0x7000000000ull + i * (2 * MiB), 2 * MiB);
    for (uint64_t i = 0; i < 10 * n; i++) {
        vtg_alloc(g, (*t)++, 0x100000000ull + (i % 64) * 4096, 4096, 8);
        vtg_free(g, (*t)++, 0x100000000ull + (i % 64) * 4096);
    }
}

/* n VMM handles of 2 MiB mapped side by side and released, then one
 * cuMemUnmap of the whole range (PyTorch's expandable segments unmap many
 * pages in one call), then n more that stay (the map the next unmap walks
 * is not empty). */
static void stress_mappings(vtg *g, uint64_t n, uint64_t *t)
{
    prelude(g, 1ull << 50); /* room for them all */
    const uint64_t base = 0x7f0000000000ull;
    for (uint64_t round = 0; round < 2; round++) {
        uint64_t at = base + round * n * (2 * MiB);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t handle = 0x5000 + round * n + i;
            vtg_alloc_api(g, (*t)++, handle, 2 * MiB, 2, VT_API_CU_MEM_CREATE);
            vtg_vmm_map(g, (*t)++, handle, at + i * (2 * MiB), 2 * MiB);
            vtg_free_api(g, (*t)++, handle, VT_API_CU_MEM_CREATE);
        }
        if (round == 0)
            vtg_vmm_unmap(g, (*t)++, at, n * (2 * MiB));
    }
}

int vtg_stress(const char *path, const char *kind, uint64_t n)
{
    const char *argv[] = {kind};
    void (*fn)(vtg *, uint64_t, uint64_t *) = !strcmp(kind, "stacks")     ? stress_stacks
                                              : !strcmp(kind, "ranges")   ? stress_ranges
                                              : !strcmp(kind, "devices")  ? stress_devices
                                              : !strcmp(kind, "live")     ? stress_live
                                              : !strcmp(kind, "regions")  ? stress_regions
                                              : !strcmp(kind, "heaps")    ? stress_heaps
                                              : !strcmp(kind, "waiting")  ? stress_waiting
                                              : !strcmp(kind, "mappings") ? stress_mappings
                                                                          : NULL;
    vtg g;
    uint64_t t = 1000;
    if (!fn || vtg_open(&g, path, 1, argv) < 0)
        return -1;
    fn(&g, n, &t);
    vtg_end(&g, t, 0);
    return vtg_close(&g);
}

int vtg_file_build_id(const char *path, char out[VT_MAX_ID_LEN + 1])
{
    out[0] = '\0';
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    const void *id;
    ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
    if (n > 0)
        vt_build_id_hex(id, (size_t)n, out);
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return e ? 0 : -1;
}
