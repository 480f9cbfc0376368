/* test_vlock.c: unit tests of interpose/vlock.h, the futex mutex of the NVTX
 * Mem region maps: mutual exclusion under contention (each critical section
 * checks it is alone and yields inside, so overlapping holders would be
 * seen), no lost update of a plain counter, and the contended path (a
 * holder that sleeps makes the others wait on the futex). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "vlock.h"

enum { THREADS = 4, ROUNDS = 20000 };

static vti_lock lock = VTI_LOCK_INIT;
static _Atomic int inside, overlaps;
static long counter; /* guarded by lock only */

static void section(int sleep_ns)
{
    vti_lock_acquire(&lock);
    if (atomic_fetch_add(&inside, 1) != 0)
        atomic_fetch_add(&overlaps, 1);
    long v = counter;
    if (sleep_ns) {
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
    counter = v + 1;
    atomic_fetch_sub(&inside, 1);
    vti_lock_release(&lock);
}

static void *body(void *arg)
{
    int rounds = (int)(intptr_t)arg;
    for (int i = 0; i < rounds; i++)
        section(i % 64 == 0 ? 20000 : 0);
    return NULL;
}

static void run_threads(int rounds)
{
    pthread_t th[THREADS];
    counter = 0;
    atomic_store(&overlaps, 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, body, (void *)(intptr_t)rounds), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&overlaps), 0);
    assert_int_equal(counter, (long)THREADS * rounds);
    assert_int_equal(atomic_load(&lock.state), 0); /* free, no waiter left marked */
}

static void test_exclusive(void **state)
{
    (void)state;
    run_threads(ROUNDS);
}

/* A holder that sleeps: the others find the lock held, mark it waited for
 * and sleep in the futex; each release wakes one of them. */
static void test_contended(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    vti_lock_acquire(&lock);
    counter = 0;
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, body, (void *)(intptr_t)50), 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&lock.state), 2); /* waiters marked themselves */
    vti_lock_release(&lock);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(counter, THREADS * 50);
    assert_int_equal(atomic_load(&overlaps), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusive),
        cmocka_unit_test(test_contended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
