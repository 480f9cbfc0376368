/* t_robust: a program that does what real programs do to their descriptors,
 * signals and exit, run by robust.sh with and without the preload (issue 14).
 * usage: t_robust MODE [FILE]; every mode makes NALLOC 1 MiB allocations and
 * prints "allocs N" on stdout first.
 *   closefds FILE  close every descriptor >= 3, open FILE, write 17 bytes
 *   dup2 FILE      open FILE, write 17 bytes, dup2 it over every open
 *                  descriptor >= 3 (the trace's among them)
 *   closestd DIR   close 0-2, open DIR/in, DIR/out, DIR/err on them, write to
 *                  1, then an allocation fails (the preload's OOM diagnosis
 *                  must not land in DIR/err)
 *   fsize          RLIMIT_FSIZE 16 KiB, then 20000 incompressible records
 *                  (the trace keeps the first allocations, flushed before)
 *   signals        print every signal's disposition and the alternate stack,
 *                  set and reset SIGTERM and SIGINT, print them again
 *   _exit          _exit(0) right after the allocations
 *   quick_exit     quick_exit(0) right after the allocations
 *   overflow       unbounded recursion: SIGSEGV on a stack overflow */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NALLOC 10

static void *ptrs[NALLOC];

static int allocate(void)
{
    for (int i = 0; i < NALLOC; i++)
        if (cudaMalloc(&ptrs[i], 1u << 20) != cudaSuccess)
            return -1;
    printf("allocs %d\n", NALLOC);
    fflush(stdout);
    return 0;
}

static void release(void)
{
    for (int i = 0; i < NALLOC; i++)
        cudaFree(ptrs[i]);
}

/* Long enough for the writer's periodic flush (100 ms) to run. */
static void pause_ms(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
}

static int open_data(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "17 bytes of data\n", 17) != 17)
        return -1;
    return fd;
}

static int mode_closefds(const char *path)
{
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    int fd = open_data(path);
    if (fd < 0)
        return 3;
    pause_ms(300);
    release();
    pause_ms(300);
    return close(fd) == 0 ? 0 : 4;
}

static int mode_dup2(const char *path)
{
    int fd = open_data(path);
    if (fd < 0)
        return 3;
    for (int i = 3; i < 4096; i++)
        if (i != fd && fcntl(i, F_GETFD) >= 0)
            dup2(fd, i);
    pause_ms(300);
    release();
    pause_ms(300);
    return 0;
}

static int mode_closestd(const char *dir)
{
    char path[3][4096];
    const char *names[3] = {"in", "out", "err"};
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
        close(i);
    }
    for (int i = 0; i < 3; i++)
        if (open(path[i], i ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY | O_CREAT, 0644) != i)
            return 3;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)1 << 50); /* fails: the OOM diagnosis */
    dprintf(1, "daemon data, malloc of 1 PiB: %s\n", e == cudaSuccess ? "ok" : "failed");
    dprintf(2, "daemon log\n");
    release();
    return 0;
}

static int mode_fsize(void)
{
    struct rlimit rl = {16384, 16384};
    pause_ms(300); /* the first allocations reach the file before the limit */
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 3;
    unsigned long long x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        void *p = NULL;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: sizes the zstd cannot squeeze */
        if (cudaMalloc(&p, 256 + (size_t)(x % 65536)) == cudaSuccess)
            cudaFree(p);
    }
    release();
    printf("done\n");
    return 0;
}

static void print_dispositions(const char *when)
{
    printf("%s:", when);
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) != 0)
            continue;
        const char *h = sa.sa_handler == SIG_DFL ? "D" : sa.sa_handler == SIG_IGN ? "I" : "H";
        printf(" %d=%s/%x", sig, h, (unsigned)(sa.sa_flags & (SA_SIGINFO | SA_ONSTACK)));
    }
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0)
        printf(" altstack=%s", (ss.ss_flags & SS_DISABLE) ? "none" : "set");
    printf("\n");
}

static void on_term(int sig)
{
    (void)sig;
}

static int mode_signals(void)
{
    print_dispositions("start");
    signal(SIGTERM, on_term);
    signal(SIGINT, SIG_IGN);
    print_dispositions("set");
    printf("signal() returned %s\n", signal(SIGTERM, SIG_DFL) == on_term ? "on_term" : "other");
    signal(SIGINT, SIG_DFL);
    print_dispositions("reset");
    release();
    return 0;
}

static volatile long depth_limit = -1; /* never reached: the stack overflows first */

static int recurse(volatile char *prev, long depth)
{
    volatile char frame[4096];
    frame[0] = prev ? prev[0] + 1 : 0;
    if (depth == depth_limit)
        return 0;
    return recurse(frame, depth + 1) + frame[100];
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "", *arg = argc > 2 ? argv[2] : "";
    if (allocate() < 0)
        return 2;
    if (!strcmp(mode, "closefds"))
        return mode_closefds(arg);
    if (!strcmp(mode, "dup2"))
        return mode_dup2(arg);
    if (!strcmp(mode, "closestd"))
        return mode_closestd(arg);
    if (!strcmp(mode, "fsize"))
        return mode_fsize();
    if (!strcmp(mode, "signals"))
        return mode_signals();
    if (!strcmp(mode, "_exit"))
        _exit(0);
    if (!strcmp(mode, "quick_exit"))
        quick_exit(0);
    if (!strcmp(mode, "overflow"))
        return recurse(NULL, 0);
    fprintf(stderr, "t_robust: unknown mode '%s'\n", mode);
    return 2;
}
