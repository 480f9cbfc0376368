/* producer_consumer: a producer thread allocates 4 x 64 MiB, hands the
 * pointers over and exits without another CUDA call; main then fails to get
 * 128 MiB on a 640 MiB device (304 MiB context reserve + 256 MiB live), frees
 * the producer's buffers and gets it. Env: VRAMTRACE_SIM_MEMORY=640MiB. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "corpus.h"

static void *bufs[4];

static void *produce(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++)
        EXPECT(cudaMalloc(&bufs[i], 64 * MiB), cudaSuccess);
    return NULL;
}

int main(void)
{
    pthread_t t;
    void *big = NULL;
    EXPECT(cudaFree(NULL), cudaSuccess); /* main's context first */
    REQUIRE(pthread_create(&t, NULL, produce, NULL) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    EXPECT(cudaMalloc(&big, 128 * MiB), cudaErrorMemoryAllocation);
    EXPECT(cudaGetLastError(), cudaErrorMemoryAllocation);
    for (int i = 0; i < 4; i++)
        EXPECT(cudaFree(bufs[i]), cudaSuccess);
    EXPECT(cudaMalloc(&big, 128 * MiB), cudaSuccess);
    EXPECT(cudaFree(big), cudaSuccess);
    return 0;
}
