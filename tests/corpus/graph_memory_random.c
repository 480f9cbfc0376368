/* graph_memory_random: seeded random CUDA graph memory nodes on several
 * threads, so that the report's accounting of the memory graph launches take
 * and free is held against the sim's ledger on patterns nobody chose. Each
 * thread, on its own stream, at random: captures a graph of stream-ordered
 * allocations (1 B to 256 MiB, cudaMallocAsync or cuMemAllocAsync), memsets
 * and frees of some of them; builds one with the driver's allocation and
 * free nodes, a free node sometimes freeing another graph's allocation;
 * instantiates a graph (with AUTO_FREE_ON_LAUNCH or not; a second executable
 * graph of a graph with memory nodes is refused); launches any executable
 * graph (a relaunch while an allocation is live is refused, a launch
 * without the memory runs out); frees a graph allocation outside graphs
 * (cudaFree, cudaFreeAsync, cuMemFree; live or not, refused when not); destroys executable
 * graphs and graphs; allocates and frees ordinary memory beside. What the
 * rules refuse is taken as it comes: the program checks each result is one
 * the call may return, it does not predict which.
 *
 *   corpus_graph_memory_random SEED [OPS]    OPS operations per thread (default 200)
 *
 * One mutex serializes the operations (graphs are not thread-safe objects).
 * Some graphs, executable graphs and allocations are left at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define WORKERS 3
#define GRAPHS 24
#define ADDRS 256
#define PLAIN 32

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int ops_per_thread = 200;
static unsigned long long seed;

/* Graphs made and not destroyed, each with its executable graph (or none). */
static struct graph {
    CUgraph g;
    CUgraphExec x;
} graphs[GRAPHS];
static size_t ngraphs;
/* Every allocation node's address made so far (live or not, its graph alive
 * or not: a free of a stale one is a bad free, which the program may do). */
static CUdeviceptr addrs[ADDRS];
static size_t naddrs;
/* Ordinary cudaMalloc'ed memory. */
static void *plain[PLAIN];
static size_t nplain;
static int launches, launch_refused, launch_oom;

static struct worker {
    cudaStream_t stream;
    unsigned long long rng;
} workers[WORKERS];

static unsigned next_rand(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(*s >> 33);
}

/* 1 B to 128 MiB, log-uniform; one in eight 64 to 256 MiB. */
static size_t some_size(struct worker *w)
{
    if (next_rand(&w->rng) % 8 == 0)
        return 64 * MiB + next_rand(&w->rng) % (192 * MiB);
    size_t size = (size_t)1 << (next_rand(&w->rng) % 27);
    return size + next_rand(&w->rng) % size;
}

static void remember(CUdeviceptr p)
{
    if (naddrs < ADDRS)
        addrs[naddrs++] = p;
}

static void keep_graph(CUgraph g)
{
    if (ngraphs < GRAPHS)
        graphs[ngraphs++] = (struct graph){g, NULL};
    else
        EXPECT(cuGraphDestroy(g), CUDA_SUCCESS);
}

/* A capture on w's stream of 1 to 5 stream-ordered allocations, a memset of
 * each, and frees of some. */
