/* gan_alloc: PyTorch-like caching allocator (see alloc.h and README.md).
 * Function names follow c10/cuda/CUDACachingAllocator.cpp where a function
 * does the same job: round_size, get_allocation_size, should_split,
 * alloc_block, free_block, try_merge_blocks, release_cached_blocks. */
#include "alloc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ga_allocator {
    ga_kind kind;
    ga_backend be;
    int device;
    ga_tree small_pool, large_pool;
    ga_map live;
    ga_segment *segments;
    ga_stats st;
    ga_annot annot;
    int backend_err; /* last backend malloc result */
    char err[512];
    ga_failure_observer observer;
    void *observer_ctx;
};

/* ---- rules ------------------------------------------------------------ */

size_t ga_round_size(size_t bytes)
{
    if (bytes < GA_MIN_BLOCK_SIZE)
        return GA_MIN_BLOCK_SIZE;
    return GA_MIN_BLOCK_SIZE * ((bytes + GA_MIN_BLOCK_SIZE - 1) / GA_MIN_BLOCK_SIZE);
}

static size_t get_allocation_size(size_t size)
{
    if (size <= GA_SMALL_SIZE)
        return GA_SMALL_BUFFER;
    if (size < GA_MIN_LARGE_ALLOC)
        return GA_LARGE_BUFFER;
    return GA_ROUND_LARGE * ((size + GA_ROUND_LARGE - 1) / GA_ROUND_LARGE);
}

/* max_split_size is PyTorch's default (unlimited), so only the remainder
 * counts: small pool >= kMinBlockSize, large pool > kSmallSize. */
static int should_split(const ga_block *b, size_t size)
{
    size_t remaining = b->size - size;
    if (b->segment->is_small)
        return remaining >= GA_MIN_BLOCK_SIZE;
    return remaining > GA_SMALL_SIZE;
}

static ga_tree *pool_of(ga_allocator *a, int is_small)
{
    return is_small ? &a->small_pool : &a->large_pool;
}

/* ---- stats ------------------------------------------------------------ */

static void add_allocated(ga_allocator *a, size_t n)
{
    a->st.allocated_bytes += n;
    if (a->st.allocated_bytes > a->st.peak_allocated_bytes)
        a->st.peak_allocated_bytes = a->st.allocated_bytes;
    a->st.active_blocks++;
}

static void add_reserved(ga_allocator *a, size_t n)
{
    a->st.reserved_bytes += n;
    if (a->st.reserved_bytes > a->st.peak_reserved_bytes)
        a->st.peak_reserved_bytes = a->st.reserved_bytes;
    a->st.segments++;
}

/* ---- segments --------------------------------------------------------- */

static void link_segment(ga_allocator *a, ga_segment *s)
{
    s->prev = NULL;
    s->next = a->segments;
    if (a->segments)
        a->segments->prev = s;
    a->segments = s;
}

