/* The simulated CUDA driver (libcuda.so.1): initialisation, devices and
 * error strings. Contexts are in driver_ctx.c, above this file. */
#include "driver_common.h"
#include "driver_extra.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int sim_drv_initialized, sim_drv_closed, sim_drv_forked_after_init;
static const char *sim_drv_closed_by;

/* Called by the simulated runtime's exit handler (registered when it loads
 * the driver, as NVIDIA's runtime registers its teardown at initialisation;
 * README.md, "Exit"): from then on the calls that need an initialised
 * driver fail with CUDA_ERROR_DEINITIALIZED ("the CUDA driver is in the
 * process of shutting down", cuda.h) and the first says so on stderr. A real
 * driver may crash instead (an H200, driver 580.159.04: cuCtxGetDevice after
 * a static runtime's teardown), so a profiler must make no such call. */
__attribute__((visibility("default"))) void vtsim_runtime_teardown(void)
{
    __atomic_store_n(&sim_drv_closed_by, "after the CUDA runtime's teardown", __ATOMIC_RELAXED);
    __atomic_store_n(&sim_drv_closed, 1, __ATOMIC_RELEASE);
}

/* For a test program's last exit handler (registered with atexit at the end
 * of main, so it runs first): from then on the driver is closed as after
 * the runtime's teardown. A real runtime's teardown ran before an exit
 * handler the preload registered after the first allocation returned (the
 * second H200 run, driver 580.159.04: cuCtxGetDevice crashed in 4 of 22
 * programs), so a profiler must make no driver call in exit() at all;
 * this is how a test says so. */
__attribute__((visibility("default"))) void vtsim_exit_begun(void)
{
    __atomic_store_n(&sim_drv_closed_by, "after the program's exit began", __ATOMIC_RELAXED);
    __atomic_store_n(&sim_drv_closed, 1, __ATOMIC_RELEASE);
}

static CUresult late_call(void)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr,
                "vramtrace-sim: a driver call at exit, %s (CUDA_ERROR_DEINITIALIZED; a real "
                "driver may crash here)\n",
                __atomic_load_n(&sim_drv_closed_by, __ATOMIC_RELAXED));
    return CUDA_ERROR_DEINITIALIZED;
}

struct err_entry {
    int code;
    const char *name, *str;
};
static const struct err_entry drv_errors[] = {
#include "errors_driver.inc"
};

CUresult sim_check_init(void)
{
    if (__atomic_load_n(&sim_drv_closed, __ATOMIC_ACQUIRE))
        return late_call();
    return __atomic_load_n(&sim_drv_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_NOT_INITIALIZED;
}

void sim_sync_device(struct sim_device *d)
{
    sim_pools_sync(d);
}

/* A process forked (without exec) after its parent initialised the driver
 * cannot use CUDA: every call, cuInit included, fails with
 * CUDA_ERROR_NOT_INITIALIZED, and the runtime's with
 * cudaErrorInitializationError ("initialization error"; NVIDIA: "CUDA is
 * not fork-safe"; seen in the wild as pycuda's "cuInit failed:
 * initialization error" and PyTorch's "Cannot re-initialize CUDA in forked
 * subprocess", which checks before it calls). A child forked before cuInit
 * initialises as any process. */
static void driver_child(void)
{
    if (__atomic_load_n(&sim_drv_initialized, __ATOMIC_ACQUIRE))
        __atomic_store_n(&sim_drv_forked_after_init, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&sim_drv_initialized, 0, __ATOMIC_RELEASE);
}

static void driver_register_fork(void)
{
    pthread_atfork(NULL, NULL, driver_child);
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
    pthread_once(&fork_once, driver_register_fork);
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (__atomic_load_n(&sim_drv_forked_after_init, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
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

/* Every CUdevice_attribute answers with the profile's card value
 * (profile_attrs.c); anything else: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pi || sim_device_attr(attrib, sim_cfg.profile, dev, pi) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
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
