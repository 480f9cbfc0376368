/* test_symbolize.c: symbolization (symbolize.c) on this very executable: a C function with
 * its file and line, a demangled C++ one, a CUDA library frame folded; and
 * only from a file whose build-id is the recorded one: another build-id, none
 * recorded, or no file leave the module's frames as offsets with one note,
 * in every output; a version-3 trace (no build-ids) is symbolized as before
 * with one note that identities could not be checked. */
#include "report_test.h"

#include "internal.h"
#include "records.h"
#include "state.h"

#include <link.h>
#include <sys/stat.h>
#include <zstd.h>

__attribute__((noinline)) int vtt_user_site(int x);
__attribute__((noinline)) int vtt_user_site(int x)
{
    volatile int y = x + 1;
    return y * 2;
}

uintptr_t vtt_cxx_site_address(void);

typedef struct self_mod {
    uintptr_t addr;
    uint64_t bias, start, end;
    char path[512];
} self_mod;

/* The module holding m->addr, its extent as the recorder writes it
 * (interpose/stacks.c, module_cb: the lowest PT_LOAD's start to the
 * highest's end). */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    self_mod *m = data;
    uint64_t lo = UINT64_MAX, hi = 0;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        if (ph->p_type != PT_LOAD)
            continue;
        holds = holds || (m->addr >= a && m->addr < b);
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (!holds)
        return 0;
    m->bias = info->dlpi_addr;
    m->start = lo;
    m->end = hi;
    if (info->dlpi_name && info->dlpi_name[0])
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    else if (!realpath("/proc/self/exe", m->path))
        m->path[0] = 0;
    return 1;
}

/* The GNU build-id of the file at path (gen.h's reading of it). */
static void file_build_id(const char *path, char out[VT_MAX_ID_LEN + 1])
{
    assert_int_equal(vtg_file_build_id(path, out), 0);
}

/* The last component of path. */
static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static self_mod self(void)
{
    self_mod m = {.addr = (uintptr_t)&vtt_user_site};
    assert_int_equal(dl_iterate_phdr(find_self, &m), 1);
    return m;
}

/* Trace `name`: this executable as module 1 with build-id build_id, a fake
 * CUDA runtime, and one leaked allocation whose stack is cxx_site <
 * vtt_user_site < the runtime. Returns its path (tmp_path's buffer). */
static const char *symbols_trace(const char *name, const self_mod *m, const char *build_id)
{
    const char *path = tmp_path(name);
    const char *argv[] = {name};
    vtg g;
    assert_int_equal(vtg_open(&g, path, 1, argv), 0);
    vtg_module_id(&g, 1, m->path, m->bias, m->start, m->end, build_id);
    vtg_module(&g, 2, "/opt/fake/libcudart.so.13", 0, 0x1000, 0x2000);
    vtg_stack(&g, 1, 0, (uint64_t)vtt_cxx_site_address() + 4);
    vtg_stack(&g, 2, 1, (uint64_t)(uintptr_t)&vtt_user_site + 4);
    vtg_stack(&g, 3, 2, 0x1100); /* inside "libcudart": folded */
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 100, 0x1000000, MiB, 3);
    vtg_end(&g, 200, 0);
    assert_int_equal(vtg_close(&g), 0);
    return path;
}

static vr_report *analyze(const char *path)
{
    char err[256];
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("%s: %s", path, err);
    return r;
}

/* The leak's stack named from this executable's debug info. */
static void assert_named(const vr_report *r)
{
    assert_int_equal(r->nleaks, 1);
    const vr_stack *st = &r->leaks[0].stack;
    assert_true(st->n >= 2);
    assert_string_equal(st->frames[0].function, "vtt_user_site");
    assert_non_null(strstr(st->frames[0].file, "test_symbolize.c"));
    assert_true(st->frames[0].line > 0);
    assert_non_null(strstr(st->frames[st->n - 1].function, "vtt::cxx_site(int)"));
}

/* How many of r's notes contain needle. */
static size_t notes_with(const vr_report *r, const char *needle)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nnotes; i++)
        n += strstr(r->notes[i], needle) != NULL;
    return n;
}

