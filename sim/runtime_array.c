/* CUDA arrays of the simulated runtime: cudaMallocArray, cudaMalloc3DArray,
 * cudaMallocMipmappedArray and their frees, forwarded to the driver's
 * cuArray3DCreate, cuMipmappedArrayCreate and their destroys (driver_array.c: sizes, limits) as the
 * real runtime does. A channel description maps to a driver format when its non-zero channels are
 * 1, 2 or 4 of one width (8, 16 or 32 bits; floats 16 or 32) and its kind is signed, unsigned or
 * float; anything else (the normalized and block-compressed kinds, the video formats) is
 * cudaErrorNotSupported. */
#include "runtime_internal.h"

#include <stdbool.h>

/* desc as a driver format and channel count; false when not modelled. */
static bool driver_format(const struct cudaChannelFormatDesc *desc, CUarray_format *format,
                          unsigned *channels)
{
    const int bits[4] = {desc->x, desc->y, desc->z, desc->w};
    unsigned n = 0;
    while (n < 4 && bits[n])
        n++;
    for (unsigned i = 0; i < 4; i++)
        if ((i < n && bits[i] != bits[0]) || (i >= n && bits[i]))
            return false;
    *channels = n;
    int b = bits[0];
    switch (desc->f) {
    case cudaChannelFormatKindUnsigned:
        *format = b == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
                  : b == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                            : CU_AD_FORMAT_UNSIGNED_INT32;
        break;
    case cudaChannelFormatKindSigned:
        *format = b == 8    ? CU_AD_FORMAT_SIGNED_INT8
                  : b == 16 ? CU_AD_FORMAT_SIGNED_INT16
                            : CU_AD_FORMAT_SIGNED_INT32;
        break;
    case cudaChannelFormatKindFloat:
        if (b == 8)
            return false;
        *format = b == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
        break;
    default:
        return false;
    }
    return n == 1 || n == 2 || n == 4 ? (b == 8 || b == 16 || b == 32) : false;
}

/* The bytes the ledger names for a failed allocation of extent e. */
static size_t ledger_bytes(const struct cudaChannelFormatDesc *desc, struct cudaExtent e)
{
    if (!desc)
        return 0;
    size_t elem = (size_t)(desc->x + desc->y + desc->z + desc->w) / 8;
    return elem * e.width * (e.height ? e.height : 1) * (e.depth ? e.depth : 1);
}

/* levels: 0 for a plain array, else a mipmapped one's. */
static cudaError_t create(void **array, const struct cudaChannelFormatDesc *desc,
                          struct cudaExtent e, unsigned int flags, unsigned levels)
{
    CUDA_ARRAY3D_DESCRIPTOR a = {e.width, e.height, e.depth, 0, 0, flags};
    cudaError_t err = rt_ready();
    if (err)
        return rt_ret(err);
    if (!array || !desc)
        return rt_ret(cudaErrorInvalidValue);
    if (!driver_format(desc, &a.Format, &a.NumChannels))
        return rt_ret(cudaErrorNotSupported);
    return rt_ret(rt_err(levels
                             ? rt_drv.cuMipmappedArrayCreate((CUmipmappedArray *)array, &a, levels)
                             : rt_drv.cuArray3DCreate((CUarray *)array, &a)));
}

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                      size_t width, size_t height, unsigned int flags)
{
    struct cudaExtent e = {width, height, 0};
    RT_LEDGER_SCOPE("cudaMallocArray", "array", ledger_bytes(desc, e));
    return create((void **)array, desc, e, flags, 0);
}

cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t *array,
                                        const struct cudaChannelFormatDesc *desc,
                                        struct cudaExtent extent, unsigned int flags)
{
    RT_LEDGER_SCOPE("cudaMalloc3DArray", "array", ledger_bytes(desc, extent));
    return create((void **)array, desc, extent, flags, 0);
}

/* A level of a mipmapped array, as the driver gives it (driver_array.c). */
cudaError_t CUDARTAPI cudaGetMipmappedArrayLevel(cudaArray_t *levelArray,
                                                 cudaMipmappedArray_const_t mipmappedArray,
                                                 unsigned int level)
{
    cudaError_t err = rt_ready();
    if (err)
        return rt_ret(err);
    if (!mipmappedArray)
        return rt_ret(cudaErrorInvalidResourceHandle);
    return rt_ret(rt_err(rt_drv.cuMipmappedArrayGetLevel(
        (CUarray *)levelArray, (CUmipmappedArray)(uintptr_t)mipmappedArray, level)));
}

