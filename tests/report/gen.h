/* gen.h: synthetic .vtrace files with exactly known behaviour, written with
 * the trace writer API (tests and the report benchmark). Times are ns since
 * the trace's start. The start is an hour ahead of CLOCK_MONOTONIC: the
 * writer raises any timestamp below the clock at its last flush, so
 * synthetic times must stay ahead of the real clock. */
#ifndef VRAMTRACE_TESTS_REPORT_GEN_H
#define VRAMTRACE_TESTS_REPORT_GEN_H

#include "vtrace.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

typedef struct vtg {
    vt_writer *w;
    vt_tbuf *tb;
    uint64_t t0; /* start_mono_ns of the trace */
    int failed;  /* a vt_write failed: vtg_close returns -1 */
} vtg;

/* Create path (must not exist) with argv in the header. Returns 0 or -1. */
int vtg_open(vtg *g, const char *path, int argc, const char *const *argv);
/* Header fields a test sets (0: vtg_open's). */
typedef struct vtg_head {
    uint32_t pid, ppid, flags; /* flags: VT_HDR_* */
    const char *run_id;        /* the run (vt_run_id_valid), NULL: none */
    uint64_t start_after_ns;   /* start_mono_ns after the first trace this process opened */
} vtg_head;

/* The same with header fields h, no argv. */
int vtg_open_head(vtg *g, const char *path, const vtg_head *h);
/* Close the trace. Returns 0, or -1 when it or any write failed. */
int vtg_close(vtg *g);

void vtg_string(vtg *g, uint32_t id, const char *text);
/* A module without a build-id (as an object built with --build-id=none). */
void vtg_module(vtg *g, uint32_t id, const char *path, uint64_t bias, uint64_t start, uint64_t end);
/* A module with its GNU build-id in lowercase hex ("": none). */
void vtg_module_id(vtg *g, uint32_t id, const char *path, uint64_t bias, uint64_t start,
                   uint64_t end, const char *build_id);
/* The GNU build-id of the ELF file at path in lowercase hex into out (""
 * when it has none), read with libelf and libdwelf (not as the recorder
 * reads it, from memory): for a module record naming a real file. 0, or -1
 * when the file cannot be opened as ELF. */
int vtg_file_build_id(const char *path, char out[VT_MAX_ID_LEN + 1]);
void vtg_stack(vtg *g, uint32_t id, uint32_t parent, uint64_t ip);
/* A Python frame (function and file: string ids) and a stack trie node
 * holding one (docs/trace.md, py_frame and py_stack_node). */
void vtg_py_frame(vtg *g, uint32_t id, uint32_t function, uint32_t file, uint32_t line);
void vtg_py_stack(vtg *g, uint32_t id, uint32_t parent, uint32_t frame);
void vtg_device(vtg *g, int32_t id, const char *name, uint64_t total);
void vtg_note(vtg *g, const char *text);
void vtg_alloc(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack);
void vtg_free(vtg *g, uint64_t t, uint64_t addr);
/* The same with the allocating API (e.g. VT_API_CU_MEM_CREATE: addr is a handle). */
void vtg_alloc_api(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack,
                   enum vt_api api);
void vtg_free_api(vtg *g, uint64_t t, uint64_t addr, enum vt_api api);
/* The same on a device (-1: host memory). */
void vtg_alloc_on(vtg *g, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack, int32_t device,
                  enum vt_api api);
/* cuMemMap of a cuMemCreate handle at [addr, addr + size); cuMemUnmap. */
void vtg_vmm_map(vtg *g, uint64_t t, uint64_t handle, uint64_t addr, uint64_t size);
void vtg_vmm_unmap(vtg *g, uint64_t t, uint64_t addr, uint64_t size);
/* A failed cudaMalloc on device 0 (out of memory), free_b of total free. */
void vtg_failed(vtg *g, uint64_t t, uint64_t size, uint32_t stack, uint64_t free_b, uint64_t total);
/* The same with its error, device (-1: host memory) and api. */
void vtg_failed_on(vtg *g, uint64_t t, uint64_t size, uint32_t stack, int32_t error, int32_t device,
                   enum vt_api api, uint64_t free_b, uint64_t total);
void vtg_meminfo(vtg *g, uint64_t t, uint64_t free_b, uint64_t total);
/* A free call that failed (VT_REC_FREE_FAILED): call is a string id
 * (vtg_string) of the function's name; flags VT_FREE_FAILED_*. */
void vtg_free_failed(vtg *g, uint64_t t, uint64_t addr, int32_t error, uint32_t stack,
                     uint32_t call, uint32_t flags);
/* A stream-ordered pool's state on device 0 (VT_REC_POOL_STAT), bytes. */
void vtg_pool_stat(vtg *g, uint64_t t, uint64_t pool, uint64_t reserved, uint64_t used);
void vtg_push(vtg *g, uint64_t t, uint32_t name);
/* A CUDA stream capture of stream began (1) or ended (0) on the trace's thread. */
void vtg_capture(vtg *g, uint64_t t, uint64_t stream, int began);
void vtg_pop(vtg *g, uint64_t t);
void vtg_heap(vtg *g, uint64_t t, uint64_t id, uint64_t addr, uint64_t size);
void vtg_heap_free(vtg *g, uint64_t t, uint64_t id);
void vtg_region(vtg *g, uint64_t t, uint64_t heap, uint64_t addr, uint64_t size, uint32_t stack);
/* Name a region (NVTX Mem regions name): string id `name`. */
void vtg_region_name(vtg *g, uint64_t t, uint64_t heap, uint64_t addr, uint32_t name);
void vtg_region_free(vtg *g, uint64_t t, uint64_t heap, uint64_t addr);
void vtg_end(vtg *g, uint64_t t, int status);
/* An end of process by signal (status 0), as vramtrace run records a kill. */
void vtg_end_signal(vtg *g, uint64_t t, int signal);

/* Write one of the named scenarios to path (their names: vtg_scenario_name).
 * Returns 0, or -1 (unknown name, I/O). */
int vtg_scenario(const char *name, const char *path);
/* The i-th scenario's name (basic, growth, capacity, leakoom, frag, external,
 * xss, noend, empty, badutf8, sections, failures), NULL past the last. */
const char *vtg_scenario_name(size_t i);
/* A large trace for the benchmark: about `events` events. */
int vtg_big(const char *path, uint64_t events);
/* A trace small on disk whose report state grows with n: kind "stacks" (n
 * distinct stacks), "ranges" (n NVTX ranges never popped), "devices" (n
 * device ids), "live" (n allocations never freed), "regions" (n regions in
 * one heap), "heaps" (n heaps), "waiting" (n heaps waiting for their
 * allocation, 10 n allocations elsewhere) or "mappings" (n VMM pages
 * unmapped in one call, n more mapped). Returns 0, or -1 (unknown kind,
 * I/O). */
int vtg_stress(const char *path, const char *kind, uint64_t n);

#endif
