/* vmm_random: seeded random virtual memory management (cuMemCreate,
 * cuMemMap, cuMemUnmap, cuMemRelease, cuMemRetainAllocationHandle) on two
 * devices and several threads, so that the device memory the report counts
 * for handles and mappings is held against the sim's ledger on patterns
 * nobody chose. The shape of PyTorch's expandable segments
 * (expandable_segments:True: one large reserved range per device, physical
 * pages mapped at its end as it grows and unmapped from its end as it
 * shrinks) beside handles of any life: each thread, at random,
 *   - grows a device's segment by 1 to 4 handles of 2 to 8 MiB, each
 *     mapped right after the last and released at once (the mapping keeps
 *     it), or shrinks it by unmapping its last 1 to 3 mappings in one call;
 *   - creates a handle of 2 to 32 MiB on either device (now and then more
 *     than the device has: out of memory), keeps it unmapped, maps it once
 *     or twice at free places of a second range, unmaps one of its
 *     mappings, releases it (mapped or not), retains a released one through
 *     a mapping's address (live again until released again);
 *   - allocates and frees ordinary memory beside (cudaMalloc, cudaFree);
 *   - fails a cudaMalloc of more than the device (a failure's sample).
 *
 *   corpus_vmm_random SEED [OPS]    OPS operations per thread (default 300)
 *
 * One mutex serializes the operations, so the ledger's order is the
 * trace's. Handles, mappings and allocations are left at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 3
#define DEVICES 2
#define HANDLES 64
#define SLOTS 64        /* mapping places in each device's second range */
#define SLOT (32 * MiB) /* each place's size: the largest handle */
#define SEGMENT_MAPS 128
#define PLAIN 32

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int ops_per_thread = 300;
static unsigned long long seed;
static size_t gran;

/* Handles of the second kind: not released (refs: the program's own
 * references, 1 after cuMemCreate, +1 per retain) or released and mapped;
 * each mapping a place of its device's range. */
static struct handle {
    CUmemGenericAllocationHandle h;
    int device, refs;
    size_t size;
    int places[2], nplaces;
} handles[HANDLES];
static int nhandles;

/* Per device: the expandable segment (its range, its mappings in order,
 * each released at once) and the range of places for the other handles. */
static struct device {
    CUdeviceptr segment, places;
    size_t segment_size, used;
    size_t maps[SEGMENT_MAPS];
    int nmaps;
    bool taken[SLOTS];
} devices[DEVICES];

static void *plain[PLAIN];
static int nplain, oom;

static struct worker {
    unsigned long long rng;
} workers[WORKERS];

/* One of 0 .. n-1, from w's generator. */
static unsigned pick(struct worker *w, unsigned n)
{
    return corpus_pick(&w->rng, n);
}

/* A current context on device (the runtime's primary one). */
static void on(int device)
{
    EXPECT(cudaSetDevice(device), cudaSuccess);
    EXPECT(cudaFree(0), cudaSuccess);
}

/* A handle of size on device, or 0 when the device is out of memory. */
static CUmemGenericAllocationHandle create(int device, size_t size)
{
    CUmemAllocationProp prop = corpus_vmm_prop(device);
    CUmemGenericAllocationHandle h;
    CUresult rc = cuMemCreate(&h, size, &prop, 0);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        oom++;
        return 0;
    }
    EXPECT(rc, CUDA_SUCCESS);
    return h;
}

static void map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h, int device)
{
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, device},
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT(cuMemMap(va, size, 0, h, 0), CUDA_SUCCESS);
    EXPECT(cuMemSetAccess(va, size, &access, 1), CUDA_SUCCESS);
}

static void op_grow(struct worker *w)
{
    int d = (int)pick(w, DEVICES), n = 1 + (int)pick(w, 4);
    struct device *dv = &devices[d];
    on(d);
    for (int i = 0; i < n && dv->nmaps < SEGMENT_MAPS; i++) {
        size_t size = gran * (1 + pick(w, 4));
        if (dv->used + size > dv->segment_size)
            return;
        CUmemGenericAllocationHandle h = create(d, size);
        if (!h)
            return;
        map(dv->segment + dv->used, size, h, d);
        EXPECT(cuMemRelease(h), CUDA_SUCCESS); /* the mapping keeps it */
        dv->used += size;
        dv->maps[dv->nmaps++] = size;
    }
}

/* The segment's last 1 to 3 mappings unmapped in one call. */
static void op_shrink(struct worker *w)
{
    struct device *dv = &devices[pick(w, DEVICES)];
    int n = 1 + (int)pick(w, 3);
    size_t bytes = 0;
    for (; n > 0 && dv->nmaps > 0; n--)
        bytes += dv->maps[--dv->nmaps];
    if (!bytes)
        return;
    dv->used -= bytes;
    EXPECT(cuMemUnmap(dv->segment + dv->used, bytes), CUDA_SUCCESS);
}

