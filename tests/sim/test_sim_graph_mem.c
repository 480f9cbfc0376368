/* Graph memory nodes on the simulated device (sim/README.md, "Graph memory
 * nodes"), through the toolkit's libcudart on the simulated one: the rules
 * of the CUDA Programming Guide ("Graph memory nodes") and of
 * cuGraphAddMemAllocNode / cuGraphAddMemFreeNode / cudaGraphInstantiate,
 * held against the device's free memory (cudaMemGetInfo), the graph memory
 * attributes and the sim's ledger; and the graph memory pool as an H200
 * showed it (tests/gpu/probe_graphpool.c): a live allocation holds its
 * bytes rounded up to 32 MiB of the pool, freed memory stays reserved until
 * a trim, a launch reserves all its allocations at once, and one that runs
 * out of memory leaves the device's free memory stuck in the pool until the
 * context ends. The device has 1 GiB (CMakeLists.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define CHUNK (32 * MiB) /* the graph pool's step (sim/README.md) */

static cudaStream_t s1, s2;

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    assert_int_equal(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
}

/* The device's free memory once the graph pool released what no live
 * graph allocation holds. */
static size_t trimmed_free(void)
{
    assert_int_equal(cudaDeviceGraphMemTrim(0), cudaSuccess);
    return free_now();
}

/* Streams, and a first graph with a memset node launched and trimmed: its
 * first launch takes 2 MiB of the device for good (both H200 probes whose
 * graphs had one; tests/gpu/README.md), so the tests' free figures start
 * after it. */
static int setup(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *p = NULL;
    size_t before = free_now();
    if (cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal) != cudaSuccess ||
        cudaMallocAsync(&p, 512, s1) != cudaSuccess || cudaMemsetAsync(p, 0, 512, s1) ||
        cudaFreeAsync(p, s1) != cudaSuccess || cudaStreamEndCapture(s1, &g) != cudaSuccess ||
        cudaGraphInstantiate(&x, g, 0) || cudaGraphLaunch(x, s1) != cudaSuccess ||
        cudaGraphExecDestroy(x) != cudaSuccess || cudaGraphDestroy(g) != cudaSuccess ||
        cudaDeviceGraphMemTrim(0) != cudaSuccess)
        return -1;
    return free_now() == before - 2 * MiB ? 0 : -1;
}

static unsigned long long graph_attr(enum cudaGraphMemAttributeType a)
{
    unsigned long long v = 12345;
    assert_int_equal(cudaDeviceGetGraphMemAttribute(0, a, &v), cudaSuccess);
    return v;
}

