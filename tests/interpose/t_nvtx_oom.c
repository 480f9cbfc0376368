/* t_nvtx_oom: threads that end NVTX ranges while others fail allocations, at
 * once. The exit line's growth fit (interpose/iterfit.c) runs at range ends
 * and takes its lock; a failed allocation records a memory sample under the
 * preload's order lock and takes the same lock: the two once nested the
 * other way round as well (the fit read the live counters, which take the
 * order lock, under its own), and hung. Prints "done" when every thread
 * finished. usage: t_nvtx_oom [ROUNDS] */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4 /* half end ranges, half fail allocations */

static long rounds = 2000;

static void *ranges(void *arg)
{
    (void)arg;
    for (long i = 0; i < 20 * rounds; i++) {
        nvtxRangePushA("step");
        nvtxRangePushA("inner");
        nvtxRangePop();
        nvtxRangePop();
    }
    return NULL;
}

static void *failures(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, (size_t)1 << 44) == cudaSuccess) /* 16 TiB: always fails */
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    if (argc > 1)
        rounds = atol(argv[1]);
    void *p = NULL;
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess) /* the context and a live block */
        return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, i % 2 ? failures : ranges, NULL);
    int rc = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        rc |= r != NULL;
    }
    cudaFree(p);
    puts(rc ? "a 16 TiB allocation succeeded" : "done");
    return rc;
}
