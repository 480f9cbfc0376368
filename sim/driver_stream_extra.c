/* Stream, context-limit and legacy-name entry points of the simulated driver
 * that real programs call around their memory work. Work completes when it
 * is issued, so waits succeed at once and host callbacks run on the calling
 * thread before the call returns (a real driver runs them on its own thread
 * once preceding work is done; here all of it is done). */
#include "driver_common.h"
#include "driver_extra.h"
#include "ledger.h"

/* cuCtxSetLimit values; defaults are a real driver's (cuda.h, CUlimit:
 * stack 1 KiB, printf FIFO 1 MiB, malloc heap 8 MiB, runtime sync depth 2,
 * pending launches 2048, L2 fetch granularity 64 B, persisting L2 0). */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t limits[CU_LIMIT_MAX] = {1024, 1 << 20, 8 << 20, 2, 2048, 64, 0};

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    pthread_mutex_lock(&limit_lock);
    limits[limit] = value;
    pthread_mutex_unlock(&limit_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    pthread_mutex_lock(&limit_lock);
    *pvalue = limits[limit];
    pthread_mutex_unlock(&limit_lock);
    return CUDA_SUCCESS;
}

/* Priorities 0 (least) to -5 (greatest), as deviceQuery shows on these cards. */
CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    (void)priority; /* streams are not scheduled */
    return cuStreamCreate(phStream, flags);
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    return (unsigned)config <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* All work has completed when it was issued: nothing to wait for. */
CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    return hEvent && (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) == 0 ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!callback || flags)
        return CUDA_ERROR_INVALID_VALUE;
    callback(hStream, CUDA_SUCCESS, userData);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    fn(userData);
    return CUDA_SUCCESS;
}

/* Primary-context flags are accepted and not modelled. */
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    (void)flags;
    return sim_check_device(dev);
}

/* The names before their _v2 revisions behave as the _v2 ones here. */
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxRelease");
    return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    return cuStreamDestroy_v2(hStream);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    return cuEventDestroy_v2(hEvent);
}
