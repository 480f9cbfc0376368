/* Internal interface of the simulated driver (libcuda.so.1). Not installed.
 * sim/ has no public header: its interface is the CUDA API itself. */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "range_alloc.h"

#define SIM_MiB ((size_t)1 << 20)
#define SIM_SMALL_ALIGN ((size_t)512)       /* rounding of allocations under 2 MiB */
#define SIM_LARGE_ALIGN ((size_t)2 << 20)   /* rounding of allocations of 2 MiB and more */
#define SIM_GRAPH_VA_TIMES 16               /* graph nodes' address space, in device capacities */
#define SIM_POOL_SEGMENT ((size_t)32 << 20) /* a stream-ordered pool's reserve step (device.c) */
#define SIM_MAX_DEVICES 16

/* A named device profile: what cudaGetDeviceProperties reports, plus the
 * memory taken by a context (README.md gives the sources). */
struct sim_profile {
    const char *key;  /* VRAMTRACE_SIM_DEVICE value, e.g. "t4" */
    const char *name; /* cudaDeviceProp.name, e.g. "Tesla T4" */
    size_t total_mib; /* device memory in MiB */
    size_t reserve_mib;
    int sm_count, major, minor;
    int l2_bytes, bus_width_bits, mem_clock_khz, clock_khz;
    int max_threads_per_sm, smem_per_sm;
};

/* The process-wide configuration read from the environment once. */
struct sim_config {
    const struct sim_profile *profile;
    size_t capacity; /* bytes per device */
    size_t reserve;  /* bytes taken by a context */
    int ndevices;
};

/* The profile keys, space-separated (exported: README.md, "Identity"). */
const char *vtsim_profiles(void);
/* Read VRAMTRACE_SIM_DEVICE / _MEMORY / _DEVICES / _CONTEXT_RESERVE; a bad value
 * prints one line on stderr and keeps the default. */
void sim_config_load(struct sim_config *cfg);
/* Devices shared by processes (shared.c, VRAMTRACE_SIM_SHARED=FILE; no-ops
 * when unset): read the variable once; bytes the other live processes take
 * on device; publish the bytes this process takes on device. */
void sim_shared_init(void);
size_t sim_shared_others(int device);
void sim_shared_publish(int device, size_t bytes);

/* SIM_ARRAY_MEM: a CUDA array (driver_array.c), freed by cuArrayDestroy only.
 * SIM_GRAPH_MEM: a graph allocation node's memory while a launch made it
 * live (struct sim_gmem). */
enum sim_kind { SIM_DEVICE_MEM, SIM_MANAGED_MEM, SIM_ASYNC_MEM, SIM_ARRAY_MEM, SIM_GRAPH_MEM };

struct sim_device;

/* A graph allocation node's allocation (CUDA Programming Guide, "Graph
 * memory nodes"; cuGraphAddMemAllocNode): its address is fixed when the node
 * is made and stays reserved across instantiations and launches while a
 * node or executable graph holds it (refs) or its memory is live. A launch
 * makes it live (sim_gmem_map); a free node, cuMemFree(Async) or the next
 * launch of an AUTO_FREE_ON_LAUNCH executable graph frees it. Fields under
 * the device's lock. */
struct sim_gmem {
    struct sim_device *d;
    uintptr_t va;
    size_t size, rounded; /* requested; taken from the graph pool while live */
    unsigned refs;
    bool live;
    size_t charge;         /* the graph pool's bytes it holds while live (sim_gpool_charge) */
    struct sim_gmem *next; /* the device's list */
};

/* A new graph allocation of size bytes on d, its address reserved (no
 * device memory taken), held once (sim_gmem_unref); NULL when the address
 * space or host memory ran out. */
struct sim_gmem *sim_gmem_new(struct sim_device *d, size_t size);
void sim_gmem_ref(struct sim_gmem *g);
/* Drops a hold; the address is given back with the last one once the
 * memory is not live. */
void sim_gmem_unref(struct sim_gmem *g);
/* The graph allocation whose address is va (its start), or NULL. */
struct sim_gmem *sim_gmem_find(uintptr_t va);
bool sim_gmem_live(struct sim_gmem *g);
/* Makes g's memory live (a launch) in the device's graph pool: the sim's
 * ledger records an allocation of g->size bytes at g->va.
 * CUDA_ERROR_OUT_OF_MEMORY when neither the pool nor the device has the
 * room, CUDA_ERROR_INVALID_VALUE when it is live already. */
