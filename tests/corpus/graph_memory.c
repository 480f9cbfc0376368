/* graph_memory: CUDA graph memory nodes (the CUDA Programming Guide, "Graph
 * memory nodes"). Memory is taken when a launch runs an allocation node, not
 * when the node is made, so what a profiler must show is each launch's
 * allocations and frees (tests/corpus/README.md). On a 2 GiB device:
 *
 *   - 64 MiB held by cudaMalloc throughout, freed at the end;
 *   - g1, captured: cudaMallocAsync of 100 MiB, a memset, cudaFreeAsync,
 *     launched 5 times (5 allocations and 5 frees of 100 MiB);
 *   - g2, captured: cudaMallocAsync of 8 MiB not freed in the graph: a
 *     launch, a relaunch refused while it is live, cudaFreeAsync outside
 *     the graph, a launch again; left allocated at exit (the leak);
 *   - g3, driver API: cuGraphAddMemAllocNode of 16 MiB, instantiated with
 *     AUTO_FREE_ON_LAUNCH, launched 3 times (each frees the last one's),
 *     then freed with cuMemFree;
 *   - g5: 300 MiB allocated and freed, then 500 MiB allocated (a node made
 *     by cuGraphAddNode) and freed: its launch is the run's peak, 64 + 8 +
 *     500 MiB, whose top site is that node's maker, generic_alloc_node;
 *   - g6: captured and instantiated, never launched: cudaFreeAsync of its
 *     allocation's address fails (INVALID_VALUE, as on an H200): the
 *     report's one failed free, at a graph allocation node's address;
 *   - g4: after a trim of the graph pool, two allocation nodes held at
 *     once, each 5/8 of the free memory: last, the launch runs out of
 *     memory (one failed allocation of both nodes' bytes, nothing
 *     allocated; on any device size).
 * The graph pool's high watermark is 864 MiB, on an H200 as on the sim
 * (sim/README.md, "Graph memory nodes": each live allocation holds its
 * bytes rounded up to 32 MiB, freed memory stays reserved, and a launch
 * reserves all its allocations at once): g1's 128, which g2's 32 and g3's
 * 32 reuse, and g5's 320 + 512 less the 96 the pool has free (a's 32 live).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <string.h>

#include "corpus.h"

static cudaStream_t s;

/* A graph captured on s: cudaMallocAsync of bytes, a memset of it, and a
 * cudaFreeAsync when `free_it`; the allocation's address in *p. */