static void op_capture(struct worker *w)
{
    CUdeviceptr made[5];
    int n = 1 + (int)(next_rand(&w->rng) % 5);
    cudaGraph_t g = NULL;
    if (ngraphs == GRAPHS)
        return;
    EXPECT(cudaStreamBeginCapture(w->stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    for (int i = 0; i < n; i++) {
        size_t size = some_size(w);
        if (next_rand(&w->rng) % 2)
            EXPECT(cudaMallocAsync((void **)&made[i], size, w->stream), cudaSuccess);
        else
            EXPECT(cuMemAllocAsync(&made[i], size, (CUstream)w->stream), CUDA_SUCCESS);
        remember(made[i]);
        EXPECT(cudaMemsetAsync((void *)made[i], i, size < 4096 ? size : 4096, w->stream),
               cudaSuccess);
        if (next_rand(&w->rng) % 3 == 0)
            EXPECT(cudaFreeAsync((void *)made[i], w->stream), cudaSuccess);
    }
    EXPECT(cudaStreamEndCapture(w->stream, &g), cudaSuccess);
    keep_graph(g);
}

/* A graph of allocation nodes (1 to 4, each after the previous node), free
 * nodes of some, and now and then a free node of an earlier graph's
 * allocation (refused when no allocation node returned it any more). */
static void op_build(struct worker *w)
{
    CUgraph g;
    CUgraphNode last = NULL, n;
    int k = 1 + (int)(next_rand(&w->rng) % 4);
    if (ngraphs == GRAPHS)
        return;
    EXPECT(cuGraphCreate(&g, 0), CUDA_SUCCESS);
    for (int i = 0; i < k; i++) {
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.bytesize = some_size(w);
        EXPECT(cuGraphAddMemAllocNode(&n, g, last ? &last : NULL, last ? 1 : 0, &p), CUDA_SUCCESS);
        last = n;
        remember(p.dptr);
        if (next_rand(&w->rng) % 2) {
            EXPECT(cuGraphAddMemFreeNode(&n, g, &last, 1, p.dptr), CUDA_SUCCESS);
            last = n;
        }
    }
    if (naddrs && next_rand(&w->rng) % 4 == 0) {
        int rc = cuGraphAddMemFreeNode(&n, g, &last, 1, addrs[next_rand(&w->rng) % naddrs]);
        REQUIRE(rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_VALUE);
    }
    keep_graph(g);
}

static void op_instantiate(struct worker *w)
{
    if (!ngraphs)
        return;
    struct graph *gr = &graphs[next_rand(&w->rng) % ngraphs];
    CUgraphExec x;
    unsigned long long flags =
        next_rand(&w->rng) % 2 ? CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH : 0;
    int rc = cuGraphInstantiateWithFlags(&x, gr->g, flags);
    REQUIRE(rc == CUDA_SUCCESS || (rc == CUDA_ERROR_NOT_SUPPORTED && gr->x));
    if (rc == CUDA_SUCCESS)
        gr->x = x;
}

/* A launch: done, refused (an allocation still live, a free node's memory
 * not live) or out of memory. */
static void op_launch(struct worker *w)
{
    if (!ngraphs)
        return;
    struct graph *gr = &graphs[next_rand(&w->rng) % ngraphs];
    if (!gr->x)
        return;
    int rc = next_rand(&w->rng) % 2 ? (int)cudaGraphLaunch((cudaGraphExec_t)gr->x, w->stream)
                                    : (int)cuGraphLaunch(gr->x, (CUstream)w->stream);
    REQUIRE(rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_OUT_OF_MEMORY);
    launches += rc == CUDA_SUCCESS;
    launch_refused += rc == CUDA_ERROR_INVALID_VALUE;
    launch_oom += rc == CUDA_ERROR_OUT_OF_MEMORY;
    cudaGetLastError();
}

/* A free outside graphs of any allocation node's address: it frees the
 * memory when live and is refused when not (never launched, freed already or
 * gone: what an H200 answered, tests/gpu/README.md). */
static void op_free_outside(struct worker *w)
{
    if (!naddrs)
        return;
    CUdeviceptr p = addrs[next_rand(&w->rng) % naddrs];
    int how = (int)(next_rand(&w->rng) % 3);
    int rc = how == 0   ? (int)cudaFree((void *)p)
             : how == 1 ? (int)cudaFreeAsync((void *)p, w->stream)
                        : (int)cuMemFree(p);
    REQUIRE(rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_VALUE);
    cudaGetLastError();
}

static void op_destroy(struct worker *w)
{
    if (!ngraphs)
        return;
    size_t i = next_rand(&w->rng) % ngraphs;
    if (graphs[i].x) {
        EXPECT(cuGraphExecDestroy(graphs[i].x), CUDA_SUCCESS);
        graphs[i].x = NULL;
        if (next_rand(&w->rng) % 2)
            return; /* the graph stays, to be instantiated again */
    }
    EXPECT(cuGraphDestroy(graphs[i].g), CUDA_SUCCESS);
    graphs[i] = graphs[--ngraphs];
}

static void op_plain(struct worker *w)
{
    if (nplain && (nplain == PLAIN || next_rand(&w->rng) % 2)) {
        size_t i = next_rand(&w->rng) % nplain;
        int rc = cudaFree(plain[i]); /* a free outside graphs may have freed it */
        REQUIRE(rc == cudaSuccess || rc == cudaErrorInvalidValue);
        cudaGetLastError();
        plain[i] = plain[--nplain];
        return;
    }
    int rc = cudaMalloc(&plain[nplain], some_size(w));
    REQUIRE(rc == cudaSuccess || rc == cudaErrorMemoryAllocation);
    nplain += rc == cudaSuccess;
    cudaGetLastError();
}

static void *worker(void *arg)
{
    struct worker *w = &workers[(uintptr_t)arg];
    static void (*const ops[])(struct worker *) = {
        op_capture, op_build,        op_instantiate,  op_launch,  op_launch, op_launch,
        op_launch,  op_free_outside, op_free_outside, op_destroy, op_plain,  op_plain};
    EXPECT(cudaSetDevice(0), cudaSuccess);
    for (int i = 0; i < ops_per_thread; i++) {
        unsigned k = next_rand(&w->rng) % (sizeof ops / sizeof ops[0]);
        pthread_mutex_lock(&big);
        ops[k](w);
        pthread_mutex_unlock(&big);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    REQUIRE(argc >= 2);
    seed = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        ops_per_thread = atoi(argv[2]);
    for (int i = 0; i < WORKERS; i++) {
        EXPECT(cudaStreamCreateWithFlags(&workers[i].stream, cudaStreamNonBlocking), cudaSuccess);
        workers[i].rng = seed * 7919 + (unsigned long long)i;
    }
    corpus_run_threads(WORKERS, worker);
    printf("graph_memory_random: seed %llu, %d launches (%d refused, %d out of memory), %zu "
           "graphs and %zu plain allocations left at exit\n",
           seed, launches, launch_refused, launch_oom, ngraphs, nplain);
    return 0;
}