int sim_gmem_map(struct sim_gmem *g);
/* Frees g's memory when live (the ledger records the free); its bytes stay
 * in the graph pool. */
void sim_gmem_unmap(struct sim_gmem *g);
/* A launch's graph memory on d: reserves the charges (sim_gpool_charge) of
 * its allocation nodes on d, after `credit` bytes of charges its
 * AUTO_FREE_ON_LAUNCH frees give back. false when the pool and the
 * device's free memory cannot hold them (nothing reserved). */
bool sim_gmem_launch_reserve(struct sim_device *d, size_t demand, size_t credit);
/* A launch on d ran out of memory: the graph pool keeps what it took (an
 * H200: all the device's free memory, in 32 MiB steps, to the context's end). */
void sim_gmem_launch_failed(struct sim_device *d);
/* A launch on d runs a memset node: the first one takes
 * SIM_GRAPH_MEMSET_BASE of d (when it has the room). */
void sim_graph_memset_ran(struct sim_device *d);
/* cuDeviceGraphMemTrim: d's graph pool releases what no live allocation
 * uses (not what a failed launch took). */
void sim_graph_mem_trim(struct sim_device *d);
/* d's graph pool's CU_GRAPH_MEM_ATTR_* values in bytes: used (reserved less
 * what a failed launch took), reserved, and their high watermarks since
 * the last sim_graph_mem_reset_high. */
void sim_graph_mem_usage(struct sim_device *d, size_t *used, size_t *reserved, size_t *used_high,
                         size_t *reserved_high);
/* Resets the used (reserved: false) or reserved high watermark to its
 * current value. */
void sim_graph_mem_reset_high(struct sim_device *d, bool reserved);
/* The bytes an allocation of size takes on a device (the sim's rounding). */
size_t sim_alloc_rounded(size_t size);

/* The graph memory pool of a device (graph_pool.c; README.md "Graph memory
 * nodes"), in bytes: what an H200 showed (tests/gpu/probe_graphpool.c). A
 * live graph allocation holds its rounded bytes rounded up to 32 MiB of the
 * reserve (its charge); a launch first reserves the charges of all its
 * allocation nodes at once (memory freed inside the launch is not reused by
 * its later nodes), growing the reserve by what is missing, rounded up to
 * 32 MiB (or exactly, when that does not fit). Freed memory stays reserved
 * until a trim, or a cudaMalloc that needs the room, releases what no live
 * allocation holds (a pool's growth or a cuMemCreate that lacks the room
 * empties it too, and fails all the same: tests/gpu/probe_graphgive.c). A
 * launch that ran out of memory leaves the device's free memory, rounded
 * down to 32 MiB, stuck in the reserve (counted as reserved, not used)
 * until the context ends. base: SIM_GRAPH_MEMSET_BASE once a launch ran a
 * memset node, to the context's end, outside the attributes (an H200 took
 * 2 MiB more at the first launch of a graph with a memset node in both
 * probes whose graphs had one, and nothing in the one whose graphs had
 * none; the cause is not known). */
#define SIM_GRAPH_MEMSET_BASE ((size_t)2 << 20)
struct sim_gpool {
    size_t reserved, stuck, live, base;
    size_t reserved_high, used_high;
};
/* The reserve a pool (a stream-ordered one, the graph memory pool) adds for
 * r (rounded) bytes: r rounded up to SIM_POOL_SEGMENT bytes, at least one,
 * as an H200 reserved (driver 580.159.04,
 * tests/gpu/h200-2026-11-28b/probe_pool.txt: 32 MiB for 1 byte to 5 MiB,
 * 128 MiB for 100 MiB; probe_graphpool.txt: 320 MiB for 300); 0 on
 * overflow. */
size_t sim_pool_segment(size_t r);
/* The reserve a live graph allocation of rounded bytes holds. */
size_t sim_gpool_charge(size_t rounded);
/* Makes demand bytes free in the pool, taking what is missing from *room
 * (the device's free bytes, lowered by what is taken); false when it does
 * not fit (nothing taken). */
bool sim_gpool_reserve(struct sim_gpool *p, size_t demand, size_t *room);
/* A launch ran out of memory: room, rounded down to 32 MiB, becomes stuck
 * reserve. */
