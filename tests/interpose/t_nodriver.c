/* t_nodriver: linked against the real libcudart.so.13 and run where no
 * driver exists: every call's result is printed, so the output with and
 * without vramtrace can be compared; the trace must list each failure. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "tbook.h"

static tbook b;

static void show(const char *what, cudaError_t rc)
{
    printf("%s -> %d %s\n", what, (int)rc, cudaGetErrorName(rc));
}

int main(void)
{
    static const size_t sizes[] = {1 << 20, 4096, 1};
    char extra[128] = "failed_errors=";
    void *p = NULL;
    size_t fr = 0, to = 0;
    for (int i = 0; i < 3; i++) {
        cudaError_t rc = cudaMalloc(&p, sizes[i]);
        show("cudaMalloc", rc);
        if (rc != cudaSuccess) {
            size_t len = strlen(extra);
            snprintf(extra + len, sizeof extra - len, "%s%d", i ? "," : "", (int)rc);
            b.failed++;
        }
        show("cudaGetLastError", cudaGetLastError());
    }
    show("cudaMemGetInfo", cudaMemGetInfo(&fr, &to));
    show("cudaFree(NULL)", cudaFree(NULL));
    show("cudaPeekAtLastError", cudaPeekAtLastError());
    tb_print(&b, extra);
    return 0;
}