static void unlink_segment(ga_allocator *a, ga_segment *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        a->segments = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

static ga_segment *new_records(uintptr_t ptr, size_t size, int is_small)
{
    ga_segment *s = calloc(1, sizeof *s);
    ga_block *b = calloc(1, sizeof *b);
    if (!s || !b) {
        free(s);
        free(b);
        return NULL;
    }
    *s = (ga_segment){.ptr = ptr, .size = size, .is_small = is_small, .head = b};
    *b = (ga_block){.ptr = ptr, .size = size, .segment = s};
    return s;
}

/* PyTorch's alloc_block: one backend malloc of `size` bytes. Returns the new
 * segment (its single block not yet in any pool) or NULL. */
static ga_segment *alloc_block(ga_allocator *a, size_t size, int is_small)
{
    void *p = NULL;
    a->st.device_malloc_calls++;
    a->backend_err = a->be.malloc(a->be.ctx, &p, size);
    if (a->backend_err == 0 && !p)
        a->backend_err = GA_BACKEND_ERROR_OOM;
    if (a->backend_err != 0)
        return NULL;
    ga_segment *s = new_records((uintptr_t)p, size, is_small);
    if (!s) {
        a->backend_err = -1; /* out of host memory */
        a->st.device_free_calls++;
        a->be.free(a->be.ctx, p);
        return NULL;
    }
    link_segment(a, s);
    add_reserved(a, size);
    if (a->kind == GA_CACHING)
        s->heap = ga_annot_heap_register(&a->annot, s->ptr, s->size);
    return s;
}

/* Returns a segment to the backend and drops its (only) block record. */
static void release_segment(ga_allocator *a, ga_segment *s)
{
    if (a->kind == GA_CACHING)
        ga_annot_heap_unregister(&a->annot, s->heap);
    unlink_segment(a, s);
    a->st.device_free_calls++;
    if (a->be.free(a->be.ctx, (void *)s->ptr) != 0)
        snprintf(a->err, sizeof a->err, "device free of %p failed", (void *)s->ptr);
    a->st.reserved_bytes -= s->size;
    a->st.segments--;
    free(s->head);
    free(s);
}

/* PyTorch's release_cached_blocks: frees every segment with no live block
 * (such a segment is one coalesced free block; split ones stay cached). */
static void release_cached_blocks(ga_allocator *a)
{
    ga_segment *s = a->segments;
    while (s) {
        ga_segment *next = s->next;
        if (s->active_blocks == 0) {
            ga_tree_remove(pool_of(a, s->is_small), s->head);
            release_segment(a, s);
        }
        s = next;
    }
}

/* The largest free block of the cache: the largest block not handed out in
 * any segment (free neighbours are coalesced, so each is a whole hole). */
static uint64_t largest_free_block(const ga_allocator *a)
{
    uint64_t best = 0;
    for (const ga_segment *s = a->segments; s; s = s->next)
        for (const ga_block *b = s->head; b; b = b->next)
            if (!b->allocated && b->size > best)
                best = b->size;
    return best;
}

/* Tells the observer of the out-of-memory failure of a device malloc of size. */
static void observe_failure(ga_allocator *a, size_t size, int retry)
{
    if (!a->observer || a->backend_err != GA_BACKEND_ERROR_OOM)
        return;
    ga_failure f = {.requested = size,
                    .retry = retry,
                    .allocated_bytes = a->st.allocated_bytes,
                    .reserved_bytes = a->st.reserved_bytes,
                    .largest_free_block = largest_free_block(a)};
    if (!a->be.mem_get_info || a->be.mem_get_info(a->be.ctx, &f.device_free, &f.device_total))
        f.device_free = f.device_total = 0;
    a->observer(a->observer_ctx, &f);
}

/* malloc()'s fallback chain with the default max_split_size:
 * alloc_block || (release_cached_blocks && alloc_block(isRetry)). */
static ga_block *alloc_with_retry(ga_allocator *a, size_t alloc_size, int is_small)
{
    ga_segment *s = alloc_block(a, alloc_size, is_small);
    if (!s && a->backend_err == GA_BACKEND_ERROR_OOM) {
        observe_failure(a, alloc_size, 0);
        release_cached_blocks(a);
        a->st.num_alloc_retries++;
        s = alloc_block(a, alloc_size, is_small);
        if (!s)
            observe_failure(a, alloc_size, 1);
    }
    return s ? s->head : NULL;
}

/* ---- blocks ----------------------------------------------------------- */

/* Cuts b to `size` bytes; the remainder becomes a free block in the pool. */
static int split_block(ga_allocator *a, ga_block *b, size_t size)
{
    ga_block *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    *r = (ga_block){.ptr = b->ptr + size, .size = b->size - size, .segment = b->segment};
    r->prev = b;
    r->next = b->next;
    if (b->next)
        b->next->prev = r;
    b->next = r;
    b->size = size;
    ga_tree_insert(pool_of(a, b->segment->is_small), r);
    return 0;
}

static void hand_out(ga_allocator *a, ga_block *b)
{
    b->allocated = 1;
    b->segment->active_blocks++;
    ga_map_insert(&a->live, b);
    add_allocated(a, b->size);
    if (a->kind == GA_CACHING)
        ga_annot_region_register(&a->annot, b->segment->heap, b->ptr, b->size);
}

/* PyTorch's try_merge_blocks: absorbs the free neighbour src into dst. */
static void try_merge(ga_allocator *a, ga_block *dst, ga_block *src)
{
    if (!src || src->allocated)
        return;
    ga_tree_remove(pool_of(a, dst->segment->is_small), src);
    if (dst->prev == src) {
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev)
            dst->prev->next = dst;
        else
            dst->segment->head = dst;
    } else {
        dst->next = src->next;
        if (dst->next)
            dst->next->prev = dst;
    }
    dst->size += src->size;
    free(src);
}

/* PyTorch's free_block: coalesce with both neighbours, back into the pool. */
static void free_block(ga_allocator *a, ga_block *b)
{
    b->allocated = 0;
    b->segment->active_blocks--;
    try_merge(a, b, b->prev);
    try_merge(a, b, b->next);
    ga_tree_insert(pool_of(a, b->segment->is_small), b);
}

/* ---- OOM -------------------------------------------------------------- */

/* The OOM message, or another backend error's. */
static void report_oom(ga_allocator *a, size_t alloc_size)
{
    if (a->backend_err != GA_BACKEND_ERROR_OOM) {
        snprintf(a->err, sizeof a->err, "device malloc of %zu bytes failed with error %d",
                 alloc_size, a->backend_err);
        return;
    }
    size_t dev_free = 0, dev_total = 0;
    if (a->be.mem_get_info)
        (void)a->be.mem_get_info(a->be.ctx, &dev_free, &dev_total);
    a->st.num_ooms++;
    ga_format_oom(a->err, sizeof a->err, alloc_size, a->device, dev_total, dev_free,
                  a->st.allocated_bytes, a->st.reserved_bytes);
}

