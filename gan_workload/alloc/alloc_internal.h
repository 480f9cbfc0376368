/* Internal interface of gan_alloc: block and segment records, the free-block
 * pools (treaps ordered by (size, address)), the live-block address map, the
 * NVTX Mem annotations, the CUDA runtime backend and the OOM message.
 * Not installed; tests include it to check the data structures directly. */
#ifndef GAN_ALLOC_INTERNAL_H
#define GAN_ALLOC_INTERNAL_H

#include "alloc.h"

#include <stddef.h>
#include <stdint.h>

/* PyTorch c10/cuda/CUDACachingAllocator.cpp constants (bytes). */
#define GA_MIN_BLOCK_SIZE ((size_t)512)       /* kMinBlockSize */
#define GA_SMALL_SIZE ((size_t)1048576)       /* kSmallSize */
#define GA_SMALL_BUFFER ((size_t)2097152)     /* kSmallBuffer */
#define GA_LARGE_BUFFER ((size_t)20971520)    /* kLargeBuffer */
#define GA_MIN_LARGE_ALLOC ((size_t)10485760) /* kMinLargeAlloc */
#define GA_ROUND_LARGE ((size_t)2097152)      /* kRoundLarge */
/* Requests above this are refused without calling the backend (the rounding
 * arithmetic would overflow); no device has this much memory. */
#define GA_MAX_REQUEST ((size_t)1 << 62)

typedef struct ga_segment ga_segment;

/* A block: a contiguous piece of a segment, either handed out (allocated) or
 * free (then it sits in its pool's treap). */
typedef struct ga_block {
    uintptr_t ptr;
    size_t size; /* bytes */
    int allocated;
    struct ga_block *prev, *next; /* address-order neighbours in the segment */
    ga_segment *segment;
    struct ga_block *left, *right; /* treap children (free blocks) */
    uint32_t prio;                 /* treap heap priority */
    struct ga_block *hnext;        /* hash-chain link (allocated blocks) */
} ga_block;

/* A segment: one backend malloc. */
struct ga_segment {
    uintptr_t ptr;
    size_t size; /* bytes, as passed to the backend malloc */
    int is_small;
    size_t active_blocks; /* allocated blocks inside */
    ga_block *head;       /* block at ptr (lowest address) */
    ga_segment *prev, *next;
    void *heap; /* nvtxMemHeapHandle_t */
};

/* An ordered set of free blocks by (size, address): a treap. */
typedef struct ga_tree {
    ga_block *root;
    size_t count;
    uint64_t rng; /* xorshift state for priorities */
} ga_tree;

void ga_tree_init(ga_tree *t, uint64_t seed);
/* Inserts b (its (size, ptr) must not be in t). Expected O(log n). */
void ga_tree_insert(ga_tree *t, ga_block *b);
/* Removes b (must be in t). Expected O(log n). */
void ga_tree_remove(ga_tree *t, ga_block *b);
/* The smallest block with size >= `size`, lowest address among equals
 * (PyTorch's pool.blocks.lower_bound(search_key)), or NULL. */
ga_block *ga_tree_lower_bound(const ga_tree *t, size_t size);
/* The largest block (highest address among equals), or NULL. */
ga_block *ga_tree_max(const ga_tree *t);
/* Height of the treap (0 when empty); for tests. */
size_t ga_tree_height(const ga_tree *t);

/* Allocated blocks by address: chained hash map, O(1) expected. */
typedef struct ga_map {
    ga_block **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
} ga_map;

/* Returns 0, or -1 when out of host memory. */
int ga_map_init(ga_map *m);
void ga_map_fini(ga_map *m);
/* Inserts b (keyed by b->ptr). Grows when the load passes 1; if growing fails
 * the chains just get longer, so insertion always succeeds. */
void ga_map_insert(ga_map *m, ga_block *b);
/* Removes and returns the block at ptr, or NULL when there is none. */
ga_block *ga_map_remove(ga_map *m, uintptr_t ptr);

/* NVTX Mem annotations in domain "vramtrace.gan". Without an NVTX tool
 * attached each call is a no-op after the first (NVTX3 is header-only). */
typedef struct ga_annot {
    void *domain; /* nvtxDomainHandle_t */
} ga_annot;

void ga_annot_init(ga_annot *an);
void ga_annot_fini(ga_annot *an);
/* nvtxMemHeapRegister, SUB_ALLOCATOR usage, VIRTUAL_ADDRESS type. */
void *ga_annot_heap_register(ga_annot *an, uintptr_t ptr, size_t size);
void ga_annot_heap_unregister(ga_annot *an, void *heap);
/* nvtxMemRegionsRegister of [ptr, ptr+size) in heap. */
void ga_annot_region_register(ga_annot *an, void *heap, uintptr_t ptr, size_t size);
/* nvtxMemRegionsUnregister by pointer. */
void ga_annot_region_unregister(ga_annot *an, uintptr_t ptr);

/* The CUDA runtime backend: cudaMalloc/cudaFree/cudaMemGetInfo. */
const ga_backend *ga_cuda_backend(void);

/* Free blocks of the small (is_small != 0) or large pool: their number and
 * the largest one's size in bytes (like PyTorch's cacheInfo largestBlock). */
void ga_pool_info(const ga_allocator *a, int is_small, size_t *count, size_t *largest);

/* PyTorch's format_size: "N bytes" up to 1024, then KiB/MiB/GiB with two
 * decimals (boundaries inclusive: <= 1 MiB prints KiB). Returns buf. */
const char *ga_format_size(uint64_t size, char *buf, size_t len);

/* Writes PyTorch's OOM message (CUDACachingAllocator.cpp, malloc(): "CUDA
 * out of memory. Tried to allocate ...") into buf. */
void ga_format_oom(char *buf, size_t len, uint64_t alloc_size, int device, uint64_t device_total,
                   uint64_t device_free, uint64_t allocated, uint64_t reserved);

#endif /* GAN_ALLOC_INTERNAL_H */
