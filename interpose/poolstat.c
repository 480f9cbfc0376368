/* poolstat.c: the state of a memory pool at a failed stream-ordered
 * allocation, before a memory sample and at an NVTX iteration's end
 * (VT_REC_POOL_STAT, docs/trace.md). Asked of the driver, not the
 * runtime: a runtime query that failed would overwrite the runtime's last
 * error, which the program reads after its failed cudaMallocAsync
 * (cudaGetLastError), and a cudaMemPool_t is a CUmemoryPool (driver_types.h),
 * so one path serves both levels. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vti_internal.h"

/* The pool that an allocation without one takes from: the current pool of
 * the device (CUDA Runtime API, cudaDeviceSetMemPool: "Unless a mempool is
 * specified in the cudaMallocAsync call, cudaMallocAsync allocates from the
 * current mempool of the provided stream's device"). 0 when unknown. */
static uint64_t current_pool(int device)
{
    PFN_cuDeviceGetMemPool_v11020 get =
        VTI_REAL_DRIVER(cuDeviceGetMemPool, 11020, "cuDeviceGetMemPool");
    CUmemoryPool pool = NULL;
    if (!get || device < 0 || get(&pool, (CUdevice)device) != CUDA_SUCCESS)
        return 0;
    return (uint64_t)(uintptr_t)pool;
}

/* Attribute a of pool into *v (cuMemPoolGetAttribute); false when the
 * driver cannot answer. */
static bool pool_attr(uint64_t pool, CUmemPool_attribute a, uint64_t *v)
{
    PFN_cuMemPoolGetAttribute_v11020 attr =
        VTI_REAL_DRIVER(cuMemPoolGetAttribute, 11020, "cuMemPoolGetAttribute");
    cuuint64_t x = 0;
    if (!attr || attr((CUmemoryPool)(uintptr_t)pool, a, &x) != CUDA_SUCCESS)
        return false;
    *v = x;
    return true;
}

/* Reserved and used bytes of pool (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT /
 * USED_MEM_CURRENT). false when the driver cannot answer. */
static bool pool_bytes(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    uint64_t r, u;
    if (!pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) ||
        !pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u))
        return false;
    *reserved = r;
    *used = u;
    return true;
}

/* The pools of the program that vramtrace knows, in one table: each with
 * its device (known from its creation, cuMemPoolCreate; or found, asyncdev.c:
 * a device's default or current pool, or read off an allocation's pointer)
 * and, once a stream-ordered allocation took from it by name
 * (cudaMallocFromPoolAsync: RAPIDS RMM's cuda_async_memory_resource makes
 * its own), sampled at iteration ends and before memory samples (at most
 * MAX_SAMPLED of them: the report's VR_MAX_POOLS). The devices' current
 * pools are sampled as such (bit d of pool_devices). The first MAX_POOLS
 * pools have a slot, in order, for good: a slot's handle is set once, so a
 * reader that loads it (acquire) then its fields never sees another pool's;
 * walks stop at the first free slot, so they cost what the program's pools
 * are. A destroyed pool keeps its slot, its device -1 and not sampled (a
 * pool made again with the same handle takes it back). A host pool (its
 * memory pinned host memory: cuMemPoolCreate's location HOST or HOST_NUMA)
 * or a managed one (CU_MEM_ALLOCATION_TYPE_MANAGED) has that kind and is
 * never sampled nor asked at its destroy: no device's pool holds its bytes
 * (a managed pool keeps the device of its creation, where its failures are
 * recorded: vti_pool_created). */
#define MAX_POOLS 256
#define MAX_SAMPLED VT_MAX_POOLS
static _Atomic uint64_t pool_devices;
static struct {
    _Atomic uint64_t pool; /* 0: free slot */
    _Atomic int device;    /* -1: unknown, or destroyed */
    _Atomic int kind;      /* enum vt_kind of its memory: device, host_pinned, managed */
    _Atomic bool sampled;
    _Atomic uint64_t spare; /* free reserve at its latest sample */
} pools[MAX_POOLS];
/* Writers of pools[] (a slot taken, a device or the sampled flag set) and
 * the samplers hold it: no pool is destroyed while sampled. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* Slots with sampled set now (written under pools_lock; read without). */
