/* Driver entry points that PyTorch's libc10_cuda.so (torch 2.15) looks up by
 * name with dlsym(dlopen("libcuda.so.1", RTLD_NOLOAD)) the first time it needs
 * its driver table (c10/cuda/driver_api.cpp, create_driver_api: an internal
 * assertion fails for any name missing, e.g. at the first
 * expandable_segments:True allocation). It asks for the literal,
 * unsuffixed names (cuCtxPushCurrent, cuMemGetAddressRange,
 * cuMemsetD32Async, cuStreamWriteValue32) and calls them through the
 * current (_v2) prototypes of cuda.h, so that is what these are.
 *
 * The context stack, the 32-bit memset and the stream write have real
 * semantics (work completes at once); green contexts, multicast, logs
 * callbacks and shareable handles return CUDA_ERROR_NOT_SUPPORTED. Kept in
 * its own file so other branches that add the same names can dedupe. */
#include "driver_common.h"

#include <stdint.h>
#include <string.h>

#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuMemGetAddressRange
#undef cuMemsetD32Async
#undef cuStreamWriteValue32

/* Each thread's context stack below its current context (cuCtxPushCurrent /
 * cuCtxPopCurrent); depth as in practice: a handful of nested pushes. */
enum { CTX_STACK_MAX = 64 };
static __thread CUcontext ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUcontext cur = NULL;
    CUresult r = cuCtxGetCurrent(&cur);
    if (r)
        return r;
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS)
        ctx_stack[ctx_depth++] = cur;
    return r;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUcontext cur = NULL;
    CUresult r = cuCtxGetCurrent(&cur);
    if (r)
        return r;
    if (!cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    r = cuCtxSetCurrent(ctx_depth ? ctx_stack[ctx_depth - 1] : NULL);
    if (r)
        return r;
    if (ctx_depth)
        ctx_depth--;
    if (pctx)
        *pctx = cur;
    return CUDA_SUCCESS;
}

/* The legacy names PyTorch resolves, behaving as the _v2 functions. */
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}

/* cuda.h declares the pre-3.2 32-bit prototype under this name; PyTorch calls
 * it with the _v2 one, so it is defined under another C name. */
CUresult CUDAAPI sim_legacy_mem_get_address_range(CUdeviceptr *pbase, size_t *psize,
                                                  CUdeviceptr dptr) __asm__("cuMemGetAddressRange");
CUresult CUDAAPI sim_legacy_mem_get_address_range(CUdeviceptr *pbase, size_t *psize,
                                                  CUdeviceptr dptr)
{
    return cuMemGetAddressRange_v2(pbase, psize, dptr);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
    CUresult err;
    if (!sim_stream_device(hStream, &err))
        return err;
    return cuMemsetD32_v2(dstDevice, ui, N);
}

/* Writes value to the 4-byte aligned device word at addr (device memory is
 * host memory here); flags: CU_STREAM_WRITE_VALUE_DEFAULT or _NO_MEMORY_BARRIER. */
CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                      unsigned int flags)
{
    CUresult err;
    if (!sim_stream_device(stream, &err))
        return err;
    if (!addr || addr % 4 || flags > CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    *(volatile cuuint32_t *)(uintptr_t)addr = value;
    return CUDA_SUCCESS;
}

/* Not modelled: the documented "not supported on this device" result. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define UNSUPPORTED                                                                                \
    {                                                                                              \
        return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;                     \
    }
// clang-format off
CUresult CUDAAPI cuCtxFromGreenCtx(CUcontext *c, CUgreenCtx g) UNSUPPORTED
CUresult CUDAAPI cuDevResourceGenerateDesc(CUdevResourceDesc *d, CUdevResource *r,
                                           unsigned int n) UNSUPPORTED
CUresult CUDAAPI cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                             const CUdevResource *input, CUdevResource *remaining,
                                             unsigned int useFlags,
                                             unsigned int minCount) UNSUPPORTED
CUresult CUDAAPI cuDeviceGetDevResource(CUdevice d, CUdevResource *r,
                                        CUdevResourceType t) UNSUPPORTED
CUresult CUDAAPI cuGreenCtxCreate(CUgreenCtx *g, CUdevResourceDesc d, CUdevice dev,
                                  unsigned int f) UNSUPPORTED
CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx g) UNSUPPORTED
CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream *s, CUgreenCtx g, unsigned int f,
                                        int p) UNSUPPORTED
CUresult CUDAAPI cuLogsRegisterCallback(CUlogsCallback f, void *u,
                                        CUlogsCallbackHandle *h) UNSUPPORTED
CUresult CUDAAPI cuLogsUnregisterCallback(CUlogsCallbackHandle h) UNSUPPORTED
CUresult CUDAAPI cuMemExportToShareableHandle(void *s, CUmemGenericAllocationHandle h,
                                              CUmemAllocationHandleType t,
                                              unsigned long long f) UNSUPPORTED
CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *o,
                                                CUmemAllocationHandleType t) UNSUPPORTED
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *p,
                                                        CUmemGenericAllocationHandle h) UNSUPPORTED
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *a) UNSUPPORTED
CUresult CUDAAPI cuMulticastAddDevice(CUmemGenericAllocationHandle m, CUdevice d) UNSUPPORTED
CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle m, size_t mo,
                                    CUmemGenericAllocationHandle h, size_t o, size_t n,
                                    unsigned long long f) UNSUPPORTED
CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle *m,
                                   const CUmulticastObjectProp *p) UNSUPPORTED
CUresult CUDAAPI cuMulticastUnbind(CUmemGenericAllocationHandle m, CUdevice d, size_t o,
                                   size_t n) UNSUPPORTED
    // clang-format on

    /* What cuGetProcAddress hands out for these names (PyTorch also fetches them
     * through cudaGetDriverEntryPointByVersion): name, the CUDA version of the
     * variant (cudaTypedefs.h's PFN_<name>_v<version>), function. */
    static const struct {
    const char *name;
    int version;
    void *fn;
} torch_procs[] = {
    {"cuCtxPushCurrent", 4000, (void *)cuCtxPushCurrent_v2},
    {"cuCtxPopCurrent", 4000, (void *)cuCtxPopCurrent_v2},
    {"cuMemGetAddressRange", 3020, (void *)cuMemGetAddressRange_v2},
    {"cuMemsetD32Async", 3020, (void *)cuMemsetD32Async},
    {"cuStreamWriteValue32", 11070, (void *)cuStreamWriteValue32},
    {"cuMemExportToShareableHandle", 10020, (void *)cuMemExportToShareableHandle},
    {"cuMemImportFromShareableHandle", 10020, (void *)cuMemImportFromShareableHandle},
    {"cuMemGetAllocationPropertiesFromHandle", 10020,
     (void *)cuMemGetAllocationPropertiesFromHandle},
    {"cuMemRetainAllocationHandle", 11000, (void *)cuMemRetainAllocationHandle},
    {"cuMulticastAddDevice", 12010, (void *)cuMulticastAddDevice},
    {"cuMulticastBindMem", 12010, (void *)cuMulticastBindMem},
    {"cuMulticastCreate", 12010, (void *)cuMulticastCreate},
    {"cuMulticastUnbind", 12010, (void *)cuMulticastUnbind},
    {"cuGreenCtxCreate", 12040, (void *)cuGreenCtxCreate},
    {"cuGreenCtxDestroy", 12040, (void *)cuGreenCtxDestroy},
    {"cuGreenCtxStreamCreate", 12050, (void *)cuGreenCtxStreamCreate},
    {"cuDevResourceGenerateDesc", 12040, (void *)cuDevResourceGenerateDesc},
    {"cuDevSmResourceSplitByCount", 12040, (void *)cuDevSmResourceSplitByCount},
    {"cuDeviceGetDevResource", 12040, (void *)cuDeviceGetDevResource},
    {"cuCtxFromGreenCtx", 12040, (void *)cuCtxFromGreenCtx},
    {"cuLogsRegisterCallback", 12090, (void *)cuLogsRegisterCallback},
    {"cuLogsUnregisterCallback", 12090, (void *)cuLogsUnregisterCallback},
};

void *sim_torch_proc(const char *symbol, int version, int *known)
{
    for (size_t i = 0; i < sizeof torch_procs / sizeof *torch_procs; i++) {
        if (strcmp(torch_procs[i].name, symbol) != 0)
            continue;
        *known = 1;
        return torch_procs[i].version <= version ? torch_procs[i].fn : NULL;
    }
    return NULL;
}

/* Device attributes PyTorch's expandable segments query (ExpandableSegment:
 * handle types and RDMA flags for cuMemCreate), for attributes the profile
 * table in driver.c does not model; -1 for any other. Same on every profile:
 * VMM and POSIX file-descriptor handles are supported (Linux), the
 * simulated device has no fabric, Windows handles, compression, or RDMA
 * peer. */
int sim_torch_attr(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: /* cudaDeviceGetPCIBusId's domain */
        return 0;
    default:
        return -1;
    }
}
