/* The runtime entry points PyTorch's CUDA build (torch 2.15, cu13 wheel)
 * binds at load: libtorch_cuda.so, libc10_cuda.so, libtorch_python.so and
 * libtorch_nvshmem.so import them under the version node libcudart.so.13, and
 * Python loads them with RTLD_NOW, so every one must exist before `import
 * torch` can finish (readelf --dyn-syms on the wheel's torch/lib/ *.so).
 *
 * Streams, events, capture state, peer copies and host callbacks have their
 * real semantics on a device where every copy completes at once (ordering is
 * trivially kept). Graphs, IPC, libraries, symbols, occupancy and cooperative
 * launches return cudaErrorNotSupported, the documented error for "operation
 * not supported on this device". Kept in its own file so that other branches
 * adding generic entry points can dedupe against this list. */
#define _GNU_SOURCE
#include "runtime_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Thread-local capture mode (cudaThreadExchangeStreamCaptureMode). */
static __thread enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* The stream priority range a CUDA 12/13 driver reports on Turing and later
 * (cudaDeviceGetStreamPriorityRange: least 0, greatest -5). */
enum { PRIO_LEAST = 0, PRIO_GREATEST = -5 };

cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    if (leastPriority)
        *leastPriority = PRIO_LEAST;
    if (greatestPriority)
        *greatestPriority = PRIO_GREATEST;
    return cudaSuccess;
}

/* Priorities do not change the order of work that completes at once: the
 * stream is an ordinary one; the priority is checked, not kept. */
cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                   int priority)
{
    (void)priority;
    return cudaStreamCreateWithFlags(pStream, flags);
}

/* Every stream reports the least priority (0, the default's). */
cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    cudaError_t e = cudaStreamQuery(hStream);
    if (e)
        return e;
    if (!priority)
        return rt_ret(cudaErrorInvalidValue);
    *priority = PRIO_LEAST;
    return cudaSuccess;
}

/* The event's work has completed when it was recorded, so the wait is
 * satisfied at once; the event must be valid. */
cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventWaitExternal)
        return rt_ret(cudaErrorInvalidValue);
    cudaError_t e = cudaStreamQuery(stream);
    if (e)
        return e;
    e = cudaEventQuery(event);
    return e == cudaErrorNotReady ? cudaSuccess : e;
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return rt_ret(cudaErrorInvalidValue);
    return cudaEventRecord(event, stream);
}

/* No stream is ever capturing: capture itself is not supported. */
cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *pCaptureStatus)
{
    cudaError_t e = cudaStreamQuery(stream);
    if (e && e != cudaErrorNotReady)
        return e;
    if (!pCaptureStatus)
        return rt_ret(cudaErrorInvalidValue);
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamGetCaptureInfo(cudaStream_t stream,
                                               enum cudaStreamCaptureStatus *captureStatus_out,
                                               unsigned long long *id_out, cudaGraph_t *graph_out,
                                               const cudaGraphNode_t **dependencies_out,
                                               const cudaGraphEdgeData **edgeData_out,
                                               size_t *numDependencies_out)
{
    (void)id_out, (void)graph_out, (void)dependencies_out, (void)edgeData_out;
    if (numDependencies_out)
        *numDependencies_out = 0;
    return cudaStreamIsCapturing(stream, captureStatus_out);
}

cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    if (!mode || *mode > cudaStreamCaptureModeRelaxed)
        return rt_ret(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* Host functions run when the stream's earlier work is done: at once here. */
cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    cudaError_t e = cudaStreamQuery(stream);
    if (e)
        return e;
    if (!fn)
        return rt_ret(cudaErrorInvalidValue);
    fn(userData);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void *userData, unsigned int flags)
{
    cudaError_t e = cudaStreamQuery(stream);
    if (e)
        return e;
    if (!callback || flags)
        return rt_ret(cudaErrorInvalidValue);
    callback(stream, cudaSuccess, userData);
    return cudaSuccess;
}

/* Simulated devices share no peer mappings. */
cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (!canAccessPeer || device < 0 || device >= n || peerDevice < 0 || peerDevice >= n)
        return rt_ret(cudaErrorInvalidDevice);
    *canAccessPeer = 0;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    (void)peerDevice, (void)flags;
    return rt_ret(cudaErrorPeerAccessUnsupported);
}

