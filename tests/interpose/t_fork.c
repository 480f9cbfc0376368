/* t_fork: the parent allocates around a fork; the child allocates and frees
 * too, then exits. The parent's trace holds exactly the parent's events, the
 * child writes nothing (interpose/README.md, "fork"). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tbook.h"

static tbook b;

static void *alloc(size_t size)
{
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess)
        exit(3);
    tb_alloc(&b, size, 0);
    return p;
}

int main(void)
{
    void *a = alloc(1 << 20), *c;
    int st = 0;
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        void *p = NULL;
        for (int i = 0; i < 100; i++)
            if (cudaMalloc(&p, 4096) == cudaSuccess)
                cudaFree(p);
        exit(0);
    }
    c = alloc(2 << 20);
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 4;
    if (cudaFree(a) != cudaSuccess)
        return 5;
    tb_free(&b, 1 << 20, 0);
    (void)c;
    tb_print(&b, "end=1");
    return 0;
}
