/* The runtime entry points PyTorch's CUDA build (torch 2.15, cu13 wheel)
 * binds at load: libtorch_cuda.so, libc10_cuda.so, libtorch_python.so and
 * libtorch_nvshmem.so import them under the version node libcudart.so.13, and
 * Python loads them with RTLD_NOW, so every one must exist before `import
 * torch` can finish (readelf --dyn-syms on the wheel's torch/lib/ *.so).
 *
 * Streams, events, peer copies and host callbacks have their real semantics
 * on a device where every copy completes at once (ordering is trivially
 * kept); stream capture and graphs are in runtime_graph.c. Graph node
 * construction, IPC, libraries, symbols, occupancy and cooperative launches
 * return cudaErrorNotSupported, the documented error for "operation
 * not supported on this device". Kept in its own file so that other branches
 * adding generic entry points can dedupe against this list. */
#define _GNU_SOURCE
#include "runtime_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

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

/* Every stream reports the least priority (0, the default's; the driver's
 * cuStreamGetPriority). */
cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    FORWARD(rt_drv.cuStreamGetPriority(hStream, priority));
}

/* cudaEventRecordExternal: an event-record node, only during capture. */
cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags)
{
    FORWARD(rt_drv.cuEventRecordWithFlags(event, stream, flags));
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

/* No profiler is attached; starting and stopping one is a no-op. */
cudaError_t CUDARTAPI cudaProfilerStart(void)
{
    return rt_ret(rt_ready());
}

cudaError_t CUDARTAPI cudaProfilerStop(void)
{
    return rt_ret(rt_ready());
}
