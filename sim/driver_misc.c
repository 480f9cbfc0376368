/* Copies, sets, events and pointer queries of the simulated driver. All
 * device memory is host memory, so copies are memcpy and complete at once. */
#include "driver_capture.h"

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

void sim_memcpy_now(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    if (bytes)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
}

/* A synchronous copy is potentially unsafe during stream capture
 * (sim_capture_unsafe); NULL with bytes: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_capture_unsafe(true)))
        return err;
    if (ByteCount && (!dst || !src))
        return CUDA_ERROR_INVALID_VALUE;
    sim_memcpy_now(dst, src, ByteCount);
    return CUDA_SUCCESS;
}

/* On a capturing stream: a memcpy node (the bytes are read at launch). */
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (ByteCount && (!dst || !src))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_node_op op = {.kind = SIM_NODE_MEMCPY, .u.memcpy = {dst, src, ByteCount}};
    if (sim_capture_enqueue(hStream, &op, &err))
        return err;
    sim_memcpy_now(dst, src, ByteCount);
    return CUDA_SUCCESS;
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

void sim_memset_now(CUdeviceptr dst, unsigned value, unsigned elem, size_t count)
{
    if (elem == 1 && count)
        memset((void *)(uintptr_t)dst, (unsigned char)value, count);
    for (size_t i = 0; elem == 2 && i < count; i++)
        ((unsigned short *)(uintptr_t)dst)[i] = (unsigned short)value;
    for (size_t i = 0; elem == 4 && i < count; i++)
        ((unsigned int *)(uintptr_t)dst)[i] = value;
}

/* cuMemsetD8/16/32's checks: an address aligned to elem bytes, not NULL
 * when count is not 0 (CUDA_ERROR_INVALID_VALUE otherwise). */
static CUresult memset_args(CUdeviceptr dst, unsigned elem, size_t count)
{
    return (count && !dst) || dst % elem ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* A synchronous set (potentially unsafe during stream capture). */
CUresult sim_memset_sync(CUdeviceptr dst, unsigned value, unsigned elem, size_t count)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_capture_unsafe(true)) || (err = memset_args(dst, elem, count)))
        return err;
    sim_memset_now(dst, value, elem, count);
    return CUDA_SUCCESS;
}

/* A set on a stream; a memset node on a capturing one. */
CUresult sim_memset_async(CUdeviceptr dst, unsigned value, unsigned elem, size_t count, CUstream s)
{
    CUresult err;
    if (!sim_stream_device(s, &err) || (err = memset_args(dst, elem, count)))
        return err;
    struct sim_node_op op = {.kind = SIM_NODE_MEMSET, .u.memset = {dst, value, elem, count}};
    if (sim_capture_enqueue(s, &op, &err))
        return err;
    sim_memset_now(dst, value, elem, count);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return sim_memset_sync(dstDevice, uc, 1, N);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
    return sim_memset_async(dstDevice, uc, 1, N, hStream);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return sim_memset_sync(dstDevice, ui, 4, N);
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
    sim_capture_event_gone(hEvent);
    hEvent->magic = 0;
    free(hEvent);
    return CUDA_SUCCESS;
}

CUresult sim_event_record_now(CUevent e)
{
    if (!is_event(e))
        return CUDA_ERROR_INVALID_HANDLE;
    e->recorded = 1;
    e->t_ns = now_ns();
    return CUDA_SUCCESS;
}

bool sim_event_recorded(CUevent e)
{
    return is_event(e) && e->recorded;
}

/* flags: CU_EVENT_RECORD_DEFAULT, or CU_EVENT_RECORD_EXTERNAL (an event-record
 * node; only during capture). On a capturing stream the event remembers the
 * capture instead of being recorded (README.md, "Stream capture and graphs"). */
CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_capture_event_record(hEvent, hStream, flags, &err))
        return err;
    return sim_event_record_now(hEvent);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return cuEventRecordWithFlags(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

/* An event last recorded in an active capture: CUDA_ERROR_CAPTURED_EVENT. */
CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((err = sim_capture_event_use(hEvent)))
        return err;
    sim_sync_device(d);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    if (sim_check_init())
        return sim_check_init();
    if (!is_event(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    return sim_capture_event_use(hEvent);
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
    CUmemoryPool pool; /* a stream-ordered allocation's pool, else NULL */
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
        pi->pool = a.kind == SIM_ASYNC_MEM && a.seg ? a.seg->pool : NULL;
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
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: /* "if it was allocated from a mempool.
                                                 Otherwise returns NULL" (cuda.h) */
        *(CUmemoryPool *)data = pi->pool;
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
