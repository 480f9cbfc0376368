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
 * the sixth). */
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
    EXPECT(cudaFree(kept), cudaSuccess);
    return 0;
}
