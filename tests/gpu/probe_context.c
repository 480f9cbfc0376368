/* probe_context: what a CUDA driver does to memory when a context ends, where
 * the simulated device and the preload follow the documentation without a
 * GPU's answer yet (tests/gpu/README.md): pinned and registered host memory
 * across cudaDeviceReset, cuDevicePrimaryCtxReset and cuCtxDestroy (is it
 * still pinned, can it be freed), the old ABI's cuDevicePrimaryCtxRelease,
 * an allocation with a primary context still current after its last
 * release, and freeing a mipmap level's array. One line per answer; an
 * H200's are in h200-2026-11-30/probe_context.txt (session 30), which
 * probe_sim.py compares the simulated device's with. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The memory type the runtime reports for p (cudaMemoryType), or -rc. */
static int rt_type(void *p)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    cudaGetLastError();
    return e == cudaSuccess ? (int)a.type : -(int)e;
}

/* The memory type the driver reports for p (CUmemorytype), or -rc. */
static int drv_type(void *p)
{
    unsigned t = 0;
    CUresult r = cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p);
    return r == CUDA_SUCCESS ? (int)t : -(int)r;
}

static void runtime_reset(void)
{
    void *pinned = NULL, *portable = NULL, *dev = NULL;
    static char reg[1 << 16];
    printf("cudaMallocHost %d\n", cudaMallocHost(&pinned, 1 << 20));
    printf("cudaHostAlloc portable %d\n", cudaHostAlloc(&portable, 1 << 20, cudaHostAllocPortable));
    printf("cudaHostRegister %d\n", cudaHostRegister(reg, sizeof reg, 0));
    printf("cudaMalloc %d\n", cudaMalloc(&dev, 1 << 20));
    printf("types before reset: pinned %d portable %d registered %d\n", rt_type(pinned),
           rt_type(portable), rt_type(reg));
    printf("cudaDeviceReset %d\n", cudaDeviceReset());
    printf("types after reset: pinned %d portable %d registered %d\n", rt_type(pinned),
           rt_type(portable), rt_type(reg));
    printf("after reset: cudaFreeHost pinned %d\n", cudaFreeHost(pinned));
    cudaGetLastError();
    printf("after reset: cudaFreeHost portable %d\n", cudaFreeHost(portable));
    cudaGetLastError();
    printf("after reset: cudaHostUnregister %d\n", cudaHostUnregister(reg));
    cudaGetLastError();
    printf("after reset: cudaFree device %d\n", cudaFree(dev));
    cudaGetLastError();
}

static void driver_contexts(void)
{
    CUcontext p0, made;
    CUdeviceptr d = 0;
    void *host = NULL;
    cuDevicePrimaryCtxRetain(&p0, 0);
    cuCtxSetCurrent(p0);
    printf("cuMemAllocHost %d\n", cuMemAllocHost(&host, 1 << 20));
    printf("before primary reset: host type %d\n", drv_type(host));
    printf("cuDevicePrimaryCtxReset_v2 %d\n", cuDevicePrimaryCtxReset(0));
    printf("after primary reset: host type %d\n", drv_type(host));
    printf("after primary reset: cuMemFreeHost %d\n", cuMemFreeHost(host));
    cuDevicePrimaryCtxRetain(&p0, 0); /* initialised again: two references */
    printf("release %d\n", cuDevicePrimaryCtxRelease(0));
    printf("last release %d\n", cuDevicePrimaryCtxRelease(0));
    printf("cuMemAlloc, released primary current %d\n", cuMemAlloc(&d, 1 << 20));
    /* the CUDA 7.0 ABI's release, asked of dlsym by its old name */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*release_v1)(CUdevice) =
        cuda ? (CUresult(*)(CUdevice))dlsym(cuda, "cuDevicePrimaryCtxRelease") : NULL;
    cuDevicePrimaryCtxRetain(&p0, 0);
    cuDevicePrimaryCtxRetain(&p0, 0);
    if (release_v1) {
        printf("v1 release 1 %d\n", release_v1(0));
        printf("v1 release 2 %d\n", release_v1(0));
        printf("v1 release 3 %d\n", release_v1(0));
    }
    printf("cuCtxCreate %d\n", cuCtxCreate(&made, NULL, 0, 0));
    printf("cuMemAllocHost in created %d\n", cuMemAllocHost(&host, 1 << 20));
    printf("cuCtxDestroy %d\n", cuCtxDestroy(made));
    cuDevicePrimaryCtxRetain(&p0, 0);
    cuCtxSetCurrent(p0);
    printf("after destroy: host type %d\n", drv_type(host));
    printf("after destroy: cuMemFreeHost %d\n", cuMemFreeHost(host));
}

static void mipmap_levels(void)
{
    CUDA_ARRAY3D_DESCRIPTOR ad = {64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray m = NULL;
    CUarray level = NULL;
    printf("cuMipmappedArrayCreate %d\n", cuMipmappedArrayCreate(&m, &ad, 3));
    printf("level 1 %d\n", cuMipmappedArrayGetLevel(&level, m, 1));
    if (level)
        printf("cuArrayDestroy level %d\n", cuArrayDestroy(level));
    /* a mipmapped array's handle given to the plain array's free */
    printf("cuArrayDestroy mipmapped %d\n", cuArrayDestroy((CUarray)m));
    printf("cuMipmappedArrayDestroy %d\n", cuMipmappedArrayDestroy(m));
}

int main(void)
{
    printf("cuInit %d\n", cuInit(0));
    driver_contexts(); /* before the runtime retains the primary context */
    mipmap_levels();
    runtime_reset();
    return 0;
}
