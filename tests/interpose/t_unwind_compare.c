/* t_unwind_compare.c: t_unwind's comparison of the fast stack walk
 * (interpose/unwind.c) with libunwind's unw_backtrace, and its counters;
 * called by the scenarios of t_unwind.c and t_unwind_cxx.cpp. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_unwind.h"
#include "vti_internal.h"

#define MAX_FRAMES 260

static __thread vti_uw_thread tl_uw;
static __thread void *tl_prev[MAX_FRAMES]; /* the last fast capture */
static __thread int tl_prev_n = -1;
static _Atomic int n_checks, n_fast, n_learnt, n_fallback, n_mismatch, n_same, n_fast_in_signal,
    n_remembered;
/* The remembered walks seen (unwind.c's refs) and a hash of their frames. */
#define SEEN 256
static __thread struct {
    vti_uw_ref ref;
    uint64_t hash;
} tl_seen[SEEN];
static __thread int tl_nseen;
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

static uint64_t frames_hash(void **a, int n)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)a[i]) * 1099511628211ull;
    return h;
}

/* A remembered walk gives the frames it had when it was remembered: the
 * same ref again must come with the same frames (all of them: entry 0 is the
 * same call in tu_compare). */
static void check_remembered(const char *what, vti_uw_ref ref, void **a, int na)
{
    uint64_t h = frames_hash(a, na);
    if (!ref.node)
        return;
    for (int i = 0; i < tl_nseen; i++) {
        if (tl_seen[i].ref.node != ref.node || tl_seen[i].ref.epoch != ref.epoch)
            continue;
        n_remembered++;
        if (tl_seen[i].hash != h) {
            n_mismatch++;
            fprintf(stderr, "t_unwind: %s: a remembered walk gave other frames\n", what);
        }
        return;
    }
    if (tl_nseen < SEEN)
        tl_seen[tl_nseen++] = (typeof(tl_seen[0])){ref, h};
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
    vti_uw_ref ref;
    int na = vti_unwind_fast(&tl_uw, a, MAX_FRAMES, &same, &ref, 0), nb;
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
    check_remembered(what, ref, a, na);
    memcpy(tl_prev, a, (size_t)na * sizeof *a);
    tl_prev_n = na;
    if (corrupt && na > 3 && n_fast == 5)
        a[2] = (char *)a[2] + 1;
    return compare(what, a, na, b, nb);
}

void tu_set_corrupt(int on)
{
    corrupt = on;
}

void tu_set_in_signal(int on)
{
    in_signal = on;
}

int tu_summary(void)
{
    printf("checks=%d fast=%d learnt=%d fallback=%d mismatch=%d same=%d remembered=%d "
           "fast_in_signal=%d\n",
           n_checks, n_fast, n_learnt, n_fallback, n_mismatch, n_same, n_remembered,
           n_fast_in_signal);
    /* every capture equal; the walk served at least 3 in 4 (the others learnt
     * a new call site's rules, or ran in a signal handler: never the walk);
     * remembered walks were found, and "same" where a walk is not remembered */
    if (n_mismatch || n_fast_in_signal || n_remembered < 2 || n_same < 2 ||
        4 * n_fast < 3 * n_checks)
        return 1;
    return 0;
}
