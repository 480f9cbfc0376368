/* test_clock.c: trace/clock.c. vt_clock_stamp's promise (vtrace.h): stamps
 * from one state strictly increase in the order they are taken, across
 * threads, and stay on CLOCK_MONOTONIC: never behind it, at most a few
 * microseconds ahead, through the TSC's calibration and re-anchoring where
 * it is used. The checkers are shown to fail on sequences that break the
 * promise. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "vtrace.h"

#define NTHREADS 4
#define PER_THREAD 20000

static vt_stamp_clock shared;

typedef struct stamps {
    uint64_t v[PER_THREAD];
} stamps;

static void *taker(void *arg)
{
    stamps *s = arg;
    for (int i = 0; i < PER_THREAD; i++)
        s->v[i] = vt_clock_stamp(&shared);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* NULL when each thread's stamps strictly increase and no two stamps of
 * all threads are equal; else what is wrong. */
static const char *check(const stamps *s, int nthreads)
{
    size_t n = (size_t)nthreads * PER_THREAD;
    uint64_t *all = malloc(n * sizeof *all);
    const char *why = NULL;
    for (int t = 0; t < nthreads; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            if (i && s[t].v[i] <= s[t].v[i - 1])
                why = "a thread's stamps do not increase";
            all[(size_t)t * PER_THREAD + (size_t)i] = s[t].v[i];
        }
    qsort(all, n, sizeof *all, cmp_u64);
    for (size_t i = 1; i < n && !why; i++)
        if (all[i] == all[i - 1])
            why = "two stamps are equal";
    free(all);
    return why;
}

static void test_stamps_unique_and_increasing(void **state)
{
    (void)state;
    static stamps s[NTHREADS];
    pthread_t th[NTHREADS];
    uint64_t before = vt_clock_ns();
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, taker, &s[i]), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    const char *why = check(s, NTHREADS);
    if (why)
        fail_msg("%s", why);
    /* on the monotonic clock: not before the start, not far past the end */
    uint64_t after = vt_clock_ns();
    assert_true(s[0].v[0] >= before);
    assert_true(atomic_load(&shared.last) <= after + 2 * (uint64_t)NTHREADS * PER_THREAD);
}

/* vt_clock_stamp_locked under one mutex in half the threads, vt_clock_stamp
 * in the others, on one state: still unique and increasing per thread, and
 * a stamp taken after another thread's (handed over through the mutex) is
 * greater than it. */
static vt_stamp_clock mixed;
static pthread_mutex_t mixed_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_locked_seen;
static _Atomic int causal_bad;

static void *locked_taker(void *arg)
{
    stamps *s = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        pthread_mutex_lock(&mixed_lock);
        s->v[i] = vt_clock_stamp_locked(&mixed);
        if (s->v[i] <= last_locked_seen)
            atomic_store(&causal_bad, 1);
        last_locked_seen = s->v[i];
        pthread_mutex_unlock(&mixed_lock);
    }
    return NULL;
}

static void *unlocked_taker(void *arg)
{
    stamps *s = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        pthread_mutex_lock(&mixed_lock);
        uint64_t before = last_locked_seen;
        pthread_mutex_unlock(&mixed_lock);
        s->v[i] = vt_clock_stamp(&mixed);
        if (s->v[i] <= before)
            atomic_store(&causal_bad, 1);
    }
    return NULL;
}

static void test_locked_and_unlocked_stamps_meet_never(void **state)
{
    (void)state;
    static stamps s[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, i % 2 ? locked_taker : unlocked_taker, &s[i]),
                         0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    const char *why = check(s, NTHREADS);
    if (why)
        fail_msg("%s", why);
    assert_int_equal(atomic_load(&causal_bad), 0);
    assert_true(s[0].v[0] % 2 == 1 && s[1].v[0] % 2 == 0);
}

static void test_checker_rejects_bad_sequences(void **state)
{
    (void)state;
    static stamps s[2];
    for (int i = 0; i < PER_THREAD; i++) {
        s[0].v[i] = 2 * (uint64_t)i + 10;
        s[1].v[i] = 2 * (uint64_t)i + 11;
    }
    assert_null(check(s, 2));
    s[1].v[5] = s[0].v[7]; /* still increasing in thread 1, equal to one of thread 0 */
    assert_non_null(check(s, 2));
    s[1].v[5] = 21;
    s[0].v[3] = s[0].v[2]; /* a thread that repeats a stamp */
    assert_non_null(check(s, 2));
}

/* Most a stamp may lead CLOCK_MONOTONIC read just after it (ns): clock.c's
 * LEAD_NS and the rate's error over an anchor period, with room. */
#define AHEAD_MAX 20000u

/* NULL when stamp s, taken between CLOCK_MONOTONIC readings b and a, is on
 * that clock: not behind b, not more than AHEAD_MAX past a. */
static const char *off_clock(uint64_t b, uint64_t s, uint64_t a)
{
    if (s < b)
        return "a stamp is behind CLOCK_MONOTONIC";
    if (s > a + AHEAD_MAX)
        return "a stamp is too far ahead of CLOCK_MONOTONIC";
    return NULL;
}

/* 150 ms of stamps: the clock_gettime stamps of the calibration, the first
 * anchor (10 ms), then re-anchors (every 50 ms) where the TSC is used. */
static void test_stamps_follow_monotonic(void **state)
{
    (void)state;
    static vt_stamp_clock c;
    uint64_t start = vt_clock_ns(), n = 0, worst_ahead = 0;
    for (uint64_t b = start; b - start < 150000000u; n++) {
        b = vt_clock_ns();
        uint64_t s = vt_clock_stamp(&c), a = vt_clock_ns();
        const char *why = off_clock(b, s, a);
        if (why)
            fail_msg("stamp %llu: %s (%llu ns before, %llu after)", (unsigned long long)n, why,
                     (unsigned long long)b, (unsigned long long)a);
        if (s > a && s - a > worst_ahead)
            worst_ahead = s - a;
    }
    printf("%llu stamps, from the TSC at the end: %s, at most %llu ns ahead\n",
           (unsigned long long)n, vt_clock_stamp_uses_tsc(&c) ? "yes" : "no",
           (unsigned long long)worst_ahead);
}

static void test_off_clock_rejects(void **state)
{
    (void)state;
    assert_null(off_clock(100, 100, 200));
    assert_null(off_clock(100, 200 + AHEAD_MAX, 200));
    assert_non_null(off_clock(100, 99, 200));
    assert_non_null(off_clock(100, 201 + AHEAD_MAX, 200));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stamps_unique_and_increasing),
        cmocka_unit_test(test_locked_and_unlocked_stamps_meet_never),
        cmocka_unit_test(test_checker_rejects_bad_sequences),
        cmocka_unit_test(test_stamps_follow_monotonic),
        cmocka_unit_test(test_off_clock_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