void sim_gpool_exhaust(struct sim_gpool *p, size_t room);
/* Releases what no live allocation holds and is not stuck; the bytes released. */
size_t sim_gpool_trim(struct sim_gpool *p);
/* Everything released (the context's end). */
void sim_gpool_clear(struct sim_gpool *p);

struct CUmemPoolHandle_st;

struct pool_seg {
    uintptr_t base;
    size_t len, used;
    struct range_alloc ra;
    struct CUmemPoolHandle_st *pool; /* the pool it belongs to */
    struct pool_seg *next;
};

struct sim_alloc {
    uintptr_t ptr;
    size_t size, rounded;
    enum sim_kind kind;
    struct pool_seg *seg;            /* for SIM_ASYNC_MEM */
    struct sim_gmem *gmem;           /* for SIM_GRAPH_MEM */
    struct CUmemPoolHandle_st *pool; /* a managed pool's allocation: its pool */
    struct sim_alloc *next;
    /* SIM_ARRAY_MEM of one level: its first layer's rows of row_bytes each
     * (of 4x4 blocks for a block-compressed format), for 2D copies
     * (sim_array_data); 0 for a mipmapped array */
    size_t row_bytes, rows;
    uint64_t serial; /* unique to this allocation (a reused address gets another) */
};

/* What a pool's allocations are (cuMemPoolCreate's properties). A host or
 * managed pool is none of its device's pools (not synchronized, trimmed or
 * current): each allocation is its own block, so it reserves nothing
 * beyond them (reserved = used), and its maxSize bounds them. */
enum sim_pool_kind {
    SIM_POOL_DEVICE = 0, /* pinned device memory, from its segments */
    SIM_POOL_HOST,       /* pinned host memory (host_track.c); dev: current at its creation */
    SIM_POOL_MANAGED,    /* managed memory on dev (CU_MEM_ALLOCATION_TYPE_MANAGED, CUDA 13) */
};

/* A memory pool of a device (CUmemoryPool / cudaMemPool_t): its default
 * pool, or one made by cuMemPoolCreate. */
struct CUmemPoolHandle_st {
    struct sim_device *dev;
    /* used: the requested bytes of its live allocations, as a real pool's
     * UsedMemCurrent (an H200, driver 580.159.04: one live 5 MiB allocation
     * after a trim, 5 MiB; the sim's 2 MiB rounding said 6); reserved: its
     * segments' bytes */
    size_t reserved, used, reserved_high, used_high;
    uint64_t release_threshold;
    size_t max_size; /* CUmemPoolProps.maxSize: most bytes reserved, 0 = the device's */
    struct pool_seg *segs;
    int created; /* made by cuMemPoolCreate */
    enum sim_pool_kind kind;
    int destroyed;                   /* cuMemPoolDestroy called: freed with its last allocation */
    struct CUmemPoolHandle_st *next; /* the device's next created pool */
};

/* A primary context (CUcontext). */
struct CUctx_st {
    int ordinal;
    int refcount;
    int active; /* the context reserve is taken */
};

#define SIM_TABLE_SIZE 4096
struct sim_device {
    pthread_mutex_t lock;
    int ordinal;
    uintptr_t va_base;
    size_t va_len;
    /* graph allocation nodes' addresses: [gva_base, + gva_len), reserved at
     * the first node (gva_base 0 before) */
    uintptr_t gva_base;
    size_t gva_len;
    struct range_alloc gra;
    struct range_alloc ra;
    size_t used; /* rounded bytes of live non-pool allocations */
    struct sim_alloc *table[SIM_TABLE_SIZE];
    struct CUmemPoolHandle_st pool;     /* the default pool */
    struct CUmemPoolHandle_st *current; /* cuDeviceSetMemPool's; NULL: the default pool */
    struct CUmemPoolHandle_st *created; /* cuMemPoolCreate's, not yet freed */
    struct sim_gmem *gmems;             /* graph allocations (struct sim_gmem) */
    struct sim_gpool gpool;             /* their memory */
    size_t pools_reserved;              /* bytes reserved by all its pools */
    struct CUctx_st ctx;
    /* Physical memory of the virtual memory management API (cuMemCreate):
     * bytes taken, and where it lives: offsets of one sparse memfd. */
    size_t phys_used;
    int phys_fd, phys_ready;
    struct range_alloc phys_ra;
};

