/* pool_frag: the simulated device's stream-ordered pool, fragmented or full,
 * then one allocation that fails (tests/pool/README.md). Run on a 1 GiB
 * device with no context reserve (VRAMTRACE_SIM_MEMORY=1GiB,
 * VRAMTRACE_SIM_CONTEXT_RESERVE=0). Exits 0 when every call returned what the
 * pool's rules say (sim/README.md, "Stream-ordered allocator"), 1 otherwise.
 *
 *   pool_frag frag      cudaMallocAsync: steps of n = 100, 120, 140 MiB each
 *                       take a 2n segment, keep n of it and leave an n hole;
 *                       then 320 MiB fails although 360 MiB of reserve and
 *                       304 MiB of the device are free (fragmentation)
 *   pool_frag driver    the same with cuMemAllocFromPoolAsync on the
 *                       device's default pool
 *   pool_frag full      three 300 MiB allocations kept; 200 MiB fails with
 *                       no free reserve (capacity) */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define CHECK(call, want)                                                                          \
    do {                                                                                           \
        int got_ = (int)(call);                                                                    \
        if (got_ != (int)(want)) {                                                                 \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call,     \
                    got_, (int)(want));                                                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUmemoryPool pool; /* set in driver mode: allocations name it */

/* One allocation of n bytes on the default stream, by the mode's API. */
static int alloc(void **p, size_t n)
{
    if (pool)
        return (int)cuMemAllocFromPoolAsync((CUdeviceptr *)p, n, pool, NULL);
    return (int)cudaMallocAsync(p, n, 0);
}

static void release(void *p)
{
    CHECK(cudaFreeAsync(p, 0), cudaSuccess);
}

/* Steps of growing n: a 2n block (its own segment) freed, then n kept and n
 * freed inside that segment: a hole of n each step. */
static void fragment(void)
{
    void *big, *x, *kept[3];
    for (int i = 0; i < 3; i++) {
        size_t n = (100 + 20 * (size_t)i) * MiB;
        CHECK(alloc(&big, 2 * n), 0);
        release(big);
        CHECK(alloc(&x, n), 0);
        CHECK(alloc(&kept[i], n), 0);
        release(x);
    }
    void *p;
    CHECK(alloc(&p, 320 * MiB), cudaErrorMemoryAllocation); /* = CUDA_ERROR_OUT_OF_MEMORY */
}

static void fill(void)
{
    void *kept[3], *p;
    for (int i = 0; i < 3; i++)
        CHECK(alloc(&kept[i], 300 * MiB), 0);
    CHECK(alloc(&p, 200 * MiB), cudaErrorMemoryAllocation);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CHECK(cudaFree(NULL), cudaSuccess); /* the primary context, current on this thread */
    if (!strcmp(mode, "driver"))
        CHECK(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    if (!strcmp(mode, "frag") || !strcmp(mode, "driver"))
        fragment();
    else if (!strcmp(mode, "full"))
        fill();
    else {
        fprintf(stderr, "usage: pool_frag frag|driver|full\n");
        return 2;
    }
    (void)cudaGetLastError(); /* the failure is expected */
    printf("pool_frag %s: the allocation failed as expected\n", mode);
    return 0;
}
