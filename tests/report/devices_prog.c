/* devices_prog.c: growth on one of two devices, for devices_test.sh.
 *   devices_prog STEPS
 * Device 0 holds the "model" (8 GiB) and a 256 MiB temporary each step;
 * device 1 holds a 256 MiB temporary and keeps 64 MiB each step (never
 * freed), each step an NVTX range "step". Runs STEPS steps, or until an
 * allocation fails: "step N" after each completed step, "out of memory in
 * step N on device D" at the failure (exit 0 either way). The step that
 * fails is where device 1, not the two devices' sum, runs out. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

static void *take(int device, size_t bytes)
{
    void *p = NULL;
    if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    return p;
}

/* One step: 0, or the device whose allocation failed + 1. */
static int step(void)
{
    void *t0 = take(0, 256u << 20);
    if (!t0)
        return 1;
    void *t1 = take(1, 256u << 20);
    if (!t1)
        return 2;
    cudaFree(t1);
    cudaSetDevice(0);
    cudaFree(t0);
    return take(1, 64u << 20) ? 0 : 2;
}

int main(int argc, char **argv)
{
    int steps = argc == 2 ? atoi(argv[1]) : 0;
    if (steps <= 0) {
        fprintf(stderr, "usage: devices_prog STEPS\n");
        return 2;
    }
    if (!take(0, (size_t)8 << 30)) {
        fprintf(stderr, "devices_prog: the model does not fit on device 0\n");
        return 1;
    }
    for (int i = 0; i < steps; i++) {
        nvtxRangePushA("step");
        int failed = step();
        nvtxRangePop();
        if (failed) {
            printf("out of memory in step %d on device %d\n", i + 1, failed - 1);
            return 0;
        }
        printf("step %d\n", i + 1);
    }
    return 0;
}
