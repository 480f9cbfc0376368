/* The cudaDeviceProp fields cuda-samples' deviceQuery prints beyond the core
 * ones (runtime_props.c): texture and surface limits, PCI location, feature
 * flags, each from the driver attribute the CUDA Runtime API documentation
 * names for it (cudaDeviceProp). */
#include "runtime_internal.h"

#include <stddef.h>
#include <string.h>

enum width { W_INT, W_SIZE, W_UINT };

struct prop_attr {
    size_t offset; /* of the field (or array element) in cudaDeviceProp */
    enum width width;
    CUdevice_attribute attr;
};

#define I(f, a)                                                                                    \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, f), W_INT, CU_DEVICE_ATTRIBUTE_##a                         \
    }
#define S(f, a)                                                                                    \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, f), W_SIZE, CU_DEVICE_ATTRIBUTE_##a                        \
    }
#define U(f, a)                                                                                    \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, f), W_UINT, CU_DEVICE_ATTRIBUTE_##a                        \
    }
static const struct prop_attr table[] = {
    I(integrated, INTEGRATED),
    I(maxTexture1D, MAXIMUM_TEXTURE1D_WIDTH),
    I(maxTexture1DMipmap, MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH),
    I(maxTexture2D[0], MAXIMUM_TEXTURE2D_WIDTH),
    I(maxTexture2D[1], MAXIMUM_TEXTURE2D_HEIGHT),
    I(maxTexture2DMipmap[0], MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH),
    I(maxTexture2DMipmap[1], MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT),
    I(maxTexture2DLinear[0], MAXIMUM_TEXTURE2D_LINEAR_WIDTH),
    I(maxTexture2DLinear[1], MAXIMUM_TEXTURE2D_LINEAR_HEIGHT),
    I(maxTexture2DLinear[2], MAXIMUM_TEXTURE2D_LINEAR_PITCH),
    I(maxTexture2DGather[0], MAXIMUM_TEXTURE2D_GATHER_WIDTH),
    I(maxTexture2DGather[1], MAXIMUM_TEXTURE2D_GATHER_HEIGHT),
    I(maxTexture3D[0], MAXIMUM_TEXTURE3D_WIDTH),
    I(maxTexture3D[1], MAXIMUM_TEXTURE3D_HEIGHT),
    I(maxTexture3D[2], MAXIMUM_TEXTURE3D_DEPTH),
    I(maxTexture3DAlt[0], MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE),
    I(maxTexture3DAlt[1], MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE),
    I(maxTexture3DAlt[2], MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE),
    I(maxTextureCubemap, MAXIMUM_TEXTURECUBEMAP_WIDTH),
    I(maxTexture1DLayered[0], MAXIMUM_TEXTURE1D_LAYERED_WIDTH),
    I(maxTexture1DLayered[1], MAXIMUM_TEXTURE1D_LAYERED_LAYERS),
    I(maxTexture2DLayered[0], MAXIMUM_TEXTURE2D_LAYERED_WIDTH),
    I(maxTexture2DLayered[1], MAXIMUM_TEXTURE2D_LAYERED_HEIGHT),
    I(maxTexture2DLayered[2], MAXIMUM_TEXTURE2D_LAYERED_LAYERS),
    I(maxTextureCubemapLayered[0], MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH),
    I(maxTextureCubemapLayered[1], MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS),
    I(maxSurface1D, MAXIMUM_SURFACE1D_WIDTH),
    I(maxSurface2D[0], MAXIMUM_SURFACE2D_WIDTH),
    I(maxSurface2D[1], MAXIMUM_SURFACE2D_HEIGHT),
    I(maxSurface3D[0], MAXIMUM_SURFACE3D_WIDTH),
    I(maxSurface3D[1], MAXIMUM_SURFACE3D_HEIGHT),
    I(maxSurface3D[2], MAXIMUM_SURFACE3D_DEPTH),
    I(maxSurface1DLayered[0], MAXIMUM_SURFACE1D_LAYERED_WIDTH),
    I(maxSurface1DLayered[1], MAXIMUM_SURFACE1D_LAYERED_LAYERS),
    I(maxSurface2DLayered[0], MAXIMUM_SURFACE2D_LAYERED_WIDTH),
    I(maxSurface2DLayered[1], MAXIMUM_SURFACE2D_LAYERED_HEIGHT),
    I(maxSurface2DLayered[2], MAXIMUM_SURFACE2D_LAYERED_LAYERS),
    I(maxSurfaceCubemap, MAXIMUM_SURFACECUBEMAP_WIDTH),
    I(maxSurfaceCubemapLayered[0], MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH),
    I(maxSurfaceCubemapLayered[1], MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS),
    S(surfaceAlignment, SURFACE_ALIGNMENT),
    I(pciBusID, PCI_BUS_ID),
    I(pciDomainID, PCI_DOMAIN_ID),
    I(tccDriver, TCC_DRIVER),
    I(persistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE),
    I(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED),
    I(globalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED),
    I(localL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED),
    I(isMultiGpuBoard, MULTI_GPU_BOARD),
    I(multiGpuBoardGroupID, MULTI_GPU_BOARD_GROUP_ID),
    I(hostNativeAtomicSupported, HOST_NATIVE_ATOMIC_SUPPORTED),
    I(pageableMemoryAccess, PAGEABLE_MEMORY_ACCESS),
    I(computePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED),
    I(canUseHostPointerForRegisteredMem, CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM),
    I(cooperativeLaunch, COOPERATIVE_LAUNCH),
    I(pageableMemoryAccessUsesHostPageTables, PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES),
    I(directManagedMemAccessFromHost, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST),
    I(accessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE),
    S(reservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK),
    I(hostRegisterSupported, HOST_REGISTER_SUPPORTED),
    I(sparseCudaArraySupported, SPARSE_CUDA_ARRAY_SUPPORTED),
    I(hostRegisterReadOnlySupported, READ_ONLY_HOST_REGISTER_SUPPORTED),
    I(timelineSemaphoreInteropSupported, TIMELINE_SEMAPHORE_INTEROP_SUPPORTED),
    I(gpuDirectRDMASupported, GPU_DIRECT_RDMA_SUPPORTED),
    U(gpuDirectRDMAFlushWritesOptions, GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
    I(gpuDirectRDMAWritesOrdering, GPU_DIRECT_RDMA_WRITES_ORDERING),
    U(memoryPoolSupportedHandleTypes, MEMPOOL_SUPPORTED_HANDLE_TYPES),
    I(deferredMappingCudaArraySupported, DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED),
    I(ipcEventSupported, IPC_EVENT_SUPPORTED),
    I(clusterLaunch, CLUSTER_LAUNCH),
    I(unifiedFunctionPointers, UNIFIED_FUNCTION_POINTERS),
    I(deviceNumaConfig, NUMA_CONFIG),
    I(deviceNumaId, NUMA_ID),
    I(mpsEnabled, MPS_ENABLED),
    I(hostNumaId, HOST_NUMA_ID),
    U(gpuPciDeviceID, GPU_PCI_DEVICE_ID),
    U(gpuPciSubsystemID, GPU_PCI_SUBSYSTEM_ID),
    I(hostNumaMultinodeIpcSupported, HOST_NUMA_MULTINODE_IPC_SUPPORTED),
};

void rt_fill_props_extra(struct cudaDeviceProp *p, int dev)
{
    char *base = (char *)p;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        int v = 0;
        rt_drv.cuDeviceGetAttribute(&v, table[i].attr, dev);
        if (table[i].width == W_SIZE)
            *(size_t *)(base + table[i].offset) = (size_t)v;
        else if (table[i].width == W_UINT)
            *(unsigned *)(base + table[i].offset) = (unsigned)v;
        else
            *(int *)(base + table[i].offset) = v;
    }
}
