/* hooks_driver.c: CUDA driver API hooks, exported under the real symbol
 * names of libcuda.so.1 (cuda.h maps cuMemAlloc to cuMemAlloc_v2 etc.), and
 * the cuGetProcAddress hooks that hand out these hooks for the hooked names
 * (real pointers for the rest). Results are returned untouched. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "vti_internal.h"

/* The CUDA 4.0 ABI of cuMemHostRegister (cuda.h maps the name to _v2), and
 * the old names of the context calls. */
#undef cuMemHostRegister
VTI_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxRelease
#undef cuCtxDestroy
#undef cuCtxCreate
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamBeginCapture
#undef cuStreamEndCapture
#undef cuStreamBeginCaptureToGraph
VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
/* Every ABI of the calls that change the thread's current context
 * (cudaTypedefs.h: cuCtxCreate at 2.0, 3.2, 11.4 and 12.5; the push and
 * pop at 2.0 and 4.0). */
VTI_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                           int numParams, unsigned int flags, CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                           unsigned int flags, CUdevice dev);
VTI_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
VTI_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx);
VTI_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
VTI_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx);
/* Stream capture: the CUDA 10.0 ABI of cuStreamBeginCapture (no mode; cuda.h
 * maps the name to _v2) and the per-thread-default-stream variants. */
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream);
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream);
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                                         CUstreamCaptureMode mode);
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                        const CUgraphNode *dependencies,
                                                        const CUgraphEdgeData *dependencyData,
                                                        size_t numDependencies,
                                                        CUstreamCaptureMode mode);
VTI_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                             const CUgraphNode *dependencies,
                                                             const CUgraphEdgeData *dependencyData,
                                                             size_t numDependencies,
                                                             CUstreamCaptureMode mode);
VTI_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
VTI_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
/* Per-thread-default-stream variants, handed out by cuGetProcAddress with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
VTI_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                 CUstream hStream);
VTI_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
VTI_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                         CUmemoryPool pool, CUstream hStream);

#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

#define ALLOC_HOOK(F, PTYPE, CALL, PTR, SIZE, API, STREAM)                                         \
    VTI_ALLOC_HOOK(F, PTYPE, CUresult, CUDA_SUCCESS, NO_DRIVER, vti_driver_device, CALL, PTR,      \
                   SIZE, API, STREAM)
/* Stream-ordered (VTI_ASYNC_HOOK): API is the plain or the from-pool one. */
#define ASYNC_HOOK(F, PTYPE, CALL, PTR, SIZE, STREAM, POOL, API)                                   \
    VTI_ASYNC_HOOK(F, PTYPE, CUresult, CUDA_SUCCESS, NO_DRIVER, vti_driver_device, CALL, PTR,      \
                   SIZE, STREAM, POOL, API)
#define FREE_HOOK(F, PTYPE, CALL, PTR, SPACE)                                                      \
    VTI_FREE_HOOK(F, PTYPE, CUresult, NO_DRIVER, CALL, PTR, SPACE)
/* cuMemFreeAsync: on a capturing stream a free node (not recorded). */
#define ASYNC_FREE_HOOK(F, PTYPE, CALL, PTR, STREAM)                                               \
    VTI_FREE_HOOK_NODE(vti_graph_capturing((uint64_t)(uintptr_t)(STREAM), F), F, PTYPE, CUresult,  \
                       NO_DRIVER, CALL, PTR, VT_SPACE_ADDR)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*alloc_flags_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*host_alloc_fn)(void **, size_t);
typedef CUresult (*host_alloc_flags_fn)(void **, size_t, unsigned int);
typedef CUresult (*host_free_fn)(void *);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);

VTI_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ALLOC_HOOK(F_cuMemAlloc_v2, alloc_fn, real(dptr, bytesize), *dptr, bytesize,
               VT_API_CU_MEM_ALLOC, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    FREE_HOOK(F_cuMemFree_v2, free_fn, real(dptr), dptr, VT_SPACE_ADDR);
}

/* Size recorded: pitch * Height bytes (WidthInBytes * Height on failure). */
VTI_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                               size_t WidthInBytes, size_t Height,
                                               unsigned int ElementSizeBytes)
{
    ALLOC_HOOK(F_cuMemAllocPitch_v2, pitch_fn,
               real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), *dptr,
               rc == CUDA_SUCCESS ? (uint64_t)*pPitch * Height : (uint64_t)WidthInBytes * Height,
               VT_API_CU_MEM_ALLOC_PITCH, NULL);
}

