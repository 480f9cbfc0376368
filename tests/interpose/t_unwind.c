/* t_unwind: the fast stack walk (interpose/unwind.c) against libunwind's
 * unw_backtrace, frame list by frame list, at many points of one program:
 * deep recursion, alloca/VLA frames, threads, a signal handler (on the
 * thread's stack and on an alternate one), longjmp across captured frames
 * and C++ exceptions thrown through frames between captures
 * (t_unwind_cxx.cpp). Built with several code-generation options
 * (tests/interpose/CMakeLists.txt). Exit 0 when every capture (the fast
 * walk's, or vti_unwind_learn's where the walk met a new call site) equals
 * libunwind's, "same" was right and seen, no capture in a signal handler
 * was the walk's, and the walk served at least 3 captures in 4; 1 otherwise.
 *
 * usage: t_unwind [--corrupt]
 *   --corrupt  change one frame of one fast capture: the comparison must
 *              then fail (the test that shows this check can fail). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_unwind.h"
#include "vti_internal.h"

#define MAX_FRAMES 260

static __thread vti_uw_thread tl_uw;
static __thread void *tl_prev[MAX_FRAMES]; /* the last fast capture */
static __thread int tl_prev_n = -1;
static _Atomic int n_checks, n_fast, n_learnt, n_fallback, n_mismatch, n_same, n_fast_in_signal;
static _Atomic int in_signal;
static int corrupt;

static void report_mismatch(const char *what, void **a, int na, void **b, int nb)
{
    fprintf(stderr, "t_unwind: %s: fast %d frames, libunwind %d\n", what, na, nb);
    for (int i = 0; i < na || i < nb; i++)
        fprintf(stderr, "  %3d %18p %18p%s\n", i, i < na ? a[i] : NULL, i < nb ? b[i] : NULL,
                i < na && i < nb && a[i] == b[i] ? "" : "  <--");
}

/* Entries 1.. equal (entry 0: the return address into tu_compare, from
 * different call sites): 1, else printed and -1. */
static int compare(const char *what, void **a, int na, void **b, int nb)
{
    if (na != nb || memcmp(a + 1, b + 1, (size_t)(na - 1) * sizeof *a) != 0) {
        n_mismatch++;
        report_mismatch(what, a, na, b, nb);
        return -1;
    }
    return 1;
}

/* libunwind's frames from here: unw_backtrace, or under ThreadSanitizer the
 * unw_step loop (the preload does the same there: unw_backtrace's per-thread
 * cache is freed by a TSD destructor after TSan has finished the thread).
 * Entry 0 is this frame's own ip or the return address into it. */
static inline __attribute__((always_inline)) int reference(void **b, int max)
{
#ifdef __SANITIZE_THREAD__
    unw_context_t ctx;
    unw_cursor_t cur;
    unw_word_t ip;
    int n = 0;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    do {
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0)
            break;
        b[n++] = (void *)(uintptr_t)ip;
    } while (n < max && unw_step(&cur) > 0);
    return n;
#else
    return unw_backtrace(b, max);
#endif
}

/* Both walks from this one frame: entry 0 is the return address into this
 * function for both, at different call sites; entries 1.. must be equal. */
__attribute__((noinline)) int tu_compare(const char *what)
{
    void *a[MAX_FRAMES], *b[MAX_FRAMES];
    bool same;
    int na = vti_unwind_fast(&tl_uw, a, MAX_FRAMES, &same), nb;
    bool learnt = na < 0 && tl_uw.missed;
    if (learnt) /* libunwind's frames, and the rules learnt unless in a handler */
        na = vti_unwind_learn(&tl_uw, a, MAX_FRAMES);
    nb = reference(b, MAX_FRAMES);
    n_checks++;
    if (na < 0) {
        n_fallback++;
        if (!in_signal)
            fprintf(stderr, "t_unwind: %s: fast walk fell back to libunwind\n", what);
        return 0;
    }
    if (learnt) {
        n_learnt++;
        tl_prev_n = -1;
        return compare(what, a, na, b, nb);
    }
    n_fast_in_signal += in_signal;
    n_fast++;
    /* "the same frames as the last walk": entries 1.. are, 0 is this call */
    if (same && (na != tl_prev_n || memcmp(a + 1, tl_prev + 1, (size_t)(na - 1) * sizeof *a))) {
        n_mismatch++;
        report_mismatch("said the same as the last walk", a, na, tl_prev, tl_prev_n);
    }
    n_same += same;
    memcpy(tl_prev, a, (size_t)na * sizeof *a);
    tl_prev_n = na;
    if (corrupt && na > 3 && n_fast == 5)
        a[2] = (char *)a[2] + 1;
    return compare(what, a, na, b, nb);
}

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
    in_signal = 1;
    recurse(4, "signal handler");
    in_signal = 0;
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
    corrupt = argc > 1 && strcmp(argv[1], "--corrupt") == 0;
    recurse(1, "depth 1");
    recurse(60, "depth 60");
    recurse(200, "depth 200");
    for (int i = 0; i < 3; i++) /* a cached walk, then a different one */
        recurse(20 + i, "repeated");
    for (int i = 0; i < reps; i++) /* the same frames: "same" from the third (the first learns) */
        recurse(20, "same");
    vla_frame(1, 5);
    for (int i = 0; i < 4 * reps; i++) /* rbp-based frames of changing sizes */
        vla_frame(1 + 24 * (i % 3), 2 + i % 2);
    alloca_frame(1000);
    threads();
    signals();
    longjmps();
    tu_cxx_exceptions();
    printf("checks=%d fast=%d learnt=%d fallback=%d mismatch=%d same=%d fast_in_signal=%d\n",
           n_checks, n_fast, n_learnt, n_fallback, n_mismatch, n_same, n_fast_in_signal);
    /* every capture equal; the walk served at least 3 in 4 (the others learnt
     * a new call site's rules, or ran in a signal handler: never the walk) */
    if (n_mismatch || n_fast_in_signal || n_same < 2 || 4 * n_fast < 3 * n_checks)
        return 1;
    return 0;
}
