/* random: a seeded random mix of memory calls on several threads and two
 * devices, so that the report is held against the sim's ledger on patterns
 * nobody chose: every allocation API of the runtime and the driver (device,
 * managed, pitched, 3D, stream-ordered from the default pool or pools of the
 * program's own (one bounded: its failures), pinned and registered host memory, VMM, CUDA
 * arrays: 2D, layered, block-compressed, mipmapped), sizes from 1
 * byte to 8 MiB, pools trimmed, frees by any thread of what any thread allocated (also of threads
 * that have exited), with the runtime's or the driver's free where both are allowed, failed
 * allocations of every device API, bad frees, a context end (device 1's
 * cudaDeviceReset after the threads) and leaks at exit.
 *
 *   corpus_random SEED [OPS]    OPS calls per thread (default 400)
 *
 * Two waves of WORKERS threads share one pool of live allocations (the
 * program's own mutex guards the pool only, never a CUDA call, so the calls
 * of the threads race); the second wave frees what the first left. main then
 * frees a random half of what is left and leaks the rest. Each call's result
 * is checked (corpus.h); the run prints how many allocations and frees it
 * made of each kind.
 *
 * Threads also push and pop NVTX ranges r0..r3 at random. With CORPUS_RANGES
 * set, each device-memory allocation appends "a ADDRESS RANGE" (VMM: "h
 * HANDLE RANGE") to that file, RANGE its thread's innermost range ("-" none),
 * in the order of the allocations at each address: tests/ledger/
 * check_ranges.py holds the report's peak by NVTX range against it.
 *
 * CORPUS_END=kill ends the run by SIGKILL instead of exit, right after its
 * last call: what the preload recorded since its last flush is then only in
 * its spill file (vramtrace recover). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 6
#define DEVICES 2
#define POOL 128
#define HUGE ((size_t)1 << 44) /* 16 TiB: more than any device */

enum kind {
    K_DEVICE,
    K_DRIVER,
    K_MANAGED,
    K_PITCH,
    K_3D,
    K_ASYNC,
    K_POOL,
    K_HOST,
    K_HOSTALLOC,
    K_REGISTERED,
    K_VMM,
    K_CU_PITCH,
    K_CU_MANAGED,
    K_CU_ASYNC,
    K_CU_HOST,
    K_CU_REGISTERED,
    K_ARRAY,
    K_CU_ARRAY,
    K_KINDS
};
static const char *const KIND_NAMES[K_KINDS] = {
    "device",     "driver",   "managed",   "pitch",         "3d",    "async",
    "pool",       "host",     "hostalloc", "registered",    "vmm",   "cu_pitch",
    "cu_managed", "cu_async", "cu_host",   "cu_registered", "array", "cu_array"};

typedef struct entry {
    enum kind kind;
    int device;
    void *p;     /* the pointer the free takes (host pointer for host kinds) */
    size_t size; /* bytes asked (VMM: rounded to the granularity) */
    CUmemGenericAllocationHandle handle;
    int released;  /* VMM: cuMemRelease already called */
    int unmapped;  /* VMM: retained, released once and unmapped; its last release is to come */
    int mipmapped; /* K_ARRAY, K_CU_ARRAY: p is a mipmapped array */
} entry;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static entry pool[POOL];
static size_t npool;
static uint64_t seed;
/* Pools of the program's own, one per device (K_POOL); device 1's is also
 * its current pool (cudaMallocAsync), device 0's holds at most POOL_MAX. */
static cudaMemPool_t pools[DEVICES];
#define POOL_MAX (32 * MiB)
static size_t ops = 400;
static FILE *ranges_log;                       /* CORPUS_RANGES, under pool_lock */
static _Thread_local const char *tl_range[16]; /* this thread's NVTX ranges, innermost last */
static _Thread_local int tl_depth;
static unsigned long done[K_KINDS][2]; /* allocations, frees (under pool_lock) */

/* splitmix64: one state per thread. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(uint64_t *s, size_t n)
{
    return (size_t)(next(s) % n);
}

/* 1 byte to 8 MiB, log-uniform: as many tiny as large ones. */
static size_t random_size(uint64_t *s)
{
    size_t bits = below(s, 24);
    return ((size_t)1 << bits) + below(s, (size_t)1 << bits);
}

