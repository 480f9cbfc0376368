/* A real nvcc-compiled program with a kernel: on the simulated device it
 * loads (even with LD_BIND_NOW), allocates, and its launch fails with
 * cudaErrorNotSupported instead of crashing. Prints what it saw. */
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void fill(float *p, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

int main(void)
{
    float *d = NULL;
    cudaError_t e = cudaMalloc((void **)&d, 1024 * sizeof(float));
    printf("malloc %s\n", cudaGetErrorName(e));
    fill<<<4, 256>>>(d, 1.0f, 1024);
    e = cudaGetLastError();
    printf("launch %s\n", cudaGetErrorName(e));
    e = cudaFree(d);
    printf("free %s\n", cudaGetErrorName(e));
    return 0;
}
