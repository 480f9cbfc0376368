/* vlock.c: the contended halves of vlock.h's mutex. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vlock.h"

/* Mark l waited for (2) and sleep until it is free; returns holding it
 * (state 2: the release then wakes the next waiter, if any). */
void vti_lock_wait(vti_lock *l)
{
    while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

/* Wake one thread sleeping in vti_lock_wait. */
void vti_lock_wake(vti_lock *l)
{
    syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
