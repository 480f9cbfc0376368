/* CUDA arrays of the simulated driver: cuArrayCreate_v2, cuArray3DCreate_v2,
 * cuMipmappedArrayCreate and their destroys (the other array entry points,
 * cuMipmappedArrayGetLevel among them, keep their generated
 * CUDA_ERROR_NOT_SUPPORTED stubs). An array takes device memory as
 * cuMemAlloc does, recorded in the ledger under the kind "array"; its handle
 * is the address of that memory (a real driver's CUarray is an opaque
 * pointer: a profiler must not read it as an address).
 *
 * Size: width x height x depth elements (a height or depth of 0 counts as
 * 1), each the format's bytes times its channels, summed over the levels of
 * a mipmapped array (level_bytes); block-compressed formats
 * by 4x4 blocks of 8 (BC1, BC4) or 16 bytes. That is the elements' own
 * bytes: a real driver lays arrays out in its own tiles and alignment,
 * larger, and says how much only for arrays created with deferred mapping
 * (cuArrayGetMemoryRequirements). Not modelled, CUDA_ERROR_NOT_SUPPORTED:
 * the video formats (NV12 ...), sparse arrays and deferred mapping (their
 * memory comes later, from cuMemCreate handles). The rows of a one-level
 * array are contiguous, row_bytes apart (sim_array_rows): 2D copies
 * (driver_copy2d.c) address its first layer. */
#include "driver_common.h"

/* Bytes of one element (or, for block-compressed formats, of one 4x4 block:
 * *block = 4); 0 for a format the sim does not model. */
static size_t element_bytes(CUarray_format f, unsigned channels, unsigned *block)
{
    *block = 1;
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2u * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4u * channels;
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        *block = 4;
        return 8;
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
        *block = 4;
        return 16;
    default:
        return 0;
    }
}

static size_t at_least_1(size_t n)
{
    return n ? n : 1;
}

/* The bytes of level `level` of descriptor a (level 0: the array itself):
 * width and height halve at each level (at least 1), depth too unless the
 * array is layered or a cubemap (layers and faces stay); elem bytes per
 * element or per 4x4 block; 0 when too large for size_t. */
static size_t level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned level, size_t elem,
                          unsigned block)
{
    size_t w = a->Width >> level, h = at_least_1(a->Height) >> level, d = at_least_1(a->Depth);
    if (!(a->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)))
        d >>= level;
    w = (at_least_1(w) + block - 1) / block;
    h = (at_least_1(h) + block - 1) / block;
    d = at_least_1(d);
    size_t n = elem;
    if (w > SIZE_MAX / n || h > SIZE_MAX / (n *= w) || d > SIZE_MAX / (n *= h))
        return 0;
    return n * d;
}

/* Levels a mipmapped array of a may have: 1 + log2 of its largest extent
 * (layers and faces not counted). */
static unsigned max_levels(const CUDA_ARRAY3D_DESCRIPTOR *a)
{
    size_t m = a->Width > a->Height ? a->Width : a->Height;
    if (!(a->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) && a->Depth > m)
        m = a->Depth;
    unsigned n = 0;
    for (; m; m >>= 1)
        n++;
    return n;
}

/* The bytes of an array of descriptor a with `levels` mipmap levels (1: a
 * plain array), 0 when it is invalid (*err says why) or too large for size_t
 * (out of memory). */
static size_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels, CUresult *err)
{
    unsigned block;
    *err = CUDA_ERROR_INVALID_VALUE;
    if (!a || a->Width == 0 ||
        (a->NumChannels != 1 && a->NumChannels != 2 && a->NumChannels != 4) || levels == 0 ||
        levels > max_levels(a))
        return 0;
    if (a->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) {
        *err = CUDA_ERROR_NOT_SUPPORTED;
        return 0;
    }
    size_t elem = element_bytes(a->Format, a->NumChannels, &block), total = 0;
    if (!elem) {
        *err = CUDA_ERROR_NOT_SUPPORTED;
        return 0;
    }
    *err = CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned l = 0; l < levels; l++) {
        size_t n = level_bytes(a, l, elem, block);
        if (!n || n > SIZE_MAX - total)
            return 0;
        total += n;
    }
    *err = CUDA_SUCCESS;
    return total;
}

