/* host_prog.c: pinned host memory kept across steps, for host_test.sh.
 *   host_prog STEPS keep|free
 * Each step (an NVTX range "step") makes a 4 MiB device temporary and
 * pins host memory of a size drawn from a fixed sequence (1 to 9 MiB, not
 * a power of two) with cudaHostAlloc, kept (keep) or freed before the
 * step ends (free). After each step it prints "held N": the pinned bytes
 * it holds then, the truth the report's host growth must fit. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int steps = argc == 3 ? atoi(argv[1]) : 0;
    if (steps <= 0 || (strcmp(argv[2], "keep") && strcmp(argv[2], "free"))) {
        fprintf(stderr, "usage: host_prog STEPS keep|free\n");
        return 2;
    }
    int keep = !strcmp(argv[2], "keep");
    unsigned long long held = 0, x = 12345;
    for (int i = 0; i < steps; i++) {
        nvtxRangePushA("step");
        void *d = NULL, *h = NULL;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = ((size_t)1 << 20) + (size_t)(x >> 40) % ((size_t)8 << 20) + 4096;
        if (cudaMalloc(&d, 4u << 20) != cudaSuccess || cudaHostAlloc(&h, size, 0) != cudaSuccess)
            return 1;
        cudaFree(d);
        if (keep)
            held += size;
        else
            cudaFreeHost(h);
        nvtxRangePop();
        printf("held %llu\n", held);
    }
    return 0;
}
