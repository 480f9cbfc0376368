/* Stream capture and CUDA graphs on the simulated device (sim/README.md,
 * "Stream capture and graphs"), through the toolkit's libcudart and libcuda
 * on the simulated ones (LD_LIBRARY_PATH). Device memory is host memory, so
 * what a capture must not change is read through the pointer while the
 * capture is under way (no copy call is allowed then), and with cudaMemcpy
 * once it has ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

static unsigned char *dev; /* N bytes of device memory, made before any capture */
static cudaStream_t s1, s2, blocking;

static int setup(void **state)
{
    (void)state;
    if (cudaMalloc((void **)&dev, N) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreate(&blocking) != cudaSuccess)
        return -1;
    return 0;
}

/* After each test: no capture left under way (a failed test leaves none to
 * the next), no mode left RELAXED. */
static int end_leftovers(void **state)
{
    (void)state;
    cudaStream_t all[] = {s1, s2, blocking};
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
    cudaThreadExchangeStreamCaptureMode(&mode);
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        cudaGraph_t g = NULL;
        if (cudaStreamIsCapturing(all[i], &st) == cudaSuccess &&
            st != cudaStreamCaptureStatusNone && cudaStreamEndCapture(all[i], &g) == cudaSuccess)
            cudaGraphDestroy(g);
    }
    cudaGetLastError();
    return 0;
}

/* dev[0..N) = 0, outside any capture. */
static void clear_dev(void)
{
    assert_int_equal(cudaMemset(dev, 0, N), cudaSuccess);
}

static void expect_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, p[i], v);
}

/* dev read back with cudaMemcpy (outside capture) into out. */
static void read_dev(unsigned char out[N])
{
    memset(out, 0xee, N);
    assert_int_equal(cudaMemcpy(out, dev, N, cudaMemcpyDeviceToHost), cudaSuccess);
}

static enum cudaStreamCaptureStatus status_of(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st = (enum cudaStreamCaptureStatus) - 1;
    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    return st;
}

static unsigned long long id_of(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st;
    unsigned long long id = 0;
    assert_int_equal(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusActive);
    return id;
}

static size_t node_count(cudaGraph_t g)
{
    size_t n = 12345;
    assert_int_equal(cudaGraphGetNodes(g, NULL, &n), cudaSuccess);
    return n;
}

/* Ends the capture on s, expecting it invalidated: the error and no graph. */
static void expect_invalidated_end(cudaStream_t s)
{
    cudaGraph_t g = (cudaGraph_t)&g; /* not NULL, to see it cleared */
    assert_int_equal(status_of(s), cudaStreamCaptureStatusInvalidated);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    assert_null(g);
    assert_int_equal(status_of(s), cudaStreamCaptureStatusNone);
    cudaGetLastError();
}

/* A memset and an HtoD copy captured: nothing changes until each launch. */
static void capture_and_replay(void **state)
{
    (void)state;
    unsigned char host[N / 2], back[N];
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    clear_dev();
    memset(host, 'A', sizeof host);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusNone);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusActive);
    assert_int_equal(cudaMemsetAsync(dev, 0x5a, N / 2, s1), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(dev + N / 2, host, N / 2, cudaMemcpyHostToDevice, s1),
                     cudaSuccess);
    expect_bytes(dev, N, 0); /* captured, not run */
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusNone);
    read_dev(back);
    expect_bytes(back, N, 0);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
    read_dev(back);
    expect_bytes(back, N / 2, 0x5a);
    expect_bytes(back + N / 2, N / 2, 'A');
    /* Each launch runs the nodes again; the copy reads the host buffer then. */
    clear_dev();
    memset(host, 'B', sizeof host);
    assert_int_equal(cuGraphLaunch((CUgraphExec)x, (CUstream)s1), CUDA_SUCCESS);
    read_dev(back);
    expect_bytes(back, N / 2, 0x5a);
    expect_bytes(back + N / 2, N / 2, 'B');
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
}