typedef CUresult (*array_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
typedef CUresult (*array3d_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
typedef CUresult (*array_destroy_fn)(CUarray);

/* The bytes of a 3D descriptor's array of levels mipmap levels (0 when
 * there is none: the call fails). */
static uint64_t array3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels)
{
    if (!a)
        return 0;
    vti_array_shape sh = {a->Width, a->Height, a->Depth, levels, vti_array_layered(a->Flags)};
    return vti_array_bytes_driver(a->Format, a->NumChannels, &sh);
}

/* A CUDA array, recorded with its handle as its address (arrays.c: size);
 * a sparse or deferred-mapping one has no memory yet (vti_array_unbacked):
 * not recorded. */
#define ARRAY_HOOK(F, PTYPE, CALL, PTR, SIZE, API, FLAGS)                                          \
    VTI_ALLOC_HOOK_WHEN(!vti_array_unbacked(FLAGS), F, PTYPE, CUresult, CUDA_SUCCESS, NO_DRIVER,   \
                        vti_driver_device, CALL, PTR, SIZE, API, NULL, (void)0, (void)0)

VTI_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle,
                                             const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    vti_array_shape sh = {a ? a->Width : 0, a ? a->Height : 0, 0, 1, false};
    ALLOC_HOOK(F_cuArrayCreate_v2, array_fn, real(pHandle, a), *pHandle,
               a ? vti_array_bytes_driver(a->Format, a->NumChannels, &sh) : 0,
               VT_API_CU_ARRAY_CREATE, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    ARRAY_HOOK(F_cuArray3DCreate_v2, array3d_fn, real(pHandle, a), *pHandle, array3d_bytes(a, 1),
               VT_API_CU_ARRAY_3D_CREATE, a ? a->Flags : 0);
}

typedef CUresult (*mipmapped_fn)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned int);
typedef CUresult (*mipmapped_destroy_fn)(CUmipmappedArray);

/* All its levels: one allocation (arrays.c: size). */
VTI_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(
    CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
    unsigned int numMipmapLevels)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pMipmappedArrayDesc;
    ARRAY_HOOK(F_cuMipmappedArrayCreate, mipmapped_fn, real(pHandle, a, numMipmapLevels), *pHandle,
               array3d_bytes(a, numMipmapLevels), VT_API_CU_MIPMAPPED_ARRAY_CREATE,
               a ? a->Flags : 0);
}

VTI_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    FREE_HOOK(F_cuMipmappedArrayDestroy, mipmapped_destroy_fn, real(hMipmappedArray),
              hMipmappedArray, VT_SPACE_ARRAY);
}

VTI_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    FREE_HOOK(F_cuArrayDestroy, array_destroy_fn, real(hArray), hArray, VT_SPACE_ARRAY);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                              unsigned int flags)
{
    ALLOC_HOOK(F_cuMemAllocManaged, alloc_flags_fn, real(dptr, bytesize, flags), *dptr, bytesize,
               VT_API_CU_MEM_ALLOC_MANAGED, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ALLOC_HOOK(F_cuMemAllocHost_v2, host_alloc_fn, real(pp, bytesize), *pp, bytesize,
               VT_API_CU_MEM_ALLOC_HOST, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ALLOC_HOOK(F_cuMemHostAlloc, host_alloc_flags_fn, real(pp, bytesize, Flags), *pp, bytesize,
               VT_API_CU_MEM_HOST_ALLOC, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
    FREE_HOOK(F_cuMemFreeHost, host_free_fn, real(p), p, VT_SPACE_ADDR);
}

typedef CUresult (*host_register_fn)(void *, size_t, unsigned int);

/* Host memory pinned in place: host_registered until cuMemHostUnregister.
 * Both ABIs take the same arguments. */
VTI_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ALLOC_HOOK(F_cuMemHostRegister_v2, host_register_fn, real(p, bytesize, Flags), p, bytesize,
               VT_API_CU_MEM_HOST_REGISTER, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    ALLOC_HOOK(F_cuMemHostRegister, host_register_fn, real(p, bytesize, Flags), p, bytesize,
               VT_API_CU_MEM_HOST_REGISTER, NULL);
}

VTI_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    FREE_HOOK(F_cuMemHostUnregister, host_free_fn, real(p), p, VT_SPACE_ADDR);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ASYNC_HOOK(F_cuMemAllocAsync, alloc_async_fn, real(dptr, bytesize, hStream), *dptr, bytesize,
               hStream, NULL, VT_API_CU_MEM_ALLOC_ASYNC);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                 CUstream hStream)
{
    ASYNC_HOOK(F_cuMemAllocAsync_ptsz, alloc_async_fn, real(dptr, bytesize, hStream), *dptr,
               bytesize, hStream, NULL, VT_API_CU_MEM_ALLOC_ASYNC);
}

VTI_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    ASYNC_FREE_HOOK(F_cuMemFreeAsync, free_async_fn, real(dptr, hStream), dptr, hStream);
}

VTI_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    ASYNC_FREE_HOOK(F_cuMemFreeAsync_ptsz, free_async_fn, real(dptr, hStream), dptr, hStream);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                    CUmemoryPool pool, CUstream hStream)
{
    ASYNC_HOOK(F_cuMemAllocFromPoolAsync, alloc_pool_fn, real(dptr, bytesize, pool, hStream), *dptr,
               bytesize, hStream, pool, VT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC);
}

