/* clock.c: the one clock of vramtrace (vtrace.h, "Clock"): CLOCK_MONOTONIC
 * in ns for the header, the writer's epochs and the report's own timing,
 * and the event stamp, the same clock made strictly increasing across the
 * threads of a process so that the order of stamps is the order in which the
 * recorder saw the events (a hybrid logical clock: Kulkarni et al., "Logical
 * Physical Clocks", 2014, with the logical part folded into the ns). */
#include <time.h>

#include "vtrace.h"

uint64_t vt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t vt_clock_stamp(_Atomic uint64_t *last)
{
    uint64_t now = vt_clock_ns();
    uint64_t prev = atomic_load_explicit(last, memory_order_relaxed), next;
    do
        next = now > prev ? now : prev + 1;
    while (!atomic_compare_exchange_weak_explicit(last, &prev, next, memory_order_acq_rel,
                                                  memory_order_relaxed));
    return next;
}
