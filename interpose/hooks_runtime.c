/* hooks_runtime.c: CUDA runtime API hooks, exported with the prototypes of
 * cuda_runtime_api.h. Each forwards to the real function and returns its
 * result untouched; only the outermost hooked call of a thread records
 * (vti_enter). Frees are recorded before the real free. */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "vti_internal.h"

/* Per-thread-default-stream variants (compiled with
 * --default-stream per-thread); not declared by the header unless
 * CUDA_API_PER_THREAD_DEFAULT_STREAM is defined. */
VTI_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
VTI_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
VTI_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                    cudaStream_t stream);

#define NO_RUNTIME cudaErrorInitializationError

/* The device a runtime call worked on, asked after it: the thread's
 * cudaSetDevice device, unless the program changed the current context
 * with the driver since (vti_tl_context_switched): then the current
 * context's, which the runtime works on (vti_context_device_or). A
 * cuCtxGetDevice for every allocation cost about 60 instructions per event
 * on the simulated device (callgrind). */
static int runtime_device(void)
{
    return vti_tl_context_switched ? vti_context_device_or(vti_tl_device) : vti_tl_device;
}

#define ALLOC_HOOK(F, PTYPE, CALL, PTR, SIZE, API, STREAM)                                         \
    VTI_ALLOC_HOOK(F, PTYPE, cudaError_t, cudaSuccess, NO_RUNTIME, runtime_device, CALL, PTR,      \
                   SIZE, API, STREAM)
/* Stream-ordered (VTI_ASYNC_HOOK): API is the plain or the from-pool one. */
#define ASYNC_HOOK(F, PTYPE, CALL, PTR, SIZE, STREAM, POOL, API)                                   \
    VTI_ASYNC_HOOK(F, PTYPE, cudaError_t, cudaSuccess, NO_RUNTIME, runtime_device, CALL, PTR,      \
                   SIZE, STREAM, POOL, API)
#define FREE_HOOK(F, PTYPE, CALL, PTR)                                                             \
    VTI_FREE_HOOK(F, PTYPE, cudaError_t, NO_RUNTIME, CALL, PTR, VT_SPACE_ADDR)
/* cudaFreeAsync: on a capturing stream a free node (not recorded). */
#define ASYNC_FREE_HOOK(F, PTYPE, CALL, PTR, STREAM)                                               \
    VTI_FREE_HOOK_NODE(vti_graph_capturing((uint64_t)(uintptr_t)(STREAM), F), F, PTYPE,            \
                       cudaError_t, NO_RUNTIME, CALL, PTR, VT_SPACE_ADDR)

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef cudaError_t (*malloc_flags_fn)(void **, size_t, unsigned int);
typedef cudaError_t (*malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*free_async_fn)(void *, cudaStream_t);
typedef cudaError_t (*malloc_pool_fn)(void **, size_t, cudaMemPool_t, cudaStream_t);

VTI_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    ALLOC_HOOK(F_cudaMalloc, malloc_fn, real(devPtr, size), *devPtr, size, VT_API_CUDA_MALLOC,
               NULL);
}

VTI_EXPORT cudaError_t cudaFree(void *devPtr)
{
    FREE_HOOK(F_cudaFree, free_fn, real(devPtr), devPtr);
}

VTI_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    ALLOC_HOOK(F_cudaMallocManaged, malloc_flags_fn, real(devPtr, size, flags), *devPtr, size,
               VT_API_CUDA_MALLOC_MANAGED, NULL);
}

typedef cudaError_t (*pitch_fn)(void **, size_t *, size_t, size_t);

/* Size recorded: pitch * height bytes (width * height for a failure). */
VTI_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    ALLOC_HOOK(F_cudaMallocPitch, pitch_fn, real(devPtr, pitch, width, height), *devPtr,
               rc == cudaSuccess ? (uint64_t)*pitch * height : (uint64_t)width * height,
               VT_API_CUDA_MALLOC_PITCH, NULL);
}

typedef cudaError_t (*malloc3d_fn)(struct cudaPitchedPtr *, struct cudaExtent);

