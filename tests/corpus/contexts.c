/* contexts: the end of a context frees the memory made in it. A primary
 * context reset (by cuda.h's name), the last release of a retained primary
 * context (through cuGetProcAddress; an earlier release frees nothing), the
 * old ABI's reset (asked of dlsym by its old name) and cuCtxDestroy of the
 * device's only context each free device 0's allocations; device 1's live
 * through all of them and are leaked, as is pinned host memory (not device
 * memory) and one allocation made after the last destroy. Memory allocated
 * after each end is counted anew, at the same addresses (required on the
 * simulated device, VRAMTRACE_SIM_DEVICE set; a GPU's driver may place it
 * elsewhere). Device 1 where there is one. */
#include <cuda.h>
#include <dlfcn.h>

#include "corpus.h"

/* The allocation after a context's end reuses the first address: checked
 * on the simulated device only. */
static void same_address(CUdeviceptr got, CUdeviceptr want)
{
    if (getenv("VRAMTRACE_SIM_DEVICE"))
        REQUIRE_EQ(got, want);
}

static CUdeviceptr alloc_on(CUcontext ctx, size_t bytes)
{
    CUdeviceptr p;
    EXPECT(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    EXPECT(cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
}

/* Live device-0 memory of every kind a context frees; returns the first
 * allocation's address. */
static CUdeviceptr fill(CUcontext ctx, size_t bytes)
{
    CUdeviceptr first = alloc_on(ctx, bytes), pitched, managed;
    size_t pitch;
    EXPECT(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    EXPECT(cuMemAllocManaged(&managed, 3000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    return first;
}

int main(void)
{
    CUcontext p0, p1, again, created;
    void *host;
    int devices;
    EXPECT(cuInit(0), CUDA_SUCCESS);
    EXPECT(cuDeviceGetCount(&devices), CUDA_SUCCESS);
    if (devices > 1) {
        EXPECT(cuDevicePrimaryCtxRetain(&p1, 1), CUDA_SUCCESS);
        alloc_on(p1, 2 * MiB); /* leaked: no end of device 1's context */
    }
    EXPECT(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
    /* current: retaining does not make it so, and cuMemAllocHost needs one
     * (an H200 with one device: CUDA_ERROR_INVALID_CONTEXT without it) */
    EXPECT(cuCtxSetCurrent(p0), CUDA_SUCCESS);
    EXPECT(cuMemAllocHost(&host, 64 << 10), CUDA_SUCCESS); /* leaked: host memory */

    /* 1. cuDevicePrimaryCtxReset (cuda.h: the _v2 entry point). The reset
     * context, still current, is used again only once retained again (an
     * H200: CUDA_ERROR_CONTEXT_IS_DESTROYED before); the reset released
     * nothing, so it is retained twice from here. */
    CUdeviceptr a = fill(p0, 1 * MiB), none;
    EXPECT(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
    EXPECT(cuMemAlloc(&none, 1 * MiB), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    EXPECT(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
    same_address(alloc_on(p0, 4 * MiB), a);

    /* 2. retained three times: the releases before the last free nothing */
    EXPECT(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
    REQUIRE(again == p0);
    CUresult (*release)(CUdevice) = NULL;
    CUdriverProcAddressQueryResult found;
    EXPECT(
        cuGetProcAddress("cuDevicePrimaryCtxRelease", (void **)&release, CUDA_VERSION, 0, &found),
        CUDA_SUCCESS);
    EXPECT(release(0), CUDA_SUCCESS);
    alloc_on(p0, 1 * MiB);
    EXPECT(release(0), CUDA_SUCCESS);
    EXPECT(release(0), CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
    same_address(alloc_on(p0, 8 * MiB), a);

    /* 3. the CUDA 7.0 ABI's cuDevicePrimaryCtxReset, by its old name */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(cuda != NULL);
    CUresult (*reset_v1)(CUdevice) = (CUresult(*)(CUdevice))dlsym(cuda, "cuDevicePrimaryCtxReset");
    REQUIRE(reset_v1 != NULL);
    fill(p0, 5 * MiB);
    EXPECT(reset_v1(0), CUDA_SUCCESS); /* drops the references too (an H200 did) */
    EXPECT(cuDevicePrimaryCtxRetain(&p0, 0), CUDA_SUCCESS);
    CUdeviceptr b = alloc_on(p0, 7 * MiB);
    same_address(b, a);
    EXPECT(cuMemFree(b), CUDA_SUCCESS);

    /* 4. cuCtxDestroy of a created context, the device's only one */
    EXPECT(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(cuCtxCreate(&created, NULL, 0, 0), CUDA_SUCCESS);
    fill(created, 3 * MiB);
    EXPECT(cuCtxDestroy(created), CUDA_SUCCESS);
    EXPECT(cuCtxCreate(&created, NULL, 0, 0), CUDA_SUCCESS);
    same_address(alloc_on(created, 6 * MiB), a); /* leaked */
    dlclose(cuda);
    return 0;
}