static _Atomic int nsampled;
/* Each device's pools destroyed with allocations outstanding, which the
 * driver keeps until those are freed: their free reserve summed
 * (drain_sums, below; written under pools_lock, read without). */
static _Atomic uint64_t drain_spare[VTI_MAX_DEVICES];

/* The pool of pools[i] and, unless device is NULL, its device into *device
 * (-1 for a free slot and, when sampled is true, for a pool not sampled);
 * 0 for a free slot or past the table (slots fill in order: the first 0
 * ends it). */
static uint64_t slot_pool(int i, bool sampled, int *device)
{
    uint64_t pool = i < MAX_POOLS ? atomic_load_explicit(&pools[i].pool, memory_order_acquire) : 0;
    if (device)
        *device =
            pool && (!sampled || atomic_load_explicit(&pools[i].sampled, memory_order_relaxed))
                ? atomic_load_explicit(&pools[i].device, memory_order_relaxed)
                : -1;
    return pool;
}

/* The slot index of pool, or -1. */
static int slot_of(uint64_t pool)
{
    uint64_t seen;
    for (int i = 0; (seen = slot_pool(i, false, NULL)); i++)
        if (seen == pool)
            return i;
    return -1;
}

/* The slot of pool, taken now if it has none; -1 when the table is full.
 * pools_lock held. */
static int slot_take(uint64_t pool)
{
    for (int i = 0; i < MAX_POOLS; i++) {
        uint64_t seen = atomic_load_explicit(&pools[i].pool, memory_order_relaxed);
        if (seen == pool)
            return i;
        if (!seen) {
            atomic_store_explicit(&pools[i].device, -1, memory_order_relaxed);
            atomic_store_explicit(&pools[i].pool, pool, memory_order_release);
            return i;
        }
    }
    return -1;
}

int vti_pool_known_device(uint64_t pool)
{
    int i = pool ? slot_of(pool) : -1;
    return i < 0 ? -1 : atomic_load_explicit(&pools[i].device, memory_order_relaxed);
}

void vti_pool_created(uint64_t pool, int device, enum vt_kind kind)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pools_lock);
    int i = slot_take(pool);
    if (i >= 0) {
        atomic_store_explicit(&pools[i].device, kind == VT_KIND_HOST_PINNED ? -1 : device,
                              memory_order_relaxed);
        atomic_store_explicit(&pools[i].kind, (int)kind, memory_order_relaxed);
    }
    pthread_mutex_unlock(&pools_lock);
}

enum vt_kind vti_pool_kind(uint64_t pool)
{
    int i = pool ? slot_of(pool) : -1;
    return i < 0 ? VT_KIND_DEVICE
                 : (enum vt_kind)atomic_load_explicit(&pools[i].kind, memory_order_relaxed);
}

enum vt_api vti_pool_api(uint64_t pool, enum vt_api api)
{
    enum vt_kind kind = pool ? vti_pool_kind(pool) : VT_KIND_DEVICE;
    bool runtime = api == VT_API_CUDA_MALLOC_FROM_POOL_ASYNC;
    if (kind == VT_KIND_HOST_PINNED)
        return runtime ? VT_API_CUDA_MALLOC_HOST_POOL : VT_API_CU_MEM_ALLOC_HOST_POOL;
    if (kind == VT_KIND_MANAGED)
        return runtime ? VT_API_CUDA_MALLOC_MANAGED_POOL : VT_API_CU_MEM_ALLOC_MANAGED_POOL;
    return api;
}

