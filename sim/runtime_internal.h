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
    X(cuArray3DCreate) \
    X(cuArrayDestroy) \
    X(cuMipmappedArrayCreate) \
    X(cuMipmappedArrayDestroy) \
    X(cuMipmappedArrayGetLevel) \
    X(cuMemcpy2D) \
    X(cuMemAllocManaged) \
    X(cuMemAllocHost) \
    X(cuMemHostAlloc) \
    X(cuMemFreeHost) \
    X(cuMemHostRegister) \
    X(cuMemHostUnregister) \
    X(cuMemHostGetDevicePointer) \
    X(cuMemAllocAsync) \
    X(cuMemFreeAsync) \
    X(cuMemAllocFromPoolAsync) \
    X(cuDeviceGetDefaultMemPool) \
    X(cuDeviceGetMemPool) \
    X(cuMemPoolSetAttribute) \
    X(cuMemPoolGetAttribute) \
    X(cuMemPoolTrimTo) \
    X(cuMemPoolCreate) \
    X(cuMemPoolDestroy) \
    X(cuDeviceSetMemPool) \
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
    X(cuEventElapsedTime) \
    X(cuEventRecordWithFlags) \
    X(cuStreamGetPriority) \
    X(cuStreamAddCallback) \
    X(cuMemcpy2DAsync) \
    X(cuLaunchKernel) \
    X(cuStreamBeginCapture) \
    X(cuStreamEndCapture) \
    X(cuStreamIsCapturing) \
    X(cuStreamGetCaptureInfo) \
    X(cuThreadExchangeStreamCaptureMode) \
    X(cuGraphCreate) \
    X(cuGraphDestroy) \
    X(cuGraphGetNodes) \
    X(cuGraphNodeGetDependencies) \
    X(cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch) \
    X(cuGraphExecDestroy) \
    X(cuGraphUpload)
// clang-format on

#define RT_FIELD(n) __typeof__(&n) n;
struct rt_driver {
    RT_DRIVER_FUNCS(RT_FIELD)
};
/* The driver's entry points twice, fetched with cuGetProcAddress as the real
 * runtime does: plain (CU_GET_PROC_ADDRESS_DEFAULT), and with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (their _ptds/_ptsz forms)
 * for the runtime's per-thread-default-stream entry points
 * (runtime_ptds.c). rt_drv is the one the calling thread's current runtime
 * call uses. */
extern struct rt_driver rt_drv_plain, rt_drv_per_thread;
/* Set by a per-thread-default-stream entry point (cudaMemcpyAsync_ptsz ...)
 * for the plain one it calls (runtime_ptds.c). */
extern _Thread_local int rt_per_thread_call;
#define rt_drv (*(rt_per_thread_call ? &rt_drv_per_thread : &rt_drv_plain))

/* Load the driver once (runtime_driver.c); cudaSuccess, or the error every
 * later call returns. */
cudaError_t rt_load(void);
/* rt_load, then make the calling thread's device current (retaining its
 * primary context, which takes the context reserve, on first use). */
cudaError_t rt_ready(void);
/* rt_ready, then the driver call; records and returns the error. */
#define FORWARD(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = rt_ready();                                                               \
        return rt_ret(e_ ? e_ : rt_err(call));                                                     \
    } while (0)
/* The calling thread's current device. */
int rt_device(void);
/* Record e as the thread's last error when it is one; returns e. */
cudaError_t rt_ret(cudaError_t e);
/* A driver result as the runtime error of the same number. */
cudaError_t rt_err(CUresult r);
/* Ledger scope of a runtime entry point (runtime_ledger.c): names the lines
 * written during the call after it and, for an allocation call (kind not
 * NULL), writes a "fail" line when the call returns an error through rt_ret
 * and none was written yet. size: requested bytes; device: the calling
 * thread's device at the call (the fail line's device; host kinds write -1).
 * Loads the driver (rt_load) at the first scope, to use its ledger. */
struct rt_ledger_scope {
    int token;
    const char *kind;
    size_t size;
    int device;
};
struct rt_ledger_scope rt_ledger_begin(const char *api, const char *kind, size_t size, int device);
void rt_ledger_end(struct rt_ledger_scope *s);
/* Called by rt_ret with every result it returns. */
void rt_ledger_result(cudaError_t e);
#define RT_LEDGER_SCOPE(api, kind, size)                                                           \
    __attribute__((cleanup(rt_ledger_end))) struct rt_ledger_scope rt_ledger_scope_ =              \
        rt_ledger_begin(api, kind, size, rt_device())
/* The cudaDeviceProp fields beyond the core ones, from the driver's
 * attributes (runtime_props_extra.c). */
void rt_fill_props_extra(struct cudaDeviceProp *p, int dev);
#endif
