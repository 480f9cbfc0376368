/* records.c: the one definition of the .vtrace bytes. Every record's fields
 * are listed once, in FIELDS below, and the encoder and the decoder both walk
 * that table, so they cannot disagree. docs/trace.md is the prose version. */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef VT_VARINT_PEXT
#include <cpuid.h>
#endif

/* ---- Names ----------------------------------------------------------------- */

#define RT VT_LEVEL_RUNTIME
#define DRV VT_LEVEL_DRIVER
#define ADDR VT_SPACE_ADDR

static const vt_api_info API_INFO[VT_API_MAX_] = {
    [VT_API_UNKNOWN] = {"unknown", RT, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CUDA_MALLOC] = {"cudaMalloc", RT, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CUDA_MALLOC_MANAGED] = {"cudaMallocManaged", RT, VT_KIND_MANAGED, false, ADDR},
    [VT_API_CUDA_MALLOC_PITCH] = {"cudaMallocPitch", RT, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CUDA_MALLOC_3D] = {"cudaMalloc3D", RT, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CUDA_MALLOC_HOST] = {"cudaMallocHost", RT, VT_KIND_HOST_PINNED, false, ADDR},
    [VT_API_CUDA_MALLOC_ASYNC] = {"cudaMallocAsync", RT, VT_KIND_DEVICE, true, ADDR},
    [VT_API_CU_MEM_ALLOC] = {"cuMemAlloc", DRV, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CU_MEM_ALLOC_PITCH] = {"cuMemAllocPitch", DRV, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CU_MEM_ALLOC_MANAGED] = {"cuMemAllocManaged", DRV, VT_KIND_MANAGED, false, ADDR},
    [VT_API_CU_MEM_ALLOC_HOST] = {"cuMemAllocHost", DRV, VT_KIND_HOST_PINNED, false, ADDR},
    [VT_API_CU_MEM_ALLOC_ASYNC] = {"cuMemAllocAsync", DRV, VT_KIND_DEVICE, true, ADDR},
    [VT_API_CU_MEM_CREATE] = {"cuMemCreate", DRV, VT_KIND_VMM, false, VT_SPACE_VMM_HANDLE},
    [VT_API_CUPTI] = {"cupti", DRV, VT_KIND_DEVICE, false, ADDR},
    [VT_API_CUDA_HOST_REGISTER] = {"cudaHostRegister", RT, VT_KIND_HOST_REGISTERED, false, ADDR},
    [VT_API_CU_MEM_HOST_REGISTER] = {"cuMemHostRegister", DRV, VT_KIND_HOST_REGISTERED, false,
                                     ADDR},
    [VT_API_CUDA_MALLOC_FROM_POOL_ASYNC] = {"cudaMallocFromPoolAsync", RT, VT_KIND_DEVICE, true,
                                            ADDR},
    [VT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC] = {"cuMemAllocFromPoolAsync", DRV, VT_KIND_DEVICE, true,
                                             ADDR},
    [VT_API_CUDA_HOST_ALLOC] = {"cudaHostAlloc", RT, VT_KIND_HOST_PINNED, false, ADDR},
    [VT_API_CU_MEM_HOST_ALLOC] = {"cuMemHostAlloc", DRV, VT_KIND_HOST_PINNED, false, ADDR},
    [VT_API_CUDA_MALLOC_ARRAY] = {"cudaMallocArray", RT, VT_KIND_ARRAY, false, VT_SPACE_ARRAY},
    [VT_API_CUDA_MALLOC_3D_ARRAY] = {"cudaMalloc3DArray", RT, VT_KIND_ARRAY, false, VT_SPACE_ARRAY},
    [VT_API_CU_ARRAY_CREATE] = {"cuArrayCreate", DRV, VT_KIND_ARRAY, false, VT_SPACE_ARRAY},
    [VT_API_CU_ARRAY_3D_CREATE] = {"cuArray3DCreate", DRV, VT_KIND_ARRAY, false, VT_SPACE_ARRAY},
    [VT_API_CUDA_MALLOC_MIPMAPPED_ARRAY] = {"cudaMallocMipmappedArray", RT, VT_KIND_ARRAY, false,
                                            VT_SPACE_ARRAY},
    [VT_API_CU_MIPMAPPED_ARRAY_CREATE] = {"cuMipmappedArrayCreate", DRV, VT_KIND_ARRAY, false,
                                          VT_SPACE_ARRAY},
    [VT_API_CU_GRAPH_LAUNCH] = {"cuGraphLaunch", DRV, VT_KIND_DEVICE, false, ADDR},
    /* the same calls as 16 and 17, named alike (a report names the call) */
    [VT_API_CUDA_MALLOC_HOST_POOL] = {"cudaMallocFromPoolAsync", RT, VT_KIND_HOST_PINNED, true,
                                      ADDR},
    [VT_API_CU_MEM_ALLOC_HOST_POOL] = {"cuMemAllocFromPoolAsync", DRV, VT_KIND_HOST_PINNED, true,
                                       ADDR},
    /* not stream-ordered here: no pool_stat is taken of a managed pool, so
     * no sampled reserve holds their driver rounding */
    [VT_API_CUDA_MALLOC_MANAGED_POOL] = {"cudaMallocFromPoolAsync", RT, VT_KIND_MANAGED, false,
                                         ADDR},
    [VT_API_CU_MEM_ALLOC_MANAGED_POOL] = {"cuMemAllocFromPoolAsync", DRV, VT_KIND_MANAGED, false,
                                          ADDR},
};

#undef RT
#undef DRV
#undef ADDR

