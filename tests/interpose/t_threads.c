/* t_threads: 8 threads x N cudaMalloc/cudaFree pairs at once; every pair
 * must be in the trace exactly once. usage: t_threads [N] */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>

#include "tbook.h"

#define THREADS 8

static long pairs = 100000;

static void *worker(void *arg)
{
    size_t size = 256 + 64 * (size_t)(uintptr_t)arg;
    for (long i = 0; i < pairs; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    uint64_t bytes = 0;
    char extra[160];
    void *p;
    if (argc > 1)
        pairs = atol(argv[1]);
    if (cudaMalloc(&p, 16) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 2; /* initialise the runtime once, before the threads */
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        if (rc)
            return 3;
        bytes += (uint64_t)pairs * (256 + 64 * (uint64_t)i);
    }
    /* the peak depends on the interleaving: not compared */
    snprintf(extra, sizeof extra, "allocs=%llu frees=%llu alloc_bytes=%llu leaked=0 failed=0",
             (unsigned long long)(THREADS * pairs + 1), (unsigned long long)(THREADS * pairs + 1),
             (unsigned long long)(bytes + 16));
    printf("expect: %s unmatched_frees=0 stackless_allocs=0 end=1\n", extra);
    return 0;
}
