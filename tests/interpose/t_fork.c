/* t_fork: forks while another thread allocates, frees and pushes NVTX
 * ranges, so that the preload's locks may be held at the fork; each child
 * allocates, frees and leaks on two threads (one after the other), one of
 * them forks a grandchild after its own session began. Every process writes
 * its own trace (interpose/README.md, "Fork"): the parent's holds exactly
 * the parent's events, each child's (and the grandchild's) exactly its own.
 *
 * Output: the parent's "expect:" line (no peak: the worker's allocations
 * interleave with main's; the ledger check holds it) and one line
 * "child-expect PID: KEY=VALUE ..." per child and grandchild, which
 * run_case.sh (mode fork) checks against the trace named for PID. */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tbook.h"

#define CHILDREN 6

static tbook parent, worker_book;
static _Atomic bool stop;

/* Every allocation's stack holds this frame (vt_check --frame must_alloc). */
__attribute__((noinline)) static void *must_alloc(tbook *b, size_t size)
{
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess)
        _exit(3);
    tb_alloc(b, size, 0);
    return p;
}

static void must_free(tbook *b, void *p, size_t size)
{
    if (cudaFree(p) != cudaSuccess)
        _exit(5);
    tb_free(b, size, 0);
}

/* The parent's other thread: pairs of allocation and free inside a range
 * until told to stop. */
static void *worker(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++) {
        nvtxRangePushA("worker");
        size_t size = 4096u * (1 + i % 16);
        must_free(&worker_book, must_alloc(&worker_book, size), size);
        nvtxRangePop();
    }
    return NULL;
}

static void child_expect(const tbook *b)
{
    printf("child-expect %d: allocs=%" PRIu64 " frees=%" PRIu64 " failed=0 alloc_bytes=%" PRIu64
           " peak=%" PRIu64 " leaked=%" PRIu64 " leaked_bytes=%" PRIu64
           " unmatched_frees=0 allocs_with_frame=%" PRIu64 " summary_peak_live=%" PRIu64
           " devices=1 meminfo=1\n",
           (int)getpid(), b->allocs, b->frees, b->bytes, b->peak, b->live_n, b->live, b->allocs,
           b->peak_n);
    fflush(stdout);
}

typedef struct child_work {
    tbook *b;
    int k, n;
} child_work;

/* n allocations of 64 KiB * (k + 1) + i * 512 B; every other one freed. */
static void *child_allocs(void *arg)
{
    child_work *w = arg;
    void *p[16];
    size_t size[16];
    for (int i = 0; i < w->n; i++) {
        size[i] = (size_t)(65536 * (w->k + 1) + i * 512);
        p[i] = must_alloc(w->b, size[i]);
    }
    for (int i = 0; i < w->n; i += 2)
        must_free(w->b, p[i], size[i]);
    return NULL;
}

static void wait_ok(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        _exit(4);
}

/* A child: its own allocations on main, then on a second thread; child 0
 * also forks a grandchild once its own session has begun. */
static void child(int k)
{
    tbook b = {0};
    child_work main_part = {&b, k, 10}, thread_part = {&b, k + 8, 5};
    pthread_t t;
    nvtxRangePushA("forking"); /* a name the parent's trace has: the child's must have it too */
    child_allocs(&main_part);
    if (pthread_create(&t, NULL, child_allocs, &thread_part) != 0 || pthread_join(t, NULL) != 0)
        _exit(6);
    if (k == 0) {
        pid_t g = fork();
        if (g < 0)
            _exit(2);
        if (g == 0) {
            tbook gb = {0};
            child_work part = {&gb, 20, 3};
            child_allocs(&part);
            child_expect(&gb);
            exit(0);
        }
        wait_ok(g);
    }
    nvtxRangePop();
    nvtxRangePop(); /* the parent's "forking" range: its push is not in the child's trace */
    child_expect(&b);
    exit(0);
}

int main(void)
{
    void *a = must_alloc(&parent, 1 << 20), *c;
    pthread_t t;
    pid_t pids[CHILDREN];
    nvtxInitialize(NULL); /* NVTX's lazy set-up is not for two threads at once */
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 2;
    for (int k = 0; k < CHILDREN; k++) {
        nvtxRangePushA("forking");
        pids[k] = fork();
        if (pids[k] < 0)
            return 2;
        if (pids[k] == 0)
            child(k);
        nvtxRangePop();
    }
    c = must_alloc(&parent, 2 << 20);
    for (int k = 0; k < CHILDREN; k++)
        wait_ok(pids[k]);
    atomic_store(&stop, true);
    if (pthread_join(t, NULL) != 0)
        return 2;
    must_free(&parent, a, 1 << 20);
    (void)c;
    printf("parent-pid: %d\n", (int)getpid());
    printf("expect: allocs=%" PRIu64 " frees=%" PRIu64 " failed=0 alloc_bytes=%" PRIu64
           " leaked=1 leaked_bytes=%d unmatched_frees=0 end=1 allocs_with_frame=%" PRIu64 "\n",
           parent.allocs + worker_book.allocs, parent.frees + worker_book.frees,
           parent.bytes + worker_book.bytes, 2 << 20, parent.allocs + worker_book.allocs);
    return 0;
}