static void test_symbolize(void **state)
{
    (void)state;
    self_mod m = self();
    char id[VT_MAX_ID_LEN + 1];
    file_build_id(m.path, id);
    assert_true(strlen(id) >= 32); /* the toolchain's default: sha1 or md5 */
    vr_report *r = analyze(symbols_trace("symbols", &m, id));
    assert_named(r);
    assert_int_equal(notes_with(r, "build-id"), 0);
    assert_int_equal(notes_with(r, "could not be checked"), 0);
    vr_report_free(r);
}

/* Does what fn renders of r hold needle (binary outputs included)? */
static bool rendered_has(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *),
                         vr_report *r, const char *needle)
{
    size_t len = 0;
    char *buf = render_len(fn, r, &len);
    bool has = memmem(buf, len, needle, strlen(needle)) != NULL;
    free(buf);
    return has;
}

/* Frames of a module whose file here is not the recorded object: offsets,
 * no name, in the model and in every output; one note naming both ids. */
static void assert_offsets_only(vr_report *r, const self_mod *m, const char *note)
{
    assert_int_equal(r->nleaks, 1);
    const vr_stack *st = &r->leaks[0].stack;
    assert_int_equal(st->n, 2);
    for (size_t i = 0; i < st->n; i++) {
        assert_string_equal(st->frames[i].function, "??");
        assert_string_equal(st->frames[i].file, "");
        assert_string_equal(st->frames[i].module, m->path);
    }
    assert_true(st->frames[0].ip == (uint64_t)(uintptr_t)&vtt_user_site + 4 - m->bias);
    int (*const fns[])(FILE *, vr_report *const *, size_t,
                       const vr_options *) = {vr_render_text,   vr_render_json,   vr_render_html,
                                              vr_render_folded, vr_render_chrome, vr_render_memviz};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        assert_false(rendered_has(fns[i], r, "vtt_user_site"));
        assert_false(rendered_has(fns[i], r, "cxx_site"));
        assert_false(rendered_has(fns[i], r, "test_symbolize.c"));
    }
    assert_true(rendered_has(vr_render_text, r, note));
    assert_int_equal(notes_with(r, base_of(m->path)), 1);
    assert_int_equal(notes_with(r, note), 1);
}

/* The recorded build-id is another one than the file's here (the last hex
 * digit changed), or none is recorded for a file that has one. */
static void test_build_id_differs(void **state)
{
    (void)state;
    self_mod m = self();
    char id[VT_MAX_ID_LEN + 1], want[1024];
    file_build_id(m.path, id);
    char other[VT_MAX_ID_LEN + 1];
    snprintf(other, sizeof other, "%s", id);
    other[strlen(other) - 1] = other[strlen(other) - 1] == '0' ? '1' : '0';
    vr_report *r = analyze(symbols_trace("other_id", &m, other));
    snprintf(want, sizeof want,
             "%s here differs from the recorded one (build-id %s recorded, %s here): its "
             "frames are shown as offsets",
             base_of(m.path), other, id);
    assert_offsets_only(r, &m, want);
    vr_report_free(r);
    r = analyze(symbols_trace("no_id", &m, ""));
    snprintf(want, sizeof want, "(build-id none recorded, %s here)", id);
    assert_offsets_only(r, &m, want);
    vr_report_free(r);
}

/* The recorded path holds no file here. */
static void test_module_missing(void **state)
{
    (void)state;
    self_mod m = self();
    char id[VT_MAX_ID_LEN + 1];
    file_build_id(m.path, id);
    snprintf(m.path, sizeof m.path, "%s", "/nonexistent/vramtrace-test/libgone.so");
    vr_report *r = analyze(symbols_trace("missing", &m, id));
    assert_offsets_only(r, &m, "/nonexistent/vramtrace-test/libgone.so cannot be read here");
    vr_report_free(r);
}

/* The recorded path is a FIFO here (a damaged or crafted trace): not opened
 * (an open would wait for a writer forever), shown as offsets with why. */