VTI_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                         CUmemoryPool pool, CUstream hStream)
{
    ASYNC_HOOK(F_cuMemAllocFromPoolAsync_ptsz, alloc_pool_fn, real(dptr, bytesize, pool, hStream),
               *dptr, bytesize, hStream, pool, VT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC);
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);

/* Physical memory of the virtual memory management API: recorded with the
 * handle as its address (VT_API_CU_MEM_CREATE), on prop's device. Like every
 * allocation hook it runs under the order lock and arms the end's calls. */
VTI_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                        const CUmemAllocationProp *prop, unsigned long long flags)
{
    create_fn real = (create_fn)vti_real(F_cuMemCreate);
    bool outer = vti_hook_enter() && real;
    uint32_t stack = outer ? vti_hook_stack() : 0;
    if (outer)
        vti_order_lock();
    CUresult rc = real ? real(handle, size, prop, flags) : NO_DRIVER;
    int dev = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    if (outer) {
        vti_exit_arm(2u);
        if (rc == CUDA_SUCCESS)
            vti_rec_alloc(*handle, size, dev, VT_API_CU_MEM_CREATE, 0, stack);
        else
            vti_rec_failed(size, rc, dev, VT_API_CU_MEM_CREATE, stack);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

typedef CUresult (*pool_create_fn)(CUmemoryPool *, const CUmemPoolProps *);

/* Not an allocation: a pool located on a device is remembered with it, the
 * device its allocations take memory on whatever the stream's (asyncdev.c);
 * a pool located on the host (CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA) as
 * such, its allocations pinned host memory, and a managed pool
 * (CU_MEM_ALLOCATION_TYPE_MANAGED), its allocations managed memory
 * (vti_pool_created). */
VTI_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    pool_create_fn real = (pool_create_fn)vti_real(F_cuMemPoolCreate);
    vti_hook_enter();
    CUresult rc = real ? real(pool, poolProps) : NO_DRIVER;
    if (rc == CUDA_SUCCESS && pool && poolProps) {
        CUmemLocationType at = poolProps->location.type;
        bool on_host = at == CU_MEM_LOCATION_TYPE_HOST || at == CU_MEM_LOCATION_TYPE_HOST_NUMA;
        bool managed = poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED;
        vti_pool_created((uint64_t)(uintptr_t)*pool,
                         at == CU_MEM_LOCATION_TYPE_DEVICE ? poolProps->location.id
                         : managed                         ? vti_context_device_or(-1)
                                                           : -1,
                         managed   ? VT_KIND_MANAGED
                         : on_host ? VT_KIND_HOST_PINNED
                                   : VT_KIND_DEVICE);
    }
    vti_leave();
    return rc;
}

typedef CUresult (*pool_destroy_fn)(CUmemoryPool);

/* Not a free (the pool's memory was never recorded as allocations): the
 * pool is no longer sampled, nor its device known, from before the real
 * destroy on, and once destroyed a last pool_stat says what it holds
 * (vti_pool_destroy_begin, _end). Under the order lock, so that no free of
 * an allocation the pool keeps (vti_pool_freed) runs between its finding
 * and the destroy. */
VTI_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    pool_destroy_fn real = (pool_destroy_fn)vti_real(F_cuMemPoolDestroy);
    vti_hook_enter();
    bool ordered = !vti_order_held();
    if (ordered)
        vti_order_lock();
    vt_event last;
    vti_pool_destroy_begin((uint64_t)(uintptr_t)pool, &last);
    CUresult rc = real ? real(pool) : NO_DRIVER;
    vti_pool_destroy_end(&last, rc == CUDA_SUCCESS);
    if (ordered)
        vti_order_unlock();
    vti_leave();
    return rc;
}

typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);

/* The handle's release is its free (the memory dies once also unmapped),
 * except one that drops a reference cuMemRetainAllocationHandle took
 * (vti_live_release). */
VTI_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FREE_HOOK(F_cuMemRelease, release_fn, real(handle), handle, VT_SPACE_VMM_HANDLE);
}

typedef CUresult (*retain_fn)(CUmemGenericAllocationHandle *, void *);

/* Another reference to the handle of the memory mapped at addr ("the handle
 * must be released with cuMemRelease", CUDA Driver API; the same value, an
 * H200 showed): not an allocation; counted in the handle's live-map record
 * (vti_live_retain), so that its release is not taken for the handle's. */
VTI_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                        void *addr)
{
    retain_fn real = (retain_fn)vti_real(F_cuMemRetainAllocationHandle);
    bool outer = vti_hook_enter() && real;
    if (outer)
        vti_order_lock();
    CUresult rc = real ? real(handle, addr) : NO_DRIVER;
    if (outer) {
        if (rc == CUDA_SUCCESS && handle)
            vti_live_retain(*handle);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

/* A mapping keeps a handle's memory alive after cuMemRelease (the driver
 * frees it at the last cuMemUnmap), so successful maps and unmaps are
 * recorded; the report decides when the memory dies. Both run under the
 * order lock with their record, as allocations and frees do: an unmap can be
 * the free of a handle's memory, and another thread's cuMemCreate between
 * it and its record would come first in the trace (a peak the driver never
 * had: corpus.random found it). */
VTI_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                     CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult (*real)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                     unsigned long long) = vti_real(F_cuMemMap);
    bool outer = vti_hook_enter() && real;
    if (outer)
        vti_order_lock();
    CUresult rc = real ? real(ptr, size, offset, handle, flags) : NO_DRIVER;
    if (outer) {
        if (rc == CUDA_SUCCESS)
            vti_rec_vmm_map(handle, ptr, size);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

VTI_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult (*real)(CUdeviceptr, size_t) = vti_real(F_cuMemUnmap);
    bool outer = vti_hook_enter() && real;
    if (outer)
        vti_order_lock();
    CUresult rc = real ? real(ptr, size) : NO_DRIVER;
    if (outer) {
        if (rc == CUDA_SUCCESS)
            vti_rec_vmm_unmap(ptr, size);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

VTI_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult (*real)(size_t *, size_t *) = vti_real(F_cuMemGetInfo_v2);
    bool outer = vti_hook_enter();
    CUresult rc = real ? real(free, total) : NO_DRIVER;
    if (outer && real && rc == CUDA_SUCCESS && free && total)
        vti_rec_meminfo(vti_driver_device(), *free, *total);
    vti_leave();
    return rc;
}

/* ---- contexts ------------------------------------------------------------ */

/* The end of a context frees the memory made in it (CUDA Driver API:
 * cuCtxDestroy "destroys and cleans up all resources associated with the
 * context", among them "memory allocations by cuMemAlloc(), cuMemAllocHost(),
 * cuMemAllocManaged() and cuMemAllocPitch()"; cuDevicePrimaryCtxRelease: "the
 * context is automatically reset once the last reference to it is released";
 * cuDevicePrimaryCtxReset). vramtrace does not record which context made an
 * allocation: after a successful call, the named device, if its primary
 * context is no longer active, has its live allocations recorded as freed
 * with cudaDeviceReset's rule (vti_rec_context_end). That is exact where a
 * device's memory is all in its primary context (runtime API programs,
 * numba, most driver programs) and on the simulated device (its contexts
 * share the device's memory, which goes with the last of them). On a GPU, a
 * program that destroys a context it created while the device's primary
 * context stays active keeps that context's allocations live in the report,
 * and one with two created contexts on a device loses both's at the first
 * destroy. The call and its record run under the order lock, as a free's. */
#define CONTEXT_END_HOOK(F, PTYPE, CALL, DEVICE)                                                   \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter() && real;                                                         \
    int device = outer ? (DEVICE) : -1;                                                            \
    if (outer)                                                                                     \
        vti_order_lock();                                                                          \
    CUresult rc = real ? CALL : NO_DRIVER;                                                         \
    if (outer) {                                                                                   \
        if (rc == CUDA_SUCCESS) /* the current context may have changed */                         \
            vti_tl_context_switched = true;                                                        \
        if (rc == CUDA_SUCCESS && device >= 0)                                                     \
            vti_rec_context_end(device);                                                           \
        vti_order_unlock();                                                                        \
    }                                                                                              \
    vti_leave();                                                                                   \
    return rc

typedef CUresult (*device_fn)(CUdevice);
typedef CUresult (*ctx_fn)(CUcontext);

/* The device of context ctx (made current for the question, then popped),
 * -1 when the driver cannot tell. */
static int context_device(CUcontext ctx)
{
    PFN_cuCtxPushCurrent_v4000 push =
        VTI_REAL_DRIVER(cuCtxPushCurrent, 4000, "cuCtxPushCurrent_v2");
    PFN_cuCtxPopCurrent_v4000 pop = VTI_REAL_DRIVER(cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2");
    PFN_cuCtxGetDevice_v2000 get = VTI_REAL_DRIVER(cuCtxGetDevice, 2000, "cuCtxGetDevice");
    CUdevice d = -1;
    CUcontext popped;
    if (!ctx || !push || !pop || !get || push(ctx) != CUDA_SUCCESS)
        return -1;
    if (get(&d) != CUDA_SUCCESS)
        d = -1;
    return pop(&popped) == CUDA_SUCCESS ? d : -1;
}

VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CONTEXT_END_HOOK(F_cuDevicePrimaryCtxReset_v2, device_fn, real(dev), dev);
}

VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CONTEXT_END_HOOK(F_cuDevicePrimaryCtxRelease_v2, device_fn, real(dev), dev);
}

VTI_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    CONTEXT_END_HOOK(F_cuCtxDestroy_v2, ctx_fn, real(ctx), context_device(ctx));
}

