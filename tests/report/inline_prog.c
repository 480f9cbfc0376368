/* inline_prog.c: logical frames of inlined code, for the report's
 * inline-frames test (inline_test.sh). dev_alloc is inlined into two
 * callers (directly, and through inlined mid_alloc), each at several call
 * sites; every allocation is leaked so that each call site is one leak
 * entry. The test finds the expected lines by the marker comments
 * ("@site:NAME"), never by number. Built with -O2 -g, and stripped. */
#include <cuda_runtime.h>
#include <stdio.h>

#define ALWAYS_INLINE __attribute__((always_inline)) inline

static ALWAYS_INLINE void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) /* @site:inner */
        return NULL;
    return p;
}

static ALWAYS_INLINE void *mid_alloc(size_t bytes)
{
    return dev_alloc(bytes * 2); /* @site:mid */
}

__attribute__((noinline)) int caller_a(size_t bytes)
{
    int ok = dev_alloc(bytes) != NULL;         /* @site:a1 */
    ok &= dev_alloc(bytes + 4096) != NULL;     /* @site:a2 */
    ok &= dev_alloc(bytes + 2 * 4096) != NULL; /* @site:a3 */
    return ok;
}

__attribute__((noinline)) int caller_b(size_t bytes)
{
    return mid_alloc(bytes) != NULL; /* @site:b */
}

int main(void)
{
    int ok = caller_a(1u << 20); /* @site:main_a */
    ok &= caller_b(3u << 20);    /* @site:main_b */
    if (!ok) {
        fprintf(stderr, "inline_prog: cudaMalloc failed\n");
        return 1;
    }
    printf("inline_prog done\n");
    return 0;
}