static const char *const KIND_NAMES[VT_KIND_MAX_] = {
    [VT_KIND_DEVICE] = "device",
    [VT_KIND_MANAGED] = "managed",
    [VT_KIND_HOST_PINNED] = "host_pinned",
    [VT_KIND_HOST_REGISTERED] = "host_registered",
    [VT_KIND_VMM] = "vmm",
    [VT_KIND_ARRAY] = "array",
};

static const char *const REC_NAMES[VT_REC_MAX_] = {
    [VT_REC_MODULE] = "module",
    [VT_REC_MODULE_RESET] = "module_reset",
    [VT_REC_STACK_NODE] = "stack_node",
    [VT_REC_STRING] = "string",
    [VT_REC_THREAD] = "thread",
    [VT_REC_DEVICE] = "device",
    [VT_REC_ALLOC] = "alloc",
    [VT_REC_FREE] = "free",
    [VT_REC_ALLOC_FAILED] = "alloc_failed",
    [VT_REC_MEMINFO] = "meminfo",
    [VT_REC_RANGE_PUSH] = "range_push",
    [VT_REC_RANGE_POP] = "range_pop",
    [VT_REC_MARK] = "mark",
    [VT_REC_HEAP_REGISTER] = "heap_register",
    [VT_REC_HEAP_UNREGISTER] = "heap_unregister",
    [VT_REC_HEAP_RESET] = "heap_reset",
    [VT_REC_REGION_REGISTER] = "region_register",
    [VT_REC_REGION_UNREGISTER] = "region_unregister",
    [VT_REC_REGION_RESIZE] = "region_resize",
    [VT_REC_REGION_NAME] = "region_name",
    [VT_REC_NOTE] = "note",
    [VT_REC_END] = "end",
    [VT_REC_RANGE_START] = "range_start",
    [VT_REC_RANGE_END] = "range_end",
    [VT_REC_VMM_MAP] = "vmm_map",
    [VT_REC_VMM_UNMAP] = "vmm_unmap",
    [VT_REC_PY_FRAME] = "py_frame",
    [VT_REC_PY_STACK_NODE] = "py_stack_node",
    [VT_REC_POOL_STAT] = "pool_stat",
    [VT_REC_SYMBOL] = "symbol",
    [VT_REC_CAPTURE] = "capture",
    [VT_REC_FREE_FAILED] = "free_failed",
};

const vt_api_info *vt_api_get(enum vt_api api)
{
    return &API_INFO[(unsigned)api < VT_API_MAX_ ? api : VT_API_UNKNOWN];
}

const char *vt_api_name(enum vt_api api)
{
    return vt_api_get(api)->name;
}

const char *vt_kind_name(enum vt_kind kind)
{
    return (unsigned)kind < VT_KIND_MAX_ ? KIND_NAMES[kind] : "unknown";
}

bool vt_kind_is_host(enum vt_kind kind)
{
    return kind == VT_KIND_HOST_PINNED || kind == VT_KIND_HOST_REGISTERED;
}

bool vt_py_library_file(const char *file)
{
    if (!file[0])
        return true;
    if (file[0] == '<') /* a notebook cell or typed code is the program's */
        return strncmp(file, "<ipython-input-", 15) && strcmp(file, "<stdin>");
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
        return true;
    const char *p = strstr(file, "/lib/python");
    if (!p)
        return false;
    p += strlen("/lib/python");
    while ((*p >= '0' && *p <= '9') || *p == '.')
        p++; /* "3.11" */
    return *p == '/';
}

static const char HEX_DIGITS[] = "0123456789abcdef";

void vt_build_id_hex(const unsigned char *bits, size_t n, char out[VT_MAX_ID_LEN + 1])
{
    if (2 * n > VT_MAX_ID_LEN)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = HEX_DIGITS[bits[i] >> 4];
        out[2 * i + 1] = HEX_DIGITS[bits[i] & 15];
    }
    out[2 * n] = '\0';
}

size_t vt_build_id_bits(const char *hex, unsigned char bits[VT_MAX_ID_LEN / 2])
{
    size_t n = strlen(hex);
    if (n % 2 || n > VT_MAX_ID_LEN || strspn(hex, HEX_DIGITS) != n)
        return 0;
    for (size_t i = 0; i < n / 2; i++)
        bits[i] = (unsigned char)((strchr(HEX_DIGITS, hex[2 * i]) - HEX_DIGITS) << 4 |
                                  (strchr(HEX_DIGITS, hex[2 * i + 1]) - HEX_DIGITS));
    return n / 2;
}

/* Every api has its table entry (a new api without one would read as a
 * NULL name): checked at compile time through the entry count. */
_Static_assert(sizeof API_INFO / sizeof API_INFO[0] == VT_API_MAX_, "one API_INFO row per api");

const char *vt_rec_name(enum vt_rec rec)
{
    if ((unsigned)rec >= VT_REC_MAX_ || !REC_NAMES[rec])
        return "unknown";
    return REC_NAMES[rec];
}

static bool valid_token(unsigned t)
{
    return t > 0 && t < VT_REC_MAX_;
}

/* ---- The record table ------------------------------------------------------ */

/* Field encodings: TS = zigzag delta from the chunk's previous timestamp
 * (ev->ts_ns); ADDR = zigzag delta from the chunk's previous address; U64,
 * U32 = varint; I32 = zigzag varint; API = varint < VT_API_MAX_; STR = varint
 * length (<= VT_MAX_STRING_LEN) + bytes; ID = the same with at most
 * VT_MAX_ID_LEN bytes. A record has at most one STR and one ID, and an ID
 * only after a STR (the decoder's spans rely on it: vt_rec_decode). */
enum fkind { F_END = 0, F_TS, F_ADDR, F_U64, F_U32, F_I32, F_API, F_STR, F_ID };

