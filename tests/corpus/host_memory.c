/* host_memory: pinned host memory (cudaMallocHost leaked, cudaHostAlloc
 * freed) and host-registered memory (cudaHostRegister / cudaHostUnregister,
 * a double registration, an unknown pointer), none of it device memory. */
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    void *pinned, *mapped, *dev;
    static char page[3][8192];
    size_t f0, f1, t;
    EXPECT(cudaMemGetInfo(&f0, &t), cudaSuccess);
    EXPECT(cudaMallocHost(&pinned, 3 * MiB), cudaSuccess); /* leaked */
    EXPECT(cudaHostAlloc(&mapped, 4096, cudaHostAllocMapped), cudaSuccess);
    EXPECT(cudaHostGetDevicePointer(&dev, mapped, 0), cudaSuccess);
    EXPECT(cudaFreeHost(mapped), cudaSuccess);
    EXPECT(cudaHostRegister(page[0], sizeof page[0], cudaHostRegisterDefault), cudaSuccess);
    EXPECT(cudaHostRegister(page[1], sizeof page[1], cudaHostRegisterPortable), cudaSuccess);
    EXPECT(cudaHostRegister(page[0] + 100, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
    EXPECT(cudaHostUnregister(page[2]), cudaErrorHostMemoryNotRegistered);
    EXPECT(cudaHostUnregister(page[0]), cudaSuccess);
    EXPECT(cudaHostUnregister(page[0]), cudaErrorHostMemoryNotRegistered);
    EXPECT(cudaHostRegister(page[2], sizeof page[2], 0), cudaSuccess); /* left registered */
    EXPECT(cudaHostUnregister(page[1]), cudaSuccess);
    EXPECT(cudaMemGetInfo(&f1, &t), cudaSuccess);
    REQUIRE(f0 == f1);
    return 0;
}
