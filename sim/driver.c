/* The simulated CUDA driver (libcuda.so.1): initialisation, devices, primary
 * contexts, error strings and cuGetProcAddress. */
#include "driver_common.h"

#include <stdio.h>
#include <string.h>

int sim_drv_initialized;
static __thread struct CUctx_st *cur_ctx;

struct err_entry {
    int code;
    const char *name, *str;
};
static const struct err_entry drv_errors[] = {
#include "errors_driver.inc"
};

CUresult sim_check_init(void)
{
    return __atomic_load_n(&sim_drv_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_NOT_INITIALIZED;
}

struct sim_device *sim_current_device(void)
{
    return cur_ctx ? &sim_devices[cur_ctx->ordinal] : NULL;
}

struct sim_device *sim_need_device(CUresult *err)
{
    *err = sim_check_init();
    if (*err)
        return NULL;
    if (!cur_ctx)
        *err = CUDA_ERROR_INVALID_CONTEXT;
    return sim_current_device();
}

void sim_sync_device(struct sim_device *d)
{
    pthread_mutex_lock(&d->lock);
    uint64_t keep = d->pool.release_threshold;
    pthread_mutex_unlock(&d->lock);
    sim_pool_trim(&d->pool, keep > SIZE_MAX ? SIZE_MAX : (size_t)keep);
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_state_init() != 0) {
        fprintf(stderr, "vramtrace-sim: cannot reserve address space for the devices\n");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    __atomic_store_n(&sim_drv_initialized, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    if (sim_check_init())
        return sim_check_init();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim_cfg.ndevices;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    if (sim_check_init())
        return sim_check_init();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= sim_cfg.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult sim_check_device(CUdevice dev)
{
    if (sim_check_init())
        return sim_check_init();
    return dev >= 0 && dev < sim_cfg.ndevices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", sim_cfg.profile->name);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = sim_cfg.capacity;
    return CUDA_SUCCESS;
}

/* Values of the profile for the attributes cudaGetDeviceProperties reads;
 * -1 for an attribute not modelled. */
static int attr_value(CUdevice_attribute a, const struct sim_profile *p)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        return p->clock_khz;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return p->sm_count;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
        return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        return p->mem_clock_khz;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        return p->bus_width_bits;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        return p->l2_bytes;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        return p->max_threads_per_sm;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return p->major;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        return p->minor;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        return p->smem_per_sm;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
        return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
        return 1;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        return p->smem_per_sm - 1024;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        return p->major >= 8 ? 32 : 16;
    default:
        return -1;
    }
}

/* Attributes not modelled: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    int v = attr_value(attrib, sim_cfg.profile);
    if (!pi || v < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attrib == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID ? dev : v;
    return CUDA_SUCCESS;
}

/* The context reserve is taken when the primary context is first retained
 * (or first used after a reset). */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    d->ctx.refcount++;
    if (!d->ctx.active)
        sim_ctx_activate(d);
    pthread_mutex_unlock(&d->lock);
    *pctx = &d->ctx;
    return CUDA_SUCCESS;
}

/* At refcount 0 the context is destroyed with all its memory. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxRelease_v2");
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    if (d->ctx.refcount == 0)
        err = CUDA_ERROR_INVALID_CONTEXT;
    else if (--d->ctx.refcount == 0)
        sim_ctx_destroy(d);
    pthread_mutex_unlock(&d->lock);
    return err;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxReset_v2");
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    sim_ctx_destroy(d);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_devices[dev].lock);
    *active = sim_devices[dev].ctx.active;
    pthread_mutex_unlock(&sim_devices[dev].lock);
    *flags = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (ctx && (ctx->ordinal < 0 || ctx->ordinal >= sim_cfg.ndevices ||
                ctx != &sim_devices[ctx->ordinal].ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    cur_ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = cur_ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = d->ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (d)
        sim_sync_device(d);
    return err;
}

/* The simulated device runs no kernels. */
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
    (void)f, (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
    (void)blockDimZ, (void)sharedMemBytes, (void)hStream, (void)kernelParams, (void)extra;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}

static const struct err_entry *find_error(CUresult e)
{
    for (size_t i = 0; i < sizeof drv_errors / sizeof *drv_errors; i++)
        if (drv_errors[i].code == (int)e)
            return &drv_errors[i];
    return NULL;
}

/* Strings: see errors_driver.inc. Unknown code: CUDA_ERROR_INVALID_VALUE and
 * *pStr = NULL (cuda.h, cuGetErrorString). Needs no cuInit. */
CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    const struct err_entry *e = find_error(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->str : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    const struct err_entry *e = find_error(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
