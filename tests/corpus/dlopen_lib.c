/* libcorpus_alloc.so for dlopen_main: a library that allocates. */
#include <cuda_runtime_api.h>

int corpus_lib_alloc(void **p, size_t n)
{
    return (int)cudaMalloc(p, n);
}

int corpus_lib_free(void *p)
{
    return (int)cudaFree(p);
}