typedef struct field {
    unsigned char kind;
    unsigned short off; /* offset in vt_event */
    const char *name;
    unsigned char since; /* the format version that added it (0: every version) */
} field;

#define FLD(k, m)                                                                                  \
    {                                                                                              \
        k, offsetof(vt_event, u.m), #m, 0                                                          \
    }
/* A field that format version v appended to its record: older files lack it
 * (it comes after every field of those versions in its row). */
#define FLD_SINCE(k, m, v)                                                                         \
    {                                                                                              \
        k, offsetof(vt_event, u.m), #m, v                                                          \
    }
#define TS                                                                                         \
    {                                                                                              \
        F_TS, 0, "ts", 0                                                                           \
    }
#define MAX_FIELDS 9

static const field FIELDS[VT_REC_MAX_][MAX_FIELDS] = {
    [VT_REC_MODULE] = {FLD(F_U32, module.id), FLD(F_STR, module.path), FLD(F_U64, module.bias),
                       FLD(F_U64, module.start), FLD(F_U64, module.end),
                       FLD_SINCE(F_ID, module.build_id, 4)},
    [VT_REC_MODULE_RESET] = {{F_END, 0, NULL, 0}},
    [VT_REC_STACK_NODE] = {FLD(F_U32, stack_node.id), FLD(F_U32, stack_node.parent),
                           FLD(F_U64, stack_node.ip)},
    [VT_REC_STRING] = {FLD(F_U32, string.id), FLD(F_STR, string.text)},
    [VT_REC_THREAD] = {FLD(F_U32, thread.id), FLD(F_STR, thread.name),
                       FLD_SINCE(F_U32, thread.start, 15)},
    [VT_REC_DEVICE] = {FLD(F_I32, device.id), FLD(F_STR, device.name),
                       FLD(F_U64, device.total_bytes)},
    [VT_REC_ALLOC] = {TS, FLD(F_ADDR, alloc.addr), FLD(F_U64, alloc.size), FLD(F_U32, alloc.stack),
                      FLD(F_I32, alloc.device), FLD(F_API, alloc.api), FLD(F_U64, alloc.stream)},
    [VT_REC_FREE] = {TS, FLD(F_ADDR, free.addr), FLD(F_I32, free.device), FLD(F_API, free.api)},
    [VT_REC_ALLOC_FAILED] = {TS, FLD(F_U64, failed.size), FLD(F_I32, failed.error),
                             FLD(F_U32, failed.stack), FLD(F_I32, failed.device),
                             FLD(F_API, failed.api), FLD(F_U64, failed.free_bytes),
                             FLD(F_U64, failed.total_bytes)},
    [VT_REC_MEMINFO] = {TS, FLD(F_I32, meminfo.device), FLD(F_U64, meminfo.free_bytes),
                        FLD(F_U64, meminfo.total_bytes)},
    [VT_REC_RANGE_PUSH] = {TS, FLD(F_U32, range.domain), FLD(F_U32, range.name)},
    [VT_REC_RANGE_POP] = {TS, FLD(F_U32, range.domain)},
    [VT_REC_MARK] = {TS, FLD(F_U32, range.domain), FLD(F_U32, range.name)},
    [VT_REC_HEAP_REGISTER] = {TS, FLD(F_U64, heap.heap), FLD(F_ADDR, heap.addr),
                              FLD(F_U64, heap.size), FLD(F_U32, heap.usage)},
    [VT_REC_HEAP_UNREGISTER] = {TS, FLD(F_U64, heap.heap)},
    [VT_REC_HEAP_RESET] = {TS, FLD(F_U64, heap.heap)},
    [VT_REC_REGION_REGISTER] = {TS, FLD(F_U64, region.heap), FLD(F_ADDR, region.addr),
                                FLD(F_U64, region.size), FLD(F_U32, region.stack)},
    [VT_REC_REGION_UNREGISTER] = {TS, FLD(F_U64, region.heap), FLD(F_ADDR, region.addr)},
    [VT_REC_REGION_RESIZE] = {TS, FLD(F_U64, region.heap), FLD(F_ADDR, region.addr),
                              FLD(F_U64, region.size)},
    [VT_REC_REGION_NAME] = {TS, FLD(F_U64, region.heap), FLD(F_ADDR, region.addr),
                            FLD(F_U32, region.name)},
    [VT_REC_NOTE] = {FLD(F_STR, note.text)},
    [VT_REC_END] = {TS, FLD(F_I32, end.status), FLD(F_I32, end.signal), FLD(F_STR, end.reason)},
    [VT_REC_RANGE_START] = {TS, FLD(F_U64, range_se.id), FLD(F_U32, range_se.domain),
                            FLD(F_U32, range_se.name)},
    [VT_REC_RANGE_END] = {TS, FLD(F_U64, range_se.id)},
    [VT_REC_VMM_MAP] = {TS, FLD(F_U64, vmm.handle), FLD(F_ADDR, vmm.addr), FLD(F_U64, vmm.size),
                        FLD(F_I32, vmm.device)},
    [VT_REC_VMM_UNMAP] = {TS, FLD(F_ADDR, vmm.addr), FLD(F_U64, vmm.size)},
    [VT_REC_PY_FRAME] = {FLD(F_U32, py_frame.id), FLD(F_U32, py_frame.function),
                         FLD(F_U32, py_frame.file), FLD(F_U32, py_frame.line)},
    [VT_REC_PY_STACK_NODE] = {FLD(F_U32, py_stack_node.id), FLD(F_U32, py_stack_node.parent),
                              FLD(F_U32, py_stack_node.frame)},
    [VT_REC_POOL_STAT] = {TS, FLD(F_I32, pool.device), FLD(F_U64, pool.pool),
                          FLD(F_U64, pool.reserved_bytes), FLD(F_U64, pool.used_bytes)},
    [VT_REC_SYMBOL] = {FLD(F_U64, symbol.ip), FLD(F_U32, symbol.index), FLD(F_U32, symbol.function),
                       FLD(F_U32, symbol.file), FLD(F_U32, symbol.line), FLD(F_U32, symbol.flags)},
    [VT_REC_CAPTURE] = {TS, FLD(F_U64, capture.stream), FLD(F_U32, capture.began)},
    [VT_REC_FREE_FAILED] = {TS, FLD(F_ADDR, free_failed.addr), FLD(F_I32, free_failed.error),
                            FLD(F_U32, free_failed.stack), FLD(F_U32, free_failed.call),
                            FLD(F_U32, free_failed.flags)},
};