/* ---- public ----------------------------------------------------------- */

ga_allocator *ga_create(ga_kind kind, const ga_backend *backend, int device)
{
    ga_allocator *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (ga_map_init(&a->live) != 0) {
        free(a);
        return NULL;
    }
    a->kind = kind;
    a->be = backend ? *backend : *ga_cuda_backend();
    a->device = device;
    ga_tree_init(&a->small_pool, 0x2545f4914f6cdd1dull);
    ga_tree_init(&a->large_pool, 0x9e3779b97f4a7c15ull);
    if (kind == GA_CACHING)
        ga_annot_init(&a->annot);
    return a;
}

static void *direct_malloc(ga_allocator *a, size_t bytes)
{
    size_t n = bytes ? bytes : 1;
    a->backend_err = GA_BACKEND_ERROR_OOM;
    ga_segment *s = n <= GA_MAX_REQUEST ? alloc_block(a, n, 0) : NULL;
    if (!s) {
        if (n <= GA_MAX_REQUEST)
            observe_failure(a, n, 0);
        report_oom(a, n);
        return NULL;
    }
    hand_out(a, s->head);
    return (void *)s->ptr;
}

/* The block for a rounded size: best fit from the pool, else a new segment. */
static ga_block *find_block(ga_allocator *a, size_t size, int is_small)
{
    ga_tree *pool = pool_of(a, is_small);
    ga_block *b = ga_tree_lower_bound(pool, size);
    if (b) {
        ga_tree_remove(pool, b);
        return b;
    }
    return alloc_with_retry(a, get_allocation_size(size), is_small);
}

void *ga_malloc(ga_allocator *a, size_t bytes)
{
    a->err[0] = '\0';
    if (a->kind == GA_DIRECT)
        return direct_malloc(a, bytes);
    if (bytes > GA_MAX_REQUEST) {
        a->backend_err = GA_BACKEND_ERROR_OOM;
        report_oom(a, bytes);
        return NULL;
    }
    size_t size = ga_round_size(bytes);
    ga_block *b = find_block(a, size, size <= GA_SMALL_SIZE);
    if (!b) {
        report_oom(a, get_allocation_size(size));
        return NULL;
    }
    if (should_split(b, size) && split_block(a, b, size) != 0) {
        ga_tree_insert(pool_of(a, b->segment->is_small), b);
        snprintf(a->err, sizeof a->err, "out of host memory");
        return NULL;
    }
    hand_out(a, b);
    return (void *)b->ptr;
}

void ga_free(ga_allocator *a, void *p)
{
    if (!p)
        return;
    ga_block *b = ga_map_remove(&a->live, (uintptr_t)p);
    if (!b) {
        snprintf(a->err, sizeof a->err, "ga_free: %p was not allocated here", p);
        return;
    }
    a->st.allocated_bytes -= b->size;
    a->st.active_blocks--;
    if (a->kind == GA_DIRECT) {
        release_segment(a, b->segment);
        return;
    }
    ga_annot_region_unregister(&a->annot, b->ptr);
    free_block(a, b);
}

void ga_empty_cache(ga_allocator *a)
{
    release_cached_blocks(a);
}

void ga_set_failure_observer(ga_allocator *a, ga_failure_observer fn, void *ctx)
{
    a->observer = fn;
    a->observer_ctx = ctx;
}

ga_stats ga_get_stats(const ga_allocator *a)
{
    return a->st;
}

void ga_reset_peak_stats(ga_allocator *a)
{
    a->st.peak_allocated_bytes = a->st.allocated_bytes;
    a->st.peak_reserved_bytes = a->st.reserved_bytes;
}

void ga_pool_info(const ga_allocator *a, int is_small, size_t *count, size_t *largest)
{
    const ga_tree *t = is_small ? &a->small_pool : &a->large_pool;
    const ga_block *m = ga_tree_max(t);
    *count = t->count;
    *largest = m ? m->size : 0;
}

const char *ga_last_error(const ga_allocator *a)
{
    return a->err;
}

/* Frees every block record of s, then s itself (with its device memory). */
static void destroy_segment(ga_allocator *a, ga_segment *s)
{
    ga_block *b = s->head->next;
    while (b) {
        ga_block *next = b->next;
        free(b);
        b = next;
    }
    s->head->next = NULL;
    release_segment(a, s);
}

void ga_destroy(ga_allocator *a)
{
    if (!a)
        return;
    while (a->segments)
        destroy_segment(a, a->segments);
    ga_map_fini(&a->live);
    if (a->kind == GA_CACHING)
        ga_annot_fini(&a->annot);
    free(a);
}
