/* The simulated devices' memory: one lazily backed address range per device,
 * byte-exact accounting, the default stream-ordered pool. */
#define _GNU_SOURCE /* memfd_create, fallocate */
#include "sim_internal.h"
#include "ledger.h"

#include <cuda.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct sim_config sim_cfg;
struct sim_device sim_devices[SIM_MAX_DEVICES];
static pthread_once_t state_once = PTHREAD_ONCE_INIT;
static int state_ok;

/* Bytes an allocation of `size` bytes takes: 512-byte granules under 2 MiB,
 * 2 MiB granules from 2 MiB up; 0 when that overflows. */
static size_t sim_round(size_t size)
{
    size_t a = size < SIM_LARGE_ALIGN ? SIM_SMALL_ALIGN : SIM_LARGE_ALIGN;
    if (size > SIZE_MAX - a)
        return 0;
    return (size + a - 1) / a * a;
}

/* len bytes of address space, never backed until touched (MAP_NORESERVE),
 * 2 MiB aligned; 0 when it cannot be had. */
static uintptr_t reserve_range(size_t len)
{
    void *p = mmap(NULL, len + SIM_LARGE_ALIGN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    return ((uintptr_t)p + SIM_LARGE_ALIGN - 1) & ~(uintptr_t)(SIM_LARGE_ALIGN - 1);
}

/* Reserve twice the capacity of address space. Placement never limits what
 * fits: the byte accounting alone decides out-of-memory, as physical pages
 * do. */
static int device_init(struct sim_device *d, int ordinal)
{
    size_t len = (2 * sim_cfg.capacity + SIM_LARGE_ALIGN - 1) / SIM_LARGE_ALIGN * SIM_LARGE_ALIGN;
    uintptr_t base = reserve_range(len);
    if (!base)
        return -1;
    pthread_mutex_init(&d->lock, NULL);
    d->ordinal = ordinal;
    d->va_base = base;
    d->va_len = len;
    d->pool.dev = d;
    d->ctx.ordinal = ordinal;
    return ra_init(&d->ra, base, len);
}

/* The range of graph allocation nodes' addresses, reserved at the first
 * node: SIM_GRAPH_VA_TIMES the capacity, as addresses are held while their
 * graphs live whether or not their memory is (struct sim_gmem), so graphs
 * may hold far more of them than the device has memory; halved until the
 * host grants it (valgrind refuses the largest), down to the capacity.
 * 0, or -1 when none could be had; locked. */
static int graph_range(struct sim_device *d)
{
    if (d->gva_base)
        return 0;
    size_t cap = d->va_len / 2;
    for (size_t len = cap * SIM_GRAPH_VA_TIMES; len >= cap; len /= 2) {
        uintptr_t base = reserve_range(len);
        if (base && ra_init(&d->gra, base, len) == 0) {
            d->gva_base = base;
            d->gva_len = len;
            return 0;
        }
        if (base)
            munmap((void *)base, len);
    }
    return -1;
}

/* A forked child has one thread: a device lock its parent's other threads
 * held at the fork is made anew, so the child's calls do not hang (the
 * child goes on with its copy of the devices, as sim/README.md says). */
static void devices_child(void)
{
    for (int i = 0; i < sim_cfg.ndevices; i++)
        pthread_mutex_init(&sim_devices[i].lock, NULL);
}

static bool ledger_state(int device, struct sim_ledger_device *out);

static void state_init_once(void)
{
    sim_config_load(&sim_cfg);
    sim_ledger_device_source(ledger_state);
    sim_shared_init();
    for (int i = 0; i < sim_cfg.ndevices; i++)
        if (device_init(&sim_devices[i], i) != 0)
            return;
    pthread_atfork(NULL, NULL, devices_child);
    state_ok = 1;
}

int sim_state_init(void)
{
    pthread_once(&state_once, state_init_once);
    return state_ok ? 0 : -1;
}

struct sim_device *sim_device_of(uintptr_t addr)
{
    for (int i = 0; i < sim_cfg.ndevices; i++) {
        struct sim_device *d = &sim_devices[i];
        if ((addr >= d->va_base && addr - d->va_base < d->va_len) ||
            (addr >= d->gva_base && addr - d->gva_base < d->gva_len))
            return d;
    }
    return NULL;
}

static size_t bucket(uintptr_t p)
{
    return (p >> 9) % SIM_TABLE_SIZE;
}

/* The context's reserve on d while its context is active; locked. */
static size_t context_reserve(const struct sim_device *d)
{
    return d->ctx.active ? sim_cfg.reserve : 0;
}

static size_t device_taken(const struct sim_device *d)
{
    return context_reserve(d) + d->used + d->pools_reserved + d->phys_used + d->gpool.reserved +
           d->gpool.base;
}

/* Bytes still free on the device: this process's and the other processes'
 * (shared.c) taken bytes off the capacity; locked. */
static size_t device_room(const struct sim_device *d)
{
    size_t taken = device_taken(d) + sim_shared_others(d->ordinal);
    return taken < sim_cfg.capacity ? sim_cfg.capacity - taken : 0;
}

/* After a change of what the device takes: tell the other processes; locked. */
static void device_publish(const struct sim_device *d)
{
    sim_shared_publish(d->ordinal, device_taken(d));
}

/* Whether len bytes fit the device; when not, its graph pool releases what
 * no graph allocation uses, and with retry they fit if that made the room
 * (an H200: a cudaMalloc of more than the free memory succeeded so, a
 * stream-ordered pool's growth and a cuMemCreate failed but emptied the
 * graph pool all the same: tests/gpu/probe_graphgive.c); locked. */
static bool device_fits(struct sim_device *d, size_t len, bool retry)
{
    if (len <= device_room(d))
        return true;
    if (sim_gpool_trim(&d->gpool))
        device_publish(d);
    return retry && len <= device_room(d);
}

void sim_mem_info(struct sim_device *d, size_t *free_bytes, size_t *total_bytes)
{
    pthread_mutex_lock(&d->lock);
    *free_bytes = device_room(d);
    *total_bytes = sim_cfg.capacity;
    pthread_mutex_unlock(&d->lock);
}

/* The device's physical backing for cuMemCreate: one memfd as large as the
 * device's range, sparse (tmpfs pages only exist once touched); locked. */
static int phys_init(struct sim_device *d)
{
    if (d->phys_ready)
        return 0;
    d->phys_fd = memfd_create("vramtrace-sim-vmm", MFD_CLOEXEC);
    if (d->phys_fd < 0)
        return -1;
    /* Offsets start at 2 MiB: ra_take returns 0 for "none". */
    if (ftruncate(d->phys_fd, (off_t)(d->va_len + SIM_LARGE_ALIGN)) != 0 ||
        ra_init(&d->phys_ra, SIM_LARGE_ALIGN, d->va_len) != 0) {
        close(d->phys_fd);
        return -1;
    }
    d->phys_ready = 1;
    return 0;
}

int sim_phys_alloc(struct sim_device *d, size_t len, uint64_t *offset)
{
    uintptr_t off = 0;
    int err = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&d->lock);
    if (device_fits(d, len, false) && phys_init(d) == 0)
        off = ra_take(&d->phys_ra, len, SIM_LARGE_ALIGN);
    if (off) {
        d->phys_used += len;
        *offset = off;
        err = CUDA_SUCCESS;
        device_publish(d);
    }
    pthread_mutex_unlock(&d->lock);
    return err;
}

