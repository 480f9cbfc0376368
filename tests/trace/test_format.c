/* test_format.c: the .vtrace bytes. Round trip of every record with every
 * field (extreme values included), the header, the merge order of a batch,
 * and the reader's behaviour on truncated, bit-flipped and crafted corrupt
 * input (error or clean prefix, never a crash). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "records.h"
#include "vt_test_util.h"

#include <limits.h>
#include <zstd.h>

#define DESC_LEN (3 * VT_MAX_STRING_LEN)

/* ---- A canonical text form of an event, written without trace/'s tables -- */

static const char *str_of(const vt_event *e)
{
    switch (e->type) {
    case VT_REC_MODULE:
        return e->u.module.path;
    case VT_REC_STRING:
        return e->u.string.text;
    case VT_REC_THREAD:
        return e->u.thread.name;
    case VT_REC_DEVICE:
        return e->u.device.name;
    case VT_REC_NOTE:
        return e->u.note.text;
    case VT_REC_END:
        return e->u.end.reason;
    default:
        return NULL;
    }
}

#define U64(x) ((unsigned long long)(x))

static int describe_fields(const vt_event *e, char *o, size_t n)
{
    const __typeof__(e->u) *u = &e->u;
    switch (e->type) {
    case VT_REC_MODULE: /* the build-id clamped to VT_MAX_ID_LEN, as the writer keeps it */
        return snprintf(o, n, "id=%u bias=%llx start=%llx end=%llx build_id=%.*s", u->module.id,
                        U64(u->module.bias), U64(u->module.start), U64(u->module.end),
                        (int)VT_MAX_ID_LEN, u->module.build_id ? u->module.build_id : "(none)");
    case VT_REC_STACK_NODE:
        return snprintf(o, n, "id=%u parent=%u ip=%llx", u->stack_node.id, u->stack_node.parent,
                        U64(u->stack_node.ip));
    case VT_REC_STRING:
        return snprintf(o, n, "id=%u", u->string.id);
    case VT_REC_THREAD:
        return snprintf(o, n, "id=%u start=%u", u->thread.id, u->thread.start);
    case VT_REC_DEVICE:
        return snprintf(o, n, "id=%d total=%llu", u->device.id, U64(u->device.total_bytes));
    case VT_REC_ALLOC:
        return snprintf(o, n, "addr=%llx size=%llu stack=%u dev=%d api=%d stream=%llx",
                        U64(u->alloc.addr), U64(u->alloc.size), u->alloc.stack, u->alloc.device,
                        u->alloc.api, U64(u->alloc.stream));
    case VT_REC_FREE:
        return snprintf(o, n, "addr=%llx dev=%d api=%d", U64(u->free.addr), u->free.device,
                        u->free.api);
    case VT_REC_ALLOC_FAILED:
        return snprintf(o, n, "size=%llu err=%d stack=%u dev=%d api=%d free=%llu total=%llu",
                        U64(u->failed.size), u->failed.error, u->failed.stack, u->failed.device,
                        u->failed.api, U64(u->failed.free_bytes), U64(u->failed.total_bytes));
    case VT_REC_MEMINFO:
        return snprintf(o, n, "dev=%d free=%llu total=%llu", u->meminfo.device,
                        U64(u->meminfo.free_bytes), U64(u->meminfo.total_bytes));
    case VT_REC_POOL_STAT:
        return snprintf(o, n, "dev=%d pool=%llx reserved=%llu used=%llu", u->pool.device,
                        U64(u->pool.pool), U64(u->pool.reserved_bytes), U64(u->pool.used_bytes));
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_MARK:
        return snprintf(o, n, "domain=%u name=%u", u->range.domain, u->range.name);
    case VT_REC_HEAP_REGISTER:
    case VT_REC_HEAP_UNREGISTER:
    case VT_REC_HEAP_RESET:
        return snprintf(o, n, "heap=%llx addr=%llx size=%llu usage=%u", U64(u->heap.heap),
                        U64(u->heap.addr), U64(u->heap.size), u->heap.usage);
    case VT_REC_REGION_REGISTER:
    case VT_REC_REGION_UNREGISTER:
    case VT_REC_REGION_RESIZE:
    case VT_REC_REGION_NAME:
        return snprintf(o, n, "heap=%llx addr=%llx size=%llu stack=%u name=%u", U64(u->region.heap),
                        U64(u->region.addr), U64(u->region.size), u->region.stack, u->region.name);
    case VT_REC_END:
        return snprintf(o, n, "status=%d signal=%d", u->end.status, u->end.signal);
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
        return snprintf(o, n, "id=%llx domain=%u name=%u", U64(u->range_se.id), u->range_se.domain,
                        u->range_se.name);
    case VT_REC_PY_FRAME:
        return snprintf(o, n, "id=%u function=%u file=%u line=%u", u->py_frame.id,
                        u->py_frame.function, u->py_frame.file, u->py_frame.line);
    case VT_REC_PY_STACK_NODE:
        return snprintf(o, n, "id=%u parent=%u frame=%u", u->py_stack_node.id,
                        u->py_stack_node.parent, u->py_stack_node.frame);
    case VT_REC_SYMBOL:
        return snprintf(o, n, "ip=%llx index=%u function=%u file=%u line=%u flags=%u",
                        U64(u->symbol.ip), u->symbol.index, u->symbol.function, u->symbol.file,
                        u->symbol.line, u->symbol.flags);
    case VT_REC_CAPTURE:
        return snprintf(o, n, "stream=%llx began=%u", U64(u->capture.stream), u->capture.began);
    default:
        return snprintf(o, n, "-");
    }
}

/* Strings are shown clamped to VT_MAX_STRING_LEN, as the writer keeps them. */
static void describe(const vt_event *e, char *o, size_t n)
{
    int k = snprintf(o, n, "%s tid=%u ts=%llu ", vt_rec_name(e->type), e->thread_id, U64(e->ts_ns));
    k += describe_fields(e, o + k, n - (size_t)k);
    const char *s = str_of(e);
    if (s)
        snprintf(o + k, n - (size_t)k, " str[%zu]=%.*s", strnlen(s, VT_MAX_STRING_LEN),
                 (int)VT_MAX_STRING_LEN, s);
}

/* ---- Events covering every record type and field ---------------------------- */

enum { V_ZERO, V_MAX, V_MIXED, NVARIANTS };

static void set_string(vt_event *e, const char *s)
{
    switch (e->type) {
    case VT_REC_MODULE:
        e->u.module.path = s;
        break;
    case VT_REC_STRING:
        e->u.string.text = s;
        break;
    case VT_REC_THREAD:
        e->u.thread.name = s;
        break;
    case VT_REC_DEVICE:
        e->u.device.name = s;
        break;
    case VT_REC_NOTE:
        e->u.note.text = s;
        break;
    case VT_REC_END:
        e->u.end.reason = s;
        break;
    default:
        break;
    }
}

