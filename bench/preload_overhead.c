/* preload_overhead: allocate/free pairs (or allocations never freed) issued
 * at call depth DEPTH (a noinline recursive helper), for the recording
 * benchmark (bench/perf.py). The benchmark times the whole process from
 * outside at two sizes; the pairs are also timed inside the program.
 *
 * usage: preload_overhead cuda|malloc|live|hold|storm|mlive N DEPTH [THREADS]
 *   cuda    N cudaMalloc/cudaFree pairs of 256 bytes (on the simulated device)
 *   malloc  N malloc/free pairs of 256 bytes (the same shape for heaptrack)
 *   live    N cudaMalloc of 256 bytes, never freed (memory per live allocation)
 *   hold    N cudaMalloc of 256 bytes all live at once, then freed
 *   storm   about N malloc and free events in the report benchmark's storm
 *           shape (tests/report/storm_shape.h), for heaptrack_print
 *   mlive   N malloc of 256 bytes, never freed (live's shape for heaptrack)
 *   THREADS (default 1) threads each issue N / THREADS of them, each its own.
 * Prints "pairs=<N>", "ns_per_pair=<float>" (wall ns inside the program
 * per pair or allocation, all threads together) and "max_rss_kib=<n>" (the
 * process's peak resident memory, getrusage) on stdout. Exit 2 on bad
 * usage, 3 when an allocation fails. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "storm_shape.h"

#define MAX_THREADS 256

typedef struct job {
    int (*loop)(long);
    long n;
    int depth;
    int rc;
} job;

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

static int malloc_pairs(long n)
{
    for (long i = 0; i < n; i++) {
        void *volatile p = malloc(256); /* volatile: the pair is not elided */
        if (!p)
            return -1;
        free(p);
    }
    return 0;
}

static int cuda_live(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256) != cudaSuccess)
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

/* The storm's call sites: VT_STORM_SITES distinct stacks, storm_mid[s %
 * STORM_MIDS] calling storm_leaf[s / STORM_MIDS]. noipa: no two are merged
 * into one; the barrier after each call keeps its frame (no tail call). */
#define STORM_MIDS 10
#define STORM_LEAVES (VT_STORM_SITES / STORM_MIDS)
_Static_assert(VT_STORM_SITES % STORM_MIDS == 0, "sites are mids times leaves");
#define LEAF(i)                                                                                    \
    __attribute__((noipa)) static void *storm_leaf##i(size_t n)                                    \
    {                                                                                              \
        void *p = malloc(n);                                                                       \
        __asm__ volatile("" ::"r"(i) : "memory");                                                  \
        return p;                                                                                  \
    }
/* the list's layout is by hand: clang-format does not settle on one */
/* clang-format off */
#define LEAVES(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) \
    X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)
/* clang-format on */
LEAVES(LEAF)
#define LEAF_ADDR(i) storm_leaf##i,
static void *(*const storm_leaf[])(size_t) = {LEAVES(LEAF_ADDR)};
_Static_assert(sizeof storm_leaf / sizeof storm_leaf[0] == STORM_LEAVES, "one leaf per index");
#define MID(i)                                                                                     \
    __attribute__((noipa)) static void *storm_mid##i(unsigned leaf, size_t n)                      \
    {                                                                                              \
        void *p = storm_leaf[leaf](n);                                                             \
        __asm__ volatile("" ::"r"(i) : "memory");                                                  \
        return p;                                                                                  \
    }
#define MIDS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
MIDS(MID)
#define MID_ADDR(i) storm_mid##i,
static void *(*const storm_mid[])(unsigned, size_t) = {MIDS(MID_ADDR)};
_Static_assert(sizeof storm_mid / sizeof storm_mid[0] == STORM_MIDS, "one mid per index");

/* The storm of about n events (storm_shape.h; counted as gen.c's vtg_big
 * counts them: two per iteration, one per leak). 64 sizes from 512 bytes to
 * 4.5 KiB, where the trace's are any of 4 M sizes up to 4 MiB: glibc's heap
 * rather than an mmap per allocation, and heaptrack 1.4's interpreter, given
 * a size per byte count up to 4 KiB at 200 sites, grew past 18 GiB by 400 k
 * events and died (std::bad_alloc). */
