/* failures: every kind of failed allocation the sim can give: invalid value
 * (NULL result pointer, bad flags, zero-sized driver allocation, bad pitch
 * element size), out of memory (device, managed, async from the current pool
 * and from a pool by handle, through the runtime and the driver, pitched,
 * pinned host memory by each of its calls but cudaMallocHost)
 * and a bad stream; each counted once, with what is live at that moment, and
 * named by the call that failed (check_ledger --devices compares the names). */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "corpus.h"

#define TOO_BIG ((size_t)1 << 42)

int main(void)
{
    void *keep, *p;
    size_t pitch;
    CUdeviceptr d;
    EXPECT(cudaMalloc(&keep, 3 * MiB), cudaSuccess);
    EXPECT(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    EXPECT(cudaMalloc(&p, TOO_BIG), cudaErrorMemoryAllocation);
    EXPECT(cudaMallocManaged(&p, 16, 0x10), cudaErrorInvalidValue);
    EXPECT(cudaMallocManaged(&p, TOO_BIG, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
    EXPECT(cudaMallocAsync(&p, TOO_BIG, 0), cudaErrorMemoryAllocation);
    cudaMemPool_t pool;
    EXPECT(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&p, TOO_BIG, pool, 0), cudaErrorMemoryAllocation);
    EXPECT(cuMemAllocFromPoolAsync(&d, TOO_BIG, (CUmemoryPool)pool, 0), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cudaMallocPitch(&p, &pitch, 0, 10), cudaErrorInvalidValue);
    EXPECT(cudaMallocPitch(&p, &pitch, 1 << 20, 1 << 22), cudaErrorMemoryAllocation);
    EXPECT(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAllocPitch(&d, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cudaMallocHost(NULL, 100), cudaErrorInvalidValue);
    EXPECT(cudaHostAlloc(&p, TOO_BIG, 0), cudaErrorMemoryAllocation);
    EXPECT(cuMemHostAlloc(&p, TOO_BIG, 0), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cuMemAllocHost(&p, TOO_BIG), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cudaMalloc(&p, 5 * MiB), cudaSuccess);
    EXPECT(cudaMalloc(&p, TOO_BIG), cudaErrorMemoryAllocation);
    EXPECT(cudaFree(keep), cudaSuccess);
    return 0;
}