static const field *string_field(unsigned type)
{
    if (!valid_token(type))
        return NULL;
    for (const field *f = FIELDS[type]; f->kind != F_END; f++)
        if (f->kind == F_STR)
            return f;
    return NULL;
}

static const char *get_str(const vt_event *ev, const field *f)
{
    const char *s;
    memcpy(&s, (const char *)ev + f->off, sizeof s);
    return s;
}

/* The records encoded by their own unrolled code (vt_rec_encode,
 * vt_rec_string_len): every allocation and free, every NVTX Mem region
 * registration (a caching allocator's sub-allocations) and every NVTX range;
 * X(tok) once for each. */
#define HOT_RECORDS(X)                                                                             \
    X(VT_REC_ALLOC)                                                                                \
    X(VT_REC_FREE)                                                                                 \
    X(VT_REC_REGION_REGISTER)                                                                      \
    X(VT_REC_REGION_UNREGISTER)                                                                    \
    X(VT_REC_RANGE_PUSH)                                                                           \
    X(VT_REC_RANGE_POP)

/* The string field of a tok record, NULL if none: string_field unrolled
 * (as encode_fields below), folding to a constant for a constant tok. */
static inline __attribute__((always_inline)) const field *row_string_field(unsigned tok)
{
    const field *f = FIELDS[tok];
#define STR_STEP(k)                                                                                \
    if (f[k].kind == F_END)                                                                        \
        return NULL;                                                                               \
    if (f[k].kind == F_STR)                                                                        \
        return &f[k];
    STR_STEP(0)
    STR_STEP(1)
    STR_STEP(2)
    STR_STEP(3)
    STR_STEP(4)
    STR_STEP(5)
    STR_STEP(6)
    STR_STEP(7)
#undef STR_STEP
    return NULL;
}

/* vt_rec_string_len of a record of any valid type, walking its row. */
static size_t strings_len(const vt_event *ev)
{
    size_t n = 0;
    for (const field *f = FIELDS[ev->type]; f->kind != F_END; f++) {
        const char *s = f->kind == F_STR || f->kind == F_ID ? get_str(ev, f) : NULL;
        if (f->kind == F_STR)
            n += s ? strnlen(s, VT_MAX_STRING_LEN) : 0;
        else if (f->kind == F_ID)
            n += VT_VARINT_MAX + (s ? strnlen(s, VT_MAX_ID_LEN) : 0);
    }
    return n;
}

size_t vt_rec_string_len(const vt_event *ev)
{
    const field *f;
    switch (ev->type) { /* asked for every record written: vt_rec_encode's unrolled ones folded */
#define STRING_CASE(tok)                                                                           \
    case tok:                                                                                      \
        f = row_string_field(tok);                                                                 \
        break;
        HOT_RECORDS(STRING_CASE)
#undef STRING_CASE
    default:
        return valid_token(ev->type) ? strings_len(ev) : 0;
    }
    const char *s = f ? get_str(ev, f) : NULL;
    return s ? strnlen(s, VT_MAX_STRING_LEN) : 0;
}

void vt_rec_set_string(vt_event *ev, const char *s)
{
    const field *f = string_field(ev->type);
    if (f)
        memcpy((char *)ev + f->off, &s, sizeof s);
}

/* ---- Encoder ---------------------------------------------------------------- */

/* vt_put_varint at o, returning the end: the one- and two-byte values
 * (most fields, most timestamp deltas) without the loop. The same bytes. */
static inline __attribute__((always_inline)) uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    if (v < 0x80) {
        *o = (uint8_t)v;
        return o + 1;
    }
    if (v < 0x4000) {
        o[0] = (uint8_t)(v | 0x80);
        o[1] = (uint8_t)(v >> 7);
        return o + 2;
    }
    return o + vt_put_varint(o, v);
}

/* One field of ev at o; returns the end of what it wrote. Always inlined:
 * with a constant field (encode_fields on a constant tok) it folds into the
 * field's own few instructions. */
static inline __attribute__((always_inline)) uint8_t *enc_field(uint8_t *o, vt_delta *d,
                                                                const vt_event *ev, const field *f)
{
    const char *src = (const char *)ev + f->off;
    uint64_t u64;
    uint32_t u32;
    int32_t i32;
    enum vt_api api;
    switch (f->kind) {
    case F_TS:
        if (!d->has_ts) {
            d->base_ts = d->prev_ts = ev->ts_ns;
            d->has_ts = 1;
        }
        o = put_varint(o, vt_zigzag((int64_t)(ev->ts_ns - d->prev_ts)));
        d->prev_ts = ev->ts_ns;
        return o;
    case F_ADDR:
        memcpy(&u64, src, sizeof u64);
        o = put_varint(o, vt_zigzag((int64_t)(u64 - d->prev_addr)));
        d->prev_addr = u64;
        return o;
    case F_U64:
        memcpy(&u64, src, sizeof u64);
        return put_varint(o, u64);
    case F_U32:
        memcpy(&u32, src, sizeof u32);
        return put_varint(o, u32);
    case F_I32:
        memcpy(&i32, src, sizeof i32);
        return put_varint(o, vt_zigzag(i32));
    case F_API:
        memcpy(&api, src, sizeof api);
        return put_varint(o, (unsigned)api < VT_API_MAX_ ? (unsigned)api : VT_API_UNKNOWN);
    default: { /* F_STR, F_ID */
        const char *s = get_str(ev, f);
        size_t n = s ? strnlen(s, f->kind == F_ID ? VT_MAX_ID_LEN : VT_MAX_STRING_LEN) : 0;
        o += vt_put_varint(o, n);
        if (n)
            memcpy(o, s, n);
        return o + n;
    }
    }
}

