/* real_prog.c: a small CUDA program with known behaviour for the report's
 * real-program test: 100 MiB leaked at leak_site (under build_model <
 * init_layers < load_weights), 1 MiB per "train_step"
 * iteration kept at grow_site (5 iterations), 10 MiB temporaries freed,
 * then one allocation larger than any device (an OOM). */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

__attribute__((noinline)) void *leak_site(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    return p;
}

/* The leak's callers: a stack deeper than the HTML page shows at first
 * (html_cdp.py expands it), ending at main (real_test.sh). */
__attribute__((noinline)) void *load_weights(size_t bytes)
{
    void *p = leak_site(bytes);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
    return p;
}

__attribute__((noinline)) void *init_layers(size_t bytes)
{
    void *p = load_weights(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *build_model(size_t bytes)
{
    void *p = init_layers(bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *grow_site(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    return p;
}

__attribute__((noinline)) int too_big(void)
{
    void *p = NULL;
    return cudaMalloc(&p, (size_t)1 << 44) == cudaSuccess; /* 16 TiB */
}

int main(void)
{
    if (!build_model(100u << 20)) {
        fprintf(stderr, "real_prog: cudaMalloc failed\n");
        return 1;
    }
    for (int i = 0; i < 5; i++) {
        nvtxRangePushA("train_step");
        grow_site(1u << 20);
        void *tmp = NULL;
        cudaMalloc(&tmp, 10u << 20);
        cudaFree(tmp);
        nvtxRangePop();
    }
    if (too_big())
        return 1;
    printf("real_prog done\n");
    return 0;
}