void sim_phys_free(struct sim_device *d, uint64_t offset, size_t len)
{
    pthread_mutex_lock(&d->lock);
    ra_give(&d->phys_ra, (uintptr_t)offset, len);
    d->phys_used -= len;
    device_publish(d);
    fallocate(d->phys_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len);
    pthread_mutex_unlock(&d->lock);
}

/* The whole pages of [start, end) back to the host (from 64 KiB up). */
static void give_pages(uintptr_t start, uintptr_t end)
{
    uintptr_t a = (start + 4095) & ~(uintptr_t)4095, e = end & ~(uintptr_t)4095;
    if (e > a && e - a >= 65536)
        madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Give the pages of a freed range back to the host (they read as zeros
 * afterwards), except in the first `capacity` bytes of the device's range:
 * first fit places allocations there, so those pages stay mapped for reuse
 * and at most a device's worth of freed memory stays resident. */
static void release_pages(const struct sim_device *d, uintptr_t start, size_t len)
{
    uintptr_t keep_end = d->va_base + sim_cfg.capacity, end = start + len;
    if (end <= keep_end)
        return;
    if (start < keep_end)
        start = keep_end;
    give_pages(start, end);
}

/* Take `len` bytes of the device's range if the accounting allows
 * (device_fits, retry: a cudaMalloc's); locked. */
static uintptr_t device_take(struct sim_device *d, size_t len, size_t align, bool retry)
{
    if (!device_fits(d, len, retry))
        return 0;
    return ra_take(&d->ra, len, align);
}

/* The ledger's kind of an allocation of kind k. */
static const char *ledger_kind(enum sim_kind k)
{
    return k == SIM_MANAGED_MEM ? SIM_LK_MANAGED
           : k == SIM_ARRAY_MEM ? SIM_LK_ARRAY
                                : SIM_LK_DEVICE;
}

static struct sim_alloc *record(struct sim_device *d, uintptr_t p, size_t size, size_t rounded,
                                enum sim_kind kind, struct pool_seg *seg)
{
    struct sim_alloc *a = malloc(sizeof *a);
    if (!a)
        return NULL;
    static uint64_t serials;
    *a = (struct sim_alloc){.ptr = p,
                            .size = size,
                            .rounded = rounded,
                            .kind = kind,
                            .seg = seg,
                            .next = d->table[bucket(p)],
                            .serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED)};
    d->table[bucket(p)] = a;
    sim_ledger_alloc(ledger_kind(kind), d->ordinal, p, size);
    return a;
}

