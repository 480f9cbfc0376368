/* graph_pool: memory the driver's CUDA graph memory pool keeps, which no
 * allocation record shows (sim/README.md, "Graph memory nodes", after an
 * H200's answers to tests/gpu/probe_graphpool.c). On a 2 GiB device:
 *
 *   - 64 MiB held by cudaMalloc throughout, freed at the end;
 *   - a captured graph allocates 256 MiB and frees it: after its launch the
 *     pool keeps the 256 MiB (cudaMemGetInfo shows them taken);
 *   - a cudaMalloc of the free memory and 128 MiB more succeeds: the pool
 *     gives its kept memory back first (as the H200 did), and it is freed;
 *   - the graph is launched again (the pool keeps 256 MiB again);
 *   - a graph of two allocations of 5/8 of the free memory each is launched
 *     and runs out of memory (failure 1): the pool keeps the device's free
 *     memory, rounded down to 32 MiB, until the context ends;
 *   - after a trim (which gives back the 256 MiB, not the rest), a
 *     cudaMalloc of 512 MiB fails (failure 2), with the device almost all
 *     in the graph pool: no other process, no allocation of the
 *     program holds it. The report must not call that memory used outside
 *     the recording (its verdict was "external" before trace format 13) and
 *     must name the graph pool, with the bytes it kept.
 */
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "corpus.h"

static cudaStream_t s;

/* A captured graph of n allocations of bytes each, all held at once, then
 * freed; instantiated. */
static cudaGraphExec_t graph(size_t bytes, int n)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *p[2];
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    for (int i = 0; i < n; i++)
        EXPECT(cudaMallocAsync(&p[i], bytes, s), cudaSuccess);
    for (int i = 0; i < n; i++)
        EXPECT(cudaFreeAsync(p[i], s), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
    return x;
}

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    EXPECT(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
}

int main(void)
{
    void *held, *big, *late = NULL;
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT(cudaMalloc(&held, 64 * MiB), cudaSuccess);
    cudaGraphExec_t x = graph(256 * MiB, 1);
    size_t before = free_now();
    EXPECT(cudaGraphLaunch(x, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
    REQUIRE(free_now() <= before - 256 * MiB); /* kept by the pool */

    size_t f = free_now();
    EXPECT(cudaMalloc(&big, f + 128 * MiB), cudaSuccess); /* the pool gives it back */
    EXPECT(cudaFree(big), cudaSuccess);
    EXPECT(cudaGraphLaunch(x, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);

    f = free_now();
    cudaGraphExec_t y = graph((f / 8 * 5) & ~(2 * MiB - 1), 2);
    EXPECT(cudaGraphLaunch(y, s), cudaErrorMemoryAllocation);
    cudaGetLastError();
    REQUIRE(free_now() < 32 * MiB); /* what the failed launch left in the pool */
    EXPECT(cudaDeviceGraphMemTrim(0), cudaSuccess);
    EXPECT(cudaMalloc(&late, 512 * MiB), cudaErrorMemoryAllocation);
    cudaGetLastError();

    EXPECT(cudaGraphExecDestroy(y), cudaSuccess);
    EXPECT(cudaGraphExecDestroy(x), cudaSuccess);
    EXPECT(cudaFree(held), cudaSuccess);
    printf("graph_pool: ok\n");
    return 0;
}