static enum cudaGraphNodeType type_of(cudaGraph_t g, size_t i)
{
    cudaGraphNode_t nodes[8];
    size_t n = 8;
    enum cudaGraphNodeType t = cudaGraphNodeTypeCount;
    assert_int_equal(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    assert_true(i < n);
    assert_int_equal(cudaGraphNodeGetType(nodes[i], &t), cudaSuccess);
    return t;
}

static struct cudaMemAllocNodeParams alloc_params(size_t bytes)
{
    struct cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    return p;
}

/* The lines of the sim's ledger from byte `from` on that contain `what`. */
static int ledger_count(long from, const char *what)
{
    FILE *f = fopen(getenv("VRAMTRACE_SIM_LEDGER"), "r");
    char line[1024];
    int n = 0;
    assert_non_null(f);
    fseek(f, from, SEEK_SET);
    while (fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    fclose(f);
    return n;
}

/* The ledger's size now (0 before its first line creates it). */
static long ledger_end(void)
{
    FILE *f = fopen(getenv("VRAMTRACE_SIM_LEDGER"), "r");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fclose(f);
    return end;
}

/* cudaMallocAsync, a memset and cudaFreeAsync captured: an allocation
 * node, a memset node and a free node; memory is taken only while a launch
 * runs them, at the same address each time. */
static void captured_alloc_and_free(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *p = NULL;
    size_t before = free_now();
    long mark = ledger_end();
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&p, MiB, s1), cudaSuccess);
    assert_non_null(p);
    assert_int_equal(free_now(), before); /* a node: no memory yet */
    assert_int_equal(cudaMemsetAsync(p, 7, MiB, s1), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s1), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(type_of(g, 0), cudaGraphNodeTypeMemAlloc);
    assert_int_equal(type_of(g, 1), cudaGraphNodeTypeMemset);
    assert_int_equal(type_of(g, 2), cudaGraphNodeTypeMemFree);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cudaGraphLaunch(x, s2), cudaSuccess);
    /* freed, and kept by the graph pool: one 32 MiB step, reused by each launch */
    assert_int_equal(free_now(), before - CHUNK);
    assert_int_equal(graph_attr(cudaGraphMemAttrUsedMemCurrent), CHUNK);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemCurrent), CHUNK);
    assert_int_equal(graph_attr(cudaGraphMemAttrUsedMemHigh), CHUNK);
    assert_int_equal(ledger_count(mark, "\"op\":\"alloc\""), 3);
    assert_int_equal(ledger_count(mark, "\"op\":\"free\""), 3);
    assert_int_equal(ledger_count(mark, "cuGraphLaunch"), 6);
    assert_int_equal(trimmed_free(), before);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemCurrent), 0);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemHigh), CHUNK);
    unsigned long long zero = 0;
    assert_int_equal(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero),
                     cudaSuccess);
    assert_int_equal(graph_attr(cudaGraphMemAttrUsedMemHigh), 0);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemHigh), CHUNK);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
}

/* An allocation the graph does not free lives on after the launch; the
 * graph cannot be launched again until it is freed (here by cudaFree and
 * by cudaFreeAsync), and it outlives the graph and its executable graph. */
static void unfreed_allocation(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphExec_t x, x2;
    cudaGraphNode_t a;
    struct cudaMemAllocNodeParams p = alloc_params(4 * MiB), back;
    size_t before = free_now();
    assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p), cudaSuccess);
    assert_non_null(p.dptr);
    assert_int_equal(cudaGraphMemAllocNodeGetParams(a, &back), cudaSuccess);
    assert_ptr_equal(back.dptr, p.dptr);
    assert_int_equal(back.bytesize, 4 * MiB);
    assert_int_equal(back.poolProps.location.id, 0);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    /* one executable graph at a time for a graph with memory nodes: the
     * H200's answer (tests/gpu/h200-2026-11-30/probe_graphmem.txt) */
    assert_int_equal(cudaGraphInstantiate(&x2, g, 0), cudaErrorNotSupported);
    cudaGetLastError();
    /* freeing it before any launch is refused (the H200's answer) */
    assert_int_equal(cudaFreeAsync(p.dptr, s2), cudaErrorInvalidValue);
    cudaGetLastError();
    assert_int_equal(free_now(), before);
    /* live: a trim cannot release it */
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
    assert_int_equal(trimmed_free(), before - CHUNK);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaErrorInvalidValue); /* still live */
    cudaGetLastError();
    assert_int_equal(trimmed_free(), before - CHUNK);
    assert_int_equal(cudaFree(p.dptr), cudaSuccess);
    assert_int_equal(free_now(), before - CHUNK); /* kept by the pool */
    assert_int_equal(trimmed_free(), before);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess); /* the same address again */
    assert_int_equal(cudaFreeAsync(p.dptr, s2), cudaSuccess);
    assert_int_equal(trimmed_free(), before);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(trimmed_free(), before - CHUNK); /* outlives both */
    assert_int_equal(cudaFree(p.dptr), cudaSuccess);
    assert_int_equal(trimmed_free(), before);
    assert_int_equal(cudaFree(p.dptr), cudaErrorInvalidValue); /* gone, address too */
    cudaGetLastError();
}

