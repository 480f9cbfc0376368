/* Stream-ordered allocation and the default memory pool of the simulated
 * driver, and the stream calls that stream capture changes (stream handles
 * are in driver_stream.c). No work is ever queued, so an allocation or free
 * is complete when the call returns. */
#include "driver_capture.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Destroys a stream (special handles and non-streams:
 * CUDA_ERROR_INVALID_HANDLE); a capturing one leaves its capture first
 * (sim_capture_stream_gone). */
CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    CUresult err = sim_check_init();
    if (err)
        return err;
    if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!sim_stream_device(hStream, &err))
        return err;
    sim_capture_stream_gone(hStream);
    sim_stream_free(hStream);
    return CUDA_SUCCESS;
}

/* A capturing stream cannot be synchronized or queried (its work is not
 * scheduled): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is
 * invalidated (sim_capture_stream_sync). */
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    CUresult err;
    struct sim_device *d = sim_stream_device(hStream, &err);
    if (d && (err = sim_capture_stream_sync(hStream)) == CUDA_SUCCESS)
        sim_sync_device(d);
    return err;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    return sim_capture_stream_sync(hStream);
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    CUresult err;
    uintptr_t p;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!dptr || !pool || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pool->kind != SIM_POOL_DEVICE) { /* not captured: the sim's graphs hold device memory */
        if ((err = sim_capture_refuse(hStream, CUDA_ERROR_NOT_SUPPORTED,
                                      "a host or managed pool's allocation on a capturing "
                                      "stream")) ||
            (err = pool->kind == SIM_POOL_HOST
                       ? sim_host_pool_alloc(pool, bytesize, &p)
                       : (CUresult)sim_alloc_of(pool->dev, bytesize, SIM_MANAGED_MEM, pool, &p)))
            return err;
        *dptr = (CUdeviceptr)p;
        return CUDA_SUCCESS;
    }
    if (sim_gmem_capture_alloc(hStream, pool->dev->ordinal, bytesize, dptr, &err))
        return err; /* an allocation node (driver_graph_mem.c) */
    err = (CUresult)sim_pool_alloc(pool, bytesize, &p);
    if (err == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)p;
    return err;
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    SIM_LEDGER_SCOPE("cuMemAllocFromPoolAsync");
    enum sim_pool_kind kind = pool ? pool->kind : SIM_POOL_DEVICE;
    return (CUresult)vtsim_ledger_fail(kind == SIM_POOL_HOST      ? SIM_LK_PINNED
                                       : kind == SIM_POOL_MANAGED ? SIM_LK_MANAGED
                                                                  : SIM_LK_DEVICE,
                                       kind == SIM_POOL_HOST ? -1
                                       : pool                ? pool->dev->ordinal
                                                             : sim_current_ordinal(),
                                       bytesize, pool_alloc(dptr, bytesize, pool, hStream));
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SIM_LEDGER_SCOPE("cuMemAllocAsync");
    CUresult err;
    struct sim_device *d = sim_stream_device(hStream, &err);
    if (!d)
        return (CUresult)vtsim_ledger_fail(SIM_LK_DEVICE, sim_current_ordinal(), bytesize, err);
    pthread_mutex_lock(&d->lock);
    CUmemoryPool pool = d->current ? d->current : &d->pool;
    pthread_mutex_unlock(&d->lock);
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    SIM_LEDGER_SCOPE("cuMemFreeAsync");
    CUresult err;
    if (!sim_stream_device(hStream, &err) || sim_gmem_capture_free(hStream, dptr, &err))
        return (CUresult)sim_ledger_bad_free(dptr, err); /* else a free node */
    if (sim_host_pool_free((uintptr_t)dptr, &err))
        return err;
    return sim_free_dptr(dptr);
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = &sim_devices[dev].pool;
    return CUDA_SUCCESS;
}

/* The device's current pool: the default one until cuDeviceSetMemPool. */
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    *pool = d->current ? d->current : &d->pool;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    struct sim_device *d = &sim_devices[dev];
    if (!pool || pool->dev != d || pool->destroyed || pool->kind != SIM_POOL_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&d->lock);
    d->current = pool == &d->pool ? NULL : pool;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

/* A host pool (host_track.c): pinned, at CU_MEM_LOCATION_TYPE_HOST (id
 * ignored) or _HOST_NUMA of node 0, the sim's one; or a managed pool
 * (CU_MEM_ALLOCATION_TYPE_MANAGED, CUDA 13) at no location (NONE), the host
 * or a device: its memory on that device, else on the current one. Handle
 * types must be none ("any other values will result in
 * CUDA_ERROR_INVALID_VALUE"). */
