/* nvtxmem_random: a seeded random caching allocator annotated with the NVTX
 * Mem API on two devices and several threads, so that the report's
 * allocated bytes (the regions inside heaps and the allocations outside
 * them: docs/report.md, "Allocated and reserved") are held against the
 * program's own bookkeeping on patterns nobody chose. Each thread, at
 * random:
 *   - takes a segment of 4 to 64 MiB on either device (cudaMalloc, then
 *     nvtxMemHeapRegister at its address: reserved, not allocated); now
 *     and then more than the device has (out of memory);
 *   - hands out a region of 1 B to 1 MiB in a free 1 MiB slot of a segment
 *     (nvtxMemRegionsRegister, by pointer), takes one back
 *     (nvtxMemRegionsUnregister, by pointer or by handle), resizes one in
 *     its slot (nvtxMemRegionsResize);
 *   - resets a segment's heap (nvtxMemHeapReset: its regions are gone) or
 *     gives a segment back (nvtxMemHeapUnregister, its regions with it,
 *     then cudaFree);
 *   - allocates and frees memory outside heaps (cudaMalloc, cudaFree);
 *   - fails a cudaMalloc of more than the device.
 *
 *   corpus_nvtxmem_random SEED [OPS]    OPS operations per thread (default 300)
 *
 * One mutex serializes the operations. The truth the report is held to
 * (nvtxmem_random_test.sh) goes to the file CORPUS_TRUTH: each device's most
 * allocated bytes at once and, for each failed allocation in order, its
 * device and the allocated bytes there when it failed. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 3
#define DEVICES 2
#define SEGMENTS 24
#define SLOTS 64 /* the most 1 MiB slots of a segment */
#define PLAIN 32
#define FAILS 4096

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int ops_per_thread = 300;
static unsigned long long seed;
static nvtxDomainHandle_t domain;

/* Segments: a heap each, its slots' regions (size 0: free) and handles. */
static struct segment {
    char *base;
    int device, nslots;
    nvtxMemHeapHandle_t heap;
    size_t size[SLOTS];
    nvtxMemRegionHandle_t handle[SLOTS];
} segments[SEGMENTS];
static int nsegments;
static struct plain {
    void *p;
    size_t size;
    int device;
} plain[PLAIN];
static int nplain;

/* The truth: allocated bytes per device now and at most; failures. */
static size_t allocated[DEVICES], peak[DEVICES];
static struct fail {
    int device;
    size_t allocated;
} fails[FAILS];
static int nfails;

static struct worker {
    unsigned long long rng;
} workers[WORKERS];

/* One of 0 .. n-1, from w's generator. */
static unsigned pick(struct worker *w, unsigned n)
{
    return corpus_pick(&w->rng, n);
}

static void add(int device, size_t bytes, int sign)
{
    allocated[device] = sign > 0 ? allocated[device] + bytes : allocated[device] - bytes;
    if (allocated[device] > peak[device])
        peak[device] = allocated[device];
}

static void on(int device)
{
    EXPECT(cudaSetDevice(device), cudaSuccess);
}

/* A cudaMalloc's result: true when it succeeded; an out-of-memory failure
 * is noted with the allocated bytes then. */
static bool malloc_ok(cudaError_t rc, int device)
{
    if (rc == cudaSuccess)
        return true;
    EXPECT(rc, cudaErrorMemoryAllocation);
    cudaGetLastError();
    REQUIRE(nfails < FAILS);
    fails[nfails++] = (struct fail){device, allocated[device]};
    return false;
}

static void op_segment(struct worker *w)
{
    int d = (int)pick(w, DEVICES);
    size_t mib = pick(w, 10) ? 4 + pick(w, SLOTS - 3) : (size_t)16 << 10;
    void *p;
    if (nsegments == SEGMENTS)
        return;
    on(d);
    if (!malloc_ok(cudaMalloc(&p, mib * MiB), d))
        return;
    struct segment *s = &segments[nsegments++];
    memset(s, 0, sizeof *s);
    s->base = p;
    s->device = d;
    s->nslots = (int)mib;
    nvtxMemVirtualRangeDesc_t range = {.size = mib * MiB, .ptr = p};
    nvtxMemHeapDesc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    desc.structSize = sizeof desc;
    desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    desc.typeSpecificDescSize = sizeof range;
    desc.typeSpecificDesc = &range;
    s->heap = nvtxMemHeapRegister(domain, &desc);
}

static struct segment *some_segment(struct worker *w)
{
    return nsegments ? &segments[pick(w, (unsigned)nsegments)] : NULL;
}

static void op_region(struct worker *w)
{
    struct segment *s = some_segment(w);
    int k = s ? (int)pick(w, (unsigned)s->nslots) : 0;
    if (!s || s->size[k])
        return;
    size_t size = 1 + pick(w, (unsigned)MiB);
    nvtxMemVirtualRangeDesc_t range = {.size = size, .ptr = s->base + (size_t)k * MiB};
    nvtxMemRegionsRegisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.heap = s->heap;
    b.regionCount = 1;
    b.regionDescElementSize = sizeof range;
    b.regionDescElements = &range;
    b.regionHandleElementsOut = &s->handle[k];
    nvtxMemRegionsRegister(domain, &b);
    s->size[k] = size;
    add(s->device, size, 1);
}

