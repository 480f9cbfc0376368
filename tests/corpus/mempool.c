/* mempool: the default pool with a 64 MiB release threshold: the pool keeps
 * its memory across synchronizations up to the threshold, then is trimmed.
 * The pool's reserve is not an allocation; each cudaMallocAsync is. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    cudaMemPool_t pool;
    cuuint64_t threshold = 64 * MiB, reserved = 0, used = 0;
    void *p[8];
    EXPECT(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 8; i++)
            EXPECT(cudaMallocAsync(&p[i], (size_t)(i + 1) * MiB, 0), cudaSuccess);
        for (int i = 0; i < 8; i++)
            EXPECT(cudaFreeAsync(p[i], 0), cudaSuccess);
        EXPECT(cudaStreamSynchronize(0), cudaSuccess);
        EXPECT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
               cudaSuccess);
        REQUIRE(reserved > 0 && reserved <= threshold);
    }
    EXPECT(cudaMallocAsync(&p[0], 5 * MiB, 0), cudaSuccess); /* leaked */
    EXPECT(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    EXPECT(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
    REQUIRE_EQ(used, 5 * MiB); /* requested bytes: an H200 said 5 MiB (the sim once said 6) */
    return 0;
}