/* All levels, clamped as the driver does (driver_array.c). */
cudaError_t CUDARTAPI cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                               const struct cudaChannelFormatDesc *desc,
                                               struct cudaExtent extent, unsigned int numLevels,
                                               unsigned int flags)
{
    RT_LEDGER_SCOPE("cudaMallocMipmappedArray", "array", ledger_bytes(desc, extent));
    /* 0 is clamped to 1 by the driver; here 0 would mean a plain array */
    return create((void **)mipmappedArray, desc, extent, flags, numLevels ? numLevels : 1);
}

cudaError_t CUDARTAPI cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    RT_LEDGER_SCOPE("cudaFreeMipmappedArray", NULL, 0);
    cudaError_t err = rt_ready();
    if (err || !mipmappedArray)
        return rt_ret(err);
    return rt_ret(rt_err(rt_drv.cuMipmappedArrayDestroy((CUmipmappedArray)mipmappedArray)));
}

/* cudaFreeArray(NULL) does nothing (CUDA Runtime API). */
cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array)
{
    RT_LEDGER_SCOPE("cudaFreeArray", NULL, 0);
    cudaError_t err = rt_ready();
    if (err || !array)
        return rt_ret(err);
    return rt_ret(rt_err(rt_drv.cuArrayDestroy((CUarray)array)));
}

/* The channel description of x, y, z, w bits of kind f: no device, no error
 * (CUDA Runtime API, cudaCreateChannelDesc). */
struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w,
                                                             enum cudaChannelFormatKind f)
{
    return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

/* Where a 2D copy goes: to the array or from it; on a stream (async) or not. */
struct copy_way {
    bool to_array, async;
    cudaStream_t stream;
};

/* A 2D copy between an array and linear memory (host or device: the
 * simulated device's memory is host memory, so one pointer type serves),
 * width bytes by height rows at (wOffset, hOffset) in the array's first
 * layer; the driver's cuMemcpy2D (cuMemcpy2DAsync for an async copy, which
 * a capturing stream captures) checks the array's bounds. */
static cudaError_t copy_array(cudaArray_const_t array, size_t wOffset, size_t hOffset, void *linear,
                              size_t pitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                              struct copy_way way)
{
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    if ((unsigned)kind > cudaMemcpyDefault)
        return rt_ret(cudaErrorInvalidMemcpyDirection);
    if (!array || (width && height && !linear))
        return rt_ret(cudaErrorInvalidValue);
    CUDA_MEMCPY2D c;
    if (way.to_array) {
        c = (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                            .srcDevice = (CUdeviceptr)linear,
                            .srcPitch = pitch,
                            .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                            .dstArray = (CUarray)array,
                            .dstXInBytes = wOffset,
                            .dstY = hOffset,
                            .WidthInBytes = width,
                            .Height = height};
    } else {
        c = (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                            .srcArray = (CUarray)array,
                            .srcXInBytes = wOffset,
                            .srcY = hOffset,
                            .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                            .dstDevice = (CUdeviceptr)linear,
                            .dstPitch = pitch,
                            .WidthInBytes = width,
                            .Height = height};
    }
    return rt_ret(
        rt_err(way.async ? rt_drv.cuMemcpy2DAsync(&c, way.stream) : rt_drv.cuMemcpy2D(&c)));
}

cudaError_t CUDARTAPI cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                          const void *src, size_t spitch, size_t width,
                                          size_t height, enum cudaMemcpyKind kind)
{
    struct copy_way way = {true, false, NULL};
    return copy_array(dst, wOffset, hOffset, (void *)src, spitch, width, height, kind, way);
}

cudaError_t CUDARTAPI cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src,
                                            size_t wOffset, size_t hOffset, size_t width,
                                            size_t height, enum cudaMemcpyKind kind)
{
    struct copy_way way = {false, false, NULL};
    return copy_array(src, wOffset, hOffset, dst, dpitch, width, height, kind, way);
}

/* Asynchronous forms: the sim completes every copy at once, unless the
 * stream captures. */
cudaError_t CUDARTAPI cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                               const void *src, size_t spitch, size_t width,
                                               size_t height, enum cudaMemcpyKind kind,
                                               cudaStream_t stream)
{
    struct copy_way way = {true, true, stream};
    return copy_array(dst, wOffset, hOffset, (void *)src, spitch, width, height, kind, way);
}

cudaError_t CUDARTAPI cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src,
                                                 size_t wOffset, size_t hOffset, size_t width,
                                                 size_t height, enum cudaMemcpyKind kind,
                                                 cudaStream_t stream)
{
    struct copy_way way = {false, true, stream};
    return copy_array(src, wOffset, hOffset, dst, dpitch, width, height, kind, way);
}