int sim_alloc(struct sim_device *d, size_t size, enum sim_kind kind, uintptr_t *out)
{
    return sim_alloc_of(d, size, kind, NULL, out);
}

int sim_alloc_of(struct sim_device *d, size_t size, enum sim_kind kind,
                 struct CUmemPoolHandle_st *pool, uintptr_t *out)
{
    size_t r = sim_round(size);
    struct sim_alloc *a = NULL;
    if (r == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&d->lock);
    int refused = pool ? sim_pool_admit(pool, size) : CUDA_SUCCESS;
    if (refused) {
        pthread_mutex_unlock(&d->lock);
        return refused;
    }
    if (!d->ctx.active)
        sim_ctx_activate(d);
    uintptr_t p = device_take(d, r, r < SIM_LARGE_ALIGN ? SIM_SMALL_ALIGN : SIM_LARGE_ALIGN, true);
    if (p && !(a = record(d, p, size, r, kind, NULL))) {
        ra_give(&d->ra, p, r);
        p = 0;
    }
    if (p) {
        d->used += r;
        if ((a->pool = pool))
            sim_pool_count(pool, size, 1);
        device_publish(d);
    }
    pthread_mutex_unlock(&d->lock);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = p;
    return CUDA_SUCCESS;
}

/* The link that holds the allocation at p on d (the bucket's end, which
 * holds NULL, when none); locked. */
static struct sim_alloc **link_of(struct sim_device *d, uintptr_t p)
{
    struct sim_alloc **pp = &d->table[bucket(p)];
    while (*pp && (*pp)->ptr != p)
        pp = &(*pp)->next;
    return pp;
}

static struct sim_alloc *find_alloc(struct sim_device *d, uintptr_t p)
{
    return *link_of(d, p);
}

static void pool_trim_locked(struct CUmemPoolHandle_st *pool, size_t keep);

/* Unlink a destroyed pool with nothing allocated from its device and free
 * it, its segments given back; locked. */
static void pool_dispose(struct CUmemPoolHandle_st *pool)
{
    struct sim_device *d = pool->dev;
    pool_trim_locked(pool, 0);
    for (struct CUmemPoolHandle_st **pp = &d->created; *pp; pp = &(*pp)->next)
        if (*pp == pool) {
            *pp = pool->next;
            break;
        }
    /* Not freed: the handle stays a destroyed pool for the process's life,
     * so that a later use of it is told (driver_pool.c, live_pool), not a
     * use of freed memory whose outcome depends on the allocator. */
}

