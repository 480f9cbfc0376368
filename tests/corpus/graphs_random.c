/* graphs_random: seeded random stream captures on several threads, so that
 * the report's bytes made during CUDA graph captures are held against the
 * sim's ledger and the program's own record on patterns nobody chose: each
 * thread begins captures on its stream in a random mode (global,
 * thread-local, relaxed), swaps its own capture mode now and then, allocates
 * (cudaMalloc, cuMemAlloc; 1 B to 8 MiB) and frees what any thread
 * allocated, both inside and outside its captures, enqueues memsets, ends
 * its captures and, when another thread's capture is relaxed, ends that one
 * (any thread may end a relaxed capture). What the capture modes forbid is
 * refused (cudaErrorStreamCaptureUnsupported, the capture invalidated) and
 * taken as it comes: the program records what happened, it does not
 * predict it.
 *
 *   corpus_graphs_random SEED [OPS]    OPS operations per thread (default 300)
 *
 * One mutex serializes every operation with its record, so the program's
 * order is the trace's. With CORPUS_CAPTURED set, each allocation appends
 * "a ADDRESS C" to that file, C 1 when its thread had a capture open that it
 * began (the report's rule, docs/report.md "CUDA graphs") else 0, in the
 * order of the allocations at each address (tests/ledger/check_captured.py).
 * Some captures are left open at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 4
#define POOL 256

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static FILE *captured_out;
static void *live[POOL];
static size_t nlive;
static int ops_per_thread = 300;
static unsigned long long seed;
static int cross_ends; /* captures ended by another thread than their own */

/* Each worker's stream and capture: open (begun and not ended) and its mode. */
static struct worker {
    cudaStream_t stream;
    int open;
    enum cudaStreamCaptureMode mode;
    unsigned long long rng;
} workers[WORKERS];

static unsigned next_rand(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(*s >> 33);
}

/* A cudaMalloc or cuMemAlloc of 1 B to 8 MiB; recorded when it succeeds. */
static void op_alloc(struct worker *w)
{
    size_t size = (size_t)1 << (next_rand(&w->rng) % 24);
    size += next_rand(&w->rng) % size;
    void *p = NULL;
    if (nlive == POOL)
        return;
    int rc = next_rand(&w->rng) % 2 ? (int)cudaMalloc(&p, size)
                                    : (int)cuMemAlloc((CUdeviceptr *)&p, size);
    REQUIRE(rc == 0 || rc == cudaErrorStreamCaptureUnsupported ||
            rc == cudaErrorStreamCaptureImplicit || rc == cudaErrorMemoryAllocation);
    if (rc != 0)
        return;
    live[nlive++] = p;
    if (captured_out)
        fprintf(captured_out, "a %llx %d\n", (unsigned long long)(uintptr_t)p, w->open);
}

/* A free of any thread's allocation; kept when the capture forbids it. */
static void op_free(struct worker *w)
{
    if (!nlive)
        return;
    size_t i = next_rand(&w->rng) % nlive;
    int rc = (int)cudaFree(live[i]);
    REQUIRE(rc == 0 || rc == cudaErrorStreamCaptureUnsupported ||
            rc == cudaErrorStreamCaptureImplicit);
    if (rc == 0)
        live[i] = live[--nlive];
}

static void op_begin(struct worker *w)
{
    static const enum cudaStreamCaptureMode modes[] = {
        cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed,
        cudaStreamCaptureModeRelaxed};
    if (w->open)
        return;
    w->mode = modes[next_rand(&w->rng) % 4];
    int rc = (int)cudaStreamBeginCapture(w->stream, w->mode);
    REQUIRE(rc == 0 || rc == cudaErrorStreamCaptureImplicit);
    w->open = rc == 0;
}

/* Ends the capture of worker v (open) from this thread: a graph, or the
 * capture reported invalidated, ends it; refused from the wrong thread, it
 * stays open. */
static void end_of(struct worker *v)
{
    cudaGraph_t g = NULL;
    int rc = (int)cudaStreamEndCapture(v->stream, &g);
    REQUIRE(rc == 0 || rc == cudaErrorStreamCaptureInvalidated ||
            rc == cudaErrorStreamCaptureWrongThread);
    if (rc == cudaErrorStreamCaptureWrongThread)
        return;
    v->open = 0;
    if (g)
        EXPECT(cudaGraphDestroy(g), cudaSuccess);
    (void)cudaGetLastError();
}

/* Half the time another thread's relaxed capture when there is one, else
 * this thread's own. */
static void op_end(struct worker *w)
{
    size_t k = next_rand(&w->rng) % WORKERS;
    for (size_t i = 0; i < WORKERS && next_rand(&w->rng) % 2; i++) {
        struct worker *v = &workers[(k + i) % WORKERS];
        if (v != w && v->open && v->mode == cudaStreamCaptureModeRelaxed) {
            end_of(v);
            cross_ends += !v->open;
            return;
        }
    }
    if (w->open)
        end_of(w);
}

static void op_other(struct worker *w)
{
    if (next_rand(&w->rng) % 2 && nlive) {
        int rc = (int)cudaMemsetAsync(live[0], 1, 1, w->stream);
        REQUIRE(rc == 0 || rc == cudaErrorStreamCaptureInvalidated ||
                rc == cudaErrorIllegalAddress || rc == cudaErrorInvalidValue);
        (void)cudaGetLastError();
        return;
    }
    enum cudaStreamCaptureMode m =
        next_rand(&w->rng) % 2 ? cudaStreamCaptureModeRelaxed : cudaStreamCaptureModeGlobal;
    EXPECT(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
}

static void *worker(void *arg)
{
    struct worker *w = &workers[(size_t)arg];
    EXPECT(cudaSetDevice(0), cudaSuccess);
    for (int i = 0; i < ops_per_thread; i++) {
        unsigned r;
        pthread_mutex_lock(&big);
        r = next_rand(&w->rng) % 100;
        if (r < 35)
            op_alloc(w);
        else if (r < 60)
            op_free(w);
        else if (r < 72)
            op_begin(w);
        else if (r < 86)
            op_end(w);
        else
            op_other(w);
        pthread_mutex_unlock(&big);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[WORKERS];
    seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    if (argc > 2)
        ops_per_thread = atoi(argv[2]);
    const char *path = getenv("CORPUS_CAPTURED");
    captured_out = path ? fopen(path, "w") : NULL;
    REQUIRE(!path || captured_out);
    EXPECT(cudaFree(NULL), cudaSuccess); /* the context, before any capture */
    for (size_t i = 0; i < WORKERS; i++) {
        workers[i].rng = seed * 1000003u + i;
        EXPECT(cudaStreamCreateWithFlags(&workers[i].stream, cudaStreamNonBlocking), cudaSuccess);
    }
    for (size_t i = 0; i < WORKERS; i++)
        REQUIRE(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
    for (size_t i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    int open = 0;
    for (size_t i = 0; i < WORKERS; i++)
        open += workers[i].open;
    printf("graphs_random: seed %llu, %zu allocations live at exit, %d captures left open, %d "
           "ended by another thread\n",
           seed, nlive, open, cross_ends);
    if (captured_out)
        fclose(captured_out);
    return 0;
}
