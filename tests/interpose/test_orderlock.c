/* test_orderlock.c: interpose/orderlock.c, the order lock and another
 * instance of its kind (vti_lock, as nvtx_inject.c's region lock). Threads that
 * hold it while they yield or sleep (so that the others spin, count
 * themselves and sleep on the futex) update a plain counter with a read,
 * a yield and a write: a lost update shows mutual exclusion broken, a
 * missed wake-up hangs the test (ctest's timeout). errno is what the
 * caller left. The same counter without the lock is shown to lose updates,
 * so the check can fail. The lock's release by a plain store is run when
 * the kernel has membarrier (MODE_BARRIER), else the exchange; a forked
 * child gets a free lock. A second vti_lock excludes on its own, while
 * another thread holds the order lock throughout. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vti_internal.h"

#define NTHREADS 4
#define ROUNDS 3000

static volatile uint64_t counter;
static enum { NO_LOCK, ORDER_LOCK, OWN_LOCK } use_lock;
static vti_lock own = VTI_LOCK_INIT;

static void bump(int i)
{
    uint64_t v = counter;
    if (i % 3 == 0)
        sched_yield();
    else if (i % 101 == 0) {
        struct timespec ts = {0, 200000}; /* a long hold: the others sleep */
        nanosleep(&ts, NULL);
    }
    counter = v + 1;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        errno = 1234;
        if (use_lock == ORDER_LOCK) {
            vti_order_lock();
            if (!vti_order_held() || errno != 1234)
                return (void *)1;
        } else if (use_lock == OWN_LOCK) {
            vti_lock_take(&own);
            if (vti_order_held() || errno != 1234)
                return (void *)1;
        }
        bump(i);
        if (use_lock == ORDER_LOCK) {
            vti_order_unlock();
            if (vti_order_held() || errno != 1234)
                return (void *)1;
        } else if (use_lock == OWN_LOCK) {
            vti_lock_give(&own);
            if (errno != 1234)
                return (void *)1;
        }
    }
    return NULL;
}

/* The counter after NTHREADS workers, with or without the lock; *bad: a
 * worker saw the lock's state or errno wrong. */
static uint64_t run(int locked, bool *bad)
{
    pthread_t th[NTHREADS];
    counter = 0;
    use_lock = locked;
    *bad = false;
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        *bad |= r != NULL;
    }
    return counter;
}

static void test_no_update_lost(void **state)
{
    (void)state;
    bool bad;
    assert_int_equal(run(ORDER_LOCK, &bad), (uint64_t)NTHREADS * ROUNDS);
    assert_false(bad);
}

/* The workers take their own vti_lock while this thread holds the order
 * lock all along: neither blocks the other. */
static void test_own_lock(void **state)
{
    (void)state;
    bool bad;
    vti_order_lock();
    assert_int_equal(run(OWN_LOCK, &bad), (uint64_t)NTHREADS * ROUNDS);
    vti_order_unlock();
    assert_false(bad);
}

static void test_check_fails_without_lock(void **state)
{
    (void)state;
    bool bad;
    assert_true(run(NO_LOCK, &bad) < (uint64_t)NTHREADS * ROUNDS);
}

/* A child forked while another thread holds the locks takes them at once. */
static void *hold_a_while(void *arg)
{
    vti_order_lock();
    vti_lock_take(&own);
    struct timespec ts = {0, 300000000};
    *(volatile int *)arg = 1;
    nanosleep(&ts, NULL);
    vti_lock_give(&own);
    vti_order_unlock();
    return NULL;
}

static void test_fork_child_lock_free(void **state)
{
    (void)state;
    volatile int held = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hold_a_while, (void *)&held), 0);
    while (!held)
        sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        vti_order_fork_reset();
        vti_lock_reset(&own);
        alarm(5);
        vti_order_lock();
        vti_order_unlock();
        vti_lock_take(&own);
        vti_lock_give(&own);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_update_lost),
        cmocka_unit_test(test_own_lock),
        cmocka_unit_test(test_check_fails_without_lock),
        cmocka_unit_test(test_fork_child_lock_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
