/* t_tid_reuse: a thread id the kernel hands out again. The main thread
 * holds all but 1 GiB of the device. Thread A opens the NVTX range
 * "dead_range", allocates 1 MiB (kept live), fails to allocate 2 GiB and
 * exits without closing the range or retrying. The main thread frees its
 * block. Empty threads are then started and joined until one gets A's
 * thread id (the kernel's ids wrap at pid_max); that thread B allocates
 * 2 GiB, A's failed size, then the rest of the device but 8 MiB (both kept
 * live: the peak) outside any range, and exits. Last the main thread opens
 * the range "named_range", names itself (nvtxNameOsThread: a thread record
 * too, but no new thread) and allocates 1 MiB (kept live). By this source,
 * then: B's bytes are in no range, A's failure is never retried (B's 2 GiB
 * is no retry of it), the main thread's 1 MiB is in its range. Prints
 * "expect: no_range=B's bytes dead_range=1048576 named_range=1048576
 * recovered=0" and "reused TID after N threads" or, when no id came back
 * within the limit, "no reuse" and exits 77 (the caller skips).
 * usage: t_tid_reuse [LIMIT] */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GiB ((size_t)1 << 30)
#define MiB ((size_t)1 << 20)

static pid_t tid_a;
static size_t free_at_start; /* the device's free bytes before any block */

static pid_t my_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void *thread_a(void *arg)
{
    void *block = NULL, *fails = NULL;
    (void)arg;
    tid_a = my_tid();
    nvtxRangePushA("dead_range");
    if (cudaMalloc(&block, MiB) != cudaSuccess)
        return (void *)1;
    if (cudaMalloc(&fails, 2 * GiB) != cudaErrorMemoryAllocation) /* 1 GiB is free */
        return (void *)1;
    return NULL; /* the range stays open, the failure is never retried */
}

/* Thread B when it has A's id; any other thread only says its id. */
static void *thread_b(void *arg)
{
    pid_t *tid = arg;
    void *p = NULL, *q = NULL;
    if ((*tid = my_tid()) != tid_a)
        return NULL;
    if (cudaMalloc(&p, 2 * GiB) != cudaSuccess ||
        cudaMalloc(&q, free_at_start - 2 * GiB - 8 * MiB) != cudaSuccess)
        return (void *)1;
    return NULL;
}

static int run(pthread_t *t, void *(*fn)(void *), void *arg)
{
    void *r = NULL;
    if (pthread_create(t, NULL, fn, arg) != 0 || pthread_join(*t, &r) != 0)
        return 1;
    return r != NULL;
}

int main(int argc, char **argv)
{
    long limit = argc > 1 ? atol(argv[1]) : 100000, n = 0;
    pid_t tid = 0;
    pthread_t t;
    void *big = NULL;
    size_t total = 0;
    if (cudaMemGetInfo(&free_at_start, &total) != cudaSuccess || free_at_start < 4 * GiB)
        return 1;
    /* The kernel hands the ids below 300 out once (RESERVED_PIDS), so A's
     * must be above them to come back: in a new PID namespace they are the
     * first ones. */
    tid_a = -1;
    while (tid < 300 && n++ < limit)
        if (run(&t, thread_b, &tid))
            return 1;
    if (cudaMalloc(&big, free_at_start - GiB) != cudaSuccess || run(&t, thread_a, NULL) ||
        cudaFree(big) != cudaSuccess)
        return 1;
    for (n = 0; tid != tid_a && n < limit; n++)
        if (run(&t, thread_b, &tid))
            return 1;
    if (tid != tid_a) {
        printf("no reuse within %ld threads\n", limit);
        return 77;
    }
    void *named = NULL;
    nvtxRangePushA("named_range");
    nvtxNameOsThreadA((uint32_t)my_tid(), "renamed_main");
    if (cudaMalloc(&named, MiB) != cudaSuccess)
        return 1;
    nvtxRangePop();
    printf("expect: no_range=%zu dead_range=%zu named_range=%zu recovered=0\n",
           free_at_start - 8 * MiB, MiB, MiB);
    printf("reused TID after %ld threads\n", n);
    return 0;
}
