/* The simulated CUDA runtime (libcudart.so.13): the memory subset, streams,
 * events, device properties, and kernel-launch entry points that fail
 * cleanly. Every call forwards to the driver (runtime_device.c loads it);
 * all accounting lives there. */
#include "runtime_internal.h"

#include <stdio.h>
#include <string.h>

/* cudaMalloc(&p, 0) succeeds with p = NULL, unlike cuMemAlloc. */
cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
    RT_LEDGER_SCOPE("cudaMalloc", "device", size);
    cudaError_t e = rt_ready();
    if (e || !devPtr)
        return rt_ret(e ? e : cudaErrorInvalidValue);
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    FORWARD(rt_drv.cuMemAlloc((CUdeviceptr *)devPtr, size));
}

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
    RT_LEDGER_SCOPE("cudaFree", NULL, 0);
    FORWARD(rt_drv.cuMemFree((CUdeviceptr)devPtr));
}

cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    RT_LEDGER_SCOPE("cudaMallocManaged", "managed", size);
    FORWARD(rt_drv.cuMemAllocManaged((CUdeviceptr *)devPtr, size, flags));
}

cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    RT_LEDGER_SCOPE("cudaMallocPitch", "device", width * height);
    FORWARD(rt_drv.cuMemAllocPitch((CUdeviceptr *)devPtr, pitch, width, height, 4));
}

/* One pitched block of pitch * height * depth bytes (cudaMallocPitch's rule). */
cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    RT_LEDGER_SCOPE("cudaMalloc3D", "device", extent.width * extent.height * extent.depth);
    size_t pitch = 0;
    void *p = NULL;
    if (!pitchedDevPtr || extent.depth == 0 || extent.height > SIZE_MAX / extent.depth)
        return rt_ret(cudaErrorInvalidValue);
    cudaError_t e = cudaMallocPitch(&p, &pitch, extent.width, extent.height * extent.depth);
    if (e == cudaSuccess)
        *pitchedDevPtr = (struct cudaPitchedPtr){p, pitch, extent.width, extent.height};
    return e;
}

cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
    RT_LEDGER_SCOPE("cudaMallocHost", "host_pinned", size);
    FORWARD(rt_drv.cuMemAllocHost(ptr, size));
}

cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    RT_LEDGER_SCOPE("cudaHostAlloc", "host_pinned", size);
    FORWARD(rt_drv.cuMemHostAlloc(pHost, size, flags));
}

cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
    RT_LEDGER_SCOPE("cudaFreeHost", NULL, 0);
    cudaError_t e = rt_ready();
    if (e || !ptr)
        return rt_ret(e);
    FORWARD(rt_drv.cuMemFreeHost(ptr));
}

cudaError_t CUDARTAPI cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    FORWARD(rt_drv.cuMemHostGetDevicePointer((CUdeviceptr *)pDevice, pHost, flags));
}

cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    RT_LEDGER_SCOPE("cudaMallocAsync", "device", size);
    FORWARD(rt_drv.cuMemAllocAsync((CUdeviceptr *)devPtr, size, hStream));
}

cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    RT_LEDGER_SCOPE("cudaFreeAsync", NULL, 0);
    FORWARD(rt_drv.cuMemFreeAsync((CUdeviceptr)devPtr, hStream));
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream)
{
    RT_LEDGER_SCOPE("cudaMallocFromPoolAsync", "device", size);
    FORWARD(rt_drv.cuMemAllocFromPoolAsync((CUdeviceptr *)ptr, size, memPool, stream));
}

cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    FORWARD(rt_drv.cuDeviceGetDefaultMemPool(memPool, device));
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    FORWARD(rt_drv.cuDeviceGetMemPool(memPool, device));
}

