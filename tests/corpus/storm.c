/* storm: 8 threads allocate 16 buffers each and all hold them at a barrier
 * (the peak: every buffer live), free half, meet again, allocate 8 smaller
 * ones, meet, free everything. Barriers make the peak deterministic. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#define CORPUS_THREADS
#include "corpus.h"

#define THREADS 8
#define BUFS 16
static pthread_barrier_t bar;

static void *worker(void *arg)
{
    size_t t = (size_t)(uintptr_t)arg;
    void *p[BUFS], *q[BUFS / 2];
    for (size_t i = 0; i < BUFS; i++)
        EXPECT(cudaMalloc(&p[i], (t + 1) * (i + 1) * 1000), cudaSuccess);
    pthread_barrier_wait(&bar);
    for (size_t i = 0; i < BUFS; i += 2)
        EXPECT(cudaFree(p[i]), cudaSuccess);
    pthread_barrier_wait(&bar);
    for (size_t i = 0; i < BUFS / 2; i++)
        EXPECT(cudaMalloc(&q[i], 512 + t), cudaSuccess);
    pthread_barrier_wait(&bar);
    for (size_t i = 1; i < BUFS; i += 2)
        EXPECT(cudaFree(p[i]), cudaSuccess);
    for (size_t i = 0; i < BUFS / 2; i++)
        EXPECT(cudaFree(q[i]), cudaSuccess);
    return NULL;
}

int main(void)
{
    REQUIRE(pthread_barrier_init(&bar, NULL, THREADS) == 0);
    corpus_run_threads(THREADS, worker);
    return 0;
}
