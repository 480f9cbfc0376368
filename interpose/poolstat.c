/* poolstat.c: the state of a memory pool at a failed stream-ordered
 * allocation, before a memory sample and at an NVTX iteration's end
 * (VT_REC_POOL_STAT, docs/trace.md). Asked of the driver, not the
 * runtime: a runtime query that failed would overwrite the runtime's last
 * error, which the program reads after its failed cudaMallocAsync
 * (cudaGetLastError), and a cudaMemPool_t is a CUmemoryPool (driver_types.h),
 * so one path serves both levels. */
#include <cuda.h>
#include <stdint.h>

#include "vti_internal.h"

typedef CUresult (*get_pool_fn)(CUmemoryPool *, CUdevice);
typedef CUresult (*pool_attr_fn)(CUmemoryPool, CUmemPool_attribute, void *);

/* The pool that an allocation without one takes from: the current pool of
 * the device (CUDA Runtime API, cudaDeviceSetMemPool: "Unless a mempool is
 * specified in the cudaMallocAsync call, cudaMallocAsync allocates from the
 * current mempool of the provided stream's device"). 0 when unknown. */
static uint64_t current_pool(int device)
{
    get_pool_fn get = (get_pool_fn)vti_real_driver("cuDeviceGetMemPool", "cuDeviceGetMemPool");
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
    pool_attr_fn attr =
        (pool_attr_fn)vti_real_driver("cuMemPoolGetAttribute", "cuMemPoolGetAttribute");
    cuuint64_t r = 0, u = 0;
    CUmemoryPool p = (CUmemoryPool)(uintptr_t)pool;
    if (!attr || attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS ||
        attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
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

void vti_rec_pool_stat(uint64_t pool, int (*device)(void))
{
    vt_event ev;
    vti_thread *t = pool_stat(pool, device(), &ev) ? vti_thread_get() : NULL;
    if (!t)
        return;
    vti_write(t, &ev);
    vti_thread_put(t);
}

/* The state of device's current pool onto t, when the driver answers and,
 * unless empty, the pool holds memory. */
static void write_sample(vti_thread *t, int device, bool empty)
{
    vt_event ev;
    if (device >= 0 && pool_stat(0, device, &ev) && (empty || ev.u.pool.reserved_bytes))
        vti_write(t, &ev);
}

void vti_write_pool_sample(vti_thread *t, int device)
{
    write_sample(t, device, false);
}

/* Bit d: a stream-ordered allocation took from device d's current pool
 * (VTI_MAX_DEVICES bits at most). */
static _Atomic uint64_t pool_devices;

void vti_pool_done(bool ok, uint64_t pool, int (*device)(void))
{
    if (!ok) {
        vti_rec_pool_stat(pool, device);
        return;
    }
    int d = pool ? -1 : device();
    uint64_t bit = d >= 0 && d < VTI_MAX_DEVICES ? 1ull << d : 0;
    if (bit && !(atomic_load_explicit(&pool_devices, memory_order_relaxed) & bit))
        atomic_fetch_or(&pool_devices, bit);
}

void vti_pool_iteration_end(const char *name)
{
    uint64_t m = atomic_load_explicit(&pool_devices, memory_order_relaxed);
    vti_thread *t = m && !vt_range_is_operator(name) ? vti_thread_get() : NULL;
    if (!t)
        return;
    for (; m; m &= m - 1) /* a pool trimmed to nothing is a sample too */
        write_sample(t, __builtin_ctzll(m), true);
    vti_thread_put(t);
}
