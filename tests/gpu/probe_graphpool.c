/* probe_graphpool: how a real driver's graph memory pool holds memory, which
 * the simulated device does not model (sim/README.md, "Graph memory nodes"):
 * probe_graphmem showed on an H200 (session 30) that freed graph memory
 * stays reserved until cudaDeviceGraphMemTrim, that a launch that ran out of
 * memory left almost the whole device reserved, and a high watermark of
 * 864 MiB where the program held at most 508 MiB at once. Written in session
 * 30 for the next GPU session (tests/gpu/smoke.sh runs it), not yet run on a
 * GPU: relaunches of one graph, two graphs one after the other, an
 * allocation after a freed one in one launch, whether cudaMalloc gets the
 * memory the graph pool keeps (does the driver trim by itself when a
 * cudaMalloc needs it?), and what a trim gives back after a launch ran out
 * of memory. One line per step: the graph memory attributes and the
 * device's free memory in MiB; returns 0. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define MiB ((size_t)1 << 20)

static cudaStream_t s;

static void show(const char *step, int rc)
{
    unsigned long long used = 0, res = 0, used_high = 0, res_high = 0;
    size_t f = 0, t = 0;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &res);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used_high);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &res_high);
    cudaMemGetInfo(&f, &t);
    printf("%s: rc %d used %llu reserved %llu used_high %llu reserved_high %llu free %zu\n", step,
           rc, used / MiB, res / MiB, used_high / MiB, res_high / MiB, f / MiB);
}

/* A graph of `n` allocations of the sizes given (MiB), each freed in the
 * graph after the next is made, or before it when `before`; `keep`: the
 * last is not freed in the graph (its address in *last). */
static cudaGraphExec_t graph(const size_t *mib, int n, int keep, void **last, int before)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    void *p[8] = {0};
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < n; i++) {
        if (i > 0 && before)
            cudaFreeAsync(p[i - 1], s);
        cudaMallocAsync(&p[i], mib[i] * MiB, s);
        cudaMemsetAsync(p[i], 1, mib[i] * MiB, s);
        if (i > 0 && !before)
            cudaFreeAsync(p[i - 1], s);
    }
    if (!keep)
        cudaFreeAsync(p[n - 1], s);
    int rc = cudaStreamEndCapture(s, &g);
    int rc2 = cudaGraphInstantiate(&x, g, 0);
    if (rc || rc2)
        printf("graph: rc %d %d\n", rc, rc2);
    cudaGraphDestroy(g);
    if (last)
        *last = p[n - 1];
    return x;
}

static int launch(cudaGraphExec_t x)
{
    int rc = cudaGraphLaunch(x, s);
    int rc2 = cudaStreamSynchronize(s);
    cudaGetLastError();
    return rc ? rc : rc2;
}

int main(void)
{
    char name[64];
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    show("start", 0);
    size_t a64[] = {64};
    cudaGraphExec_t x1 = graph(a64, 1, 0, NULL, 0);
    for (int i = 1; i <= 3; i++) {
        snprintf(name, sizeof name, "relaunch %d of 64 alloc+free", i);
        show(name, launch(x1));
    }
    cudaGraphExec_t x2 = graph(a64, 1, 0, NULL, 0);
    show("a second graph's 64 alloc+free", launch(x2));
    void *kept = NULL;
    cudaGraphExec_t x3 = graph(a64, 1, 1, &kept, 0);
    show("a third graph's 64 kept", launch(x3));
    show("its free outside", cudaFreeAsync(kept, s) ? 1 : cudaStreamSynchronize(s));
    show("its relaunch", launch(x3));
    show("its free again", cudaFreeAsync(kept, s) ? 1 : cudaStreamSynchronize(s));
    size_t chain[] = {300, 500};
    cudaGraphExec_t x4 = graph(chain, 2, 0, NULL, 0);
    show("300 and 500 held at once in one launch", launch(x4));
    show("trim", cudaDeviceGraphMemTrim(0));
    cudaGraphExec_t x7 = graph(chain, 2, 0, NULL, 1);
    show("300 freed before 500 in one launch", launch(x7));
    show("trim", cudaDeviceGraphMemTrim(0));
    /* the pool keeps 1 GiB; then a cudaMalloc of the device's free memory
     * and half of what the pool keeps */
    size_t g1[] = {1024};
    cudaGraphExec_t x5 = graph(g1, 1, 0, NULL, 0);
    show("1024 alloc+free", launch(x5));
    size_t f = 0, t = 0;
    void *big = NULL;
    cudaMemGetInfo(&f, &t);
    int rc = cudaMalloc(&big, f + 512 * MiB);
    cudaGetLastError();
    show("cudaMalloc of free + 512 while the pool keeps 1024", rc);
    if (!rc)
        cudaFree(big);
    show("trim", cudaDeviceGraphMemTrim(0));
    /* a launch out of memory, then a trim and a cudaMalloc of half the device */
    cudaMemGetInfo(&f, &t);
    size_t half = (f / MiB) * 51 / 100, two[] = {half, half};
    cudaGraph_t g = NULL;
    cudaGraphExec_t x6 = NULL;
    void *p = NULL, *q = NULL;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&p, two[0] * MiB, s);
    cudaMallocAsync(&q, two[1] * MiB, s);
    cudaFreeAsync(p, s);
    cudaFreeAsync(q, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&x6, g, 0);
    show("two of 51 % at once", launch(x6));
    cudaGraphExecDestroy(x6);
    cudaGraphDestroy(g);
    show("trim after it", cudaDeviceGraphMemTrim(0));
    rc = cudaMalloc(&big, half * MiB);
    cudaGetLastError();
    show("cudaMalloc of 51 % after it", rc);
    if (!rc)
        cudaFree(big);
    cudaGraphExecDestroy(x1);
    cudaGraphExecDestroy(x2);
    cudaGraphExecDestroy(x3);
    cudaGraphExecDestroy(x4);
    cudaGraphExecDestroy(x5);
    cudaGraphExecDestroy(x7);
    show("end", cudaDeviceGraphMemTrim(0));
    return 0;
}