static void test_module_fifo(void **state)
{
    (void)state;
    self_mod m = self();
    char id[VT_MAX_ID_LEN + 1], want[1024];
    file_build_id(m.path, id);
    snprintf(m.path, sizeof m.path, "%s", tmp_path("fifo"));
    unlink(m.path);
    assert_int_equal(mkfifo(m.path, 0600), 0);
    vr_report *r = analyze(symbols_trace("fifo_module", &m, id));
    snprintf(want, sizeof want, "%s cannot be read here (not a regular file)", m.path);
    assert_offsets_only(r, &m, want);
    vr_report_free(r);
    unlink(m.path);
}

/* vt_rec_encode of ev at o, as format version 3 wrote it: a module record
 * without its build_id (the encoder's last byte: an empty id's length). */
static size_t encode_v3(uint8_t *o, vt_delta *d, vt_event ev)
{
    size_t n = vt_rec_encode(o, d, &ev);
    if (ev.type == VT_REC_MODULE) {
        assert_null(ev.u.module.build_id);
        assert_int_equal(o[--n], 0);
    }
    return n;
}

/* A version-3 trace at path (as the recorder of version 3 wrote it: its
 * header, one zstd frame of one chunk): symbols_trace's events. */
static void write_v3_trace(const char *path, const self_mod *m)
{
    uint64_t t0 = 1000000;
    const vt_event evs[] = {
        {.type = VT_REC_MODULE, .u.module = {1, m->path, m->bias, m->start, m->end, NULL}},
        {.type = VT_REC_STACK_NODE, .u.stack_node = {1, 0, vtt_cxx_site_address() + 4}},
        {.type = VT_REC_STACK_NODE, .u.stack_node = {2, 1, (uintptr_t)&vtt_user_site + 4}},
        {.type = VT_REC_DEVICE, .u.device = {0, "SimGPU", GiB}},
        {.type = VT_REC_ALLOC, .ts_ns = t0 + 100, .u.alloc = {0x1000000, MiB, 2, 0, 1, 0}},
        {.type = VT_REC_END, .ts_ns = t0 + 200, .u.end = {0, 0, ""}},
    };
    static uint8_t batch[4096], payload[4096];
    vt_delta d = {0};
    size_t np = 0, nb;
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        np += encode_v3(payload + np, &d, evs[i]);
    nb = vt_chunk_hdr_encode(batch, 100, d.base_ts, np);
    memcpy(batch + nb, payload, np);
    nb += np;
    vt_header h = {.pid = 1, .host = "old", .program = "v3", .start_mono_ns = t0};
    size_t hl;
    uint8_t *hdr = vt_header_encode(&h, &hl);
    memcpy(hdr + VT_MAGIC_LEN, &(uint32_t){3}, 4); /* u32le format_version */
    size_t cap = ZSTD_compressBound(nb);
    uint8_t *z = malloc(cap);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t nz = ZSTD_compress2(cc, z, cap, batch, nb);
    ZSTD_freeCCtx(cc);
    assert_false(ZSTD_isError(nz));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(hdr, 1, hl, f), hl);
    assert_int_equal(fwrite(z, 1, nz, f), nz);
    assert_int_equal(fclose(f), 0);
    free(hdr);
    free(z);
}

/* A version-3 trace records no build-ids: read, symbolized from the files
 * here as before, with one note that their identity was not checked. */