/* Encode a tok record through FIELDS[tok]; returns its length. Always
 * inlined and unrolled by hand (a row has at most MAX_FIELDS - 1 fields before
 * its F_END): called with a constant tok, every step's field is a constant
 * and folds into that field's own encoding, read off the one table. */
static inline __attribute__((always_inline)) size_t encode_fields(unsigned tok, uint8_t *out,
                                                                  vt_delta *d, const vt_event *ev)
{
    const field *f = FIELDS[tok];
    uint8_t *o = out;
    *o++ = (uint8_t)tok;
#define ENC_STEP(k)                                                                                \
    if (f[k].kind == F_END)                                                                        \
        return (size_t)(o - out);                                                                  \
    o = enc_field(o, d, ev, &f[k]);
    ENC_STEP(0)
    ENC_STEP(1)
    ENC_STEP(2)
    ENC_STEP(3)
    ENC_STEP(4)
    ENC_STEP(5)
    ENC_STEP(6)
    ENC_STEP(7)
#undef ENC_STEP
    _Static_assert(MAX_FIELDS == 9, "one ENC_STEP per field a row can hold");
    return (size_t)(o - out);
}

size_t vt_rec_encode_generic(uint8_t *out, vt_delta *d, const vt_event *ev)
{
    if (!valid_token(ev->type))
        return 0;
    uint8_t *o = out;
    *o++ = (uint8_t)ev->type;
    for (const field *f = FIELDS[ev->type]; f->kind != F_END; f++)
        o = enc_field(o, d, ev, f);
    return (size_t)(o - out);
}

size_t vt_rec_encode(uint8_t *out, vt_delta *d, const vt_event *ev)
{
    /* HOT_RECORDS unrolled: each case is the table's row folded at compile
     * time. */
    switch (ev->type) {
#define ENCODE_CASE(tok)                                                                           \
    case tok:                                                                                      \
        return encode_fields(tok, out, d, ev);
        HOT_RECORDS(ENCODE_CASE)
#undef ENCODE_CASE
    default:
        return vt_rec_encode_generic(out, d, ev);
    }
}

/* ---- Decoder ---------------------------------------------------------------- */

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* One varint: the one-byte case (most fields) without the loop. roomy: at
 * least VT_VARINT_MAX bytes are left at *p (no bound check). */
static ALWAYS_INLINE int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v, bool roomy,
                                    bool pext)
{
    if ((roomy || *p < end) && **p < 0x80) {
        *v = *(*p)++;
        return 0;
    }
#ifdef VT_VARINT_PEXT
    if (pext && roomy) {
        size_t n = vt_varint_word_pext(*p, v);
        if (n) {
            *p += n;
            return 0;
        }
        return vt_get_varint(p, end, v);
    }
#else
    (void)pext;
#endif
#ifdef VT_VARINT_WORD
    size_t n = roomy ? vt_varint_word(*p, v) : 0;
    if (n) {
        *p += n;
        return 0;
    }
#endif
    return vt_get_varint(p, end, v);
}

/* A str or id field of length v at *p into its span s; NULL on success,
 * else what went wrong. */
static ALWAYS_INLINE const char *dec_span(const uint8_t **p, const uint8_t *end, uint64_t v,
                                          const field *f, vt_span *s)
{
    if (f->kind == F_ID && v > VT_MAX_ID_LEN)
        return "identifier longer than VT_MAX_ID_LEN";
    if (v > VT_MAX_STRING_LEN)
        return "string longer than VT_MAX_STRING_LEN";
    if (v > (uint64_t)(end - *p))
        return "string runs past the end of the chunk";
    s->p = *p;
    s->len = (size_t)v;
    s->off = f->off;
    *p += v;
    return NULL;
}

/* Decode one field; NULL on success, else what went wrong. str: the
 * record's VT_SPANS spans. */
static ALWAYS_INLINE const char *dec_field(const uint8_t **p, const uint8_t *end, vt_delta *d,
                                           vt_event *ev, const field *f, vt_span *str, bool roomy,
                                           bool pext)
{
    char *dst = (char *)ev + f->off;
    uint64_t v;
    if (get_varint(p, end, &v, roomy, pext) < 0)
        return "malformed varint";
    switch (f->kind) {
    case F_TS:
        ev->ts_ns = d->prev_ts += (uint64_t)vt_unzigzag(v);
        return NULL;
    case F_ADDR:
        d->prev_addr += (uint64_t)vt_unzigzag(v);
        memcpy(dst, &d->prev_addr, sizeof d->prev_addr);
        return NULL;
    case F_U64:
        memcpy(dst, &v, sizeof v);
        return NULL;
    case F_U32: {
        if (v > UINT32_MAX)
            return "value out of range";
        uint32_t u32 = (uint32_t)v;
        memcpy(dst, &u32, sizeof u32);
        return NULL;
    }
    case F_I32: {
        int64_t s = vt_unzigzag(v);
        if (s < INT32_MIN || s > INT32_MAX)
            return "value out of range";
        int32_t i32 = (int32_t)s;
        memcpy(dst, &i32, sizeof i32);
        return NULL;
    }
    case F_API: {
        if (v >= VT_API_MAX_)
            return "unknown api";
        enum vt_api api = (enum vt_api)v;
        memcpy(dst, &api, sizeof api);
        return NULL;
    }
    default: /* F_STR, F_ID (after its record's F_STR, which clears the id's span) */
        if (f->kind == F_STR)
            str[VT_SPAN_ID].off = 0;
        return dec_span(p, end, v, f, &str[f->kind == F_ID ? VT_SPAN_ID : VT_SPAN_STR]);
    }
}

