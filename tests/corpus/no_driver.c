/* no_driver: run with a runtime but no driver: every call, allocations
 * included, returns cudaErrorInsufficientDriver. */
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    void *p = NULL;
    int n = -1;
    EXPECT(cudaGetDeviceCount(&n), cudaErrorInsufficientDriver);
    EXPECT(cudaMalloc(&p, 1000), cudaErrorInsufficientDriver);
    EXPECT(cudaMallocHost(&p, 1000), cudaErrorInsufficientDriver);
    EXPECT(cudaMallocManaged(&p, 1000, cudaMemAttachGlobal), cudaErrorInsufficientDriver);
    EXPECT(cudaFree(p), cudaErrorInsufficientDriver);
    REQUIRE(p == NULL);
    return 0;
}
