/* pool_drain_growth: a growing run beside a pool destroyed while some of its
 * memory is outstanding. A pool of the program's own (release threshold the
 * most) takes 256 MiB in reserve; 64 + 32 MiB of it are allocated, an NVTX
 * range "setup" ends (the preload samples the pools used by name), the pool
 * is destroyed (the driver keeps it, and all its 256 MiB, until its last
 * allocation's free) and the 32 MiB freed: the pool now holds 192 MiB that
 * no allocation uses. Then CORPUS_GROW_STEPS NVTX ranges "step" keep 64 MiB
 * more each (corpus_grow) on a 2 GiB device: the exit line's projection and
 * the report's must count the 192 MiB as taken (growth_projection.sh: the
 * step the same run dies at). Until session 37 the preload's projection
 * dropped a destroyed pool's free reserve at the destroy. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "corpus.h"

int main(void)
{
    cudaMemPool_t pool;
    struct cudaMemPoolProps props = {0};
    uint64_t most = UINT64_MAX;
    void *big, *kept, *other;
    EXPECT(cudaSetDevice(0), cudaSuccess);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    EXPECT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &most), cudaSuccess);
    nvtxRangePushA("setup");
    EXPECT(cudaMallocFromPoolAsync(&big, 256 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaFreeAsync(big, NULL), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&kept, 64 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&other, 32 * MiB, pool, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    nvtxRangePop();
    EXPECT(cudaMemPoolDestroy(pool), cudaSuccess);
    EXPECT(cudaFreeAsync(other, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    corpus_grow(getenv("CORPUS_GROW_STEPS") ? atoi(getenv("CORPUS_GROW_STEPS")) : 12);
    return 0;
}