/* Decode the fields of a tok record (FIELDS[tok]) up to its end or its first
 * field newer than d->version; NULL on success, else what went wrong, in
 * field *bad. Always inlined and unrolled by hand (a row has at most
 * MAX_FIELDS - 1 fields before its F_END): called with a constant tok, every
 * step's field is a constant, so each step folds into that field's own
 * decoding, read off the one table. */
static ALWAYS_INLINE const char *dec_fields(unsigned tok, const uint8_t **p, const uint8_t *end,
                                            vt_delta *d, vt_event *ev, vt_span *str,
                                            const field **bad, bool roomy, bool pext)
{
    const field *f = FIELDS[tok];
    const unsigned version = d->version ? d->version : VT_FORMAT_VERSION;
    const char *why;
#define DEC_STEP(k)                                                                                \
    if (f[k].kind == F_END || f[k].since > version)                                                \
        return NULL;                                                                               \
    if ((why = dec_field(p, end, d, ev, &f[k], str, roomy, pext))) {                               \
        *bad = &f[k];                                                                              \
        return why;                                                                                \
    }
    DEC_STEP(0)
    DEC_STEP(1)
    DEC_STEP(2)
    DEC_STEP(3)
    DEC_STEP(4)
    DEC_STEP(5)
    DEC_STEP(6)
    DEC_STEP(7)
#undef DEC_STEP
    _Static_assert(MAX_FIELDS == 9, "one DEC_STEP per field a row can hold");
    return NULL;
}

/* vt_rec_decode's body, inlined into both entry points. */
static ALWAYS_INLINE int decode_one(const uint8_t **p, const uint8_t *end, vt_delta *d,
                                    vt_event *ev, vt_span *str, char *err, size_t errlen, bool pext)
{
    const uint8_t *q = *p;
    memset(ev, 0, sizeof *ev);
    str[VT_SPAN_STR].off = 0; /* the id's span: cleared with the string's (dec_field) */
    if (q >= end) {
        snprintf(err, errlen, "record expected past the end of the chunk");
        return -1;
    }
    unsigned tok = *q++;
    if (!valid_token(tok)) {
        snprintf(err, errlen, "bad record token %u", tok);
        return -1;
    }
    ev->type = (enum vt_rec)tok;
    const field *bad = NULL;
    const char *why;
    /* The records of an allocation storm, each its own unrolled decoder; with
     * VT_REC_FIXED_MAX bytes left (all but a chunk's last few), none of their
     * varints (at most 8 of 10 bytes: no string) can reach the end. */
    bool roomy = end - *p >= VT_REC_FIXED_MAX;
    _Static_assert(1 + 8 * VT_VARINT_MAX + VT_VARINT_MAX <= VT_REC_FIXED_MAX, "roomy records");
    if (roomy && tok == VT_REC_ALLOC)
        why = dec_fields(VT_REC_ALLOC, &q, end, d, ev, str, &bad, true, pext);
    else if (roomy && tok == VT_REC_FREE)
        why = dec_fields(VT_REC_FREE, &q, end, d, ev, str, &bad, true, pext);
    else
        why = dec_fields(tok, &q, end, d, ev, str, &bad, false, false);
    if (why) {
        snprintf(err, errlen, "%s record, field %s: %s", REC_NAMES[tok], bad->name, why);
        return -1;
    }
    *p = q;
    return 0;
}

int vt_rec_decode(const uint8_t **p, const uint8_t *end, vt_delta *d, vt_event *ev, vt_span *str,
                  char *err, size_t errlen)
{
    return decode_one(p, end, d, ev, str, err, errlen, false);
}

/* vt_rec_decode_many's body; pext: a constant, one copy each way. */
static ALWAYS_INLINE size_t decode_many(const uint8_t **p, const uint8_t *end, vt_delta *d,
                                        uint32_t tid, vt_event *evs, size_t n, vt_span *str,
                                        bool *bad, char *err, size_t errlen, bool pext)
{
    size_t k = 0;
    *bad = false;
    str[VT_SPAN_STR].off = 0;
    while (k < n && *p < end) {
        if (decode_one(p, end, d, &evs[k], str, err, errlen, pext) < 0) {
            str[VT_SPAN_STR].off = 0; /* the bad record's, not the last one's */
            *bad = true;
            break;
        }
        evs[k++].thread_id = tid;
        if (str[VT_SPAN_STR].off)
            break;
    }
    return k;
}

size_t vt_rec_decode_many(const uint8_t **p, const uint8_t *end, vt_delta *d, uint32_t tid,
                          vt_event *evs, size_t n, vt_span *str, bool *bad, char *err,
                          size_t errlen)
{
#ifdef VT_VARINT_PEXT
    if (d->pext)
        return decode_many(p, end, d, tid, evs, n, str, bad, err, errlen, true);
#endif
    return decode_many(p, end, d, tid, evs, n, str, bad, err, errlen, false);
}