/* Return a pool allocation to its segment (a destroyed pool goes with its
 * last one); locked. */
static void pool_put(struct sim_alloc *a)
{
    struct CUmemPoolHandle_st *pool = a->seg->pool;
    ra_give(&a->seg->ra, a->ptr, a->rounded);
    a->seg->used -= a->rounded;
    pool->used -= a->size;
    if (pool->destroyed && pool->used == 0)
        pool_dispose(pool);
}

static void gmem_released(struct sim_device *d, struct sim_gmem *g);

/* Give a's range back (to its pool segment, or to the device with its
 * pages; a graph allocation keeps its address); locked. */
static void release_alloc(struct sim_device *d, struct sim_alloc *a)
{
    sim_ledger_free(ledger_kind(a->kind), d->ordinal, a->ptr, a->size);
    if (a->kind == SIM_ASYNC_MEM) {
        pool_put(a);
        return;
    }
    if (a->kind == SIM_GRAPH_MEM) {
        gmem_released(d, a->gmem);
        give_pages(a->ptr, a->ptr + a->rounded);
        return;
    }
    if (a->pool) /* a managed pool's */
        sim_pool_count(a->pool, a->size, -1);
    ra_give(&d->ra, a->ptr, a->rounded);
    release_pages(d, a->ptr, a->rounded);
    d->used -= a->rounded;
    device_publish(d);
}