/* Every field of every union member set from (u64, u32, i32): fields that a
 * record does not carry are cleared again by clear_unused(). */
static void fill_all(vt_event *e, uint64_t a, uint64_t b, uint32_t u, int32_t i, enum vt_api api)
{
    e->u.alloc = (__typeof__(e->u.alloc)){a, b, u, i, api, b};
    switch (e->type) {
    case VT_REC_MODULE:
        e->u.module = (__typeof__(e->u.module)){u, NULL, a, b, a, NULL};
        break;
    case VT_REC_STACK_NODE:
        e->u.stack_node = (__typeof__(e->u.stack_node)){u, u / 2, a};
        break;
    case VT_REC_STRING:
        e->u.string.id = u;
        break;
    case VT_REC_THREAD:
        e->u.thread.id = u;
        e->u.thread.start = u & 1;
        break;
    case VT_REC_DEVICE:
        e->u.device = (__typeof__(e->u.device)){i, NULL, b};
        break;
    case VT_REC_FREE:
        e->u.free = (__typeof__(e->u.free)){a, i, api};
        break;
    case VT_REC_ALLOC_FAILED:
        e->u.failed = (__typeof__(e->u.failed)){b, i, u, i, api, a, b};
        break;
    case VT_REC_MEMINFO:
        e->u.meminfo = (__typeof__(e->u.meminfo)){i, a, b};
        break;
    case VT_REC_POOL_STAT:
        e->u.pool = (__typeof__(e->u.pool)){i, a, b, a ^ b};
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_MARK:
        e->u.range = (__typeof__(e->u.range)){u, u - 1};
        break;
    case VT_REC_RANGE_POP:
        e->u.range = (__typeof__(e->u.range)){u, 0};
        break;
    case VT_REC_PY_FRAME:
        e->u.py_frame = (__typeof__(e->u.py_frame)){u, u / 3, u ^ 5, u / 2};
        break;
    case VT_REC_PY_STACK_NODE:
        e->u.py_stack_node = (__typeof__(e->u.py_stack_node)){u, u / 2, u ^ 3};
        break;
    case VT_REC_SYMBOL:
        e->u.symbol = (__typeof__(e->u.symbol)){a, u / 5, u, u ^ 7, u / 3, u & 1};
        break;
    case VT_REC_CAPTURE:
        e->u.capture = (__typeof__(e->u.capture)){a, u & 1};
        break;
    default:
        break;
    }
}

static void fill_nvtx(vt_event *e, uint64_t a, uint64_t b, uint32_t u)
{
    switch (e->type) {
    case VT_REC_HEAP_REGISTER:
        e->u.heap = (__typeof__(e->u.heap)){b, a, b, u};
        break;
    case VT_REC_HEAP_UNREGISTER:
    case VT_REC_HEAP_RESET:
        e->u.heap = (__typeof__(e->u.heap)){b, 0, 0, 0};
        break;
    case VT_REC_REGION_REGISTER:
        e->u.region = (__typeof__(e->u.region)){b, a, b, u, 0};
        break;
    case VT_REC_REGION_UNREGISTER:
        e->u.region = (__typeof__(e->u.region)){b, a, 0, 0, 0};
        break;
    case VT_REC_REGION_RESIZE:
        e->u.region = (__typeof__(e->u.region)){b, a, b, 0, 0};
        break;
    case VT_REC_REGION_NAME:
        e->u.region = (__typeof__(e->u.region)){b, a, 0, 0, u};
        break;
    case VT_REC_END:
        e->u.end = (__typeof__(e->u.end)){(int32_t)u, (int32_t)(u % 65), NULL};
        break;
    case VT_REC_RANGE_START:
        e->u.range_se = (__typeof__(e->u.range_se)){a, u, u ^ 1};
        break;
    case VT_REC_RANGE_END:
        e->u.range_se = (__typeof__(e->u.range_se)){a, 0, 0};
        break;
    case VT_REC_VMM_MAP:
        e->u.vmm = (__typeof__(e->u.vmm)){b, a, b, (int32_t)u};
        break;
    case VT_REC_VMM_UNMAP:
        e->u.vmm = (__typeof__(e->u.vmm)){0, a, b, 0};
        break;
    case VT_REC_NOTE:
    case VT_REC_MODULE_RESET:
        memset(&e->u, 0, sizeof e->u);
        break;
    default:
        break;
    }
}

static bool is_def(enum vt_rec t)
{
    return t == VT_REC_MODULE || t == VT_REC_MODULE_RESET || t == VT_REC_STACK_NODE ||
           t == VT_REC_STRING || t == VT_REC_THREAD || t == VT_REC_DEVICE || t == VT_REC_NOTE ||
           t == VT_REC_PY_FRAME || t == VT_REC_PY_STACK_NODE || t == VT_REC_SYMBOL;
}

static bool plain_event(enum vt_rec t)
{
    return t == VT_REC_ALLOC;
}

typedef struct corpus {
    vt_event ev[VT_REC_MAX_ * NVARIANTS];
    size_t n;
    char *longstr, *overlong;
} corpus;

static void make_event(corpus *c, enum vt_rec t, int v, uint64_t ts)
{
    static const uint64_t A[] = {0, UINT64_MAX, 0x7f12340000ull};
    static const uint64_t B[] = {0, UINT64_MAX, 1ull << 33};
    static const uint32_t U[] = {0, UINT32_MAX, 77};
    static const int32_t I[] = {0, INT32_MIN, -1};
    static const enum vt_api API[] = {VT_API_UNKNOWN, VT_API_MAX_ - 1, VT_API_CU_MEM_CREATE};
    vt_event *e = &c->ev[c->n++];
    memset(e, 0, sizeof *e);
    e->type = t;
    e->thread_id = 7;
    e->ts_ns = is_def(t) ? 0 : ts;
    if (!plain_event(t) || v != V_MAX)
        fill_all(e, A[v], B[v], U[v], I[v], API[v]);
    else /* the other extreme for alloc: INT32_MAX device, max everything */
        e->u.alloc = (__typeof__(e->u.alloc)){UINT64_MAX, UINT64_MAX,      UINT32_MAX,
                                              INT32_MAX,  VT_API_MAX_ - 1, UINT64_MAX};
    fill_nvtx(e, A[v], B[v], U[v]);
    const char *strs[] = {"", c->longstr, c->overlong};
    set_string(e, strs[v]);
    if (t == VT_REC_MODULE) { /* build-ids: empty, the longest kept, one byte too long */
        static const size_t idlen[] = {0, VT_MAX_ID_LEN, VT_MAX_ID_LEN + 1};
        e->u.module.build_id = c->overlong + VT_MAX_STRING_LEN + 100 - idlen[v];
    }
}