static void test_v3_trace(void **state)
{
    (void)state;
    self_mod m = self();
    const char *path = tmp_path("v3");
    write_v3_trace(path, &m);
    vr_report *r = analyze(path);
    assert_int_equal(r->nleaks, 1);
    const vr_stack *st = &r->leaks[0].stack;
    assert_int_equal(st->n, 2);
    assert_string_equal(st->frames[0].function, "vtt_user_site");
    assert_non_null(strstr(st->frames[1].function, "vtt::cxx_site(int)"));
    assert_int_equal(notes_with(r, "module identity could not be checked"), 1);
    assert_int_equal(notes_with(r, "version 3"), 1);
    assert_int_equal(notes_with(r, "build-id"), 1); /* that note alone */
    vr_report_free(r);
    /* The file here spans another size than the recorded module: another
     * version of it (a trace of another machine's libc). Its frames are
     * not named from it (they were, wrongly: __gconv_transform_internal_ucs4
     * below <module> in the H200 traces). */
    m.end += 0x1000;
    write_v3_trace(path, &m);
    r = analyze(path);
    assert_int_equal(r->nleaks, 1);
    st = &r->leaks[0].stack;
    for (size_t i = 0; i < st->n; i++) {
        assert_null(strstr(st->frames[i].function, "vtt_user_site"));
        assert_null(strstr(st->frames[i].function, "cxx_site"));
    }
    assert_int_equal(notes_with(r, "here differs from the recorded one (no build-id to compare, "
                                   "and its segments span"),
                     1);
    assert_int_equal(notes_with(r, "module identity could not be checked"), 0);
    vr_report_free(r);
}

uintptr_t vtt_torch_alloc_block_address(void);
uintptr_t vtt_torch_host_alloc_address(void);

/* A new trace `name` with this executable as module 1 under its build-id;
 * returns its path (tmp_path's buffer). */
static const char *open_self_trace(vtg *g, const char *name, const self_mod *m)
{
    const char *path = tmp_path(name);
    const char *argv[] = {name};
    char id[VT_MAX_ID_LEN + 1];
    file_build_id(m->path, id);
    assert_int_equal(vtg_open(g, path, 1, argv), 0);
    vtg_module_id(g, 1, m->path, m->bias, m->start, m->end, id);
    return path;
}

#define NATIVE_DEPTH 14 /* native frames between the allocator and Python */

/* Trace `name`: this executable as module 1; Python frames <module>
 * (main.py:7) < body (train.py:42) < forward (a site-packages file, line
 * 10). Leak A (8 MiB): allocated by `leaf_ip` under NATIVE_DEPTH frames of
 * vtt_user_site under forward; leak B (1 MiB, unless !with_b): by
 * vtt_user_site under body. */
static const char *python_trace(const char *name, const self_mod *m, uint64_t leaf_ip, bool with_b)
{
    vtg g;
    const char *path = open_self_trace(&g, name, m);
    const char *strings[] = {
        "body",     "/home/u/train.py",
        "forward",  "/home/u/.venv/lib/python3.11/site-packages/torch/nn/module.py",
        "<module>", "/home/u/main.py"};
    for (uint32_t i = 0; i < 6; i++)
        vtg_string(&g, i + 1, strings[i]);
    vtg_py_frame(&g, 1, 1, 2, 42);
    vtg_py_frame(&g, 2, 3, 4, 10);
    vtg_py_frame(&g, 3, 5, 6, 7);
    vtg_py_stack(&g, 10, 0, 3);  /* <module> */
    vtg_py_stack(&g, 11, 10, 1); /* body */
    vtg_py_stack(&g, 12, 11, 2); /* forward */
    uint64_t user_ip = (uint64_t)(uintptr_t)&vtt_user_site + 4;
    uint32_t parent = 12;
    for (uint32_t i = 0; i < NATIVE_DEPTH; i++, parent = 20 + i - 1)
        vtg_stack(&g, 20 + i, parent, user_ip);
    vtg_stack(&g, 50, parent, leaf_ip);
    vtg_stack(&g, 51, 11, user_ip);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 100, 0x1000000, 8 * MiB, 50);
    if (with_b)
        vtg_alloc(&g, 110, 0x2000000, MiB, 51);
    vtg_end(&g, 200, 0);
    assert_int_equal(vtg_close(&g), 0);
    return path;
}

static const char *headline(const vr_report *r, const char **kind, const char **remedy)
{
    vr_headline h;
    vr_headline_of(r, &h);
    *kind = h.kind;
    *remedy = h.remedy;
    return h.text;
}

/* vramtrace check --max-leaked max on r alone: broken limits. */
static int check_leaked(const vr_report *r, int64_t max)
{
    vr_limits lim = {.max_peak = -1, .max_leaked = max, .max_host_leaked = -1, .max_growth = -1};
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    int n = vr_check(null, r, &lim);
    fclose(null);
    return n;
}

