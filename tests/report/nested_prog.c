/* nested_prog.c: NVTX iterations one level down, for nested_test.sh.
 *   nested_prog outer N   one range "train" around N ranges "step", each
 *                         keeping 1 MiB (never freed) and holding a 4 MiB
 *                         temporary in a range "forward"
 *   nested_prog repeat N  N ranges "step" (no outer one), each holding 4
 *                         ranges "micro" that keep 1 MiB each: the step is
 *                         the iteration once it completed 3 times
 *   nested_prog numbered N  as outer without "train", each step's range
 *                         named by its number: "iteration0", "iteration1"...
 *   nested_prog epochs N  as numbered, the names of several numbers that end
 *                         in the step's: "epoch 0 step 0" ... "epoch 0 step 4",
 *                         "epoch 1 step 0" ... (5 steps an epoch)
 *   nested_prog fraction N  as numbered, named "step 1/N" ... "step N/N"
 *   nested_prog phases N  20 one-off top-level ranges ("phase_a" ... "phase_t",
 *                         each with a temporary), then N ranges "step" keeping
 *                         1 MiB each (the first names a program's table of
 *                         range names fills with)
 *   nested_prog cycle N   N steps of 12 top-level ranges "part_a" ... "part_l"
 *                         (no step range), 1 MiB kept in "part_a": more names
 *                         each step than the tables hold
 *   nested_prog layers N  N steps of top-level ranges "layer0" to "layer3"
 *                         (no step range), 1 MiB kept in "layer3": numbered
 *                         names that come round again, not by step */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static int keep_site(void)
{
    void *p = NULL;
    return cudaMalloc(&p, 1u << 20) == cudaSuccess;
}

static int temporary(void)
{
    void *p = NULL;
    if (cudaMalloc(&p, 4u << 20) != cudaSuccess)
        return 0;
    return cudaFree(p) == cudaSuccess;
}

/* steps rounds of n top-level ranges (name k: fmt with k, a number or a
 * letter), the keep-th keeping 1 MiB, the others holding a temporary. */
static int rounds(int steps, int n, const char *fmt, int letter, int keep)
{
    int ok = 1;
    for (int i = 0; i < steps; i++)
        for (int k = 0; k < n; k++) {
            char name[32];
            snprintf(name, sizeof name, fmt, letter + k);
            nvtxRangePushA(name);
            ok &= k == keep ? keep_site() : temporary();
            nvtxRangePop();
        }
    return ok ? 0 : 1;
}

static int phases(int steps)
{
    int ok = 1;
    for (int k = 0; k < 20; k++) {
        char name[16];
        snprintf(name, sizeof name, "phase_%c", 'a' + k);
        nvtxRangePushA(name);
        ok &= temporary();
        nvtxRangePop();
    }
    for (int i = 0; i < steps; i++) {
        nvtxRangePushA("step");
        ok &= temporary() & keep_site();
        nvtxRangePop();
    }
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc == 3 ? argv[1] : "";
    if (strcmp(mode, "outer") && strcmp(mode, "repeat") && strcmp(mode, "numbered") &&
        strcmp(mode, "epochs") && strcmp(mode, "fraction") && strcmp(mode, "layers") &&
        strcmp(mode, "phases") && strcmp(mode, "cycle")) {
        fprintf(stderr, "usage: nested_prog "
                        "outer|repeat|numbered|epochs|fraction|layers|phases|cycle STEPS\n");
        return 2;
    }
    if (!strcmp(mode, "layers"))
        return rounds(atoi(argv[2]), 4, "layer%d", 0, 3);
    if (!strcmp(mode, "phases"))
        return phases(atoi(argv[2]));
    if (!strcmp(mode, "cycle"))
        return rounds(atoi(argv[2]), 12, "part_%c", 'a', 0);
    bool numbered = strcmp(mode, "outer") && strcmp(mode, "repeat");
    bool outer = numbered || !strcmp(mode, "outer");
    int steps = atoi(argv[2]), ok = 1;
    if (outer && !numbered)
        nvtxRangePushA("train");
    for (int i = 0; i < steps; i++) {
        char name[48];
        if (!strcmp(mode, "epochs"))
            snprintf(name, sizeof name, "epoch %d step %d", i / 5, i % 5);
        else if (!strcmp(mode, "fraction"))
            snprintf(name, sizeof name, "step %d/%d", i + 1, steps);
        else
            snprintf(name, sizeof name, "iteration%d", i);
        nvtxRangePushA(numbered ? name : "step");
        for (int k = 0; k < (outer ? 1 : 4); k++) {
            nvtxRangePushA(outer ? "forward" : "micro");
            ok &= outer ? temporary() : keep_site();
            nvtxRangePop();
        }
        if (outer)
            ok &= keep_site();
        nvtxRangePop();
    }
    if (outer && !numbered)
        nvtxRangePop();
    if (!ok)
        fprintf(stderr, "nested_prog: cudaMalloc failed\n");
    return ok ? 0 : 1;
}
