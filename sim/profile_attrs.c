/* Every CUdevice_attribute of the simulated cards: the values a real Tesla T4
 * (compute capability 7.5), A100 (8.0) and H100 SXM5 (9.0) report.
 * Sources: the CUDA C++ Programming Guide, "Compute Capabilities" (feature and
 * technical-specification tables: grid, block, texture, surface, shared
 * memory and register limits per compute capability); the cudaDeviceProp
 * documentation (texture/surface maxima); deviceQuery / deviceQueryDrv output
 * of these boards (clocks, bus width, L2, copy engines); NVIDIA's A100 and H100
 * architecture white papers (L2 persistence: up to 75% of L2, access-policy
 * window 128 MiB - 2 KiB; thread-block clusters, TMA and 4 memory-sync
 * domains on 9.0); PCI IDs from the PCI ID repository (10de:1eb8 T4,
 * 10de:20b0 / 20b2 A100-SXM4-40/80GB, 10de:2330 H100 SXM5). Board-specific
 * facts the sim cannot know (PCI bus, subsystem, NUMA placement) take the
 * values of a single-socket host without NUMA; values that depend on the
 * profile (clocks, SMs, memory, L2) come from the profile (profile.c). */
#include "driver_extra.h"

#include <stddef.h>

/* Where a value comes from: the row's literal per architecture, or the
 * profile / device. */
enum src { LIT, CLOCK, SMS, MEMCLK, BUS, L2, CCMAJ, CCMIN, THRSM, SMEMSM, ORDINAL };

struct attr_row {
    int attr;
    enum src src;
    int v[3]; /* T4 (7.x), A100 (8.x), H100 (9.x) */
};

#define A(name) CU_DEVICE_ATTRIBUTE_##name
#define SAME(x)                                                                                    \
    {                                                                                              \
        x, x, x                                                                                    \
    }
