/* The simulated device's memory model, through the real CUDA runtime API.
 * Linked with the toolkit's libcudart; ctest runs it with LD_LIBRARY_PATH on
 * the simulated libraries, VRAMTRACE_SIM_MEMORY=1GiB, VRAMTRACE_SIM_DEVICES=2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define RESERVE (304 * MiB) /* the t4 profile's context reserve (sim/README.md) */

/* The rounding rule of sim/README.md, restated independently. */
static size_t rounded(size_t n)
{
    size_t a = n < 2 * MiB ? 512 : 2 * MiB;
    return (n + a - 1) / a * a;
}

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    assert_int_equal(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
}

static void meminfo_is_reserve_plus_live(void **state)
{
    (void)state;
    size_t sizes[] = {1, 512, 513, MiB, 2 * MiB, 2 * MiB + 1, 10 * MiB, 3000};
    void *p[8];
    size_t f0, t, sum = 0;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaMemGetInfo(&f0, &t), cudaSuccess);
    assert_int_equal(t, 1024 * MiB);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(cudaMalloc(&p[i], sizes[i]), cudaSuccess);
        assert_int_equal((uintptr_t)p[i] % 256, 0); /* CUDA C Programming Guide */
        if (sizes[i] >= 2 * MiB)
            assert_int_equal((uintptr_t)p[i] % (2 * MiB), 0);
        sum += rounded(sizes[i]);
        assert_int_equal(free_now(), f0 - sum);
    }
    for (int i = 0; i < 8; i++)
        assert_int_equal(cudaFree(p[i]), cudaSuccess);
    assert_int_equal(free_now(), f0);
}

static void context_reserve_taken(void **state)
{
    (void)state;
    size_t f, t;
    void *pool_bytes;
    cudaMemPool_t pool;
    size_t reserved = 0;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    assert_int_equal(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
                     cudaSuccess);
    assert_int_equal(cudaMemGetInfo(&f, &t), cudaSuccess);
    (void)pool_bytes;
    /* nothing else is live between tests */
    assert_int_equal(t - f, RESERVE + reserved);
}

static void exhaustion_loses_nothing(void **state)
{
    (void)state;
    void *p[64];
    int n = 0;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    size_t f0 = free_now();
    cudaError_t e;
    while ((e = cudaMalloc(&p[n], 64 * MiB)) == cudaSuccess) {
        memset(p[n], n + 1, 64 * MiB / 1024); /* device memory is host accessible */
        n++;
        assert_true(n < 64);
    }
    assert_int_equal(e, cudaErrorMemoryAllocation);
    assert_int_equal(n, (int)(f0 / (64 * MiB)));
    assert_int_equal(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    assert_int_equal(cudaGetLastError(), cudaErrorMemoryAllocation);
    assert_int_equal(cudaGetLastError(), cudaSuccess); /* read and cleared */
    assert_int_equal(free_now(), f0 - (size_t)n * 64 * MiB);
    void *small;
    assert_int_equal(cudaMalloc(&small, 4096), cudaSuccess); /* not sticky */
    assert_int_equal(cudaFree(small), cudaSuccess);
    for (int i = 0; i < n; i++) {
        assert_int_equal(((unsigned char *)p[i])[0], i + 1);
        assert_int_equal(cudaFree(p[i]), cudaSuccess);
    }
    assert_int_equal(free_now(), f0);
}

static void free_and_reuse(void **state)
{
    (void)state;
    void *a, *b, *c;
    int local;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaMalloc(&a, 4 * MiB), cudaSuccess);
    assert_int_equal(cudaMalloc(&c, 4 * MiB), cudaSuccess);
    assert_int_equal(cudaFree(a), cudaSuccess);
    assert_int_equal(cudaMalloc(&b, 3 * MiB), cudaSuccess);
    assert_ptr_equal(a, b); /* the freed range comes back */
    assert_int_equal(cudaFree(b), cudaSuccess);
    assert_int_equal(cudaFree(b), cudaErrorInvalidValue); /* already freed */
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(&local), cudaErrorInvalidValue); /* never allocated */
    assert_int_equal(cudaFree((char *)c + 512), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(NULL), cudaSuccess);
    assert_int_equal(cudaFree(c), cudaSuccess);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
}

static size_t pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr a)
{
    uint64_t v = 0;
    assert_int_equal(cudaMemPoolGetAttribute(pool, a, &v), cudaSuccess);
    return (size_t)v;
}