static CUresult other_pool_create(CUmemoryPool *pool, const CUmemPoolProps *props,
                                  enum sim_pool_kind kind)
{
    const CUmemLocation *at = &props->location;
    CUresult err;
    if ((at->type == CU_MEM_LOCATION_TYPE_HOST_NUMA && at->id != 0) ||
        props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    if (at->type == CU_MEM_LOCATION_TYPE_DEVICE && (err = sim_check_device(at->id)))
        return err;
    struct sim_device *d =
        at->type == CU_MEM_LOCATION_TYPE_DEVICE ? &sim_devices[at->id] : sim_need_device(&err);
    if (!d)
        return err;
    struct CUmemPoolHandle_st *p = sim_pool_create(d, props->maxSize, kind);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = p;
    return CUDA_SUCCESS;
}

/* A pool of pinned device memory on one device (CUDA Driver API,
 * cuMemPoolCreate): its allocations, reserve, release threshold and trims
 * behave as the default pool's; maxSize (0: the device) bounds its reserve.
 * A pool of pinned host memory (location HOST or HOST_NUMA) and a managed
 * pool: other_pool_create. Other locations and handle types that export
 * memory are refused as not supported. */
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pool || !poolProps)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemLocationType at = poolProps->location.type;
    bool on_host = at == CU_MEM_LOCATION_TYPE_HOST || at == CU_MEM_LOCATION_TYPE_HOST_NUMA;
    if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED &&
        (on_host || at == CU_MEM_LOCATION_TYPE_NONE || at == CU_MEM_LOCATION_TYPE_DEVICE))
        return other_pool_create(pool, poolProps, SIM_POOL_MANAGED);
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (on_host)
        return other_pool_create(pool, poolProps, SIM_POOL_HOST);
    if (at != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult err = sim_check_device(poolProps->location.id);
    if (err)
        return err;
    if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct CUmemPoolHandle_st *p =
        sim_pool_create(&sim_devices[poolProps->location.id], poolProps->maxSize, SIM_POOL_DEVICE);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pool || !pool->created || pool->destroyed)
        return CUDA_ERROR_INVALID_VALUE;
    sim_pool_destroy(pool);
    return CUDA_SUCCESS;
}

/* A pool handle fn may use: NULL is CUDA_ERROR_INVALID_VALUE; a destroyed
 * pool's says so on stderr and raises SIGSEGV. The driver's reference
 * makes such a use undefined (the handle's resources are released); the
 * preload sampled a pool the program had destroyed at a later failure, a
 * crash in the sim's CI build and nothing in another, before the handle was
 * kept to be told. */
static CUresult live_pool(const char *fn, CUmemoryPool pool)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (__atomic_load_n(&pool->destroyed, __ATOMIC_ACQUIRE)) {
        fprintf(stderr,
                "vramtrace-sim: %s given the destroyed pool %p: a real driver may crash here\n", fn,
                (void *)pool);
        raise(SIGSEGV);
    }
    return CUDA_SUCCESS;
}

/* Attributes: release threshold (bytes, cuuint64_t), reserved/used current
 * and high-water marks (cuuint64_t; setting a high mark to 0 resets it),
 * the reuse policies (int, always enabled). */
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    if (sim_check_init())
        return sim_check_init();
    if (live_pool("cuMemPoolSetAttribute", pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool->dev->lock);
    CUresult err = CUDA_SUCCESS;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        pool->release_threshold = *(cuuint64_t *)value;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        pool->reserved_high = pool->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        pool->used_high = pool->used;
        break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        break;
    default:
        err = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool->dev->lock);
    return err;
}

static cuuint64_t pool_value(CUmemoryPool pool, CUmemPool_attribute attr, int *ok)
{
    *ok = 1;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        return pool->release_threshold;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        return pool->reserved;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        return pool->reserved_high;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        return pool->used;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        return pool->used_high;
    default:
        *ok = 0;
        return 0;
    }
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    int ok;
    if (sim_check_init())
        return sim_check_init();
    if (live_pool("cuMemPoolGetAttribute", pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
        attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
        attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
        *(int *)value = 1;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&pool->dev->lock);
    cuuint64_t v = pool_value(pool, attr, &ok);
    pthread_mutex_unlock(&pool->dev->lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value = v;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    sim_pool_trim(pool, minBytesToKeep);
    return CUDA_SUCCESS;
}
