/* An ordinary CUDA runtime program (gcc, the toolkit's headers, the real
 * -lcudart, no RPATH to the simulator) whose output is deterministic: pointer
 * offsets from the first allocation, error codes and strings, memory info.
 * "probe env" prints only the device as configured by the environment. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static void info(const char *when)
{
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    printf("%s: meminfo rc=%d free=%zu total=%zu used=%zu\n", when, e, f, t, t - f);
}

static int env_mode(void)
{
    struct cudaDeviceProp p;
    int n = 0;
    size_t f = 0, t = 0;
    cudaGetDeviceCount(&n);
    cudaGetDeviceProperties(&p, 0);
    cudaMemGetInfo(&f, &t);
    printf("devices=%d name=%s total=%zu reserve=%zu sm=%d cc=%d.%d\n", n, p.name, t, t - f,
           p.multiProcessorCount, p.major, p.minor);
    return 0;
}

int main(int argc, char **argv)
{
    void *p[6], *big;
    size_t sizes[] = {1, 1000, 4096, 2 * MiB, 5 * MiB + 3, 300};
    if (argc > 1 && strcmp(argv[1], "env") == 0)
        return env_mode();
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("runtime=%d driver=%d\n", rt, drv);
    info("start");
    for (int i = 0; i < 6; i++) {
        cudaError_t e = cudaMalloc(&p[i], sizes[i]);
        printf("cudaMalloc(%zu) rc=%d offset=%td\n", sizes[i], e, (char *)p[i] - (char *)p[0]);
    }
    info("allocated");
    cudaFree(p[2]);
    cudaError_t e = cudaMalloc(&p[2], 2048);
    printf("realloc rc=%d offset=%td\n", e, (char *)p[2] - (char *)p[0]);
    e = cudaMalloc(&big, (size_t)1 << 40);
    printf("huge rc=%d %s: %s\n", e, cudaGetErrorName(e), cudaGetErrorString(e));
    cudaError_t last = cudaGetLastError();
    cudaError_t then = cudaGetLastError(); /* cleared by the first read */
    printf("last=%s then=%s\n", cudaGetErrorName(last), cudaGetErrorName(then));
    e = cudaFree(p[2]);
    e = cudaFree(p[2]);
    printf("double free rc=%d %s\n", e, cudaGetErrorString(e));
    e = cudaSetDevice(7);
    printf("setdevice(7) rc=%d %s\n", e, cudaGetErrorName(e));
    for (int i = 0; i < 6; i++)
        if (i != 2)
            cudaFree(p[i]);
    info("end");
    return 0;
}
