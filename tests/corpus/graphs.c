/* graphs: stream capture and CUDA graphs around allocations, as a program
 * that builds its step once and replays it does. A memset and a copy are
 * captured (not run) and replayed; a cudaMalloc made while the capture is in
 * the default (global) mode is refused with cudaErrorStreamCaptureUnsupported
 * and ends the capture invalidated (a failed allocation that is not out of
 * memory); one made in a relaxed capture succeeds (PyTorch's caching
 * allocator takes its graph pools' segments so), one after the thread
 * relaxed its own mode too; buffers are freed after the graphs, one kept to
 * the end. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "corpus.h"

/* Captures a memset of dev and a copy of host into dev + 4096 on s. */
static cudaGraph_t capture_fill(cudaStream_t s, void *dev, const char *host)
{
    cudaGraph_t g = NULL;
    enum cudaStreamCaptureStatus st;
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT(cudaStreamIsCapturing(s, &st), cudaSuccess);
    REQUIRE(st == cudaStreamCaptureStatusActive);
    EXPECT(cudaMemsetAsync(dev, 7, 4096, s), cudaSuccess);
    EXPECT(cudaMemcpyAsync((char *)dev + 4096, host, 64, cudaMemcpyHostToDevice, s), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    REQUIRE(g != NULL);
    return g;
}

/* dev's first byte and byte 4096, read back. */
static void read_back(const void *dev, char out[2])
{
    EXPECT(cudaMemcpy(&out[0], dev, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT(cudaMemcpy(&out[1], (const char *)dev + 4096, 1, cudaMemcpyDeviceToHost), cudaSuccess);
}

/* A cudaMalloc during a global capture: refused, nothing taken, and the
 * capture ends invalidated. */
static void refused_in_capture(cudaStream_t s)
{
    void *p = NULL;
    cudaGraph_t g = NULL;
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT(cudaMalloc(&p, 48 * MiB), cudaErrorStreamCaptureUnsupported);
    EXPECT(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    REQUIRE(g == NULL);
    (void)cudaGetLastError();
}

/* Allocations made during a relaxed capture and under a relaxed thread
 * mode: both succeed; the second capture holds a memset of the first. */
static void allowed_in_capture(cudaStream_t s, void **a, void **b)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t e = NULL;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    EXPECT(cudaMalloc(a, 24 * MiB), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    EXPECT(cudaMalloc(b, 40 * MiB + 512), cudaSuccess);
    EXPECT(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    REQUIRE(mode == cudaStreamCaptureModeRelaxed);
    EXPECT(cudaMemsetAsync(*a, 1, 16, s), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
    EXPECT(cudaGraphLaunch(e, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT(cudaGraphExecDestroy(e), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
}

int main(void)
{
    cudaStream_t s;
    void *dev = NULL, *a = NULL, *b = NULL;
    char host[64], got[2];
    cudaGraphExec_t e = NULL;
    memset(host, 9, sizeof host);
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT(cudaMalloc(&dev, 8 * MiB), cudaSuccess);
    EXPECT(cudaMemset(dev, 0, 8192), cudaSuccess);
    cudaGraph_t g = capture_fill(s, dev, host);
    read_back(dev, got);
    REQUIRE(got[0] == 0 && got[1] == 0); /* captured, not run */
    EXPECT(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
    for (int i = 0; i < 3; i++)
        EXPECT(cudaGraphLaunch(e, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);
    read_back(dev, got);
    REQUIRE(got[0] == 7 && got[1] == 9);
    refused_in_capture(s);
    allowed_in_capture(s, &a, &b);
    EXPECT(cudaGraphExecDestroy(e), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
    EXPECT(cudaFree(a), cudaSuccess);
    EXPECT(cudaFree(dev), cudaSuccess);
    EXPECT(cudaStreamDestroy(s), cudaSuccess);
    (void)b; /* left allocated at exit */
    return 0;
}