#ifdef VT_VARINT_PEXT
/* cpuid leaf 0's vendor string: ebx, edx, ecx. */
static bool cpu_vendor(const char *want)
{
    unsigned a, b, c, d;
    char v[13];
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = 0;
    return !strcmp(v, want);
}

/* The display family (cpuid leaf 1, eax): base family, plus the extended
 * family when the base is 0xf. */
static unsigned cpu_family(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned base = (a >> 8) & 0xf;
    return base == 0xf ? base + ((a >> 20) & 0xff) : base;
}

bool vt_cpu_fast_pext(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_BMI2))
        return false;
    if (cpu_vendor("GenuineIntel"))
        return true;
    return cpu_vendor("AuthenticAMD") && cpu_family() >= 0x19;
}
#else
bool vt_cpu_fast_pext(void)
{
    return false;
}
#endif

/* ---- Chunk header ------------------------------------------------------------ */

size_t vt_chunk_hdr_encode(uint8_t *out, uint32_t thread_id, uint64_t base_ts, size_t len)
{
    size_t n = vt_put_varint(out, thread_id);
    n += vt_put_varint(out + n, base_ts);
    return n + vt_put_varint(out + n, len);
}

int vt_chunk_hdr_decode(const uint8_t **p, const uint8_t *end, uint32_t *thread_id,
                        uint64_t *base_ts, size_t *len, char *err, size_t errlen)
{
    uint64_t tid, n;
    if (vt_get_varint(p, end, &tid) < 0 || vt_get_varint(p, end, base_ts) < 0 ||
        vt_get_varint(p, end, &n) < 0) {
        snprintf(err, errlen, "malformed varint in chunk header");
        return -1;
    }
    if (tid > UINT32_MAX) {
        snprintf(err, errlen, "chunk thread id %llu out of range", (unsigned long long)tid);
        return -1;
    }
    if (n > (uint64_t)(end - *p)) {
        snprintf(err, errlen, "chunk length %llu past the batch end (%zu bytes left)",
                 (unsigned long long)n, (size_t)(end - *p));
        return -1;
    }
    *thread_id = (uint32_t)tid;
    *len = (size_t)n;
    return 0;
}

/* ---- File header ------------------------------------------------------------- */

/* Header block fields: varint key = tag << 1 | kind (kind 0: varint value,
 * kind 1: varint length + bytes). Unknown tags are skipped, so fields can be
 * added without a version change. */
enum htag {
    H_PID = 1,
    H_HOST = 2,
    H_PROGRAM = 3,
    H_ARG = 4, /* repeated, in order */
    H_START_WALL = 5,
    H_START_MONO = 6,
    H_VERSION = 7,
    H_STACK_DEPTH = 8,
    H_FLAGS = 9,
    H_RUN_ID = 10,
    H_PPID = 11,
    H_RANK = 12, /* rank + 1; 0 or absent: none */
};

