/* t_rank: one rank of a simulated distributed job (or a plain CUDA
 * program): RANK (default 0) picks its spec argv[1 + RANK] (else argv[1]),
 * "COUNTxMIB": COUNT cudaMalloc of MIB MiB each on device RANK % devices,
 * all freed before exit.
 *
 * VT_SYNC=DIR (the shared-device test): rank 0 allocates in hold_block,
 * creates DIR/held and waits for DIR/done before freeing; other ranks wait
 * for DIR/held, allocate in work_block (an out-of-memory failure is
 * reported on stdout, not an error), then create DIR/done.
 *
 * VT_SPAWN=1: after its own allocations, the program (a CUDA process
 * itself) forks and execs itself once more without VT_SPAWN, and waits: the
 * new program is another recording process of the run.
 *
 * stdout: "rank R device D ok=N failed=F". Exit 0 unless CUDA misbehaves. */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_BLOCKS 64

static void touch(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0)
        close(fd);
}

static int wait_for(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    for (int i = 0; i < 1000; i++) { /* 10 s */
        if (access(p, F_OK) == 0)
            return 0;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    fprintf(stderr, "t_rank: %s never appeared\n", p);
    return -1;
}

__attribute__((noinline)) static cudaError_t hold_block(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

__attribute__((noinline)) static cudaError_t work_block(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

/* Run this program again as a child (fork + exec); its exit status. */
static int spawn_self(char **argv)
{
    int st;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("VT_SPAWN");
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    const char *rank_s = getenv("RANK"), *sync = getenv("VT_SYNC");
    int rank = rank_s ? atoi(rank_s) : 0, ndev = 0, count = 0, mib = 0, ok = 0, failed = 0;
    void *blocks[MAX_BLOCKS];
    if (argc < 2 || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        return 2;
    const char *spec = rank + 1 < argc ? argv[rank + 1] : argv[1];
    if (sscanf(spec, "%dx%d", &count, &mib) != 2 || count < 0 || count > MAX_BLOCKS)
        return 2;
    int dev = rank % ndev;
    if (cudaSetDevice(dev) != cudaSuccess)
        return 3;
    bool holder = sync && rank == 0;
    if (sync && !holder && wait_for(sync, "held") != 0)
        return 4;
    for (int i = 0; i < count; i++) {
        void *p = NULL;
        size_t bytes = (size_t)mib << 20;
        cudaError_t e = holder ? hold_block(&p, bytes) : work_block(&p, bytes);
        if (e == cudaSuccess)
            blocks[ok++] = p;
        else
            failed++;
    }
    if (holder) {
        touch(sync, "held");
        if (wait_for(sync, "done") != 0)
            return 4;
    } else if (sync) {
        touch(sync, "done");
    }
    for (int i = 0; i < ok; i++)
        cudaFree(blocks[i]);
    printf("rank %d device %d ok=%d failed=%d\n", rank, dev, ok, failed);
    if (getenv("VT_SPAWN") && spawn_self(argv) != 0)
        return 5;
    return 0;
}
