/* pool_kinds: pools of pinned host memory (cudaMemPoolCreate at
 * cudaMemLocationTypeHost, and at cudaMemLocationTypeHostNuma node 0): their
 * allocations by name (runtime and driver) are host memory, none of the
 * device's. One fails past the pool's maxSize (out of memory, its api the
 * from-pool call's), a smaller one then succeeds (no retry of it); one is
 * left at exit (a host leak). Then a managed pool (CUDA 13,
 * cudaMemAllocationTypeManaged, preferred location device 0): its
 * allocations are managed memory of device 0, one past its maxSize fails,
 * one is left at exit. Before session 40 vramtrace recorded all of them as
 * device memory. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#include "corpus.h"

static cudaMemPool_t make_pool(enum cudaMemAllocationType type, enum cudaMemLocationType at,
                               size_t max_size)
{
    struct cudaMemPoolProps props;
    cudaMemPool_t pool;
    memset(&props, 0, sizeof props);
    props.allocType = type;
    props.location.type = at;
    props.location.id = 0;
    props.maxSize = max_size;
    EXPECT(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    return pool;
}

int main(void)
{
    cudaStream_t s;
    void *a, *b, *c, *d, *dev;
    cuuint64_t used = 0, reserved = 0;
    EXPECT(cudaStreamCreate(&s), cudaSuccess);
    cudaMemPool_t host = make_pool(cudaMemAllocationTypePinned, cudaMemLocationTypeHost, 4 * MiB);
    cudaMemPool_t numa = make_pool(cudaMemAllocationTypePinned, cudaMemLocationTypeHostNuma, 0);
    EXPECT(cudaMallocAsync(&dev, 8 * MiB, s), cudaSuccess); /* the device's own */
    EXPECT(cudaMallocFromPoolAsync(&a, 3 * MiB, host, s), cudaSuccess);
    EXPECT(cuMemAllocFromPoolAsync((CUdeviceptr *)&b, 2 * MiB, (CUmemoryPool)host, (CUstream)s),
           CUDA_ERROR_OUT_OF_MEMORY); /* past its maxSize */
    EXPECT(cuMemAllocFromPoolAsync((CUdeviceptr *)&b, MiB, (CUmemoryPool)host, (CUstream)s),
           CUDA_SUCCESS);
    EXPECT(cudaMemPoolGetAttribute(host, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
    EXPECT(cudaMemPoolGetAttribute(host, cudaMemPoolAttrReservedMemCurrent, &reserved),
           cudaSuccess);
    REQUIRE_EQ(used, 4 * MiB);
    REQUIRE_EQ(reserved, 4 * MiB); /* nothing reserved beyond its allocations */
    memset(a, 1, 3 * MiB);         /* host memory: the CPU can touch it */
    EXPECT(cudaMallocFromPoolAsync(&c, 16 * MiB, numa, s), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&d, 5 * MiB, numa, s), cudaSuccess);
    EXPECT(cudaFreeAsync(c, s), cudaSuccess);
    EXPECT(cuMemFreeAsync((CUdeviceptr)a, (CUstream)s), CUDA_SUCCESS);
    EXPECT(cudaFreeAsync(d, s), cudaSuccess);
    EXPECT(cudaFreeAsync(dev, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT(cudaMemPoolDestroy(numa), cudaSuccess);
    cudaMemPool_t managed =
        make_pool(cudaMemAllocationTypeManaged, cudaMemLocationTypeDevice, 16 * MiB);
    void *m1, *m2, *m3;
    EXPECT(cudaMallocFromPoolAsync(&m1, 6 * MiB, managed, s), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&m2, 12 * MiB, managed, s), cudaErrorMemoryAllocation);
    cudaGetLastError();
    EXPECT(cuMemAllocFromPoolAsync((CUdeviceptr *)&m2, 3 * MiB, (CUmemoryPool)managed, (CUstream)s),
           CUDA_SUCCESS);
    EXPECT(cudaMallocFromPoolAsync(&m3, 5 * MiB, managed, s), cudaSuccess);
    EXPECT(cudaMemPoolGetAttribute(managed, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
    REQUIRE_EQ(used, 14 * MiB);
    EXPECT(cudaFreeAsync(m1, s), cudaSuccess);
    EXPECT(cuMemFreeAsync((CUdeviceptr)m3, (CUstream)s), CUDA_SUCCESS);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
    return 0; /* b (1 MiB of the host pool) and m2 (3 MiB, managed) left at exit */
}
