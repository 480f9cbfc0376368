/* Internal to the simulated runtime (libcudart.so.13). */
#ifndef SIM_RUNTIME_INTERNAL_H
#define SIM_RUNTIME_INTERNAL_H
#include <cuda.h>
#include <cuda_runtime_api.h>

/* The driver entry points the runtime uses, fetched with cuGetProcAddress_v2
 * from dlopen("libcuda.so.1") as the real runtime does. */
// clang-format off
#define RT_DRIVER_FUNCS(X) \
    X(cuInit) \
    X(cuDriverGetVersion) \
    X(cuDeviceGetCount) \
    X(cuDeviceGetName) \
    X(cuDeviceTotalMem) \
    X(cuDeviceGetAttribute) \
    X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxReset) \
    X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) \
    X(cuMemAlloc) \
    X(cuMemFree) \
    X(cuMemGetInfo) \
    X(cuMemAllocPitch) \
    X(cuMemAllocManaged) \
    X(cuMemAllocHost) \
    X(cuMemHostAlloc) \
    X(cuMemFreeHost) \
    X(cuMemHostGetDevicePointer) \
    X(cuMemAllocAsync) \
    X(cuMemFreeAsync) \
    X(cuMemAllocFromPoolAsync) \
    X(cuDeviceGetDefaultMemPool) \
    X(cuDeviceGetMemPool) \
    X(cuMemPoolSetAttribute) \
    X(cuMemPoolGetAttribute) \
    X(cuMemPoolTrimTo) \
    X(cuPointerGetAttributes) \
    X(cuMemcpy) \
    X(cuMemcpyAsync) \
    X(cuMemsetD8) \
    X(cuMemsetD8Async) \
    X(cuStreamCreate) \
    X(cuStreamDestroy) \
    X(cuStreamSynchronize) \
    X(cuStreamQuery) \
    X(cuEventCreate) \
    X(cuEventDestroy) \
    X(cuEventRecord) \
    X(cuEventSynchronize) \
    X(cuEventQuery) \
    X(cuEventElapsedTime)
// clang-format on

#define RT_FIELD(n) __typeof__(&n) n;
struct rt_driver {
    RT_DRIVER_FUNCS(RT_FIELD)
};
extern struct rt_driver rt_drv;

/* Load the driver once; cudaSuccess, or the error every later call returns. */
cudaError_t rt_load(void);
/* rt_load, then make the calling thread's device current (retaining its
 * primary context, which takes the context reserve, on first use). */
cudaError_t rt_ready(void);
/* The calling thread's current device. */
int rt_device(void);
/* Record e as the thread's last error when it is one; returns e. */
cudaError_t rt_ret(cudaError_t e);
/* A driver result as the runtime error of the same number. */
cudaError_t rt_err(CUresult r);
/* Forget the retained context of dev (after cudaDeviceReset). */
void rt_forget_context(int dev);
#endif
