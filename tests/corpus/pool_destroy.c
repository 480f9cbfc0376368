/* pool_destroy: a pool of the program's own keeps 256 MiB in reserve (its
 * release threshold the most) after its allocation is freed; a failure
 * samples it (256 MiB of free reserve: not use outside the recording);
 * then the program destroys it, which gives the 256 MiB back to the
 * device, and the next failure must not count the destroyed pool's reserve
 * either way (the report kept its last sample until session 34: the device
 * memory it held again counted as the pool's, so the use outside the
 * recording came out 256 MiB short). Then a pool made again (the handle
 * may be the same) and taken from, freed, then a third failure; last, a
 * pool with 128 MiB in reserve destroyed while 64 + 32 MiB of it are
 * outstanding, which keeps the pool, and its whole reserve (its release
 * threshold the most), until their last free: a fourth failure after the
 * destroy (32 MiB of free reserve), a fifth after the 32 MiB free (64 MiB
 * of free reserve: the pool's state at the destroy no longer holds) and a
 * sixth after the last free, when the driver has released the pool: none of
 * its reserve may count (until session 37 the report kept the state at the
 * destroy for good: live_reserved_bytes 160 MiB where the device had 192
 * MiB in use less its context reserve at the fifth, 128 where it had 64 at
 * the sixth). Last, a pool that gives its free reserve back at
 * synchronizations (release threshold 0) destroyed with 32 of its 256 MiB
 * outstanding: the synchronization after gives the other 224 back, which
 * the device's current pool then takes; a memory sample's round of pool
 * samples holds 256 MiB (32 + 224), never the destroyed pool's 256 beside
 * the current pool's 224 (the recorder's exit line and the report's
 * pool_reserved_peak_bytes said 480 MiB until session 41, where the pools
 * never held more than 256 at once: check_stderr.py and check_ledger.py
 * against the sim's ledger). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "corpus.h"

static cudaMemPool_t pool_make(void)
{
    cudaMemPool_t pool;
    struct cudaMemPoolProps props = {0};
    cuuint64_t most = UINT64_MAX;
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    EXPECT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &most), cudaSuccess);
    return pool;
}

/* size from pool, freed; the pool keeps it in reserve. */
static void take_and_free(cudaMemPool_t pool, size_t size)
{
    void *p;
    cuuint64_t reserved = 0;
    EXPECT(cudaMallocFromPoolAsync(&p, size, pool, NULL), cudaSuccess);
    EXPECT(cudaFreeAsync(p, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    EXPECT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
           cudaSuccess);
    REQUIRE(reserved >= size);
}

/* A pool with release threshold 0 destroyed with 32 of its 256 MiB
 * outstanding; the 224 it gives back at the next synchronization the
 * current pool takes, then a memory sample (its round of pool samples). */
static void drained_unseen(void)
{
    cudaMemPool_t pool;
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    EXPECT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    void *outstanding, *freed, *current;
    size_t free_b, total;
    EXPECT(cudaMallocFromPoolAsync(&outstanding, 32 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&freed, 224 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaFreeAsync(freed, NULL), cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess); /* gives the 224 back */
    EXPECT(cudaMallocAsync(&current, 224 * MiB, NULL), cudaSuccess);
    EXPECT(cudaMemGetInfo(&free_b, &total), cudaSuccess);
    EXPECT(cudaFreeAsync(current, NULL), cudaSuccess);
    EXPECT(cudaFreeAsync(outstanding, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
}

int main(void)
{
    void *kept, *none;
    EXPECT(cudaSetDevice(0), cudaSuccess);
    EXPECT(cudaMalloc(&kept, 64 * MiB), cudaSuccess);
    cudaMemPool_t pool = pool_make();
    take_and_free(pool, 256 * MiB);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation); /* samples the pool */
    EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    pool = pool_make();
    take_and_free(pool, 128 * MiB);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
    /* destroyed with an allocation outstanding: the pool lives on until its
     * free (CUDA Runtime API, cudaMemPoolDestroy), its memory held */
    void *outstanding, *other;
    pool = pool_make();
    take_and_free(pool, 128 * MiB);
    EXPECT(cudaMallocFromPoolAsync(&outstanding, 64 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&other, 32 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    EXPECT(cudaFreeAsync(other, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess); /* the reserve stays */
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    EXPECT(cudaFreeAsync(outstanding, NULL), cudaSuccess); /* the pool goes */
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    drained_unseen();
    EXPECT(cudaFree(kept), cudaSuccess);
    return 0;
}