/* The CUDA 7.0 (primary context) and 2.0 (cuCtxDestroy) ABIs of the same
 * calls, for callers that ask for them by their old names. */
VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    CONTEXT_END_HOOK(F_cuDevicePrimaryCtxReset, device_fn, real(dev), dev);
}

VTI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CONTEXT_END_HOOK(F_cuDevicePrimaryCtxRelease, device_fn, real(dev), dev);
}

VTI_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    CONTEXT_END_HOOK(F_cuCtxDestroy, ctx_fn, real(ctx), context_device(ctx));
}

/* ---- the thread's current context ------------------------------------------- */

/* The program changed the thread's current context through the driver: a
 * runtime allocation's device is then asked of the driver (the runtime
 * works on the current context; hooks_runtime.c, runtime_device) until the
 * next cudaSetDevice. Not allocations; calls made inside a hooked call (the
 * runtime's own) leave it alone. */
#define CONTEXT_SWITCH_HOOK(F, PTYPE, CALL)                                                        \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter();                                                                 \
    CUresult rc = real ? (CALL) : NO_DRIVER;                                                       \
    if (outer && rc == CUDA_SUCCESS)                                                               \
        vti_tl_context_switched = true;                                                            \
    vti_leave();                                                                                   \
    return rc

typedef CUresult (*create2_fn)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*create3_fn)(CUcontext *, CUexecAffinityParam *, int, unsigned int, CUdevice);
typedef CUresult (*create4_fn)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice);
typedef CUresult (*pop_fn)(CUcontext *);

VTI_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxSetCurrent, ctx_fn, real(ctx));
}

VTI_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxPushCurrent_v2, ctx_fn, real(ctx));
}

VTI_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxPushCurrent, ctx_fn, real(ctx));
}

