/* t_leak: leaks from a named function; the report must name it with its
 * file:line. Prints the line of the leaking call for the test to look for. */
#include <cuda_runtime_api.h>
#include <stdio.h>

__attribute__((noinline)) static void *leaky_function(size_t size)
{
    void *p = NULL;
    int line = __LINE__ + 1;
    if (cudaMalloc(&p, size) != cudaSuccess)
        return NULL;
    printf("leak_site: leaky_function t_leak.c:%d\n", line);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return p;
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        if (!leaky_function((size_t)1 << 20))
            return 2;
    /* end_status: the END record carries the status main returns. */
    printf("expect: allocs=3 frees=0 leaked=3 leaked_bytes=3145728 end_status=0\n");
    return 0;
}