static void op_create(struct worker *w)
{
    int d = (int)pick(w, DEVICES);
    size_t size = pick(w, 12) ? gran * (1 + pick(w, SLOT / gran)) : (size_t)16 << 30;
    if (nhandles == HANDLES)
        return;
    on(d);
    CUmemGenericAllocationHandle h = create(d, size);
    if (h)
        handles[nhandles++] = (struct handle){h, d, 1, size, {0, 0}, 0};
}

static CUdeviceptr place_va(const struct handle *x, int k)
{
    return devices[x->device].places + (size_t)x->places[k] * SLOT;
}

/* A handle not released mapped at a free place of its device's range. */
static void op_map(struct worker *w)
{
    if (!nhandles)
        return;
    struct handle *x = &handles[pick(w, (unsigned)nhandles)];
    struct device *dv = &devices[x->device];
    int s = (int)pick(w, SLOTS);
    if (!x->refs || x->nplaces == 2 || dv->taken[s])
        return;
    on(x->device);
    dv->taken[s] = true;
    x->places[x->nplaces++] = s;
    map(place_va(x, x->nplaces - 1), x->size, x->h, x->device);
}

/* The handle gone from the table (released, its last mapping unmapped). */
static void forget(struct handle *x)
{
    *x = handles[--nhandles];
}

static void op_unmap(struct worker *w)
{
    if (!nhandles)
        return;
    struct handle *x = &handles[pick(w, (unsigned)nhandles)];
    if (!x->nplaces)
        return;
    int k = (int)pick(w, (unsigned)x->nplaces);
    EXPECT(cuMemUnmap(place_va(x, k), x->size), CUDA_SUCCESS);
    devices[x->device].taken[x->places[k]] = false;
    x->places[k] = x->places[--x->nplaces];
    if (!x->refs && !x->nplaces)
        forget(x);
}

/* One of the program's references released (the memory goes with the last
 * one unless mapped). */
static void op_release(struct worker *w)
{
    if (!nhandles)
        return;
    struct handle *x = &handles[pick(w, (unsigned)nhandles)];
    if (!x->refs)
        return;
    EXPECT(cuMemRelease(x->h), CUDA_SUCCESS);
    if (!--x->refs && !x->nplaces)
        forget(x);
}

/* A reference more through a mapping's address: a released handle that is
 * still mapped is the program's again. */
static void op_retain(struct worker *w)
{
    if (!nhandles)
        return;
    struct handle *x = &handles[pick(w, (unsigned)nhandles)];
    CUmemGenericAllocationHandle got;
    if (!x->nplaces)
        return;
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)place_va(x, 0)), CUDA_SUCCESS);
    REQUIRE(got == x->h);
    x->refs++;
}

static void op_plain(struct worker *w)
{
    if (nplain && pick(w, 2)) {
        int k = (int)pick(w, (unsigned)nplain);
        EXPECT(cudaFree(plain[k]), cudaSuccess);
        plain[k] = plain[--nplain];
        return;
    }
    if (nplain == PLAIN)
        return;
    on((int)pick(w, DEVICES));
    cudaError_t rc = cudaMalloc(&plain[nplain], 1 + pick(w, 8 << 20));
    if (rc == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        oom++;
        return;
    }
    EXPECT(rc, cudaSuccess);
    nplain++;
}

static void op_fail(struct worker *w)
{
    void *p;
    on((int)pick(w, DEVICES));
    EXPECT(cudaMalloc(&p, (size_t)16 << 30), cudaErrorMemoryAllocation);
    cudaGetLastError();
    oom++;
}

static void (*const ops[])(struct worker *) = {
    op_grow,  op_grow,  op_shrink,  op_shrink,  op_create, op_create, op_map,   op_map,
    op_unmap, op_unmap, op_release, op_release, op_retain, op_plain,  op_plain, op_fail};

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

int main(int argc, char **argv)
{
    corpus_seed_args(argc, argv, &seed, &ops_per_thread);
    CUmemAllocationProp prop = corpus_vmm_prop(0);
    on(0);
    EXPECT(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           CUDA_SUCCESS);
    REQUIRE(gran > 0 && SLOT % gran == 0);
    for (int d = 0; d < DEVICES; d++) {
        devices[d].segment_size = (size_t)4 << 30;
        EXPECT(cuMemAddressReserve(&devices[d].segment, devices[d].segment_size, 0, 0, 0),
               CUDA_SUCCESS);
        EXPECT(cuMemAddressReserve(&devices[d].places, (size_t)SLOTS * SLOT, 0, 0, 0),
               CUDA_SUCCESS);
    }
    for (int i = 0; i < WORKERS; i++)
        workers[i].rng = seed * 7919 + (unsigned long long)i;
    corpus_run_threads(WORKERS, worker);
    printf("vmm_random: seed %llu, %d handles and %d + %d segment mappings left, %d out of "
           "memory\n",
           seed, nhandles, devices[0].nmaps, devices[1].nmaps, oom);
    return 0;
}