/* A stack with Python frames is named by the program's own line (not the
 * allocator's frame, not a site-packages file): in the headline, and the
 * text listing folds the frames before it. Memory that PyTorch's caching
 * allocator made (its segment allocation on the stack) is its cache at
 * exit, not a leak; the same stack with another allocating function is a
 * leak. */
static void test_python_lead_and_cache(void **state)
{
    (void)state;
    self_mod m = self();
    uint64_t torch_ip = (uint64_t)vtt_torch_alloc_block_address() + 4;
    vr_report *r = analyze(python_trace("py_cache", &m, torch_ip, true));
    assert_int_equal(r->nleaks, 2);
    const vr_leak *a = &r->leaks[0], *b = &r->leaks[1];
    assert_int_equal(a->bytes, 8 * MiB);
    assert_string_equal(a->cache_of, "PyTorch's caching allocator");
    assert_int_equal(a->stack.lead, NATIVE_DEPTH + 2); /* leaf, 14 native, forward */
    assert_string_equal(a->stack.frames[a->stack.lead].file, "/home/u/train.py");
    assert_null(b->cache_of);
    assert_int_equal(b->stack.lead, 1);
    assert_int_equal(r->leaked_bytes, 9 * MiB);
    assert_int_equal(r->cached_at_exit_bytes, 8 * MiB);
    assert_int_equal(r->cached_at_exit_count, 1);
    const char *kind, *remedy, *text = headline(r, &kind, &remedy);
    assert_string_equal(kind, "leaked");
    assert_string_equal(text, "LEAKED AT EXIT: 1.00 MiB of device memory in 1 allocation "
                              "(besides 8.00 MiB held by PyTorch's caching allocator as its "
                              "cache), the largest part allocated at body (train.py:42)");
    char *out = render(vr_render_text, r);
    char want[1024];
    snprintf(want, sizeof want,
             "    ... %d frames in %s, Python library code\n    by body (/home/u/train.py:42)\n",
             NATIVE_DEPTH + 1, base_of(m.path));
    if (!strstr(out, want))
        fail_msg("no \"%s\" in the text report", want);
    assert_non_null(strstr(out, "8388608 bytes in 1 allocation is held at exit by PyTorch's "
                                "caching allocator as its cache (device memory)"));
    assert_non_null(strstr(out, "1048576 bytes in 1 allocation was never freed"));
    free(out);
    /* the JSON marks the lead frame, once per stack */
    char *json = render(vr_render_json, r);
    const char *lead_frame = "{\"function\":\"body\",\"file\":\"/home/u/train.py\",\"line\":42,"
                             "\"module\":\"python\",\"address\":\"0x0\",\"inlined\":false,"
                             "\"lead\":true}";
    size_t leads = 0;
    for (const char *p = json; (p = strstr(p, "\"lead\":true")); p++)
        leads++;
    assert_non_null(strstr(json, lead_frame));
    assert_true(leads >= 2); /* leak A's and leak B's stacks, among others */
    assert_null(strstr(json, "\"module\":\"python\",\"address\":\"0x0\",\"inlined\":false,"
                             "\"lead\":true},{\"function\":\"body\"")); /* never forward's */
    free(json);
    /* the icicle and folded stacks keep a Python frame's line */
    assert_true(rendered_has(vr_render_html, r, "\"body (train.py:42)\""));
    assert_true(rendered_has(vr_render_folded, r, ";body (train.py:42);"));
    assert_int_equal(check_leaked(r, 0), 1); /* the 1 MiB, not the cache */
    assert_int_equal(check_leaked(r, MiB), 0);

    vr_report *with_leak = r;
    r = analyze(python_trace("py_cache_only", &m, torch_ip, false));
    /* diff: the 1 MiB leak goes, the cache is no leak in either run */
    vr_report *pair[2] = {with_leak, r};
    vr_diff *d = vr_diff_new(with_leak, r);
    for (size_t i = 0; i < d->nsites; i++)
        assert_true(d->sites[i].leaked[0] == (d->sites[i].stack.n == 3 ? MiB : 0) &&
                    d->sites[i].leaked[1] == 0);
    vr_diff_free(d);
    char *dt = NULL;
    size_t dlen = 0;
    FILE *mf = open_memstream(&dt, &dlen);
    assert_int_equal(vr_render_diff_text(mf, pair, 2, NULL), 0);
    fclose(mf);
    assert_non_null(strstr(dt, "leaked at exit       1.00 MiB -> 0 B"));
    free(dt);
    vr_report_free(with_leak);
    text = headline(r, &kind, &remedy);
    assert_string_equal(kind, "healthy");
    assert_non_null(strstr(text, "nothing leaked by the program (8.00 MiB at exit is the cache "
                                 "of PyTorch's caching allocator, freed when the process ends)"));
    assert_non_null(strstr(remedy, "--torch-tensors"));
    assert_int_equal(check_leaked(r, 0), 0);
    vr_report_free(r);

    /* the same stack allocated by another C++ function: a leak */
    r = analyze(python_trace("py_other", &m, (uint64_t)vtt_cxx_site_address() + 4, false));
    assert_null(r->leaks[0].cache_of);
    assert_int_equal(r->cached_at_exit_bytes, 0);
    text = headline(r, &kind, &remedy);
    assert_string_equal(kind, "leaked");
    assert_non_null(strstr(text, "allocated at body (train.py:42)"));
    assert_int_equal(check_leaked(r, 0), 1);
    vr_report_free(r);
}

