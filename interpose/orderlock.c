/* orderlock.c: the preload's lock (vti.h, vti_lock), and its instance the
 * order lock (vti_internal.h, vti_order_lock), around every outermost
 * allocation and free of every thread. The NVTX Mem region maps take
 * another instance (nvtx_inject.c).
 *
 * Taken with one compare-and-swap. Released with a plain store where Linux
 * membarrier (private expedited) works: an asymmetric Dekker handshake, the
 * one the trace writer's per-thread buffers use (trace/writer.c). A thread
 * that must sleep counts itself in `sleepers` (a locked add), then makes
 * every thread of the process pass a full barrier (membarrier) before it
 * reads the lock again: either the holder's releasing store is visible to it
 * then, or the holder's later read of `sleepers` sees the count and wakes
 * it (futex). Without membarrier the release is an exchange (a full barrier
 * of its own) before that read: the usual futex lock.
 *
 * Why not a pthread mutex: its release is a locked exchange too, and on this
 * project's VM the pair cost 12.8 ns against 6.3 for compare-and-swap plus
 * store, a seventh of the recorder's added time per event with stacks off
 * (bench/README.md, "Session 35"). */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vti_internal.h"

/* Tries at the lock before a thread sleeps: SPINS with a pause between
 * them (a hold is mostly one driver call, sub-microsecond on the simulated
 * device), then YIELDS giving the processor up (the holder may be waiting
 * for one: more threads than cores), each try cheaper than a sleep's
 * barrier. */
#define SPINS 32
#define YIELDS 32

enum { MODE_UNKNOWN, MODE_EXCHANGE, MODE_BARRIER };

static _Atomic int mode;               /* MODE_*: how every vti_lock is released */
static vti_lock order = VTI_LOCK_INIT; /* the order lock */
static VTI_TLS bool tl_holds;          /* this thread holds the order lock */

static long sys_futex(vti_lock *l, uint32_t op, uint32_t val, const struct timespec *timeout)
{
    return syscall(SYS_futex, (uint32_t *)&l->word, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

/* Register this process for membarrier (idempotent; quick once the trace
 * writer has registered it). */
static int decide_mode(void)
{
#ifdef VTI_ORDERLOCK_EXCHANGE_ONLY /* tests/interpose: the fallback's own test */
    return MODE_EXCHANGE;
#endif
    return vt_barrier_register() ? MODE_BARRIER : MODE_EXCHANGE;
}

static int lock_mode(void)
{
    int m = atomic_load_explicit(&mode, memory_order_acquire);
    if (m == MODE_UNKNOWN) {
        int want = decide_mode();
        if (atomic_compare_exchange_strong(&mode, &m, want))
            m = want;
    }
    return m;
}

static bool try_take(vti_lock *l)
{
    uint32_t free_word = 0;
    return atomic_compare_exchange_weak_explicit(&l->word, &free_word, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Sleep until the lock may be free. A failed barrier (never expected once
 * registered) sleeps at most a millisecond: the holder may have missed the
 * count, so the lock is looked at again. */
static void sleep_once(vti_lock *l)
{
    static const struct timespec ms = {0, 1000000};
    atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
    bool barrier_ok =
        atomic_load_explicit(&mode, memory_order_relaxed) != MODE_BARRIER || vt_barrier_all();
    if (atomic_load_explicit(&l->word, memory_order_seq_cst) != 0)
        sys_futex(l, FUTEX_WAIT, 1, barrier_ok ? NULL : &ms);
    atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
}

static __attribute__((noinline)) void lock_slow(vti_lock *l)
{
    int saved = errno;
    for (unsigned spin = 0;; spin++) {
        if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && try_take(l))
            break;
        if (spin < SPINS)
            cpu_pause();
        else if (spin < SPINS + YIELDS)
            sched_yield();
        else
            sleep_once(l);
    }
    errno = saved;
}

void vti_lock_take(vti_lock *l)
{
    lock_mode();
    if (!try_take(l))
        lock_slow(l);
}

void vti_lock_give(vti_lock *l)
{
    if (atomic_load_explicit(&mode, memory_order_relaxed) == MODE_BARRIER) {
        atomic_store_explicit(&l->word, 0, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst); /* the CPU's barrier is the sleeper's */
    } else {
        atomic_exchange_explicit(&l->word, 0, memory_order_seq_cst);
    }
    if (atomic_load_explicit(&l->sleepers, memory_order_relaxed)) {
        int saved = errno;
        sys_futex(l, FUTEX_WAKE, 1, NULL);
        errno = saved;
    }
}

void vti_lock_reset(vti_lock *l)
{
    atomic_store(&l->word, 0);
    atomic_store(&l->sleepers, 0);
}

void vti_order_lock(void)
{
    vti_lock_take(&order);
    tl_holds = true;
}

void vti_order_unlock(void)
{
    tl_holds = false;
    vti_lock_give(&order);
}

bool vti_order_held(void)
{
    return tl_holds;
}

void vti_order_fork_reset(void)
{
    vti_lock_reset(&order);
    atomic_store(&mode, decide_mode());
    tl_holds = false;
}
