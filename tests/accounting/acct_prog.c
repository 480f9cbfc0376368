/* acct_prog: allocation patterns whose report the accounting tests check
 * (acct_test.py). Each case is what issue 11 saw miscounted:
 *
 *   producer  a thread allocates 4 x 64 MiB and makes no further CUDA call;
 *             main then asks for 128 MiB (fails on a 640 MiB device with a
 *             300 MiB context) and frees the four
 *   hold8     8 threads each hold 1 MiB at the same time (barrier), then free
 *   vmm       cuMemCreate 64 MiB, map, release at once (vectorAddMMAP), an
 *             OOM while it is still mapped, then unmap
 *   vmmleak   the same, never unmapped
 *   pinned    32 MiB pinned host memory and 1 MiB device memory leaked
 *   register  two host buffers registered (runtime and driver), one kept
 *   bandwidth allocate, copy, free, 20 times, each larger (cuda-samples
 *             bandwidthTest, shmoo mode)
 *   streamord cudaMallocAsync / cudaFreeAsync per step (streamOrderedAllocation)
 *   leakloop  each step leaks 1 MiB and allocates/frees a scratch buffer
 *
 * Exit status 0 when every call did what the case expects, else 2.
 * Sizes are MiB multiples so the sim's rounding never matters. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static int bad;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "acct_prog: %s\n", what);
        bad = 1;
    }
}

/* ---- producer --------------------------------------------------------------- */

static void *produced[4];

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++)
        expect(cudaMalloc(&produced[i], 64 * MiB) == cudaSuccess, "producer cudaMalloc");
    return NULL;
}

static void case_producer(void)
{
    pthread_t t;
    void *p = NULL;
    expect(cudaFree(NULL) == cudaSuccess, "init");
    pthread_create(&t, NULL, producer, NULL);
    pthread_join(t, NULL);
    expect(cudaMalloc(&p, 128 * MiB) == cudaErrorMemoryAllocation, "128 MiB should not fit");
    for (int i = 0; i < 4; i++)
        expect(cudaFree(produced[i]) == cudaSuccess, "cudaFree");
}

/* ---- hold8 ------------------------------------------------------------------ */

static pthread_barrier_t barrier;

static void *holder(void *arg)
{
    void *p = NULL;
    (void)arg;
    expect(cudaMalloc(&p, MiB) == cudaSuccess, "holder cudaMalloc");
    pthread_barrier_wait(&barrier); /* all 8 live now */
    pthread_barrier_wait(&barrier);
    expect(cudaFree(p) == cudaSuccess, "holder cudaFree");
    return NULL;
}

static void case_hold8(void)
{
    pthread_t t[8];
    expect(cudaFree(NULL) == cudaSuccess, "init");
    pthread_barrier_init(&barrier, NULL, 9);
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, holder, NULL);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
}

/* ---- vmm ---------------------------------------------------------------------- */

static void case_vmm(int unmap)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    void *p = NULL;
    size_t size = 64 * MiB;
    expect(cudaFree(NULL) == cudaSuccess, "init");
    expect(cuMemAddressReserve(&va, size, 0, 0, 0) == CUDA_SUCCESS, "reserve");
    expect(cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS, "create");
    expect(cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS, "map");
    expect(cuMemRelease(h) == CUDA_SUCCESS, "release"); /* memory stays: still mapped */
    /* 640 MiB device, 300 MiB context, 64 MiB mapped: 300 MiB does not fit */
    expect(cudaMalloc(&p, 300 * MiB) == cudaErrorMemoryAllocation, "300 MiB should not fit");
    if (unmap)
        expect(cuMemUnmap(va, size) == CUDA_SUCCESS, "unmap");
}

/* ---- host kinds ------------------------------------------------------------------ */

static void case_pinned(void)
{
    void *h = NULL, *d = NULL, *h2 = NULL;
    expect(cudaMallocHost(&h, 32 * MiB) == cudaSuccess, "cudaMallocHost");
    expect(cudaMalloc(&d, MiB) == cudaSuccess, "cudaMalloc");
    expect(cudaMallocHost(&h2, 4 * MiB) == cudaSuccess, "cudaMallocHost 2");
    expect(cudaFreeHost(h2) == cudaSuccess, "cudaFreeHost");
}