extern struct sim_config sim_cfg;
extern struct sim_device sim_devices[SIM_MAX_DEVICES];

/* Once per process: read the configuration and reserve each device's range.
 * Returns 0, or -1 when the address space could not be reserved. */
int sim_state_init(void);
/* The device whose range holds addr, or NULL. */
struct sim_device *sim_device_of(uintptr_t addr);

/* Device memory; all lock the device. Return a CUresult. */
int sim_alloc(struct sim_device *d, size_t size, enum sim_kind kind, uintptr_t *out);
/* The same for an allocation of managed pool pool (NULL: none) of d: past
 * its maxSize CUDA_ERROR_OUT_OF_MEMORY, destroyed CUDA_ERROR_INVALID_VALUE;
 * counted in its used and reserved bytes until freed. */
int sim_alloc_of(struct sim_device *d, size_t size, enum sim_kind kind,
                 struct CUmemPoolHandle_st *pool, uintptr_t *out);
/* Of a host or managed pool (host_track.c), under its device's lock:
 * whether it takes an allocation of size more bytes (CUDA_SUCCESS;
 * CUDA_ERROR_INVALID_VALUE once destroyed, CUDA_ERROR_OUT_OF_MEMORY past
 * its maxSize), and its used and reserved bytes changed by size, up (sign
 * 1) or down (-1). */
int sim_pool_admit(const struct CUmemPoolHandle_st *pool, size_t size);
void sim_pool_count(struct CUmemPoolHandle_st *pool, size_t size, int sign);
/* Free the allocation at ptr: an array (SIM_ARRAY_MEM) only when array, any
 * other kind only when not (cuMemFree cannot free an array, nor
 * cuArrayDestroy a buffer). CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
int sim_free(struct sim_device *d, uintptr_t ptr, bool array);
int sim_pool_alloc(struct CUmemPoolHandle_st *pool, size_t size, uintptr_t *out);
void sim_pool_trim(struct CUmemPoolHandle_st *pool, size_t keep);
/* A synchronization of d: each of its pools releases unused segments while
 * it reserves more than its release threshold. */
void sim_pools_sync(struct sim_device *d);
/* A new pool of d of kind (cuMemPoolCreate); NULL when out of host memory. A
 * host or managed pool is not among d's pools (enum sim_pool_kind). */
struct CUmemPoolHandle_st *sim_pool_create(struct sim_device *d, size_t max_size,
                                           enum sim_pool_kind kind);
/* cuMemPoolDestroy: the pool goes now when nothing of it is allocated, else
 * with its last allocation's free; the device's current pool becomes its
 * default pool if it was this one. */
void sim_pool_destroy(struct CUmemPoolHandle_st *pool);
/* Look up the live allocation containing addr; copies it to *out. 0 or -1. */
int sim_find(uintptr_t addr, struct sim_alloc *out, int *ordinal);
/* Give the array allocated at p on d its rows (struct sim_alloc). */
void sim_array_set_rows(struct sim_device *d, uintptr_t p, size_t row_bytes, size_t rows);
/* Take `len` bytes (a multiple of 2 MiB) of physical memory for cuMemCreate
 * if the capacity allows; *offset is where they live in d->phys_fd.
 * Returns a CUresult (CUDA_ERROR_OUT_OF_MEMORY when it does not fit). */
int sim_phys_alloc(struct sim_device *d, size_t len, uint64_t *offset);
/* Give back what sim_phys_alloc took; its pages are returned to the host. */
void sim_phys_free(struct sim_device *d, uint64_t offset, size_t len);
/* Free and unused bytes of the device as cuMemGetInfo reports them. */
void sim_mem_info(struct sim_device *d, size_t *free_bytes, size_t *total_bytes);
/* Take the context reserve (first use) / destroy the context: every
 * allocation, the pool and the reserve are released. */
void sim_ctx_activate(struct sim_device *d);
void sim_ctx_destroy(struct sim_device *d);
/* The end of device ordinal's contexts (sim_ctx_destroy): the pinned host
 * memory made while one of them was current is freed and the registrations
 * made then dropped, with the ledger's free lines (host_track.c). */
void sim_host_context_end(int ordinal);
#endif