static void make_corpus(corpus *c)
{
    c->n = 0;
    c->longstr = malloc(VT_MAX_STRING_LEN + 1);
    c->overlong = malloc(VT_MAX_STRING_LEN + 101);
    for (size_t i = 0; i < VT_MAX_STRING_LEN + 100; i++)
        c->overlong[i] = (char)('a' + i % 26);
    c->overlong[VT_MAX_STRING_LEN + 100] = '\0';
    memcpy(c->longstr, c->overlong, VT_MAX_STRING_LEN);
    c->longstr[VT_MAX_STRING_LEN] = '\0';
    c->longstr[0] = 'L';
    uint64_t ts[] = {0, 1000, UINT64_MAX};
    for (int v = 0; v < NVARIANTS; v++)
        for (int t = 1; t < VT_REC_MAX_; t++)
            make_event(c, (enum vt_rec)t, v, v == 1 ? ts[1] + (uint64_t)t * 3 : ts[v]);
}

static void free_corpus(corpus *c)
{
    free(c->longstr);
    free(c->overlong);
}

/* Write events to a new trace at path with one thread (id 7). */
static void write_trace(const char *path, const vt_event *ev, size_t n, size_t flush_every)
{
    char err[256];
    vt_header h = vtt_header();
    vt_writer_opts o = {.no_thread = true, .tbuf_bytes = 1 << 20}; /* no forced flush */
    vt_writer *w = vt_writer_open(path, &h, &o, err, sizeof err);
    assert_non_null(w);
    vt_tbuf *tb = vt_writer_attach(w, 7);
    assert_non_null(tb);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(vt_write(tb, &ev[i]), 0);
        if (flush_every && (i + 1) % flush_every == 0)
            assert_int_equal(vt_writer_flush(w), 0);
    }
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
}