static CUresult array_create(void **pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels,
                             size_t *bytes)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    uintptr_t p = 0;
    *bytes = 0;
    if (!d)
        return err;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = array_bytes(a, levels, &err);
    if (err != CUDA_SUCCESS)
        return err;
    err = (CUresult)sim_alloc(d, *bytes, SIM_ARRAY_MEM, &p);
    if (err != CUDA_SUCCESS)
        return err;
    if (levels == 1) {
        unsigned block;
        size_t elem = element_bytes(a->Format, a->NumChannels, &block);
        sim_array_set_rows(d, p, (a->Width + block - 1) / block * elem,
                           (at_least_1(a->Height) + block - 1) / block);
    }
    *pHandle = (void *)p;
    return CUDA_SUCCESS;
}

CUresult sim_array_rows(CUarray h, size_t *row_bytes, size_t *rows)
{
    struct sim_alloc a;
    int ordinal;
    if (!h || sim_find((uintptr_t)h, &a, &ordinal) != 0 || a.ptr != (uintptr_t)h ||
        a.kind != SIM_ARRAY_MEM || !a.row_bytes)
        return CUDA_ERROR_INVALID_HANDLE;
    *row_bytes = a.row_bytes;
    *rows = a.rows;
    return CUDA_SUCCESS;
}

/* The ledger's size of a failed create: the elements' bytes as far as they
 * are known (0 for an invalid descriptor). */
static CUresult create_logged(void **pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels)
{
    size_t bytes;
    CUresult rc = array_create(pHandle, a, levels, &bytes);
    return (CUresult)vtsim_ledger_fail(SIM_LK_ARRAY, sim_current_ordinal(), bytes, rc);
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    SIM_LEDGER_SCOPE("cuArray3DCreate_v2");
    return create_logged((void **)pHandle, pAllocateArray, 1);
}

/* A 1D or 2D array: cuArray3DCreate's with depth 0 and no flags. */
CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    SIM_LEDGER_SCOPE("cuArrayCreate_v2");
    CUDA_ARRAY3D_DESCRIPTOR a = {0};
    if (pAllocateArray)
        a = (CUDA_ARRAY3D_DESCRIPTOR){pAllocateArray->Width,  pAllocateArray->Height,      0,
                                      pAllocateArray->Format, pAllocateArray->NumChannels, 0};
    return create_logged((void **)pHandle, pAllocateArray ? &a : NULL, 1);
}

/* All levels in one allocation, whose address is the handle. The level
 * count "is clamped to the range [1, 1 + floor(log2(max(width, height,
 * depth)))]" (CUDA Driver API, cuMipmappedArrayCreate; an H200, driver
 * 580.159.04: 0 gave one level, 30 for 64 x 32 gave 7). */
CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels)
{
    SIM_LEDGER_SCOPE("cuMipmappedArrayCreate");
    unsigned levels = numMipmapLevels ? numMipmapLevels : 1;
    if (pMipmappedArrayDesc && max_levels(pMipmappedArrayDesc) &&
        levels > max_levels(pMipmappedArrayDesc))
        levels = max_levels(pMipmappedArrayDesc);
    return create_logged((void **)pHandle, pMipmappedArrayDesc, levels);
}

static CUresult destroy(uintptr_t p)
{
    if (sim_check_init())
        return sim_check_init();
    struct sim_device *d = p ? sim_device_of(p) : NULL;
    return (CUresult)sim_ledger_bad_free((CUdeviceptr)p, d && sim_free(d, p, true) == CUDA_SUCCESS
                                                             ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_HANDLE);
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    SIM_LEDGER_SCOPE("cuArrayDestroy");
    return destroy((uintptr_t)hArray);
}

/* A mipmapped array and a plain one are both arrays to the sim: either
 * destroy frees either (a real driver tells them apart). */
CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    SIM_LEDGER_SCOPE("cuMipmappedArrayDestroy");
    return destroy((uintptr_t)hMipmappedArray);
}
