/* pools_random: seeded random stream-ordered pools on two devices and
 * several threads, so that what the report says the process holds in pools
 * (their free reserve, live_reserved_bytes) and uses outside the recording
 * is held against the sim's ledger on patterns nobody chose. Each thread,
 * at random:
 *   - makes a pool on either device (cudaMemPoolCreate) with a release
 *     threshold of 0, 32 MiB or the most, one in three with a maxSize of
 *     64 to 256 MiB (its allocations fail past it, the device not full);
 *     one in four on the host instead (location host, or host NUMA node
 *     0): its allocations are pinned host memory, none of a device's; one
 *     in eight a managed pool (CUDA 13; preferred location none, the host
 *     or a device): its allocations are managed memory (before session 40
 *     vramtrace counted both as device memory of a device pool); half of
 *     those with a maxSize of 4 to 16 MiB, so that some of their
 *     allocations fail;
 *   - destroys a pool, with allocations outstanding or none (the driver
 *     keeps one with some, and its reserve, until their last free:
 *     docs/trace.md, "A destroyed pool"; before session 37 only pools
 *     without were destroyed here, and the report kept such a pool's
 *     reserve after that free). A pool whose release threshold is not the
 *     most has its outstanding allocations freed at once: its reserve
 *     between the destroy and that free follows the synchronizations and
 *     cannot be asked of the driver (a destroyed handle), so a failure
 *     there could not be held to the ledger;
 *   - makes a pool, or the device's default pool, the device's current pool
 *     (cudaDeviceSetMemPool), or sets a pool's release threshold;
 *   - allocates 1 B to 64 MiB from a pool by name (cudaMallocFromPoolAsync,
 *     cuMemAllocFromPoolAsync) or from a device's current pool
 *     (cudaMallocAsync, cuMemAllocAsync) on a stream of either device;
 *     now and then more than the device has (out of memory);
 *   - frees an allocation (cudaFreeAsync, cuMemFreeAsync; on any stream);
 *   - synchronizes (pools above their threshold give memory back), trims
 *     a pool (cudaMemPoolTrimTo), asks cudaMemGetInfo;
 *   - ends an NVTX range "step" and begins the next (the preload samples
 *     the pools at iteration ends);
 *   - fails a cudaMalloc of more than the device (a failure's sample).
 *
 *   corpus_pools_random SEED [OPS]    OPS operations per thread (default 300)
 *
 * One mutex serializes the operations, so the ledger's order is the
 * trace's. Allocations, pools and a current pool other than the default are
 * left at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 3
#define DEVICES 2
#define POOLS 8
#define LIVE 256

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int ops_per_thread = 300;
static unsigned long long seed;

/* The pools made and not destroyed, each with its device and outstanding
 * allocations; the devices' default pools. */
static struct pool {
    cudaMemPool_t pool;
    int device, outstanding; /* device -1: a host or managed pool */
    cuuint64_t threshold;    /* its release threshold */
} pools[POOLS];
static int npools;
static cudaMemPool_t defaults[DEVICES];
static cudaStream_t streams[DEVICES];

/* Live allocations, each with its pool (-1: a device's default pool, or
 * another pool no longer in pools[]: none counted). */
static struct live {
    void *p;
    int pool;
} live[LIVE];
static int nlive;
static int oom, made, made_host, made_managed, destroyed;
static int destroyed_busy; /* with allocations outstanding */

static struct worker {
    unsigned long long rng;
    int depth; /* NVTX ranges open */
} workers[WORKERS];

/* One of 0 .. n-1, from w's generator. */
static unsigned pick(struct worker *w, unsigned n)
{
    return corpus_pick(&w->rng, n);
}

/* 1 B to 64 MiB, log-uniform. */
static size_t some_size(struct worker *w)
{
    size_t size = (size_t)1 << pick(w, 26);
    return size + pick(w, (unsigned)size);
}

static cuuint64_t some_threshold(struct worker *w)
{
    static const cuuint64_t t[] = {0, 32 * MiB, UINT64_MAX};
    return t[pick(w, 3)];
}

