/* preload_overhead: N allocate/free pairs issued at call depth DEPTH
 * (a noinline recursive helper), timed inside the program so that start-up
 * and trace writing at exit are not counted.
 *
 * usage: preload_overhead cuda|malloc|hold N DEPTH
 *   cuda    cudaMalloc/cudaFree of 256 bytes (run on the simulated device)
 *   malloc  malloc/free of 256 bytes (the same shape for heaptrack)
 *   hold    N cudaMalloc of 256 bytes all live at once, then freed: the
 *           process's peak resident memory is the figure (with and without
 *           the preload, the difference over N is its memory per live
 *           allocation)
 * Prints "ns_per_pair=<float>", "pairs=<N>" and "max_rss_kib=<n>" on stdout. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static void *volatile sink;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cuda_pairs(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return -1;
    }
    return 0;
}

static int hold_all(long n)
{
    void **p = calloc((size_t)n, sizeof *p);
    long i, got = 0;
    if (!p)
        return -1;
    for (i = 0; i < n && cudaMalloc(&p[i], 256) == cudaSuccess; i++)
        got++;
    for (i = 0; i < got; i++)
        cudaFree(p[i]);
    free(p);
    return got == n ? 0 : -1;
}

static int malloc_pairs(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = malloc(256);
        if (!p)
            return -1;
        sink = p;
        free(sink);
    }
    return 0;
}

/* Recurse to depth, then run the loop: every event has depth frames of this
 * function under it. */
__attribute__((noinline)) static int at_depth(int depth, int (*loop)(long), long n)
{
    int rc;
    if (depth > 1)
        rc = at_depth(depth - 1, loop, n);
    else
        rc = loop(n);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
    return rc;
}

int main(int argc, char **argv)
{
    int (*loop)(long);
    long n;
    int depth;
    double t0, t1;
    struct rusage ru;
    if (argc != 4 ||
        (strcmp(argv[1], "cuda") && strcmp(argv[1], "malloc") && strcmp(argv[1], "hold"))) {
        fprintf(stderr, "usage: preload_overhead cuda|malloc|hold N DEPTH\n");
        return 2;
    }
    loop = strcmp(argv[1], "cuda") == 0   ? cuda_pairs
           : strcmp(argv[1], "hold") == 0 ? hold_all
                                          : malloc_pairs;
    n = atol(argv[2]);
    depth = atoi(argv[3]);
    if (n <= 0 || depth <= 0)
        return 2;
    if (loop == cuda_pairs && cuda_pairs(1) != 0) /* runtime initialisation, not timed */
        return 3;
    t0 = now_ns();
    if (at_depth(depth, loop, n) != 0)
        return 3;
    t1 = now_ns();
    getrusage(RUSAGE_SELF, &ru);
    printf("pairs=%ld\nns_per_pair=%.1f\nmax_rss_kib=%ld\n", n, (t1 - t0) / (double)n,
           ru.ru_maxrss);
    return 0;
}