static void test_roundtrip_every_record(void **state)
{
    (void)state;
    static corpus c;
    make_corpus(&c);
    char *dir = vtt_tmpdir(), path[1024];
    vtt_path(path, sizeof path, dir, "rt.vtrace");
    write_trace(path, c.ev, c.n, 0);

    char err[256], *want = malloc(DESC_LEN), *got = malloc(DESC_LEN);
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    for (size_t i = 0; i < c.n; i++) {
        assert_int_equal(vt_reader_next(r, &ev), 1);
        describe(&c.ev[i], want, DESC_LEN);
        describe(&ev, got, DESC_LEN);
        assert_string_equal(got, want);
    }
    assert_int_equal(vt_reader_next(r, &ev), 0);
    assert_null(vt_reader_error(r));
    assert_false(vt_reader_truncated(r));
    assert_int_equal(vt_reader_offset(r), vt_reader_file_size(r));
    vt_reader_close(r);
    free(want);
    free(got);
    free_corpus(&c);
    const char *names[] = {"rt.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void test_header_roundtrip(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "h.vtrace");
    const char *argv[VT_MAX_ARGV + 6];
    char buf[VT_MAX_ARGV + 6][16];
    for (int i = 0; i < VT_MAX_ARGV + 6; i++) {
        snprintf(buf[i], sizeof buf[i], "arg%d", i);
        argv[i] = i == 1 ? "" : buf[i];
    }
    vt_header h = vtt_header();
    h.argc = VT_MAX_ARGV + 6;
    h.argv = argv;
    h.pid = UINT32_MAX;
    h.start_wall_ns = UINT64_MAX;
    h.flags = VT_HDR_CHILD_AFTER_FORK;
    h.host = "";
    vt_writer *w = vt_writer_open(path, &h, NULL, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(vt_writer_close(w), 0);
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    const vt_header *g = vt_reader_header(r);
    assert_int_equal(g->format_version, VT_FORMAT_VERSION);
    assert_int_equal(g->pid, UINT32_MAX);
    assert_string_equal(g->host, "");
    assert_string_equal(g->program, h.program);
    assert_int_equal(g->argc, VT_MAX_ARGV);
    for (uint32_t i = 0; i < VT_MAX_ARGV; i++)
        assert_string_equal(g->argv[i], argv[i]);
    assert_true(g->start_wall_ns == UINT64_MAX);
    assert_int_equal(g->start_mono_ns, h.start_mono_ns);
    assert_string_equal(g->vramtrace_version, h.vramtrace_version);
    assert_int_equal(g->stack_depth, h.stack_depth);
    assert_int_equal(g->flags, VT_HDR_CHILD_AFTER_FORK);
    vt_event ev;
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_close(r);
    const char *names[] = {"h.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(vt_api_name(VT_API_CUDA_MALLOC), "cudaMalloc");
    assert_string_equal(vt_rec_name(VT_REC_ALLOC), "alloc");
    assert_string_equal(vt_rec_name((enum vt_rec)0), "unknown");
    assert_string_equal(vt_rec_name(VT_REC_MAX_), "unknown");
    assert_string_equal(vt_api_name(VT_API_MAX_), "unknown");
    for (int a = 0; a < VT_API_MAX_; a++) {
        assert_non_null(vt_api_name((enum vt_api)a));
        bool host = a == VT_API_CUDA_MALLOC_HOST || a == VT_API_CU_MEM_ALLOC_HOST ||
                    a == VT_API_CUDA_HOST_ALLOC || a == VT_API_CU_MEM_HOST_ALLOC ||
                    a == VT_API_CUDA_HOST_REGISTER || a == VT_API_CU_MEM_HOST_REGISTER ||
                    a == VT_API_CUDA_MALLOC_HOST_POOL || a == VT_API_CU_MEM_ALLOC_HOST_POOL;
        assert_int_equal(vt_kind_is_host(vt_api_get((enum vt_api)a)->kind), host);
        assert_string_not_equal(vt_api_name((enum vt_api)a), "");
    }
    assert_string_equal(vt_kind_name(vt_api_get(VT_API_CU_MEM_CREATE)->kind), "vmm");
    assert_int_equal(vt_api_get(VT_API_CU_MEM_CREATE)->space, VT_SPACE_VMM_HANDLE);
    assert_int_equal(vt_api_get(VT_API_CU_MEM_ALLOC)->level, VT_LEVEL_DRIVER);
    assert_true(vt_api_get(VT_API_CUDA_MALLOC_ASYNC)->stream_ordered);
    assert_int_equal(vt_api_get(VT_API_CU_MEM_ALLOC_MANAGED_POOL)->kind, VT_KIND_MANAGED);
    assert_string_equal(vt_kind_name(VT_KIND_MAX_), "unknown");
    for (int t = 1; t < VT_REC_MAX_; t++) /* every token has its own name */
        for (int u = t + 1; u < VT_REC_MAX_; u++)
            assert_string_not_equal(vt_rec_name((enum vt_rec)t), vt_rec_name((enum vt_rec)u));
}

/* vt_varint_word (the reader's one-word varint, little-endian hosts) reads
 * what the byte loop reads: every length 1..8 with the bytes after it set or
 * clear, and none of 9 or 10 bytes (the loop's, maximal ones included). */
static void test_varint_word(void **state)
{
    (void)state;
#ifdef VT_VARINT_WORD
    uint64_t seed = 88172645463325252ull;
    for (unsigned bits = 0; bits <= 64; bits++) {
        for (int k = 0; k < 200; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17; /* xorshift64 */
            uint64_t v = k == 0   ? (bits == 64 ? ~0ull : (1ull << bits) - 1)
                         : k == 1 ? (bits ? 1ull << (bits - 1) : 0)
                                  : (bits == 64 ? seed : seed & ((1ull << bits) - 1));
            for (int fill = 0; fill < 2; fill++) {
                uint8_t b[VT_VARINT_MAX + 8];
                memset(b, fill ? 0xff : 0x00, sizeof b);
                size_t n = vt_put_varint(b, v);
                const uint8_t *p = b;
                uint64_t loop = 0, word = 0;
                assert_int_equal(vt_get_varint(&p, b + n, &loop),
                                 0); /* fewer than 10 left: the loop */
                assert_int_equal((size_t)(p - b), n);
                assert_true(loop == v);
                size_t got = vt_varint_word(b, &word);
                assert_int_equal(got, n <= 8 ? n : 0);
                if (got)
                    assert_true(word == v);
            }
        }
    }
#else
    skip();
#endif
}

/* Whether this CPU has PEXT at all (fast or not): the PEXT decoder can be
 * run and compared here, whatever vt_cpu_fast_pext() chooses. */
static bool have_pext(void)
{
#ifdef VT_VARINT_PEXT
    __builtin_cpu_init();
    return __builtin_cpu_supports("bmi2");
#else
    return false;
#endif
}

/* vt_varint_word_pext reads what vt_varint_word reads, every length and
 * fill (test_varint_word's values). */
static void test_varint_word_pext(void **state)
{
    (void)state;
#ifdef VT_VARINT_PEXT
    if (!have_pext())
        skip();
    uint64_t seed = 88172645463325252ull;
    for (unsigned bits = 0; bits <= 64; bits++)
        for (int k = 0; k < 200; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            uint64_t v = bits == 64 ? seed : seed & ((1ull << bits) - 1);
            for (int fill = 0; fill < 2; fill++) {
                uint8_t b[VT_VARINT_MAX + 8];
                memset(b, fill ? 0xff : 0x00, sizeof b);
                size_t n = vt_put_varint(b, v);
                uint64_t word = 0, pext = 0;
                size_t want = vt_varint_word(b, &word);
                assert_int_equal(vt_varint_word_pext(b, &pext), want);
                assert_int_equal(want, n <= 8 ? n : 0);
                if (want)
                    assert_true(pext == v && word == v);
            }
        }
#else
    skip();
#endif
}

/* Decodes the n_bytes at buf with vt_rec_decode_many, d.pext as given,
 * into evs (at most cap) with each record's string span in spans; returns
 * how many. */
static size_t decode_all(const uint8_t *buf, size_t n_bytes, bool pext, vt_event *evs,
                         vt_span *spans, size_t cap)
{
    vt_delta d = {.pext = pext};
    const uint8_t *p = buf, *end = buf + n_bytes;
    size_t k = 0;
    while (p < end && k < cap) {
        vt_span str[VT_SPANS];
        bool bad;
        char err[256];
        size_t got =
            vt_rec_decode_many(&p, end, &d, 7, evs + k, cap - k, str, &bad, err, sizeof err);
        assert_false(bad);
        assert_true(got > 0);
        k += got;
        spans[k - 1] = str[VT_SPAN_STR]; /* a record with a string ends a call */
    }
    assert_true(p == end);
    return k;
}

/* The records vt_rec_decode_many decodes with PEXT equal those it decodes
 * with the mask-and-shift steps: every record with every field's extremes
 * (the round trip's corpus), then allocations and frees whose sizes,
 * addresses and times take every varint length, so most are read by the
 * one-word path. */
static void test_decode_many_pext(void **state)
{
    (void)state;
    if (!have_pext())
        skip();
    static corpus c;
    make_corpus(&c);
    enum { RANDOM = 4000 };
    size_t n = c.n + RANDOM;
    vt_event *in = calloc(n, sizeof *in), *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    vt_span *sa = calloc(n, sizeof *sa), *sb = calloc(n, sizeof *sb);
    uint8_t *buf = malloc(n * VT_REC_MAX);
    memcpy(in, c.ev, c.n * sizeof *in);
    uint64_t seed = 0x9e3779b97f4a7c15ull, ts = 0;
    for (size_t i = c.n; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        unsigned bits = (unsigned)(seed % 65);
        uint64_t v = bits == 64 ? seed : seed & ((1ull << bits) - 1);
        ts += v >> (seed % 64);
        in[i] = (vt_event){.type = i % 3 ? VT_REC_ALLOC : VT_REC_FREE, .ts_ns = ts};
        if (in[i].type == VT_REC_ALLOC) {
            in[i].u.alloc.addr = v ^ seed;
            in[i].u.alloc.size = v;
            in[i].u.alloc.stack = (uint32_t)(v >> 7);
            in[i].u.alloc.device = (int32_t)(seed % 9) - 1;
        } else {
            in[i].u.free.addr = v;
            in[i].u.free.device = (int32_t)(seed % 3);
        }
    }
    vt_delta enc = {0};
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += vt_rec_encode(buf + len, &enc, &in[i]);
    assert_int_equal(decode_all(buf, len, false, a, sa, n), n);
    assert_int_equal(decode_all(buf, len, true, b, sb, n), n);
    for (size_t i = 0; i < n; i++) {
        assert_memory_equal(&a[i], &b[i], sizeof a[i]);
        assert_int_equal(sa[i].len, sb[i].len);
        assert_true(sa[i].p == sb[i].p);
    }
    for (size_t i = c.n; i < n; i++) /* and what was written */
        assert_true(a[i].ts_ns == in[i].ts_ns && a[i].u.alloc.addr == in[i].u.alloc.addr);
    free(in), free(a), free(b), free(sa), free(sb), free(buf);
    free_corpus(&c);
}

/* ---- Crafted batches --------------------------------------------------------- */

/* A file image: a valid header followed by one checksummed frame of batch. */
static uint8_t *craft(const uint8_t *batch, size_t n, size_t *len)
{
    vt_header h = vtt_header();
    size_t hl;
    uint8_t *hdr = vt_header_encode(&h, &hl);
    size_t cap = hl + ZSTD_compressBound(n);
    uint8_t *img = malloc(cap);
    memcpy(img, hdr, hl);
    free(hdr);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t z = ZSTD_compress2(cc, img + hl, cap - hl, batch, n);
    assert_false(ZSTD_isError(z));
    ZSTD_freeCCtx(cc);
    *len = hl + z;
    return img;
}

/* Read image to the end; returns the last vt_reader_next result and copies
 * the error (or "") to err. *count gets the number of events. */
static int drain(const uint8_t *img, size_t len, char *err, size_t errlen, size_t *count)
{
    vt_reader *r = vt_reader_open_mem(img, len, err, errlen);
    if (!r)
        return -2;
    vt_event ev;
    int rc;
    *count = 0;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        ++*count;
    snprintf(err, errlen, "%s", rc < 0 ? vt_reader_error(r) : "");
    vt_reader_close(r);
    return rc;
}

static size_t chunk(uint8_t *o, uint32_t tid, uint64_t base, const uint8_t *payload, size_t n)
{
    size_t k = vt_chunk_hdr_encode(o, tid, base, n);
    memcpy(o + k, payload, n);
    return k + n;
}

static void expect_corrupt(const uint8_t *batch, size_t n, const char *needle)
{
    size_t len, count;
    char err[512];
    uint8_t *img = craft(batch, n, &len);
    int rc = drain(img, len, err, sizeof err, &count);
    free(img);
    assert_int_equal(rc, -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

static void test_corrupt_records(void **state)
{
    (void)state;
    uint8_t b[64], p[32];
    size_t n;
    memset(p, 0xff, sizeof p);
    p[0] = VT_REC_ALLOC; /* ts varint never ends */
    n = chunk(b, 1, 0, p, 12);
    expect_corrupt(b, n, "malformed varint");
    p[0] = 0x7f;
    expect_corrupt(b, chunk(b, 1, 0, p, 1), "bad record token");
    p[0] = 0;
    expect_corrupt(b, chunk(b, 1, 0, p, 1), "bad record token");
    p[0] = VT_REC_STRING; /* id 2^33 */
    n = 1 + vt_put_varint(p + 1, 1ull << 33);
    p[n++] = 0;
    expect_corrupt(b, chunk(b, 1, 0, p, n), "out of range");
    p[0] = VT_REC_DEVICE; /* id 2^40 (zigzag) */
    n = 1 + vt_put_varint(p + 1, vt_zigzag(1ll << 40));
    expect_corrupt(b, chunk(b, 1, 0, p, n), "out of range");
    uint8_t f[] = {VT_REC_FREE, 0, 0, 0, 99}; /* api 99 */
    expect_corrupt(b, chunk(b, 1, 0, f, sizeof f), "api");
    p[0] = VT_REC_NOTE;
    n = 1 + vt_put_varint(p + 1, VT_MAX_STRING_LEN + 1);
    expect_corrupt(b, chunk(b, 1, 0, p, n), "string");
    n = 1 + vt_put_varint(p + 1, 20);
    expect_corrupt(b, chunk(b, 1, 0, p, n), "string");
    n = vt_chunk_hdr_encode(b, 1, 0, 100);
    b[n++] = VT_REC_MODULE_RESET;
    expect_corrupt(b, n, "past the batch end");
    uint8_t bad_tid[] = {0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0};
    expect_corrupt(bad_tid, sizeof bad_tid, "thread id");
}

static void test_corrupt_limits(void **state)
{
    (void)state;
    size_t n = (VT_MAX_CHUNKS + 1) * 3;
    uint8_t *b = calloc(n, 1); /* empty chunks of thread 0 */
    expect_corrupt(b, n, "chunks");
    free(b);
    /* A frame header that declares 257 MiB (single segment, 8-byte size). */
    size_t len, count;
    char err[512];
    uint8_t one = VT_REC_MODULE_RESET, c[8];
    uint8_t *img = craft(c, chunk(c, 1, 0, &one, 1), &len);
    vt_header h = vtt_header();
    size_t hl;
    free(vt_header_encode(&h, &hl));
    /* magic, descriptor (8-byte content size, single segment), 257 MiB */
    uint8_t fake[] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0x10, 1, 0, 0, 0, 1, 0, 0};
    uint8_t *img2 = malloc(hl + sizeof fake);
    memcpy(img2, img, hl);
    memcpy(img2 + hl, fake, sizeof fake);
    assert_int_equal(drain(img2, hl + sizeof fake, err, sizeof err, &count), -1);
    assert_non_null(strstr(err, "MiB"));
    free(img2);
    free(img);
}

static void test_corrupt_file(void **state)
{
    (void)state;
    size_t len, count;
    char err[512];
    uint8_t one = VT_REC_MODULE_RESET, c[8];
    uint8_t *img = craft(c, chunk(c, 1, 0, &one, 1), &len);
    assert_int_equal(drain(img, len, err, sizeof err, &count), 0);
    assert_int_equal(count, 1);
    img[len - 1] ^= 0x40; /* the frame checksum */
    assert_int_equal(drain(img, len, err, sizeof err, &count), -1);
    assert_non_null(strstr(err, "checksum"));
    img[len - 1] ^= 0x40;
    uint8_t *garbage = malloc(len + 8);
    memcpy(garbage, img, len);
    memcpy(garbage + len, "garbage!", 8);
    assert_int_equal(drain(garbage, len + 8, err, sizeof err, &count), -1);
    assert_non_null(strstr(err, "bad frame"));
    free(garbage);
    uint32_t v = 1; /* version 1 traces (before Python frames) still read */
    memcpy(img + VT_MAGIC_LEN, &v, 4);
    assert_int_equal(drain(img, len, err, sizeof err, &count), 0);
    assert_int_equal(count, 1);
    v = VT_FORMAT_VERSION + 1;
    memcpy(img + VT_MAGIC_LEN, &v, 4);
    assert_int_equal(drain(img, len, err, sizeof err, &count), -2);
    assert_non_null(strstr(err, "version"));
    v = 0xffffffffu;
    memcpy(img + VT_MAGIC_LEN, &(uint32_t){VT_FORMAT_VERSION}, 4);
    memcpy(img + VT_MAGIC_LEN + 4, &v, 4);
    assert_int_equal(drain(img, len, err, sizeof err, &count), -2);
    assert_non_null(strstr(err, "header length"));
    img[2] = 'X';
    assert_int_equal(drain(img, len, err, sizeof err, &count), -2);
    assert_non_null(strstr(err, "magic"));
    free(img);
}

/* A module record as version 3 wrote it (id 3, path "/l.so", bias 0x10,
 * start 0x20, end 0x30: no build_id) at o, then a string record (id 5,
 * text "x"); returns the length. */
static size_t v3_module_then_string(uint8_t *o)
{
    static const uint8_t b[] = {VT_REC_MODULE, 3,    5,    '/',           'l', '.', 's', 'o',
                                0x10,          0x20, 0x30, VT_REC_STRING, 5,   1,   'x'};
    memcpy(o, b, sizeof b);
    return sizeof b;
}

/* A version-3 module record has no build_id: read as such (NULL), and the
 * record after it reads intact; the same bytes in a version-4 file do not. */
static void test_v3_module(void **state)
{
    (void)state;
    uint8_t b[64], p[32];
    size_t len, n = chunk(b, 1, 0, p, v3_module_then_string(p));
    uint8_t *img = craft(b, n, &len);
    memcpy(img + VT_MAGIC_LEN, &(uint32_t){3}, 4);
    char err[256];
    vt_reader *r = vt_reader_open_mem(img, len, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_REC_MODULE);
    assert_int_equal(ev.u.module.id, 3);
    assert_string_equal(ev.u.module.path, "/l.so");
    assert_int_equal(ev.u.module.end, 0x30);
    assert_null(ev.u.module.build_id);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_REC_STRING);
    assert_string_equal(ev.u.string.text, "x");
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_close(r);
    memcpy(img + VT_MAGIC_LEN, &(uint32_t){VT_FORMAT_VERSION}, 4);
    size_t count; /* the string's token read as the build-id's length: past the end */
    assert_int_equal(drain(img, len, err, sizeof err, &count), -1);
    free(img);
    /* A build-id longer than VT_MAX_ID_LEN is corruption. */
    uint8_t m[] = {VT_REC_MODULE, 3, 0, 0, 0, 0, 0x81, 0x01}; /* id length 129 */
    expect_corrupt(b, chunk(b, 1, 0, m, sizeof m), "identifier longer");
}

/* ---- Merge order within a batch -------------------------------------------------- */

static size_t rec(uint8_t *o, enum vt_rec t, int64_t ts_delta, uint64_t addr)
{
    size_t k = 0;
    o[k++] = (uint8_t)t;
    if (t == VT_REC_STRING || t == VT_REC_STACK_NODE) {
        o[k++] = 5; /* id */
        o[k++] = 0; /* empty text / parent 0 */
        if (t == VT_REC_STACK_NODE)
            o[k++] = 9; /* ip */
        return k;
    }
    k += vt_put_varint(o + k, vt_zigzag(ts_delta));
    k += vt_put_varint(o + k, vt_zigzag((int64_t)addr));
    if (t == VT_REC_ALLOC) {
        o[k++] = 16; /* size */
        o[k++] = 0;  /* stack */
    }
    o[k++] = 0; /* device */
    o[k++] = 1; /* api */
    if (t == VT_REC_ALLOC)
        o[k++] = 0; /* stream */
    return k;
}

static void test_merge_order(void **state)
{
    (void)state;
    uint8_t b[256], p[64];
    size_t n = 0, k;
    /* thread 1: alloc@10, string, alloc@60, alloc@100 */
    k = rec(p, VT_REC_ALLOC, 0, 1);
    k += rec(p + k, VT_REC_STRING, 0, 0);
    k += rec(p + k, VT_REC_ALLOC, 50, 1);
    k += rec(p + k, VT_REC_ALLOC, 40, 2);
    n += chunk(b + n, 1, 10, p, k);
    /* thread 2: stack node, alloc@50, then free@100 */
    k = rec(p, VT_REC_STACK_NODE, 0, 0);
    k += rec(p + k, VT_REC_ALLOC, 0, 2);
    n += chunk(b + n, 2, 50, p, k);
    /* thread 1, a later chunk: free@100 stays after its own alloc@100
     * (chunks of one thread are never reordered, whatever the tie rule) */
    k = rec(p, VT_REC_FREE, 0, 3);
    n += chunk(b + n, 1, 100, p, k);
    /* thread 3: free@100 must come before thread 1's alloc@100 */
    k = rec(p, VT_REC_FREE, 0, 2);
    n += chunk(b + n, 3, 100, p, k);

    size_t len;
    uint8_t *img = craft(b, n, &len);
    char err[256];
    vt_reader *r = vt_reader_open_mem(img, len, err, sizeof err);
    assert_non_null(r);
    static const struct {
        enum vt_rec t;
        uint32_t tid;
        uint64_t ts;
    } want[] = {
        {VT_REC_STACK_NODE, 2, 0}, {VT_REC_ALLOC, 1, 10}, {VT_REC_STRING, 1, 0},
        {VT_REC_ALLOC, 2, 50},     {VT_REC_ALLOC, 1, 60}, {VT_REC_FREE, 3, 100},
        {VT_REC_ALLOC, 1, 100},    {VT_REC_FREE, 1, 100},
    };
    vt_event ev;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(vt_reader_next(r, &ev), 1);
        assert_string_equal(vt_rec_name(ev.type), vt_rec_name(want[i].t));
        assert_int_equal(ev.thread_id, want[i].tid);
        assert_int_equal(ev.ts_ns, want[i].ts);
    }
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_close(r);
    free(img);
}

/* ---- vt_reader_read: the same events as vt_reader_next, by the batch ------------- */

/* Whether ev holds a string (a record type with a string field). */
static bool has_string(const vt_event *ev)
{
    return str_of(ev) != NULL;
}

/* Reads r1 with vt_reader_next and r2 with vt_reader_read in batches of
 * `batch`: the same events (described in full), the same end (rc), a batch
 * never longer than asked and cut short only after an event with a string
 * or at the end. Returns the events read. */
static size_t same_by_batches(vt_reader *r1, vt_reader *r2, size_t batch, int *rc_end)
{
    char *want = malloc(DESC_LEN), *got = malloc(DESC_LEN);
    vt_event ev, evs[16];
    size_t total = 0;
    for (;;) {
        long n = vt_reader_read(r2, evs, batch);
        assert_true(n <= (long)batch);
        for (long i = 0; i < n; i++) {
            assert_int_equal(vt_reader_next(r1, &ev), 1);
            describe(&ev, want, DESC_LEN);
            describe(&evs[i], got, DESC_LEN);
            assert_string_equal(got, want);
            assert_true(i == n - 1 || !has_string(&evs[i])); /* a string ends its batch */
        }
        total += n > 0 ? (size_t)n : 0;
        if (n > 0 && n < (long)batch && !has_string(&evs[n - 1])) /* short: the end is next */
            assert_true(vt_reader_read(r2, evs, batch) <= 0);
        if (n <= 0) {
            *rc_end = (int)n;
            assert_int_equal(vt_reader_next(r1, &ev), (int)n);
            break;
        }
    }
    free(want);
    free(got);
    return total;
}

static void test_read_batches(void **state)
{
    (void)state;
    static corpus c;
    make_corpus(&c);
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "rb.vtrace");
    write_trace(path, c.ev, c.n, 5); /* several frames, strings among the records */
    for (size_t batch = 1; batch <= 16; batch += 5) {
        vt_reader *r1 = vt_reader_open(path, err, sizeof err),
                  *r2 = vt_reader_open(path, err, sizeof err);
        assert_non_null(r1);
        assert_non_null(r2);
        int rc;
        assert_int_equal(same_by_batches(r1, r2, batch, &rc), c.n);
        assert_int_equal(rc, 0);
        vt_reader_close(r1);
        vt_reader_close(r2);
    }
    free_corpus(&c);
    const char *names[] = {"rb.vtrace"};
    vtt_rmdir(dir, names, 1);

    /* several threads merged (test_merge_order's batch), then a corrupt record */
    uint8_t b[256], p[64];
    size_t n = 0, k = rec(p, VT_REC_ALLOC, 0, 1);
    k += rec(p + k, VT_REC_STRING, 0, 0);
    k += rec(p + k, VT_REC_ALLOC, 50, 1);
    n += chunk(b + n, 1, 10, p, k);
    k = rec(p, VT_REC_STACK_NODE, 0, 0);
    k += rec(p + k, VT_REC_ALLOC, 0, 2);
    k += rec(p + k, VT_REC_FREE, 70, 2);
    n += chunk(b + n, 2, 50, p, k);
    p[0] = VT_REC_MAX_; /* a bad token, in a later chunk of thread 1 */
    n += chunk(b + n, 1, 200, p, 1);
    size_t len;
    uint8_t *img = craft(b, n, &len);
    for (size_t batch = 1; batch <= 16; batch += 3) {
        vt_reader *r1 = vt_reader_open_mem(img, len, err, sizeof err);
        vt_reader *r2 = vt_reader_open_mem(img, len, err, sizeof err);
        int rc;
        assert_int_equal(same_by_batches(r1, r2, batch, &rc),
                         5); /* free@120 waits behind the bad chunk */
        assert_int_equal(rc, -1);
        assert_string_equal(vt_reader_error(r2), vt_reader_error(r1));
        vt_reader_close(r1);
        vt_reader_close(r2);
    }
    free(img);

    /* one thread, 5 good records then a bad one: a bad token, or a device
     * record whose string is whole but whose last field runs past the end
     * (its string must not land in the record before it) */
    for (int bad = 0; bad < 2; bad++) {
        k = 0;
        for (int i = 0; i < 5; i++)
            k += rec(p + k, VT_REC_ALLOC, 10, (uint64_t)i + 1);
        static const uint8_t device[] = {VT_REC_DEVICE, 0, 3, 'a', 'b', 'c', 0x80, 0x80};
        if (bad) {
            memcpy(p + k, device, sizeof device);
            k += sizeof device;
        } else {
            p[k++] = VT_REC_MAX_;
        }
        n = chunk(b, 1, 10, p, k);
        img = craft(b, n, &len);
        for (size_t batch = 1; batch <= 16; batch += 3) {
            vt_reader *r1 = vt_reader_open_mem(img, len, err, sizeof err);
            vt_reader *r2 = vt_reader_open_mem(img, len, err, sizeof err);
            int rc;
            assert_int_equal(same_by_batches(r1, r2, batch, &rc), 5);
            assert_int_equal(rc, -1);
            vt_reader_close(r1);
            vt_reader_close(r2);
        }
        free(img);
    }
}

/* ---- A file read through the input window, as the same bytes in memory ---------- */

/* Reads r to the end: events, last result; the error copied to err. */
static size_t read_all(vt_reader *r, int *rc, char *err, size_t errlen)
{
    vt_event evs[16];
    size_t n = 0;
    long got;
    while ((got = vt_reader_read(r, evs, 16)) > 0)
        n += (size_t)got;
    *rc = (int)got;
    snprintf(err, errlen, "%s", got < 0 ? vt_reader_error(r) : "");
    return n;
}

/* Frames larger than the reader's first input window (ZSTD_DStreamInSize):
 * random addresses and sizes do not compress. Every cut of the file, and
 * one flipped byte, reads from the file (window refilled, grown, one-pass
 * or streamed frames) exactly as from memory: same events, same end, same
 * error, same truncation, same final offset. */
static void test_file_as_memory(void **state)
{
    (void)state;
    enum { N = 60000 };
    vt_event *ev = calloc(N, sizeof *ev);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        ev[i] = (vt_event){.type = i % 2 ? VT_REC_FREE : VT_REC_ALLOC, .ts_ns = 1000 + i};
        ev[i].u.alloc.addr = x & 0xffffffffffull;
        ev[i].u.alloc.size = x >> 40;
        ev[i].u.alloc.api = VT_API_CUDA_MALLOC;
    }
    char *dir = vtt_tmpdir(), path[1024], cut[1024], err[256], e1[512], e2[512];
    vtt_path(path, sizeof path, dir, "big.vtrace");
    vtt_path(cut, sizeof cut, dir, "cut.vtrace");
    write_trace(path, ev, N, N / 2); /* two frames of about 600 KiB */
    size_t len = 0;
    uint8_t *img = vtt_slurp(path, &len);
    assert_true(len > 4 * ZSTD_DStreamInSize());
    for (int k = 0; k <= 40; k++) {
        size_t at =
            k == 40 ? len : (size_t)(((uint64_t)len * (uint64_t)k) / 40 + (size_t)k * 7919 % 4096);
        at = at > len ? len : at;
        bool flip = k % 10 == 5 && at > 200;
        if (flip)
            img[at - 100] ^= 0x10;
        FILE *f = fopen(cut, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(img, 1, at, f), at);
        fclose(f);
        vt_reader *r1 = vt_reader_open(cut, err, sizeof err);
        vt_reader *r2 = vt_reader_open_mem(img, at, err, sizeof err);
        assert_true((r1 == NULL) == (r2 == NULL));
        if (r1) {
            int rc1, rc2;
            size_t n1 = read_all(r1, &rc1, e1, sizeof e1), n2 = read_all(r2, &rc2, e2, sizeof e2);
            assert_int_equal(n1, n2);
            assert_int_equal(rc1, rc2);
            assert_string_equal(e1, e2);
            assert_int_equal(vt_reader_truncated(r1), vt_reader_truncated(r2));
            if (rc1 == 0)
                assert_int_equal(vt_reader_offset(r1), vt_reader_offset(r2));
            if (at == len)
                assert_int_equal(n1, N); /* the whole file: every event */
        }
        vt_reader_close(r1);
        vt_reader_close(r2);
        if (flip)
            img[at - 100] ^= 0x10;
    }
    free(img);
    free(ev);
    const char *names[] = {"big.vtrace", "cut.vtrace"};
    vtt_rmdir(dir, names, 2);
}

