/* cudaGetDeviceProperties and the kernel entry points of the simulated
 * runtime. */
#include "runtime_internal.h"

#include <stdio.h>
#include <string.h>

static int attr(CUdevice_attribute a, int dev)
{
    int v = 0;
    rt_drv.cuDeviceGetAttribute(&v, a, dev);
    return v;
}

static void fill_dims(struct cudaDeviceProp *p, int dev)
{
    p->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, dev);
    p->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, dev);
    p->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, dev);
    p->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, dev);
    p->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, dev);
    p->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, dev);
}

static void fill_attrs(struct cudaDeviceProp *p, int dev)
{
    p->sharedMemPerBlock = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev);
    p->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev);
    p->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
    p->memPitch = (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev);
    p->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
    p->totalConstMem = (size_t)attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, dev);
    p->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    p->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    p->textureAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev);
    p->texturePitchAlignment = (size_t)attr(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev);
    p->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    p->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev);
    p->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, dev);
    p->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, dev);
    p->pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
    p->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, dev);
    p->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev);
    p->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
    p->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    p->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    p->sharedMemPerMultiprocessor =
        (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
    p->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, dev);
    p->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev);
    p->concurrentManagedAccess = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, dev);
    p->sharedMemPerBlockOptin =
        (size_t)attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    p->maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, dev);
    p->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
}

/* Filled from the driver's device attributes (the profile); fields the
 * profile does not model are 0. */
cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    cudaError_t e = rt_load();
    if (e)
        return rt_ret(e);
    if (!prop)
        return rt_ret(cudaErrorInvalidValue);
    memset(prop, 0, sizeof *prop);
    e = rt_err(rt_drv.cuDeviceGetName(prop->name, sizeof prop->name, device));
    if (e)
        return rt_ret(e == cudaErrorInvalidValue ? cudaErrorInvalidDevice : e);
    rt_drv.cuDeviceTotalMem(&prop->totalGlobalMem, device);
    fill_dims(prop, device);
    fill_attrs(prop, device);
    rt_fill_props_extra(prop, device);
    return cudaSuccess;
}

/* Kernels: the simulated device runs none. A launch reaches the driver's
 * cuLaunchKernel (the function's address stands for its handle): on a
 * capturing stream it becomes a kernel node of the graph; otherwise it
 * returns cudaErrorNotSupported ("operation not supported") and says why
 * once on stderr. Registration calls from nvcc-generated code succeed. */
static void say_no_kernels(const char *entry)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr, "vramtrace-sim: the simulated device runs no kernels (%s)\n", entry);
}

static cudaError_t launch(const char *entry, const void *func, dim3 g, dim3 b, void **args,
                          size_t sharedMem, cudaStream_t stream)
{
    cudaError_t e = rt_ready();
    if (e)
        return rt_ret(e);
    e = rt_err(rt_drv.cuLaunchKernel((CUfunction)(uintptr_t)func, g.x, g.y, g.z, b.x, b.y, b.z,
                                     (unsigned)sharedMem, stream, args, NULL));
    if (e == cudaErrorNotSupported)
        say_no_kernels(entry);
    return rt_ret(e);
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream)
{
    return launch("cudaLaunchKernel", func, gridDim, blockDim, args, sharedMem, stream);
}

/* nvcc 13's launch stubs (crt/host_runtime.h, crt/device_functions.h) look
 * a kernel handle up with __cudaGetKernel once, then launch through
 * __cudaLaunchKernel; exported so binaries bound eagerly (-z now) load. */
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void **args, size_t sharedMem, cudaStream_t stream);

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    if (kernel)
        *kernel = (cudaKernel_t)(uintptr_t)func;
    return cudaSuccess;
}

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream)
{
    return launch("__cudaLaunchKernel", kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void **args, size_t sharedMem, cudaStream_t stream)
{
    return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    (void)attr, (void)func;
    return rt_ret(cudaErrorInvalidDeviceFunction);
}

/* The nvcc host-code interface (crt/host_runtime.h); no prototypes in the
 * public headers, so declared here with the toolkit's signatures. */
void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin);
void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle);
void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid,
                                      uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant,
                                 int global);
void CUDARTAPI __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                        char *deviceAddress, const char *deviceName, int ext,
                                        size_t size, int constant, int global);
char CUDARTAPI __cudaInitModule(void **fatCubinHandle);
unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               void *stream);
cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream);

static void *fatbin_handle_slot;

void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin)
{
    (void)fatCubin;
    return &fatbin_handle_slot;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid,
                                      uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)fatCubinHandle, (void)hostFun, (void)deviceFun, (void)deviceName, (void)thread_limit;
    (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
}

void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant,
                                 int global)
{
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext;
    (void)size, (void)constant, (void)global;
}

void CUDARTAPI __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                        char *deviceAddress, const char *deviceName, int ext,
                                        size_t size, int constant, int global)
{
    (void)fatCubinHandle, (void)hostVarPtrAddress, (void)deviceAddress, (void)deviceName;
    (void)ext, (void)size, (void)constant, (void)global;
}

char CUDARTAPI __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

/* The <<<>>> configuration, one per thread, popped by the launch stub. */
static __thread struct {
    dim3 grid, block;
    size_t shmem;
    void *stream;
} call_cfg;

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               void *stream)
{
    call_cfg.grid = gridDim;
    call_cfg.block = blockDim;
    call_cfg.shmem = sharedMem;
    call_cfg.stream = stream;
    return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream)
{
    *gridDim = call_cfg.grid;
    *blockDim = call_cfg.block;
    *sharedMem = call_cfg.shmem;
    *(void **)stream = call_cfg.stream;
    return cudaSuccess;
}
