/* Driver entry points that PyTorch's libc10_cuda.so (torch 2.15) looks up by
 * name with dlsym(dlopen("libcuda.so.1", RTLD_NOLOAD)) the first time it needs
 * its driver table (c10/cuda/driver_api.cpp, create_driver_api: an internal
 * assertion fails for any name missing, e.g. at the first
 * expandable_segments:True allocation). It asks for the literal,
 * unsuffixed names (cuCtxPushCurrent, cuMemGetAddressRange,
 * cuMemsetD32Async, cuStreamWriteValue32) and calls them through the
 * current (_v2) prototypes of cuda.h, so that is what these are.
 *
 * The context stack (cuCtxPushCurrent_v2, driver_ctx.c) and the 32-bit
 * memset (driver_copy2d.c) are the driver's own; the stream write has real
 * semantics (work completes at once); green contexts, multicast, logs
 * callbacks and shareable handles return CUDA_ERROR_NOT_SUPPORTED. Kept in
 * its own file so other branches that add the same names can dedupe. */
#include "driver_capture.h"

#include <stdint.h>
#include <string.h>

#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuMemGetAddressRange
#undef cuMemsetD32Async
#undef cuStreamWriteValue32

/* cuda.h declares the pre-3.2 32-bit prototype under this name; PyTorch calls
 * it with the _v2 one, so it is defined under another C name. */
CUresult CUDAAPI sim_legacy_mem_get_address_range(CUdeviceptr *pbase, size_t *psize,
                                                  CUdeviceptr dptr) __asm__("cuMemGetAddressRange");
CUresult CUDAAPI sim_legacy_mem_get_address_range(CUdeviceptr *pbase, size_t *psize,
                                                  CUdeviceptr dptr)
{
    return cuMemGetAddressRange_v2(pbase, psize, dptr);
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
    struct sim_node_op op = {.kind = SIM_NODE_WRITE32, .u.write32 = {addr, value}};
    if (sim_capture_enqueue(stream, &op, &err))
        return err; /* on a capturing stream: a node that writes at each launch */
    *(volatile cuuint32_t *)(uintptr_t)addr = value;
    return CUDA_SUCCESS;
}

/* CUDA 12's name for the same call (cudaTypedefs.h: PFN_cuStreamWriteValue32_v12000),
 * what cuGetProcAddress hands out at version 12000 and later. */
CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                         unsigned int flags)
{
    return cuStreamWriteValue32(stream, addr, value, flags);
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
CUresult CUDAAPI cuMulticastAddDevice(CUmemGenericAllocationHandle m, CUdevice d) UNSUPPORTED
CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle m, size_t mo,
                                    CUmemGenericAllocationHandle h, size_t o, size_t n,
                                    unsigned long long f) UNSUPPORTED
CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle *m,
                                   const CUmulticastObjectProp *p) UNSUPPORTED
CUresult CUDAAPI cuMulticastUnbind(CUmemGenericAllocationHandle m, CUdevice d, size_t o,
                                   size_t n) UNSUPPORTED
    // clang-format on
