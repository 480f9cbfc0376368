/* async_streams: stream-ordered allocations made on one stream and freed on
 * another (cudaFreeAsync), one freed with plain cudaFree, one leaked. */
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    cudaStream_t a, b;
    void *p[4];
    EXPECT(cudaStreamCreate(&a), cudaSuccess);
    EXPECT(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    for (int i = 0; i < 4; i++)
        EXPECT(cudaMallocAsync(&p[i], (size_t)(i + 1) * 3 * MiB + 100, a), cudaSuccess);
    EXPECT(cudaMemsetAsync(p[0], 1, 100, a), cudaSuccess);
    EXPECT(cudaStreamSynchronize(a), cudaSuccess);
    EXPECT(cudaFreeAsync(p[0], b), cudaSuccess);
    EXPECT(cudaFreeAsync(p[1], b), cudaSuccess);
    EXPECT(cudaFree(p[2]), cudaSuccess);
    EXPECT(cudaStreamSynchronize(b), cudaSuccess);
    EXPECT(cudaFreeAsync(p[0], b), cudaErrorInvalidValue); /* already freed */
    EXPECT(cudaStreamDestroy(a), cudaSuccess);
    EXPECT(cudaStreamDestroy(b), cudaSuccess);
    return 0;
}
