/* t_crash: allocations, then a crash. usage: t_crash segv|abort|kill
 * segv/abort: dies at once; kill: sleeps 1 s (ten times the writer's 100 ms
 * flush interval, so a loaded CI machine still flushes once; nothing flushes
 * explicitly), prints "ready" and waits to be killed with SIGKILL. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tbook.h"

static tbook b;
static volatile int *volatile nowhere; /* NULL, opaque to the compiler */

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    char extra[64] = "";
    for (int i = 0; i < 10; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, (size_t)(i + 1) << 16) != cudaSuccess)
            return 2;
        tb_alloc(&b, (uint64_t)(i + 1) << 16, 0);
    }
    if (strcmp(mode, "kill") != 0)
        snprintf(extra, sizeof extra, "end=1 end_signal=%d",
                 strcmp(mode, "abort") ? SIGSEGV : SIGABRT);
    tb_print(&b, extra);
    if (strcmp(mode, "segv") == 0)
        *nowhere = 1;
    if (strcmp(mode, "abort") == 0)
        abort();
    nanosleep(&(struct timespec){1, 0}, NULL);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
