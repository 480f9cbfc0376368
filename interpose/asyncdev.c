/* asyncdev.c: the device a stream-ordered allocation takes its memory on.
 * Not the calling thread's current device (CUDA Driver API):
 *   - cuMemAllocAsync: "The allocation comes from the memory pool current
 *     to the stream's device" (cuDeviceSetMemPool);
 *   - cuMemAllocFromPoolAsync: "The specified memory pool may be from a
 *     device different than that of the specified hStream": the pool's.
 * A stream's device is the driver's answer (cuStreamGetDevice, CUDA 12.8);
 * a pool's is remembered from its creation (cuMemPoolCreate, its
 * properties' location), else found among the devices' default and current
 * pools, else read off the new pointer. Where the driver cannot answer (a
 * stream's device before driver 12.8), the current device stands (what was
 * recorded before). interpose/README.md,
 * "Stream-ordered allocations". */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "vti_internal.h"

/* The device of the stream-ordered allocation this thread is recording
 * (vti_async_target); read by vti_async_device. */
static VTI_TLS int tl_async_device;

/* The device whose default or current pool pool is, or -1. */
static int device_pool_of(uint64_t pool)
{
    PFN_cuDeviceGetCount_v2000 count = VTI_REAL_DRIVER(cuDeviceGetCount, 2000, "cuDeviceGetCount");
    PFN_cuDeviceGetDefaultMemPool_v11020 def =
        VTI_REAL_DRIVER(cuDeviceGetDefaultMemPool, 11020, "cuDeviceGetDefaultMemPool");
    PFN_cuDeviceGetMemPool_v11020 cur =
        VTI_REAL_DRIVER(cuDeviceGetMemPool, 11020, "cuDeviceGetMemPool");
    int n = 0, found = -1;
    if (!count || count(&n) != CUDA_SUCCESS)
        return -1;
    for (int d = 0; d < n && found < 0; d++) {
        CUmemoryPool a = NULL, b = NULL;
        if ((def && def(&a, d) == CUDA_SUCCESS && (uint64_t)(uintptr_t)a == pool) ||
            (cur && cur(&b, d) == CUDA_SUCCESS && (uint64_t)(uintptr_t)b == pool))
            found = d;
    }
    return found;
}

/* The device of device memory at p (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL),
 * or -1. */
static int pointer_device(uint64_t p)
{
    PFN_cuPointerGetAttribute_v4000 attr =
        VTI_REAL_DRIVER(cuPointerGetAttribute, 4000, "cuPointerGetAttribute");
    int d = -1;
    if (!p || !attr ||
        attr(&d, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p) != CUDA_SUCCESS)
        return -1;
    return d;
}

/* The device of stream: the current one for the special handles (NULL,
 * CU_STREAM_LEGACY, CU_STREAM_PER_THREAD: the current context's streams,
 * the runtime's cudaStreamLegacy and cudaStreamPerThread the same values),
 * else the driver's answer; -1 when it has none. */
static int stream_device(uint64_t stream, int (*current)(void))
{
    /* looked up once, found or not (a driver before 12.8 has none: each
     * call would ask cuGetProcAddress again); a stream-ordered call made
     * it through the driver, which is loaded by then */
    static _Atomic(PFN_cuStreamGetDevice_v12080) fn;
    static atomic_bool looked;
    CUdevice d;
    if (stream <= (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        return current();
    if (!atomic_load_explicit(&looked, memory_order_acquire)) {
        atomic_store(&fn, VTI_REAL_DRIVER(cuStreamGetDevice, 12080, "cuStreamGetDevice"));
        atomic_store_explicit(&looked, true, memory_order_release);
    }
    PFN_cuStreamGetDevice_v12080 f = atomic_load(&fn);
    return f && f((CUstream)(uintptr_t)stream, &d) == CUDA_SUCCESS ? d : -1;
}

/* The device of pool (found pools are remembered), or -1 (a host pool's
 * included). */
static int pool_device(uint64_t pool, uint64_t p)
{
    enum vt_kind kind = vti_pool_kind(pool);
    if (kind == VT_KIND_HOST_PINNED)
        return -1; /* its memory is the host's: the stream's device is its context's */
    if (kind == VT_KIND_MANAGED) { /* wherever the driver put it, else the pool's device */
        int d = pointer_device(p);
        return d >= 0 ? d : vti_pool_known_device(pool);
    }
    int d = vti_pool_known_device(pool);
    if (d < 0 && ((d = device_pool_of(pool)) >= 0 || (d = pointer_device(p)) >= 0))
        vti_pool_know(pool, d);
    return d;
}

void vti_async_target(uint64_t stream, uint64_t pool, uint64_t p, int (*current)(void))
{
    vti_enter(); /* the queries are vramtrace's own calls */
    int d = pool ? pool_device(pool, p) : -1;
    if (d < 0)
        d = stream_device(stream, current);
    vti_leave();
    tl_async_device = d >= 0 ? d : current();
}

int vti_async_device(void)
{
    return tl_async_device;
}