/* ---- Truncation and bit flips on a small multi-frame trace ----------------------- */

typedef struct small_trace {
    uint8_t *img;
    size_t len, hdr_len;
    uint64_t bounds[16]; /* file offsets where a frame ends */
    size_t nbounds;
    char (*desc)[160];
    size_t nev;
} small_trace;

static void make_small_trace(small_trace *t)
{
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "small.vtrace");
    vt_header h = vtt_header();
    vt_writer_opts o = {.no_thread = true};
    vt_writer *w = vt_writer_open(path, &h, &o, err, sizeof err);
    assert_non_null(w);
    t->hdr_len = vt_writer_bytes(w);
    vt_tbuf *tb = vt_writer_attach(w, 3);
    uint64_t ts = vtt_mono_ns();
    t->nbounds = 0;
    for (int f = 0; f < 5; f++) {
        for (int i = 0; i < 6; i++) {
            vt_event e = {.type = i % 3 == 2 ? VT_REC_FREE : VT_REC_ALLOC, .ts_ns = ts + 10 * i};
            e.u.alloc.addr = 0x1000u * (uint64_t)(f * 6 + i);
            e.u.alloc.size = 256;
            if (i == 0) {
                vt_event s = {.type = VT_REC_STRING, .u.string = {(uint32_t)f + 1, "phase"}};
                assert_int_equal(vt_write(tb, &s), 0);
            }
            assert_int_equal(vt_write(tb, &e), 0);
        }
        ts = vtt_mono_ns() + 1000000;
        assert_int_equal(vt_writer_flush(w), 0);
        t->bounds[t->nbounds++] = vt_writer_bytes(w);
    }
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
    t->img = vtt_slurp(path, &t->len);
    assert_non_null(t->img);
    assert_int_equal(t->len, t->bounds[t->nbounds - 1]);
    const char *names[] = {"small.vtrace"};
    vtt_rmdir(dir, names, 1);
    /* The reference reading. */
    t->desc = malloc(64 * sizeof *t->desc);
    vt_reader *r = vt_reader_open_mem(t->img, t->len, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    for (t->nev = 0; vt_reader_next(r, &ev) == 1; t->nev++)
        describe(&ev, t->desc[t->nev], sizeof t->desc[0]);
    assert_int_equal(t->nev, 35);
    vt_reader_close(r);
}