/* Size recorded: pitch * height * depth bytes. */
VTI_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    ALLOC_HOOK(F_cudaMalloc3D, malloc3d_fn, real(pitchedDevPtr, extent), pitchedDevPtr->ptr,
               (rc == cudaSuccess ? (uint64_t)pitchedDevPtr->pitch : (uint64_t)extent.width) *
                   extent.height * extent.depth,
               VT_API_CUDA_MALLOC_3D, NULL);
}

typedef cudaError_t (*array_fn)(cudaArray_t *, const struct cudaChannelFormatDesc *, size_t, size_t,
                                unsigned int);
typedef cudaError_t (*array3d_fn)(cudaArray_t *, const struct cudaChannelFormatDesc *,
                                  struct cudaExtent, unsigned int);
typedef cudaError_t (*free_array_fn)(cudaArray_t);

/* The bytes of a runtime array of levels mipmap levels (arrays.c's rule). */
static uint64_t array_bytes(const struct cudaChannelFormatDesc *d, struct cudaExtent e,
                            unsigned levels, unsigned flags)
{
    vti_array_shape sh = {e.width, e.height, e.depth, levels, vti_array_layered(flags)};
    return d ? vti_array_bytes_runtime(d->x, d->y, d->z, d->w, (int)d->f, &sh) : 0;
}

/* A CUDA array, recorded with its handle as its address (arrays.c: size);
 * a sparse or deferred-mapping one has no memory yet (vti_array_unbacked):
 * not recorded. */
#define ARRAY_HOOK(F, PTYPE, CALL, PTR, SIZE, API, FLAGS)                                          \
    VTI_ALLOC_HOOK_WHEN(!vti_array_unbacked(FLAGS), F, PTYPE, cudaError_t, cudaSuccess,            \
                        NO_RUNTIME, runtime_device, CALL, PTR, SIZE, API, NULL, (void)0, (void)0)

VTI_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                       size_t width, size_t height, unsigned int flags)
{
    ARRAY_HOOK(F_cudaMallocArray, array_fn, real(array, desc, width, height, flags), *array,
               array_bytes(desc, (struct cudaExtent){width, height, 0}, 1, flags),
               VT_API_CUDA_MALLOC_ARRAY, flags);
}

VTI_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t *array,
                                         const struct cudaChannelFormatDesc *desc,
                                         struct cudaExtent extent, unsigned int flags)
{
    ARRAY_HOOK(F_cudaMalloc3DArray, array3d_fn, real(array, desc, extent, flags), *array,
               array_bytes(desc, extent, 1, flags), VT_API_CUDA_MALLOC_3D_ARRAY, flags);
}

typedef cudaError_t (*mipmapped_fn)(cudaMipmappedArray_t *, const struct cudaChannelFormatDesc *,
                                    struct cudaExtent, unsigned int, unsigned int);
typedef cudaError_t (*free_mipmapped_fn)(cudaMipmappedArray_t);

/* All its levels: one allocation (arrays.c: size). */
VTI_EXPORT cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                                const struct cudaChannelFormatDesc *desc,
                                                struct cudaExtent extent, unsigned int numLevels,
                                                unsigned int flags)
{
    ARRAY_HOOK(F_cudaMallocMipmappedArray, mipmapped_fn,
               real(mipmappedArray, desc, extent, numLevels, flags), *mipmappedArray,
               array_bytes(desc, extent, numLevels, flags), VT_API_CUDA_MALLOC_MIPMAPPED_ARRAY,
               flags);
}

VTI_EXPORT cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    VTI_FREE_HOOK(F_cudaFreeMipmappedArray, free_mipmapped_fn, cudaError_t, NO_RUNTIME,
                  real(mipmappedArray), mipmappedArray, VT_SPACE_ARRAY);
}

VTI_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
    VTI_FREE_HOOK(F_cudaFreeArray, free_array_fn, cudaError_t, NO_RUNTIME, real(array), array,
                  VT_SPACE_ARRAY);
}

VTI_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    ALLOC_HOOK(F_cudaMallocHost, malloc_fn, real(ptr, size), *ptr, size, VT_API_CUDA_MALLOC_HOST,
               NULL);
}

