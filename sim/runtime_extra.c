/* Runtime entry points real programs use besides memory allocation: driver
 * entry-point queries, context limits and cache preference, stream waits and
 * host callbacks, peer access and IPC queries, 2D copies (graphs: runtime_graph.c). Driver
 * functions beyond the runtime's core set are fetched here with cuGetProcAddress_v2, as the real
 * runtime does. Work completes when issued (the device is simulated), so waits succeed at once and
 * host callbacks run on the calling thread before the call returns. */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static pthread_once_t gpa_once = PTHREAD_ONCE_INIT;
static gpa_fn gpa;

static void load_gpa(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
}

/* cuGetProcAddress_v2 of the driver the runtime loaded, or NULL. */
static gpa_fn driver_gpa(void)
{
    if (rt_load() != cudaSuccess)
        return NULL;
    pthread_once(&gpa_once, load_gpa);
    return gpa;
}

/* One driver function by base name in the variant cuda.h declares under
 * that name (rt_proto_version), or NULL. */
static void *driver_fn(const char *name)
{
    void *fn = NULL;
    gpa_fn g = driver_gpa();
    CUdriverProcAddressQueryResult st;
    if (g && g(name, &fn, rt_proto_version(name), 0, &st) != CUDA_SUCCESS)
        fn = NULL;
    return fn;
}

/* The driver's cuGetProcAddress_v2 at cudaVersion; statuses and errors keep
 * their numbers (cudaDriverEntryPointQueryResult mirrors
 * CUdriverProcAddressQueryResult, cudaErrorSymbolNotFound is
 * CUDA_ERROR_NOT_FOUND). */
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    gpa_fn g = driver_gpa();
    if (!g)
        return rt_ret(rt_load() ? rt_load() : cudaErrorInsufficientDriver);
    if (!symbol || !funcPtr)
        return rt_ret(cudaErrorInvalidValue);
    CUresult r = g(symbol, funcPtr, (int)cudaVersion, flags, &st);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)st;
    /* A symbol the driver lacks is success with funcPtr NULL and the status
     * cudaDriverEntryPointSymbolNotFound (CUDA Runtime API docs,
     * cudaGetDriverEntryPointByVersion); PyTorch's c10 relies on it. */
    return r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : rt_ret(rt_err(r));
}

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

/* The current context's limits and cache preference: the driver's
 * cuCtxSetLimit / cuCtxGetLimit / cuCtxSetCacheConfig / cuCtxGetCacheConfig,
 * to which the CUDA Runtime API reference refers them (cudaLimit and
 * cudaFuncCache have CUlimit's and CUfunc_cache's values). */
_Static_assert((int)cudaLimitMallocHeapSize == (int)CU_LIMIT_MALLOC_HEAP_SIZE &&
                   (int)cudaLimitPersistingL2CacheSize == (int)CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
               "cudaLimit is CUlimit");
_Static_assert((int)cudaFuncCachePreferEqual == (int)CU_FUNC_CACHE_PREFER_EQUAL,
               "cudaFuncCache is CUfunc_cache");

cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    FORWARD(rt_drv.cuCtxSetLimit((CUlimit)limit, value));
}

cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
    FORWARD(rt_drv.cuCtxGetLimit(pValue, (CUlimit)limit));
}

cudaError_t CUDARTAPI cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
    FORWARD(rt_drv.cuCtxSetCacheConfig((CUfunc_cache)cacheConfig));
}

cudaError_t CUDARTAPI cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
    FORWARD(rt_drv.cuCtxGetCacheConfig((CUfunc_cache *)pCacheConfig));
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags)
{
    CUresult (*wait)(CUstream, CUevent, unsigned int) = driver_fn("cuStreamWaitEvent");
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    if (!wait)
        return rt_ret(cudaErrorInsufficientDriver);
    return rt_ret(rt_err(wait((CUstream)stream, (CUevent)event, flags)));
}

cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    CUresult (*launch)(CUstream, CUhostFn, void *) = driver_fn("cuLaunchHostFunc");
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    if (!launch)
        return rt_ret(cudaErrorInsufficientDriver);
    return rt_ret(rt_err(launch((CUstream)stream, (CUhostFn)fn, userData)));
}

/* A runtime callback and its data, called through the driver's callback
 * type (the driver calls it before cuStreamAddCallback returns). */
struct rt_callback {
    cudaStreamCallback_t fn;
    void *data;
};

static void CUDA_CB call_runtime_callback(CUstream s, CUresult status, void *p)
{
    const struct rt_callback *cb = p;
    cb->fn(s, rt_err(status), cb->data);
}

/* The driver's cuStreamAddCallback (refused on a capturing stream); the
 * callback gets the runtime's own stream handle and cudaSuccess. */
cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void *userData, unsigned int flags)
{
    struct rt_callback cb = {callback, userData};
    cudaError_t e = rt_ready();
    if (e || !callback)
        return rt_ret(e ? e : cudaErrorInvalidValue);
    return rt_ret(rt_err(rt_drv.cuStreamAddCallback(stream, call_runtime_callback, &cb, flags)));
}

cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    CUresult (*can)(int *, CUdevice, CUdevice) = driver_fn("cuDeviceCanAccessPeer");
    if (!can)
        return rt_ret(rt_load() ? rt_load() : cudaErrorInsufficientDriver);
    return rt_ret(rt_err(can(canAccessPeer, device, peerDevice)));
}

/* No simulated device can access another's memory (cuDeviceCanAccessPeer). */
cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    int n = 0;
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    cudaGetDeviceCount(&n);
    if (peerDevice < 0 || peerDevice >= n)
        return rt_ret(cudaErrorInvalidDevice);
    return rt_ret(flags ? cudaErrorInvalidValue : cudaErrorPeerAccessUnsupported);
}

cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peerDevice)
{
    (void)peerDevice;
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : cudaErrorPeerAccessNotEnabled);
}

cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    CUresult (*bus)(char *, int, CUdevice) = driver_fn("cuDeviceGetPCIBusId");
    if (!bus)
        return rt_ret(rt_load() ? rt_load() : cudaErrorInsufficientDriver);
    return rt_ret(rt_err(bus(pciBusId, len, device)));
}

/* IPC is not modelled: cudaErrorNotSupported, as where a real system has
 * none (the driver's cuIpc* answer the same). */
cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    (void)handle, (void)devPtr;
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : cudaErrorNotSupported);
}

cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
                                           unsigned int flags)
{
    (void)devPtr, (void)handle, (void)flags;
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : cudaErrorNotSupported);
}

cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void *devPtr)
{
    (void)devPtr;
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : cudaErrorNotSupported);
}

/* Rows of `width` bytes, pitches at least `width` (cudaErrorInvalidPitchValue
 * otherwise, as documented for cudaMemcpy2D); both sides as unified
 * addresses (device memory is host memory). The driver's cuMemcpy2D, or
 * cuMemcpy2DAsync on stream when async (captured on a capturing stream). */
static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                          size_t height, enum cudaMemcpyKind kind, bool async, cudaStream_t stream)
{
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    if ((unsigned)kind > cudaMemcpyDefault)
        return rt_ret(cudaErrorInvalidMemcpyDirection);
    if (height > 1 && (dpitch < width || spitch < width))
        return rt_ret(cudaErrorInvalidPitchValue);
    if (width && height && (!dst || !src))
        return rt_ret(cudaErrorInvalidValue);
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                       .srcDevice = (CUdeviceptr)src,
                       .srcPitch = spitch,
                       .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                       .dstDevice = (CUdeviceptr)dst,
                       .dstPitch = dpitch,
                       .WidthInBytes = width,
                       .Height = height};
    return rt_ret(rt_err(async ? rt_drv.cuMemcpy2DAsync(&c, stream) : rt_drv.cuMemcpy2D(&c)));
}

cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return copy2d(dst, dpitch, src, spitch, width, height, kind, false, NULL);
}

cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    return copy2d(dst, dpitch, src, spitch, width, height, kind, true, stream);
}
