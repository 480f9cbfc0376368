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
 *
 * Then stream-ordered allocations with device 0 current, which take memory
 * on another device (CUDA Driver API, cuMemAllocAsync: "from the memory
 * pool current to the stream's device"; cuMemAllocFromPoolAsync: "The
 * specified memory pool may be from a device different than that of the
 * specified hStream"):
 *   - on a stream of device 1: 64 MiB, then 16 TiB, which fails (runtime),
 *     and 32 MiB through the driver (cuMemAllocAsync);
 *   - from a pool made on device 2, on device 0's stream: 16 TiB, which
 *     fails, then 32 MiB;
 *   - from device 1's default pool, on device 0's stream: 16 TiB, which
 *     fails, then 8 MiB.
 * The preload recorded them all on device 0, the current one; the ledger
 * names each allocation's device (check_ledger.py --devices).
 *
 * Last, device 2's primary context made current through the driver
 * (cuCtxSetCurrent) while the runtime's device is 0: "CUDA Runtime API
 * calls operate on the CUDA Driver API CUcontext which is current to the
 * calling host thread" (CUDA Runtime API, "Interactions with the CUDA
 * Driver API"), so a cudaMalloc of 16 MiB and one of 16 TiB, which fails,
 * are device 2's (cudaGetDevice says 2). The preload took the thread's
 * cudaSetDevice device for them, and the sim's runtime did the same.
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

/* The stream-ordered allocations above, device 0 current. */
static void stream_ordered(void)
{
    cudaStream_t on1;
    cudaMemPool_t pool2, default1;
    struct cudaMemPoolProps props = {0};
    void *a, *b, *c, *none;
    CUdeviceptr d;
    EXPECT(cudaSetDevice(1), cudaSuccess);
    EXPECT(cudaStreamCreate(&on1), cudaSuccess);
    EXPECT(cudaSetDevice(0), cudaSuccess);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 2;
    EXPECT(cudaMemPoolCreate(&pool2, &props), cudaSuccess);
    EXPECT(cudaDeviceGetDefaultMemPool(&default1, 1), cudaSuccess);

    EXPECT(cudaMallocAsync(&a, 64 * MiB, on1), cudaSuccess);
    EXPECT(cudaMallocAsync(&none, MiB << 24, on1), cudaErrorMemoryAllocation);
    EXPECT(cuMemAllocAsync(&d, 32 * MiB, (CUstream)on1), CUDA_SUCCESS);
    /* each pool's failure first: its device is known before any pointer */
    EXPECT(cudaMallocFromPoolAsync(&none, MiB << 24, pool2, NULL), cudaErrorMemoryAllocation);
    EXPECT(cudaMallocFromPoolAsync(&b, 32 * MiB, pool2, NULL), cudaSuccess);
    EXPECT(cudaMallocFromPoolAsync(&none, MiB << 24, default1, NULL), cudaErrorMemoryAllocation);
    EXPECT(cudaMallocFromPoolAsync(&c, 8 * MiB, default1, NULL), cudaSuccess);

    EXPECT(cudaFreeAsync(a, on1), cudaSuccess);
    EXPECT(cuMemFreeAsync(d, (CUstream)on1), CUDA_SUCCESS);
    EXPECT(cudaFreeAsync(b, NULL), cudaSuccess);
    EXPECT(cudaFreeAsync(c, NULL), cudaSuccess);
    EXPECT(cudaStreamSynchronize(on1), cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pool2), cudaSuccess);
    EXPECT(cudaStreamDestroy(on1), cudaSuccess);
}

/* Runtime allocations on the context the driver made current. */
static void driver_context(void)
{
    CUcontext ctx;
    void *p, *none;
    int current = -1;
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, 2), CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    EXPECT(cudaGetDevice(&current), cudaSuccess);
    REQUIRE(current == 2);
    EXPECT(cudaMalloc(&p, 16 * MiB), cudaSuccess);
    EXPECT(cudaMalloc(&none, MiB << 24), cudaErrorMemoryAllocation);
    EXPECT(cudaFree(p), cudaSuccess);
    EXPECT(cuDevicePrimaryCtxRelease(2), CUDA_SUCCESS);
    EXPECT(cudaSetDevice(0), cudaSuccess); /* device 0's primary context current again */
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
    stream_ordered();
    driver_context();

    EXPECT(cuMemRelease(small), CUDA_SUCCESS);
    EXPECT(cudaFree(on0), cudaSuccess);
    EXPECT(cudaSetDevice(1), cudaSuccess);
    EXPECT(cudaFree(on1), cudaSuccess);
    return 0;
}
