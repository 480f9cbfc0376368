// Built with plain nvcc, whose default links the CUDA runtime statically
// (libcudart_static.a). Such a runtime cannot reach the simulated device;
// the sim must say why in one line. Prints the runtime's answer; exit 1 when
// the allocation fails.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, 1 << 20);
    std::printf("cudaMalloc: %s\n", cudaGetErrorName(e));
    if (e == cudaSuccess)
        cudaFree(p);
    return e != cudaSuccess;
}