VTI_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxPopCurrent_v2, pop_fn, real(pctx));
}

VTI_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxPopCurrent, pop_fn, real(pctx));
}

VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                           unsigned int flags, CUdevice dev)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxCreate_v4, create4_fn, real(pctx, ctxCreateParams, flags, dev));
}

VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                           int numParams, unsigned int flags, CUdevice dev)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxCreate_v3, create3_fn,
                        real(pctx, paramsArray, numParams, flags, dev));
}

VTI_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxCreate_v2, create2_fn, real(pctx, flags, dev));
}

VTI_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CONTEXT_SWITCH_HOOK(F_cuCtxCreate, create2_fn, real(pctx, flags, dev));
}

/* ---- stream capture (CUDA graphs) ------------------------------------------ */

/* The stream a _ptsz variant was given: its default stream is the
 * per-thread one. */
static CUstream ptsz_stream(CUstream s)
{
    return s ? s : CU_STREAM_PER_THREAD;
}

/* A successful begin is recorded (vti_rec_capture) by the thread that made
 * it; the allocations that thread makes until the capture ends are the
 * capture's (docs/trace.md, "CUDA graph captures"). */
#define BEGIN_CAPTURE_HOOK(F, PTYPE, CALL, STREAM)                                                 \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter();                                                                 \
    CUresult rc = real ? (CALL) : NO_DRIVER;                                                       \
    if (outer && real && rc == CUDA_SUCCESS) {                                                     \
        vti_graph_capture_count(true);                                                             \
        vti_rec_capture((uint64_t)(uintptr_t)(STREAM), true);                                      \
    }                                                                                              \
    vti_leave();                                                                                   \
    return rc

typedef CUresult (*begin1_fn)(CUstream);
typedef CUresult (*begin2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*begin_graph_fn)(CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *,
                                   size_t, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCapture, begin1_fn, real(hStream), hStream);
}

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCapture_ptsz, begin1_fn, real(hStream), ptsz_stream(hStream));
}

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCapture_v2, begin2_fn, real(hStream, mode), hStream);
}

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCapture_v2_ptsz, begin2_fn, real(hStream, mode),
                       ptsz_stream(hStream));
}

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                        const CUgraphNode *dependencies,
                                                        const CUgraphEdgeData *dependencyData,
                                                        size_t numDependencies,
                                                        CUstreamCaptureMode mode)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCaptureToGraph, begin_graph_fn,
                       real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode),
                       hStream);
}

VTI_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                             const CUgraphNode *dependencies,
                                                             const CUgraphEdgeData *dependencyData,
                                                             size_t numDependencies,
                                                             CUstreamCaptureMode mode)
{
    BEGIN_CAPTURE_HOOK(F_cuStreamBeginCaptureToGraph_ptsz, begin_graph_fn,
                       real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode),
                       ptsz_stream(hStream));
}

/* After the real cuStreamEndCapture: the capture ended when the stream no
 * longer captures (a graph returned, or the capture reported invalidated);
 * an end that left it capturing (another thread's, in a mode that forbids
 * it; another stream of the capture) ended nothing. */
static void end_capture_done(CUstream s)
{
    PFN_cuStreamIsCapturing_v10000 is =
        VTI_REAL_DRIVER(cuStreamIsCapturing, 10000, "cuStreamIsCapturing");
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (is && is(s, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_NONE) {
        vti_graph_capture_count(false);
        vti_rec_capture((uint64_t)(uintptr_t)s, false);
    }
}

/* Both cuStreamEndCapture hooks: the real f on (s, g), the end recorded for
 * `stream` (s as the variant names it). */
static CUresult end_capture(enum vti_fn f, CUstream s, CUgraph *g, CUstream stream)
{
    end_fn real = (end_fn)vti_real(f);
    bool outer = vti_hook_enter();
    CUresult rc = real ? real(s, g) : NO_DRIVER;
    if (outer && real)
        end_capture_done(stream);
    vti_leave();
    return rc;
}

VTI_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(F_cuStreamEndCapture, hStream, phGraph, hStream);
}

VTI_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return end_capture(F_cuStreamEndCapture_ptsz, hStream, phGraph, ptsz_stream(hStream));
}

VTI_CHECK_HOOKS(VTI_DRIVER_HOOKS)