static void async_pool_reserved_vs_used(void **state)
{
    (void)state;
    cudaMemPool_t pool;
    void *a, *b;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    size_t f0 = free_now();
    assert_int_equal(cudaMallocAsync(&a, MiB, 0), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&b, 1000, 0), cudaSuccess);
    /* used: requested bytes, as an H200's pool answered (sim_internal.h) */
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), MiB + 1000);
    /* reserve: one 32 MiB step, as an H200's default pool (sim_internal.h) */
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(free_now(), f0 - 32 * MiB); /* the device sees what the pool holds */
    assert_int_equal(cudaFreeAsync(a, 0), cudaSuccess);
    assert_int_equal(cudaFreeAsync(b, 0), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 0);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(cudaStreamSynchronize(0), cudaSuccess); /* threshold 0: released */
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    assert_int_equal(free_now(), f0);

    uint64_t keep = UINT64_MAX;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                     cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReleaseThreshold), (size_t)UINT64_MAX);
    assert_int_equal(cudaMallocAsync(&a, 5 * MiB, 0), cudaSuccess);
    assert_int_equal(cudaFreeAsync(a, 0), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(cudaMallocFromPoolAsync(&b, 4 * MiB, pool, 0), cudaSuccess);
    assert_ptr_equal(a, b); /* served from the cached segment */
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    /* more than a step: the size rounded up to 32 MiB steps (H200: 100 MiB took 128) */
    void *c;
    assert_int_equal(cudaMallocAsync(&c, 100 * MiB, 0), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 160 * MiB);
    assert_int_equal(cudaFreeAsync(c, 0), cudaSuccess);
    assert_int_equal(cudaFreeAsync(b, 0), cudaSuccess);
    assert_int_equal(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    keep = 0;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                     cudaSuccess);
    assert_int_equal(free_now(), f0);
}

static cudaMemPool_t new_pool(int device, size_t max_size)
{
    struct cudaMemPoolProps props;
    cudaMemPool_t pool = NULL;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    props.maxSize = max_size;
    assert_int_equal(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    return pool;
}

/* Pools made by cudaMemPoolCreate (CUDA Runtime API, "Stream Ordered Memory
 * Allocator"): their reserve is taken from the device and seen in its free
 * bytes, apart from the default pool's; maxSize bounds it; each keeps its
 * own release threshold; the current pool of a device serves
 * cudaMallocAsync; a pool destroyed with live allocations goes with the last
 * one's free, and the default pool is current again. */
/* cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) of p, asked of
 * the driver the runtime loaded (cuda.h: 17, "the mempool handle for the
 * allocation if it was allocated from a mempool. Otherwise returns NULL"). */
static cudaMemPool_t ptr_pool(const void *p)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(drv);
    int (*attr)(void *, int, uintptr_t) =
        (int (*)(void *, int, uintptr_t))dlsym(drv, "cuPointerGetAttribute");
    assert_non_null(attr);
    cudaMemPool_t pool = (cudaMemPool_t)&pool;
    assert_int_equal(attr(&pool, 17, (uintptr_t)p), 0);
    dlclose(drv);
    return pool;
}

