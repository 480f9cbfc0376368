/* device_reset: cudaDeviceReset with live allocations of every device kind
 * frees them all (their pointers are invalid afterwards); allocations after
 * the reset work; one of those is leaked. */
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    void *d, *m, *a, *after;
    size_t f0, f1, t;
    EXPECT(cudaMalloc(&d, 10 * MiB), cudaSuccess);
    EXPECT(cudaMemGetInfo(&f0, &t), cudaSuccess);
    EXPECT(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal), cudaSuccess);
    EXPECT(cudaMallocAsync(&a, 4 * MiB, 0), cudaSuccess);
    EXPECT(cudaDeviceReset(), cudaSuccess);
    EXPECT(cudaFree(d), cudaErrorInvalidValue);
    EXPECT(cudaMalloc(&after, 6 * MiB), cudaSuccess);
    EXPECT(cudaMemGetInfo(&f1, &t), cudaSuccess);
    /* 10 MiB gone, 6 MiB taken: on the simulated device only (an H200's new
     * context took 32 MiB more of its own: f1 was f0 - 28 MiB) */
    if (getenv("VRAMTRACE_SIM_DEVICE"))
        REQUIRE_EQ(f1, f0 + 4 * MiB);
    EXPECT(cudaMalloc(&d, 1 * MiB), cudaSuccess);
    EXPECT(cudaFree(d), cudaSuccess);
    return 0;
}
