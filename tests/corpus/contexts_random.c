/* contexts_random: seeded random driver contexts on two devices and several
 * threads, so that the device each allocation, free and failure is recorded
 * on, and the memory a context's end frees, are held against the sim's
 * ledger on patterns nobody chose. Each thread, at random:
 *   - creates a context on either device (cuCtxCreate: current to it, on
 *     top of its stack), or retains a device's primary context;
 *   - makes any context current (cuCtxSetCurrent), pushes one
 *     (cuCtxPushCurrent) or pops its top (cuCtxPopCurrent), or makes a
 *     device's primary context current through the runtime (cudaSetDevice);
 *   - allocates 1 B to 32 MiB in the current context through the runtime
 *     (cudaMalloc, cudaMallocAsync on the legacy stream) or the driver
 *     (cuMemAlloc); now and then more than the device has (out of memory);
 *   - frees any live allocation (cudaFree, cuMemFree) whatever context is
 *     current;
 *   - destroys a context it created (cuCtxDestroy: its allocations die with
 *     it; a thread that had it current makes device 0's primary context
 *     current before its next call);
 *   - asks cudaMemGetInfo.
 *
 *   corpus_contexts_random SEED [OPS]    OPS operations per thread (default 300)
 *
 * One mutex serializes the operations, so the ledger's order is the
 * trace's. Contexts and allocations are left at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 3
#define DEVICES 2
#define CONTEXTS 8
#define LIVE 256

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int ops_per_thread = 300;
static unsigned long long seed;

/* Contexts: the devices' primary ones first (retained at start), then the
 * created ones not destroyed. */
static struct context {
    CUcontext ctx;
    int device;
    bool created;
} contexts[DEVICES + CONTEXTS];
static int ncontexts;
/* Contexts destroyed (a worker that had one current, or pushed, must not use
 * it again): a generation each worker compares with its own. */
static unsigned destroyed_gen;

static struct live {
    CUdeviceptr p;
    CUcontext ctx;
    bool runtime;
} live[LIVE];
static int nlive;
static int oom, created, destroyed;

static struct worker {
    unsigned long long rng;
    unsigned gen; /* destroyed_gen when its stack was last known good */
    int pushed;   /* contexts it pushed (its stack above the bottom) */
} workers[WORKERS];

/* One of 0 .. n-1, from w's generator. */
static unsigned pick(struct worker *w, unsigned n)
{
    return corpus_pick(&w->rng, n);
}

/* 1 B to 32 MiB, log-uniform. */
static size_t some_size(struct worker *w)
{
    size_t size = (size_t)1 << pick(w, 25);
    return size + pick(w, (unsigned)size);
}

/* After another thread destroyed a context, w's current one or one under it
 * may be gone: w's stack emptied and device 0's primary context made
 * current. */
static void settle(struct worker *w)
{
    if (w->gen == destroyed_gen)
        return;
    CUcontext popped;
    while (w->pushed > 0) {
        cuCtxPopCurrent(&popped); /* may be a destroyed one's: no result asked */
        w->pushed--;
    }
    EXPECT(cuCtxSetCurrent(contexts[0].ctx), CUDA_SUCCESS);
    w->gen = destroyed_gen;
}

static void op_create(struct worker *w)
{
    CUcontext ctx;
    int device = (int)pick(w, DEVICES);
    if (ncontexts == DEVICES + CONTEXTS)
        return;
    EXPECT(cuCtxCreate(&ctx, NULL, 0, device), CUDA_SUCCESS);
    contexts[ncontexts++] = (struct context){ctx, device, true};
    w->pushed++;
    created++;
}

