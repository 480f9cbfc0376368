/* sym_lib.c: a shared library whose allocating function is inlined into
 * its exported caller (symbols_test.sh): the leak's stack has an inline
 * chain (grab inlined into sym_make) inside a library the program loads. */
#include <cuda_runtime_api.h>
#include <stddef.h>

static inline __attribute__((always_inline)) void *grab(size_t n)
{
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess)
        return NULL;
    return p;
}

void *sym_make(size_t n);
void *sym_make(size_t n)
{
    return grab(n);
}