/* Whether e is device memory (what the report's peak counts by range). */
static int device_memory(const entry *e)
{
    return e->kind != K_HOST && e->kind != K_HOSTALLOC && e->kind != K_REGISTERED &&
           e->kind != K_CU_HOST && e->kind != K_CU_REGISTERED;
}

static void put(const entry *e)
{
    pthread_mutex_lock(&pool_lock);
    REQUIRE(npool < POOL);
    if (ranges_log && device_memory(e))
        fprintf(ranges_log, "%s %llx %s\n", e->kind == K_VMM ? "h" : "a",
                e->kind == K_VMM ? (unsigned long long)e->handle
                                 : (unsigned long long)(uintptr_t)e->p,
                tl_depth ? tl_range[tl_depth - 1] : "-");
    pool[npool++] = *e;
    done[e->kind][0]++;
    pthread_mutex_unlock(&pool_lock);
}

/* Back into the pool, not a new allocation: an entry take() gave out whose
 * free is only half done. 0 (nothing done) when the pool is full. */
static int put_back(const entry *e)
{
    pthread_mutex_lock(&pool_lock);
    int room = npool < POOL;
    if (room) {
        pool[npool++] = *e;
        done[e->kind][1]--;
    }
    pthread_mutex_unlock(&pool_lock);
    return room;
}

/* What a context end on device frees (cudaDeviceReset: "Destroy all
 * allocations", every device kind, stream-ordered and arrays too, and the
 * pinned and registered host memory made while its context was current, as
 * an H200 showed; not VMM handles: sim/README.md, interpose/README.md)
 * leaves the pool, counted as freed; a registered buffer is the program's
 * to free. Single-threaded. */
static void drop_reset(int device)
{
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < npool;) {
        const entry *e = &pool[i];
        if (e->device != device || e->kind == K_VMM) {
            i++;
            continue;
        }
        if (e->kind == K_REGISTERED || e->kind == K_CU_REGISTERED)
            free(e->p);
        done[e->kind][1]++;
        pool[i] = pool[--npool];
    }
    pthread_mutex_unlock(&pool_lock);
}

/* Room for one more allocation in the pool (reserved: put() fills it). */
static int reserve_room(void)
{
    pthread_mutex_lock(&pool_lock);
    int room = npool + WORKERS < POOL;
    pthread_mutex_unlock(&pool_lock);
    return room;
}

/* Take a random entry out of the pool; 0 when empty. */
static int take(uint64_t *s, entry *e)
{
    pthread_mutex_lock(&pool_lock);
    int got = npool > 0;
    if (got) {
        size_t i = below(s, npool);
        *e = pool[i];
        pool[i] = pool[--npool];
        done[e->kind][1]++;
    }
    pthread_mutex_unlock(&pool_lock);
    return got;
}