/* Pinned host memory from PyTorch's pinned-memory caching allocator is its
 * cache at exit, beside the device's; another pinned block is a host leak,
 * named in the healthy headline and counted by check --max-host-leaked. */
static void test_host_cache(void **state)
{
    (void)state;
    self_mod m = self();
    vtg g;
    const char *path = open_self_trace(&g, "host_cache", &m);
    vtg_stack(&g, 1, 0, (uint64_t)(uintptr_t)&vtt_user_site + 4);
    vtg_stack(&g, 2, 1, (uint64_t)vtt_torch_alloc_block_address() + 4);
    vtg_stack(&g, 3, 1, (uint64_t)vtt_torch_host_alloc_address() + 4);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc_on(&g, 100, 0x1000000, 2 * MiB, 2, 0, VT_API_CUDA_MALLOC);
    vtg_alloc_on(&g, 110, 0x7f0000000000, 4 * MiB, 3, -1, VT_API_CUDA_HOST_ALLOC);
    vtg_alloc_on(&g, 120, 0x7f1000000000, MiB, 1, -1, VT_API_CUDA_HOST_ALLOC);
    vtg_end(&g, 200, 0);
    assert_int_equal(vtg_close(&g), 0);
    vr_report *r = analyze(path);
    assert_int_equal(r->host_leaked_bytes, 5 * MiB);
    assert_int_equal(r->host_cached_at_exit_bytes, 4 * MiB);
    assert_int_equal(r->host_cached_at_exit_count, 1);
    assert_int_equal(r->cached_at_exit_bytes, 2 * MiB);
    const char *kind, *remedy, *text = headline(r, &kind, &remedy);
    assert_string_equal(kind, "healthy");
    assert_non_null(strstr(text, "no device memory leaked by the program (2.00 MiB at exit is the "
                                 "cache of PyTorch's caching allocator, freed when the process "
                                 "ends; 4.00 MiB of pinned host memory at exit is the cache of "
                                 "PyTorch's pinned-memory caching allocator; 1.00 MiB of pinned "
                                 "host memory was leaked)"));
    vr_limits lim = {.max_peak = -1, .max_leaked = -1, .max_host_leaked = MiB, .max_growth = -1};
    FILE *null = fopen("/dev/null", "w");
    assert_int_equal(vr_check(null, r, &lim), 0); /* 1 MiB leaked, the cache aside */
    lim.max_host_leaked = MiB - 1;
    assert_int_equal(vr_check(null, r, &lim), 1);
    fclose(null);
    vr_report_free(r);
}

