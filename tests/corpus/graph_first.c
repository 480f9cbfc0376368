/* graph_first: a device whose first allocation is made by a graph launch,
 * on a 2 GiB device:
 *
 *   - a captured graph allocates 1 MiB, then 256 MiB, and frees both; its
 *     launch is the program's first allocation: the preload takes the
 *     device's first memory sample at the launch's first allocation record
 *     (1 MiB), when the driver has made and freed all of it and the graph
 *     memory pool keeps 257 MiB, which no live allocation record holds;
 *   - a cudaMalloc of 4 GiB fails.
 *
 * The report took the device's use outside the recording (its baseline)
 * from that sample and counted the pool's kept memory in it: 256 MiB more
 * than the sim's ledger, at the failure. Since trace format 14 the
 * recorder samples the graph pool before each memory sample and the report
 * counts what it keeps as the process's (check_ledger.py: the failure's
 * outside_recording_bytes against the ledger's "outside").
 *
 * With CORPUS_GROW_STEPS=N, instead of the failure, N NVTX ranges "step"
 * keep 64 MiB more each (grow): the exit line's projection took the device's
 * room at the same sample and, until session 34, missed the graph pool's
 * kept 257 MiB in it (growth_projection.sh).
 */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#include "corpus.h"

int main(void)
{
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *small, *large, *none;
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT(cudaMallocAsync(&small, MiB, s), cudaSuccess);
    EXPECT(cudaMallocAsync(&large, 256 * MiB, s), cudaSuccess);
    EXPECT(cudaFreeAsync(large, s), cudaSuccess);
    EXPECT(cudaFreeAsync(small, s), cudaSuccess);
    EXPECT(cudaStreamEndCapture(s, &g), cudaSuccess);
    EXPECT(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    EXPECT(cudaGraphDestroy(g), cudaSuccess);
    EXPECT(cudaGraphLaunch(x, s), cudaSuccess);
    EXPECT(cudaStreamSynchronize(s), cudaSuccess);

    if (getenv("CORPUS_GROW_STEPS")) {
        corpus_grow(atoi(getenv("CORPUS_GROW_STEPS")));
    } else {
        EXPECT(cudaMalloc(&none, 4096 * MiB), cudaErrorMemoryAllocation);
        cudaGetLastError();
    }

    EXPECT(cudaGraphExecDestroy(x), cudaSuccess);
    EXPECT(cudaStreamDestroy(s), cudaSuccess);
    return 0;
}
