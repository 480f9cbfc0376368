/* util.c: arena, checked allocation, hash map, sizes, escaping. */
#include "internal.h"
#include "vsize.h"

#include <ctype.h>
#include <inttypes.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- checked allocation ------------------------------------------------- */

static void *oom_check(void *p, size_t bytes)
{
    if (!p && bytes) {
        fprintf(stderr, "vramtrace: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

void *vr_xmalloc(size_t bytes)
{
    return oom_check(malloc(bytes ? bytes : 1), bytes);
}

void *vr_xcalloc(size_t n, size_t size)
{
    return oom_check(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *vr_xrealloc(void *p, size_t bytes)
{
    return oom_check(realloc(p, bytes ? bytes : 1), bytes);
}

/* ---- arena -------------------------------------------------------------- */

struct vr_arena {
    struct chunk {
        struct chunk *next;
        size_t used, cap;
        _Alignas(16) unsigned char data[];
    } * head;
};

vr_arena *vr_arena_new(void)
{
    return vr_xcalloc(1, sizeof(vr_arena));
}

void vr_arena_free(vr_arena *a)
{
    if (!a)
        return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *vr_alloc(vr_arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < bytes) {
        size_t cap = bytes > 65536 ? bytes : 65536;
        struct chunk *c = vr_xmalloc(sizeof(*c) + cap);
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += bytes;
    memset(p, 0, bytes);
    return p;
}

char *vr_strdup(vr_arena *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = vr_alloc(a, n);
    memcpy(d, s, n);
    return d;
}

char *vr_sprintf(vr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = vr_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

/* ---- hash map ----------------------------------------------------------- */

void vr_map_init(vr_map *m, size_t esize)
{
    memset(m, 0, sizeof(*m));
    m->esize = esize;
}

void vr_map_destroy(vr_map *m)
{
    free(m->items);
    free(m->alive);
    free(m->index);
    memset(m, 0, sizeof(*m));
}

static inline void *item(const vr_map *m, size_t i)
{
    return m->items + i * m->esize;
}

static inline uint64_t item_key(const vr_map *m, size_t i)
{
    uint64_t k;
    memcpy(&k, item(m, i), sizeof(k));
    return k;
}

static inline bool item_alive(const vr_map *m, size_t i)
{
    return m->alive[i / 64] >> (i % 64) & 1;
}

/* Index slot: 0 = empty, else the key's 32-bit hash << 32 | (item + 1). The
 * hash gives a slot's home without reading its item (rehash, delete). */
static inline uint32_t slot_hash(uint64_t slot)
{
    return (uint32_t)(slot >> 32);
}

static inline size_t slot_item(uint64_t slot)
{
    return (size_t)(uint32_t)slot - 1;
}

void *vr_map_find(const vr_map *m, uint64_t key, vr_map_hint *hint)
{
    vr_map_hint none;
    return vr_map_find_hashed(m, key, vr_map_hash(key), hint ? hint : &none);
}

void vr_map_prefetch_entry(const vr_map *m, uint32_t h)
{
    size_t mask = m->icap - 1, i = h & mask;
    for (uint64_t sl; m->icap && (sl = m->index[i]); i = (i + 1) & mask)
        if (slot_hash(sl) == h) {
            __builtin_prefetch(item(m, slot_item(sl)));
            return;
        }
}

void *vr_map_get(const vr_map *m, uint64_t key)
{
    return vr_map_find(m, key, NULL);
}

/* Index size (bytes) from which a new index's pages are faulted in by one
 * madvise call before it is filled. */
#define INDEX_POPULATE_BYTES (1u << 20)

/* Faults in the whole pages of [p, p + bytes) at once (MADV_POPULATE_WRITE,
 * Linux 5.14): a rebuilt index is written all over, page after page at
 * random, so each would otherwise cost a page fault of its own. Best effort:
 * an older kernel leaves them to fault one by one. */
static void populate(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1),
              hi = ((uintptr_t)p + bytes) & ~(page - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* Arrays of at least this many bytes are asked for transparent huge pages. */
#define HUGEPAGE_HINT_BYTES (4u << 20)

/* Asks for transparent huge pages over the pages of [p, p + bytes)
 * (madvise MADV_HUGEPAGE; the kernel's "madvise" mode, Debian's default,
 * gives them only where asked): a live map of a million entries is read and
 * written at random over tens of MiB, and with 4 KiB pages each first touch
 * is a page fault and most accesses a TLB miss. The range is widened to whole
 * pages so that an array malloc placed in a mapping of its own gets the flag
 * on that whole mapping (a part of it would split the mapping, and realloc's
 * mremap could then no longer move it without a copy). Best effort: a kernel
 * without THP ignores it. The memory used is the same: the arrays are written
 * all over (index) or in order (items). */
static void hugepage_hint(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p & ~(page - 1), hi = ((uintptr_t)p + bytes + page - 1) & ~(page - 1);
    if (bytes >= HUGEPAGE_HINT_BYTES)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* Builds an index of icap slots from the old one (slots carry their hash:
 * no item is read or moved). */
static void index_build(vr_map *m, size_t icap)
{
    uint64_t *old = m->index;
    size_t oldcap = m->icap, mask = icap - 1;
    m->index = vr_xcalloc(icap, sizeof(uint64_t));
    hugepage_hint(m->index, icap * sizeof(uint64_t));
    if (icap * sizeof(uint64_t) >= INDEX_POPULATE_BYTES)
        populate(m->index, icap * sizeof(uint64_t));
    m->icap = icap;
    for (size_t k = 0; k < oldcap; k++) {
        if (!old[k])
            continue;
        size_t i = slot_hash(old[k]) & mask;
        while (m->index[i])
            i = (i + 1) & mask;
        m->index[i] = old[k];
    }
    free(old);
    m->mods++;
}

/* An index of fewer slots than this (512 KiB, within a core's L2 cache) is
 * kept at most 1/4 full, a larger one 3/4: probe clusters are short, and a
 * lookup or backward-shift delete then takes few and well-predicted steps.
 * On the 10 M-event storm (10 k live allocations) the report went from
 * 14.5 to 17.8 M events/s with it (bench/README.md); memory per live
 * allocation of a large map is unchanged, and a small map costs at most
 * 512 KiB of index. */
#define INDEX_SPARSE_SLOTS (1u << 16)

/* Whether n entries are over the load limit of an index of icap slots. */
static bool index_over(size_t n, size_t icap)
{
    return icap < INDEX_SPARSE_SLOTS ? n * 4 > icap : n * 4 > icap * 3;
}

/* An index for n entries at load <= 1/4 or 3/4 (index_over). */
static void index_reserve(vr_map *m, size_t n)
{
    size_t icap = m->icap ? m->icap : 64;
    while (index_over(n, icap))
        icap *= 2;
    if (icap != m->icap)
        index_build(m, icap);
}

static void items_reserve(vr_map *m, size_t n)
{
    if (n <= m->capitems)
        return;
    size_t words = (n + 63) / 64, had = (m->capitems + 63) / 64;
    m->items = vr_xrealloc(m->items, n * m->esize);
    hugepage_hint(m->items, n * m->esize);
    m->alive = vr_xrealloc(m->alive, words * sizeof(uint64_t));
    memset(m->alive + had, 0, (words - had) * sizeof(uint64_t));
    m->capitems = n;
}

void vr_map_reserve(vr_map *m, size_t n)
{
    index_reserve(m, n);
    items_reserve(m, n);
}

/* An item for a new entry: the last freed hole, or the next one at the end. */
static size_t item_take(vr_map *m)
{
    if (m->free_item) {
        size_t i = m->free_item - 1;
        m->free_item = (size_t)item_key(m, i);
        return i;
    }
    if (m->nitems == m->capitems)
        items_reserve(m, m->capitems ? m->capitems * 2 : 16);
    return m->nitems++;
}

void *vr_map_insert_raw(vr_map *m, uint64_t key, const vr_map_hint *hint)
{
    size_t i = hint->slot, mask = m->icap - 1;
    if (index_over(m->len + 1, m->icap)) {
        index_reserve(m, m->len + 1);
        mask = m->icap - 1;
        i = SIZE_MAX;
    }
    if (i == SIZE_MAX || hint->mods != m->mods) /* the index changed: probe again */
        for (i = hint->hash & mask; m->index[i]; i = (i + 1) & mask)
            ;
    size_t it = item_take(m);
    m->index[i] = (uint64_t)hint->hash << 32 | (uint64_t)(it + 1);
    m->alive[it / 64] |= 1ull << (it % 64);
    m->len++;
    void *e = item(m, it);
    memcpy(e, &key, sizeof(key));
    return e;
}

void *vr_map_insert(vr_map *m, uint64_t key, const vr_map_hint *hint)
{
    uint8_t *e = vr_map_insert_raw(m, key, hint);
    memset(e + sizeof(key), 0, m->esize - sizeof(key));
    return e;
}

void *vr_map_put(vr_map *m, uint64_t key, bool *created)
{
    vr_map_hint hint;
    void *e = vr_map_find(m, key, &hint);
    if (created)
        *created = !e;
    return e ? e : vr_map_insert(m, key, &hint);
}

/* Empties index slot i by backward shift: later slots of its cluster whose
 * home is not between i and them move into the hole. The index and its mask
 * are held in locals: a store into the index could otherwise alias them. */
static void index_remove(vr_map *m, size_t i)
{
    uint64_t *index = m->index;
    size_t mask = m->icap - 1;
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        uint64_t sl = index[j];
        if (!sl)
            break;
        /* movable: its home is not in (i, j], going round: j is as far
         * from its home as from the hole, or farther */
        size_t home = slot_hash(sl) & mask;
        if (((j - home) & mask) < ((j - i) & mask))
            continue;
        index[i] = sl;
        i = j;
    }
    index[i] = 0;
    m->mods++;
}

void vr_map_remove(vr_map *m, const vr_map_hint *hint)
{
    size_t it = slot_item(m->index[hint->slot]);
    index_remove(m, hint->slot);
    m->alive[it / 64] &= ~(1ull << (it % 64));
    uint64_t next = m->free_item; /* the hole keeps the free list in its key */
    memcpy(item(m, it), &next, sizeof(next));
    m->free_item = it + 1;
    m->len--;
}

bool vr_map_del(vr_map *m, uint64_t key)
{
    vr_map_hint hint;
    if (!vr_map_find(m, key, &hint))
        return false;
    vr_map_remove(m, &hint);
    return true;
}

void *vr_map_next(const vr_map *m, size_t *i)
{
    for (; *i < m->nitems; (*i)++)
        if (item_alive(m, *i))
            return item(m, (*i)++);
    return NULL;
}

/* ---- sizes -------------------------------------------------------------- */

const char *vr_format_size(uint64_t bytes, char *buf, size_t len)
{
    return vsize_format(bytes, buf, len);
}

const char *vr_format_size_signed(double delta, char *buf, size_t len)
{
    char s[32];
    vr_format_size(vr_u64_sat(fabs(delta)), s, sizeof s);
    snprintf(buf, len, "%s%s", delta < 0 ? "-" : delta > 0 ? "+" : "", s);
    return buf;
}

const char *vr_more_line(char *buf, size_t len, size_t rest, const char *unit,
                         const vr_left_out *lo, bool by_range)
{
    char b[32];
    int n = 0;
    buf[0] = '\0';
    if (rest)
        n = snprintf(buf, len, "... %zu more %s", rest, unit);
    if (lo->stacks && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 "%s%" PRIu64 " smaller %s" VR_MARK_LEFT_OUT "%s in %" PRIu64 " allocation%s)",
                 rest ? "; " : "... ", lo->stacks, by_range ? "NVTX ranges" : "stacks",
                 vr_format_size(lo->bytes, b, sizeof b), lo->count, vsize_plural(lo->count));
    return buf;
}

const char *vr_format_time(uint64_t ns, char *buf, size_t len)
{
    if (ns < 1000)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.2f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    return buf;
}

/* ---- escaping ------------------------------------------------------------ */

/* Length (2..4) of the well-formed UTF-8 sequence starting with the byte
 * >= 0x80 at p, or 0 when it is not one (RFC 3629 section 4: no overlongs,
 * no surrogates, nothing above U+10FFFF). */
static int utf8_seq_len(const unsigned char *p)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    int n = c >= 0xc2 && c <= 0xdf   ? 2
            : c >= 0xe0 && c <= 0xef ? 3
            : c >= 0xf0 && c <= 0xf4 ? 4
                                     : 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    for (int i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
        if (p[i] < lo || p[i] > hi)
            return 0;
    return n;
}

int vr_utf8_len(const unsigned char *p)
{
    return utf8_seq_len(p);
}

/* Copy the UTF-8 sequence at *p to f, or write bad for a byte that does not
 * start one; advances *p to the last byte consumed. */
static void put_utf8(FILE *f, const unsigned char **p, const char *bad)
{
    int n = utf8_seq_len(*p);
    if (!n) {
        fputs(bad, f);
        return;
    }
    fwrite(*p, 1, (size_t)n, f);
    *p += n - 1;
}

void vr_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '<': /* safe to embed in HTML <script> blocks */
            fputs("\\u003c", f);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else if (*p >= 0x80)
                put_utf8(f, &p, "\\ufffd");
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void vr_html_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc('?', f);
            else if (*p >= 0x80)
                put_utf8(f, &p, "&#xfffd;");
            else
                fputc(*p, f);
        }
    }
}

const char *vr_basename(const char *path)
{
    if (!path)
        return "";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *vr_frame_label(const vr_frame *fr, char *buf, size_t len)
{
    if (strcmp(fr->function, "??") != 0)
        return fr->function;
    if (fr->module[0])
        snprintf(buf, len, "%s+0x%llx", vr_basename(fr->module), (unsigned long long)fr->ip);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)fr->ip);
    return buf;
}

/* Function-name prefixes of caching allocators' segment allocations, and
 * the allocator's name (vr_cache_holder). Only allocators this project runs
 * (PyTorch's wheel on the simulated device, tests/pytorch) are listed. */
static const struct {
    const char *prefix, *holder, *hint, *oom_hint;
} CACHE_HOLDERS[] = {
    {"c10::cuda::CUDACachingAllocator::Native::", "PyTorch's caching allocator",
     "tensors still alive at exit show when recorded with `vramtrace run --torch-tensors`",
     "PyTorch's caching allocator made this request: vramtrace sees its segments, not the "
     "free space inside them that its message calls \"reserved by PyTorch but unallocated\", "
     "so fragmentation looks like capacity here; `vramtrace run --torch-tensors` tells them "
     "apart"},
    /* pinned host memory: pin_memory(), DataLoader(pin_memory=True)
     * (aten/src/ATen/core/CachingHostAllocator.h, cuda/CachingHostAllocator.cpp) */
    {"at::CachingHostAllocatorImpl<", "PyTorch's pinned-memory caching allocator", "", ""},
    {"at::cuda::(anonymous namespace)::CUDACachingHostAllocatorImpl::",
     "PyTorch's pinned-memory caching allocator", "", ""},
};
#define NHOLDERS (sizeof CACHE_HOLDERS / sizeof CACHE_HOLDERS[0])

/* Frames of those allocators' paths that cache nothing: each allocation
 * is the caller's own. PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes PyTorch's
 * allocator call cudaMalloc per tensor from uncached_allocate
 * (c10/cuda/CUDACachingAllocator.cpp), in the namespace above. */
static const char *const UNCACHED[] = {
    "c10::cuda::CUDACachingAllocator::Native::uncached_allocate(",
};

static bool uncached_frame(const char *function)
{
    for (size_t k = 0; k < sizeof UNCACHED / sizeof UNCACHED[0]; k++)
        if (!strncmp(function, UNCACHED[k], strlen(UNCACHED[k])))
            return true;
    return false;
}

const char *vr_cache_holder(const vr_stack *st)
{
    size_t end = st->lead ? st->lead : st->n;
    for (size_t i = 0; i < end; i++) {
        if (uncached_frame(st->frames[i].function))
            return NULL;
        for (size_t k = 0; k < NHOLDERS; k++)
            if (!strncmp(st->frames[i].function, CACHE_HOLDERS[k].prefix,
                         strlen(CACHE_HOLDERS[k].prefix)))
                return CACHE_HOLDERS[k].holder;
    }
    return NULL;
}

/* The table row of holder (a vr_cache_holder result), or -1. */
static long holder_row(const char *holder)
{
    for (size_t k = 0; k < NHOLDERS; k++)
        if (holder == CACHE_HOLDERS[k].holder)
            return (long)k;
    return -1;
}

const char *vr_cache_holder_hint(const char *holder)
{
    long k = holder_row(holder);
    return k < 0 ? "" : CACHE_HOLDERS[k].hint;
}

const char *vr_cache_holder_oom_hint(const char *holder)
{
    long k = holder_row(holder);
    return k < 0 ? "" : CACHE_HOLDERS[k].oom_hint;
}

static const char *fold_module(const vr_frame *fr)
{
    return strcmp(fr->module, VR_PYTHON_MODULE) ? vr_basename(fr->module) : "Python library code";
}

bool vr_stack_folds_to_lead(const vr_stack *st, size_t max)
{
    return max >= 2 && st->lead < st->n && (st->lead >= max || st->lead >= 3);
}

size_t vr_fold_modules(const vr_stack *st, size_t from, size_t to, const char *mods[4],
                       size_t *more)
{
    size_t n = 0;
    *more = 0;
    for (size_t i = from; i < to; i++) {
        const char *m = fold_module(&st->frames[i]);
        bool seen = !m[0];
        for (size_t j = from; j < i && !seen; j++)
            seen = !strcmp(fold_module(&st->frames[j]), m);
        if (seen)
            continue;
        if (n < 4)
            mods[n++] = m;
        else
            ++*more;
    }
    return n;
}

const char *vr_stack_cut(const vr_stack *st, size_t from, size_t to)
{
    for (size_t i = from; i < to && i < st->n; i++) {
        const vr_frame *fr = &st->frames[i];
        if (!fr->file[0] && !strcmp(fr->module, VR_PYTHON_MODULE) &&
            !strncmp(fr->function, VT_CUT_FRAME_PREFIX, strlen(VT_CUT_FRAME_PREFIX)))
            return fr->function;
    }
    return NULL;
}

const char *vr_frame_name(const vr_frame *fr, char *buf, size_t len)
{
    const char *fn = vr_frame_label(fr, buf, len);
    if (strcmp(fr->module, VR_PYTHON_MODULE) || !fr->file[0])
        return fn;
    snprintf(buf, len, "%s (%s:%" PRIu32 ")", fn, vr_basename(fr->file), fr->line);
    return buf;
}

bool vr_same_frame(const vr_frame *a, const vr_frame *b)
{
    return a->line == b->line && !strcmp(a->function, b->function) && !strcmp(a->file, b->file);
}

size_t vr_shared_frames(const vr_stack *a, const vr_stack *b, size_t limit,
                        bool (*same)(const vr_frame *, const vr_frame *))
{
    size_t k = 0;
    while (k < limit && k < a->n && k < b->n && same(&a->frames[k], &b->frames[k]))
        k++;
    return k;
}

size_t vr_top(const vr_options *opt)
{
    return opt && opt->top ? opt->top : 10;
}

bool vr_oom_may_be_fatal(const vr_oom *o)
{
    return !o->recovered && o->verdict != VR_VERDICT_ERROR;
}

size_t vr_fatal_oom(const vr_report *r)
{
    for (size_t i = r->nooms; i-- > 0;)
        if (vr_oom_may_be_fatal(&r->ooms[i]))
            return i;
    return SIZE_MAX;
}

bool vr_oom_handled(const vr_report *r)
{
    return r->has_end && r->exit_signal <= 0 && r->exit_status == 0;
}

bool vr_stack_lists(const vr_stack *st, size_t max, size_t i)
{
    if (vr_stack_folds_to_lead(st, max))
        return i == 0 || (i >= st->lead && i - st->lead < max - 1);
    return i < max;
}

size_t vr_oom_next(const vr_report *r, size_t fatal, size_t prev)
{
    if (prev == SIZE_MAX && fatal != SIZE_MAX)
        return fatal;
    for (size_t i = prev == SIZE_MAX || prev == fatal ? 0 : prev + 1; i < r->nooms; i++)
        if (i != fatal && r->ooms[i].repeat.of == SIZE_MAX)
            return i;
    return SIZE_MAX;
}

uint64_t vr_unrecovered_ooms(const vr_report *r)
{
    uint64_t not_oom = r->recovered_allocations + r->error_allocations;
    return r->failed_allocations > not_oom ? r->failed_allocations - not_oom : 0;
}

const char *vr_verdict_name(enum vr_verdict v)
{
    switch (v) {
    case VR_VERDICT_CAPACITY:
        return "capacity";
    case VR_VERDICT_LEAK:
        return "leak";
    case VR_VERDICT_FRAGMENTATION:
        return "fragmentation";
    case VR_VERDICT_EXTERNAL:
        return "external";
    case VR_VERDICT_ERROR:
        return "error";
    }
    return "unknown";
}

vr_nvtx_counts vr_nvtx_count(const vr_report *r)
{
    vr_nvtx_counts c = {0};
    for (size_t i = 0; i < r->nnvtx; i++) {
        c.ranges += r->nvtx[i].ph == 'B';
        c.start_end += r->nvtx[i].ph == 'b' && !r->nvtx[i].capture;
        c.threads += r->nvtx[i].ph == 'M';
    }
    return c;
}

uint64_t vr_text_hash(const char *text, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    return h | 1;
}
