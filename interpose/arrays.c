/* arrays.c: the bytes the recorder counts for a CUDA array (cudaMallocArray,
 * cudaMalloc3DArray, cuArrayCreate, cuArray3DCreate): its elements' own
 * bytes, width x height x depth (a height or depth of 0 counts as 1; a
 * layered or cubemap array's layers are its depth), each element the
 * format's bytes; block-compressed formats by 4x4 blocks of 8 bytes (BC1,
 * BC4) or 16 (the others); NV12 1.5 bytes per pixel. A driver lays an array
 * out in its own tiles and alignment, so its real footprint is larger by an
 * amount it states only for arrays with deferred mapping
 * (cuArrayGetMemoryRequirements): these are requested bytes, as cudaMalloc's
 * are. Formats this does not know (the other video formats) count one byte
 * per channel: a lower bound. */
#include <cuda.h>
#include <driver_types.h>

#include "vti_internal.h"

/* Bytes of w x h x d elements of elem bytes, or of 4x4 blocks of elem bytes
 * when block; saturated at UINT64_MAX. */
static uint64_t array_bytes(uint64_t elem, bool block, uint64_t w, uint64_t h, uint64_t d)
{
    h = h ? h : 1;
    d = d ? d : 1;
    if (block) {
        w = (w + 3) / 4;
        h = (h + 3) / 4;
    }
    uint64_t n = elem;
    if (w && n > UINT64_MAX / w)
        return UINT64_MAX;
    n *= w;
    if (h && n > UINT64_MAX / h)
        return UINT64_MAX;
    n *= h;
    return d && n > UINT64_MAX / d ? UINT64_MAX : n * d;
}

uint64_t vti_array_bytes_runtime(int x, int y, int z, int w, int kind, uint64_t width,
                                 uint64_t height, uint64_t depth)
{
    switch ((enum cudaChannelFormatKind)kind) {
    case cudaChannelFormatKindNV12:
        return array_bytes(3, false, width, height, depth) / 2;
    case cudaChannelFormatKindUnsignedBlockCompressed1:
    case cudaChannelFormatKindUnsignedBlockCompressed1SRGB:
    case cudaChannelFormatKindUnsignedBlockCompressed4:
    case cudaChannelFormatKindSignedBlockCompressed4:
        return array_bytes(8, true, width, height, depth);
    case cudaChannelFormatKindUnsignedBlockCompressed2:
    case cudaChannelFormatKindUnsignedBlockCompressed2SRGB:
    case cudaChannelFormatKindUnsignedBlockCompressed3:
    case cudaChannelFormatKindUnsignedBlockCompressed3SRGB:
    case cudaChannelFormatKindUnsignedBlockCompressed5:
    case cudaChannelFormatKindSignedBlockCompressed5:
    case cudaChannelFormatKindUnsignedBlockCompressed6H:
    case cudaChannelFormatKindSignedBlockCompressed6H:
    case cudaChannelFormatKindUnsignedBlockCompressed7:
    case cudaChannelFormatKindUnsignedBlockCompressed7SRGB:
        return array_bytes(16, true, width, height, depth);
    default:
        break;
    }
    uint64_t bits = (uint64_t)(x > 0 ? x : 0) + (uint64_t)(y > 0 ? y : 0) +
                    (uint64_t)(z > 0 ? z : 0) + (uint64_t)(w > 0 ? w : 0);
    return array_bytes(bits / 8, false, width, height, depth);
}

uint64_t vti_array_bytes_driver(unsigned format, unsigned channels, uint64_t width, uint64_t height,
                                uint64_t depth)
{
    switch ((CUarray_format)format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return array_bytes(channels, false, width, height, depth);
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return array_bytes(2ull * channels, false, width, height, depth);
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return array_bytes(4ull * channels, false, width, height, depth);
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return array_bytes(1, false, width, height, depth);
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return array_bytes(2, false, width, height, depth);
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return array_bytes(4, false, width, height, depth);
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return array_bytes(8, false, width, height, depth);
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return array_bytes(8, true, width, height, depth);
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
        return array_bytes(16, true, width, height, depth);
    case CU_AD_FORMAT_NV12:
        return array_bytes(3, false, width, height, depth) / 2;
    default:
        return array_bytes(channels ? channels : 1, false, width, height, depth);
    }
}

bool vti_array_unbacked(unsigned flags)
{
    return flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING);
}