static const struct attr_row rows[] = {
    {A(MAX_THREADS_PER_BLOCK), LIT, SAME(1024)},
    {A(MAX_BLOCK_DIM_X), LIT, SAME(1024)},
    {A(MAX_BLOCK_DIM_Y), LIT, SAME(1024)},
    {A(MAX_BLOCK_DIM_Z), LIT, SAME(64)},
    {A(MAX_GRID_DIM_X), LIT, SAME(2147483647)},
    {A(MAX_GRID_DIM_Y), LIT, SAME(65535)},
    {A(MAX_GRID_DIM_Z), LIT, SAME(65535)},
    {A(MAX_SHARED_MEMORY_PER_BLOCK), LIT, SAME(49152)},
    {A(TOTAL_CONSTANT_MEMORY), LIT, SAME(65536)},
    {A(WARP_SIZE), LIT, SAME(32)},
    {A(MAX_PITCH), LIT, SAME(2147483647)},
    {A(MAX_REGISTERS_PER_BLOCK), LIT, SAME(65536)},
    {A(CLOCK_RATE), CLOCK, SAME(0)},
    {A(TEXTURE_ALIGNMENT), LIT, SAME(512)},
    {A(GPU_OVERLAP), LIT, SAME(1)},
    {A(MULTIPROCESSOR_COUNT), SMS, SAME(0)},
    {A(KERNEL_EXEC_TIMEOUT), LIT, SAME(0)},
    {A(INTEGRATED), LIT, SAME(0)},
    {A(CAN_MAP_HOST_MEMORY), LIT, SAME(1)},
    {A(COMPUTE_MODE), LIT, SAME(CU_COMPUTEMODE_DEFAULT)},
    {A(MAXIMUM_TEXTURE1D_WIDTH), LIT, SAME(131072)},
    {A(MAXIMUM_TEXTURE2D_WIDTH), LIT, SAME(131072)},
    {A(MAXIMUM_TEXTURE2D_HEIGHT), LIT, SAME(65536)},
    {A(MAXIMUM_TEXTURE3D_WIDTH), LIT, SAME(16384)},
    {A(MAXIMUM_TEXTURE3D_HEIGHT), LIT, SAME(16384)},
    {A(MAXIMUM_TEXTURE3D_DEPTH), LIT, SAME(16384)},
    {A(MAXIMUM_TEXTURE2D_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE2D_LAYERED_LAYERS), LIT, SAME(2048)},
    {A(SURFACE_ALIGNMENT), LIT, SAME(512)},
    {A(CONCURRENT_KERNELS), LIT, SAME(1)},
    {A(ECC_ENABLED), LIT, SAME(1)},
    {A(PCI_BUS_ID), LIT, SAME(0)},
    {A(PCI_DEVICE_ID), ORDINAL, SAME(0)},
    {A(TCC_DRIVER), LIT, SAME(0)},
    {A(MEMORY_CLOCK_RATE), MEMCLK, SAME(0)},
    {A(GLOBAL_MEMORY_BUS_WIDTH), BUS, SAME(0)},
    {A(L2_CACHE_SIZE), L2, SAME(0)},
    {A(MAX_THREADS_PER_MULTIPROCESSOR), THRSM, SAME(0)},
    {A(ASYNC_ENGINE_COUNT), LIT, SAME(3)},
    {A(UNIFIED_ADDRESSING), LIT, SAME(1)},
    {A(MAXIMUM_TEXTURE1D_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE1D_LAYERED_LAYERS), LIT, SAME(2048)},
    {A(CAN_TEX2D_GATHER), LIT, SAME(1)},
    {A(MAXIMUM_TEXTURE2D_GATHER_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE2D_GATHER_HEIGHT), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE), LIT, SAME(8192)},
    {A(MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE), LIT, SAME(8192)},
    {A(MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE), LIT, SAME(32768)},
    {A(PCI_DOMAIN_ID), LIT, SAME(0)},
    {A(TEXTURE_PITCH_ALIGNMENT), LIT, SAME(32)},
    {A(MAXIMUM_TEXTURECUBEMAP_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS), LIT, SAME(2046)},
    {A(MAXIMUM_SURFACE1D_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACE2D_WIDTH), LIT, SAME(131072)},
    {A(MAXIMUM_SURFACE2D_HEIGHT), LIT, SAME(65536)},
    {A(MAXIMUM_SURFACE3D_WIDTH), LIT, SAME(16384)},
    {A(MAXIMUM_SURFACE3D_HEIGHT), LIT, SAME(16384)},
    {A(MAXIMUM_SURFACE3D_DEPTH), LIT, SAME(16384)},
    {A(MAXIMUM_SURFACE1D_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACE1D_LAYERED_LAYERS), LIT, SAME(2048)},
    {A(MAXIMUM_SURFACE2D_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACE2D_LAYERED_HEIGHT), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACE2D_LAYERED_LAYERS), LIT, SAME(2048)},
    {A(MAXIMUM_SURFACECUBEMAP_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS), LIT, SAME(2046)},
    {A(MAXIMUM_TEXTURE1D_LINEAR_WIDTH), LIT, SAME(268435456)},
    {A(MAXIMUM_TEXTURE2D_LINEAR_WIDTH), LIT, SAME(131072)},
    {A(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT), LIT, SAME(65000)},
    {A(MAXIMUM_TEXTURE2D_LINEAR_PITCH), LIT, SAME(2097120)},
    {A(MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH), LIT, SAME(32768)},
    {A(MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT), LIT, SAME(32768)},
    {A(COMPUTE_CAPABILITY_MAJOR), CCMAJ, SAME(0)},
    {A(COMPUTE_CAPABILITY_MINOR), CCMIN, SAME(0)},
    {A(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH), LIT, SAME(32768)},
    {A(STREAM_PRIORITIES_SUPPORTED), LIT, SAME(1)},
    {A(GLOBAL_L1_CACHE_SUPPORTED), LIT, SAME(1)},
    {A(LOCAL_L1_CACHE_SUPPORTED), LIT, SAME(1)},
    {A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR), SMEMSM, SAME(0)},
    {A(MAX_REGISTERS_PER_MULTIPROCESSOR), LIT, SAME(65536)},
    {A(MANAGED_MEMORY), LIT, SAME(1)},
    {A(MULTI_GPU_BOARD), LIT, SAME(0)},
    {A(MULTI_GPU_BOARD_GROUP_ID), ORDINAL, SAME(0)},
    {A(HOST_NATIVE_ATOMIC_SUPPORTED), LIT, SAME(0)},
    {A(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO), LIT, {32, 2, 2}},
    {A(PAGEABLE_MEMORY_ACCESS), LIT, SAME(0)},
    {A(CONCURRENT_MANAGED_ACCESS), LIT, SAME(1)},
    {A(COMPUTE_PREEMPTION_SUPPORTED), LIT, SAME(1)},
    {A(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM), LIT, SAME(1)},
    {A(CAN_USE_STREAM_MEM_OPS_V1), LIT, SAME(0)},
    {A(CAN_USE_64_BIT_STREAM_MEM_OPS_V1), LIT, SAME(0)},
    {A(CAN_USE_STREAM_WAIT_VALUE_NOR_V1), LIT, SAME(0)},
    {A(COOPERATIVE_LAUNCH), LIT, SAME(1)},
    {A(COOPERATIVE_MULTI_DEVICE_LAUNCH), LIT, SAME(1)},
    {A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), LIT, {65536, 166912, 232448}},
    {A(CAN_FLUSH_REMOTE_WRITES), LIT, SAME(0)},
    {A(HOST_REGISTER_SUPPORTED), LIT, SAME(1)},
    {A(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES), LIT, SAME(0)},
    {A(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST), LIT, SAME(0)},
    {A(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), LIT, SAME(1)},
    {A(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED), LIT, SAME(1)},
    {A(HANDLE_TYPE_WIN32_HANDLE_SUPPORTED), LIT, SAME(0)},
    {A(HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED), LIT, SAME(0)},
    {A(MAX_BLOCKS_PER_MULTIPROCESSOR), LIT, {16, 32, 32}},
    {A(GENERIC_COMPRESSION_SUPPORTED), LIT, {0, 1, 1}},
    {A(MAX_PERSISTING_L2_CACHE_SIZE), LIT, {0, 31457280, 39321600}},
    {A(MAX_ACCESS_POLICY_WINDOW_SIZE), LIT, {0, 134213632, 134213632}},
    {A(GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED), LIT, SAME(1)},
    {A(RESERVED_SHARED_MEMORY_PER_BLOCK), LIT, {0, 1024, 1024}},
    {A(SPARSE_CUDA_ARRAY_SUPPORTED), LIT, SAME(1)},
    {A(READ_ONLY_HOST_REGISTER_SUPPORTED), LIT, SAME(1)},
    {A(TIMELINE_SEMAPHORE_INTEROP_SUPPORTED), LIT, SAME(1)},
    {A(MEMORY_POOLS_SUPPORTED), LIT, SAME(1)},
    {A(GPU_DIRECT_RDMA_SUPPORTED), LIT, SAME(1)},
    {A(GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS), LIT,
     SAME(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST)},
    {A(GPU_DIRECT_RDMA_WRITES_ORDERING),
     LIT,
     {CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE, CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER,
      CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER}},
    {A(MEMPOOL_SUPPORTED_HANDLE_TYPES), LIT, SAME(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)},
    {A(CLUSTER_LAUNCH), LIT, {0, 0, 1}},
    {A(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED), LIT, SAME(1)},
    {A(CAN_USE_64_BIT_STREAM_MEM_OPS), LIT, SAME(1)},
    {A(CAN_USE_STREAM_WAIT_VALUE_NOR), LIT, SAME(1)},
    {A(DMA_BUF_SUPPORTED), LIT, {0, 1, 1}},
    /* The cards support IPC events; the sim has no IPC (driver_extra.c). */
    {A(IPC_EVENT_SUPPORTED), LIT, SAME(0)},
    {A(MEM_SYNC_DOMAIN_COUNT), LIT, {1, 1, 4}},
    {A(TENSOR_MAP_ACCESS_SUPPORTED), LIT, {0, 0, 1}},
    {A(HANDLE_TYPE_FABRIC_SUPPORTED), LIT, SAME(0)},
    {A(UNIFIED_FUNCTION_POINTERS), LIT, SAME(1)},
    {A(NUMA_CONFIG), LIT, SAME(CU_DEVICE_NUMA_CONFIG_NONE)},
    {A(NUMA_ID), LIT, SAME(-1)},
    {A(MULTICAST_SUPPORTED), LIT, SAME(0)},
    {A(MPS_ENABLED), LIT, SAME(0)},
    {A(HOST_NUMA_ID), LIT, SAME(0)},
    {A(D3D12_CIG_SUPPORTED), LIT, SAME(0)},
    {A(MEM_DECOMPRESS_ALGORITHM_MASK), LIT, SAME(0)},
    {A(MEM_DECOMPRESS_MAXIMUM_LENGTH), LIT, SAME(0)},
    {A(VULKAN_CIG_SUPPORTED), LIT, SAME(0)},
    {A(GPU_PCI_DEVICE_ID), LIT, {0x1eb810de, 0x20b010de, 0x233010de}},
    {A(GPU_PCI_SUBSYSTEM_ID), LIT, SAME(0)},
    {A(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), LIT, SAME(0)},
    {A(HOST_NUMA_MEMORY_POOLS_SUPPORTED), LIT, SAME(0)},
    {A(HOST_NUMA_MULTINODE_IPC_SUPPORTED), LIT, SAME(0)},
    {A(HOST_MEMORY_POOLS_SUPPORTED), LIT, SAME(0)},
    {A(HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), LIT, SAME(0)},
    {A(HOST_ALLOC_DMA_BUF_SUPPORTED), LIT, SAME(0)},
    {A(ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED), LIT, SAME(0)},
};

static int from_profile(enum src s, const struct sim_profile *p, int dev, int lit)
{
    switch (s) {
    case CLOCK:
        return p->clock_khz;
    case SMS:
        return p->sm_count;
    case MEMCLK:
        return p->mem_clock_khz;
    case BUS:
        return p->bus_width_bits;
    case L2:
        return p->l2_bytes;
    case CCMAJ:
        return p->major;
    case CCMIN:
        return p->minor;
    case THRSM:
        return p->max_threads_per_sm;
    case SMEMSM:
        return p->smem_per_sm;
    case ORDINAL:
        return dev;
    case LIT:
    default:
        return lit;
    }
}

int sim_device_attr(CUdevice_attribute a, const struct sim_profile *p, int dev, int *out)
{
    int arch = p->major >= 9 ? 2 : p->major == 8 ? 1 : 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (rows[i].attr == (int)a) {
            *out = from_profile(rows[i].src, p, dev, rows[i].v[arch]);
            return 0;
        }
    return -1;
}
