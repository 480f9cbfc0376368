/* The default backend: the CUDA runtime of the current device. */
#include "alloc_internal.h"

#include <cuda_runtime_api.h>

static int cuda_malloc(void *ctx, void **p, size_t bytes)
{
    (void)ctx;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess)
        (void)cudaGetLastError(); /* clear it, as PyTorch's alloc_block does */
    return (int)e;
}

static int cuda_free(void *ctx, void *p)
{
    (void)ctx;
    return (int)cudaFree(p);
}

static int cuda_mem_get_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    (void)ctx;
    return (int)cudaMemGetInfo(free_bytes, total_bytes);
}

static const ga_backend cuda_backend = {
    .malloc = cuda_malloc,
    .free = cuda_free,
    .mem_get_info = cuda_mem_get_info,
    .ctx = NULL,
};

const ga_backend *ga_cuda_backend(void)
{
    return &cuda_backend;
}
