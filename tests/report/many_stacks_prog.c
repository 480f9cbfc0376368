/* many_stacks_prog DEPTH: one cudaMalloc at each of 2^DEPTH distinct call
 * stacks (stack s: the path a/b through DEPTH levels given by s's bits),
 * then frees the smallest class. Sizes by s % 4: 0 -> 8192 B, 1 and 2 ->
 * 4096 B, 3 -> 2048 B (freed before exit).
 * many_stacks_prog grow DEPTH PER STEPS: STEPS NVTX ranges "step", each
 * holding an 8 MiB temporary and keeping 4096 B at each of the next PER
 * stacks (never freed).
 * The ground truth of many_stacks_test.sh: a report keeps the
 * VR_MAX_MERGED_SITES largest stacks of a table and counts the rest as left
 * out, and analyses the growth of the first VR_MAX_SAMPLED_SITES call sites.
 * Exit 0, or 1 when an allocation fails. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int depth;
static void **ptrs;

static bool growing; /* grow: every stack keeps 4096 B */

static size_t size_of(unsigned s)
{
    return growing ? 4096 : s % 4 == 0 ? 8192 : s % 4 == 3 ? 2048 : 4096;
}

__attribute__((noinline)) static int leaf(unsigned s)
{
    return cudaMalloc(&ptrs[s], size_of(s)) != cudaSuccess;
}

__attribute__((noinline)) static int a(int lvl, unsigned s);
__attribute__((noinline)) static int b(int lvl, unsigned s);

__attribute__((noinline)) static int step(int lvl, unsigned s)
{
    int rc = lvl == depth ? leaf(s) : (s >> lvl & 1) ? a(lvl + 1, s) : b(lvl + 1, s);
    __asm__ volatile(""); /* no tail call: each level keeps its frame */
    return rc;
}

__attribute__((noinline)) static int a(int lvl, unsigned s)
{
    int rc = step(lvl, s);
    __asm__ volatile("");
    return rc;
}

__attribute__((noinline)) static int b(int lvl, unsigned s)
{
    int rc = step(lvl, s);
    __asm__ volatile("");
    return rc;
}

/* STEPS steps keeping PER new stacks each (many_stacks_prog grow). */
static int grow(unsigned per, unsigned steps)
{
    for (unsigned k = 0; k < steps; k++) {
        void *tmp = NULL;
        nvtxRangePushA("step");
        if (cudaMalloc(&tmp, 8u << 20) != cudaSuccess)
            return 1;
        for (unsigned s = k * per; s < (k + 1) * per; s++)
            if (step(0, s))
                return 1;
        cudaFree(tmp);
        nvtxRangePop();
    }
    return 0;
}

int main(int argc, char **argv)
{
    growing = argc == 5 && !strcmp(argv[1], "grow");
    depth = argc > 1 ? atoi(argv[growing ? 2 : 1]) : 15;
    unsigned per = growing ? (unsigned)atoi(argv[3]) : 0,
             steps = growing ? (unsigned)atoi(argv[4]) : 0;
    if (depth < 1 || depth > 20 || (growing && (!per || (uint64_t)per * steps > 1u << depth))) {
        fprintf(stderr, "usage: many_stacks_prog DEPTH (1-20) | grow DEPTH PER STEPS\n");
        return 2;
    }
    unsigned n = 1u << depth;
    ptrs = calloc(n, sizeof *ptrs);
    if (growing) {
        int rc = grow(per, steps);
        if (rc)
            fprintf(stderr, "many_stacks_prog: cudaMalloc failed\n");
        return rc;
    }
    for (unsigned s = 0; s < n; s++)
        if (step(0, s)) {
            fprintf(stderr, "many_stacks_prog: cudaMalloc failed at stack %u\n", s);
            return 1;
        }
    for (unsigned s = 3; s < n; s += 4)
        cudaFree(ptrs[s]);
    free(ptrs);
    return 0;
}