/* Read img[0, len) and check it yields a prefix of the reference. Returns the
 * final vt_reader_next result (or -2 when open failed). */
static int check_prefix(const small_trace *t, const uint8_t *img, size_t len, bool *truncated,
                        size_t *nread)
{
    char err[256], d[160];
    vt_reader *r = vt_reader_open_mem(img, len, err, sizeof err);
    if (!r)
        return -2;
    vt_event ev;
    int rc;
    size_t i = 0;
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        assert_true(i < t->nev);
        describe(&ev, d, sizeof d);
        assert_string_equal(d, t->desc[i]);
        i++;
    }
    *truncated = vt_reader_truncated(r);
    *nread = i;
    vt_reader_close(r);
    return rc;
}

static bool is_bound(const small_trace *t, size_t cut)
{
    for (size_t i = 0; i < t->nbounds; i++)
        if (t->bounds[i] == cut)
            return true;
    return cut == t->hdr_len;
}

static void test_truncated_at_every_byte(void **state)
{
    (void)state;
    small_trace t;
    make_small_trace(&t);
    size_t last_n = 0;
    for (size_t cut = 0; cut <= t.len; cut++) {
        bool trunc;
        size_t n;
        int rc = check_prefix(&t, t.img, cut, &trunc, &n);
        if (cut < t.hdr_len) {
            assert_int_equal(rc, -2); /* no header: open fails (says "truncated") */
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(trunc, !is_bound(&t, cut));
        assert_true(n >= last_n); /* a longer prefix never yields fewer events */
        last_n = n;
    }
    assert_int_equal(last_n, t.nev);
    char err[256];
    assert_null(vt_reader_open_mem(t.img, t.hdr_len - 1, err, sizeof err));
    assert_non_null(strstr(err, "truncated"));
    free(t.img);
    free(t.desc);
}

static void test_bit_flips(void **state)
{
    (void)state;
    small_trace t;
    make_small_trace(&t);
    size_t errors = 0, clean = 0;
    for (size_t pos = 0; pos < t.len; pos++) {
        for (int bit = 0; bit < 8; bit += 3) {
            t.img[pos] ^= (uint8_t)(1u << bit);
            bool trunc;
            size_t n;
            int rc = check_prefix(&t, t.img, t.len, &trunc, &n); /* never a crash */
            t.img[pos] ^= (uint8_t)(1u << bit);
            assert_true(rc == -2 || rc == -1 || rc == 0);
            if (rc == 0)
                clean++;
            else
                errors++;
        }
    }
    /* Flips inside the checksummed frames must be caught. */
    assert_true(errors >= (t.len - t.hdr_len) * 3 * 9 / 10);
    (void)clean;
    free(t.img);
    free(t.desc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_record),
        cmocka_unit_test(test_header_roundtrip),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_varint_word),
        cmocka_unit_test(test_varint_word_pext),
        cmocka_unit_test(test_decode_many_pext),
        cmocka_unit_test(test_corrupt_records),
        cmocka_unit_test(test_v3_module),
        cmocka_unit_test(test_corrupt_limits),
        cmocka_unit_test(test_corrupt_file),
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_read_batches),
        cmocka_unit_test(test_file_as_memory),
        cmocka_unit_test(test_truncated_at_every_byte),
        cmocka_unit_test(test_bit_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
