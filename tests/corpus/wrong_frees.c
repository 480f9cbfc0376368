/* wrong_frees: live allocations given to the wrong API's free first
 * (device memory to cudaFreeHost and cuMemFreeHost, pinned host memory to
 * cudaFree and cuMemFree, a CUDA array to cudaFree), then freed by their
 * own API unless a wrong one took them. The sim refuses every wrong free
 * (cudaErrorInvalidValue, CUDA_ERROR_INVALID_VALUE) and keeps the memory;
 * whatever a real driver answers, the trace must follow it: the preload
 * records a free only when it took effect, and the ledger check holds the
 * report to what the driver did. A pinned block and a device block freed
 * wrongly are left live at exit, so a free recorded for a failed call shows
 * as a missing leak too. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "corpus.h"

/* Try each wrong free of the live allocations; true when one succeeded. */
static bool free_device_wrongly(void *d)
{
    return cudaFreeHost(d) == cudaSuccess || cuMemFreeHost(d) == CUDA_SUCCESS;
}

static bool free_pinned_wrongly(void *h)
{
    return cudaFree(h) == cudaSuccess || cuMemFree((CUdeviceptr)(uintptr_t)h) == CUDA_SUCCESS;
}

int main(void)
{
    void *d, *h, *d_left, *h_left;
    CUarray a;
    CUDA_ARRAY_DESCRIPTOR ad = {64, 64, CU_AD_FORMAT_FLOAT, 1};
    EXPECT(cudaMalloc(&d, 1 << 20), cudaSuccess);
    EXPECT(cudaMallocHost(&h, 4096), cudaSuccess);
    EXPECT(cuArrayCreate(&a, &ad), CUDA_SUCCESS);
    EXPECT(cudaMalloc(&d_left, 3 << 20), cudaSuccess);
    EXPECT(cudaMallocHost(&h_left, 8192), cudaSuccess);
    bool d_gone = free_device_wrongly(d), h_gone = free_pinned_wrongly(h);
    bool a_gone = cudaFree((void *)a) == cudaSuccess;
    free_device_wrongly(d_left); /* left live at exit unless this took it */
    free_pinned_wrongly(h_left);
    cudaGetLastError();
    if (!d_gone)
        EXPECT(cudaFree(d), cudaSuccess);
    if (!h_gone)
        EXPECT(cudaFreeHost(h), cudaSuccess);
    if (!a_gone)
        EXPECT(cuArrayDestroy(a), CUDA_SUCCESS);
    return 0;
}
