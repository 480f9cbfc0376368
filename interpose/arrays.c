/* arrays.c: the bytes the recorder counts for a CUDA array (cudaMallocArray,
 * cudaMalloc3DArray, cuArrayCreate, cuArray3DCreate, mipmapped): its elements' own
 * bytes, width x height x depth (a height or depth of 0 counts as 1; a
 * layered or cubemap array's layers are its depth), summed over the levels
 * of a mipmapped array (cudaMallocMipmappedArray, cuMipmappedArrayCreate:
 * each level halves width, height and, unless layered, depth, down to 1),
 * each element the
 * format's bytes; block-compressed formats by 4x4 blocks of 8 bytes (BC1,
 * BC4) or 16 (the others); NV12 1.5 bytes per pixel. A driver lays an array
 * out in its own tiles and alignment, so its real footprint is larger by an
 * amount it states only for arrays with deferred mapping
 * (cuArrayGetMemoryRequirements): these are requested bytes, as cudaMalloc's
 * are. Formats this does not know (the other video formats) count one byte
 * per channel: a lower bound. Written apart from the simulated device's own
 * rule (sim/driver_array.c) on purpose: that one is the truth this one is
 * held to (tests/corpus/arrays.c, random.c). */
#include <cuda.h>
#include <driver_types.h>

#include "vti_internal.h"

/* a * b saturated at UINT64_MAX. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Bytes of one w x h x d level: elements of elem bytes, or 4x4 blocks of
 * elem bytes when block (each extent at least 1). */
static uint64_t level_bytes(uint64_t elem, bool block, uint64_t w, uint64_t h, uint64_t d)
{
    w = w ? w : 1;
    h = h ? h : 1;
    if (block) {
        w = (w + 3) / 4;
        h = (h + 3) / 4;
    }
    return mul_sat(mul_sat(mul_sat(elem, w), h), d ? d : 1);
}

/* The levels an array of shape sh gets: its count "clamped to the range
 * [1, 1 + floor(log2(max(width, height, depth)))]" (CUDA Runtime API,
 * cudaMallocMipmappedArray; the Driver API's cuMipmappedArrayCreate says
 * the same; an H200 gave 9 levels for 20 asked at 256 x 256, 1 for 0);
 * a layered or cubemap array's depth is not an extent. */
static unsigned array_levels(const vti_array_shape *sh)
{
    uint64_t m = sh->width > sh->height ? sh->width : sh->height;
    unsigned most = 0;
    if (!sh->layered && sh->depth > m)
        m = sh->depth;
    for (; m; m >>= 1)
        most++;
    if (!sh->levels)
        return 1;
    return sh->levels < most ? sh->levels : (most ? most : 1);
}

/* Bytes of an array of shape sh whose elements (or 4x4 blocks, when block)
 * take elem bytes: its levels summed, each halving width and height (at
 * least 1), and depth unless sh->layered; saturated at UINT64_MAX. */
static uint64_t array_bytes(uint64_t elem, bool block, const vti_array_shape *sh)
{
    uint64_t total = 0, h = sh->height ? sh->height : 1, d = sh->depth ? sh->depth : 1;
    unsigned levels = array_levels(sh);
    for (unsigned l = 0; l < levels; l++) {
        uint64_t n = level_bytes(elem, block, sh->width >> l, h >> l, sh->layered ? d : d >> l);
        total = n > UINT64_MAX - total ? UINT64_MAX : total + n;
    }
    return total;
}

uint64_t vti_array_bytes_runtime(int x, int y, int z, int w, int kind, const vti_array_shape *sh)
{
    switch ((enum cudaChannelFormatKind)kind) {
    case cudaChannelFormatKindNV12:
        return array_bytes(3, false, sh) / 2;
    case cudaChannelFormatKindUnsignedBlockCompressed1:
    case cudaChannelFormatKindUnsignedBlockCompressed1SRGB:
    case cudaChannelFormatKindUnsignedBlockCompressed4:
    case cudaChannelFormatKindSignedBlockCompressed4:
        return array_bytes(8, true, sh);
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
        return array_bytes(16, true, sh);
    default:
        break;
    }
    uint64_t bits = (uint64_t)(x > 0 ? x : 0) + (uint64_t)(y > 0 ? y : 0) +
                    (uint64_t)(z > 0 ? z : 0) + (uint64_t)(w > 0 ? w : 0);
    return array_bytes(bits / 8, false, sh);
}

uint64_t vti_array_bytes_driver(unsigned format, unsigned channels, const vti_array_shape *sh)
{
    switch ((CUarray_format)format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return array_bytes(channels, false, sh);
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return array_bytes(2ull * channels, false, sh);
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return array_bytes(4ull * channels, false, sh);
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return array_bytes(1, false, sh);
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return array_bytes(2, false, sh);
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return array_bytes(4, false, sh);
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return array_bytes(8, false, sh);
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return array_bytes(8, true, sh);
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
        return array_bytes(16, true, sh);
    case CU_AD_FORMAT_NV12:
        return array_bytes(3, false, sh) / 2;
    default:
        return array_bytes(channels ? channels : 1, false, sh);
    }
}

bool vti_array_layered(unsigned flags)
{
    return flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
}

bool vti_array_unbacked(unsigned flags)
{
    return flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING);
}
