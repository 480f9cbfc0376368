/* Memory entry points of the simulated driver (libcuda.so.1). */
#include "driver_capture.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, enum sim_kind kind)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    uintptr_t p = 0;
    if (!d || (err = sim_capture_unsafe(false)))
        return err;
    if (!dptr || size == 0) /* cuMemAlloc: "If bytesize is 0, ... CUDA_ERROR_INVALID_VALUE" */
        return CUDA_ERROR_INVALID_VALUE;
    err = (CUresult)sim_alloc(d, size, kind, &p);
    if (err == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)p;
    return err;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SIM_LEDGER_SCOPE("cuMemAlloc_v2");
    return (CUresult)vtsim_ledger_fail(SIM_LK_DEVICE, sim_current_ordinal(), bytesize,
                                       dev_alloc(dptr, bytesize, SIM_DEVICE_MEM));
}

static CUresult managed_alloc(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (sim_check_init())
        return sim_check_init();
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return dev_alloc(dptr, bytesize, SIM_MANAGED_MEM);
}

/* Pitch: the row size rounded up to 512 bytes, the pitch alignment of
 * current GPUs (CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT is 32, but the
 * allocator pads rows to 512; README.md). */
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SIM_LEDGER_SCOPE("cuMemAllocManaged");
    return (CUresult)vtsim_ledger_fail(SIM_LK_MANAGED, sim_current_ordinal(), bytesize,
                                       managed_alloc(dptr, bytesize, flags));
}

static CUresult pitch_alloc(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + 511) / 512 * 512;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult err = dev_alloc(dptr, pitch * Height, SIM_DEVICE_MEM);
    if (err == CUDA_SUCCESS)
        *pPitch = pitch;
    return err;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
    SIM_LEDGER_SCOPE("cuMemAllocPitch_v2");
    return (CUresult)vtsim_ledger_fail(
        SIM_LK_DEVICE, sim_current_ordinal(), WidthInBytes * Height,
        pitch_alloc(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
}

CUresult sim_free_dptr(CUdeviceptr dptr)
{
    struct sim_device *d;
    if (sim_check_init())
        return sim_check_init();
    if (dptr == 0)
        return CUDA_SUCCESS;
    d = sim_device_of((uintptr_t)dptr);
    return (CUresult)sim_ledger_bad_free(dptr, d ? (CUresult)sim_free(d, (uintptr_t)dptr, false)
                                                 : CUDA_ERROR_INVALID_VALUE);
}

/* Potentially unsafe during stream capture: a refused free frees nothing. */
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    SIM_LEDGER_SCOPE("cuMemFree_v2");
    CUresult err = sim_check_init();
    if (err || (err = sim_capture_unsafe(false)))
        return (CUresult)sim_ledger_bad_free(dptr, err);
    return sim_free_dptr(dptr);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    size_t f, t;
    if (!d)
        return err;
    sim_mem_info(d, &f, &t);
    if (free)
        *free = f;
    if (total)
        *total = t;
    return CUDA_SUCCESS;
}

/* Pinned host memory: host RAM, not device memory; page aligned. A request
 * larger than the host's RAM is out of memory without asking the C library
 * (which a sanitizer's allocator would treat as a bug). */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult err;
    void *p = NULL;
    struct sim_device *d = sim_need_device(&err);
    if (!d || (err = sim_capture_unsafe(false)))
        return err;
    if (!pp || bytesize == 0 || Flags > 0x7)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytesize > sim_host_ram() || posix_memalign(&p, 4096, bytesize) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_host h = {(uintptr_t)p, bytesize, Flags, d->ordinal, false, NULL};
    if ((err = sim_host_add(&h))) {
        free(p);
        return err;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SIM_LEDGER_SCOPE("cuMemHostAlloc");
    return (CUresult)vtsim_ledger_fail(SIM_LK_PINNED, -1, bytesize,
                                       host_alloc(pp, bytesize, Flags));
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    SIM_LEDGER_SCOPE("cuMemAllocHost_v2");
    return cuMemHostAlloc(pp, bytesize, 0);
}

/* Pinned memory a context's end freed is no longer known (INVALID_VALUE);
 * with a destroyed primary context current, CUDA_ERROR_CONTEXT_IS_DESTROYED
 * (an H200, driver 580.159.04: tests/gpu/probe_context.c). */
CUresult CUDAAPI cuMemFreeHost(void *p)
{
    struct sim_host h;
    SIM_LEDGER_SCOPE("cuMemFreeHost");
    CUresult err = sim_check_init();
    if (err || (err = sim_capture_unsafe(false)) || (err = sim_ctx_current_destroyed()))
        return (CUresult)sim_ledger_bad_free((uintptr_t)p, err);
    if (!sim_host_find((uintptr_t)p, true, SIM_HOST_PINNED, true, &h))
        return (CUresult)sim_ledger_bad_free((uintptr_t)p, CUDA_ERROR_INVALID_VALUE);
    free(p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    struct sim_host h;
    if (sim_check_init())
        return sim_check_init();
    if (!pdptr || Flags != 0 || !sim_host_find((uintptr_t)p, false, SIM_HOST_ANY, false, &h))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    struct sim_alloc a;
    int ord;
    if (sim_check_init())
        return sim_check_init();
    if (sim_find((uintptr_t)dptr, &a, &ord) != 0)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)a.ptr;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}
