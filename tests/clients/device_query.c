/* A cuda-samples-style deviceQuery on the runtime API (shared libcudart):
 * every device's properties and every cudaDeviceAttr value 1 ..
 * cudaDevAttrMax - 1, one "attr N V" line each ("attr N error E" when the
 * runtime refuses one). Exit 0 when every device was queried. */
#include <cuda_runtime_api.h>
#include <stdio.h>

static int query(int dev)
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) {
        printf("device %d: cudaGetDeviceProperties: %s\n", dev, cudaGetErrorName(e));
        return 1;
    }
    printf("device %d \"%s\" cc %d.%d sms %d mem %zu\n", dev, p.name, p.major, p.minor,
           p.multiProcessorCount, p.totalGlobalMem);
    for (int a = 1; a < cudaDevAttrMax; a++) {
        int v = 0;
        e = cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)a, dev);
        if (e == cudaSuccess)
            printf("attr %d %d\n", a, v);
        else
            printf("attr %d error %s\n", a, cudaGetErrorName(e));
    }
    cudaGetLastError();
    return 0;
}

int main(void)
{
    int n = 0, drv = 0, rt = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        printf("cudaGetDeviceCount: %s\n", cudaGetErrorName(e));
        return 1;
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    printf("devices %d driver %d runtime %d\n", n, drv, rt);
    int bad = 0;
    for (int d = 0; d < n; d++)
        bad |= query(d);
    for (int d = 0; d < n; d++)
        for (int peer = 0; peer < n; peer++) {
            int can = -1;
            if (peer != d && cudaDeviceCanAccessPeer(&can, d, peer) == cudaSuccess)
                printf("peer %d %d %d\n", d, peer, can);
        }
    return bad;
}
