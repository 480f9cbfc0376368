/* many_stacks_prog DEPTH: one cudaMalloc at each of 2^DEPTH distinct call
 * stacks (stack s: the path a/b through DEPTH levels given by s's bits),
 * then frees the smallest class. Sizes by s % 4: 0 -> 8192 B, 1 and 2 ->
 * 4096 B, 3 -> 2048 B (freed before exit). The ground truth of
 * many_stacks_test.sh: a report keeps the VR_MAX_MERGED_SITES largest
 * stacks of a table and counts the rest as left out. Exit 0, or 1 when an
 * allocation fails. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

static int depth;
static void **ptrs;

static size_t size_of(unsigned s)
{
    return s % 4 == 0 ? 8192 : s % 4 == 3 ? 2048 : 4096;
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

int main(int argc, char **argv)
{
    depth = argc > 1 ? atoi(argv[1]) : 15;
    if (depth < 1 || depth > 20) {
        fprintf(stderr, "usage: many_stacks_prog DEPTH (1-20)\n");
        return 2;
    }
    unsigned n = 1u << depth;
    ptrs = calloc(n, sizeof *ptrs);
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
