/* internal.h: report/ helpers every file may use (arena, hash map, escaping,
 * formatting, pickle) on top of the report model (report.h). Renderers
 * include only this: the replay state is in state.h, for the replay and the
 * analyses (docs/architecture.md, "report/"). Not installed. */
#ifndef VRAMTRACE_REPORT_INTERNAL_H
#define VRAMTRACE_REPORT_INTERNAL_H

#include "report.h"
#include "vtrace.h"

#include <stdarg.h>
#include <string.h>

/* A request at least this large (1 PiB) is larger than any device could
 * be: a size computed wrong (a negative or overflowed size_t, an
 * uninitialized length), not a batch too large. Its failure gets that
 * remedy (verdict.c) and no batch estimate (oom.c). */
#define VR_IMPOSSIBLE_REQUEST (1ull << 50)

/* ---- arena: bump allocator owning a report's memory --------------------- */

typedef struct vr_arena vr_arena;
vr_arena *vr_arena_new(void);
void vr_arena_free(vr_arena *a);
/* Zeroed memory; aborts on OOM (the report cannot go on without it). */
void *vr_alloc(vr_arena *a, size_t bytes);
char *vr_strdup(vr_arena *a, const char *s);
char *vr_sprintf(vr_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checked heap allocation for replay state: aborts with a message on OOM. */
void *vr_xmalloc(size_t bytes);
void *vr_xcalloc(size_t n, size_t size);
void *vr_xrealloc(void *p, size_t bytes);

/* ---- map: hash table, u64 key -> fixed-size entry ------------------------ */

/* The one hash table of report/. Entries (esize bytes, starting with their
 * uint64_t key) live in a dense array in insertion order and never move: an
 * entry's item number (vr_map_index_of, vr_map_at) stays valid until it is
 * deleted, so callers may cache it; a deleted entry's item is reused by a
 * later insert. Lookups go through an index of 8-byte slots (the key's
 * 32-bit hash and the item number), open addressing with linear probing at
 * load <= 1/4 below 2^16 slots, 3/4 above (util.c, index_over), and
 * backward-shift deletion (Knuth, TAOCP vol. 3, 6.4,
 * Algorithm R): growing rebuilds only the index, from the hashes in its
 * slots, without reading or moving entries. Entry pointers are valid until
 * the next insert (vr_map_put, vr_map_insert, vr_map_reserve). Memory per
 * entry: esize + 1 bit + 8 to 16 bytes of index (up to 512 KiB of index in
 * all for a map of fewer than 16 k entries). */
typedef struct vr_map {
    uint8_t *items;  /* capitems * esize */
    uint64_t *alive; /* bitmap over items: 1 = an entry, 0 = a free hole */
    uint64_t *index; /* icap slots (a power of two) */
    size_t len;      /* entries */
    size_t esize, nitems, capitems, icap;
    size_t free_item; /* first free hole + 1, 0 = none (list through the holes) */
    uint64_t mods;    /* changes of the index's layout (hints check it) */
} vr_map;

/* Where vr_map_find left a key: its slot (found) or the empty slot where it
 * goes (not found), for one vr_map_insert / vr_map_remove without probing
 * again. Valid until the next insert or delete (mods tells). */
typedef struct vr_map_hint {
    size_t slot;
    uint32_t hash;
    uint64_t mods;
} vr_map_hint;

/* The live-map key of a VMM handle (cuMemCreate): handles are not addresses
 * and may equal a device pointer's value, so they get their own key space,
 * bit 63, which no device or host virtual address has (x86-64 and CUDA's
 * unified addressing use at most 57 bits). An address is its own key. */
static inline uint64_t vr_handle_key(uint64_t handle)
{
    return handle | 1ull << 63;
}

/* The 32-bit hash the map files a key under (MurmurHash3's 64-bit finalizer,
 * fmix64, public domain): for callers that look one key up more than once
 * (prefetch, then find) and hash it once. */
static inline uint32_t vr_map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* The first n bytes of text hashed as a map key (FNV-1a, 64 bits; never 0,
 * the map's empty key): string-keyed maps compare the text on lookup. */
uint64_t vr_text_hash(const char *text, size_t n);
void vr_map_init(vr_map *m, size_t esize);
void vr_map_destroy(vr_map *m);
void *vr_map_get(const vr_map *m, uint64_t key);
/* Returns the entry for key, inserting a zeroed one (key set) if absent;
 * *created tells which (may be NULL). */
void *vr_map_put(vr_map *m, uint64_t key, bool *created);
bool vr_map_del(vr_map *m, uint64_t key);
/* vr_map_get that also fills *hint (may be NULL). */
void *vr_map_find(const vr_map *m, uint64_t key, vr_map_hint *hint);
/* vr_map_find of a key whose vr_map_hash is h. Inline: the replay finds
 * every allocation's and free's address through it. */
static inline void *vr_map_find_hashed(const vr_map *m, uint64_t key, uint32_t h, vr_map_hint *hint)
{
    size_t mask = m->icap - 1, i = h & mask;
    *hint = (vr_map_hint){.slot = SIZE_MAX, .hash = h, .mods = m->mods};
    if (!m->icap)
        return NULL;
    /* slot: the key's hash << 32 | (item + 1), 0 = empty (util.c) */
    for (uint64_t sl; (sl = m->index[i]); i = (i + 1) & mask) {
        if ((uint32_t)(sl >> 32) != h) /* the entry is read only when the hash matches */
            continue;
        uint8_t *e = m->items + (size_t)((uint32_t)sl - 1) * m->esize;
        uint64_t k;
        memcpy(&k, e, sizeof k);
        if (k == key) {
            hint->slot = i;
            return e;
        }
    }
    hint->slot = i;
    return NULL;
}
/* Inserts key, absent (vr_map_find returned NULL with this hint): a zeroed
 * entry with its key set. */
void *vr_map_insert(vr_map *m, uint64_t key, const vr_map_hint *hint);
/* vr_map_insert that leaves the entry's bytes after its key as they were
 * (for a caller that writes them all). */
void *vr_map_insert_raw(vr_map *m, uint64_t key, const vr_map_hint *hint);
/* Deletes the entry vr_map_find found with this hint (nothing changed the
 * map since). */
void vr_map_remove(vr_map *m, const vr_map_hint *hint);
/* Starts loading the index slot of a key whose vr_map_hash is h into the
 * cache (a later find of it does not wait for memory): for batches of
 * lookups. Inline: every allocation and free. */
static inline void vr_map_prefetch(const vr_map *m, uint32_t h)
{
    if (m->icap)
        __builtin_prefetch(&m->index[h & (m->icap - 1)]);
}
/* The same for the key's entry, once its slot is in the cache (after
 * vr_map_prefetch): reads the index, prefetches the first entry whose hash
 * matches. */
void vr_map_prefetch_entry(const vr_map *m, uint32_t h);
/* Room for n entries without growing (a trace's known counts). */
void vr_map_reserve(vr_map *m, size_t n);
/* The entry at item i (vr_map_index_of), NULL when it was deleted. Inline:
 * the replay's cached rows go through it on every event. */
static inline void *vr_map_at(const vr_map *m, uint32_t i)
{
    bool alive = i < m->nitems && (m->alive[i / 64] >> (i % 64) & 1);
    return alive ? m->items + (size_t)i * m->esize : NULL;
}

/* vr_map_at of a map that never deletes (every item below nitems is an
 * entry): no check. */
static inline void *vr_map_item(const vr_map *m, uint32_t i)
{
    return m->items + (size_t)i * m->esize;
}

/* The item number of entry e of m, whose entries are esize bytes (a caller
 * that knows the size as a constant spares the division). */
static inline uint32_t vr_map_index_sized(const vr_map *m, const void *e, size_t esize)
{
    return (uint32_t)((size_t)((const uint8_t *)e - m->items) / esize);
}

static inline uint32_t vr_map_index_of(const vr_map *m, const void *e)
{
    return vr_map_index_sized(m, e, m->esize);
}
/* Iterate: start with *i = 0; returns NULL at the end. The entry returned
 * may be deleted before the next call (items never move; no other entry
 * is skipped or seen twice); an insertion may reuse a deleted item's place,
 * so one made while iterating may or may not be seen. */
void *vr_map_next(const vr_map *m, size_t *i);

/* batch.c: "vramtrace run -o batchN.vtrace -- ARGV" with argv's --batch set
 * to batch (the vramtrace run options of the first recording, such as
 * --sim, are the user's to repeat). */
char *vr_batch_command(vr_arena *a, const char *const *argv, size_t argc, int64_t batch);

/* util */
/* A double computed from a trace's numbers (a difference, a slope, a
 * projection, a scale's end) as an integer, saturated at the integer type's
 * range, NaN as 0: converting a double outside the range is undefined
 * behaviour (C11 6.3.1.4), and a damaged or crafted trace reaches it. */
static inline uint64_t vr_u64_sat(double x)
{
    return !(x > 0) ? 0 : x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
}
static inline int64_t vr_i64_sat(double x)
{
    return x != x ? 0 : x >= 0x1p63 ? INT64_MAX : x < -0x1p63 ? INT64_MIN : (int64_t)x;
}
/* Duration/time "12.3 ms", "4.567 s" into buf; returns buf. */
const char *vr_format_time(uint64_t ns, char *buf, size_t len);
#define VR_TIME(ns) vr_format_time((ns), (char[32]){0}, 32)
const char *vr_basename(const char *path);

/* Escaping helpers for renderers: a quoted JSON string / HTML text. Bytes
 * that are not well-formed UTF-8 come out as U+FFFD (\ufffd, &#xfffd;), so
 * the output is valid UTF-8 whatever the trace holds. */
void vr_json_str(FILE *f, const char *s);
void vr_html_str(FILE *f, const char *s);
const char *vr_frame_label(const vr_frame *fr, char *buf, size_t len);
/* A frame's name in a one-line view (icicle, folded stacks, site names):
 * vr_frame_label, and for a Python frame py-spy's "function (file.py:line)",
 * so that lines of one function stay apart. Written into buf when it needs
 * to be (truncated to len). */
const char *vr_frame_name(const vr_frame *fr, char *buf, size_t len);
/* Signed human size "+1.50 GiB" / "-512 B" / "0 B" into buf (vr_format_size
 * of |delta|, saturated); returns buf. Growth per iteration, diffs. */
const char *vr_format_size_signed(double delta, char *buf, size_t len);
/* The modules of frames [from, to) of st, in order, each once: the first 4
 * into mods (returned: how many), the count of the others in *more. A
 * module is its file name ("libc10_cuda.so"), a Python frame's "Python
 * library code" (those before a stack's lead frame are library code). What
 * a listing folded up to the lead frame names (render_text, render_html). */
size_t vr_fold_modules(const vr_stack *st, size_t from, size_t to, const char *mods[4],
                       size_t *more);
/* Whether a listing of at most max frames of st (max >= 2) shows its first
 * frame, then one line for the frames up to its lead frame (vr_stack.lead:
 * the program's Python line), then the lead and its callers: when the lead
 * would fall past the frames shown, or when two or more library frames
 * stand before it (so that every section names the program's line in the
 * same few lines; a leak's stack of 12 listed ten of numba's frames first).
 * The one rule of render_text and render_html. */
bool vr_stack_folds_to_lead(const vr_stack *st, size_t max);
/* The function of the frame among [from, to) of st that says the stack's
 * outer frames were not recorded (trace/vtrace.h, VT_CUT_FRAME_PREFIX),
 * e.g. "[outer Python frames not recorded: more than 128]"; NULL when
 * none. What a listing that folds those frames still names. */
const char *vr_stack_cut(const vr_stack *st, size_t from, size_t to);
/* The caching allocator that made the allocation of stack st, when one of
 * its frames before the program's own (st->lead, or all frames) is that
 * allocator's segment allocation: "PyTorch's caching allocator" for
 * c10::cuda::CUDACachingAllocator::Native:: (PyTorch's default allocator,
 * c10/cuda/CUDACachingAllocator.cpp: alloc_block and expandable segments;
 * it never returns its segments before the process ends unless
 * torch.cuda.empty_cache() is called), "PyTorch's pinned-memory caching
 * allocator" for its host allocator's blocks (pin_memory()). NULL
 * otherwise, and for such an allocator's path that caches nothing
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1: uncached_allocate, each tensor its own
 * cudaMalloc); memory such an allocator holds at exit is its cache, not a
 * leak of the program's. */
const char *vr_cache_holder(const vr_stack *st);
/* How to see inside holder's cache (a vr_cache_holder result): a clause for
 * a remedy line; "" for any other pointer. */
const char *vr_cache_holder_hint(const char *holder);
/* What a capacity verdict cannot see when holder made the failing request
 * (its segments hide their free space): a clause for the remedy; "" for
 * another pointer or an allocator without one. */
const char *vr_cache_holder_oom_hint(const char *holder);
/* At most max frames of st, innermost first, one "at"/"by" line each with
 * indent (file names without their directories when short_files). When the
 * stack's lead frame (vr_stack.lead) would fall past max, the frames
 * between the first and the lead are one "... N frames in MODULES" line,
 * so the listing reaches the program's own code (render_text.c). */
void vr_print_stack(FILE *f, const vr_stack *st, const char *indent, size_t max, bool short_files);
/* Two frames are the same source place: function, file and line. */
bool vr_same_frame(const vr_frame *a, const vr_frame *b);
/* How many leading (innermost) frames stacks a and b share, at most limit,
 * by `same` (vr_same_frame, or a caller's own rule). */
size_t vr_shared_frames(const vr_stack *a, const vr_stack *b, size_t limit,
                        bool (*same)(const vr_frame *, const vr_frame *));
size_t vr_top(const vr_options *opt);
/* Whether failure o can be a run's fatal one: out of memory (not
 * VR_VERDICT_ERROR) and not recovered. */
bool vr_oom_may_be_fatal(const vr_oom *o);
/* The failure users care about: the last failed allocation that may be fatal
 * (r->ooms is in time order). Its index, or SIZE_MAX when none may. It is
 * the run's fatal one unless the program went on past it (vr_oom_handled). */
size_t vr_fatal_oom(const vr_report *r);
/* Whether the program went on past its unrecovered failures: it caught the
 * error (PyTorch's OutOfMemoryError in a try, a CUDA program that checks
 * cudaMalloc's result and gives the request up) and exited with status 0.
 * Such a failure is listed and explained but not called fatal. */
bool vr_oom_handled(const vr_report *r);
/* What the text, the HTML page and the headline say of such a run. */
#define VR_OOM_HANDLED_TEXT "the program went on and exited with status 0"
/* Whether failure b repeats failure a: the same call (the same symbolized
 * call stack), API, device, request, error, verdict, NVTX range and outcome
 * (recovered or not). Their explanations may differ in the live bytes they
 * name: the renderers list a repeat as a count on the failure it repeats. */
bool vr_oom_same(const vr_oom *a, const vr_oom *b);
/* repeats.c. Whether stacks a and b read as the same call: the same
 * recorded stack, or stacks the sites merge as one (vr_stack_order 0: the
 * same function, file, line and module at every frame, the same address
 * where a frame has no symbol). */
bool vr_same_call(const vr_stack *a, const vr_stack *b);
/* A listing whose repeats vr_repeats_group marks: n items, each one's
 * vr_repeat found by repeat(items, i); same(items, a, b) says whether item
 * b repeats item a; lead, the item listed first (SIZE_MAX: none). */
typedef struct vr_repeat_list {
    void *items;
    size_t n, lead;
    vr_repeat *(*repeat)(void *items, size_t i);
    bool (*same)(const void *items, size_t a, size_t b);
} vr_repeat_list;
/* Sets every item's vr_repeat: an item repeats lead when same holds, else
 * the earliest item that repeats none and that it repeats. O(items x
 * distinct items). */
void vr_repeats_group(const vr_repeat_list *l);
/* "the same WHAT 69 more times: #1 at 25.85 ms to #69 at 296.60 ms" for an
 * entry others repeat (x->n > 0), the times of the first and last repeat
 * given (ns); written into buf (truncated to len); returns buf. */
const char *vr_repeats_text(const vr_repeat *x, const char *what, uint64_t first_ns,
                            uint64_t last_ns, char *buf, size_t len);
/* Whether failed free b repeats a: the same function, error and call (its
 * symbolized stack), and the same kind of address (a live allocation of
 * one kind starting there, none, a graph node's); the addresses differ. */
bool vr_free_failed_same(const vr_free_failed *a, const vr_free_failed *b);
/* The line the renderers give a failed free others repeat (x->repeat.n >
 * 0): vr_repeats_text's; written into buf (truncated to len). */
const char *vr_free_failed_repeats_text(const vr_report *r, const vr_free_failed *x, char *buf,
                                        size_t len);
/* Sets every failure's vr_oom.repeat (vr_repeats_group) once the verdicts
 * and vr_fatal_oom are final: a failure repeats the fatal one when
 * vr_oom_same holds, else the earliest failure it repeats. r->ooms holds at
 * most 1000. */
void vr_oom_group(vr_oom *ooms, size_t nooms, size_t fatal);
/* The order renderers list failures in: the fatal one (vr_fatal_oom's index,
 * or SIZE_MAX for none) first, then the others in time order, leaving out
 * each that repeats another (vr_oom.repeat.of; counted on that one). prev:
 * the index listed before, SIZE_MAX to start. The next index into r->ooms,
 * SIZE_MAX past the last. Callers stop at their own count (--top). */
size_t vr_oom_next(const vr_report *r, size_t fatal, size_t prev);
/* Whether a listing of at most max frames of st (max >= 2; vr_print_stack,
 * render_html's stack_html) shows its frame i. */
bool vr_stack_lists(const vr_stack *st, size_t max, size_t i);
/* The line the renderers give failure i when a failure listed before it
 * (vr_oom_next's order) reads the same in a listing of max frames (the same
 * API, device, request, verdict and outcome, and every listed frame) but
 * is another call: "not the same call as #70: frame 3 (folded) is f
 * (x.py:840) here, f (x.py:852) there" (numba's first attempt and its
 * retry). "" when none; written into buf (truncated to len). */
const char *vr_oom_alike_text(const vr_report *r, size_t fatal, size_t i, size_t max, char *buf,
                              size_t len);
/* The same line for entry i of a listing in which every entry shows max
 * frames of its stack (sites, leaks, growth, failed frees): when an entry
 * listed before it reads the same but is another call (PyTorch's first
 * cudaMalloc and its retry after emptying its cache, apart in a folded
 * frame of its allocator), "not the same call as entry 1 of this list:
 * frame 2 (folded) is X here, Y there"; "" when none. Entry j's stack is
 * at (const char *)first + j * stride (first: entry 0's, e.g.
 * &r->sites[0].stack, stride sizeof r->sites[0]); other_fmt names the entry
 * above from its number (from 1) with one %zu: VR_ALIKE_ENTRY, VR_ALIKE_ROW,
 * or "#%zu" where the listing numbers its entries. Written into buf
 * (truncated to len); returns buf. O(i x frames). */
#define VR_ALIKE_ENTRY "entry %zu of this list"
#define VR_ALIKE_ROW "row %zu of this table"
const char *vr_listed_alike_text(const vr_stack *first, size_t stride, size_t i, size_t max,
                                 const char *other_fmt, char *buf, size_t len);
/* The line the renderers give a failure that others repeat (o->repeat.n > 0):
 * "the same failure (call, request, verdict) 69 more times: #1 at 25.85 ms
 * to #69 at 296.60 ms", written into buf (truncated to len); returns buf. */
const char *vr_oom_repeats_text(const vr_report *r, const vr_oom *o, char *buf, size_t len);

/* pool_text.c: a stream-ordered failure's pool (vr_oom.has_pool) for the
 * renderers: the fragmentation remedy naming its free reserve (arena a), one
 * text line ("memory pool: ..."; nothing without a pool), and the JSON member
 * "pool" with its trailing comma (null without one). */
const char *vr_pool_remedy(vr_arena *a, const vr_oom *o);
/* Whether a stream-ordered failure with its pool's state was refused by a
 * limit of the pool, not of the device: the device's free bytes at the
 * failure (known) hold the request as a new segment of the pool (rounded up
 * to VR_POOL_SEGMENT). A pool that cannot place a request grows by a segment
 * from the device, releasing its unused ones first when the device is full
 * (CUDA Programming Guide, "Stream Ordered Memory Allocator"; sim/README.md),
 * so only its own bound (cudaMemPoolProps.maxSize) refuses it then. The
 * remedy of such a failure names that bound (arena a). */
#define VR_POOL_SEGMENT (2u << 20) /* bytes: the driver's allocation granularity */

/* The device memory an allocation of size bytes takes (bytes): size and
 * the driver's rounding (vt_driver_slack, trace/vtrace.h). */
static inline uint64_t vr_driver_rounded(uint64_t size)
{
    return size + vt_driver_slack(size);
}
bool vr_pool_at_limit(const vr_oom *o);
const char *vr_pool_limit_remedy(vr_arena *a, const vr_oom *o);
void vr_pool_text(FILE *f, const vr_oom *o);
void vr_pool_json(FILE *f, const vr_oom *o);
/* graphpool.c: whether failure o's request would have fit in the device's
 * free memory and what the CUDA graph memory pool kept (graph_pool_kept_bytes). */
bool vr_graph_pool_would_fit(const vr_oom *o);
/* For a capacity failure's explanation (arena a): the addend of its sum
 * (" + what the CUDA graph memory pool kept (...)"; "" when it kept nothing
 * or the failure is a graph launch's, whose pool afterwards may hold what
 * the launch itself left) and the closing clause ("; without what the graph
 * pool kept ..." where the request would have fit; the launch's "; after
 * it failed ..."; else ""). */
const char *vr_graph_pool_addend(vr_arena *a, const vr_oom *o);
const char *vr_graph_pool_clause(vr_arena *a, const vr_oom *o);
/* The remedy of a failure o the graph pool's kept memory would have let
 * fit; launch: an earlier graph launch's out-of-memory failure on the same
 * device (what such a launch leaves in the pool stays to the context's
 * end), or NULL. */
const char *vr_graph_pool_remedy(vr_arena *a, const vr_oom *o, const vr_oom *launch);
/* Whether o is a graph launch's failure (cuGraphLaunch). */
bool vr_graph_launch_failed(const vr_oom *o);
/* A failure's graph pool line (text) and "graph_pool" member (JSON, with
 * its comma; null without a sample). */
void vr_graph_pool_text(FILE *f, const vr_oom *o);
void vr_graph_pool_json(FILE *f, const vr_oom *o);

/* util.c: length (2..4) of the well-formed UTF-8 sequence at p (a byte >=
 * 0x80), 0 when it is not one (RFC 3629 section 4). */
int vr_utf8_len(const unsigned char *p);

/* pickle.c: a streaming writer of Python pickle protocol 2 (the opcodes of
 * CPython's Lib/pickletools.py that a dict of lists of dicts of ints and
 * strings needs). Values are pushed on the unpickler's stack: a container is
 * begun (vr_pk_dict / vr_pk_list), then vr_pk_mark, its items (key, value
 * pairs for a dict), then vr_pk_setitems / vr_pk_appends. Errors show in
 * ferror(f). */
typedef struct vr_pickle {
    FILE *f;
    uint32_t memo; /* next memo index (LONG_BINPUT) */
} vr_pickle;
void vr_pk_begin(vr_pickle *p, FILE *f);   /* PROTO 2 */
void vr_pk_end(vr_pickle *p);              /* STOP */
void vr_pk_dict(vr_pickle *p);             /* EMPTY_DICT */
void vr_pk_list(vr_pickle *p);             /* EMPTY_LIST */
void vr_pk_mark(vr_pickle *p);             /* MARK */
void vr_pk_setitems(vr_pickle *p);         /* SETITEMS: pairs since the mark into the dict */
void vr_pk_appends(vr_pickle *p);          /* APPENDS: items since the mark into the list */
void vr_pk_int(vr_pickle *p, int64_t v);   /* BININT (32-bit) or LONG1 (8 bytes) */
void vr_pk_uint(vr_pickle *p, uint64_t v); /* BININT or LONG1 (up to 9 bytes) */
/* BINUNICODE; bytes that are not well-formed UTF-8 become U+FFFD. */
void vr_pk_str(vr_pickle *p, const char *s);
void vr_pk_tuple2(vr_pickle *p); /* TUPLE2 of the two values on top */
/* LONG_BINPUT: remember the value on top; returns its memo index. */
uint32_t vr_pk_put(vr_pickle *p);
void vr_pk_get(vr_pickle *p, uint32_t memo); /* LONG_BINGET */

#endif
