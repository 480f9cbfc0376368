/* t_fork: children forked without exec, the two ways a real driver allows,
 * each recording its own trace (interpose/README.md, "Fork"):
 *
 * - EARLY children, forked before the parent's first CUDA call while
 *   another thread pushes and pops NVTX ranges and marks new names (so the
 *   preload's string and buffer locks may be held at the fork): each
 *   allocates, frees and leaks on two threads (one after the other); one of
 *   them forks a grandchild after its own session began and before its
 *   first CUDA call.
 * - LATE children, forked after the parent allocated while the other thread
 *   allocates and frees (so the live map's and the stack table's locks may be
 *   held): CUDA cannot be used in a child of a process that initialised it
 *   (sim/README.md "Fork"), so each of their allocations fails with the
 *   initialisation error, and their traces must hold those failures, with
 *   stacks, and nothing of the parent's.
 *
 * The parent's trace holds exactly the parent's events, each child's (and
 * the grandchild's) exactly its own. The parent's session begins (a mark)
 * before its first CUDA call, so a preload that initialised CUDA when its
 * session began would make the early children fail (measured: a cuInit at
 * the session's start fails this test).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tbook.h"

#define EARLY 4
#define LATE 4

static tbook parent, worker_book;
static _Atomic bool stop, cuda_used;

/* Every allocation's stack holds this frame (vt_check --frame must_alloc),
 * and every failed allocation's. The call must return want (a late child:
 * the initialisation error; else success). */
__attribute__((noinline)) static void *must_alloc(tbook *b, size_t size, cudaError_t want)
{
    void *p = NULL;
    if (cudaMalloc(&p, size) != want)
        _exit(3);
    if (want == cudaSuccess)
        tb_alloc(b, size, 0);
    return p;
}

static void must_free(tbook *b, void *p, size_t size)
{
    if (cudaFree(p) != cudaSuccess)
        _exit(5);
    tb_free(b, size, 0);
}

/* The parent's other thread: ranges and marks of new names until the
 * parent uses CUDA, then pairs of allocation and free inside a range, until
 * told to stop. */
static void *worker(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++) {
        nvtxRangePushA("worker");
        if (atomic_load(&cuda_used)) {
            size_t size = 4096u * (1 + i % 16);
            must_free(&worker_book, must_alloc(&worker_book, size, cudaSuccess), size);
        } else {
            char name[32];
            snprintf(name, sizeof name, "mark %u", i % 4096);
            nvtxMarkA(name);
        }
        nvtxRangePop();
    }
    return NULL;
}

static void child_expect(const tbook *b, unsigned failed)
{
    char errors[64] = "";
    for (unsigned i = 0; i < failed && i < 16; i++)
        strcat(errors, i ? ",3" : "3");
    printf("child-expect %d: allocs=%" PRIu64 " frees=%" PRIu64 " failed=%u alloc_bytes=%" PRIu64
           " peak=%" PRIu64 " leaked=%" PRIu64 " leaked_bytes=%" PRIu64
           " unmatched_frees=0 allocs_with_frame=%" PRIu64 " failed_with_frame=%u"
           " summary_peak_live=%" PRIu64 " devices=%d meminfo=%d%s%s\n",
           (int)getpid(), b->allocs, b->frees, failed, b->bytes, b->peak, b->live_n, b->live,
           b->allocs, failed, b->peak_n, failed ? 0 : 1, failed ? 0 : 1,
           failed ? " failed_errors=" : "", errors);
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
        p[i] = must_alloc(w->b, size[i], cudaSuccess);
    }
    for (int i = 0; i < w->n; i += 2)
        must_free(w->b, p[i], size[i]);
    return NULL;
}

/* A late child's allocations of 64 KiB * (k + 1) + i * 512 B: each must fail. */
static void *child_fails(void *arg)
{
    child_work *w = arg;
    for (int i = 0; i < w->n; i++)
        must_alloc(w->b, (size_t)(65536 * (w->k + 1) + i * 512), cudaErrorInitializationError);
    return NULL;
}

static void wait_ok(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        _exit(4);
}

/* Runs what on main, then on a second thread. */
static void both_threads(void *(*what)(void *), child_work *main_part, child_work *thread_part)
{
    pthread_t t;
    what(main_part);
    if (pthread_create(&t, NULL, what, thread_part) != 0 || pthread_join(t, NULL) != 0)
        _exit(6);
}

/* An early child: its own allocations on main, then on a second thread;
 * child 0 first forks a grandchild, once its own session has begun (the
 * range pushed) and before its first CUDA call. */
static void early_child(int k)
{
    tbook b = {0};
    child_work main_part = {&b, k, 10}, thread_part = {&b, k + 8, 5};
    pid_t g = 0;
    nvtxRangePushA("forking"); /* a name the parent's trace has: the child's must have it too */
    if (k == 0 && (g = fork()) == 0) {
        tbook gb = {0};
        child_work part = {&gb, 20, 3};
        child_allocs(&part);
        child_expect(&gb, 0);
        exit(0);
    }
    if (g < 0)
        _exit(2);
    both_threads(child_allocs, &main_part, &thread_part);
    if (g > 0)
        wait_ok(g);
    nvtxRangePop();
    nvtxRangePop(); /* the parent's "forking" range: its push is not in the child's trace */
    child_expect(&b, 0);
    exit(0);
}

/* A late child: every allocation fails, on main and on a second thread. */
static void late_child(int k)
{
    tbook b = {0};
    child_work main_part = {&b, k, 3}, thread_part = {&b, k + 8, 2};
    nvtxRangePushA("forking");
    both_threads(child_fails, &main_part, &thread_part);
    nvtxRangePop();
    nvtxRangePop();
    child_expect(&b, 5);
    exit(0);
}

/* Forks n children running child(k), k from first, each inside the
 * parent's range "forking". */
static void fork_children(pid_t *pids, int first, int n, void (*child)(int))
{
    for (int k = first; k < first + n; k++) {
        nvtxRangePushA("forking");
        pids[k] = fork();
        if (pids[k] < 0)
            _exit(2);
        if (pids[k] == 0)
            child(k);
        nvtxRangePop();
    }
}

int main(void)
{
    void *a, *c;
    pthread_t t;
    pid_t pids[EARLY + LATE];
    nvtxInitialize(NULL); /* NVTX's lazy set-up is not for two threads at once */
    nvtxMarkA("started"); /* the parent's session begins before any CUDA call */
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 2;
    fork_children(pids, 0, EARLY, early_child);
    a = must_alloc(&parent, 1 << 20, cudaSuccess);
    atomic_store(&cuda_used, true);
    fork_children(pids, EARLY, LATE, late_child);
    c = must_alloc(&parent, 2 << 20, cudaSuccess);
    for (int k = 0; k < EARLY + LATE; k++)
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
