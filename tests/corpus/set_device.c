/* set_device: two threads, each on its own device (cudaSetDevice per
 * thread), allocate there; device 1's thread leaks one buffer and makes an
 * allocation that does not fit. Env: VRAMTRACE_SIM_DEVICES=2,
 * VRAMTRACE_SIM_MEMORY=1GiB. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "corpus.h"

static void *on_device(void *arg)
{
    int dev = (int)(uintptr_t)arg, cur = -1;
    void *p[3] = {0}, *huge = NULL;
    struct cudaPointerAttributes attr;
    EXPECT(cudaSetDevice(dev), cudaSuccess);
    EXPECT(cudaGetDevice(&cur), cudaSuccess);
    REQUIRE(cur == dev);
    for (int i = 0; i < 3; i++)
        EXPECT(cudaMalloc(&p[i], (size_t)(dev + 1) * (size_t)(i + 1) * MiB), cudaSuccess);
    EXPECT(cudaPointerGetAttributes(&attr, p[0]), cudaSuccess);
    REQUIRE(attr.device == dev);
    if (dev == 1)
        EXPECT(cudaMalloc(&huge, 2048 * MiB), cudaErrorMemoryAllocation);
    for (int i = 0; i < 3 - dev; i++)
        EXPECT(cudaFree(p[i]), cudaSuccess);
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    int n = 0;
    EXPECT(cudaGetDeviceCount(&n), cudaSuccess);
    REQUIRE(n == 2);
    for (int d = 0; d < 2; d++)
        REQUIRE(pthread_create(&t[d], NULL, on_device, (void *)(uintptr_t)d) == 0);
    for (int d = 0; d < 2; d++)
        REQUIRE(pthread_join(t[d], NULL) == 0);
    return 0;
}