/* cudaGraphGetNodes and cudaGraphNodeGetDependencies as documented. */
static void nodes_and_dependencies(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    cudaGraphNode_t nodes[3] = {0}, deps[2] = {0};
    size_t n = 3, nd = 2;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(dev, 1, 8, s1), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(dev, 2, 8, s1), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(node_count(g), 2);
    nodes[2] = (cudaGraphNode_t)&n;
    assert_int_equal(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    assert_int_equal(n, 2); /* the number returned */
    assert_non_null(nodes[0]);
    assert_non_null(nodes[1]);
    assert_null(nodes[2]); /* the rest set to NULL */
    cudaGraphNode_t first = nodes[0], second = nodes[1];
    n = 1; /* fewer than there are: that many, in order */
    memset(nodes, 0, sizeof nodes);
    assert_int_equal(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    assert_int_equal(n, 1);
    assert_ptr_equal(nodes[0], first);
    assert_null(nodes[1]);
    nodes[1] = second;
    assert_int_equal(cudaGraphNodeGetDependencies(nodes[1], deps, NULL, &nd), cudaSuccess);
    assert_int_equal(nd, 1);
    assert_ptr_equal(deps[0], nodes[0]); /* the second set waits for the first */
    nd = 2;
    assert_int_equal(cudaGraphNodeGetDependencies(nodes[0], NULL, NULL, &nd), cudaSuccess);
    assert_int_equal(nd, 0);
    assert_int_equal(cudaGraphGetNodes(g, nodes, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    /* An empty capture is an empty graph. */
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(node_count(g), 0);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    /* A handle that is no graph. */
    unsigned fake[16] = {0};
    assert_int_equal(cudaGraphDestroy((cudaGraph_t)fake), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphLaunch((cudaGraphExec_t)fake, s1), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphExecDestroy((cudaGraphExec_t)fake), cudaErrorInvalidValue);
    cudaGetLastError();
}

static void capture_ids_unique(void **state)
{
    (void)state;
    cudaGraph_t g1, g2;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed), cudaSuccess);
    unsigned long long a = id_of(s1), b = id_of(s2);
    assert_int_not_equal(a, 0);
    assert_int_not_equal(a, b);
    assert_int_equal(cudaStreamEndCapture(s1, &g1), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s2, &g2), cudaSuccess);
    assert_ptr_not_equal(g1, g2);
    assert_int_equal(cudaGraphDestroy(g1), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    unsigned long long c = id_of(s1);
    assert_int_not_equal(c, a);
    assert_int_not_equal(c, b);
    assert_int_equal(cudaStreamEndCapture(s1, &g1), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g1), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g2), cudaSuccess);
}

static void begin_and_end_refusals(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s2, (enum cudaStreamCaptureMode)7),
                     cudaErrorInvalidValue);
    assert_int_equal(status_of(s2), cudaStreamCaptureStatusNone);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaErrorIllegalState); /* not capturing */
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal),
                     cudaErrorIllegalState);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusActive); /* still the first */
    assert_int_equal(cudaStreamEndCapture(s1, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaErrorIllegalState);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    cudaGetLastError();
}

/* cudaMalloc in the capturing thread of a GLOBAL capture: refused, nothing
 * taken, the capture invalidated. */
static void malloc_refused_in_global_capture(void **state)
{
    (void)state;
    size_t free0, free1, total;
    void *p = &p;
    assert_int_equal(cudaMemGetInfo(&free0, &total), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 1 << 20), cudaErrorStreamCaptureUnsupported);
    assert_ptr_equal(p, &p); /* untouched */
    assert_string_equal(cudaGetErrorString(cudaErrorStreamCaptureUnsupported),
                        "operation not permitted when stream is capturing");
    assert_int_equal(cudaMemsetAsync(dev, 1, N, s1), cudaErrorStreamCaptureInvalidated);
    expect_invalidated_end(s1);
    assert_int_equal(cudaMemGetInfo(&free1, &total), cudaSuccess);
    assert_int_equal(free1, free0);
    /* cudaFree and a synchronous copy are refused the same way. */
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaFree(dev), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    assert_int_equal(cudaMemset(dev, 0, N), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    clear_dev(); /* dev is still allocated */
}

