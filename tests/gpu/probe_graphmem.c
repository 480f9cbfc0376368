/* probe_graphmem: what a real driver answers where the simulated device's
 * graph memory nodes follow its own choice, not the documentation
 * (sim/README.md, "Graph memory nodes"): a free of a graph allocation's
 * address that was never launched, a second instantiation, memory left live
 * after the executable graph and the graph are destroyed, the device's free
 * memory and the graph memory attributes after a launch, a free and a trim
 * (does freed graph memory stay reserved?), two allocations held at once
 * that do not fit, and cudaFreeAsync of ordinary memory inside a capture.
 * Prints one line per answer; returns 0. An H200's answers are in
 * h200-2026-11-30/probe_graphmem.txt (session 30), which probe_sim.py
 * compares the simulated device's with. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define MiB ((size_t)1 << 20)

static cudaStream_t s;

static long long free_mib(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return (long long)(f / MiB);
}

static void attrs(const char *when)
{
    unsigned long long used = 0, res = 0;
    int e1 = cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used);
    int e2 = cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &res);
    printf("%s: rc %d %d used %llu MiB reserved %llu MiB free %lld MiB\n", when, e1, e2, used / MiB,
           res / MiB, free_mib());
}

/* A graph captured on s: cudaMallocAsync of bytes and a memset, not freed. */
static cudaGraph_t capture(size_t bytes, void **p)
{
    cudaGraph_t g = NULL;
    int e1 = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    int e2 = cudaMallocAsync(p, bytes, s);
    int e3 = cudaMemsetAsync(*p, 0x5a, bytes, s);
    int e4 = cudaStreamEndCapture(s, &g);
    printf("capture %zu MiB: rc %d %d %d %d\n", bytes / MiB, e1, e2, e3, e4);
    return g;
}

static void never_launched(void)
{
    void *p = NULL;
    cudaGraphExec_t x = NULL, x2 = NULL;
    cudaGraph_t g = capture(64 * MiB, &p);
    printf("instantiate: rc %d\n", cudaGraphInstantiate(&x, g, 0));
    printf("second instantiate: rc %d\n", cudaGraphInstantiate(&x2, g, 0));
    printf("free never launched: rc %d sync %d\n", cudaFreeAsync(p, s), cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    printf("launch after that free: rc %d sync %d\n", cudaGraphLaunch(x, s),
           cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    attrs("after launch");
    printf("relaunch while live: rc %d\n", cudaGraphLaunch(x, s));
    (void)cudaGetLastError();
    printf("destroy exec %d graph %d\n", cudaGraphExecDestroy(x), cudaGraphDestroy(g));
    if (x2)
        printf("destroy second exec %d\n", cudaGraphExecDestroy(x2));
    attrs("after destroy, memory live");
    printf("free after destroy: rc %d sync %d\n", cudaFreeAsync(p, s), cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    attrs("after free");
    printf("free again: rc %d sync %d\n", cudaFreeAsync(p, s), cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    printf("trim: rc %d\n", cudaDeviceGraphMemTrim(0));
    attrs("after trim");
}

/* Two allocation nodes held at once, each `num`/`den` of the free memory. */
static void two_at_once(size_t num, size_t den)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    size_t each = (f / den * num) & ~(2 * MiB - 1);
    CUgraph g;
    CUgraphNode n1, n2, n3, n4;
    CUgraphExec x;
    CUdeviceptr a = 0, b = 0;
    CUDA_MEM_ALLOC_NODE_PARAMS prm = {0};
    prm.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    prm.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prm.bytesize = each;
    cuGraphCreate(&g, 0);
    int e1 = cuGraphAddMemAllocNode(&n1, g, NULL, 0, &prm);
    a = prm.dptr;
    int e2 = cuGraphAddMemAllocNode(&n2, g, &n1, 1, &prm);
    b = prm.dptr;
    int e3 = cuGraphAddMemFreeNode(&n3, g, &n2, 1, a);
    int e4 = cuGraphAddMemFreeNode(&n4, g, &n3, 1, b);
    int e5 = cuGraphInstantiate(&x, g, 0);
    int e6 = cuGraphLaunch(x, (CUstream)s);
    int e7 = cuStreamSynchronize((CUstream)s);
    (void)cudaGetLastError();
    unsigned long long high = 0;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high);
    printf("two at once, each %zu/%zu of free %zu MiB (%zu MiB): rc %d %d %d %d %d launch %d "
           "sync %d high %llu MiB free after %lld MiB\n",
           num, den, f / MiB, each / MiB, e1, e2, e3, e4, e5, e6, e7, high / MiB, free_mib());
    cuGraphExecDestroy(x);
    cuGraphDestroy(g);
    cudaDeviceGraphMemTrim(0);
}

static void free_ordinary_in_capture(void)
{
    void *p = NULL;
    cudaGraph_t g = NULL;
    int e0 = cudaMalloc(&p, 2 * MiB);
    int e1 = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    int e2 = cudaFreeAsync(p, s);
    int e3 = cudaStreamEndCapture(s, &g);
    (void)cudaGetLastError();
    printf("cudaFreeAsync of cudaMalloc memory in a capture: rc %d %d %d end %d graph %d\n", e0, e1,
           e2, e3, g != NULL);
    if (g)
        cudaGraphDestroy(g);
    printf("cudaFree after: rc %d\n", cudaFree(p));
}

int main(void)
{
    printf("stream: rc %d\n", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    attrs("start");
    never_launched();
    two_at_once(51, 100);
    two_at_once(5, 8);
    free_ordinary_in_capture();
    attrs("end");
    return 0;
}