/* "domain:bus:device.function" from the PCI attributes, as nvidia-smi
 * prints it (cudaDeviceGetPCIBusId: at most len bytes with the NUL). */
cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    int dom = 0, bus = 0, dev = 0;
    cudaError_t e = cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, device);
    if (!e)
        e = cudaDeviceGetAttribute(&dom, cudaDevAttrPciDomainId, device);
    if (!e)
        e = cudaDeviceGetAttribute(&dev, cudaDevAttrPciDeviceId, device);
    if (e)
        return e;
    if (!pciBusId || len <= 0)
        return rt_ret(cudaErrorInvalidValue);
    snprintf(pciBusId, (size_t)len, "%08X:%02X:%02X.0", dom, bus, dev);
    return cudaSuccess;
}

/* Device memory is one address space (host memory): a peer copy is a copy. */
cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                          size_t count, cudaStream_t stream)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (dstDevice < 0 || dstDevice >= n || srcDevice < 0 || srcDevice >= n)
        return rt_ret(cudaErrorInvalidDevice);
    return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, stream);
}

/* Row by row (cudaMemcpy2D's rule: width <= both pitches). */
cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    if (width > dpitch || width > spitch)
        return rt_ret(cudaErrorInvalidPitchValue);
    for (size_t r = 0; r < height; r++) {
        cudaError_t e = cudaMemcpyAsync((char *)dst + r * dpitch, (const char *)src + r * spitch,
                                        width, kind, stream);
        if (e)
            return e;
    }
    return cudaSuccess;
}

/* No CUDA graph ever exists, so graph memory is zero and the high watermark
 * reset has nothing to do. */
cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void *value)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    if (device < 0 || device >= n)
        return rt_ret(cudaErrorInvalidDevice);
    if (!value || attr < cudaGraphMemAttrUsedMemCurrent || attr > cudaGraphMemAttrReservedMemHigh)
        return rt_ret(cudaErrorInvalidValue);
    *(cuuint64_t *)value = 0;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void *value)
{
    if (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh)
        return rt_ret(cudaErrorInvalidValue);
    cuuint64_t ignored;
    cudaError_t e = cudaDeviceGetGraphMemAttribute(device, attr, &ignored);
    return e ? e : value ? cudaSuccess : rt_ret(cudaErrorInvalidValue);
}

/* Each pool is accessible from its own device, the only one that exists for
 * it: access descriptors naming that device succeed, others are refused. */
cudaError_t CUDARTAPI cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                           const struct cudaMemAccessDesc *descList, size_t count)
{
    if (!memPool || (count && !descList))
        return rt_ret(cudaErrorInvalidValue);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e)
        return e;
    for (size_t i = 0; i < count; i++)
        if (descList[i].location.type != cudaMemLocationTypeDevice || descList[i].location.id < 0 ||
            descList[i].location.id >= n)
            return rt_ret(cudaErrorInvalidDevice);
    return cudaSuccess;
}

/* The driver's own cuGetProcAddress_v2 (through dlsym, as the runtime loads
 * every entry point), after the runtime has loaded the driver. */
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                       unsigned int cudaVersion,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *st)
{
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    if (!symbol || !funcPtr)
        return rt_ret(cudaErrorInvalidValue);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (h)
        dlclose(h);
    if (!gpa)
        return rt_ret(cudaErrorInsufficientDriver);
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = gpa(symbol, funcPtr, (int)cudaVersion, flags, &q);
    if (st)
        *st = (enum cudaDriverEntryPointQueryResult)q;
    return r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : rt_ret(rt_err(r));
}

/* No profiler is attached; starting and stopping one is a no-op. */
cudaError_t CUDARTAPI cudaProfilerStart(void)
{
    return rt_ret(rt_ready());
}

cudaError_t CUDARTAPI cudaProfilerStop(void)
{
    return rt_ret(rt_ready());
}