/* A RELAXED thread mode, or a RELAXED capture, allows cudaMalloc. */
static void malloc_allowed_when_relaxed(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    void *p = NULL;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    assert_int_equal(mode, cudaStreamCaptureModeGlobal); /* the default */
    assert_int_equal(cudaMalloc(&p, 4096), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    assert_int_equal(mode, cudaStreamCaptureModeRelaxed);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 4096), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusActive);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    mode = (enum cudaStreamCaptureMode)9;
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaErrorInvalidValue);
    cudaGetLastError();
}

struct thread_call {
    enum cudaStreamCaptureMode mode; /* the thread's mode for its cudaMalloc */
    cudaError_t malloc_result, end_result;
};

static void *malloc_in_thread(void *arg)
{
    struct thread_call *t = arg;
    enum cudaStreamCaptureMode m = t->mode;
    void *p = NULL;
    cudaThreadExchangeStreamCaptureMode(&m);
    t->malloc_result = cudaMalloc(&p, 4096);
    if (t->malloc_result == cudaSuccess)
        cudaFree(p);
    return NULL;
}

static struct thread_call run_thread(void *(*fn)(void *), enum cudaStreamCaptureMode mode)
{
    pthread_t th;
    struct thread_call t = {mode, cudaErrorUnknown, cudaErrorUnknown};
    assert_int_equal(pthread_create(&th, NULL, fn, &t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    return t;
}

/* Another thread (mode GLOBAL) is prohibited by a GLOBAL capture, not by a
 * THREAD_LOCAL one; a thread in THREAD_LOCAL mode ignores other threads'. */
static void other_thread_malloc(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(run_thread(malloc_in_thread, cudaStreamCaptureModeGlobal).malloc_result,
                     cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(run_thread(malloc_in_thread, cudaStreamCaptureModeThreadLocal).malloc_result,
                     cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    assert_int_equal(run_thread(malloc_in_thread, cudaStreamCaptureModeGlobal).malloc_result,
                     cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
}

/* Synchronizing or querying what a capture holds is refused and invalidates it. */
static void sync_refused(void **state)
{
    (void)state;
    cudaEvent_t e;
    assert_int_equal(cudaEventCreate(&e), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s1), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaStreamQuery(s1), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaEventRecord(e, s1), cudaSuccess);
    assert_int_equal(cudaEventQuery(e), cudaErrorCapturedEvent);
    expect_invalidated_end(s1);
    assert_int_equal(cudaEventQuery(e), cudaSuccess); /* the capture is over */
    assert_int_equal(cudaStreamSynchronize(s1), cudaSuccess);
    assert_int_equal(cudaEventDestroy(e), cudaSuccess);
}

struct end_call {
    cudaStream_t s;
    cudaError_t result;
};

static void *end_in_thread(void *arg)
{
    struct end_call *c = arg;
    cudaGraph_t g = NULL;
    c->result = cudaStreamEndCapture(c->s, &g);
    if (g)
        cudaGraphDestroy(g);
    return NULL;
}

static cudaError_t end_from_thread(cudaStream_t s)
{
    pthread_t th;
    struct end_call c = {s, cudaErrorUnknown};
    assert_int_equal(pthread_create(&th, NULL, end_in_thread, &c), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    return c.result;
}

static void wrong_thread_end(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(end_from_thread(s1), cudaErrorStreamCaptureWrongThread);
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusActive);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(end_from_thread(s1), cudaSuccess); /* any thread may end a RELAXED one */
    assert_int_equal(status_of(s1), cudaStreamCaptureStatusNone);
}

/* s2 joins s1's capture by waiting on an event recorded in it: its memset is
 * captured, not run, and replayed by the graph. */
static void joined_stream(void **state)
{
    (void)state;
    cudaEvent_t fork, join;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaGraphNode_t nodes[2], deps[2];
    size_t n = 2, nd = 2;
    unsigned char back[N];
    clear_dev();
    assert_int_equal(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
    assert_int_equal(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(dev, 1, N / 2, s1), cudaSuccess);
    assert_int_equal(cudaEventRecord(fork, s1), cudaSuccess);
    assert_int_equal(status_of(s2), cudaStreamCaptureStatusNone);
    assert_int_equal(cudaStreamWaitEvent(s2, fork, 0), cudaSuccess);
    assert_int_equal(status_of(s2), cudaStreamCaptureStatusActive);
    assert_int_equal(id_of(s2), id_of(s1));
    assert_int_equal(cudaMemsetAsync(dev + N / 2, 2, N / 2, s2), cudaSuccess);
    expect_bytes(dev, N, 0);
    assert_int_equal(cudaEventRecord(join, s2), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(s1, join, 0), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s2, &g), cudaErrorStreamCaptureUnmatched);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(status_of(s2), cudaStreamCaptureStatusNone);
    assert_int_equal(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    assert_int_equal(n, 2); /* event records and waits are edges, not nodes */
    assert_int_equal(cudaGraphNodeGetDependencies(nodes[1], deps, NULL, &nd), cudaSuccess);
    assert_int_equal(nd, 1);
    assert_ptr_equal(deps[0], nodes[0]);
    read_dev(back);
    expect_bytes(back, N, 0);
    assert_int_equal(cudaGraphInstantiateWithFlags(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s2), cudaSuccess);
    read_dev(back);
    expect_bytes(back, N / 2, 1);
    expect_bytes(back + N / 2, N / 2, 2);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaEventDestroy(fork), cudaSuccess);
    assert_int_equal(cudaEventDestroy(join), cudaSuccess);
    cudaGetLastError();
}

/* Event rules: a wait on work outside the capture, an external record node. */
static void event_rules(void **state)
{
    (void)state;
    cudaEvent_t before, fresh;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    assert_int_equal(cudaEventCreate(&before), cudaSuccess);
    assert_int_equal(cudaEventCreate(&fresh), cudaSuccess);
    assert_int_equal(cudaEventRecord(before, s2), cudaSuccess);
    assert_int_equal(cudaEventRecordWithFlags(fresh, s2, cudaEventRecordExternal),
                     cudaErrorInvalidValue); /* only during capture */
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(s1, before, 0), cudaErrorStreamCaptureIsolation);
    expect_invalidated_end(s1);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(s1, before, cudaEventWaitExternal), cudaSuccess);
    assert_int_equal(cudaEventRecordWithFlags(fresh, s1, cudaEventRecordExternal), cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(node_count(g), 2); /* an event-wait and an event-record node */
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaSuccess);
    float ms = -1;
    assert_int_equal(cudaEventElapsedTime(&ms, before, fresh), cudaSuccess); /* recorded */
    assert_true(ms >= 0);
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaEventDestroy(before), cudaSuccess);
    assert_int_equal(cudaEventDestroy(fresh), cudaSuccess);
    cudaGetLastError();
}

/* The legacy stream while a blocking stream captures: an implicit dependency. */
static void legacy_stream_implicit(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    enum cudaStreamCaptureStatus st;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(dev, 3, N, NULL), cudaSuccess); /* s1 is non-blocking */
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    expect_bytes(dev, N, 3);
    assert_int_equal(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaStreamIsCapturing(NULL, &st), cudaErrorStreamCaptureImplicit);
    assert_int_equal(status_of(blocking), cudaStreamCaptureStatusActive); /* not invalidated */
    assert_int_equal(cudaMemsetAsync(dev, 4, N, NULL), cudaErrorStreamCaptureImplicit);
    expect_bytes(dev, N, 3);
    expect_invalidated_end(blocking);
    clear_dev();
}

