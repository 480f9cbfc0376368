/* gan_alloc: a PyTorch-like CUDA caching allocator for the DCGAN workload.
 *
 * Rules follow PyTorch's c10/cuda/CUDACachingAllocator.cpp (see README.md):
 * 512-byte rounding (kMinBlockSize), a small pool for requests <= 1 MiB
 * (kSmallSize) carved from 2 MiB segments (kSmallBuffer), 20 MiB segments
 * (kLargeBuffer) for requests up to 10 MiB (kMinLargeAlloc), larger requests
 * rounded up to 2 MiB (kRoundLarge), best fit with splitting, coalescing on
 * free, free-the-cache-and-retry when the device malloc fails, empty_cache.
 * Single stream: there are no per-stream pools. Not thread-safe.
 *
 * Segments and blocks are annotated with the NVTX Mem API (domain
 * "vramtrace.gan"); without an NVTX tool attached the calls are no-ops. */
#ifndef GAN_ALLOC_H
#define GAN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GA_CACHING, /* PyTorch-like caching allocator */
    GA_DIRECT   /* one device malloc/free per request, stats still counted */
} ga_kind;

typedef struct ga_allocator ga_allocator;

/* All sizes in bytes. "allocated" = bytes of blocks handed out (rounded
 * sizes, as PyTorch's allocated_bytes); "reserved" = bytes of segments held
 * from the device (PyTorch's reserved_bytes). */
typedef struct ga_stats {
    uint64_t allocated_bytes;
    uint64_t reserved_bytes;
    uint64_t peak_allocated_bytes;
    uint64_t peak_reserved_bytes;
    uint64_t device_malloc_calls; /* backend malloc calls, failed ones included */
    uint64_t device_free_calls;
    uint64_t num_alloc_retries; /* times the cache was freed to retry a malloc */
    uint64_t num_ooms;          /* ga_malloc calls that returned NULL */
    uint64_t active_blocks;     /* blocks handed out and not yet freed */
    uint64_t segments;          /* segments currently held from the device */
} ga_stats;

/* What a backend's malloc returns when the device is out of memory
 * (cudaErrorMemoryAllocation). Only this error triggers free-and-retry and
 * the OOM message; any other nonzero value fails ga_malloc at once (PyTorch's
 * alloc_block: other errors are thrown by C10_CUDA_CHECK). */
#define GA_BACKEND_ERROR_OOM 2

/* The device memory source. Each function returns 0 on success, nonzero on
 * failure (for the CUDA runtime: the cudaError_t). */
typedef struct ga_backend {
    int (*malloc)(void *ctx, void **p, size_t bytes);
    int (*free)(void *ctx, void *p);
    int (*mem_get_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    void *ctx;
} ga_backend;

/* One device malloc that failed with the backend's out-of-memory error, and
 * the cache's state at that moment (bytes): PyTorch's out-of-memory observer
 * (c10/cuda/CUDACachingAllocator.h, attachOutOfMemoryObserver: device,
 * allocated, device total, device free) with the reserved bytes and the
 * largest free block added, which a tool's verdict is held against. */
typedef struct ga_failure {
    size_t requested;                 /* the device malloc's size (a whole segment) */
    int retry;                        /* 0: first try; 1: after the cache was freed */
    uint64_t allocated_bytes;         /* ga_stats' at the failure */
    uint64_t reserved_bytes;          /* ga_stats' at the failure */
    uint64_t largest_free_block;      /* the cache's largest free block, 0 if none */
    size_t device_free, device_total; /* the backend's mem_get_info, 0 if it failed */
} ga_failure;

typedef void (*ga_failure_observer)(void *ctx, const ga_failure *f);

/* Calls fn(ctx, f) at every device malloc that fails with
 * GA_BACKEND_ERROR_OOM, before the cache is freed for the retry (so twice
 * for a request whose retry fails too). fn == NULL: none. The observer
 * calls the backend's mem_get_info once per failure. */
void ga_set_failure_observer(ga_allocator *a, ga_failure_observer fn, void *ctx);

/* Creates an allocator. backend == NULL: cudaMalloc/cudaFree/cudaMemGetInfo
 * of the CUDA runtime on the current device (the caller selects it with
 * cudaSetDevice); `device` is the number printed in OOM messages. The backend
 * struct is copied. Returns NULL if out of host memory. */
ga_allocator *ga_create(ga_kind kind, const ga_backend *backend, int device);

/* Returns device memory of at least `bytes` bytes (bytes == 0 is treated as
 * 1 byte, so the pointer is unique), 512-byte aligned. Returns NULL on OOM
 * after freeing the cache and retrying; ga_last_error() then holds a
 * PyTorch-style "CUDA out of memory. Tried to allocate ..." message and
 * num_ooms counts it. Returns NULL with a "device malloc ... failed with
 * error N" message when the backend fails otherwise (no device, ...). */
void *ga_malloc(ga_allocator *a, size_t bytes);

/* Returns p (from ga_malloc of this allocator) to the cache (GA_DIRECT: to
 * the device). NULL is ignored; an unknown pointer is ignored and recorded
 * in ga_last_error(). O(1) expected. */
void ga_free(ga_allocator *a, void *p);

/* Releases every cached segment that has no live block to the device, like
 * torch.cuda.empty_cache(). Afterwards reserved == bytes of segments that
 * still hold live blocks. */
void ga_empty_cache(ga_allocator *a);

/* The current counters. */
ga_stats ga_get_stats(const ga_allocator *a);

/* Resets the peaks to the current values (torch.cuda.reset_peak_memory_stats). */
void ga_reset_peak_stats(ga_allocator *a);

/* Size in bytes of the block handed out for `bytes` by a caching allocator
 * (512-byte rounding; PyTorch's round_size without roundup_power2_divisions). */
size_t ga_round_size(size_t bytes);

/* The last error message ("" if none). Valid until the next call. */
const char *ga_last_error(const ga_allocator *a);

/* Releases all segments (live blocks included) and the allocator. */
void ga_destroy(ga_allocator *a);

#ifdef __cplusplus
}
#endif

#endif /* GAN_ALLOC_H */
