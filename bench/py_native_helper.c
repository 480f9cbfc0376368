/* py_native_helper.c: the native half of bench/py_frames_overhead.py, loaded
 * with ctypes: recurse `depth` native frames, then time n
 * cudaMalloc/cudaFree pairs of 256 bytes. */
#include <cuda_runtime_api.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double pairs(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return -1.0;
    }
    return (now_ns() - t0) / (double)n;
}

__attribute__((noinline)) static double at_depth(int depth, long n)
{
    double r = depth > 1 ? at_depth(depth - 1, n) : pairs(n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
    return r;
}

/* ns per allocate/free pair at `depth` native frames, -1 on a CUDA error. */
double vt_bench_pairs(long n, int depth)
{
    return at_depth(depth, n);
}