/* A synchronous copy through a per-thread variant (cuMemcpy_ptds) is on the
 * thread's own stream: not refused while a blocking stream captures (the
 * legacy cuMemcpy is), refused while the thread's per-thread stream does.
 * Until session 30 the sim took it as the legacy stream's, which failed
 * corpus.per_thread_stream now and then under the preload's timing. */
static void per_thread_sync_copy(void **state)
{
    (void)state;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*ptds)(CUdeviceptr, CUdeviceptr, size_t) = drv ? dlsym(drv, "cuMemcpy_ptds") : NULL;
    CUresult (*legacy)(CUdeviceptr, CUdeviceptr, size_t) = drv ? dlsym(drv, "cuMemcpy") : NULL;
    unsigned char host[N];
    cudaGraph_t g = NULL;
    assert_non_null(ptds);
    assert_non_null(legacy);
    assert_int_equal(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(ptds((CUdeviceptr)host, (CUdeviceptr)dev, N), CUDA_SUCCESS);
    assert_int_equal(status_of(blocking), cudaStreamCaptureStatusActive);
    assert_int_equal(legacy((CUdeviceptr)host, (CUdeviceptr)dev, N),
                     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    expect_invalidated_end(blocking);
    assert_int_equal(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed),
                     cudaSuccess);
    assert_int_equal(ptds((CUdeviceptr)host, (CUdeviceptr)dev, N),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cudaStreamEndCapture(cudaStreamPerThread, &g),
                     cudaErrorStreamCaptureInvalidated);
    assert_null(g);
    cudaGetLastError();
    dlclose(drv);
}

