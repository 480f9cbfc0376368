/* other_device: allocations and failures on a device that is not the
 * calling thread's current one, on three 4 GiB devices with no context
 * reserve (VRAMTRACE_SIM_DEVICES=3, VRAMTRACE_SIM_CONTEXT_RESERVE=0):
 *
 *   - device 1 holds 512 MiB, device 2 has an active context and nothing
 *     else; device 0 holds 1 GiB and is current from then on;
 *   - a cuMemCreate of 2 MiB on device 2 (the first allocation there) and
 *     one of 16 TiB on device 1, which fails: cuMemCreate allocates on the
 *     device its properties name, whatever the current context's device;
 *   - a cuMemCreate of 16 TiB on device 2, which fails.
 *
 * cuMemGetInfo answers for the current context's device only, and the
 * preload took the memory sample of each failure (and of a device's first
 * allocation) from it: device 0's free bytes were given for the failures on
 * devices 1 and 2, and device 2's first sample made device 0's gigabyte
 * look used outside the recording there. The ledger's fail lines give each
 * device's own free bytes (check_ledger.py, check_stderr.py), and
 * nothing but the program uses device 2 (CORPUS_EXPECT: no bytes outside
 * the recording at its failure).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "corpus.h"

static CUresult create(int device, size_t bytes, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return cuMemCreate(h, bytes, &prop, 0);
}

int main(void)
{
    void *on1, *on0;
    CUmemGenericAllocationHandle small, none;
    int current;
    EXPECT(cudaSetDevice(1), cudaSuccess);
    EXPECT(cudaMalloc(&on1, 512 * MiB), cudaSuccess);
    EXPECT(cudaSetDevice(2), cudaSuccess);
    EXPECT(cudaFree(NULL), cudaSuccess); /* its context, nothing allocated */
    EXPECT(cudaSetDevice(0), cudaSuccess);
    EXPECT(cudaMalloc(&on0, 1024 * MiB), cudaSuccess);

    EXPECT(create(2, 2 * MiB, &small), CUDA_SUCCESS);
    EXPECT(create(1, MiB << 24, &none), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(create(2, MiB << 24, &none), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cudaGetDevice(&current), cudaSuccess);
    REQUIRE(current == 0); /* the preload's samples left the current device alone */

    EXPECT(cuMemRelease(small), CUDA_SUCCESS);
    EXPECT(cudaFree(on0), cudaSuccess);
    EXPECT(cudaSetDevice(1), cudaSuccess);
    EXPECT(cudaFree(on1), cudaSuccess);
    return 0;
}
