/* cuGetProcAddress: the driver's entry points by base name and CUDA version.
 * Rule (cuda.h, cuGetProcAddress): `symbol` is the base name ("cuMemAlloc");
 * the driver returns the newest variant introduced at or before
 * `cudaVersion` (cuMemAlloc at >= 3020 is cuMemAlloc_v2). A name not known:
 * CUDA_ERROR_NOT_FOUND and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; a name whose
 * variants are all newer than `cudaVersion`: CUDA_ERROR_NOT_FOUND and
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. The pre-3.2 32-bit variants
 * (cuMemAlloc v1 ...) are not provided, so older versions get the latter. */
#include "driver_common.h"

#include <string.h>

struct proc {
    const char *name;
    int version; /* CUDA version that introduced this variant */
    void *fn;
};

#define P(n, v, f)                                                                                 \
    {                                                                                              \
        n, v, (void *)(f)                                                                          \
    }
static const struct proc procs[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDeviceGetName", 2000, cuDeviceGetName),
    P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    P("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemFree", 3020, cuMemFree_v2),
    P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemHostAlloc", 2020, cuMemHostAlloc),
    P("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemHostRegister", 4000, cuMemHostRegister),
    P("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    P("cuMemHostUnregister", 4000, cuMemHostUnregister),
    P("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2),
    P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync),
    P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    P("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuMemMap", 10020, cuMemMap),
    P("cuMemUnmap", 10020, cuMemUnmap),
    P("cuMemSetAccess", 10020, cuMemSetAccess),
    P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    P("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    P("cuMemcpy", 4000, cuMemcpy),
    P("cuMemcpyAsync", 4000, cuMemcpyAsync),
    P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    P("cuMemsetD8", 3020, cuMemsetD8_v2),
    P("cuMemsetD8Async", 3020, cuMemsetD8Async),
    P("cuMemsetD32", 3020, cuMemsetD32_v2),
    P("cuStreamCreate", 2000, cuStreamCreate),
    P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize),
    P("cuStreamQuery", 2000, cuStreamQuery),
    P("cuEventCreate", 2000, cuEventCreate),
    P("cuEventDestroy", 4000, cuEventDestroy_v2),
    P("cuEventRecord", 2000, cuEventRecord),
    P("cuEventSynchronize", 2000, cuEventSynchronize),
    P("cuEventQuery", 2000, cuEventQuery),
    P("cuEventElapsedTime", 2000, cuEventElapsedTime),
    P("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    P("cuLaunchKernel", 4000, cuLaunchKernel),
    P("cuGetErrorString", 6000, cuGetErrorString),
    P("cuGetErrorName", 6000, cuGetErrorName),
    P("cuGetProcAddress", 11030, cuGetProcAddress),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
};

static const struct proc *lookup(const char *symbol, int version, int *known)
{
    const struct proc *best = NULL;
    *known = 0;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        *known = 1;
        if (procs[i].version <= version && (!best || procs[i].version > best->version))
            best = &procs[i];
    }
    return best;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    int known;
    if (!symbol || !pfn ||
        flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    const struct proc *p = lookup(symbol, cudaVersion, &known);
    *pfn = p ? p->fn : NULL;
    if (symbolStatus)
        *symbolStatus = p       ? CU_GET_PROC_ADDRESS_SUCCESS
                        : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* The CUDA 11.3 form, without the status. */
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
