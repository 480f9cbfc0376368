/* A process forked without exec after its parent initialised CUDA cannot
 * use it (sim/README.md "Fork"): every call of such a child, and of its own
 * children, fails with the initialisation error (runtime 3,
 * cudaErrorInitializationError; driver 3, CUDA_ERROR_NOT_INITIALIZED), while
 * a child forked before the parent's first call uses the device as any
 * process. Exit 0 when all of that holds, else 1 with the calls that did not. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int bad;

static void expect(const char *who, const char *call, int got, int want)
{
    if (got == want)
        return;
    printf("%s: %s returned %d, expected %d\n", who, call, got, want);
    fflush(stdout);
    bad = 1;
}

/* Runs f in a child and returns whether the child exited 0. */
static int in_child(void (*f)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        f();
        fflush(stdout);
        _exit(bad);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A child of a process that has not initialised CUDA. */
static void usable(void)
{
    void *p = NULL;
    expect("child forked before cuInit", "cudaMalloc", cudaMalloc(&p, 4096), cudaSuccess);
    expect("child forked before cuInit", "cudaFree", cudaFree(p), cudaSuccess);
}

/* A child of a refused child: refused too. */
static void refused_grandchild(void)
{
    void *p = NULL;
    expect("grandchild", "cudaMalloc", cudaMalloc(&p, 4096), cudaErrorInitializationError);
    expect("grandchild", "cuInit", cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
}

/* A child of a process that initialised CUDA: nothing works. */
static void refused(void)
{
    const char *who = "child forked after cuInit";
    void *p = NULL;
    int n = -1;
    size_t free_b, total_b;
    CUdeviceptr d;
    CUdevice dev;
    CUcontext ctx;
    expect(who, "cudaMalloc", cudaMalloc(&p, 4096), cudaErrorInitializationError);
    expect(who, "cudaMallocManaged", cudaMallocManaged(&p, 4096, cudaMemAttachGlobal),
           cudaErrorInitializationError);
    expect(who, "cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b), cudaErrorInitializationError);
    expect(who, "cudaGetDeviceCount", cudaGetDeviceCount(&n), cudaErrorInitializationError);
    expect(who, "cudaSetDevice", cudaSetDevice(0), cudaErrorInitializationError);
    expect(who, "cudaFree(NULL)", cudaFree(NULL), cudaErrorInitializationError);
    expect(who, "cuInit", cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
    expect(who, "cuDeviceGetCount", cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    expect(who, "cuDeviceGet", cuDeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);
    expect(who, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, 0),
           CUDA_ERROR_NOT_INITIALIZED);
    expect(who, "cuMemAlloc", cuMemAlloc(&d, 4096), CUDA_ERROR_NOT_INITIALIZED);
    expect(who, "cuMemGetInfo", cuMemGetInfo(&free_b, &total_b), CUDA_ERROR_NOT_INITIALIZED);
    if (!in_child(refused_grandchild))
        bad = 1;
}

int main(void)
{
    void *p = NULL;
    if (!in_child(usable))
        bad = 1;
    expect("parent", "cudaMalloc", cudaMalloc(&p, 1 << 20), cudaSuccess);
    if (!in_child(refused))
        bad = 1;
    expect("parent", "cudaFree", cudaFree(p), cudaSuccess);
    puts(bad ? "FAIL" : "ok");
    return bad;
}
