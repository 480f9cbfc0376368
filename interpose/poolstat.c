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

/* Reserved and used bytes of pool (cuMemPoolGetAttribute,
 * CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT / USED_MEM_CURRENT). false when the
 * driver cannot answer. */
static bool pool_bytes(uint64_t pool, uint64_t *reserved, uint64_t *used)
{
    PFN_cuMemPoolGetAttribute_v11020 attr =
        VTI_REAL_DRIVER(cuMemPoolGetAttribute, 11020, "cuMemPoolGetAttribute");
    cuuint64_t r = 0, u = 0;
    CUmemoryPool p = (CUmemoryPool)(uintptr_t)pool;
    if (!attr || attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS ||
        attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
    return true;
}

/* The pools stream-ordered allocations took from, sampled at iteration
 * ends: bit d of pool_devices for device d's current pool, and the first
 * MAX_POOLS pools given by name (cudaMallocFromPoolAsync: RAPIDS RMM's
 * cuda_async_memory_resource makes its own), each with its device. The
 * table fills in order and its walks stop at the first free slot, so they
 * cost what the program's pools are. */
#define MAX_POOLS VT_MAX_POOLS
/* A destroyed pool's slot (its device -1): walked past, never sampled, never
 * matched (no pool handle is 1). */
#define POOL_GONE ((uint64_t)1)
static _Atomic uint64_t pool_devices;
static struct {
    _Atomic uint64_t pool; /* 0: free slot */
    _Atomic int device;
    _Atomic uint64_t spare;    /* free reserve at its latest sample */
    _Atomic uint64_t reserved; /* reserved bytes at its latest sample */
} named[MAX_POOLS];

/* The pool of named[i] and, unless device is NULL, its device into
 * *device; 0 for a free slot or past the table (slots fill in order: the
 * first 0 ends it). */
static uint64_t named_pool(int i, int *device)
{
    uint64_t pool = i < MAX_POOLS ? atomic_load_explicit(&named[i].pool, memory_order_acquire) : 0;
    if (device)
        *device = pool ? atomic_load_explicit(&named[i].device, memory_order_relaxed) : -1;
    return pool;
}

/* Each device's pools' free reserve (reserved - used bytes) at their latest
 * samples, for the exit line's fit (iterfit.c; the report's
 * vr_devstate.pool_spare, report/pool.c): the current pool's (its handle in
 * current_handle) and the named pools' in named[]; bit d of spare_sampled
 * once one of device d's was sampled. */
static _Atomic uint64_t current_spare[VTI_MAX_DEVICES], current_handle[VTI_MAX_DEVICES];
static _Atomic uint64_t spare_sampled;
/* The same for the pools' reserved bytes, and the most of each device's
 * sum (vti_pool_reserved_peak). */
static _Atomic uint64_t current_reserved[VTI_MAX_DEVICES], reserved_peak[VTI_MAX_DEVICES];

/* Device d's pools' free reserve (reserved false) or reserved bytes at
 * their latest samples, summed: the current pool's and the named ones' of
 * d, each pool once. */
static uint64_t device_sum(int d, bool reserved)
{
    uint64_t current = atomic_load_explicit(&current_handle[d], memory_order_relaxed), pool;
    uint64_t sum = atomic_load_explicit(reserved ? &current_reserved[d] : &current_spare[d],
                                        memory_order_relaxed);
    int dev;
    for (int i = 0; (pool = named_pool(i, &dev)); i++)
        if (pool != current && dev == d)
            sum += atomic_load_explicit(reserved ? &named[i].reserved : &named[i].spare,
                                        memory_order_relaxed);
    return sum;
}

/* Device d's pools' reserved bytes, summed, kept as its most when above. */
static void reserved_sum(int d)
{
    uint64_t sum = device_sum(d, true),
             peak = atomic_load_explicit(&reserved_peak[d], memory_order_relaxed);
    while (sum > peak &&
           !atomic_compare_exchange_weak_explicit(&reserved_peak[d], &peak, sum,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The sample ev of a pool kept as its device's latest: the current pool's
 * (current: asked as the device's) or a named one's. */
static void keep_spare(const vt_event *ev, bool current)
{
    int d = ev->u.pool.device;
    uint64_t r = ev->u.pool.reserved_bytes, u = ev->u.pool.used_bytes, spare = r > u ? r - u : 0;
    if (d < 0 || d >= VTI_MAX_DEVICES)
        return;
    if (current) {
        atomic_store_explicit(&current_handle[d], ev->u.pool.pool, memory_order_relaxed);
        atomic_store_explicit(&current_spare[d], spare, memory_order_relaxed);
        atomic_store_explicit(&current_reserved[d], r, memory_order_relaxed);
    }
    uint64_t pool;
    for (int i = 0; (pool = named_pool(i, NULL)); i++)
        if (pool == ev->u.pool.pool) {
            atomic_store_explicit(&named[i].spare, spare, memory_order_relaxed);
            atomic_store_explicit(&named[i].reserved, r, memory_order_relaxed);
        }
    reserved_sum(d);
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
    *spare = device_sum(device, false);
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

/* The state of pool (0: device's current one) onto t, when the driver
 * answers and, unless empty, the pool holds memory. */
static void write_sample(vti_thread *t, uint64_t pool, int device, bool empty)
{
    vt_event ev;
    if (device >= 0 && pool_stat(pool, device, &ev) && (empty || ev.u.pool.reserved_bytes))
        write_kept(t, &ev, !pool);
}

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set once a pool found the table full: one note says so (the report
 * cannot tell what is not sampled). */
static _Atomic bool named_full;

static void note_full(void)
{
    if (atomic_load_explicit(&named_full, memory_order_relaxed) ||
        atomic_exchange_explicit(&named_full, true, memory_order_relaxed))
        return;
    char text[160];
    snprintf(text, sizeof text,
             "more than %d stream-ordered pools: the pools past them are sampled only where "
             "their allocations fail",
             MAX_POOLS);
    vt_event ev = {.type = VT_REC_NOTE};
    ev.u.note.text = text;
    vti_session_emit(&ev); /* not vti_emit (api.c): the session is on in every caller */
}

/* Whether pool is in named[] (or the table is full: nothing more is
 * sampled, said once). */
static bool named_has(uint64_t pool)
{
    uint64_t seen;
    int i = 0;
    while ((seen = named_pool(i, NULL)) && seen != pool)
        i++;
    if (!seen && i == MAX_POOLS)
        note_full();
    return seen || i == MAX_POOLS;
}

/* pool into named[] (its device stored before it: readers load the pool
 * first), unless there already or full. */
static void remember_pool(uint64_t pool, int device)
{
    if (named_has(pool))
        return;
    pthread_mutex_lock(&named_lock);
    for (int i = 0; i < MAX_POOLS; i++) {
        uint64_t seen = atomic_load_explicit(&named[i].pool, memory_order_relaxed);
        if (seen == pool)
            break;
        if (!seen) {
            atomic_store_explicit(&named[i].device, device, memory_order_relaxed);
            atomic_store_explicit(&named[i].pool, pool, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&named_lock);
}

void vti_write_pool_sample(vti_thread *t, int device, bool empty)
{
    pthread_mutex_lock(&named_lock); /* no pool is destroyed meanwhile */
    write_sample(t, 0, device, empty);
    uint64_t pool;
    int dev;
    for (int i = 0; (pool = named_pool(i, &dev)); i++)
        if (dev == device)
            write_sample(t, pool, device, empty);
    pthread_mutex_unlock(&named_lock);
}

void vti_pool_destroy_begin(uint64_t pool)
{
    pthread_mutex_lock(&named_lock);
    for (int i = 0; pool && i < MAX_POOLS; i++)
        if (atomic_load_explicit(&named[i].pool, memory_order_relaxed) == pool) {
            atomic_store_explicit(&named[i].device, -1, memory_order_relaxed);
            atomic_store_explicit(&named[i].spare, 0, memory_order_relaxed);
            atomic_store_explicit(&named[i].reserved, 0, memory_order_relaxed);
            atomic_store_explicit(&named[i].pool, POOL_GONE, memory_order_release);
        }
}

void vti_pool_destroy_end(void)
{
    pthread_mutex_unlock(&named_lock);
}

void vti_pool_done(bool ok, uint64_t pool, int (*device)(void))
{
    if (!ok) {
        vti_rec_pool_stat(pool, device);
        return;
    }
    if (!pool || named_has(pool))
        return;
    int d = device();
    if (d >= 0)
        remember_pool(pool, d);
}

void vti_pool_used(uint64_t pool, int device)
{
    if (pool)
        return; /* vti_pool_done */
    uint64_t bit = device >= 0 && device < VTI_MAX_DEVICES ? 1ull << device : 0;
    if (bit && !(atomic_load_explicit(&pool_devices, memory_order_relaxed) & bit))
        atomic_fetch_or(&pool_devices, bit);
}

void vti_pool_iteration_end(const char *name)
{
    uint64_t m = atomic_load_explicit(&pool_devices, memory_order_relaxed);
    uint64_t first = atomic_load_explicit(&named[0].pool, memory_order_relaxed);
    vti_thread *t = (m || first) && !vt_range_is_operator(name) ? vti_thread_get() : NULL;
    if (!t)
        return;
    pthread_mutex_lock(&named_lock); /* no pool is destroyed meanwhile */
    for (; m; m &= m - 1)            /* a pool trimmed to nothing is a sample too */
        write_sample(t, 0, __builtin_ctzll(m), true);
    uint64_t pool;
    int dev;
    for (int i = 0; (pool = named_pool(i, &dev)); i++)
        write_sample(t, pool, dev, true); /* a destroyed one's device is -1: none */
    pthread_mutex_unlock(&named_lock);
    vti_thread_put(t);
}
