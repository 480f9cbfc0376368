/* alloc_touch_free: N x (cudaMalloc SIZE, cudaMemset the whole of it,
 * cudaFree) on the simulated device; the goal (issue 12) is memset speed,
 * i.e. freed memory is reused without faulting fresh pages in.
 *
 * usage: alloc_touch_free [N [MiB]]    (defaults: 400 x 8 MiB)
 * Prints "iterations=N", "bytes_per_iteration=B", "seconds=S" and
 * "memset_gbytes_per_s=G" on stdout; exits 1 if a CUDA call fails. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 400;
    size_t size = (size_t)(argc > 2 ? strtol(argv[2], NULL, 10) : 8) << 20;
    void *warm = NULL;
    if (n <= 0 || size == 0 || cudaMalloc(&warm, 1) != cudaSuccess || cudaFree(warm))
        return fprintf(stderr, "alloc_touch_free: bad arguments or no device\n"), 1;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, size) != cudaSuccess || cudaMemset(p, (int)(i & 0xff), size) ||
            cudaFree(p) != cudaSuccess)
            return fprintf(stderr, "alloc_touch_free: CUDA call failed at %ld\n", i), 1;
    }
    double s = now_s() - t0;
    printf("iterations=%ld\nbytes_per_iteration=%zu\nseconds=%.3f\nmemset_gbytes_per_s=%.2f\n", n,
           size, s, (double)n * (double)size / s / 1e9);
    return 0;
}