/* The device this thread works on now: the runtime's and the driver's. */
static void use_device(int device)
{
    CUcontext ctx;
    CUdevice dev;
    EXPECT(cudaSetDevice(device), cudaSuccess);
    EXPECT(cuDeviceGet(&dev, device), CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

/* cuMemCreate + reserve + map; released at once half of the time (the
 * memory stays live until the unmap). */
static void alloc_vmm(uint64_t *s, entry *e)
{
    CUmemAllocationProp prop = corpus_vmm_prop(e->device);
    size_t gran = 0;
    EXPECT(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           CUDA_SUCCESS);
    REQUIRE(gran > 0);
    e->size = (e->size + gran - 1) / gran * gran;
    CUdeviceptr va;
    EXPECT(cuMemAddressReserve(&va, e->size, 0, 0, 0), CUDA_SUCCESS);
    EXPECT(cuMemCreate(&e->handle, e->size, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va, e->size, 0, e->handle, 0), CUDA_SUCCESS);
    e->p = (void *)(uintptr_t)va;
    e->released = (int)below(s, 2);
    if (e->released)
        EXPECT(cuMemRelease(e->handle), CUDA_SUCCESS);
}

/* Host memory to register: *size rounded up to whole pages, page aligned. */
static void *page_buffer(size_t *size)
{
    *size = (*size + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, *size);
    REQUIRE(p != NULL);
    return p;
}

/* A CUDA array of about e->size bytes through the runtime: 2D (1D when the
 * height drawn is 0), layered 3D, or mipmapped, of 1, 2 or 4 channels of 8,
 * 16 or 32 bits. */
static void alloc_array(uint64_t *s, entry *e)
{
    static const int bits[3] = {8, 16, 32};
    int b = bits[below(s, 3)], n = 1 << below(s, 3);
    enum cudaChannelFormatKind f =
        b == 8 ? cudaChannelFormatKindUnsigned : cudaChannelFormatKindFloat;
    struct cudaChannelFormatDesc d = {b, n > 1 ? b : 0, n > 2 ? b : 0, n > 2 ? b : 0, f};
    size_t elem = (size_t)b / 8 * (size_t)n, h = below(s, 64), w = e->size / elem / (h ? h : 1) + 1;
    w = w > 8192 ? 8192 : w;
    switch (below(s, 3)) {
    case 0:
        EXPECT(cudaMallocArray((cudaArray_t *)&e->p, &d, w, h, 0), cudaSuccess);
        break;
    case 1:
        EXPECT(cudaMalloc3DArray((cudaArray_t *)&e->p, &d,
                                 (struct cudaExtent){w, h ? h : 1, 1 + below(s, 4)},
                                 cudaArrayLayered),
               cudaSuccess);
        break;
    default: { /* at most the levels w x h has: 1 + log2 of its larger side */
        unsigned most = 0;
        for (size_t m = w > h ? w : h; m; m >>= 1)
            most++;
        e->mipmapped = 1;
        EXPECT(cudaMallocMipmappedArray((cudaMipmappedArray_t *)&e->p, &d,
                                        (struct cudaExtent){w, h, 0},
                                        1 + below(s, most < 3 ? most : 3), 0),
               cudaSuccess);
    }
    }
}

/* A CUDA array through the driver: 2D (float, half or 8-bit, 1 to 4
 * channels), block-compressed (BC1), or mipmapped (width >= 4: 3 levels fit). */
static void alloc_cu_array(uint64_t *s, entry *e)
{
    static const CUarray_format fmt[3] = {CU_AD_FORMAT_FLOAT, CU_AD_FORMAT_HALF,
                                          CU_AD_FORMAT_UNSIGNED_INT8};
    CUDA_ARRAY3D_DESCRIPTOR d = {.Format = fmt[below(s, 3)], .NumChannels = 1u << below(s, 3)};
    d.Height = 1 + below(s, 64);
    d.Width = e->size / 16 / d.Height + 4;
    d.Width = d.Width > 8192 ? 8192 : d.Width;
    switch (below(s, 3)) {
    case 0:
        EXPECT(cuArray3DCreate((CUarray *)&e->p, &d), CUDA_SUCCESS);
        break;
    case 1:
        d.Format = CU_AD_FORMAT_BC1_UNORM;
        d.NumChannels = 4;
        EXPECT(cuArray3DCreate((CUarray *)&e->p, &d), CUDA_SUCCESS);
        break;
    default:
        e->mipmapped = 1;
        EXPECT(cuMipmappedArrayCreate((CUmipmappedArray *)&e->p, &d, 1 + below(s, 3)),
               CUDA_SUCCESS);
    }
}

static void alloc_one(uint64_t *s, int device, cudaStream_t stream)
{
    entry e = {.kind = (enum kind)below(s, K_KINDS), .device = device, .size = random_size(s)};
    CUdeviceptr d;
    size_t pitch;
    switch (e.kind) {
    case K_DEVICE:
        EXPECT(cudaMalloc(&e.p, e.size), cudaSuccess);
        break;
    case K_DRIVER:
        EXPECT(cuMemAlloc(&d, e.size), CUDA_SUCCESS);
        e.p = (void *)(uintptr_t)d;
        break;
    case K_MANAGED:
        EXPECT(
            cudaMallocManaged(&e.p, e.size, below(s, 2) ? cudaMemAttachGlobal : cudaMemAttachHost),
            cudaSuccess);
        break;
    case K_PITCH:
        EXPECT(cudaMallocPitch(&e.p, &pitch, e.size / 16 + 1, 16), cudaSuccess);
        break;
    case K_3D: {
        struct cudaPitchedPtr pp;
        struct cudaExtent ext = {e.size / 64 + 1, 4, 16};
        EXPECT(cudaMalloc3D(&pp, ext), cudaSuccess);
        e.p = pp.ptr;
        break;
    }
    case K_ASYNC:
        EXPECT(cudaMallocAsync(&e.p, e.size, stream), cudaSuccess);
        break;
    case K_POOL: { /* device 0's pool is bounded: a failure is an answer too */
        cudaError_t rc = cudaMallocFromPoolAsync(&e.p, e.size, pools[device], stream);
        if (rc == cudaErrorMemoryAllocation && device == 0) {
            (void)cudaGetLastError();
            return;
        }
        EXPECT(rc, cudaSuccess);
        break;
    }
    case K_CU_PITCH:
        EXPECT(cuMemAllocPitch(&d, &pitch, e.size / 8 + 1, 8, 4), CUDA_SUCCESS);
        e.p = (void *)(uintptr_t)d;
        break;
    case K_CU_MANAGED:
        EXPECT(cuMemAllocManaged(&d, e.size, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
        e.p = (void *)(uintptr_t)d;
        break;
    case K_CU_ASYNC:
        EXPECT(cuMemAllocAsync(&d, e.size, (CUstream)stream), CUDA_SUCCESS);
        e.p = (void *)(uintptr_t)d;
        break;
    case K_CU_HOST:
        if (below(s, 2))
            EXPECT(cuMemAllocHost(&e.p, e.size), CUDA_SUCCESS);
        else
            EXPECT(cuMemHostAlloc(&e.p, e.size, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
        break;
    case K_CU_REGISTERED:
        e.p = page_buffer(&e.size);
        EXPECT(cuMemHostRegister(e.p, e.size, 0), CUDA_SUCCESS);
        break;
    case K_HOST:
        EXPECT(cudaMallocHost(&e.p, e.size), cudaSuccess);
        break;
    case K_HOSTALLOC:
        EXPECT(cudaHostAlloc(&e.p, e.size, below(s, 2) ? cudaHostAllocMapped : 0), cudaSuccess);
        break;
    case K_REGISTERED:
        e.p = page_buffer(&e.size);
        EXPECT(cudaHostRegister(e.p, e.size, 0), cudaSuccess);
        break;
    case K_ARRAY:
        alloc_array(s, &e);
        break;
    case K_CU_ARRAY:
        alloc_cu_array(s, &e);
        break;
    default:
        alloc_vmm(s, &e);
    }
    put(&e);
}

/* Free e with its API (the runtime's or the driver's, at random, where both
 * free it), whoever allocated it; a stream-ordered free on this thread's
 * stream of device when e is on that device. */
/* A VMM allocation: unmapped, address range freed, released unless it was.
 * A third go with a retain by address first: one not yet released as NCCL
 * frees (ncclCuMemFree: that reference released, unmapped, the last release
 * later), one already released is live again (the H200 allowed it) until
 * that later release. The entry goes back to the pool for it, so the memory
 * outlives its mapping by the operations in between. */
static void free_vmm(uint64_t *s, const entry *e)
{
    CUdeviceptr va = (CUdeviceptr)(uintptr_t)e->p;
    if (e->unmapped) {
        EXPECT(cuMemRelease(e->handle), CUDA_SUCCESS);
        return;
    }
    if (below(s, 3) == 0) {
        CUmemGenericAllocationHandle got;
        EXPECT(cuMemRetainAllocationHandle(&got, e->p), CUDA_SUCCESS);
        REQUIRE(got == e->handle);
        if (!e->released) /* else the retain made a released handle live again */
            EXPECT(cuMemRelease(got), CUDA_SUCCESS);
        EXPECT(cuMemUnmap(va, e->size), CUDA_SUCCESS);
        EXPECT(cuMemAddressFree(va, e->size), CUDA_SUCCESS);
        entry later = *e;
        later.unmapped = 1;
        later.p = NULL;
        if (!put_back(&later))
            EXPECT(cuMemRelease(e->handle), CUDA_SUCCESS);
        return;
    }
    EXPECT(cuMemUnmap(va, e->size), CUDA_SUCCESS);
    if (!e->released)
        EXPECT(cuMemRelease(e->handle), CUDA_SUCCESS);
    EXPECT(cuMemAddressFree(va, e->size), CUDA_SUCCESS);
}

static void free_one(uint64_t *s, const entry *e, int device, cudaStream_t stream)
{
    switch (e->kind) {
    case K_DEVICE:
    case K_DRIVER:
        if (below(s, 2))
            EXPECT(cudaFree(e->p), cudaSuccess);
        else
            EXPECT(cuMemFree((CUdeviceptr)(uintptr_t)e->p), CUDA_SUCCESS);
        break;
    case K_MANAGED:
    case K_PITCH:
    case K_3D:
        EXPECT(cudaFree(e->p), cudaSuccess);
        break;
    case K_CU_PITCH:
    case K_CU_MANAGED:
        EXPECT(cuMemFree((CUdeviceptr)(uintptr_t)e->p), CUDA_SUCCESS);
        break;
    case K_ASYNC:
    case K_POOL:
    case K_CU_ASYNC:
        if (e->device == device && below(s, 2))
            EXPECT(cudaFreeAsync(e->p, stream), cudaSuccess);
        else if (e->device == device && below(s, 2))
            EXPECT(cuMemFreeAsync((CUdeviceptr)(uintptr_t)e->p, (CUstream)stream), CUDA_SUCCESS);
        else
            EXPECT(cudaFree(e->p), cudaSuccess);
        break;
    case K_HOST:
    case K_HOSTALLOC:
        EXPECT(cudaFreeHost(e->p), cudaSuccess);
        break;
    case K_CU_HOST:
        EXPECT(cuMemFreeHost(e->p), CUDA_SUCCESS);
        break;
    case K_REGISTERED:
        EXPECT(cudaHostUnregister(e->p), cudaSuccess);
        free(e->p);
        break;
    case K_CU_REGISTERED:
        EXPECT(cuMemHostUnregister(e->p), CUDA_SUCCESS);
        free(e->p);
        break;
    case K_ARRAY: /* the runtime's free or the driver's, whoever made it */
    case K_CU_ARRAY:
        if (e->mipmapped && below(s, 2))
            EXPECT(cudaFreeMipmappedArray((cudaMipmappedArray_t)e->p), cudaSuccess);
        else if (e->mipmapped)
            EXPECT(cuMipmappedArrayDestroy((CUmipmappedArray)e->p), CUDA_SUCCESS);
        else if (below(s, 2))
            EXPECT(cudaFreeArray((cudaArray_t)e->p), cudaSuccess);
        else
            EXPECT(cuArrayDestroy((CUarray)e->p), CUDA_SUCCESS);
        break;
    default:
        free_vmm(s, e);
    }
}

/* An allocation no device (or host) can hold, through one of the device APIs
 * or as pinned host memory. */
static void fail_one(uint64_t *s, cudaStream_t stream)
{
    void *p;
    CUdeviceptr d;
    size_t pitch;
    struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat};
    cudaArray_t a;
    switch (below(s, 6)) {
    case 5: /* 64 TiB within the 3D array limits */
        EXPECT(cudaMalloc3DArray(&a, &f4, (struct cudaExtent){16384, 16384, 16384}, 0),
               cudaErrorMemoryAllocation);
        break;
    case 4:
        EXPECT(cudaMallocHost(&p, HUGE), cudaErrorMemoryAllocation); /* pinned host memory */
        break;
    case 0:
        EXPECT(cudaMalloc(&p, HUGE), cudaErrorMemoryAllocation);
        break;
    case 1:
        EXPECT(cuMemAlloc(&d, HUGE), CUDA_ERROR_OUT_OF_MEMORY);
        break;
    case 2:
        EXPECT(cudaMallocAsync(&p, HUGE, stream), cudaErrorMemoryAllocation);
        break;
    default:
        EXPECT(cudaMallocPitch(&p, &pitch, 1 << 20, HUGE >> 20), cudaErrorMemoryAllocation);
    }
    (void)cudaGetLastError();
}

/* Frees of what was never allocated: nothing changes. */
static void bad_free(uint64_t *s)
{
    int local;
    switch (below(s, 3)) {
    case 0:
        EXPECT(cudaFree(NULL), cudaSuccess);
        break;
    case 1:
        EXPECT(cudaFree(&local), cudaErrorInvalidValue);
        break;
    default:
        EXPECT(cuMemFree((CUdeviceptr)(uintptr_t)&local), CUDA_ERROR_INVALID_VALUE);
    }
    (void)cudaGetLastError();
}

static void *worker(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    uint64_t s = seed * 1000003u + t;
    cudaStream_t streams[DEVICES];
    for (int d = 0; d < DEVICES; d++) {
        use_device(d);
        EXPECT(cudaStreamCreate(&streams[d]), cudaSuccess);
    }
    int device = (int)below(&s, DEVICES);
    use_device(device);
    for (size_t i = 0; i < ops; i++) {
        size_t r = below(&s, 100);
        entry e;
        if (r < 45) {
            if (reserve_room())
                alloc_one(&s, device, streams[device]);
        } else if (r < 85) {
            if (take(&s, &e))
                free_one(&s, &e, device, streams[device]);
        } else if (r < 90) {
            fail_one(&s, streams[device]);
        } else if (r < 92) {
            bad_free(&s);
        } else if (r < 94) {
            static const char *const names[] = {"r0", "r1", "r2", "r3"};
            if (tl_depth < 16) {
                tl_range[tl_depth++] = names[below(&s, 4)];
                nvtxRangePushA(tl_range[tl_depth - 1]);
            }
        } else if (r < 96) {
            if (tl_depth > 0) {
                tl_depth--;
                nvtxRangePop();
            }
        } else if (r < 97) {
            size_t f, total;
            EXPECT(cudaMemGetInfo(&f, &total), cudaSuccess);
        } else if (r < 98) {
            EXPECT(cudaMemPoolTrimTo(pools[device], below(&s, 2) ? 0 : 4 * MiB), cudaSuccess);
        } else {
            device = (int)below(&s, DEVICES);
            use_device(device);
        }
    }
    for (int d = 0; d < DEVICES; d++) {
        use_device(d);
        EXPECT(cudaStreamSynchronize(streams[d]), cudaSuccess);
        EXPECT(cudaStreamDestroy(streams[d]), cudaSuccess);
    }
    return NULL;
}

/* CORPUS_END (see the top): leave without exit's handlers, stdout flushed. */
static void end_abruptly(const char *how)
{
    fflush(stdout);
    if (how && !strcmp(how, "kill"))
        raise(SIGKILL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: corpus_random SEED [OPS]\n");
        return 2;
    }
    seed = strtoull(argv[1], NULL, 0);
    if (argc > 2)
        ops = strtoull(argv[2], NULL, 0);
    const char *log = getenv("CORPUS_RANGES");
    if (log && !(ranges_log = fopen(log, "w"))) {
        perror(log);
        return 2;
    }
    EXPECT(cuInit(0), CUDA_SUCCESS);
    for (int d = 0; d < DEVICES; d++) {
        struct cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = d;
        props.maxSize = d == 0 ? POOL_MAX : 0;
        use_device(d);
        EXPECT(cudaMemPoolCreate(&pools[d], &props), cudaSuccess);
    }
    EXPECT(cudaDeviceSetMemPool(1, pools[1]), cudaSuccess); /* device 1's cudaMallocAsync */
    corpus_run_threads(WORKERS, worker);
    corpus_run_threads(WORKERS, worker); /* frees what the first wave left */
    /* a context end, after the waves: device 1's primary context reset with
     * what they left live on it (the preload records its device memory
     * freed, the sim's ledger frees it) */
    use_device(1);
    EXPECT(cudaDeviceReset(), cudaSuccess);
    drop_reset(1);
    uint64_t s = seed ^ 0x5eed;
    use_device(0);
    for (size_t n = npool / 2; n > 0; n--) {
        entry e;
        REQUIRE(take(&s, &e));
        free_one(&s, &e, 0, 0);
    }
    for (int d = 0; d < DEVICES; d++) {
        use_device(d);
        EXPECT(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT(cudaMemPoolDestroy(pools[d]), cudaSuccess); /* its leaks keep it */
    }
    for (int k = 0; k < K_KINDS; k++)
        printf("%-10s %4lu allocations %4lu frees\n", KIND_NAMES[k], done[k][0], done[k][1]);
    printf("%zu left live\n", npool);
    if (ranges_log)
        REQUIRE(fclose(ranges_log) == 0);
    end_abruptly(getenv("CORPUS_END"));
    return 0;
}