/* AUTO_FREE_ON_LAUNCH: each launch frees what the previous one left. */
static void auto_free_on_launch(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t a;
    struct cudaMemAllocNodeParams p = alloc_params(3 * MiB);
    size_t before = free_now();
    long mark = ledger_end();
    assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p), cudaSuccess);
    assert_int_equal(cudaGraphInstantiateWithFlags(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch),
                     cudaSuccess);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
        assert_int_equal(trimmed_free(), before - CHUNK); /* 3 MiB: one 32 MiB step */
    }
    assert_int_equal(ledger_count(mark, "\"op\":\"alloc\""), 3);
    assert_int_equal(ledger_count(mark, "\"op\":\"free\""), 2);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaFree(p.dptr), cudaSuccess);
    assert_int_equal(trimmed_free(), before);
}

/* A launch without the room fails with nothing allocated and one failed
 * allocation in the ledger (the bytes its allocation nodes ask for), and
 * leaves the device's free memory, rounded down to 32 MiB, stuck in the
 * graph pool, which no trim and no cudaMalloc releases (an H200, twice);
 * the context's end does. A launch reserves all its allocations at once:
 * memory freed inside it is not room for its later nodes (the H200: 300
 * MiB freed before 500 were allocated reserved 832 MiB). */
static void out_of_memory_at_launch(void **state)
{
    cudaGraph_t g, g2;
    cudaGraphExec_t x, x2;
    cudaGraphNode_t a, b, fa, fb;
    size_t room = trimmed_free(), big = (room / 2 + 2 * MiB) & ~(2 * MiB - 1);
    struct cudaMemAllocNodeParams pa = alloc_params(big), pb = alloc_params(big);
    void *p = NULL;
    long mark = ledger_end();
    /* two at once do not fit */
    assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &pa), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&b, g, &a, 1, &pb), cudaSuccess);
    assert_int_equal(cudaGraphAddMemFreeNode(&fa, g, &b, 1, pa.dptr), cudaSuccess);
    assert_int_equal(cudaGraphAddMemFreeNode(&fb, g, &fa, 1, pb.dptr), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaErrorMemoryAllocation);
    cudaGetLastError();
    assert_int_equal(ledger_count(mark, "\"op\":\"alloc\""), 0);
    char want[96];
    snprintf(want, sizeof want, "\"size\":%zu,\"error\":2", 2 * big);
    assert_int_equal(ledger_count(mark, want), 1);
    assert_int_equal(free_now(), room % CHUNK);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemCurrent), room / CHUNK * CHUNK);
    assert_int_equal(graph_attr(cudaGraphMemAttrUsedMemCurrent), 0);
    assert_int_equal(trimmed_free(), room % CHUNK);
    assert_int_equal(cudaMalloc(&p, room / 2), cudaErrorMemoryAllocation);
    cudaGetLastError();
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess); /* its addresses go */
    /* the context's end gives it back (and the first memset node's 2 MiB) */
    assert_int_equal(cudaDeviceReset(), cudaSuccess);
    assert_int_equal(setup(state), 0);
    assert_int_equal(trimmed_free(), room);
    /* one after the other, two of 2/5 of the room: both reserved */
    size_t part = (room / 5 * 2) & ~(2 * MiB - 1), charge = (part + CHUNK - 1) / CHUNK * CHUNK;
    struct cudaMemAllocNodeParams pc = alloc_params(part), pd = alloc_params(part);
    assert_int_equal(cudaGraphCreate(&g2, 0), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g2, NULL, 0, &pc), cudaSuccess);
    assert_int_equal(cudaGraphAddMemFreeNode(&fa, g2, &a, 1, pc.dptr), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&b, g2, &fa, 1, &pd), cudaSuccess);
    assert_int_equal(cudaGraphAddMemFreeNode(&fb, g2, &b, 1, pd.dptr), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&x2, g2, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x2, s1), cudaSuccess);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemCurrent), 2 * charge);
    assert_int_equal(free_now(), room - 2 * charge);
    assert_int_equal(trimmed_free(), room);
    assert_int_equal(cudaGraphExecDestroy(x2), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g2), cudaSuccess);
}

