/* driver_ctxstack.c: the context stack and device identity calls numba's
 * CUDA driver binding makes before its first allocation (cuCtxPushCurrent,
 * cuCtxPopCurrent, cuDeviceGetUuid) and cuIpcOpenMemHandle, which it only
 * looks up. Rules (cuda.h, CUDA Driver API "Context Management"): push makes
 * ctx current and keeps the previous one below it; pop returns the current
 * context and makes the one below current; popping an empty stack is
 * CUDA_ERROR_INVALID_CONTEXT. The primary context is the only context here,
 * so a stack deeper than MAX_DEPTH is not needed by any client. */
#include "driver_common.h"

#include <string.h>

#define MAX_DEPTH 64

static __thread CUcontext below[MAX_DEPTH]; /* contexts under the current one */
static __thread int depth;

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUcontext cur = NULL;
    CUresult err = cuCtxGetCurrent(&cur);
    if (err)
        return err;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth == MAX_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    err = cuCtxSetCurrent(ctx);
    if (!err)
        below[depth++] = cur;
    return err;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUcontext cur = NULL;
    CUresult err = cuCtxGetCurrent(&cur);
    if (err)
        return err;
    if (!cur)
        return CUDA_ERROR_INVALID_CONTEXT;
    err = cuCtxSetCurrent(depth ? below[depth - 1] : NULL);
    if (err)
        return err;
    if (depth)
        depth--;
    if (pctx)
        *pctx = cur;
    return CUDA_SUCCESS;
}

/* A stable id per simulated device: "vramtrace-sim" and the ordinal. */
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, "vramtrace-sim", 13);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

/* No inter-process memory on the simulated device. */
CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                       unsigned int flags)
{
    (void)pdptr;
    (void)handle;
    (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}
