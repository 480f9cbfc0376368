/* The simulated runtime's state: per-thread device and last error, the
 * primary contexts it retains, errors and version queries. The driver is
 * loaded in runtime_driver.c. */
#include "runtime_internal.h"

#include <pthread.h>

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext contexts[64];
static __thread int cur_dev;
static __thread cudaError_t last_err;

struct rt_err_entry {
    int code;
    const char *name, *str;
};
static const struct rt_err_entry rt_errors[] = {
#include "errors_runtime.inc"
};

cudaError_t rt_err(CUresult r)
{
    return (cudaError_t)r; /* the runtime and driver codes share their numbers */
}

cudaError_t rt_ret(cudaError_t e)
{
    rt_ledger_result(e);
    if (e != cudaSuccess)
        last_err = e;
    return e;
}

/* The device of the live context current to the calling thread, or -1
 * when there is none (or a reset primary context). */
static int current_context_device(void)
{
    CUdevice d;
    return rt_drv.cuCtxGetDevice && rt_drv.cuCtxGetDevice(&d) == CUDA_SUCCESS ? (int)d : -1;
}

/* "CUDA Runtime API calls operate on the CUDA Driver API CUcontext which
 * is current to the calling host thread" (CUDA Runtime API, "Interactions
 * with the CUDA Driver API"): a context the program made current with the
 * driver (cuCtxSetCurrent, cuCtxCreate, cuCtxPushCurrent) is the runtime's
 * device; without one, the thread's own (cudaSetDevice; 0). */
int rt_device(void)
{
    int d = current_context_device();
    return d >= 0 ? d : cur_dev;
}

/* Forget the retained context of dev (after cudaDeviceReset). */
static void rt_forget_context(int dev)
{
    pthread_mutex_lock(&ctx_lock);
    contexts[dev] = NULL;
    pthread_mutex_unlock(&ctx_lock);
}

/* The primary context of dev, retained once per process. */
static CUresult context_of(int dev, CUcontext *ctx)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&ctx_lock);
    if (!contexts[dev])
        r = rt_drv.cuDevicePrimaryCtxRetain(&contexts[dev], dev);
    *ctx = contexts[dev];
    pthread_mutex_unlock(&ctx_lock);
    return r;
}

/* The primary context of the thread's device made current. */
static cudaError_t primary_current(void)
{
    CUcontext ctx;
    CUresult r = context_of(cur_dev, &ctx);
    if (r == CUDA_SUCCESS)
        r = rt_drv.cuCtxSetCurrent(ctx);
    return rt_err(r);
}

cudaError_t rt_ready(void)
{
    cudaError_t e = rt_load();
    if (e)
        return e;
    if (current_context_device() >= 0)
        return cudaSuccess; /* the runtime uses the current context (rt_device) */
    return primary_current();
}

/* Per thread, as in the real runtime. An invalid ordinal:
 * cudaErrorInvalidDevice. The context is created at once (CUDA 12+). */
cudaError_t CUDARTAPI cudaSetDevice(int device)
{
    int n = 0;
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    CUresult r = rt_drv.cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) /* e.g. a fork child of an initialised process (driver.c) */
        return rt_ret(rt_err(r));
    if (device < 0 || device >= n || device >= 64)
        return rt_ret(cudaErrorInvalidDevice);
    cur_dev = device;
    return rt_ret(primary_current()); /* whatever context was current */
}

cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    if (!device)
        return rt_ret(cudaErrorInvalidValue);
    *device = rt_device();
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
    cudaError_t e = rt_load();
    if (e == cudaErrorInsufficientDriver && count)
        *count = 0;
    if (e)
        return rt_ret(e);
    if (!count)
        return rt_ret(cudaErrorInvalidValue);
    return rt_ret(rt_err(rt_drv.cuDeviceGetCount(count)));
}

cudaError_t CUDARTAPI cudaGetLastError(void)
{
    cudaError_t e = last_err;
    last_err = cudaSuccess;
    return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
    return last_err;
}

static const struct rt_err_entry *find_rt_error(cudaError_t e)
{
    for (size_t i = 0; i < sizeof rt_errors / sizeof *rt_errors; i++)
        if (rt_errors[i].code == (int)e)
            return &rt_errors[i];
    return NULL;
}

/* The real libcudart's strings (errors_runtime.inc); unknown codes give
 * "unrecognized error code" as the real one does. */
const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
    const struct rt_err_entry *e = find_rt_error(error);
    return e ? e->str : "unrecognized error code";
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
    const struct rt_err_entry *e = find_rt_error(error);
    return e ? e->name : "unrecognized error code";
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return rt_ret(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

/* 0 when no driver can be loaded, as the real runtime reports. */
cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return rt_ret(cudaErrorInvalidValue);
    *driverVersion = 0;
    if (rt_load() == cudaSuccess)
        rt_drv.cuDriverGetVersion(driverVersion);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceReset(void)
{
    RT_LEDGER_SCOPE("cudaDeviceReset", NULL, 0);
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    int dev = rt_device();
    rt_forget_context(dev);
    return rt_ret(rt_err(rt_drv.cuDevicePrimaryCtxReset(dev)));
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : rt_err(rt_drv.cuCtxSynchronize()));
}
