/* 2D copies and the asynchronous copy forms of the simulated driver. Device
 * memory is host memory: a copy is a memmove per row and completes at once.
 * Rules: cuda.h, cuMemcpy2D (addresses are base + Y * pitch + XInBytes;
 * pitches below WidthInBytes: CUDA_ERROR_INVALID_VALUE). A CUDA array's side
 * is its first layer, rows of sim_array_data's bytes (the copy's pitch for it
 * is ignored, as cuda.h says); a copy past its rows or row ends is
 * CUDA_ERROR_INVALID_VALUE. */
#include "driver_capture.h"
#include "driver_extra.h"

#include <string.h>

/* One side of a 2D copy (cuda.h's CUDA_MEMCPY2D fields). */
struct side_desc {
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    CUarray array;
    size_t x, y, pitch;
};

/* The first byte of side s of a copy of width x height bytes, its pitch in
 * *pitch, or NULL (error in *err). */
static char *side(const struct side_desc *s, size_t width, size_t height, size_t *pitch,
                  CUresult *err)
{
    uintptr_t base = 0;
    size_t x = s->x, y = s->y, rows;
    *pitch = s->pitch;
    switch (s->type) {
    case CU_MEMORYTYPE_HOST:
        base = (uintptr_t)s->host;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        base = (uintptr_t)s->dev;
        break;
    case CU_MEMORYTYPE_ARRAY:
        if ((*err = sim_array_data(s->array, pitch, &rows, &base)) != CUDA_SUCCESS)
            return NULL;
        if (x > *pitch || width > *pitch - x || y > rows || height > rows - y) {
            *err = CUDA_ERROR_INVALID_VALUE;
            return NULL;
        }
        break;
    default:
        *err = CUDA_ERROR_INVALID_VALUE;
        return NULL;
    }
    if (!base) {
        *err = CUDA_ERROR_INVALID_VALUE;
        return NULL;
    }
    return (char *)(base + y * *pitch + x);
}

/* The first bytes of both sides of the copy c (*src, *dst) and their
 * pitches (*sp, *dp), after cuMemcpy2D's checks. */
static CUresult plan2d(const CUDA_MEMCPY2D *c, char **src_out, char **dst_out, size_t *sp,
                       size_t *dp)
{
    CUresult err = CUDA_SUCCESS;
    struct side_desc src = {c->srcMemoryType,
                            c->srcHost,
                            c->srcDevice,
                            c->srcArray,
                            c->srcXInBytes,
                            c->srcY,
                            c->srcPitch ? c->srcPitch : c->WidthInBytes};
    struct side_desc dst = {c->dstMemoryType,
                            c->dstHost,
                            c->dstDevice,
                            c->dstArray,
                            c->dstXInBytes,
                            c->dstY,
                            c->dstPitch ? c->dstPitch : c->WidthInBytes};
    *src_out = side(&src, c->WidthInBytes, c->Height, sp, &err);
    *dst_out = *src_out ? side(&dst, c->WidthInBytes, c->Height, dp, &err) : NULL;
    if (!*src_out || !*dst_out)
        return err;
    if (c->Height > 1 && (*sp < c->WidthInBytes || *dp < c->WidthInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* cuMemcpy2D's checks only (NULL: CUDA_ERROR_INVALID_VALUE; nothing to copy:
 * CUDA_SUCCESS). */
static CUresult check2d(const CUDA_MEMCPY2D *c)
{
    char *s, *d;
    size_t sp, dp;
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return c->WidthInBytes && c->Height ? plan2d(c, &s, &d, &sp, &dp) : CUDA_SUCCESS;
}

CUresult sim_copy2d(const CUDA_MEMCPY2D *c)
{
    char *s, *d;
    size_t sp, dp;
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c->WidthInBytes || !c->Height)
        return CUDA_SUCCESS;
    CUresult err = plan2d(c, &s, &d, &sp, &dp);
    if (err)
        return err;
    for (size_t row = 0; row < c->Height; row++)
        memmove(d + row * dp, s + row * sp, c->WidthInBytes);
    return CUDA_SUCCESS;
}

/* Synchronous: potentially unsafe during stream capture. */
CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_capture_unsafe(true)))
        return err;
    return sim_copy2d(pCopy);
}

CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return cuMemcpy2D_v2(pCopy);
}

/* On a capturing stream: a 2D memcpy node (a CUDA array is looked up again
 * at launch). */
CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err) || (err = check2d(pCopy)))
        return err;
    struct sim_node_op op = {.kind = SIM_NODE_MEMCPY2D, .u.copy2d = *pCopy};
    if (sim_capture_enqueue(hStream, &op, &err))
        return err;
    return sim_copy2d(pCopy);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                      CUstream hStream)
{
    return cuMemcpyAsync(dstDevice, (CUdeviceptr)(uintptr_t)srcHost, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
    return cuMemcpyAsync((CUdeviceptr)(uintptr_t)dstHost, srcDevice, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream)
{
    return cuMemcpyAsync(dstDevice, srcDevice, ByteCount, hStream);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return sim_memset_sync(dstDevice, us, 2, N);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                  CUstream hStream)
{
    return sim_memset_async(dstDevice, us, 2, N, hStream);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
    return sim_memset_async(dstDevice, ui, 4, N, hStream);
}