/* A cudaMalloc that needs the memory the graph pool keeps gets it: the pool
 * releases what no live allocation holds (an H200: a cudaMalloc of the free
 * memory and 512 MiB more while the pool kept 1024 MiB succeeded). */
static void malloc_takes_kept_memory(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *p = NULL, *q = NULL;
    size_t room = trimmed_free();
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&p, 256 * MiB, s1), cudaSuccess);
    assert_int_equal(cudaFreeAsync(p, s1), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
    assert_int_equal(free_now(), room - 256 * MiB);
    assert_int_equal(cudaMalloc(&q, room - 128 * MiB), cudaSuccess);
    assert_int_equal(graph_attr(cudaGraphMemAttrReservedMemCurrent), 0);
    assert_int_equal(free_now(), 128 * MiB);
    assert_int_equal(cudaFree(q), cudaSuccess);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
}

/* What no free node may free (cuGraphAddMemFreeNode), and bad parameters. */
static void refusals(void **state)
{
    (void)state;
    cudaGraph_t g;
    cudaGraphNode_t a, f, f2;
    void *plain = NULL, *out = NULL;
    struct cudaMemAllocNodeParams p = alloc_params(MiB), zero = alloc_params(0),
                                  host = alloc_params(MiB);
    host.poolProps.location.type = cudaMemLocationTypeHost;
    assert_int_equal(cudaMalloc(&plain, MiB), cudaSuccess);
    assert_int_equal(cudaGraphCreate(&g, 0), cudaSuccess);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &zero), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &host), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p), cudaSuccess);
    assert_int_equal(cudaGraphAddMemFreeNode(&f, g, &a, 1, plain), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphAddMemFreeNode(&f, g, &a, 1, p.dptr), cudaSuccess);
    assert_int_equal(cudaGraphMemFreeNodeGetParams(f, &out), cudaSuccess);
    assert_ptr_equal(out, p.dptr);
    assert_int_equal(cudaGraphAddMemFreeNode(&f2, g, &f, 1, p.dptr), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphMemFreeNodeGetParams(a, &out), cudaErrorInvalidValue);
    cudaGetLastError();
    /* the generic form makes memory nodes, nothing else */
    struct cudaGraphNodeParams gp;
    cudaGraphNode_t a2;
    memset(&gp, 0, sizeof gp);
    gp.type = cudaGraphNodeTypeMemAlloc;
    gp.alloc.poolProps.allocType = cudaMemAllocationTypePinned;
    gp.alloc.poolProps.location.type = cudaMemLocationTypeDevice;
    gp.alloc.bytesize = MiB;
    assert_int_equal(cudaGraphAddNode(&a2, g, NULL, NULL, 0, &gp), cudaSuccess);
    assert_non_null(gp.alloc.dptr);
    assert_int_equal(type_of(g, 2), cudaGraphNodeTypeMemAlloc);
    gp.type = cudaGraphNodeTypeHost;
    assert_int_equal(cudaGraphAddNode(&a2, g, NULL, NULL, 0, &gp), cudaErrorNotSupported);
    cudaGetLastError();
    /* a stream-ordered free of ordinary memory on a capturing stream: refused,
     * the capture goes on (the H200's answer) */
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaFreeAsync(plain, s1), cudaErrorInvalidValue);
    cudaGraph_t made = NULL;
    assert_int_equal(cudaStreamEndCapture(s1, &made), cudaSuccess);
    assert_non_null(made);
    assert_int_equal(cudaGraphDestroy(made), cudaSuccess);
    cudaGetLastError();
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaFree(plain), cudaSuccess);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(captured_alloc_and_free),  cmocka_unit_test(unfreed_allocation),
        cmocka_unit_test(auto_free_on_launch),      cmocka_unit_test(out_of_memory_at_launch),
        cmocka_unit_test(malloc_takes_kept_memory), cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
