/* pool_prog.c: growth in a stream-ordered pool, for pool_test.sh.
 *   pool_prog SEED STEPS default|named
 * Each step (an NVTX range "step") allocates the seed's temporaries (2 to 8
 * of 16 KiB to 96 MiB, some freed as the step goes) and keeps one tensor of
 * the seed's size (64 KiB to 24 MiB) every 1 to 3 steps, all with
 * cudaMallocAsync from the device's current pool ("default") or with
 * cudaMallocFromPoolAsync from a pool of its own ("named", as RAPIDS RMM's
 * cuda_async_memory_resource makes), until STEPS steps or a failure: "step
 * N" after each completed step, "out of memory in step N" at the failure
 * (exit 0 either way). The kept allocations split the pool's reserve, which
 * fills the device long before the bytes kept do. */
#include <cuda_runtime.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 53);
}

/* 2^lo to 2^hi bytes, log-uniform. */
static size_t log_size(double lo, double hi)
{
    return (size_t)exp2(lo + (hi - lo) * uniform());
}

static cudaMemPool_t pool;

static void *take(size_t bytes)
{
    void *p = NULL;
    cudaError_t rc =
        pool ? cudaMallocFromPoolAsync(&p, bytes, pool, 0) : cudaMallocAsync(&p, bytes, 0);
    return rc == cudaSuccess ? p : NULL;
}

static int make_pool(void)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    return cudaMemPoolCreate(&pool, &props) == cudaSuccess ? 0 : -1;
}

int main(int argc, char **argv)
{
    int steps = argc == 4 ? atoi(argv[2]) : 0;
    if (steps <= 0 || (strcmp(argv[3], "default") && strcmp(argv[3], "named"))) {
        fprintf(stderr, "usage: pool_prog SEED STEPS default|named\n");
        return 2;
    }
    rng += (uint64_t)strtoull(argv[1], NULL, 10) * 0x2545f4914f6cdd1dull;
    if (!strcmp(argv[3], "named") && make_pool() != 0) {
        fprintf(stderr, "pool_prog: cudaMemPoolCreate failed\n");
        return 1;
    }
    size_t temps[8], ntemps = 2 + (size_t)(uniform() * 7), kept = log_size(16, 24.6);
    int every = 1 + (int)(uniform() * 3);
    for (size_t i = 0; i < ntemps; i++)
        temps[i] = log_size(14, 26.6);
    for (int s = 0; s < steps; s++) {
        void *live[8];
        size_t nlive = 0, first = 0;
        int failed = 0;
        nvtxRangePushA("step");
        for (size_t i = 0; i < ntemps && !failed; i++) {
            failed = !(live[nlive++] = take(temps[i]));
            if (!failed && uniform() < 0.3)
                cudaFreeAsync(live[first++], 0);
        }
        failed = failed || (s % every == 0 && !take(kept));
        for (size_t i = first; i < nlive; i++)
            if (live[i])
                cudaFreeAsync(live[i], 0);
        nvtxRangePop();
        if (failed) {
            printf("out of memory in step %d\n", s + 1);
            return 0;
        }
        printf("step %d\n", s + 1);
    }
    return 0;
}
