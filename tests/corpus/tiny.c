/* tiny: 100 000 small allocations (1 to 256 bytes) held at once, freed in
 * an interleaved order; the last 10 are leaked. */
#include <cuda_runtime_api.h>

#include "corpus.h"

#define N 100000

int main(void)
{
    static void *p[N];
    for (int i = 0; i < N; i++)
        EXPECT(cudaMalloc(&p[i], (size_t)(i % 256) + 1), cudaSuccess);
    for (int i = 0; i < N - 10; i += 2)
        EXPECT(cudaFree(p[i]), cudaSuccess);
    for (int i = 1; i < N - 10; i += 2)
        EXPECT(cudaFree(p[i]), cudaSuccess);
    return 0;
}
