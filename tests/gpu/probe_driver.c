/* probe_driver: what a CUDA driver answers where the simulated device had to
 * guess: calls without a current context, mipmapped level counts and level
 * queries, a VMM handle released while mapped, retained after release, and
 * mapped twice, the stream-ordered pool's used and reserved bytes. Prints
 * one line per answer. This is the program that ran on the H200 in the
 * second GPU session (h200-2026-11-28b/probe_driver.txt holds its output
 * there); probe_sim.py runs it on the simulated device and compares.
 * Only reformatted (clang-format) since it ran: the recorded output is its output. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#define P(...) printf(__VA_ARGS__)
static size_t freemem(void)
{
    size_t f = 0, t = 0;
    cuMemGetInfo(&f, &t);
    return f;
}
int main(void)
{
    CUresult r;
    /* 1. no current context */
    P("cuInit %d\n", cuInit(0));
    void *h = 0;
    CUdeviceptr d = 0;
    size_t f = 0, t = 0;
    r = cuMemAllocHost(&h, 65536);
    P("noctx cuMemAllocHost %d\n", r);
    r = cuMemAlloc(&d, 65536);
    P("noctx cuMemAlloc %d\n", r);
    r = cuMemGetInfo(&f, &t);
    P("noctx cuMemGetInfo %d\n", r);
    static char buf[1 << 16];
    r = cuMemHostRegister(buf, sizeof buf, 0);
    P("noctx cuMemHostRegister %d\n", r);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemGenericAllocationHandle gh;
    r = cuMemCreate(&gh, 2 << 20, &prop, 0);
    P("noctx cuMemCreate %d\n", r);
    if (r == 0)
        P("noctx cuMemRelease %d\n", cuMemRelease(gh));
    CUdeviceptr va;
    r = cuMemAddressReserve(&va, 2 << 20, 0, 0, 0);
    P("noctx cuMemAddressReserve %d\n", r);
    if (r == 0)
        cuMemAddressFree(va, 2 << 20);
    /* 2. runtime: mipmapped levels */
    cudaFree(0);
    struct cudaChannelFormatDesc f4 =
        cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
    cudaMipmappedArray_t m;
    cudaArray_t lv;
    for (unsigned n = 0; n <= 20; n += 10) {
        cudaError_t e = cudaMallocMipmappedArray(&m, &f4, (struct cudaExtent){256, 256, 0}, n, 0);
        P("mipmapped 256x256 levels %u: %d\n", n, e);
        if (e == 0) {
            for (unsigned l = 0; l < 12; l++)
                P(" L%u:%d", l, cudaGetMipmappedArrayLevel(&lv, m, l));
            P("\n");
            cudaFreeMipmappedArray(m);
        }
    }
    CUDA_ARRAY3D_DESCRIPTOR ad = {64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray cm;
    CUarray ca;
    r = cuMipmappedArrayCreate(&cm, &ad, 0);
    P("cuMipmappedArrayCreate 64x32 levels 0: %d\n", r);
    if (!r) {
        for (unsigned l = 0; l < 9; l++)
            P(" L%u:%d", l, cuMipmappedArrayGetLevel(&ca, cm, l));
        P("\n");
        cuMipmappedArrayDestroy(cm);
    }
    r = cuMipmappedArrayCreate(&cm, &ad, 30);
    P("cuMipmappedArrayCreate 64x32 levels 30: %d\n", r);
    if (!r) {
        for (unsigned l = 0; l < 9; l++)
            P(" L%u:%d", l, cuMipmappedArrayGetLevel(&ca, cm, l));
        P("\n");
        cuMipmappedArrayDestroy(cm);
    }
    /* 3. VMM: release while mapped */
    size_t g = 0;
    cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    size_t sz = 256 << 20;
    size_t f0 = freemem();
    r = cuMemCreate(&gh, sz, &prop, 0);
    size_t f1 = freemem();
    P("vmm gran %zu create %d took %zd\n", g, r, (ssize_t)(f0 - f1));
    cuMemAddressReserve(&va, sz, 0, 0, 0);
    r = cuMemMap(va, sz, 0, gh, 0);
    P("map %d\n", r);
    r = cuMemRelease(gh);
    size_t f2 = freemem();
    P("release mapped %d, free change %zd\n", r, (ssize_t)(f2 - f1));
    r = cuMemRelease(gh);
    P("release again %d\n", r);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    P("setaccess after release %d\n", cuMemSetAccess(va, sz, &acc, 1));
    P("memset after release %d\n", cuMemsetD8(va, 7, sz));
    CUmemGenericAllocationHandle back;
    r = cuMemRetainAllocationHandle(&back, (void *)va);
    P("retain after release %d\n", r);
    if (!r)
        P("release retained %d\n", cuMemRelease(back));
    r = cuMemUnmap(va, sz);
    size_t f3 = freemem();
    P("unmap %d, free change %zd\n", r, (ssize_t)(f3 - f2));
    cuMemAddressFree(va, sz);
    /* two mappings of one handle */
    CUdeviceptr va2;
    cuMemCreate(&gh, sz, &prop, 0);
    cuMemAddressReserve(&va, sz, 0, 0, 0);
    cuMemAddressReserve(&va2, sz, 0, 0, 0);
    cuMemMap(va, sz, 0, gh, 0);
    cuMemMap(va2, sz, 0, gh, 0);
    size_t g0 = freemem();
    P("2maps release %d\n", cuMemRelease(gh));
    P("unmap1 %d change %zd\n", cuMemUnmap(va, sz), (ssize_t)(freemem() - g0));
    P("unmap2 %d change %zd\n", cuMemUnmap(va2, sz), (ssize_t)(freemem() - g0));
    /* 4. pool used/reserved */
    cudaMemPool_t pool;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    size_t sizes[] = {1, 512, 513, 1 << 20, 5 << 20, (3 << 20) + 1, 2 << 20};
    for (int i = 0; i < 7; i++) {
        void *p;
        cuuint64_t used = 0, res = 0;
        cudaMallocAsync(&p, sizes[i], 0);
        cudaStreamSynchronize(0);
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &res);
        P("pool alloc %zu: used %llu reserved %llu\n", sizes[i], (unsigned long long)used,
          (unsigned long long)res);
        cudaFreeAsync(p, 0);
        cudaStreamSynchronize(0);
        cudaMemPoolTrimTo(pool, 0);
    }
    return 0;
}