static void created_pools(void **state)
{
    (void)state;
    cudaMemPool_t def, cur, pool, small;
    void *a, *b, *c;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
    size_t f0 = free_now();
    pool = new_pool(0, 0);
    small = new_pool(0, 4 * MiB);
    assert_true(pool != def && small != def && pool != small);
    assert_int_equal(cudaMallocFromPoolAsync(&a, 3 * MiB, pool, 0), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&b, MiB, 0), cudaSuccess); /* the default pool */
    assert_ptr_equal(ptr_pool(a), pool);
    assert_ptr_equal(ptr_pool((char *)a + MiB), pool);
    assert_ptr_equal(ptr_pool(b), def);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 3 * MiB);
    assert_int_equal(pool_attr(def, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(free_now(), f0 - 64 * MiB);
    /* maxSize: a 32 MiB step does not fit, 4 MiB of 2 MiB steps do, then
     * out of memory */
    assert_int_equal(cudaMallocFromPoolAsync(&c, 3 * MiB, small, 0), cudaSuccess);
    void *d;
    assert_int_equal(cudaMallocFromPoolAsync(&d, 2 * MiB, small, 0), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    assert_int_equal(cudaFreeAsync(c, 0), cudaSuccess);
    assert_int_equal(pool_attr(small, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    assert_int_equal(cudaMemPoolDestroy(small), cudaSuccess); /* nothing left: gone now */
    assert_int_equal(free_now(), f0 - 64 * MiB);
    /* its own threshold: the synchronization releases the default pool only */
    uint64_t keep = UINT64_MAX;
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                     cudaSuccess);
    assert_int_equal(cudaFreeAsync(a, 0), cudaSuccess);
    assert_int_equal(cudaFreeAsync(b, 0), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 32 * MiB);
    assert_int_equal(pool_attr(def, cudaMemPoolAttrReservedMemCurrent), 0);
    assert_int_equal(free_now(), f0 - 32 * MiB);
    /* the current pool serves cudaMallocAsync */
    assert_int_equal(cudaDeviceSetMemPool(0, pool), cudaSuccess);
    assert_int_equal(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    assert_ptr_equal(cur, pool);
    assert_int_equal(cudaMallocAsync(&a, MiB, 0), cudaSuccess);
    assert_int_equal(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), MiB);
    assert_int_equal(pool_attr(def, cudaMemPoolAttrUsedMemCurrent), 0);
    assert_int_equal(cudaDeviceSetMemPool(1, pool), cudaErrorInvalidValue); /* device 0's */
    (void)cudaGetLastError();
    /* destroyed with an allocation live: it stays until that free */
    assert_int_equal(cudaMemPoolDestroy(pool), cudaSuccess);
    assert_int_equal(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    assert_ptr_equal(cur, def);
    assert_int_equal(free_now(), f0 - 32 * MiB);
    assert_int_equal(cudaFree(a), cudaSuccess);
    assert_int_equal(free_now(), f0);
    assert_int_equal(cudaMemPoolDestroy(def), cudaErrorInvalidValue); /* not a created pool */
    (void)cudaGetLastError();
    assert_int_equal(cudaMalloc(&a, MiB), cudaSuccess); /* not a pool's */
    assert_null(ptr_pool(a));
    assert_int_equal(cudaFree(a), cudaSuccess);
}

static void *other_thread_device(void *arg)
{
    int *seen = arg;
    cudaGetDevice(&seen[0]);
    cudaSetDevice(0);
    cudaGetDevice(&seen[1]);
    return NULL;
}

static void current_device_is_per_thread(void **state)
{
    (void)state;
    int seen[2] = {-1, -1}, dev = -1, n = 0;
    pthread_t t;
    void *p;
    struct cudaPointerAttributes at;
    assert_int_equal(cudaGetDeviceCount(&n), cudaSuccess);
    assert_int_equal(n, 2);
    assert_int_equal(cudaSetDevice(2), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaSetDevice(1), cudaSuccess);
    assert_int_equal(pthread_create(&t, NULL, other_thread_device, seen), 0);
    pthread_join(t, NULL);
    assert_int_equal(seen[0], 0);
    assert_int_equal(seen[1], 0);
    assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
    assert_int_equal(dev, 1);
    size_t f1 = free_now();
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    size_t f0 = free_now();
    assert_int_equal(cudaSetDevice(1), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 8 * MiB), cudaSuccess);
    assert_int_equal(free_now(), f1 - 8 * MiB);
    assert_int_equal(cudaPointerGetAttributes(&at, p), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeDevice);
    assert_int_equal(at.device, 1);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(free_now(), f0);           /* per-device accounting */
    assert_int_equal(cudaFree(p), cudaSuccess); /* freed on any current device */
    assert_int_equal(cudaSetDevice(1), cudaSuccess);
    assert_int_equal(free_now(), f1);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
}

#define THREADS 8
#define ROUNDS 400
struct worker {
    int id;
    size_t live_bytes; /* rounded bytes this worker leaves allocated */
    void *keep[ROUNDS];
    int nkeep, errors;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned seed = (unsigned)w->id * 2654435761u;
    cudaSetDevice(0);
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t size = 1 + (seed >> 8) % (3 * MiB);
        void *p;
        if (cudaMalloc(&p, size) != cudaSuccess) {
            w->errors++;
            continue;
        }
        if (i % 20 == 0) {
            w->keep[w->nkeep++] = p;
            w->live_bytes += rounded(size);
        } else if (cudaFree(p) != cudaSuccess) {
            w->errors++;
        }
    }
    return NULL;
}

static void eight_threads_exact_accounting(void **state)
{
    (void)state;
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    size_t live = 0;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    size_t f0 = free_now();
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i + 1;
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].errors, 0);
        live += w[i].live_bytes;
    }
    assert_int_equal(free_now(), f0 - live);
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < w[i].nkeep; k++)
            assert_int_equal(cudaFree(w[i].keep[k]), cudaSuccess);
    assert_int_equal(free_now(), f0);
}

