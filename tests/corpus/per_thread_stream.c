/* per_thread_stream: a program built for the per-thread default stream
 * (CUDA_API_PER_THREAD_DEFAULT_STREAM, what `nvcc --default-stream
 * per-thread` defines): its runtime and driver calls are the _ptds/_ptsz
 * entry points (cudaMallocAsync_ptsz, cuMemAllocAsync_ptsz,
 * cuStreamBeginCapture_v2_ptsz ...) and the NULL stream is each thread's own
 * stream, so a thread may capture it (on the legacy NULL stream a capture is
 * an error). THREADS threads each, on stream 0:
 *   - cudaMallocAsync of A, a memset, a synchronize, cudaFreeAsync; and K
 *     kept to the end;
 *   - through the driver, cuMemAllocAsync of D and cuMemFreeAsync;
 *   - a relaxed capture of stream 0 (runtime): cudaMalloc of C inside it,
 *     kept to the end, and a memset captured, replayed and read back;
 *   - a relaxed capture through the driver: cuMemAlloc of E inside it,
 *     freed after the capture.
 * At exit: THREADS * (K + C) live, THREADS * C of it made during captures
 * (the corpus case's CORPUS_EXPECT). */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "build with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>

#define CORPUS_THREADS
#include "corpus.h"

#define THREADS 4
#define A (3 * MiB)
#define K (2 * MiB + 512)
#define D (5 * MiB)
#define C (4 * MiB)
#define E (6 * MiB)

/* Stream 0 here is the thread's per-thread stream: capturable. */
static void runtime_capture(void **keep)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    unsigned char back = 0;
    EXPECT(cudaStreamBeginCapture(0, cudaStreamCaptureModeRelaxed), cudaSuccess);
    EXPECT(cudaMalloc(keep, C), cudaSuccess); /* relaxed: allowed, made during the capture */
    EXPECT(cudaMemsetAsync(*keep, 0x5a, C, 0), cudaSuccess); /* a node, not run */
    EXPECT(cudaStreamEndCapture(0, &g), cudaSuccess);
    REQUIRE(g != NULL);
    EXPECT(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
    EXPECT(cudaGraphLaunch(ge, 0), cudaSuccess);
    EXPECT(cudaStreamSynchronize(0), cudaSuccess);
    EXPECT(cudaMemcpy(&back, (const char *)*keep + C - 1, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    REQUIRE(back == 0x5a);
    EXPECT(cudaGraphExecDestroy(ge), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
}

/* The driver's capture of stream 0: cuStreamBeginCapture_v2_ptsz. */
static void driver_capture(void)
{
    CUgraph g = NULL;
    CUdeviceptr e = 0;
    EXPECT(cuStreamBeginCapture(0, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT(cuMemAlloc(&e, E), CUDA_SUCCESS);
    EXPECT(cuStreamEndCapture(0, &g), CUDA_SUCCESS);
    REQUIRE(g != NULL);
    EXPECT(cuGraphDestroy(g), CUDA_SUCCESS);
    EXPECT(cuMemFree(e), CUDA_SUCCESS);
}

static void *kept[THREADS][2];

static void *worker(void *arg)
{
    int i = (int)(uintptr_t)arg;
    void *a = NULL;
    CUdeviceptr d = 0;
    unsigned char back = 0;
    EXPECT(cudaSetDevice(0), cudaSuccess);
    EXPECT(cudaMallocAsync(&a, A, 0), cudaSuccess);
    EXPECT(cudaMemsetAsync(a, 0x11, A, 0), cudaSuccess);
    EXPECT(cudaStreamSynchronize(0), cudaSuccess);
    EXPECT(cudaMemcpy(&back, a, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    REQUIRE(back == 0x11);
    EXPECT(cudaFreeAsync(a, 0), cudaSuccess);
    EXPECT(cudaMallocAsync(&kept[i][0], K, 0), cudaSuccess);
    EXPECT(cuMemAllocAsync(&d, D, 0), CUDA_SUCCESS);
    EXPECT(cuMemFreeAsync(d, 0), CUDA_SUCCESS);
    EXPECT(cuStreamSynchronize(0), CUDA_SUCCESS);
    runtime_capture(&kept[i][1]);
    driver_capture();
    return NULL;
}

int main(void)
{
    enum cudaStreamCaptureStatus st;
    EXPECT(cudaSetDevice(0), cudaSuccess);
    /* the per-thread stream of main is not capturing */
    EXPECT(cudaStreamIsCapturing(0, &st), cudaSuccess);
    REQUIRE(st == cudaStreamCaptureStatusNone);
    corpus_run_threads(THREADS, worker);
    EXPECT(cudaDeviceSynchronize(), cudaSuccess);
    printf("per_thread_stream: %d threads, %zu bytes kept, %zu of them made during captures\n",
           THREADS, (size_t)THREADS * (K + C), (size_t)THREADS * C);
    return 0;
}