void vti_pool_know(uint64_t pool, int device)
{
    if (!pool || device < 0)
        return;
    pthread_mutex_lock(&pools_lock);
    int i = slot_take(pool);
    if (i >= 0 && atomic_load_explicit(&pools[i].kind, memory_order_relaxed) == VT_KIND_DEVICE)
        atomic_store_explicit(&pools[i].device, device, memory_order_relaxed);
    pthread_mutex_unlock(&pools_lock);
}

/* Each device's pools' free reserve (reserved - used bytes) at their latest
 * samples, for the exit line's fit (iterfit.c; the report's
 * vr_devstate.pool_spare, report/pool.c): the current pool's (its handle in
 * current_handle) and the sampled ones' in pools[]; bit d of spare_sampled
 * once one of device d's was sampled. */
static _Atomic uint64_t current_spare[VTI_MAX_DEVICES], current_handle[VTI_MAX_DEVICES];
static _Atomic uint64_t spare_sampled;
/* The most of each device's pools' reserved bytes written in one round
 * (vti_pool_reserved_peak). */
static _Atomic uint64_t reserved_peak[VTI_MAX_DEVICES];

/* Device d's pools' free reserve at their latest samples, summed: the
 * current pool's and the sampled ones' of d, each pool once, and the
 * destroyed ones' that outstanding allocations keep. */
static uint64_t device_spare(int d)
{
    uint64_t current = atomic_load_explicit(&current_handle[d], memory_order_relaxed), pool;
    uint64_t sum = atomic_load_explicit(&current_spare[d], memory_order_relaxed);
    int dev;
    for (int i = 0; (pool = slot_pool(i, true, &dev)); i++)
        if (pool != current && dev == d)
            sum += atomic_load_explicit(&pools[i].spare, memory_order_relaxed);
    return sum + atomic_load_explicit(&drain_spare[d], memory_order_relaxed);
}

/* sum, the reserved bytes of the pools of device d one round wrote (every
 * pool of d it samples, one after the other), kept as d's most when above:
 * never a sum with a state older than the round (one pool's new state
 * beside another's old one summed to more than the pools ever reserved at
 * once: pools_random.c; so too a destroyed pool's reserve, which the
 * driver may give back at synchronizations before its last free, unseen:
 * docs/trace.md, "A destroyed pool's last free"). The report's rule,
 * report/pool.c, vr_pool_rounds_end. */
