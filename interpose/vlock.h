/* vlock.h: a small mutex for short critical sections on hot paths (the NVTX
 * Mem region maps, nvtx_inject.c): uncontended, one compare-and-swap to
 * acquire and one exchange to release, no call (a pthread mutex pair costs
 * about 60 instructions); contended, the waiter sleeps on a futex. Drepper,
 * "Futexes Are Tricky" (2011), mutex 2: state 0 free, 1 held, 2 held and
 * maybe waited for. Acquire/release ordering as a pthread mutex's; not
 * recursive; not async-signal-safe (nor is a pthread mutex). Linux only. */
#ifndef VRAMTRACE_VLOCK_H
#define VRAMTRACE_VLOCK_H

#include <stdatomic.h>

typedef struct vti_lock {
    _Atomic int state;
} vti_lock;

#define VTI_LOCK_INIT                                                                              \
    {                                                                                              \
        0                                                                                          \
    }

/* Contended halves (vlock.c). */
void vti_lock_wait(vti_lock *l);
void vti_lock_wake(vti_lock *l);

/* Acquire l, sleeping while another thread holds it. */
static inline void vti_lock_acquire(vti_lock *l)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        vti_lock_wait(l);
}

/* Release l (held by the caller), waking one waiter if there may be one. */
static inline void vti_lock_release(vti_lock *l)
{
    if (atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2)
        vti_lock_wake(l);
}

#endif