static void error_strings_match_real_runtime(void **state)
{
    (void)state;
    void *real = dlopen("/usr/local/cuda/lib64/libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(real);
    const char *(*rs)(cudaError_t) =
        (const char *(*)(cudaError_t))dlsym(real, "cudaGetErrorString");
    const char *(*rn)(cudaError_t) = (const char *(*)(cudaError_t))dlsym(real, "cudaGetErrorName");
    assert_non_null(rs);
    assert_ptr_not_equal((void *)rs, (void *)cudaGetErrorString); /* two libraries */
    for (int i = 0; i < 1100; i++) {
        assert_string_equal(cudaGetErrorString((cudaError_t)i), rs((cudaError_t)i));
        assert_string_equal(cudaGetErrorName((cudaError_t)i), rn((cudaError_t)i));
    }
    dlclose(real);
}

static void host_managed_and_pitched(void **state)
{
    (void)state;
    void *h, *m, *p;
    size_t pitch;
    int local;
    struct cudaPointerAttributes at;
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    size_t f0 = free_now();
    assert_int_equal(cudaMallocHost(&h, 10 * MiB), cudaSuccess);
    assert_int_equal(free_now(), f0); /* pinned host memory is not device memory */
    assert_int_equal(cudaPointerGetAttributes(&at, h), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeHost);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocManaged(&m, 3 * MiB, cudaMemAttachGlobal), cudaSuccess);
    assert_int_equal(free_now(), f0 - 4 * MiB);
    assert_int_equal(cudaPointerGetAttributes(&at, m), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeManaged);
    assert_int_equal(cudaFree(m), cudaSuccess);
    assert_int_equal(cudaMallocPitch(&p, &pitch, 100, 10), cudaSuccess);
    assert_int_equal(pitch, 512);
    assert_int_equal(free_now(), f0 - 5120);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(cudaPointerGetAttributes(&at, &local), cudaSuccess);
    assert_int_equal(at.type, cudaMemoryTypeUnregistered);
    assert_int_equal(free_now(), f0);
}

static void kernel_launch_fails_cleanly(void **state)
{
    (void)state;
    dim3 g = {1, 1, 1};
    assert_int_equal(cudaLaunchKernel((const void *)free_now, g, g, NULL, 0, 0),
                     cudaErrorNotSupported);
    assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
    void *p;
    assert_int_equal(cudaMalloc(&p, 1), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
}

/* A runtime function the simulated device does not model (the generated
 * fallbacks, sim/tools/gen_runtime_entry_points.py): the program gets
 * cudaErrorNotSupported, also as the last error, instead of a symbol lookup
 * error; its per-thread-stream form the same; the outputs stay untouched. */
static void unmodelled_runtime_call(void **state)
{
    (void)state;
    int v = 12345;
    assert_int_equal(cudaDeviceGetByPCIBusId(&v, "0000:01:00.0"), cudaErrorNotSupported);
    assert_int_equal(v, 12345);
    assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    cudaError_t (*ptsz)(const void *, void *, size_t, size_t, enum cudaMemcpyKind, cudaStream_t) =
        (cudaError_t(*)(const void *, void *, size_t, size_t, enum cudaMemcpyKind,
                        cudaStream_t))dlsym(RTLD_DEFAULT, "cudaMemcpyToSymbolAsync_ptsz");
    assert_non_null(ptsz);
    assert_int_equal(ptsz(&v, &v, 1, 0, cudaMemcpyHostToDevice, 0), cudaErrorNotSupported);
    void *p;
    assert_int_equal(cudaMalloc(&p, 1), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
}

/* Limits and the cache preference go to the context (the driver's
 * cuCtxSetLimit, cuCtxGetCacheConfig ...): a value set is read back, an
 * unknown limit or configuration refused. */
static void limits_and_cache_config(void **state)
{
    (void)state;
    size_t heap = 0, was = 0;
    enum cudaFuncCache c = cudaFuncCachePreferL1;
    assert_int_equal(cudaDeviceGetLimit(&was, cudaLimitMallocHeapSize), cudaSuccess);
    assert_int_equal(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20), cudaSuccess);
    assert_int_equal(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize), cudaSuccess);
    assert_int_equal(heap, 64u << 20);
    assert_int_equal(cudaDeviceSetLimit(cudaLimitMallocHeapSize, was), cudaSuccess);
    assert_int_equal(cudaDeviceGetLimit(&heap, (enum cudaLimit)99), cudaErrorUnsupportedLimit);
    assert_int_equal(cudaGetLastError(), cudaErrorUnsupportedLimit);
    assert_int_equal(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared), cudaSuccess);
    assert_int_equal(cudaDeviceGetCacheConfig(&c), cudaSuccess);
    assert_int_equal(c, cudaFuncCachePreferShared);
    assert_int_equal(cudaDeviceSetCacheConfig((enum cudaFuncCache)9), cudaErrorInvalidValue);
    assert_int_equal(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone), cudaSuccess);
}

