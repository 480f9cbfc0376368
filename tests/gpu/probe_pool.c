/* probe_pool: the stream-ordered pool's used and reserved bytes for single
 * allocations of several sizes and for two live ones; what
 * cuMemRetainAllocationHandle returns and how many releases a retained
 * handle takes. Ran on the H200 in the second GPU session
 * (h200-2026-11-28b/probe_pool.txt); probe_sim.py compares the simulated
 * device's answers. The three releases are the arguments of one printf,
 * which GCC on x86-64 evaluates right to left: the "release again" call
 * runs first. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
int main(void)
{
    cudaMemPool_t pool;
    printf("getpool %d\n", cudaDeviceGetDefaultMemPool(&pool, 0));
    size_t sizes[] = {1, 512, 513, 1 << 20, 5 << 20, (3 << 20) + 1, 2 << 20, 100 << 20};
    for (int i = 0; i < 8; i++) {
        void *p = 0;
        cuuint64_t used = 77, res = 77;
        int e1 = cudaMallocAsync(&p, sizes[i], 0), e2 = cudaStreamSynchronize(0);
        int e3 = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
        int e4 = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &res);
        printf("pool alloc %zu: rc %d %d %d %d used %llu reserved %llu\n", sizes[i], e1, e2, e3, e4,
               (unsigned long long)used, (unsigned long long)res);
        cudaFreeAsync(p, 0);
        cudaStreamSynchronize(0);
        cudaMemPoolTrimTo(pool, 0);
    }
    /* two live: 1 B and 5 MiB */
    void *a, *b;
    cuuint64_t used = 0;
    cudaMallocAsync(&a, 1, 0);
    cudaMallocAsync(&b, 5 << 20, 0);
    cudaStreamSynchronize(0);
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    printf("two live 1 + 5MiB: used %llu\n", (unsigned long long)used);
    /* retain: the handle's value */
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemGenericAllocationHandle h, r1;
    CUdeviceptr va;
    size_t sz = 2 << 20;
    cuMemCreate(&h, sz, &prop, 0);
    cuMemAddressReserve(&va, sz, 0, 0, 0);
    cuMemMap(va, sz, 0, h, 0);
    int e = cuMemRetainAllocationHandle(&r1, (void *)va);
    printf("retain %d same value %d (h %llx r %llx)\n", e, r1 == h, (unsigned long long)h,
           (unsigned long long)r1);
    printf("release h %d release r %d release again %d\n", cuMemRelease(h), cuMemRelease(r1),
           cuMemRelease(r1));
    printf("unmap %d\n", cuMemUnmap(va, sz));
    return 0;
}
