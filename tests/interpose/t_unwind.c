/* t_unwind: the fast stack walk (interpose/unwind.c) against libunwind's
 * unw_backtrace, frame list by frame list, at many points of one program:
 * deep recursion, alloca/VLA frames, threads, a signal handler (on the
 * thread's stack and on an alternate one), longjmp across captured frames
 * and C++ exceptions thrown through frames between captures
 * (t_unwind_cxx.cpp). Built with several code-generation options
 * (tests/interpose/CMakeLists.txt). Exit 0 when every capture (the fast
 * walk's, or vti_unwind_learn's where the walk met a new call site) equals
 * libunwind's, "same" and remembered walks were right, remembered ones were
 * seen, no capture in a signal handler
 * was the walk's, and the walk served at least 3 captures in 4; 1 otherwise.
 *
 * usage: t_unwind [--corrupt]
 *   --corrupt  change one frame of one fast capture: the comparison must
 *              then fail (the test that shows this check can fail). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "t_unwind.h"

/* ---- recursion and VLA frames ------------------------------------------- */

static _Atomic int sink;      /* stays >= 0; threads add to it */
static volatile int reps = 4; /* a loop the compiler does not unroll */

__attribute__((noinline)) static int recurse(int depth, const char *what)
{
    int rc = depth > 1 ? recurse(depth - 1, what) : tu_compare(what);
    sink += depth;
    return rc;
}

/* A VLA: an omit-frame-pointer build addresses this frame from rbp. */
__attribute__((noinline)) static int vla_frame(int n, int depth)
{
    volatile char buf[n];
    int rc;
    buf[0] = (char)n;
    rc = depth > 1 ? vla_frame(n + 16, depth - 1) : recurse(3, "vla");
    return rc + buf[0] - (char)n;
}

__attribute__((noinline)) static int alloca_frame(size_t n)
{
    volatile char *p = __builtin_alloca(n);
    p[0] = 1;
    return recurse(2, "alloca") + p[0] - 1;
}

/* ---- threads -------------------------------------------------------------- */

static void *thread_main(void *arg)
{
    long k = (long)arg;
    for (int i = 0; i < 50; i++)
        recurse(1 + (int)((k * 7 + i) % 40), "thread");
    vla_frame(8, 3);
    return NULL;
}

static void threads(void)
{
    pthread_t th[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
}

/* ---- signals -------------------------------------------------------------- */

static void on_signal(int sig)
{
    (void)sig;
    tu_set_in_signal(1);
    recurse(4, "signal handler");
    tu_set_in_signal(0);
}

__attribute__((noinline)) static void raise_at(int depth)
{
    if (depth > 1)
        raise_at(depth - 1);
    else
        raise(SIGUSR1);
    sink++;
}

static void signals(void)
{
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGUSR1, &sa, NULL);
    raise_at(5); /* handler on this stack */
    sigaltstack(&ss, NULL);
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    raise_at(5); /* handler on the alternate stack */
    recurse(6, "after signals");
}

/* ---- longjmp -------------------------------------------------------------- */

static jmp_buf jb;

__attribute__((noinline)) static void jump_from(int depth)
{
    if (depth > 1) {
        jump_from(depth - 1);
        sink++;
        return;
    }
    tu_compare("before longjmp");
    if (sink >= 0) /* always: but the compiler may not call this noreturn */
        longjmp(jb, 1);
}

static void longjmps(void)
{
    for (int i = 0; i < 4; i++) {
        if (setjmp(jb) == 0)
            jump_from(10 + 7 * i);
        recurse(3 + i, "after longjmp");
    }
}

int main(int argc, char **argv)
{
    tu_set_corrupt(argc > 1 && strcmp(argv[1], "--corrupt") == 0);
    recurse(1, "depth 1");
    recurse(60, "depth 60");
    recurse(200, "depth 200");
    for (int i = 0; i < 3; i++) /* a cached walk, then a different one */
        recurse(20 + i, "repeated");
    for (int i = 0; i < reps;
         i++) /* the same frames: remembered from the third (the first learns) */
        recurse(20, "same");
    for (int i = 0; i < reps; i++) /* deeper than a walk goes, so not remembered: "same" */
        recurse(300, "same, deep");
    vla_frame(1, 5);
    for (int i = 0; i < 4 * reps; i++) /* rbp-based frames of changing sizes */
        vla_frame(1 + 24 * (i % 3), 2 + i % 2);
    alloca_frame(1000);
    threads();
    signals();
    longjmps();
    tu_cxx_exceptions();
    return tu_summary();
}
