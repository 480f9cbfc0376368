/* t_oom: allocates from two named functions, then asks for more than the
 * device has left, so the preload prints its OOM diagnosis. The functions are
 * non-static (and the program is linked with -rdynamic) so that dladdr can
 * name them. Arguments: "pid" prints getpid() first; "deep" allocates once
 * more from 20 nested calls (for VRAMTRACE_STACK_DEPTH); "flat" makes the
 * same three allocations and the failure from main itself, each at its own
 * line (the diagnosis must name main at each line, not a frame every stack
 * shares); "twins" allocates from two callers of one layer function (see
 * below); "invalid" first makes an allocation call with an invalid argument
 * (its error is not out of memory: no diagnosis); "host" first fails to pin
 * 16 TiB of host memory (a diagnosis of pinned host memory, not a device's). Stdout must be the
 * same with and without the preload (apart from the pid line). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void *alloc_weights(size_t size);
void *alloc_activations(size_t size);
int nested_alloc(int depth);

__attribute__((noinline)) void *alloc_weights(size_t size)
{
    void *p = NULL;
    int rc = cudaMalloc(&p, size);
    printf("weights %zu: %d\n", size, rc);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *alloc_activations(size_t size)
{
    void *p = NULL;
    int rc = cudaMalloc(&p, size);
    printf("activations %zu: %d\n", size, rc);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) int nested_alloc(int depth)
{
    void *p = NULL;
    int rc;
    if (depth > 0) {
        rc = nested_alloc(depth - 1);
        __asm__ volatile("" ::: "memory"); /* no tail call: keep every frame */
        return rc;
    }
    rc = cudaMalloc(&p, 4096);
    return rc == cudaSuccess ? (int)cudaFree(p) : rc;
}

/* "twins": one allocating function (layer_alloc) called from one layer
 * function (conv_pass), that from one block, that from forward_pass and
 * backward_pass: two live sites whose culprit and caller are the same; the
 * diagnosis must name them apart (it listed the same line twice). */
void *layer_alloc(size_t size);
void *conv_pass(size_t size);
void *block(size_t size);
void forward_pass(void);
void backward_pass(void);

__attribute__((noinline)) void *layer_alloc(size_t size)
{
    void *p = NULL;
    int rc = cudaMalloc(&p, size);
    printf("layer %zu: %d\n", size, rc);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *conv_pass(size_t size)
{
    void *p = layer_alloc(size);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
    return p;
}

__attribute__((noinline)) void *block(size_t size)
{
    void *p = conv_pass(size);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void forward_pass(void)
{
    block((size_t)24 << 20);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void backward_pass(void)
{
    for (volatile int i = 0; i < 2; i++) /* one call site: one stack */
        block((size_t)8 << 20);
    __asm__ volatile("" ::: "memory");
}

/* "flat": every allocation in main, at its own line. */
__attribute__((noinline)) static int flat(void)
{
    void *w = NULL, *a[2] = {NULL, NULL}, *huge = NULL;
    int rc = cudaMalloc(&w, (size_t)24 << 20);
    printf("weights: %d\n", rc);
    for (volatile int i = 0; i < 2; i++) { /* one call site (not unrolled): one stack */
        rc = cudaMalloc(&a[i], (size_t)8 << 20);
        printf("activations: %d\n", rc);
    }
    rc = cudaMalloc(&huge, (size_t)48 << 20);
    printf("too much: %d %s\n", rc, cudaGetErrorName((cudaError_t)rc));
    return 0;
}

int main(int argc, char **argv)
{
    void *huge = NULL;
    int rc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "pid") == 0)
            printf("pid %d\n", (int)getpid());
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "flat") == 0)
            return flat();
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "twins") == 0) {
            forward_pass();
            backward_pass();
            rc = cudaMalloc(&huge, (size_t)48 << 20);
            printf("too much: %d %s\n", rc, cudaGetErrorName((cudaError_t)rc));
            return 0;
        }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "host") == 0) { /* more pinned host memory than any host has */
            void *h = NULL;
            printf("host: %d\n", (int)cudaMallocHost(&h, (size_t)1 << 44));
            (void)cudaGetLastError();
        }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "invalid") == 0) {
            size_t pitch;
            void *q = NULL;
            printf("invalid: %d\n", (int)cudaMallocPitch(&q, &pitch, 0, 10));
            (void)cudaGetLastError();
        }
    alloc_weights((size_t)24 << 20);
    for (volatile int i = 0; i < 2; i++) /* one call site (not unrolled): one stack */
        alloc_activations((size_t)8 << 20);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "deep") == 0)
            printf("deep: %d\n", nested_alloc(20));
    rc = cudaMalloc(&huge, (size_t)48 << 20);
    printf("too much: %d %s\n", rc, cudaGetErrorName((cudaError_t)rc));
    return 0;
}
