/* Stream, context-limit, synchronization, kernel-launch and legacy-name
 * entry points of the simulated driver that real programs call around their
 * memory work. Work completes when it is issued, so waits succeed at once
 * and host callbacks run on the calling thread before the call returns (a
 * real driver runs them on its own thread once preceding work is done; here
 * all of it is done). Stream capture changes what several of them do
 * (driver_capture.h). */
#include "driver_capture.h"
#include "driver_extra.h"
#include "ledger.h"

#include <stdatomic.h>

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

/* The preferred cache configuration (cuda.h, cuCtxGetCacheConfig: "on
 * devices where the L1 cache and shared memory use the same hardware
 * resources, this function returns ... the preferred cache configuration",
 * as on every card the sim models), kept as the limits are. */
static _Atomic int cache_pref = CU_FUNC_CACHE_PREFER_NONE;

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = (CUfunc_cache)atomic_load(&cache_pref);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&cache_pref, (int)config);
    return CUDA_SUCCESS;
}

/* All work has completed when it was issued: nothing to wait for, except
 * the dependencies of stream capture (sim_capture_event_wait: a stream that
 * waits on an event recorded in a capture joins it). CU_EVENT_WAIT_EXTERNAL
 * only during capture. */
CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!hEvent || (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL))
        return CUDA_ERROR_INVALID_VALUE;
    return sim_capture_event_wait(hStream, hEvent, Flags, sim_event_recorded(hEvent));
}

/* Not capturable (cuLaunchHostFunc is): on a capturing stream
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is invalidated. */
CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!callback || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if ((err = sim_capture_refuse(hStream, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL)))
        return err;
    callback(hStream, CUDA_SUCCESS, userData);
    return CUDA_SUCCESS;
}

/* On a capturing stream: a host node, called at each launch of the graph. */
CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_node_op op = {.kind = SIM_NODE_HOST, .u.host = {fn, userData}};
    if (sim_capture_enqueue(hStream, &op, &err))
        return err;
    fn(userData);
    return CUDA_SUCCESS;
}

/* The device of hStream (CUDA 12.8): its context's; the special handles
 * (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) name the current
 * context's streams. */
CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    CUresult err;
    struct sim_device *d = sim_stream_device(hStream, &err);
    if (!d)
        return err;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = d->ordinal;
    return CUDA_SUCCESS;
}

/* Priorities are checked at creation, not kept: every stream has the least
 * priority, 0. */
CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    *priority = 0;
    return CUDA_SUCCESS;
}

/* While a stream of the device captures: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * (its captures are invalidated; sim_capture_ctx_sync). */
CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (d && (err = sim_capture_ctx_sync(d)) == CUDA_SUCCESS)
        sim_sync_device(d);
    return err;
}

CUresult CUDAAPI sim_cuCtxSynchronize_v13000(CUcontext ctx)
{
    CUcontext popped;
    CUresult err = sim_check_init();
    if (err || (err = sim_ctx_check_v13000("cuCtxSynchronize_v2", ctx)))
        return err;
    if (!ctx)
        return cuCtxSynchronize();
    if ((err = cuCtxPushCurrent_v2(ctx)))
        return err;
    err = cuCtxSynchronize();
    cuCtxPopCurrent_v2(&popped);
    return err;
}

/* The simulated device runs no kernels: CUDA_ERROR_NOT_SUPPORTED. On a
 * capturing stream the launch becomes a kernel node (its parameters are not
 * kept: it never runs), which makes every launch of the graph
 * CUDA_ERROR_NOT_SUPPORTED. f NULL: CUDA_ERROR_INVALID_HANDLE; a dimension
 * 0: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
    (void)kernelParams, (void)extra;
    CUresult err = sim_check_init();
    if (err || !sim_stream_device(hStream, &err))
        return err;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_node_op op = {
        .kind = SIM_NODE_KERNEL,
        .u.kernel = {
            f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes}};
    if (sim_capture_enqueue(hStream, &op, &err))
        return err;
    return CUDA_ERROR_NOT_SUPPORTED;
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

/* The CUDA 7.0 ABI's release: as the _v2 one, except that with no
 * reference left it succeeds and does nothing (an H200, driver 580.159.04:
 * three releases after two retains answered 0 each, tests/gpu/probe_context.c;
 * the _v2 one answers CUDA_ERROR_INVALID_CONTEXT there). */
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxRelease");
    CUresult err = cuDevicePrimaryCtxRelease_v2(dev);
    return err == CUDA_ERROR_INVALID_CONTEXT ? CUDA_SUCCESS : err;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    return cuStreamDestroy_v2(hStream);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    return cuEventDestroy_v2(hEvent);
}