static cudaGraph_t capture(size_t bytes, bool free_it, void **p)
{
    cudaGraph_t g;
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT(cudaMallocAsync(p, bytes, s), cudaSuccess);
    EXPECT(cudaMemsetAsync(*p, 0x5a, bytes, s), cudaSuccess);
    if (free_it)
        EXPECT(cudaFreeAsync(*p, s), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    return g;
}

static void launch(cudaGraphExec_t x, cudaError_t want)
{
    EXPECT(cudaGraphLaunch(x, s), want);
    cudaGetLastError();
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
}

/* An allocation node of bytes on device 0 after the ndeps nodes deps. */
static CUgraphNode alloc_node(CUgraph g, const CUgraphNode *deps, size_t ndeps, size_t bytes,
                              CUdeviceptr *p)
{
    CUDA_MEM_ALLOC_NODE_PARAMS prm;
    CUgraphNode n;
    memset(&prm, 0, sizeof prm);
    prm.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    prm.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prm.poolProps.location.id = 0;
    prm.bytesize = bytes;
    EXPECT(cuGraphAddMemAllocNode(&n, g, deps, ndeps, &prm), CUDA_SUCCESS);
    *p = prm.dptr;
    return n;
}

/* The same through the generic cuGraphAddNode (cuda.h's cuGraphAddNode_v2). */
__attribute__((noinline)) static CUgraphNode generic_alloc_node(CUgraph g, const CUgraphNode *dep,
                                                                size_t bytes, CUdeviceptr *p)
{
    CUgraphNodeParams prm;
    CUgraphNode n;
    memset(&prm, 0, sizeof prm);
    prm.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    prm.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    prm.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prm.alloc.poolProps.location.id = 0;
    prm.alloc.bytesize = bytes;
    EXPECT(cuGraphAddNode(&n, g, dep, NULL, 1, &prm), CUDA_SUCCESS);
    *p = prm.alloc.dptr;
    return n;
}

/* A graph that allocates a, frees it, then allocates b (by cuGraphAddNode)
 * and frees it, or holds a and b at once (at_once). */
static CUgraph two_allocations(size_t a, size_t b, bool at_once)
{
    CUgraph g;
    CUgraphNode n1, n2, n3;
    CUdeviceptr pa, pb;
    EXPECT(cuGraphCreate(&g, 0), CUDA_SUCCESS);
    n1 = alloc_node(g, NULL, 0, a, &pa);
    if (at_once) {
        n2 = generic_alloc_node(g, &n1, b, &pb);
        EXPECT(cuGraphAddMemFreeNode(&n3, g, &n2, 1, pa), CUDA_SUCCESS);
        EXPECT(cuGraphAddMemFreeNode(&n1, g, &n3, 1, pb), CUDA_SUCCESS);
    } else {
        EXPECT(cuGraphAddMemFreeNode(&n2, g, &n1, 1, pa), CUDA_SUCCESS);
        n3 = generic_alloc_node(g, &n2, b, &pb);
        EXPECT(cuGraphAddMemFreeNode(&n1, g, &n3, 1, pb), CUDA_SUCCESS);
    }
    return g;
}

int main(void)
{
    void *held, *x, *a;
    cudaGraph_t g1, g2;
    cudaGraphExec_t x1, x2;
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT(cudaMalloc(&held, 64 * MiB), cudaSuccess);

    g1 = capture(100 * MiB, true, &x);
    EXPECT(cudaGraphInstantiate(&x1, g1, 0), cudaSuccess);
    for (int i = 0; i < 5; i++)
        launch(x1, cudaSuccess);

    g2 = capture(8 * MiB, false, &a);
    EXPECT(cudaGraphInstantiate(&x2, g2, 0), cudaSuccess);
    launch(x2, cudaSuccess);
    launch(x2, cudaErrorInvalidValue); /* a's memory is still live */
    EXPECT(cudaFreeAsync(a, s), cudaSuccess);
    launch(x2, cudaSuccess);

    CUgraph g3;
    CUgraphExec x3;
    CUdeviceptr b;
    EXPECT(cuGraphCreate(&g3, 0), CUDA_SUCCESS);
    alloc_node(g3, NULL, 0, 16 * MiB, &b);
    EXPECT(cuGraphInstantiateWithFlags(&x3, g3, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
           CUDA_SUCCESS);
    for (int i = 0; i < 3; i++)
        EXPECT(cuGraphLaunch(x3, (CUstream)s), CUDA_SUCCESS);
    EXPECT(cuGraphExecDestroy(x3), CUDA_SUCCESS);
    EXPECT(cuGraphDestroy(g3), CUDA_SUCCESS);
    EXPECT(cuMemFree(b), CUDA_SUCCESS);

    CUgraph g5 = two_allocations(300 * MiB, 500 * MiB, false);
    CUgraphExec x5;
    EXPECT(cuGraphInstantiate(&x5, g5, 0), CUDA_SUCCESS);
    EXPECT(cuGraphLaunch(x5, (CUstream)s), CUDA_SUCCESS);

    unsigned long long high = 0;
    EXPECT(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high), cudaSuccess);
    REQUIRE_EQ(high, 864 * MiB); /* the file's comment */

    EXPECT(cuGraphExecDestroy(x5), CUDA_SUCCESS);
    EXPECT(cuGraphDestroy(g5), CUDA_SUCCESS);

    /* g6: never launched, so freeing its allocation's address fails */
    void *never;
    cudaGraph_t g6 = capture(4 * MiB, false, &never);
    cudaGraphExec_t x6;
    EXPECT(cudaGraphInstantiate(&x6, g6, 0), cudaSuccess);
    EXPECT(cudaFreeAsync(never, s), cudaErrorInvalidValue);
    cudaGetLastError();
    EXPECT(cudaGraphExecDestroy(x6), cudaSuccess);
    EXPECT(cudaGraphDestroy(g6), cudaSuccess);
    size_t f = 0, t = 0, half;
    EXPECT(cudaDeviceGraphMemTrim(0), cudaSuccess);
    EXPECT(cudaMemGetInfo(&f, &t), cudaSuccess);
    /* two do not fit; by a wide margin, as the H200 granted two of half
     * the free memory and 2 MiB each (its free figure is not all it has).
     * Last: on the H200 the failed launch left almost all the device
     * reserved by the graph pool (sim/README.md, "Graph memory nodes"). */
    half = (f / 8 * 5) & ~(2 * MiB - 1);
    CUgraph g4 = two_allocations(half, half, true);
    CUgraphExec x4;
    EXPECT(cuGraphInstantiate(&x4, g4, 0), CUDA_SUCCESS);
    EXPECT(cuGraphLaunch(x4, (CUstream)s), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cuGraphExecDestroy(x4), CUDA_SUCCESS);
    EXPECT(cuGraphDestroy(g4), CUDA_SUCCESS);
    EXPECT(cudaGraphExecDestroy(x1), cudaSuccess);
    EXPECT(cudaGraphDestroy(g1), cudaSuccess);
    EXPECT(cudaGraphExecDestroy(x2), cudaSuccess);
    EXPECT(cudaGraphDestroy(g2), cudaSuccess); /* a stays allocated: the leak */
    EXPECT(cudaFree(held), cudaSuccess);
    printf("graph_memory: ok\n");
    return 0;
}