/* A capacity OOM of `leaf`'s: 900 MiB live, 200 MiB asked of a 1 GiB
 * device; the headline's remedy. */
static char *capacity_remedy(const self_mod *m, const char *name, uint64_t leaf)
{
    vtg g;
    const char *path = open_self_trace(&g, name, m);
    vtg_stack(&g, 1, 0, (uint64_t)(uintptr_t)&vtt_user_site + 4);
    vtg_stack(&g, 2, 1, leaf);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_meminfo(&g, 10, GiB, GiB);
    vtg_alloc(&g, 100, 0x1000000, 900 * MiB, 2);
    vtg_failed(&g, 110, 200 * MiB, 2, 124 * MiB, GiB);
    vtg_end(&g, 200, 1);
    assert_int_equal(vtg_close(&g), 0);
    vr_report *r = analyze(path);
    const char *kind, *remedy;
    headline(r, &kind, &remedy);
    assert_string_equal(kind, "oom");
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_CAPACITY);
    char *out = strdup(remedy);
    vr_report_free(r);
    return out;
}

/* A capacity verdict on a request PyTorch's caching allocator made says
 * that its segments hide their free space; on another allocator's, not. */
static void test_capacity_caveat(void **state)
{
    (void)state;
    self_mod m = self();
    char *torch = capacity_remedy(&m, "cap_torch", (uint64_t)vtt_torch_alloc_block_address() + 4);
    char *other = capacity_remedy(&m, "cap_other", (uint64_t)vtt_cxx_site_address() + 4);
    assert_non_null(strstr(torch, "fragmentation looks like capacity here; `vramtrace run "
                                  "--torch-tensors` tells them apart"));
    assert_null(strstr(other, "--torch-tensors"));
    free(torch);
    free(other);
}

/* The listing folds the library frames before a stack's lead frame when
 * two or more stand there, whatever the section's frame budget: a leak
 * (12 frames listed) of a numba array listed ten of numba's frames before
 * the program's line; the peak's section (6) folded the same stack. One or
 * none before the lead, and native stacks (lead 0), are listed as they are. */
