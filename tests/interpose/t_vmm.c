/* t_vmm: the virtual memory management pattern of PyTorch's expandable
 * segments: reserve a large range, create and map 2 MiB chunks as the
 * segment grows, unmap and release some as it shrinks, leak one handle.
 * Half the calls go through the PLT (linked to libcuda.so.1), half through
 * pointers from cuGetProcAddress_v2. The preload must record each
 * cuMemCreate once as an allocation of its physical size and each
 * cuMemRelease once as a free; maps and unmaps are not allocations. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#include "tbook.h"

#define CHUNK ((size_t)2 << 20)
#define NCHUNK 8

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);

struct vmm_fns {
    create_fn create;
    release_fn release;
    map_fn map;
    unmap_fn unmap;
};
static struct vmm_fns plt = {cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap}, gpa;

static tbook b;
static CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};

static void *proc(const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (cuGetProcAddress(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p)
        exit(20);
    return p;
}

/* Chunk i of the segment at va: created and mapped (odd chunks through the
 * cuGetProcAddress pointers). */
static CUmemGenericAllocationHandle grow(CUdeviceptr va, int i)
{
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    struct vmm_fns *f = i % 2 ? &gpa : &plt;
    if (f->create(&h, CHUNK, &prop, 0) != CUDA_SUCCESS)
        exit(21);
    tb_alloc(&b, CHUNK, 0);
    if (f->map(va + (size_t)i * CHUNK, CHUNK, 0, h, 0) != CUDA_SUCCESS ||
        cuMemSetAccess(va + (size_t)i * CHUNK, CHUNK, &acc, 1) != CUDA_SUCCESS)
        exit(22);
    memset((void *)(uintptr_t)(va + (size_t)i * CHUNK), i, CHUNK); /* it is memory */
    return h;
}

/* Unmap and release chunk i; release_first releases while still mapped
 * (legal: the memory goes at the unmap; the handle, and the record, at once). */
static void shrink(CUdeviceptr va, int i, CUmemGenericAllocationHandle h, int release_first)
{
    struct vmm_fns *f = i % 2 ? &gpa : &plt;
    if (release_first && f->release(h) != CUDA_SUCCESS)
        exit(23);
    if (f->unmap(va + (size_t)i * CHUNK, CHUNK) != CUDA_SUCCESS ||
        (!release_first && f->release(h) != CUDA_SUCCESS))
        exit(24);
    tb_free(&b, CHUNK, 0);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h[NCHUNK], big;
    size_t g = 0;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 2;
    gpa.create = (create_fn)proc("cuMemCreate");
    gpa.release = (release_fn)proc("cuMemRelease");
    gpa.map = (map_fn)proc("cuMemMap");
    gpa.unmap = (unmap_fn)proc("cuMemUnmap");
    if (cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) || g != CHUNK)
        return 3;
    if (cuMemAddressReserve(&va, (size_t)1 << 30, 0, 0, 0) != CUDA_SUCCESS)
        return 4;
    for (int i = 0; i < NCHUNK; i++) /* grow to 16 MiB */
        h[i] = grow(va, i);
    for (int i = NCHUNK - 1; i >= 4; i--) /* shrink to 8 MiB */
        shrink(va, i, h[i], 0);
    for (int i = 4; i < 6; i++) /* grow again to 12 MiB */
        h[i] = grow(va, i);
    /* Far more than the device holds: one failed allocation. */
    if (cuMemCreate(&big, (size_t)1 << 40, &prop, 0) != CUDA_ERROR_OUT_OF_MEMORY)
        return 5;
    b.failed++;
    /* Tear down everything but chunk 3, whose handle leaks with its mapping. */
    for (int i = 0; i < 6; i++)
        if (i != 3)
            shrink(va, i, h[i], i < 2);
    tb_print(&b, "failed_errors=2 stackless_allocs=0 devices=1");
    return 0;
}