static void case_register(void)
{
    size_t n = 8 * MiB;
    void *a = aligned_alloc(4096, n), *b = aligned_alloc(4096, n);
    expect(a && b, "aligned_alloc");
    expect(cudaHostRegister(a, n, cudaHostRegisterDefault) == cudaSuccess, "cudaHostRegister");
    expect(cudaFree(NULL) == cudaSuccess, "init");
    expect(cuMemHostRegister(b, n, 0) == CUDA_SUCCESS, "cuMemHostRegister");
    expect(cudaHostUnregister(a) == cudaSuccess, "cudaHostUnregister");
    free(a); /* b stays registered: a host_registered leak */
}

/* ---- loops ------------------------------------------------------------------------ */

/* bandwidthTest's shmoo mode: each step copies a larger buffer, and spends
 * its time (here a 3 ms sleep) while the buffers are live: sampled at
 * arbitrary instants the live bytes climb, though nothing leaks. */
static void case_bandwidth(void)
{
    for (int i = 0; i < 20; i++) {
        void *h = NULL, *d = NULL;
        size_t n = (size_t)(i + 1) * MiB;
        expect(cudaMalloc(&d, n) == cudaSuccess, "cudaMalloc");
        expect(cudaMallocHost(&h, n) == cudaSuccess, "cudaMallocHost");
        memset(h, i, n);
        expect(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) == cudaSuccess, "H2D");
        expect(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
        usleep(3000);
        expect(cudaFree(d) == cudaSuccess, "cudaFree");
        expect(cudaFreeHost(h) == cudaSuccess, "cudaFreeHost");
    }
}

static void case_streamord(void)
{
    cudaStream_t s;
    expect(cudaStreamCreate(&s) == cudaSuccess, "stream");
    for (int i = 0; i < 20; i++) {
        void *a = NULL, *b = NULL;
        expect(cudaMallocAsync(&a, 8 * MiB, s) == cudaSuccess, "cudaMallocAsync");
        expect(cudaMallocAsync(&b, 2 * MiB, s) == cudaSuccess, "cudaMallocAsync");
        expect(cudaMemsetAsync(a, 1, 8 * MiB, s) == cudaSuccess, "memset");
        expect(cudaFreeAsync(b, s) == cudaSuccess, "cudaFreeAsync");
        expect(cudaFreeAsync(a, s) == cudaSuccess, "cudaFreeAsync");
        expect(cudaStreamSynchronize(s) == cudaSuccess, "sync");
    }
    cudaStreamDestroy(s);
}

static void case_leakloop(void)
{
    for (int i = 0; i < 12; i++) {
        void *leak = NULL, *scratch = NULL;
        expect(cudaMalloc(&leak, MiB) == cudaSuccess, "leak");
        expect(cudaMalloc(&scratch, 4 * MiB) == cudaSuccess, "scratch");
        expect(cudaFree(scratch) == cudaSuccess, "free scratch");
    }
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "producer"))
        case_producer();
    else if (!strcmp(c, "hold8"))
        case_hold8();
    else if (!strcmp(c, "vmm"))
        case_vmm(1);
    else if (!strcmp(c, "vmmleak"))
        case_vmm(0);
    else if (!strcmp(c, "pinned"))
        case_pinned();
    else if (!strcmp(c, "register"))
        case_register();
    else if (!strcmp(c, "bandwidth"))
        case_bandwidth();
    else if (!strcmp(c, "streamord"))
        case_streamord();
    else if (!strcmp(c, "leakloop"))
        case_leakloop();
    else {
        fprintf(stderr, "usage: acct_prog producer|hold8|vmm|vmmleak|pinned|register|bandwidth|"
                        "streamord|leakloop\n");
        return 2;
    }
    return bad ? 2 : 0;
}
