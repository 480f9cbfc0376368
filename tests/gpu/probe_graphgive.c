/* probe_graphgive: which allocation calls make a real driver's graph memory
 * pool give back the memory it keeps (tests/gpu/probe_graphpool.c showed
 * that a cudaMalloc of more than the free memory succeeds while the pool
 * keeps enough, and empties the pool). Written in session 31 for the sim's
 * model (sim/README.md, "Graph memory nodes"): for each call, the pool first
 * keeps 1024 MiB (a graph allocating and freeing it, launched once), then
 * the call asks for the device's free memory and 512 MiB more, and the line
 * shows its result and the pool's state after it; what the call got is
 * freed and the pool trimmed before the next. An H200's answers (session 31,
 * h200-2026-11-30b/probe_graphgive.txt): cudaMalloc gets it (the pool gives
 * way); cudaMallocAsync and cuMemCreate fail with out of memory, the pool
 * emptied all the same; cudaMallocManaged succeeds and the pool keeps its
 * memory. One line per step: the graph
 * memory attributes and the device's free memory in MiB; returns 0. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static cudaStream_t s;

static void show(const char *step, int rc)
{
    unsigned long long used = 0, res = 0;
    size_t f = 0, t = 0;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &res);
    cudaMemGetInfo(&f, &t);
    printf("%s: rc %d used %llu reserved %llu free %zu\n", step, rc, used / MiB, res / MiB,
           f / MiB);
}

/* A graph that allocates and frees 1024 MiB, launched: the pool keeps it. */
static void keep_1024(void)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    void *p = NULL;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&p, 1024 * MiB, s);
    cudaFreeAsync(p, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&x, g, 0);
    cudaGraphLaunch(x, s);
    cudaStreamSynchronize(s);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    show("the pool keeps 1024", 0);
}

static size_t want(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return f + 512 * MiB;
}

/* After a call: its work done, its error cleared, the pool trimmed. */
static void done(void)
{
    cudaStreamSynchronize(s);
    cudaGetLastError();
    cudaDeviceGraphMemTrim(0);
}

int main(void)
{
    void *p = NULL;
    int rc;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    show("start", 0);

    keep_1024();
    rc = cudaMalloc(&p, want());
    show("cudaMalloc of free + 512", rc);
    if (!rc)
        cudaFree(p);
    done();

    keep_1024();
    rc = cudaMallocAsync(&p, want(), s);
    if (!rc)
        rc = cudaStreamSynchronize(s);
    show("cudaMallocAsync of free + 512", rc);
    if (!rc)
        cudaFreeAsync(p, s);
    done();
    cudaMemPool_t pool;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    cudaMemPoolTrimTo(pool, 0);

    keep_1024();
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    size_t bytes = gran ? (want() + gran - 1) / gran * gran : want();
    CUmemGenericAllocationHandle h = 0;
    rc = cuMemCreate(&h, bytes, &prop, 0);
    show("cuMemCreate of free + 512", rc);
    if (!rc)
        cuMemRelease(h);
    done();

    /* last: managed memory may be granted beyond the device (its pages
     * migrate), and the first touch here took more than the buffer on an
     * H200 (the first run of this probe) */
    keep_1024();
    rc = cudaMallocManaged(&p, want(), cudaMemAttachGlobal);
    if (!rc) /* managed memory is taken at first touch on some devices */
        rc = cudaMemset(p, 0, 4096);
    show("cudaMallocManaged of free + 512", rc);
    if (!rc)
        cudaFree(p);
    done();

    show("end", 0);
    return 0;
}