static void kernel_fn(void) {}

/* A kernel launch on a capturing stream is a node; a graph with one runs
 * nothing and its launch is not supported. */
static void kernel_node(void **state)
{
    (void)state;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    dim3 one = {1, 1, 1};
    clear_dev();
    assert_int_equal(cudaLaunchKernel((const void *)kernel_fn, one, one, NULL, 0, s1),
                     cudaErrorNotSupported);
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(dev, 9, N, s1), cudaSuccess);
    assert_int_equal(cudaLaunchKernel((const void *)kernel_fn, one, one, NULL, 0, s1), cudaSuccess);
    assert_int_equal(cuLaunchKernel((CUfunction)(uintptr_t)kernel_fn, 2, 1, 1, 32, 1, 1, 0,
                                    (CUstream)s1, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cudaStreamEndCapture(s1, &g), cudaSuccess);
    assert_int_equal(node_count(g), 3);
    assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(x, s1), cudaErrorNotSupported);
    expect_bytes(dev, N, 0); /* not even the memset ran */
    assert_int_equal(cudaGraphExecDestroy(x), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    cudaGetLastError();
}

/* A refused cudaMalloc is a failed allocation call in the sim's ledger: one
 * "fail" line with error 900 and no "alloc" line. */
static void ledger_of_refused_malloc(void **state)
{
    (void)state;
    const char *path = getenv("VRAMTRACE_SIM_LEDGER");
    assert_non_null(path);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long start = ftell(f);
    fclose(f);
    void *p = NULL;
    assert_int_equal(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 12345), cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s1);
    char buf[4096] = {0};
    f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, start, SEEK_SET);
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_true(got > 0);
    assert_non_null(strstr(buf, "\"op\":\"fail\""));
    assert_non_null(strstr(buf, "\"api\":\"cudaMalloc\""));
    assert_non_null(strstr(buf, "\"error\":900"));
    assert_non_null(strstr(buf, "\"size\":12345"));
    assert_null(strstr(buf, "\"op\":\"alloc\""));
    const char *fail = strstr(buf, "\"op\":\"fail\"");
    assert_null(strstr(fail + 1, "\"op\":\"fail\"")); /* once per call */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(capture_and_replay, end_leftovers),
        cmocka_unit_test_teardown(per_thread_sync_copy, end_leftovers),
        cmocka_unit_test_teardown(nodes_and_dependencies, end_leftovers),
        cmocka_unit_test_teardown(capture_ids_unique, end_leftovers),
        cmocka_unit_test_teardown(begin_and_end_refusals, end_leftovers),
        cmocka_unit_test_teardown(malloc_refused_in_global_capture, end_leftovers),
        cmocka_unit_test_teardown(malloc_allowed_when_relaxed, end_leftovers),
        cmocka_unit_test_teardown(other_thread_malloc, end_leftovers),
        cmocka_unit_test_teardown(sync_refused, end_leftovers),
        cmocka_unit_test_teardown(wrong_thread_end, end_leftovers),
        cmocka_unit_test_teardown(joined_stream, end_leftovers),
        cmocka_unit_test_teardown(event_rules, end_leftovers),
        cmocka_unit_test_teardown(legacy_stream_implicit, end_leftovers),
        cmocka_unit_test_teardown(kernel_node, end_leftovers),
        cmocka_unit_test_teardown(ledger_of_refused_malloc, end_leftovers),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