/* v as n little-endian bytes at o, and back. */
static void put_le(uint8_t *o, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        o[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_u32le(uint8_t *o, uint32_t v)
{
    put_le(o, v, 4);
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)get_le(p, 4);
}

static uint8_t *hput_u(uint8_t *o, unsigned tag, uint64_t v)
{
    o += vt_put_varint(o, (uint64_t)tag << 1);
    return o + vt_put_varint(o, v);
}

static uint8_t *hput_s(uint8_t *o, unsigned tag, const char *s)
{
    size_t n = s ? strnlen(s, VT_MAX_STRING_LEN) : 0;
    o += vt_put_varint(o, (uint64_t)tag << 1 | 1);
    o += vt_put_varint(o, n);
    if (n)
        memcpy(o, s, n);
    return o + n;
}

static uint32_t header_argc(const vt_header *h)
{
    uint32_t argc = h->argv ? h->argc : 0;
    return argc > VT_MAX_ARGV ? VT_MAX_ARGV : argc;
}

uint8_t *vt_header_encode(const vt_header *h, size_t *len)
{
    uint32_t argc = header_argc(h);
    size_t cap = VT_FILE_PREFIX_LEN + (12 + (size_t)argc) * (2 * VT_VARINT_MAX) +
                 (4 + (size_t)argc) * VT_MAX_STRING_LEN;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return NULL;
    memcpy(buf, VT_MAGIC, VT_MAGIC_LEN);
    put_u32le(buf + VT_MAGIC_LEN, VT_FORMAT_VERSION);
    uint8_t *o = buf + VT_FILE_PREFIX_LEN;
    o = hput_u(o, H_PID, h->pid);
    o = hput_s(o, H_HOST, h->host);
    o = hput_s(o, H_PROGRAM, h->program);
    for (uint32_t i = 0; i < argc; i++)
        o = hput_s(o, H_ARG, h->argv[i]);
    o = hput_u(o, H_START_WALL, h->start_wall_ns);
    o = hput_u(o, H_START_MONO, h->start_mono_ns);
    o = hput_s(o, H_VERSION, h->vramtrace_version);
    o = hput_u(o, H_STACK_DEPTH, h->stack_depth);
    o = hput_u(o, H_FLAGS, h->flags);
    if (h->run_id && *h->run_id)
        o = hput_s(o, H_RUN_ID, h->run_id);
    o = hput_u(o, H_PPID, h->ppid);
    if (h->has_rank)
        o = hput_u(o, H_RANK, (uint64_t)h->rank + 1);
    put_u32le(buf + VT_MAGIC_LEN + 4, (uint32_t)(o - buf - VT_FILE_PREFIX_LEN));
    *len = (size_t)(o - buf);
    return buf;
}

/* ---- Summary frame ------------------------------------------------------------ */

#define SUMMARY_PAYLOAD (VT_SUMMARY_FRAME_LEN - 8u)
_Static_assert(sizeof VT_SUMMARY_TAG - 1 + 8 == SUMMARY_PAYLOAD, "tag and peak_live");

void vt_summary_encode(uint8_t *out, const vt_summary *s)
{
    put_u32le(out, VT_SUMMARY_MAGIC);
    put_u32le(out + 4, SUMMARY_PAYLOAD);
    memcpy(out + 8, VT_SUMMARY_TAG, sizeof VT_SUMMARY_TAG - 1);
    put_le(out + 16, s->peak_live, 8);
}

int vt_summary_decode(const uint8_t *p, vt_summary *s)
{
    if (get_u32le(p) != VT_SUMMARY_MAGIC || get_u32le(p + 4) != SUMMARY_PAYLOAD ||
        memcmp(p + 8, VT_SUMMARY_TAG, sizeof VT_SUMMARY_TAG - 1) != 0)
        return -1;
    s->peak_live = get_le(p + 16, 8);
    return 0;
}

/* ---- File prefix ---------------------------------------------------------------- */

int vt_prefix_decode(const uint8_t *p, uint32_t *version, uint32_t *header_len, char *err,
                     size_t errlen)
{
    if (memcmp(p, VT_MAGIC, VT_MAGIC_LEN) != 0) {
        snprintf(err, errlen, "not a .vtrace file (bad magic)");
        return -1;
    }
    *version = get_u32le(p + VT_MAGIC_LEN);
    *header_len = get_u32le(p + VT_MAGIC_LEN + 4);
    if (*version == 0 || *version > VT_FORMAT_VERSION) {
        snprintf(err, errlen, "unsupported .vtrace format version %u (this reader knows 1..%u)",
                 *version, VT_FORMAT_VERSION);
        return -1;
    }
    if (*header_len > VT_MAX_HEADER_LEN) {
        snprintf(err, errlen, "absurd header length %u", *header_len);
        return -1;
    }
    return 0;
}

/* Store a header string (terminated copy) in slot; -1 on out of memory. */
static int store_string(vt_header_store *hs, unsigned slot, const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return -1;
    memcpy(s, p, n);
    s[n] = '\0';
    free(hs->strings[slot]);
    hs->strings[slot] = s;
    return 0;
}

static void header_set_u(vt_header *h, unsigned tag, uint64_t v)
{
    switch (tag) {
    case H_PID:
        h->pid = (uint32_t)v;
        break;
    case H_START_WALL:
        h->start_wall_ns = v;
        break;
    case H_START_MONO:
        h->start_mono_ns = v;
        break;
    case H_STACK_DEPTH:
        h->stack_depth = (uint32_t)v;
        break;
    case H_FLAGS:
        h->flags = (uint32_t)v;
        break;
    case H_PPID:
        h->ppid = (uint32_t)v;
        break;
    case H_RANK:
        h->has_rank = v >= 1 && v <= (uint64_t)UINT32_MAX + 1;
        h->rank = h->has_rank ? (uint32_t)(v - 1) : 0;
        break;
    default: /* unknown: skipped */
        break;
    }
}

/* Slot in hs->strings for a string tag, or -1 to skip it. */
static int string_slot(vt_header_store *hs, unsigned tag)
{
    switch (tag) {
    case H_HOST:
        return 0;
    case H_PROGRAM:
        return 1;
    case H_VERSION:
        return 2;
    case H_RUN_ID:
        return VT_HDR_RUN_ID_SLOT;
    case H_ARG:
        return hs->h.argc < VT_MAX_ARGV ? (int)(3 + hs->h.argc++) : -1;
    default:
        return -1;
    }
}

static const char *header_field(const uint8_t **p, const uint8_t *end, vt_header_store *hs)
{
    uint64_t key, v;
    if (vt_get_varint(p, end, &key) < 0 || vt_get_varint(p, end, &v) < 0)
        return "malformed varint in header";
    if (key > UINT32_MAX)
        return "header field tag out of range";
    if (!(key & 1)) {
        header_set_u(&hs->h, (unsigned)(key >> 1), v);
        return NULL;
    }
    if (v > VT_MAX_STRING_LEN || v > (uint64_t)(end - *p))
        return "header string too long or past the end of the header";
    int slot = string_slot(hs, (unsigned)(key >> 1));
    if (slot >= 0 && store_string(hs, (unsigned)slot, *p, (size_t)v) < 0)
        return "out of memory";
    *p += v;
    return NULL;
}

int vt_header_decode(const uint8_t *p, size_t len, vt_header_store *hs, char *err, size_t errlen)
{
    const uint8_t *end = p + len;
    memset(hs, 0, sizeof *hs);
    while (p < end) {
        const char *why = header_field(&p, end, hs);
        if (why) {
            snprintf(err, errlen, "corrupt header: %s", why);
            vt_header_store_free(hs);
            return -1;
        }
    }
    hs->h.host = hs->strings[0] ? hs->strings[0] : "";
    hs->h.program = hs->strings[1] ? hs->strings[1] : "";
    hs->h.vramtrace_version = hs->strings[2] ? hs->strings[2] : "";
    hs->h.run_id = hs->strings[VT_HDR_RUN_ID_SLOT] ? hs->strings[VT_HDR_RUN_ID_SLOT] : "";
    for (uint32_t i = 0; i < hs->h.argc; i++)
        hs->argv[i] = hs->strings[3 + i];
    hs->h.argv = hs->argv;
    return 0;
}

void vt_header_store_free(vt_header_store *hs)
{
    for (size_t i = 0; i < sizeof hs->strings / sizeof hs->strings[0]; i++) {
        free(hs->strings[i]);
        hs->strings[i] = NULL;
    }
}