VTI_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    ALLOC_HOOK(F_cudaHostAlloc, malloc_flags_fn, real(pHost, size, flags), *pHost, size,
               VT_API_CUDA_HOST_ALLOC, NULL);
}

VTI_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    FREE_HOOK(F_cudaFreeHost, free_fn, real(ptr), ptr);
}

typedef cudaError_t (*host_register_fn)(void *, size_t, unsigned int);

/* Host memory pinned in place (size = the registered bytes): recorded as
 * host_registered memory until cudaHostUnregister. */
VTI_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    ALLOC_HOOK(F_cudaHostRegister, host_register_fn, real(ptr, size, flags), ptr, size,
               VT_API_CUDA_HOST_REGISTER, NULL);
}

VTI_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
    FREE_HOOK(F_cudaHostUnregister, free_fn, real(ptr), ptr);
}

VTI_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    ASYNC_HOOK(F_cudaMallocAsync, malloc_async_fn, real(devPtr, size, hStream), *devPtr, size,
               hStream, NULL, VT_API_CUDA_MALLOC_ASYNC);
}

VTI_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    ASYNC_HOOK(F_cudaMallocAsync_ptsz, malloc_async_fn, real(devPtr, size, hStream), *devPtr, size,
               hStream, NULL, VT_API_CUDA_MALLOC_ASYNC);
}

VTI_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    ASYNC_FREE_HOOK(F_cudaFreeAsync, free_async_fn, real(devPtr, hStream), devPtr, hStream);
}

VTI_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    ASYNC_FREE_HOOK(F_cudaFreeAsync_ptsz, free_async_fn, real(devPtr, hStream), devPtr, hStream);
}

VTI_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                               cudaStream_t stream)
{
    ASYNC_HOOK(F_cudaMallocFromPoolAsync, malloc_pool_fn, real(ptr, size, memPool, stream), *ptr,
               size, stream, memPool, VT_API_CUDA_MALLOC_FROM_POOL_ASYNC);
}

VTI_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                    cudaStream_t stream)
{
    ASYNC_HOOK(F_cudaMallocFromPoolAsync_ptsz, malloc_pool_fn, real(ptr, size, memPool, stream),
               *ptr, size, stream, memPool, VT_API_CUDA_MALLOC_FROM_POOL_ASYNC);
}

/* An application's memory query becomes a VT_REC_MEMINFO sample. */
VTI_EXPORT cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    cudaError_t (*real)(size_t *, size_t *) = vti_real(F_cudaMemGetInfo);
    bool outer = vti_hook_enter();
    cudaError_t rc = real ? real(free, total) : NO_RUNTIME;
    if (outer && real && rc == cudaSuccess && free && total)
        vti_rec_meminfo(runtime_device(), *free, *total);
    vti_leave();
    return rc;
}

/* Tracks the thread's current device, used to attribute runtime
 * allocations. */
VTI_EXPORT cudaError_t cudaSetDevice(int device)
{
    cudaError_t (*real)(int) = vti_real(F_cudaSetDevice);
    cudaError_t rc;
    vti_hook_enter();
    rc = real ? real(device) : NO_RUNTIME;
    if (rc == cudaSuccess) { /* its primary context is current now */
        vti_tl_device = device;
        vti_tl_context_switched = false;
    }
    vti_leave();
    return rc;
}

/* Every live device allocation of the current device (stream-ordered ones
 * too: their pools go with the context) is freed by a reset (CUDA docs,
 * cudaDeviceReset): recorded as frees after a reset that took effect
 * (vti_free_took_effect), under the order lock with it, as every free is.
 * The device is asked before the reset (after it, its context is gone). */
VTI_EXPORT cudaError_t cudaDeviceReset(void)
{
    cudaError_t (*real)(void) = vti_real(F_cudaDeviceReset);
    bool outer = vti_hook_enter() && real;
    int device = outer ? runtime_device() : 0;
    if (outer)
        vti_order_lock();
    cudaError_t rc = real ? real() : NO_RUNTIME;
    if (outer) {
        if (vti_free_took_effect((int)rc))
            vti_rec_device_reset(device);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

VTI_CHECK_HOOKS(VTI_RUNTIME_HOOKS)