/* A used slot of s (its index), or -1. */
static int used_slot(struct worker *w, const struct segment *s)
{
    int k = (int)pick(w, (unsigned)s->nslots);
    for (int i = 0; i < s->nslots; i++, k = (k + 1) % s->nslots)
        if (s->size[k])
            return k;
    return -1;
}

static void op_unregion(struct worker *w)
{
    struct segment *s = some_segment(w);
    int k = s ? used_slot(w, s) : -1;
    if (k < 0)
        return;
    nvtxMemRegionRef_t ref;
    nvtxMemRegionsUnregisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    if (pick(w, 2)) {
        b.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
        ref.pointer = s->base + (size_t)k * MiB;
    } else {
        b.refType = NVTX_MEM_REGION_REF_TYPE_HANDLE;
        ref.handle = s->handle[k];
    }
    b.refCount = 1;
    b.refElementSize = sizeof ref;
    b.refElements = &ref;
    nvtxMemRegionsUnregister(domain, &b);
    add(s->device, s->size[k], -1);
    s->size[k] = 0;
}

static void op_resize(struct worker *w)
{
    struct segment *s = some_segment(w);
    int k = s ? used_slot(w, s) : -1;
    if (k < 0)
        return;
    size_t size = 1 + pick(w, (unsigned)MiB);
    nvtxMemVirtualRangeDesc_t range = {.size = size, .ptr = s->base + (size_t)k * MiB};
    nvtxMemRegionsResizeBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.regionDescCount = 1;
    b.regionDescElementSize = sizeof range;
    b.regionDescElements = &range;
    nvtxMemRegionsResize(domain, &b);
    add(s->device, s->size[k], -1);
    add(s->device, size, 1);
    s->size[k] = size;
}

/* Every region of s gone (its heap reset or unregistered). */
static void drop_regions(struct segment *s)
{
    for (int k = 0; k < s->nslots; k++) {
        add(s->device, s->size[k], -1);
        s->size[k] = 0;
    }
}

static void op_reset(struct worker *w)
{
    struct segment *s = some_segment(w);
    if (!s)
        return;
    nvtxMemHeapReset(domain, s->heap);
    drop_regions(s);
}

static void op_drop(struct worker *w)
{
    struct segment *s = some_segment(w);
    if (!s)
        return;
    nvtxMemHeapUnregister(domain, s->heap);
    drop_regions(s);
    EXPECT(cudaFree(s->base), cudaSuccess);
    *s = segments[--nsegments];
}

static void op_plain(struct worker *w)
{
    if (nplain && pick(w, 2)) {
        struct plain *x = &plain[pick(w, (unsigned)nplain)];
        EXPECT(cudaFree(x->p), cudaSuccess);
        add(x->device, x->size, -1);
        *x = plain[--nplain];
        return;
    }
    int d = (int)pick(w, DEVICES);
    size_t size = 1 + pick(w, 16 << 20);
    void *p;
    if (nplain == PLAIN)
        return;
    on(d);
    if (!malloc_ok(cudaMalloc(&p, size), d))
        return;
    plain[nplain++] = (struct plain){p, size, d};
    add(d, size, 1);
}

static void op_fail(struct worker *w)
{
    int d = (int)pick(w, DEVICES);
    void *p;
    on(d);
    REQUIRE(!malloc_ok(cudaMalloc(&p, (size_t)16 << 30), d));
}

static void (*const ops[])(struct worker *) = {op_segment,  op_region,   op_region, op_region,
                                               op_unregion, op_unregion, op_resize, op_reset,
                                               op_drop,     op_plain,    op_plain,  op_fail};

static void *worker(void *arg)
{
    struct worker *w = &workers[(uintptr_t)arg];
    for (int i = 0; i < ops_per_thread; i++) {
        pthread_mutex_lock(&big);
        ops[pick(w, sizeof ops / sizeof ops[0])](w);
        pthread_mutex_unlock(&big);
    }
    return NULL;
}

/* The truth as JSON into CORPUS_TRUTH (when set). */
static void write_truth(void)
{
    const char *path = getenv("CORPUS_TRUTH");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!path)
        return;
    REQUIRE(f != NULL);
    fprintf(f, "{\"peak_allocated\": [%zu, %zu], \"fails\": [", peak[0], peak[1]);
    for (int i = 0; i < nfails; i++)
        fprintf(f, "%s[%d, %zu]", i ? ", " : "", fails[i].device, fails[i].allocated);
    fprintf(f, "]}\n");
    REQUIRE(fclose(f) == 0);
}

int main(int argc, char **argv)
{
    corpus_seed_args(argc, argv, &seed, &ops_per_thread);
    domain = nvtxDomainCreateA("nvtxmem_random");
    for (int i = 0; i < WORKERS; i++)
        workers[i].rng = seed * 7919 + (unsigned long long)i;
    corpus_run_threads(WORKERS, worker);
    write_truth();
    printf("nvtxmem_random: seed %llu, %d segments and %d allocations outside heaps left, %d "
           "failed allocations\n",
           seed, nsegments, nplain, nfails);
    return 0;
}
