/* Shared by the corpus programs (tests/corpus/README.md): each program checks
 * the results its CUDA calls must return and exits 1 on the first surprise,
 * so a corpus case is a real program, not only a ledger generator. */
#ifndef CORPUS_H
#define CORPUS_H
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#define MiB ((size_t)1 << 20)

/* The call must return `want` (a cudaError_t or CUresult). */
#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        int got_ = (int)(call), want_ = (int)(want);                                               \
        if (got_ != want_) {                                                                       \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call,     \
                    got_, want_);                                                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A condition the program's own bookkeeping requires. */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Two sizes the program's own bookkeeping requires equal; both printed on a
 * failure (what a real GPU answered, where it differs from the sim). */
#define REQUIRE_EQ(a, b)                                                                           \
    do {                                                                                           \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);             \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: %s == %s does not hold: %llu != %llu\n", __FILE__, __LINE__,   \
                    #a, #b, a_, b_);                                                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#ifdef __cuda_cuda_h__ /* the driver API's programs (cuda.h included first) */
#include <string.h>

/* cuMemCreate's properties for pinned memory on device. */
static inline CUmemAllocationProp corpus_vmm_prop(int device)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

/* Free memory of the current context's device, bytes (cuMemGetInfo). */
static inline size_t corpus_free_bytes(void)
{
    size_t f = 0, t = 0;
    EXPECT(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
    return f;
}

/* cuInit, then device 0's primary context retained and made current. */
static inline void corpus_driver_start(void)
{
    CUdevice dev;
    CUcontext ctx;
    EXPECT(cuInit(0), CUDA_SUCCESS);
    EXPECT(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}
#endif

#ifdef NVTX_VERSION /* the programs that include nvtx3/nvToolsExt.h first */
/* Up to steps NVTX ranges "step", each keeping 64 MiB more (cudaMalloc); on
 * the first that fails, "died at step N" on stdout and no more
 * (growth_projection.sh: the step where the exit line and the report
 * project the run out of memory). */
static inline void corpus_grow(int steps)
{
    void *p;
    for (int i = 1; i <= steps; i++) {
        nvtxRangePushA("step");
        cudaError_t rc = cudaMalloc(&p, 64 * MiB);
        nvtxRangePop();
        if (rc != cudaSuccess) {
            REQUIRE(rc == cudaErrorMemoryAllocation);
            cudaGetLastError();
            printf("died at step %d\n", i);
            return;
        }
    }
}
#endif

#ifdef CORPUS_THREADS
#include <pthread.h>
/* Run worker(i) on n threads (n <= 64), i = 0..n-1, and join them all. */
static inline void corpus_run_threads(size_t n, void *(*worker)(void *))
{
    pthread_t th[64];
    REQUIRE(n <= 64);
    for (size_t t = 0; t < n; t++)
        REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) == 0);
    for (size_t t = 0; t < n; t++)
        REQUIRE(pthread_join(th[t], NULL) == 0);
}

/* The seeded random programs (*_random.c): "PROG SEED [OPS]" into *seed and
 * *ops (unchanged without OPS); exit 2 with a usage line otherwise. */
static inline void corpus_seed_args(int argc, char **argv, unsigned long long *seed, int *ops)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s SEED [OPS]\n", argv[0]);
        exit(2);
    }
    *seed = strtoull(argv[1], NULL, 10);
    if (argc == 3)
        *ops = atoi(argv[2]);
}

/* Their generator: the next 31 bits of state *s (a 64-bit linear
 * congruential generator, Knuth's MMIX constants). */
static inline unsigned corpus_rand(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(*s >> 33);
}

/* One of 0 .. n-1 (n > 0). */
static inline unsigned corpus_pick(unsigned long long *s, unsigned n)
{
    return corpus_rand(s) % n;
}
#endif
#endif