static void op_current(struct worker *w)
{
    struct context *c = &contexts[pick(w, (unsigned)ncontexts)];
    CUcontext popped;
    switch (pick(w, 4)) {
    case 0:
        EXPECT(cuCtxSetCurrent(c->ctx), CUDA_SUCCESS);
        break;
    case 1:
        EXPECT(cuCtxPushCurrent(c->ctx), CUDA_SUCCESS);
        w->pushed++;
        break;
    case 2:
        if (w->pushed > 0) {
            EXPECT(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
            w->pushed--;
        }
        break;
    default:
        EXPECT(cudaSetDevice((int)pick(w, DEVICES)), cudaSuccess);
    }
}

static void keep(CUdeviceptr p, bool runtime)
{
    CUcontext ctx;
    REQUIRE(nlive < LIVE);
    EXPECT(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    live[nlive++] = (struct live){p, ctx, runtime};
}

/* A result of either API as a runtime one: success, out of memory, or -1. */
static int outcome(int rc, bool runtime)
{
    if (runtime)
        return rc == cudaSuccess ? 0 : rc == cudaErrorMemoryAllocation ? 2 : -1;
    return rc == CUDA_SUCCESS ? 0 : rc == CUDA_ERROR_OUT_OF_MEMORY ? 2 : -1;
}

static void op_alloc(struct worker *w)
{
    size_t size = pick(w, 10) ? some_size(w) : (size_t)8 << 30;
    CUdeviceptr p = 0;
    unsigned how = pick(w, 3);
    int rc;
    if (nlive == LIVE)
        return;
    if (how == 0)
        rc = outcome(cudaMalloc((void **)&p, size), true);
    else if (how == 1)
        rc = outcome(cudaMallocAsync((void **)&p, size, cudaStreamLegacy), true);
    else
        rc = outcome(cuMemAlloc(&p, size), false);
    REQUIRE(rc >= 0);
    if (rc == 2) {
        cudaGetLastError();
        oom++;
        return;
    }
    if (how == 1)
        EXPECT(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    keep(p, how < 2);
}

static void op_free(struct worker *w)
{
    if (!nlive)
        return;
    int k = (int)pick(w, (unsigned)nlive);
    if (pick(w, 2))
        EXPECT(cudaFree((void *)live[k].p), cudaSuccess);
    else
        EXPECT(cuMemFree(live[k].p), CUDA_SUCCESS);
    live[k] = live[--nlive];
}

/* A created context destroyed, with what was allocated in it. */
static void op_destroy(struct worker *w)
{
    int i = DEVICES + (int)pick(w, CONTEXTS);
    if (i >= ncontexts)
        return;
    CUcontext ctx = contexts[i].ctx;
    EXPECT(cuCtxDestroy(ctx), CUDA_SUCCESS);
    contexts[i] = contexts[--ncontexts];
    for (int k = 0; k < nlive;)
        if (live[k].ctx == ctx)
            live[k] = live[--nlive];
        else
            k++;
    destroyed_gen++;
    destroyed++;
    settle(w);
}

static void op_meminfo(struct worker *w)
{
    size_t f, t;
    (void)w;
    EXPECT(cudaMemGetInfo(&f, &t), cudaSuccess);
}

static void (*const ops[])(struct worker *) = {op_create,  op_current, op_current, op_alloc,
                                               op_alloc,   op_alloc,   op_free,    op_free,
                                               op_destroy, op_meminfo};

static void *worker(void *arg)
{
    struct worker *w = &workers[(uintptr_t)arg];
    pthread_mutex_lock(&big);
    EXPECT(cuCtxSetCurrent(contexts[0].ctx), CUDA_SUCCESS);
    w->gen = destroyed_gen;
    pthread_mutex_unlock(&big);
    for (int i = 0; i < ops_per_thread; i++) {
        pthread_mutex_lock(&big);
        settle(w);
        ops[pick(w, sizeof ops / sizeof ops[0])](w);
        pthread_mutex_unlock(&big);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    corpus_seed_args(argc, argv, &seed, &ops_per_thread);
    EXPECT(cuInit(0), CUDA_SUCCESS);
    for (int d = 0; d < DEVICES; d++) {
        EXPECT(cuDevicePrimaryCtxRetain(&contexts[d].ctx, d), CUDA_SUCCESS);
        contexts[d].device = d;
        ncontexts++;
    }
    for (int i = 0; i < WORKERS; i++)
        workers[i].rng = seed * 7919 + (unsigned long long)i;
    corpus_run_threads(WORKERS, worker);
    printf("contexts_random: seed %llu, %d contexts made, %d destroyed, %d out of memory, %d live "
           "at exit\n",
           seed, created, destroyed, oom, nlive);
    return 0;
}