/* Levels of a mipmapped array (float, 64 x 32, 3 levels: 64x32, 32x16,
 * 16x8): each its own array for 2D copies, apart from the others, bounded
 * by its own size; past the last level cudaErrorInvalidValue (an H200 said
 * so); a level of a freed array is refused, also when a new array takes
 * its address. */
static void mipmap_levels(void **state)
{
    (void)state;
    struct cudaChannelFormatDesc f1 =
        cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaMipmappedArray_t mip, again;
    cudaArray_t l0, l1, l2, l3 = NULL;
    static float a[64 * 32], b[32 * 16], back[64 * 32];
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaMallocMipmappedArray(&mip, &f1, (struct cudaExtent){64, 32, 0}, 3, 0),
                     cudaSuccess);
    assert_int_equal(cudaGetMipmappedArrayLevel(&l0, mip, 0), cudaSuccess);
    assert_int_equal(cudaGetMipmappedArrayLevel(&l1, mip, 1), cudaSuccess);
    assert_int_equal(cudaGetMipmappedArrayLevel(&l2, mip, 2), cudaSuccess);
    assert_int_equal(cudaGetMipmappedArrayLevel(&l3, mip, 3), cudaErrorInvalidValue);
    assert_true(l0 != l1 && l1 != l2);
    for (size_t i = 0; i < 64 * 32; i++)
        a[i] = (float)i;
    for (size_t i = 0; i < 32 * 16; i++)
        b[i] = -(float)i;
    assert_int_equal(cudaMemcpy2DToArray(l0, 0, 0, a, 64 * 4, 64 * 4, 32, cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cudaMemcpy2DToArray(l1, 0, 0, b, 32 * 4, 32 * 4, 16, cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cudaMemcpy2DToArray(l1, 0, 0, b, 32 * 4, 32 * 4, 17, cudaMemcpyHostToDevice),
                     cudaErrorInvalidValue); /* level 1 has 16 rows */
    assert_int_equal(
        cudaMemcpy2DFromArray(back, 64 * 4, l0, 0, 0, 64 * 4, 32, cudaMemcpyDeviceToHost),
        cudaSuccess);
    assert_memory_equal(back, a, sizeof a); /* level 1's copy left level 0 alone */
    assert_int_equal(
        cudaMemcpy2DFromArray(back, 32 * 4, l1, 0, 0, 32 * 4, 16, cudaMemcpyDeviceToHost),
        cudaSuccess);
    assert_memory_equal(back, b, sizeof b);
    assert_int_equal(cudaFreeMipmappedArray(mip), cudaSuccess);
    assert_int_equal(cudaMallocMipmappedArray(&again, &f1, (struct cudaExtent){64, 32, 0}, 3, 0),
                     cudaSuccess);
    assert_int_equal(
        cudaMemcpy2DFromArray(back, 32 * 4, l1, 0, 0, 32 * 4, 16, cudaMemcpyDeviceToHost),
        cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaGetMipmappedArrayLevel(&l1, again, 1), cudaSuccess);
    assert_int_equal(
        cudaMemcpy2DFromArray(back, 32 * 4, l1, 0, 0, 32 * 4, 16, cudaMemcpyDeviceToHost),
        cudaSuccess);
    assert_int_equal(cudaFreeMipmappedArray(again), cudaSuccess);
    (void)cudaGetLastError();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_reserve_taken),
        cmocka_unit_test(meminfo_is_reserve_plus_live),
        cmocka_unit_test(exhaustion_loses_nothing),
        cmocka_unit_test(free_and_reuse),
        cmocka_unit_test(async_pool_reserved_vs_used),
        cmocka_unit_test(created_pools),
        cmocka_unit_test(current_device_is_per_thread),
        cmocka_unit_test(eight_threads_exact_accounting),
        cmocka_unit_test(error_strings_match_real_runtime),
        cmocka_unit_test(host_managed_and_pitched),
        cmocka_unit_test(kernel_launch_fails_cleanly),
        cmocka_unit_test(unmodelled_runtime_call),
        cmocka_unit_test(limits_and_cache_config),
        cmocka_unit_test(mipmap_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