static void test_fold_to_lead(void **state)
{
    (void)state;
    vr_frame fr[6];
    const char *files[6] = {"/usr/lib/python3/dist-packages/numba/driver.py",
                            "/usr/lib/python3/dist-packages/numba/api.py",
                            "/usr/lib/python3/dist-packages/numba/devices.py",
                            "/home/u/train.py",
                            "/home/u/train.py",
                            "/home/u/train.py"};
    for (int i = 0; i < 6; i++)
        fr[i] = (vr_frame){.function = "f",
                           .file = files[i],
                           .line = (uint32_t)(10 + i),
                           .module = VR_PYTHON_MODULE};
    const struct {
        size_t lead, max;
        bool folds;
    } cases[] = {{3, 12, true},  {3, 6, true}, {2, 12, false}, {1, 12, false},
                 {0, 12, false}, {4, 3, true}, {3, 1, false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vr_stack st = {.frames = fr, .n = 6, .lead = cases[k].lead};
        if (vr_stack_folds_to_lead(&st, cases[k].max) != cases[k].folds)
            fail_msg("lead %zu, max %zu: folds %d", cases[k].lead, cases[k].max, !cases[k].folds);
    }
    vr_stack st = {.frames = fr, .n = 6, .lead = 3};
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    vr_print_stack(f, &st, "", 12, true);
    fclose(f);
    assert_string_equal(out, "at f (driver.py:10)\n"
                             "... 2 frames in Python library code\n"
                             "by f (train.py:13)\n"
                             "by f (train.py:14)\n"
                             "by f (train.py:15)\n");
    free(out);
}

/* The program's own Python file against library code (site-packages,
 * dist-packages, the standard library, frozen modules). */
static void test_python_library_file(void **state)
{
    (void)state;
    const char *lib[] = {"/usr/lib/python3.11/threading.py",
                         "/x/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
                         "/usr/lib/python3/dist-packages/numba/cuda/api.py", "<frozen runpy>", ""};
    const char *own[] = {"/home/u/train.py",
                         "/home/u/lib/python_tools/x.py",
                         "train.py",
                         "/srv/lib/pythonic/x.py",
                         "<ipython-input-3-9a1f0c2b7d4e>",
                         "/tmp/ipykernel_4242/1234567.py",
                         "<stdin>"};
    for (size_t i = 0; i < sizeof lib / sizeof lib[0]; i++)
        if (!vt_py_library_file(lib[i]))
            fail_msg("%s: not library code", lib[i]);
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (vt_py_library_file(own[i]))
            fail_msg("%s: library code", own[i]);
}

/* A random frame from few names that are prefixes of each other, hold the
 * key's separators or sort apart only by a later field, so that orders
 * decided inside a field, at its end or at a stack's end all occur. */
static vr_frame random_frame(unsigned *seed)
{
    static const char *const names[] = {"a", "ab", "a\x1f", "a\x1e", "b", "??", ""};
    static const char *const files[] = {"", "x.c", "x.cc", "y.c"};
    static const char *const mods[] = {"", "/lib/m.so", "/lib/m.so.1"};
    static const uint32_t lines[] = {0, 5, 40, 400, 41};
    static const uint64_t ips[] = {0x1, 0x10, 0xf, 0xabc};
    vr_frame f = {
        .function = names[rand_r(seed) % 7],
        .file = files[rand_r(seed) % 4],
        .line = lines[rand_r(seed) % 5],
        .module = mods[rand_r(seed) % 3],
        .ip = ips[rand_r(seed) % 4],
    };
    return f;
}

/* vr_stack_order (the sites' order and merging, without key strings) gives
 * the sign strcmp gives their vr_stack_key strings, on random stacks of 0 to
 * 4 frames; a stack is equal to itself and to a copy of its frames. Shown
 * able to fail: a comparator that compares lines as numbers (400 > 41, but
 * "400" < "41") disagrees. */
static int order_by_number(const vr_stack *a, const vr_stack *b)
{
    for (size_t i = 0; i < a->n && i < b->n; i++)
        if (a->frames[i].line != b->frames[i].line)
            return a->frames[i].line < b->frames[i].line ? -1 : 1;
    return vr_stack_order(a, b);
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

static void test_stack_order(void **state)
{
    (void)state;
    vr_arena *a = vr_arena_new();
    unsigned seed = 46;
    vr_frame fa[4], fb[4], copy[4];
    size_t wrong_disagrees = 0;
    for (int k = 0; k < 200000; k++) {
        vr_stack x = {.frames = fa, .n = (size_t)rand_r(&seed) % 5};
        vr_stack y = {.frames = fb, .n = (size_t)rand_r(&seed) % 5};
        for (size_t i = 0; i < 4; i++) {
            fa[i] = random_frame(&seed);
            /* y shares a prefix with x, so that later fields decide */
            fb[i] = rand_r(&seed) % 3 ? fa[i] : random_frame(&seed);
        }
        int want = sign(strcmp(vr_stack_key(a, &x), vr_stack_key(a, &y)));
        assert_int_equal(sign(vr_stack_order(&x, &y)), want);
        assert_int_equal(sign(vr_stack_order(&y, &x)), -want);
        wrong_disagrees += sign(order_by_number(&x, &y)) != want;
        memcpy(copy, fa, sizeof copy);
        vr_stack c = {.frames = copy, .n = x.n};
        assert_int_equal(vr_stack_order(&x, &c), 0);
    }
    assert_true(wrong_disagrees > 0);
    vr_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize),
        cmocka_unit_test(test_build_id_differs),
        cmocka_unit_test(test_module_missing),
        cmocka_unit_test(test_module_fifo),
        cmocka_unit_test(test_v3_trace),
        cmocka_unit_test(test_stack_order),
        cmocka_unit_test(test_python_lead_and_cache),
        cmocka_unit_test(test_fold_to_lead),
        cmocka_unit_test(test_python_library_file),
        cmocka_unit_test(test_host_cache),
        cmocka_unit_test(test_capacity_caveat),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