static void op_create(struct worker *w)
{
    struct cudaMemPoolProps props;
    cuuint64_t threshold = some_threshold(w);
    if (npools == POOLS)
        return;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = (int)pick(w, DEVICES);
    unsigned where = pick(w, 8);
    bool host = where < 2, managed = where == 2;
    if (host) {
        props.location.type = pick(w, 2) ? cudaMemLocationTypeHost : cudaMemLocationTypeHostNuma;
        props.location.id = 0;
    }
    if (managed) { /* preferred location: none, the host or the device picked */
        static const enum cudaMemLocationType at[] = {
            cudaMemLocationTypeNone, cudaMemLocationTypeHost, cudaMemLocationTypeDevice};
        props.allocType = cudaMemAllocationTypeManaged;
        props.location.type = at[pick(w, 3)];
    }
    props.maxSize = pick(w, 3) ? 0 : (64 + 32 * pick(w, 7)) * MiB; /* its reserve bounded */
    if ((host || managed) && pick(w, 2)) /* its allocations bounded: some fail */
        props.maxSize = (4 + 4 * pick(w, 4)) * MiB;
    struct pool *p = &pools[npools];
    EXPECT(cudaMemPoolCreate(&p->pool, &props), cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrReleaseThreshold, &threshold),
           cudaSuccess);
    p->device = host || managed ? -1 : props.location.id;
    p->outstanding = 0;
    p->threshold = threshold;
    npools++;
    made++;
    made_host += host;
    made_managed += managed;
}

/* A pool destroyed (its device's current pool the default one again
 * first: a destroyed current pool would leave the device without one); its
 * outstanding allocations stay live, of no pool in pools[]. */
static void op_destroy(struct worker *w)
{
    if (!npools)
        return;
    int i = (int)pick(w, (unsigned)npools);
    cudaMemPool_t current = NULL;
    if (pools[i].device >= 0) /* a host pool is no device's current one */
        EXPECT(cudaDeviceGetMemPool(&current, pools[i].device), cudaSuccess);
    if (current == pools[i].pool)
        EXPECT(cudaDeviceSetMemPool(pools[i].device, defaults[pools[i].device]), cudaSuccess);
    EXPECT(cudaStreamSynchronize(streams[0]), cudaSuccess); /* its frees done */
    EXPECT(cudaStreamSynchronize(streams[1]), cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pools[i].pool), cudaSuccess);
    destroyed_busy += pools[i].outstanding > 0;
    for (int k = 0; k < nlive; k++) {
        if (live[k].pool != i)
            continue;
        live[k].pool = -1;
        if (pools[i].threshold != UINT64_MAX) { /* freed at once (see the top) */
            EXPECT(cudaFreeAsync(live[k].p, streams[pick(w, DEVICES)]), cudaSuccess);
            live[k--] = live[--nlive];
        }
    }
    pools[i] = pools[--npools];
    for (int k = 0; k < nlive; k++) /* the moved pool's allocations follow it */
        if (live[k].pool == npools)
            live[k].pool = i;
    destroyed++;
}

/* A device's current pool: one of its own, or its default pool again. */
static void op_set_current(struct worker *w)
{
    int device = (int)pick(w, DEVICES), i = npools ? (int)pick(w, (unsigned)npools) : -1;
    if (i >= 0 && pools[i].device == device && pick(w, 2))
        EXPECT(cudaDeviceSetMemPool(device, pools[i].pool), cudaSuccess);
    else
        EXPECT(cudaDeviceSetMemPool(device, defaults[device]), cudaSuccess);
}

static void op_threshold(struct worker *w)
{
    cuuint64_t threshold = some_threshold(w);
    int i = npools && pick(w, 2) ? (int)pick(w, (unsigned)npools) : -1;
    cudaMemPool_t pool = i >= 0 ? pools[i].pool : defaults[pick(w, DEVICES)];
    EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
    if (i >= 0)
        pools[i].threshold = threshold;
}

/* The index in pools[] of the device's current pool, -1 for another. */
static int current_index(int device)
{
    cudaMemPool_t current;
    EXPECT(cudaDeviceGetMemPool(&current, device), cudaSuccess);
    for (int i = 0; i < npools; i++)
        if (pools[i].pool == current)
            return i;
    return -1;
}

static void keep(void *p, int pool)
{
    REQUIRE(nlive < LIVE);
    live[nlive++] = (struct live){p, pool};
    if (pool >= 0)
        pools[pool].outstanding++;
}

/* A driver call's result as the runtime's: success, out of memory, or
 * another error (-1: a surprise). */
static int runtime_error(CUresult rc)
{
    return rc == CUDA_SUCCESS               ? cudaSuccess
           : rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                            : -1;
}

/* From a pool by name (runtime or driver) or from a device's current pool,
 * on either device's stream; one in ten asks more than the device has (not
 * of a host pool: the host has more). */
