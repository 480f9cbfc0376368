/* t_exit: leaks at both API levels, then marks the start of exit() for the
 * simulated driver (vtsim_exit_begun, sim/README.md "Exit") in the exit
 * handler registered last, which runs first. Any driver call the preload
 * makes while exiting then prints "vramtrace-sim: a driver call at exit",
 * and run_case.sh fails. On an H200 (driver 580.159.04) such a call, made
 * by a handler registered after the first allocation returned, still
 * crashed in cuCtxGetDevice: the preload must make none. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "vtsim_exit_begun");
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cuMemAlloc(&d, 2 << 20) != CUDA_SUCCESS)
        return 2;
    if (!mark) {
        fprintf(stderr, "t_exit: not the simulated driver (no vtsim_exit_begun)\n");
        return 2;
    }
    atexit(mark);
    printf("expect: allocs=2 frees=0 leaked=2 leaked_bytes=3145728 end_status=0\n");
    return 0;
}
