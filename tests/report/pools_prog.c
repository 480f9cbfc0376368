/* pools_prog.c: many stream-ordered pools, for pools_test.sh.
 *   pools_prog N
 * Makes N pools of its own on device 0 (cudaMemPoolCreate, release threshold
 * UINT64_MAX: a pool keeps what it reserved), then 3 steps (NVTX ranges
 * "step"), each taking and giving back 8 to 64 MiB (by pool) from every
 * pool with cudaMallocFromPoolAsync. Prints "pools reserved B": the pools'
 * reserved bytes at the end (cudaMemPoolAttrReservedMemCurrent, summed),
 * the most they held, as nothing is released. Exit 0, 1 on a CUDA error. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_N 256

static int make_pool(cudaMemPool_t *pool)
{
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    uint64_t keep = UINT64_MAX;
    return cudaMemPoolCreate(pool, &props) == cudaSuccess &&
           cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
}

int main(int argc, char **argv)
{
    int n = argc == 2 ? atoi(argv[1]) : 0;
    if (n < 1 || n > MAX_N) {
        fprintf(stderr, "usage: pools_prog N (1-%d)\n", MAX_N);
        return 2;
    }
    static cudaMemPool_t pools[MAX_N];
    cudaStream_t stream;
    if (cudaStreamCreate(&stream) != cudaSuccess)
        return 1;
    for (int i = 0; i < n; i++)
        if (!make_pool(&pools[i]))
            return 1;
    for (int step = 0; step < 3; step++) {
        nvtxRangePushA("step");
        for (int i = 0; i < n; i++) {
            void *p = NULL;
            size_t size = (size_t)(8 + (i * 7 + step * 13) % 57) << 20;
            if (cudaMallocFromPoolAsync(&p, size, pools[i], stream) != cudaSuccess ||
                cudaFreeAsync(p, stream) != cudaSuccess)
                return 1;
        }
        if (cudaStreamSynchronize(stream) != cudaSuccess)
            return 1;
        nvtxRangePop();
    }
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        uint64_t r = 0;
        if (cudaMemPoolGetAttribute(pools[i], cudaMemPoolAttrReservedMemCurrent, &r) != cudaSuccess)
            return 1;
        sum += r;
    }
    printf("pools reserved %llu\n", (unsigned long long)sum);
    return 0;
}