/* cudaMemPoolAttr values equal CUmemPool_attribute's. */
cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void *value)
{
    FORWARD(rt_drv.cuMemPoolSetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void *value)
{
    FORWARD(rt_drv.cuMemPoolGetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    FORWARD(rt_drv.cuMemPoolTrimTo(memPool, minBytesToKeep));
}

cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    FORWARD(rt_drv.cuDeviceSetMemPool(device, memPool));
}

/* cudaMemPoolProps as the driver's CUmemPoolProps (the same fields). */
cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t *memPool,
                                        const struct cudaMemPoolProps *poolProps)
{
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    if (poolProps) {
        p.allocType = (CUmemAllocationType)poolProps->allocType;
        p.handleTypes = (CUmemAllocationHandleType)poolProps->handleTypes;
        p.location.type = (CUmemLocationType)poolProps->location.type;
        p.location.id = poolProps->location.id;
        p.maxSize = poolProps->maxSize;
    }
    FORWARD(rt_drv.cuMemPoolCreate(memPool, poolProps ? &p : NULL));
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    FORWARD(rt_drv.cuMemPoolDestroy(memPool));
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total)
{
    FORWARD(rt_drv.cuMemGetInfo(free, total));
}

static int bad_kind(enum cudaMemcpyKind kind)
{
    return (unsigned)kind > cudaMemcpyDefault;
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (bad_kind(kind))
        return rt_ret(cudaErrorInvalidMemcpyDirection);
    FORWARD(rt_drv.cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, count));
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (bad_kind(kind))
        return rt_ret(cudaErrorInvalidMemcpyDirection);
    FORWARD(rt_drv.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, count, stream));
}

cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value, size_t count)
{
    FORWARD(rt_drv.cuMemsetD8((CUdeviceptr)devPtr, (unsigned char)value, count));
}

cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    FORWARD(rt_drv.cuMemsetD8Async((CUdeviceptr)devPtr, (unsigned char)value, count, stream));
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream)
{
    FORWARD(rt_drv.cuStreamCreate(pStream, 0));
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    FORWARD(rt_drv.cuStreamCreate(pStream, flags));
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
    FORWARD(rt_drv.cuStreamDestroy(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
    FORWARD(rt_drv.cuStreamSynchronize(stream));
}

cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream)
{
    FORWARD(rt_drv.cuStreamQuery(stream));
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event)
{
    FORWARD(rt_drv.cuEventCreate(event, 0));
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    FORWARD(rt_drv.cuEventCreate(event, flags));
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event)
{
    FORWARD(rt_drv.cuEventDestroy(event));
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    FORWARD(rt_drv.cuEventRecord(event, stream));
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event)
{
    FORWARD(rt_drv.cuEventSynchronize(event));
}

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event)
{
    FORWARD(rt_drv.cuEventQuery(event));
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    FORWARD(rt_drv.cuEventElapsedTime(ms, start, end));
}

/* cudaMemoryTypeUnregistered for addresses the device does not know. */
cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                               const void *ptr)
{
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned type = 0;
    int ordinal = -2, managed = 0;
    void *data[] = {&type, &ordinal, &managed};
    cudaError_t e = rt_ready();
    if (e || !attributes)
        return rt_ret(e ? e : cudaErrorInvalidValue);
    e = rt_err(rt_drv.cuPointerGetAttributes(3, which, data, (CUdeviceptr)ptr));
    if (e)
        return rt_ret(e);
    memset(attributes, 0, sizeof *attributes);
    attributes->type = managed                        ? cudaMemoryTypeManaged
                       : type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice
                       : type == CU_MEMORYTYPE_HOST   ? cudaMemoryTypeHost
                                                      : cudaMemoryTypeUnregistered;
    attributes->device = ordinal;
    attributes->devicePointer = type ? (void *)ptr : NULL;
    attributes->hostPointer = type && attributes->type != cudaMemoryTypeDevice ? (void *)ptr : NULL;
    return cudaSuccess;
}

/* cudaDeviceAttr values equal CUdevice_attribute's. */
cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    return rt_ret(rt_err(rt_drv.cuDeviceGetAttribute(value, (CUdevice_attribute)attr, device)));
}

cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    return rt_ret(rt_ready());
}