static int malloc_storm(long n)
{
    void **live = calloc(VT_STORM_LIVE, sizeof *live);
    uint64_t seed = VT_STORM_SEED;
    if (!live)
        return -1;
    for (long done = 0; done < n;) {
        for (int k = 0; k < VT_STORM_BLOCK && done < n; k++, done += 2) {
            uint64_t slot = vt_storm_next(&seed) % VT_STORM_LIVE;
            free(live[slot]);
            unsigned site = (unsigned)(vt_storm_next(&seed) % VT_STORM_SITES);
            size_t size = 512 + vt_storm_next(&seed) % 64 * 64;
            if (!(live[slot] = storm_mid[site % STORM_MIDS](site / STORM_MIDS, size)))
                return -1;
        }
        void *volatile leak = malloc(1024); /* the slow leak */
        if (!leak)
            return -1;
        done += 1;
    }
    return 0; /* the live ones stay live, as the trace's */
}

static int malloc_live(long n)
{
    void **p = calloc((size_t)n, sizeof *p);
    if (!p)
        return -1;
    for (long i = 0; i < n; i++)
        if (!(p[i] = malloc(256)))
            return -1;
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

static void *run_job(void *arg)
{
    job *j = arg;
    j->rc = at_depth(j->depth, j->loop, j->n);
    return NULL;
}

/* Runs the loop in `threads` threads, each n / threads iterations (the
 * first takes the remainder). Returns 0, or -1 when one failed. */
static int run_threads(int (*loop)(long), long n, int depth, int threads)
{
    pthread_t tid[MAX_THREADS];
    job jobs[MAX_THREADS];
    int rc = 0;
    for (int i = 0; i < threads; i++)
        jobs[i] = (job){loop, n / threads + (i == 0 ? n % threads : 0), depth, 0};
    if (threads == 1)
        return at_depth(depth, loop, n);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, run_job, &jobs[i]) != 0)
            return -1;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        rc |= jobs[i].rc;
    }
    return rc;
}

static int (*mode_loop(const char *mode))(long)
{
    if (!strcmp(mode, "cuda"))
        return cuda_pairs;
    if (!strcmp(mode, "malloc"))
        return malloc_pairs;
    if (!strcmp(mode, "live"))
        return cuda_live;
    if (!strcmp(mode, "hold"))
        return hold_all;
    if (!strcmp(mode, "storm"))
        return malloc_storm;
    if (!strcmp(mode, "mlive"))
        return malloc_live;
    return NULL;
}

int main(int argc, char **argv)
{
    int (*loop)(long) = argc >= 4 ? mode_loop(argv[1]) : NULL;
    long n = argc >= 4 ? atol(argv[2]) : 0;
    int depth = argc >= 4 ? atoi(argv[3]) : 0;
    int threads = argc >= 5 ? atoi(argv[4]) : 1;
    double t0, t1;
    struct rusage ru;
    if (!loop || argc > 5 || n <= 0 || depth <= 0 || threads <= 0 || threads > MAX_THREADS) {
        fprintf(stderr,
                "usage: preload_overhead cuda|malloc|live|hold|storm|mlive N DEPTH [THREADS]\n");
        return 2;
    }
    bool host = loop == malloc_pairs || loop == malloc_storm || loop == malloc_live;
    if (!host && cuda_pairs(1) != 0) /* runtime initialisation, not timed */
        return 3;
    t0 = now_ns();
    if (run_threads(loop, n, depth, threads) != 0)
        return 3;
    t1 = now_ns();
    getrusage(RUSAGE_SELF, &ru);
    printf("pairs=%ld\nns_per_pair=%.1f\nmax_rss_kib=%ld\n", n, (t1 - t0) / (double)n,
           ru.ru_maxrss);
    return 0;
}