static void reserved_keep(int d, uint64_t sum)
{
    if (d < 0 || d >= VTI_MAX_DEVICES)
        return;
    uint64_t peak = atomic_load_explicit(&reserved_peak[d], memory_order_relaxed);
    while (sum > peak &&
           !atomic_compare_exchange_weak_explicit(&reserved_peak[d], &peak, sum,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The sample ev of a pool kept as its device's latest: the current pool's
 * (current: asked as the device's) or a sampled one's. */
static void keep_spare(const vt_event *ev, bool current)
{
    int d = ev->u.pool.device;
    uint64_t r = ev->u.pool.reserved_bytes, u = ev->u.pool.used_bytes, spare = r > u ? r - u : 0;
    if (d < 0 || d >= VTI_MAX_DEVICES)
        return;
    if (current) {
        atomic_store_explicit(&current_handle[d], ev->u.pool.pool, memory_order_relaxed);
        atomic_store_explicit(&current_spare[d], spare, memory_order_relaxed);
    }
    int i = slot_of(ev->u.pool.pool);
    if (i >= 0 && atomic_load_explicit(&pools[i].sampled, memory_order_relaxed))
        atomic_store_explicit(&pools[i].spare, spare, memory_order_relaxed);
    if (!(atomic_load_explicit(&spare_sampled, memory_order_relaxed) & 1ull << d))
        atomic_fetch_or(&spare_sampled, 1ull << d);
}

uint64_t vti_pool_reserved_peak(int device)
{
    return device >= 0 && device < VTI_MAX_DEVICES
               ? atomic_load_explicit(&reserved_peak[device], memory_order_relaxed)
               : 0;
}

bool vti_pool_spare(int device, uint64_t *spare)
{
    *spare = 0;
    uint64_t bit = device >= 0 && device < VTI_MAX_DEVICES ? 1ull << device : 0;
    if (!(atomic_load_explicit(&spare_sampled, memory_order_relaxed) & bit))
        return false;
    *spare = device_spare(device);
    return true;
}

/* *ev: the VT_REC_POOL_STAT of pool (0: device dev's current pool), time
 * stamped now. false when the driver cannot answer. */
static bool pool_stat(uint64_t pool, int dev, vt_event *ev)
{
    *ev = (vt_event){.type = VT_REC_POOL_STAT};
    vti_enter(); /* the queries below are vramtrace's own calls */
    if (!pool)
        pool = current_pool(dev);
    bool have = pool && pool_bytes(pool, &ev->u.pool.reserved_bytes, &ev->u.pool.used_bytes);
    vti_leave();
    ev->ts_ns = vti_stamp();
    ev->u.pool.device = dev;
    ev->u.pool.pool = pool;
    return have;
}

uint64_t vti_write_graph_pool(vti_thread *t, int device)
{
    PFN_cuDeviceGetGraphMemAttribute_v11040 attr =
        VTI_REAL_DRIVER(cuDeviceGetGraphMemAttribute, 11040, "cuDeviceGetGraphMemAttribute");
    cuuint64_t r = 0, u = 0;
    if (!attr || device < 0)
        return 0;
    vti_enter(); /* vramtrace's own calls */
    bool have =
        attr((CUdevice)device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) == CUDA_SUCCESS &&
        attr((CUdevice)device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) == CUDA_SUCCESS;
    vti_leave();
    if (!have || !r)
        return 0;
    vt_event ev = {.type = VT_REC_POOL_STAT, .ts_ns = vti_stamp()};
    ev.u.pool.device = device;
    ev.u.pool.pool = VT_POOL_GRAPH;
    ev.u.pool.reserved_bytes = r;
    ev.u.pool.used_bytes = u;
    vti_write(t, &ev);
    return r;
}

/* ev (a pool asked as its device's current one when current) onto t, and
 * kept as the pool's latest state (keep_spare): the samples the report
 * reads are the ones the exit line counts. */
static void write_kept(vti_thread *t, const vt_event *ev, bool current)
{
    vti_write(t, ev);
    keep_spare(ev, current);
}

void vti_rec_pool_stat(uint64_t pool, int (*device)(void))
{
    vt_event ev;
    vti_thread *t = pool_stat(pool, device(), &ev) ? vti_thread_get() : NULL;
    if (!t)
        return;
    write_kept(t, &ev, !pool);
    vti_thread_put(t);
}

/* Set once a pool found no room to be sampled: one note says so (the
 * report cannot tell what is not sampled). */
static _Atomic bool sampled_full;

static void note_full(void)
{
    if (atomic_load_explicit(&sampled_full, memory_order_relaxed) ||
        atomic_exchange_explicit(&sampled_full, true, memory_order_relaxed))
        return;
    char text[160];
    snprintf(text, sizeof text,
             "more than %d stream-ordered pools: the pools past them are sampled only where "
             "their allocations fail",
             MAX_SAMPLED);
    vt_event ev = {.type = VT_REC_NOTE};
    ev.u.note.text = text;
    vti_session_emit(&ev); /* not vti_emit (api.c): the session is on in every caller */
}

/* pool sampled from now on, on device unless its device is known, when
 * there is room (else said once). */
static void sample_pool_locked(uint64_t pool, int device)
{
    bool full = false;
    int i = slot_take(pool), n = atomic_load_explicit(&nsampled, memory_order_relaxed);
    if (i >= 0 && !atomic_load_explicit(&pools[i].sampled, memory_order_relaxed)) {
        if (atomic_load_explicit(&pools[i].device, memory_order_relaxed) < 0)
            atomic_store_explicit(&pools[i].device, device, memory_order_relaxed);
        full = n >= MAX_SAMPLED;
        if (!full) {
            atomic_store_explicit(&pools[i].sampled, true, memory_order_relaxed);
            atomic_store_explicit(&nsampled, n + 1, memory_order_relaxed);
        }
    }
    if (full || i < 0)
        note_full();
}

static void sample_pool(uint64_t pool, int device)
{
    pthread_mutex_lock(&pools_lock);
    sample_pool_locked(pool, device);
    pthread_mutex_unlock(&pools_lock);
}

/* The state of pool (0: device's current one) onto t, when the driver
 * answers and, unless empty, the pool holds memory; a device's current pool
 * written is sampled by name from then on (pools_lock held): once no longer
 * current (cudaDeviceSetMemPool), it keeps its reserve and its allocations
 * (pools_random.c: a default pool made current again left the program's
 * pool's last sample standing in the report). Returns the pool written, 0
 * for none; its reserved bytes added to *reserved. */
static uint64_t write_sample(vti_thread *t, uint64_t pool, int device, bool empty,
                             uint64_t *reserved)
{
    vt_event ev;
    if (device < 0 || !pool_stat(pool, device, &ev) || (!empty && !ev.u.pool.reserved_bytes))
        return 0;
    write_kept(t, &ev, !pool);
    *reserved += ev.u.pool.reserved_bytes;
    if (!pool)
        sample_pool_locked(ev.u.pool.pool, device);
    return ev.u.pool.pool;
}

void vti_write_pool_sample(vti_thread *t, int device, bool empty)
{
    pthread_mutex_lock(&pools_lock); /* no pool is destroyed meanwhile */
    uint64_t sum = 0, current = write_sample(t, 0, device, empty, &sum), pool;
    int dev;
    for (int i = 0; (pool = slot_pool(i, true, &dev)); i++)
        if (dev == device && pool != current)
            write_sample(t, pool, device, empty, &sum);
    reserved_keep(device, sum); /* the round's end */
    pthread_mutex_unlock(&pools_lock);
}

/* ---- pools destroyed with allocations outstanding ---------------------------
 * (docs/trace.md, "A destroyed pool's last free".) Under pools_lock: their
 * outstanding allocations, sorted by address (draining.v[0 .. n) in force,
 * then `pending` more found by a destroy not yet returned, kept by
 * vti_pool_destroy_end when it succeeded), and the pools themselves
 * (drain_pools). Each device's sum of their free reserve
 * counts in device_spare, as the report counts their pool_stat. */
typedef struct draining_alloc {
    uint64_t addr, pool, size;
} draining_alloc;
static struct {
    draining_alloc *v;
    uint32_t n, pending, cap;
} draining;
VTI_HIDDEN _Atomic uint32_t vti_pools_draining;

/* A pool destroyed with allocations outstanding: its reserved and used
 * bytes at the destroy, its used bytes now; each: its reserve stays until
 * the last free (release threshold at least its reserve), so each free is
 * told. The pending one of a destroy not yet returned is drain_next. */
typedef struct drain_pool {
    uint64_t pool, reserved, used_destroy, used;
    int device;
    bool each;
} drain_pool;
static drain_pool drain_pools[MAX_POOLS], drain_next;
static uint32_t ndrain_pools;

/* The free reserve drain_pools[i] holds now, as its last pool_stat says. */
static uint64_t drain_pool_spare(const drain_pool *p)
{
    uint64_t used = p->each ? p->used : p->used_destroy;
    return p->reserved > used ? p->reserved - used : 0;
}

/* drain_spare from drain_pools. pools_lock held. */
static void drain_sums(void)
{
    uint64_t sp[VTI_MAX_DEVICES] = {0};
    for (uint32_t i = 0; i < ndrain_pools; i++)
        sp[drain_pools[i].device] += drain_pool_spare(&drain_pools[i]);
    for (int d = 0; d < VTI_MAX_DEVICES; d++)
        atomic_store_explicit(&drain_spare[d], sp[d], memory_order_relaxed);
}

/* The pool the driver names for live address addr, 0 when none or unknown. */
static uint64_t pool_of_pointer(uint64_t addr)
{
    PFN_cuPointerGetAttribute_v4000 attr =
        VTI_REAL_DRIVER(cuPointerGetAttribute, 4000, "cuPointerGetAttribute");
    CUmemoryPool pool = NULL;
    if (!attr ||
        attr(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, (CUdeviceptr)addr) != CUDA_SUCCESS)
        return 0;
    return (uint64_t)(uintptr_t)pool;
}

/* vti_live_each's visitor: e is pending when it is a stream-ordered
 * allocation of drain_next's pool; *arg: the bytes found so far, or
 * UINT64_MAX once memory ran out. */
static void drain_visit(const vti_live *e, void *arg)
{
    uint64_t *found = arg;
    const vt_api_info *a = vt_api_get((enum vt_api)e->api);
    if (*found == UINT64_MAX || e->space != VT_SPACE_ADDR ||
        vti_live_device(e) != drain_next.device || !a || !a->stream_ordered ||
        pool_of_pointer(e->addr) != drain_next.pool)
        return;
    uint32_t need = draining.n + draining.pending + 1;
    if (need > draining.cap) {
        uint32_t cap = draining.cap ? draining.cap * 2 : 16;
        draining_alloc *v = realloc(draining.v, cap * sizeof *v);
        if (!v) {
            *found = UINT64_MAX;
            return;
        }
        draining.v = v;
        draining.cap = cap;
    }
    draining.v[need - 1] = (draining_alloc){e->addr, drain_next.pool, e->size};
    draining.pending++;
    *found += e->size;
}

static int by_addr(const void *a, const void *b)
{
    uint64_t x = ((const draining_alloc *)a)->addr, y = ((const draining_alloc *)b)->addr;
    return x < y ? -1 : x > y;
}

/* Does pool keep reserved bytes through synchronizations? Its release
 * threshold ("amount of reserved memory in bytes to hold onto before trying
 * to release memory back to the OS", CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) is
 * at least that much. */
static bool pool_keeps(uint64_t pool, uint64_t reserved)
{
    uint64_t threshold;
    return pool_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) && threshold >= reserved;
}

/* The outstanding allocations of pool (device; reserved and used bytes
 * before its destroy) as pending, when they can all be found: their sizes
 * must sum to the pool's used bytes (the requested bytes of its live
 * allocations, as the driver counts them: sim_internal.h), else some were
 * made before the recording or memory ran out, or the pool table is full
 * (none are kept then). pools_lock and the order lock held. */
static void drain_find_all(uint64_t pool, int device, uint64_t reserved, uint64_t used)
{
    uint64_t found = 0;
    draining.pending = 0;
    if (ndrain_pools == MAX_POOLS || device < 0 || device >= VTI_MAX_DEVICES)
        return;
    drain_next = (drain_pool){pool, reserved, used, used, device, false};
    vti_enter(); /* the driver queries are vramtrace's own calls */
    drain_next.each = pool_keeps(pool, reserved);
    vti_live_each(drain_visit, &found);
    vti_leave();
    if (found != used)
        draining.pending = 0;
}

/* The pending allocations and their pool in force (destroyed) or dropped.
 * pools_lock held. */
static void drain_commit(bool destroyed)
{
    if (destroyed && draining.pending) {
        draining.n += draining.pending;
        qsort(draining.v, draining.n, sizeof *draining.v, by_addr);
        atomic_store_explicit(&vti_pools_draining, draining.n, memory_order_relaxed);
        drain_pools[ndrain_pools++] = drain_next;
        drain_sums();
    }
    draining.pending = 0;
}

/* The pool_stat of p after a free of it (reserved and used 0 once none of
 * it is outstanding) onto t. */
static void drain_write(vti_thread *t, const drain_pool *p)
{
    vt_event ev = {.type = VT_REC_POOL_STAT, .ts_ns = vti_stamp()};
    ev.u.pool.device = p->device;
    ev.u.pool.pool = p->pool;
    ev.u.pool.reserved_bytes = p->used ? p->reserved : 0;
    ev.u.pool.used_bytes = p->used;
    vti_write(t, &ev);
}

void vti_pool_freed(vti_thread *t, uint64_t addr)
{
    draining_alloc key = {.addr = addr};
    pthread_mutex_lock(&pools_lock);
    draining_alloc *hit =
        draining.n ? bsearch(&key, draining.v, draining.n, sizeof key, by_addr) : NULL;
    if (hit) {
        draining_alloc gone = *hit;
        memmove(hit, hit + 1, (size_t)(draining.v + draining.n - (hit + 1)) * sizeof *hit);
        draining.n--;
        atomic_store_explicit(&vti_pools_draining, draining.n, memory_order_relaxed);
        uint32_t i = 0;
        while (i < ndrain_pools && drain_pools[i].pool != gone.pool)
            i++;
        if (i < ndrain_pools) {
            drain_pool *p = &drain_pools[i];
            p->used = p->used > gone.size ? p->used - gone.size : 0;
            /* none left: the driver releases the pool; else, where its
             * reserve is known to stay, the pool's used bytes less */
            if (t && (!p->used || p->each))
                drain_write(t, p);
            if (!p->used)
                *p = drain_pools[--ndrain_pools];
            drain_sums();
        }
    }
    pthread_mutex_unlock(&pools_lock);
}

void vti_pool_destroy_begin(uint64_t pool, vt_event *last)
{
    *last = (vt_event){.type = VT_REC_POOL_STAT};
    last->u.pool.device = -1;
    pthread_mutex_lock(&pools_lock); /* held until vti_pool_destroy_end, found or not */
    int i = pool ? slot_of(pool) : -1;
    int device =
        i < 0 || atomic_load_explicit(&pools[i].kind, memory_order_relaxed) != VT_KIND_DEVICE
            ? -1
            : atomic_load_explicit(&pools[i].device, memory_order_relaxed);
    if (device < 0) /* unknown, or destroyed already: not asked (a real driver may crash) */
        return;
    /* a pool destroyed with allocations outstanding keeps its reserve until
     * their frees (CUDA Runtime API, cudaMemPoolDestroy): then its state now
     * is its last sample; else it holds nothing once destroyed */
    vti_enter(); /* vramtrace's own calls */
    bool have = pool_bytes(pool, &last->u.pool.reserved_bytes, &last->u.pool.used_bytes);
    vti_leave();
    if (have && !last->u.pool.used_bytes)
        last->u.pool.reserved_bytes = 0;
    else if (have)
        drain_find_all(pool, device, last->u.pool.reserved_bytes, last->u.pool.used_bytes);
    last->u.pool.device = have ? device : -1;
    last->u.pool.pool = pool;
    if (atomic_load_explicit(&pools[i].sampled, memory_order_relaxed))
        atomic_store_explicit(&nsampled, atomic_load(&nsampled) - 1, memory_order_relaxed);
    atomic_store_explicit(&pools[i].sampled, false, memory_order_relaxed);
    atomic_store_explicit(&pools[i].device, -1, memory_order_relaxed);
    atomic_store_explicit(&pools[i].spare, 0, memory_order_relaxed);
}

void vti_pool_destroy_end(vt_event *last, bool destroyed)
{
    vti_thread *t = destroyed && last->u.pool.device >= 0 ? vti_thread_get() : NULL;
    if (t) {
        last->ts_ns = vti_stamp();
        vti_write(t, last);
        vti_thread_put(t);
    }
    drain_commit(destroyed && last->u.pool.device >= 0);
    pthread_mutex_unlock(&pools_lock);
}

void vti_pool_done(bool ok, uint64_t pool, int (*device)(void))
{
    if (pool && vti_pool_kind(pool) != VT_KIND_DEVICE)
        return; /* no device's pool: never sampled */
    if (!ok) {
        vti_rec_pool_stat(pool, device);
        return;
    }
    int i = pool ? slot_of(pool) : -1;
    if (!pool || (i >= 0 && atomic_load_explicit(&pools[i].sampled, memory_order_relaxed)))
        return;
    int d = device();
    if (d >= 0)
        sample_pool(pool, d);
}

void vti_pool_used(uint64_t pool, int device)
{
    if (pool)
        return; /* vti_pool_done */
    uint64_t bit = device >= 0 && device < VTI_MAX_DEVICES ? 1ull << device : 0;
    if (bit && !(atomic_load_explicit(&pool_devices, memory_order_relaxed) & bit))
        atomic_fetch_or(&pool_devices, bit);
    /* the current pool it took from, sampled by name from now on: made
     * current and back (cudaDeviceSetMemPool) between two samples, it kept
     * its reserve unseen, used outside the recording to the report
     * (pools_random.c: 32 MiB, about one run in 30 under load) */
    vti_enter(); /* vramtrace's own call */
    uint64_t current = current_pool(device);
    vti_leave();
    int i = current ? slot_of(current) : -1;
    if (current && (i < 0 || !atomic_load_explicit(&pools[i].sampled, memory_order_relaxed)))
        sample_pool(current, device);
}

void vti_pool_iteration_end(const char *name)
{
    uint64_t m = atomic_load_explicit(&pool_devices, memory_order_relaxed);
    int n = atomic_load_explicit(&nsampled, memory_order_relaxed);
    vti_thread *t = (m || n) && !vt_range_is_operator(name) ? vti_thread_get() : NULL;
    if (!t)
        return;
    uint64_t current[VTI_MAX_DEVICES] = {0}, sums[VTI_MAX_DEVICES] = {0}, pool, written = 0, other;
    pthread_mutex_lock(&pools_lock); /* no pool is destroyed meanwhile */
    for (; m; m &= m - 1) {          /* a pool trimmed to nothing is a sample too */
        int d = __builtin_ctzll(m);
        current[d] = write_sample(t, 0, d, true, &sums[d]);
        written |= current[d] ? 1ull << d : 0;
    }
    int dev;
    for (int i = 0; (pool = slot_pool(i, true, &dev)); i++) {
        bool ours = dev >= 0 && dev < VTI_MAX_DEVICES; /* not sampled, or destroyed: -1, none */
        if (dev >= 0 && (!ours || pool != current[dev]) &&
            write_sample(t, pool, dev, true, ours ? &sums[dev] : &other) && ours)
            written |= 1ull << dev;
    }
    for (; written; written &= written - 1) { /* the round's end, per device sampled */
        int d = __builtin_ctzll(written);
        reserved_keep(d, sums[d]);
    }
    pthread_mutex_unlock(&pools_lock);
    vti_thread_put(t);
}

void vti_pool_fork_reset(void)
{
    pthread_mutex_init(&pools_lock, NULL);
    for (int i = 0; i < MAX_POOLS; i++) {
        atomic_store(&pools[i].pool, 0);
        atomic_store(&pools[i].device, -1);
        atomic_store(&pools[i].kind, VT_KIND_DEVICE);
        atomic_store(&pools[i].sampled, false);
        atomic_store(&pools[i].spare, 0);
    }
    for (int d = 0; d < VTI_MAX_DEVICES; d++) {
        atomic_store(&current_spare[d], 0);
        atomic_store(&current_handle[d], 0);
        atomic_store(&reserved_peak[d], 0);
    }
    atomic_store(&nsampled, 0);
    draining.n = draining.pending = 0; /* the child's CUDA is not the parent's */
    atomic_store(&vti_pools_draining, 0);
    ndrain_pools = 0;
    drain_sums();
    atomic_store(&pool_devices, 0);
    atomic_store(&spare_sampled, 0);
    atomic_store(&sampled_full, false);
}
