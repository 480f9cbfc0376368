/* t_sequence: a known sequence of runtime allocations of every hooked kind,
 * some freed, some leaked, one failing (cudaMallocFromPoolAsync included); its bookkeeping is the
 * expectation. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "tbook.h"

static tbook b;

static void *dev_alloc(size_t size)
{
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess)
        exit(3);
    tb_alloc(&b, size, 0);
    return p;
}

static void dev_free(void *p, size_t size)
{
    if (cudaFree(p) != cudaSuccess)
        exit(4);
    tb_free(&b, size, 0);
}

/* cudaMallocFromPoolAsync with the device's pool (explicit pools are not
 * simulated): one allocation, one free, one left live. */
static void from_pool(void)
{
    cudaMemPool_t pool;
    void *a = NULL, *c = NULL;
    if (cudaDeviceGetDefaultMemPool(&pool, 0) != cudaSuccess ||
        cudaMallocFromPoolAsync(&a, 3 << 20, pool, 0) != cudaSuccess ||
        cudaMallocFromPoolAsync(&c, 5000, pool, 0) != cudaSuccess)
        exit(14);
    tb_alloc(&b, 3 << 20, 0);
    tb_alloc(&b, 5000, 0);
    if (cudaFreeAsync(a, 0) != cudaSuccess)
        exit(15);
    tb_free(&b, 3 << 20, 0);
}

static void others(void)
{
    void *m = NULL, *pp = NULL, *h1 = NULL, *h2 = NULL, *a = NULL;
    size_t pitch = 0;
    struct cudaPitchedPtr p3;
    if (cudaMallocManaged(&m, 4 << 20, cudaMemAttachGlobal) != cudaSuccess)
        exit(5);
    tb_alloc(&b, 4 << 20, 0);
    if (cudaMallocPitch(&pp, &pitch, 1000, 10) != cudaSuccess)
        exit(6);
    tb_alloc(&b, (uint64_t)pitch * 10, 0);
    if (cudaMalloc3D(&p3, (struct cudaExtent){100, 4, 3}) != cudaSuccess)
        exit(7);
    tb_alloc(&b, (uint64_t)p3.pitch * 4 * 3, 0);
    if (cudaMallocHost(&h1, 64 << 10) != cudaSuccess || cudaHostAlloc(&h2, 8 << 10, 0))
        exit(8);
    tb_alloc(&b, 64 << 10, 1);
    tb_alloc(&b, 8 << 10, 1);
    if (cudaFreeHost(h1) != cudaSuccess)
        exit(9);
    tb_free(&b, 64 << 10, 1);
    if (cudaMallocAsync(&a, 2 << 20, 0) != cudaSuccess)
        exit(10);
    tb_alloc(&b, 2 << 20, 0);
    if (cudaFreeAsync(a, 0) != cudaSuccess)
        exit(11);
    tb_free(&b, 2 << 20, 0);
    from_pool();
}

int main(void)
{
    static const size_t sizes[] = {1 << 20, 3000, 256 << 10, 17 << 20, 512};
    void *p[5];
    void *huge = NULL;
    size_t fr, to;
    char extra[64];
    cudaError_t rc;
    if (cudaSetDevice(0) != cudaSuccess)
        return 2;
    for (int i = 0; i < 5; i++)
        p[i] = dev_alloc(sizes[i]);
    dev_free(p[1], sizes[1]);
    dev_free(p[3], sizes[3]);
    others();
    rc = cudaMalloc(&huge, (size_t)1 << 50);
    if (rc == cudaSuccess)
        return 12;
    b.failed++;
    if (cudaMemGetInfo(&fr, &to) != cudaSuccess || cudaFree(NULL) != cudaSuccess)
        return 13;
    snprintf(extra, sizeof extra, "failed_errors=%d end=1 stackless_allocs=0 devices=1", (int)rc);
    tb_print(&b, extra);
    return 0;
}