static void op_alloc(struct worker *w)
{
    cudaStream_t s = streams[pick(w, DEVICES)];
    size_t size = pick(w, 10) ? some_size(w) : (size_t)8 << 30;
    int by_name = npools && pick(w, 2), i = by_name ? (int)pick(w, (unsigned)npools) : -1;
    if (by_name && pools[i].device < 0 && size > 64 * MiB)
        size = some_size(w);
    int device = (int)pick(w, DEVICES), rc;
    void *p = NULL;
    if (nlive == LIVE)
        return;
    if (by_name && pick(w, 2))
        rc = cudaMallocFromPoolAsync(&p, size, pools[i].pool, s);
    else if (by_name)
        rc = runtime_error(cuMemAllocFromPoolAsync((CUdeviceptr *)&p, size,
                                                   (CUmemoryPool)pools[i].pool, (CUstream)s));
    else if (pick(w, 2))
        rc = cudaMallocAsync(&p, size, streams[device]);
    else
        rc = runtime_error(cuMemAllocAsync((CUdeviceptr *)&p, size, (CUstream)streams[device]));
    if (rc != cudaSuccess) {
        REQUIRE(rc == cudaErrorMemoryAllocation);
        cudaGetLastError();
        oom++;
        return;
    }
    keep(p, by_name ? i : current_index(device));
}

static void op_free(struct worker *w)
{
    if (!nlive)
        return;
    int k = (int)pick(w, (unsigned)nlive);
    cudaStream_t s = streams[pick(w, DEVICES)];
    if (pick(w, 2))
        EXPECT(cudaFreeAsync(live[k].p, s), cudaSuccess);
    else
        EXPECT(cuMemFreeAsync((CUdeviceptr)live[k].p, (CUstream)s), CUDA_SUCCESS);
    if (live[k].pool >= 0)
        pools[live[k].pool].outstanding--;
    live[k] = live[--nlive];
}

static void op_sync(struct worker *w)
{
    EXPECT(cudaStreamSynchronize(streams[pick(w, DEVICES)]), cudaSuccess);
}

static void op_trim(struct worker *w)
{
    cudaMemPool_t pool =
        npools && pick(w, 2) ? pools[pick(w, (unsigned)npools)].pool : defaults[pick(w, DEVICES)];
    EXPECT(cudaMemPoolTrimTo(pool, pick(w, 2) ? 0 : 16 * MiB), cudaSuccess);
}

static void op_meminfo(struct worker *w)
{
    size_t f, t;
    EXPECT(cudaSetDevice((int)pick(w, DEVICES)), cudaSuccess);
    EXPECT(cudaMemGetInfo(&f, &t), cudaSuccess);
}

static void op_step(struct worker *w)
{
    if (w->depth) {
        nvtxRangePop();
        w->depth--;
    }
    nvtxRangePushA("step");
    w->depth++;
}

static void op_fail(struct worker *w)
{
    void *p;
    EXPECT(cudaSetDevice((int)pick(w, DEVICES)), cudaSuccess);
    EXPECT(cudaMalloc(&p, (size_t)16 << 30), cudaErrorMemoryAllocation);
    cudaGetLastError();
    oom++;
}

static void (*const ops[])(struct worker *) = {
    op_create, op_destroy, op_set_current, op_threshold, op_alloc, op_alloc,
    op_alloc,  op_alloc,   op_free,        op_free,      op_free,  op_sync,
    op_trim,   op_meminfo, op_step,        op_step,      op_fail};

static void *worker(void *arg)
{
    struct worker *w = &workers[(uintptr_t)arg];
    EXPECT(cudaSetDevice(0), cudaSuccess); /* a context current for the driver's calls */
    for (int i = 0; i < ops_per_thread; i++) {
        pthread_mutex_lock(&big);
        ops[pick(w, sizeof ops / sizeof ops[0])](w);
        pthread_mutex_unlock(&big);
    }
    while (w->depth--)
        nvtxRangePop();
    return NULL;
}

int main(int argc, char **argv)
{
    corpus_seed_args(argc, argv, &seed, &ops_per_thread);
    for (int d = 0; d < DEVICES; d++) {
        EXPECT(cudaSetDevice(d), cudaSuccess);
        EXPECT(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking), cudaSuccess);
        EXPECT(cudaDeviceGetDefaultMemPool(&defaults[d], d), cudaSuccess);
    }
    EXPECT(cudaSetDevice(0), cudaSuccess);
    for (int i = 0; i < WORKERS; i++)
        workers[i].rng = seed * 7919 + (unsigned long long)i;
    corpus_run_threads(WORKERS, worker);
    for (int d = 0; d < DEVICES; d++)
        EXPECT(cudaStreamSynchronize(streams[d]), cudaSuccess);
    printf("pools_random: seed %llu, %d pools made (%d on the host, %d managed), %d destroyed "
           "(%d with allocations outstanding), %d out of memory, %d live at exit\n",
           seed, made, made_host, made_managed, destroyed, destroyed_busy, oom, nlive);
    return 0;
}
