/* bad_frees: cudaFree(NULL) succeeds and frees nothing; a double free and a
 * free of a pointer never allocated are cudaErrorInvalidValue and change
 * nothing; the same for cudaFreeHost and cuMemFree. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    void *p, *h;
    int local;
    EXPECT(cudaFree(NULL), cudaSuccess);
    EXPECT(cudaMalloc(&p, 4096), cudaSuccess);
    EXPECT(cudaFree(p), cudaSuccess);
    EXPECT(cudaFree(p), cudaErrorInvalidValue);
    EXPECT(cudaFree((char *)p + 1), cudaErrorInvalidValue);
    EXPECT(cudaFree(&local), cudaErrorInvalidValue);
    EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    EXPECT(cudaMallocHost(&h, 100), cudaSuccess);
    EXPECT(cudaFreeHost(h), cudaSuccess);
    EXPECT(cudaFreeHost(h), cudaErrorInvalidValue);
    EXPECT(cudaFreeHost(NULL), cudaSuccess);
    EXPECT(cuMemFree((CUdeviceptr)(uintptr_t)&local), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cudaMalloc(&p, 100), cudaSuccess); /* leaked */
    return 0;
}
