/* arrays: CUDA arrays (the memory of textures and surfaces), whose handles
 * are not addresses: cudaMallocArray (2D, and 1D with height 0),
 * cudaMalloc3DArray (layered), cuArrayCreate and cuArray3DCreate (a
 * block-compressed format), one fetched through cuGetProcAddress; mipmapped
 * arrays (cudaMallocMipmappedArray, a layered cuMipmappedArrayCreate, one
 * with too many levels and one with none: both clamped); frees by
 * cudaFreeArray (NULL: nothing), cuArrayDestroy and cudaFreeMipmappedArray;
 * a cudaFree of an array handle is refused; data copied into an array and
 * back (cudaMemcpy2DToArray, cudaMemcpy2DFromArray), and past its bounds
 * (refused); an array too large to fit; a cudaDeviceReset that frees the
 * arrays of the device; one array leaked at exit. Device memory falls by
 * each array's bytes (on the simulated device: its elements' bytes; checked
 * only there, a real driver adds its own layout). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "corpus.h"

static size_t free_now(void)
{
    size_t f, t;
    EXPECT(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
}

/* Where the simulated device runs it, free memory must fall by `bytes`. */
static void check_took(size_t before, size_t bytes)
{
    if (getenv("VRAMTRACE_SIM_DEVICE"))
        REQUIRE(before - free_now() >= bytes);
}

int main(void)
{
    cudaArray_t a2d, a1d, layered, huge;
    struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat};
    struct cudaChannelFormatDesc u8 =
        cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
    size_t f0 = free_now();
    EXPECT(cudaMallocArray(&a2d, &f4, 256, 256, 0), cudaSuccess); /* 1 MiB */
    check_took(f0, 1 * MiB);
    EXPECT(cudaMallocArray(&a1d, &u8, 1000, 0, 0), cudaSuccess);
    EXPECT(cudaMalloc3DArray(&layered, &f4, (struct cudaExtent){64, 64, 16}, cudaArrayLayered),
           cudaSuccess); /* 1 MiB: 16 layers of 64 x 64 float4 */
    /* 64 TiB within the 3D size limits (16384 per side): out of memory on any device */
    EXPECT(cudaMalloc3DArray(&huge, &f4, (struct cudaExtent){16384, 16384, 16384}, 0),
           cudaErrorMemoryAllocation);
    /* data in and out of an array: 8 rows of 256 bytes at (64 bytes, row 3) */
    static unsigned char in[8][256], out[8][256];
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 256; c++)
            in[r][c] = (unsigned char)(r * 31 + c);
    EXPECT(cudaMemcpy2DToArray(a2d, 64, 3, in, sizeof in[0], 256, 8, cudaMemcpyHostToDevice),
           cudaSuccess);
    EXPECT(cudaMemcpy2DFromArray(out, sizeof out[0], a2d, 64, 3, 256, 8, cudaMemcpyDeviceToHost),
           cudaSuccess);
    REQUIRE(memcmp(in, out, sizeof in) == 0);
    /* past the end of a row (4096 bytes: 256 float4) or past the last row */
    EXPECT(cudaMemcpy2DToArray(a2d, 4000, 0, in, sizeof in[0], 256, 1, cudaMemcpyHostToDevice),
           cudaErrorInvalidValue);
    EXPECT(cudaMemcpy2DToArray(a2d, 0, 250, in, sizeof in[0], 256, 8, cudaMemcpyHostToDevice),
           cudaErrorInvalidValue);
    EXPECT(cudaFree(a2d), cudaErrorInvalidValue); /* a handle, not an allocation */
    EXPECT(cudaFreeArray(a2d), cudaSuccess);
    EXPECT(cudaFreeArray(NULL), cudaSuccess);

    CUarray d2, bc, got;
    CUDA_ARRAY_DESCRIPTOR d = {
        .Width = 100, .Height = 50, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 2};
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 128,
                                  .Height = 128,
                                  .Depth = 0,
                                  .Format = CU_AD_FORMAT_BC1_UNORM,
                                  .NumChannels = 4};
    EXPECT(cuArrayCreate(&d2, &d), CUDA_SUCCESS);
    EXPECT(cuArray3DCreate(&bc, &d3), CUDA_SUCCESS);
    CUresult (*create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *) = NULL;
    CUdriverProcAddressQueryResult q;
    EXPECT(
        cuGetProcAddress("cuArrayCreate", (void **)&create, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
        CUDA_SUCCESS);
    REQUIRE(create != NULL);
    EXPECT(create(&got, &d), CUDA_SUCCESS);
    EXPECT(cuArrayDestroy(d2), CUDA_SUCCESS);
    EXPECT(cuArrayDestroy(got), CUDA_SUCCESS);

    /* mipmapped: every level in one allocation (float4 256 x 256, 9 levels
     * down to 1 x 1: 1398096 bytes); more levels than 256 has are clamped
     * to 9, 0 to 1 (CUDA Runtime API; an H200 did so) */
    cudaMipmappedArray_t mip, more, none;
    size_t f2 = free_now();
    EXPECT(cudaMallocMipmappedArray(&mip, &f4, (struct cudaExtent){256, 256, 0}, 9, 0),
           cudaSuccess);
    check_took(f2, 1398096);
    EXPECT(cudaMallocMipmappedArray(&more, &f4, (struct cudaExtent){256, 256, 0}, 20, 0),
           cudaSuccess);
    EXPECT(cudaMallocMipmappedArray(&none, &f4, (struct cudaExtent){256, 256, 0}, 0, 0),
           cudaSuccess);
    EXPECT(cudaFreeMipmappedArray(mip), cudaSuccess);
    EXPECT(cudaFreeMipmappedArray(more), cudaSuccess);
    EXPECT(cudaFreeMipmappedArray(none), cudaSuccess);
    CUmipmappedArray lm;
    CUDA_ARRAY3D_DESCRIPTOR dl = {.Width = 64,
                                  .Height = 32,
                                  .Depth = 4,
                                  .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1,
                                  .Flags = CUDA_ARRAY3D_LAYERED}; /* 4 layers, 3 levels: 43008 B */
    EXPECT(cuMipmappedArrayCreate(&lm, &dl, 3), CUDA_SUCCESS);

    /* a1d, layered, bc and lm are freed by the reset */
    EXPECT(cudaDeviceReset(), cudaSuccess);
    size_t f1 = free_now();
    cudaArray_t leaked;
    EXPECT(cudaMallocArray(&leaked, &f4, 512, 128, cudaArraySurfaceLoadStore), cudaSuccess);
    check_took(f1, 1 * MiB);
    (void)bc;
    return 0;
}
