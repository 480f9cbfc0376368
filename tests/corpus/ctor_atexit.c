/* ctor_atexit: allocations in a static constructor (one freed in main, one
 * leaked) and in an atexit handler (one freed there, one leaked). */
#include <cuda_runtime_api.h>

#include "corpus.h"

static void *early[2];

__attribute__((constructor)) static void before_main(void)
{
    EXPECT(cudaMalloc(&early[0], 7 * MiB), cudaSuccess);
    EXPECT(cudaMalloc(&early[1], 1000), cudaSuccess);
}

static void at_exit(void)
{
    void *a, *b;
    EXPECT(cudaMalloc(&a, 9 * MiB), cudaSuccess);
    EXPECT(cudaMalloc(&b, 3000), cudaSuccess);
    EXPECT(cudaFree(a), cudaSuccess);
}

int main(void)
{
    void *p;
    REQUIRE(atexit(at_exit) == 0);
    EXPECT(cudaFree(early[0]), cudaSuccess);
    EXPECT(cudaMalloc(&p, 2 * MiB), cudaSuccess);
    EXPECT(cudaFree(p), cudaSuccess);
    return 0;
}