int sim_free(struct sim_device *d, uintptr_t p, bool array)
{
    pthread_mutex_lock(&d->lock);
    struct sim_alloc **pp = link_of(d, p), *a = *pp;
    if (a && (a->kind == SIM_ARRAY_MEM) != array)
        a = NULL;
    if (a) {
        *pp = a->next;
        release_alloc(d, a);
    }
    pthread_mutex_unlock(&d->lock);
    free(a);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

void sim_array_set_rows(struct sim_device *d, uintptr_t p, size_t row_bytes, size_t rows)
{
    pthread_mutex_lock(&d->lock);
    struct sim_alloc *a = find_alloc(d, p);
    if (a) {
        a->row_bytes = row_bytes;
        a->rows = rows;
    }
    pthread_mutex_unlock(&d->lock);
}

int sim_find(uintptr_t addr, struct sim_alloc *out, int *ordinal)
{
    struct sim_device *d = sim_device_of(addr);
    int found = 0;
    if (!d)
        return -1;
    pthread_mutex_lock(&d->lock);
    struct sim_alloc *start = find_alloc(d, addr); /* the common case: an allocation's start */
    if (start) {
        *out = *start;
        found = 1;
    }
    for (size_t i = 0; i < SIM_TABLE_SIZE && !found; i++)
        for (struct sim_alloc *a = d->table[i]; a && !found; a = a->next)
            if (addr >= a->ptr && addr < a->ptr + (a->size ? a->size : 1)) {
                *out = *a;
                found = 1;
            }
    pthread_mutex_unlock(&d->lock);
    *ordinal = d->ordinal;
    return found ? 0 : -1;
}

/* Try each segment; locked. */
static uintptr_t pool_take(struct CUmemPoolHandle_st *pool, size_t r, struct pool_seg **seg)
{
    size_t align = r < SIM_LARGE_ALIGN ? SIM_SMALL_ALIGN : SIM_LARGE_ALIGN;
    for (struct pool_seg *s = pool->segs; s; s = s->next) {
        uintptr_t p = s->len - s->used >= r ? ra_take(&s->ra, r, align) : 0;
        if (p) {
            *seg = s;
            return p;
        }
    }
    return 0;
}

/* Grow the pool by one segment of `len` bytes (2 MiB multiple); locked. */
static struct pool_seg *pool_grow(struct CUmemPoolHandle_st *pool, size_t len)
{
    struct sim_device *d = pool->dev;
    if (pool->max_size && (len > pool->max_size || pool->reserved > pool->max_size - len))
        return NULL;
    struct pool_seg *s = calloc(1, sizeof *s);
    uintptr_t p = s ? device_take(d, len, SIM_LARGE_ALIGN, false) : 0;
    if (!p || ra_init(&s->ra, p, len) != 0) {
        if (p)
            ra_give(&d->ra, p, len);
        free(s);
        return NULL;
    }
    s->base = p;
    s->len = len;
    s->pool = pool;
    s->next = pool->segs;
    pool->segs = s;
    pool->reserved += len;
    d->pools_reserved += len;
    sim_ledger_pool("pool_grow", d->ordinal, p, len);
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
    return s;
}

/* Release unused segments while more than `keep` bytes are reserved; locked. */
static void pool_trim_locked(struct CUmemPoolHandle_st *pool, size_t keep)
{
    for (struct pool_seg **pp = &pool->segs; *pp && pool->reserved > keep;) {
        struct pool_seg *s = *pp;
        if (s->used != 0) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        pool->reserved -= s->len;
        pool->dev->pools_reserved -= s->len;
        sim_ledger_pool("pool_release", pool->dev->ordinal, s->base, s->len);
        ra_destroy(&s->ra);
        ra_give(&pool->dev->ra, s->base, s->len);
        release_pages(pool->dev, s->base, s->len);
        free(s);
    }
}

/* Grow the pool for an allocation of r bytes: by sim_pool_segment(r), or, when
 * that does not fit (the device or the pool's maxSize), by r rounded to
 * 2 MiB (not observed on a GPU: the sim's earlier rule, kept so that a
 * bounded pool or a nearly full device can still serve); not when the
 * device's graph pool gave way to the first try (an H200 failed that call:
 * device_fits). Locked. */
static bool pool_grow_for(struct CUmemPoolHandle_st *pool, size_t r)
{
    size_t big = sim_pool_segment(r), small = sim_round(r < SIM_LARGE_ALIGN ? SIM_LARGE_ALIGN : r);
    size_t graph = pool->dev->gpool.reserved;
    if (big && pool_grow(pool, big))
        return true;
    return pool->dev->gpool.reserved == graph && small && pool_grow(pool, small);
}

int sim_pool_alloc(struct CUmemPoolHandle_st *pool, size_t size, uintptr_t *out)
{
    struct sim_device *d = pool->dev;
    size_t r = sim_round(size);
    struct pool_seg *seg = NULL;
    if (r == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&d->lock);
    if (pool->destroyed) {
        pthread_mutex_unlock(&d->lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!d->ctx.active)
        sim_ctx_activate(d);
    uintptr_t p = pool_take(pool, r, &seg);
    size_t graph = d->gpool.reserved;
    if (!p && !pool_grow_for(pool, r) && d->gpool.reserved == graph) {
        pool_trim_locked(pool, 0); /* the real pool frees its cache and retries */
        pool_grow_for(pool, r);
    }
    if (!p)
        p = pool_take(pool, r, &seg);
    if (p && !record(d, p, size, r, SIM_ASYNC_MEM, seg)) {
        ra_give(&seg->ra, p, r);
        p = 0;
    }
    if (p) {
        seg->used += r;
        pool->used += size; /* requested bytes (sim_internal.h, the pool's used) */
        if (pool->used > pool->used_high)
            pool->used_high = pool->used;
    }
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
    *out = p;
    return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void sim_pool_trim(struct CUmemPoolHandle_st *pool, size_t keep)
{
    pthread_mutex_lock(&pool->dev->lock);
    pool_trim_locked(pool, keep);
    device_publish(pool->dev);
    pthread_mutex_unlock(&pool->dev->lock);
}

/* A release threshold as a byte count to keep. */
static size_t threshold(const struct CUmemPoolHandle_st *pool)
{
    return pool->release_threshold > SIZE_MAX ? SIZE_MAX : (size_t)pool->release_threshold;
}

void sim_pools_sync(struct sim_device *d)
{
    pthread_mutex_lock(&d->lock);
    pool_trim_locked(&d->pool, threshold(&d->pool));
    for (struct CUmemPoolHandle_st *p = d->created; p; p = p->next)
        pool_trim_locked(p, threshold(p));
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
}

struct CUmemPoolHandle_st *sim_pool_create(struct sim_device *d, size_t max_size,
                                           enum sim_pool_kind kind)
{
    struct CUmemPoolHandle_st *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->dev = d;
    pool->created = 1;
    pool->kind = kind;
    pool->max_size = max_size;
    if (kind != SIM_POOL_DEVICE) /* each allocation its own block: not among its pools */
        return pool;
    pthread_mutex_lock(&d->lock);
    pool->next = d->created;
    d->created = pool;
    pthread_mutex_unlock(&d->lock);
    return pool;
}

void sim_pool_destroy(struct CUmemPoolHandle_st *pool)
{
    struct sim_device *d = pool->dev;
    pthread_mutex_lock(&d->lock);
    pool->destroyed = 1;
    if (d->current == pool)
        d->current = NULL;
    if (pool->used == 0)
        pool_dispose(pool);
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
}

/* ---- graph allocations (struct sim_gmem) ---- */

size_t sim_alloc_rounded(size_t size)
{
    return sim_round(size);
}

struct sim_gmem *sim_gmem_new(struct sim_device *d, size_t size)
{
    size_t r = sim_round(size);
    struct sim_gmem *g = r ? calloc(1, sizeof *g) : NULL;
    if (!g)
        return NULL;
    pthread_mutex_lock(&d->lock);
    if (graph_range(d) == 0)
        g->va = ra_take(&d->gra, r, r < SIM_LARGE_ALIGN ? SIM_SMALL_ALIGN : SIM_LARGE_ALIGN);
    if (g->va) {
        *g = (struct sim_gmem){d, g->va, size, r, 1, false, 0, d->gmems};
        d->gmems = g;
    }
    pthread_mutex_unlock(&d->lock);
    if (!g->va) {
        free(g);
        return NULL;
    }
    return g;
}

void sim_gmem_ref(struct sim_gmem *g)
{
    pthread_mutex_lock(&g->d->lock);
    g->refs++;
    pthread_mutex_unlock(&g->d->lock);
}

/* g's address back to the device and g freed, when nothing holds it and
 * its memory is not live; locked. */
static void gmem_dispose_if_done(struct sim_device *d, struct sim_gmem *g)
{
    if (g->refs || g->live)
        return;
    for (struct sim_gmem **pp = &d->gmems; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    ra_give(&d->gra, g->va, g->rounded);
    free(g);
}

void sim_gmem_unref(struct sim_gmem *g)
{
    struct sim_device *d = g->d;
    pthread_mutex_lock(&d->lock);
    g->refs--;
    gmem_dispose_if_done(d, g);
    pthread_mutex_unlock(&d->lock);
}

/* g's memory was freed (release_alloc): its charge stays in the graph pool,
 * free for the next graph allocation; locked. */
static void gmem_released(struct sim_device *d, struct sim_gmem *g)
{
    d->gpool.live -= g->charge;
    g->live = false;
    gmem_dispose_if_done(d, g);
}

struct sim_gmem *sim_gmem_find(uintptr_t va)
{
    struct sim_device *d = sim_device_of(va);
    struct sim_gmem *g = NULL;
    if (!d)
        return NULL;
    pthread_mutex_lock(&d->lock);
    for (g = d->gmems; g && g->va != va; g = g->next)
        ;
    pthread_mutex_unlock(&d->lock);
    return g;
}

bool sim_gmem_live(struct sim_gmem *g)
{
    pthread_mutex_lock(&g->d->lock);
    bool live = g->live;
    pthread_mutex_unlock(&g->d->lock);
    return live;
}

int sim_gmem_map(struct sim_gmem *g)
{
    struct sim_device *d = g->d;
    int err = CUDA_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->ctx.active)
        sim_ctx_activate(d);
    struct sim_alloc *a = NULL;
    size_t charge = sim_gpool_charge(g->rounded), room = device_room(d);
    if (g->live)
        err = CUDA_ERROR_INVALID_VALUE;
    else if (!sim_gpool_reserve(&d->gpool, charge, &room) ||
             !(a = record(d, g->va, g->size, g->rounded, SIM_GRAPH_MEM, NULL)))
        err = CUDA_ERROR_OUT_OF_MEMORY;
    if (a) {
        a->gmem = g;
        g->live = true;
        g->charge = charge;
        d->gpool.live += charge;
    }
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
    return err;
}

void sim_gmem_unmap(struct sim_gmem *g)
{
    struct sim_device *d = g->d;
    pthread_mutex_lock(&d->lock);
    struct sim_alloc **pp = link_of(d, g->va), *a = *pp;
    if (g->live && a) {
        *pp = a->next;
        release_alloc(d, a); /* may free g */
    } else {
        a = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    free(a);
}

bool sim_gmem_launch_reserve(struct sim_device *d, size_t demand, size_t credit)
{
    pthread_mutex_lock(&d->lock);
    size_t room = device_room(d);
    bool fits = demand <= credit || sim_gpool_reserve(&d->gpool, demand - credit, &room);
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
    return fits;
}

void sim_graph_memset_ran(struct sim_device *d)
{
    pthread_mutex_lock(&d->lock);
    if (!d->gpool.base && SIM_GRAPH_MEMSET_BASE <= device_room(d)) {
        d->gpool.base = SIM_GRAPH_MEMSET_BASE;
        device_publish(d);
    }
    pthread_mutex_unlock(&d->lock);
}

void sim_gmem_launch_failed(struct sim_device *d)
{
    pthread_mutex_lock(&d->lock);
    sim_gpool_exhaust(&d->gpool, device_room(d));
    device_publish(d);
    pthread_mutex_unlock(&d->lock);
}

/* The ledger's fail lines (ledger.c): device's free and total bytes (as
 * sim_mem_info answers) and graph pool reserve now. */
static bool ledger_state(int device, struct sim_ledger_device *out)
{
    if (device < 0 || device >= sim_cfg.ndevices)
        return false;
    struct sim_device *d = &sim_devices[device];
    pthread_mutex_lock(&d->lock);
    *out = (struct sim_ledger_device){.free = device_room(d),
                                      .total = sim_cfg.capacity,
                                      .graph_pool = d->gpool.reserved,
                                      .outside = context_reserve(d) + d->gpool.base +
                                                 sim_shared_others(d->ordinal)};
    pthread_mutex_unlock(&d->lock);
    return true;
}

void sim_graph_mem_trim(struct sim_device *d)
{
    pthread_mutex_lock(&d->lock);
    if (sim_gpool_trim(&d->gpool))
        device_publish(d);
    pthread_mutex_unlock(&d->lock);
}

void sim_graph_mem_usage(struct sim_device *d, size_t *used, size_t *reserved, size_t *used_high,
                         size_t *reserved_high)
{
    pthread_mutex_lock(&d->lock);
    *used = d->gpool.reserved - d->gpool.stuck;
    *reserved = d->gpool.reserved;
    *used_high = d->gpool.used_high;
    *reserved_high = d->gpool.reserved_high;
    pthread_mutex_unlock(&d->lock);
}

void sim_graph_mem_reset_high(struct sim_device *d, bool reserved)
{
    pthread_mutex_lock(&d->lock);
    if (reserved)
        d->gpool.reserved_high = d->gpool.reserved;
    else
        d->gpool.used_high = d->gpool.reserved - d->gpool.stuck;
    pthread_mutex_unlock(&d->lock);
}

void sim_ctx_activate(struct sim_device *d)
{
    d->ctx.active = 1;
    device_publish(d);
}

/* Free every allocation and the pool; locked. */
void sim_ctx_destroy(struct sim_device *d)
{
    for (size_t i = 0; i < SIM_TABLE_SIZE; i++) {
        while (d->table[i]) {
            struct sim_alloc *a = d->table[i];
            d->table[i] = a->next;
            release_alloc(d, a);
            free(a);
        }
    }
    d->used = 0;
    pool_trim_locked(&d->pool, 0);
    for (struct CUmemPoolHandle_st *p = d->created; p; p = p->next)
        pool_trim_locked(p, 0);
    d->pool.release_threshold = 0;
    d->pool.reserved_high = d->pool.used_high = 0;
    sim_gpool_clear(&d->gpool);
    d->gpool.reserved_high = d->gpool.used_high = 0;
    d->ctx.active = 0;
    device_publish(d);
    sim_host_context_end(d->ordinal);
}
