/* first_calls: 64 threads released together by a barrier each make the
 * process's first CUDA call (cudaMalloc, then cudaFree). The trace starts
 * at the first hooked call, so every thread but one arrives while another
 * is starting it: each must wait and be recorded. (Before the fix in
 * interpose/lifecycle.c, a thread that lost the race to start the session
 * returned unrecorded: 31 of 32 allocations in 30 of 40 runs.) */
#include <cuda_runtime_api.h>
#include <pthread.h>

#define CORPUS_THREADS
#include "corpus.h"

#define THREADS 64
static pthread_barrier_t bar;

static void *worker(void *arg)
{
    void *p = NULL;
    size_t t = (size_t)(uintptr_t)arg;
    pthread_barrier_wait(&bar);
    EXPECT(cudaMalloc(&p, 1000 + t), cudaSuccess);
    EXPECT(cudaFree(p), cudaSuccess);
    return NULL;
}

int main(void)
{
    REQUIRE(pthread_barrier_init(&bar, NULL, THREADS) == 0);
    corpus_run_threads(THREADS, worker);
    return 0;
}
