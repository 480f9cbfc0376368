/* Copies, sets, events and pointer queries of the simulated driver. All
 * device memory is host memory, so copies are memcpy and complete at once. */
#include "driver_common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVENT_MAGIC 0x45564e54u

struct CUevent_st {
    unsigned magic;
    unsigned flags;
    int recorded;
    uint64_t t_ns; /* CLOCK_MONOTONIC at record */
};

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    if (sim_check_init())
        return sim_check_init();
    if (ByteCount && (!dst || !src))
        return CUDA_ERROR_INVALID_VALUE;
    if (ByteCount)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, ByteCount);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    return cuMemcpy(dst, src, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return cuMemcpy(dstDevice, (CUdeviceptr)(uintptr_t)srcHost, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return cuMemcpy((CUdeviceptr)(uintptr_t)dstHost, srcDevice, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return cuMemcpy(dstDevice, srcDevice, ByteCount);
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    if (sim_check_init())
        return sim_check_init();
    if (N && !dstDevice)
        return CUDA_ERROR_INVALID_VALUE;
    if (N)
        memset((void *)(uintptr_t)dstDevice, uc, N);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    return cuMemsetD8_v2(dstDevice, uc, N);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    if (sim_check_init())
        return sim_check_init();
    if ((N && !dstDevice) || dstDevice % 4)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < N; i++)
        ((unsigned int *)(uintptr_t)dstDevice)[i] = ui;
    return CUDA_SUCCESS;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int is_event(CUevent e)
{
    return e && e->magic == EVENT_MAGIC;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (!phEvent || Flags > 0xf)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    e->flags = Flags;
    *phEvent = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    if (sim_check_init())
        return sim_check_init();
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    hEvent->magic = 0;
    free(hEvent);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    hEvent->recorded = 1;
    hEvent->t_ns = now_ns();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    sim_sync_device(d);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    if (sim_check_init())
        return sim_check_init();
    return is_event(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Milliseconds between two recorded events (CLOCK_MONOTONIC). Either event
 * unrecorded or created with CU_EVENT_DISABLE_TIMING: CUDA_ERROR_INVALID_HANDLE. */
CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is_event(hStart) || !is_event(hEnd) || !hStart->recorded || !hEnd->recorded ||
        ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = (float)((double)((int64_t)(hEnd->t_ns - hStart->t_ns)) / 1e6);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

struct ptr_info {
    unsigned type; /* CUmemorytype, 0 for unknown */
    int ordinal, managed;
    uintptr_t start;
    size_t size;
};

static void ptr_info(CUdeviceptr p, struct ptr_info *pi)
{
    struct sim_alloc a;
    CUdeviceptr base;
    memset(pi, 0, sizeof *pi);
    pi->ordinal = -2;
    if (sim_find((uintptr_t)p, &a, &pi->ordinal) == 0) {
        pi->managed = a.kind == SIM_MANAGED_MEM;
        pi->type = pi->managed ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE;
        pi->start = a.ptr;
        pi->size = a.size;
    } else if (cuMemHostGetDevicePointer_v2(&base, (void *)(uintptr_t)p, 0) == CUDA_SUCCESS) {
        pi->type = CU_MEMORYTYPE_HOST;
        pi->ordinal = 0;
    }
}

/* One attribute into data; CUDA_ERROR_INVALID_VALUE for what is not modelled. */
static CUresult ptr_attr(const struct ptr_info *pi, CUpointer_attribute attr, void *data,
                         CUdeviceptr p)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = pi->type;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = pi->ordinal;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = pi->type ? p : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = pi->type == CU_MEMORYTYPE_DEVICE || !pi->type ? NULL : (void *)p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = pi->managed;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)pi->start;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = pi->size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    struct ptr_info pi;
    if (sim_check_init())
        return sim_check_init();
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    ptr_info(ptr, &pi);
    if (!pi.type) /* the driver knows nothing of this address */
        return CUDA_ERROR_INVALID_VALUE;
    return ptr_attr(&pi, attribute, data, ptr);
}

/* Unknown addresses succeed with memory type 0, as documented for
 * cuPointerGetAttributes. */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    struct ptr_info pi;
    if (sim_check_init())
        return sim_check_init();
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    ptr_info(ptr, &pi);
    for (unsigned i = 0; i < numAttributes; i++)
        if (data[i] && ptr_attr(&pi, attributes[i], data[i], ptr) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}
