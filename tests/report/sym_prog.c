/* sym_prog.c: keeps 8 allocations of 1..8 MiB made in sym_lib.c's
 * sym_make (a leak of 36 MiB), and makes and frees one of 4 KiB itself
 * (symbols_test.sh). */
#include <cuda_runtime_api.h>
#include <stdio.h>

void *sym_make(size_t n);

int main(void)
{
    static void *kept[8];
    for (int i = 0; i < 8; i++)
        kept[i] = sym_make((size_t)(i + 1) << 20);
    void *p = NULL;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    printf("kept %d allocations\n", kept[7] ? 8 : 0);
    return 0;
}
