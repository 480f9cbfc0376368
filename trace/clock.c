/* clock.c: the one clock of vramtrace (vtrace.h, "Clock"): CLOCK_MONOTONIC
 * in ns for the header, the writer's epochs and the report's own timing,
 * and the event stamp, the same clock made strictly increasing across the
 * threads of a process so that the order of stamps is the order in which the
 * recorder saw the events (a hybrid logical clock: Kulkarni et al., "Logical
 * Physical Clocks", 2014, with the logical part folded into the ns).
 *
 * The stamp reads the time stamp counter instead of clock_gettime where the
 * kernel itself keeps CLOCK_MONOTONIC on it (clocksource "tsc", an invariant
 * TSC): the vDSO's clock_gettime fences and converts (about 23 ns on this
 * project's VM, rdtsc alone about 9). The conversion is the kernel's own
 * (clocksource.h: ns = base + (cycles * mult) >> shift), calibrated against
 * clock_gettime: after CALIB_NS of stamps read from clock_gettime, then
 * re-anchored every ANCHOR_NS, the rate taken over the whole time since the
 * first anchor. A stamp is then never behind CLOCK_MONOTONIC (the writer's
 * epoch floor, vtrace.h) by more than the rate's error over ANCHOR_NS; LEAD_NS
 * keeps it ahead instead (a calibration error of 1e-5 over ANCHOR_NS is 0.5
 * µs). Anchors are published through a sequence lock; a stamp that meets one
 * being written reads clock_gettime. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "vtrace.h"

#define CALIB_NS 10000000ull    /* clock_gettime stamps before the first rate */
#define ANCHOR_NS 50000000ull   /* re-anchor after this much time */
#define LEAD_NS 1000ull         /* TSC stamps are kept this far ahead */
#define PAIR_MAX_TICKS 20000ull /* an anchor's rdtsc..clock_gettime..rdtsc window */
#define SHIFT 32                /* mult's fixed point */

enum { TSC_UNKNOWN, TSC_CHECKING, TSC_CALIBRATING, TSC_READY, TSC_UNUSABLE };

uint64_t vt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)

static uint64_t rd_tsc(void)
{
    return __rdtsc();
}

/* The kernel keeps CLOCK_MONOTONIC on an invariant TSC (CPUID
 * 0x80000007 EDX bit 8; sysfs current_clocksource "tsc"). errno is left as
 * it was (the first stamp is taken inside an application's call). */
static bool tsc_usable(void)
{
    unsigned a, b, c, d;
    char buf[16] = "";
    int saved = errno;
    ssize_t n = -1;
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) {
        int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
        n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
    }
    errno = saved;
    return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

/* One (tsc, ns) pair read close together; false when the window was too
 * long (preempted). */
static bool read_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t t1 = rd_tsc();
    *ns = vt_clock_ns();
    uint64_t t2 = rd_tsc();
    *tsc = t1 + (t2 - t1) / 2;
    return t2 - t1 < PAIR_MAX_TICKS;
}

/* Publish an anchor (tsc, ns) with the rate taken since the first anchor.
 * Called by the one thread holding c->writing. */
static void anchor(vt_stamp_clock *c, uint64_t tsc, uint64_t ns)
{
    uint64_t t0 = atomic_load_explicit(&c->first_tsc, memory_order_relaxed);
    uint64_t n0 = atomic_load_explicit(&c->first_ns, memory_order_relaxed);
    if (tsc <= t0 || ns <= n0)
        return;
    uint64_t mult = (uint64_t)(((unsigned __int128)(ns - n0) << SHIFT) / (tsc - t0));
    uint64_t period = (uint64_t)(((unsigned __int128)ANCHOR_NS << SHIFT) / (mult ? mult : 1));
    /* A reader that sees one new field (acquire) sees the odd seq before it. */
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
    atomic_store_explicit(&c->seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&c->base_tsc, tsc, memory_order_release);
    atomic_store_explicit(&c->base_ns, ns + LEAD_NS, memory_order_release);
    atomic_store_explicit(&c->mult, mult, memory_order_release);
    atomic_store_explicit(&c->period, period, memory_order_release);
    atomic_store_explicit(&c->seq, seq + 2, memory_order_release);
}

/* The clock_gettime stamps of the first CALIB_NS, then the first anchor. */
static uint64_t calibrating_now(vt_stamp_clock *c)
{
    uint64_t tsc, ns;
    bool ok = read_pair(&tsc, &ns);
    int st = atomic_load_explicit(&c->tsc_state, memory_order_acquire);
    if (!ok || st != TSC_CALIBRATING || atomic_exchange(&c->writing, 1))
        return ns;
    if (atomic_load_explicit(&c->first_ns, memory_order_relaxed) == 0) {
        atomic_store_explicit(&c->first_tsc, tsc, memory_order_relaxed);
        atomic_store_explicit(&c->first_ns, ns, memory_order_relaxed);
    } else if (ns - atomic_load_explicit(&c->first_ns, memory_order_relaxed) >= CALIB_NS) {
        anchor(c, tsc, ns);
        atomic_store_explicit(&c->tsc_state, TSC_READY, memory_order_release);
    }
    atomic_store_explicit(&c->writing, 0, memory_order_release);
    return ns;
}

/* Now from the TSC and the anchor; re-anchors (one thread) when it is older
 * than ANCHOR_NS. clock_gettime while an anchor is being written, or when
 * the anchor is four periods old (its writer never came back: a signal
 * handler that longjmp'd out of it), so a stamp never drifts far. */
static uint64_t tsc_now(vt_stamp_clock *c)
{
    /* The fields' acquire loads keep the second seq load after them (no
     * fence: ThreadSanitizer does not model fences); plain moves on x86. */
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    uint64_t tsc = rd_tsc();
    uint64_t base_tsc = atomic_load_explicit(&c->base_tsc, memory_order_acquire);
    uint64_t base_ns = atomic_load_explicit(&c->base_ns, memory_order_acquire);
    uint64_t mult = atomic_load_explicit(&c->mult, memory_order_acquire);
    uint64_t period = atomic_load_explicit(&c->period, memory_order_acquire);
    uint64_t ticks = tsc - base_tsc, ns;
    if ((seq & 1) || seq != atomic_load_explicit(&c->seq, memory_order_relaxed))
        return vt_clock_ns();
    if (ticks >= period && !atomic_exchange(&c->writing, 1)) {
        if (read_pair(&tsc, &ns))
            anchor(c, tsc, ns);
        atomic_store_explicit(&c->writing, 0, memory_order_release);
        return ns;
    }
    if (ticks >= 4 * period)
        return vt_clock_ns();
    return base_ns + (uint64_t)(((unsigned __int128)ticks * mult) >> SHIFT);
}

static uint64_t stamp_now(vt_stamp_clock *c)
{
    int st = atomic_load_explicit(&c->tsc_state, memory_order_acquire);
    if (st == TSC_READY)
        return tsc_now(c);
    if (st == TSC_CALIBRATING)
        return calibrating_now(c);
    if (st == TSC_UNKNOWN && atomic_compare_exchange_strong(&c->tsc_state, &st, TSC_CHECKING))
        atomic_store_explicit(&c->tsc_state, tsc_usable() ? TSC_CALIBRATING : TSC_UNUSABLE,
                              memory_order_release);
    return vt_clock_ns();
}

#else

static uint64_t stamp_now(vt_stamp_clock *c)
{
    (void)c;
    return vt_clock_ns();
}

#endif

/* The least stamp of parity (1: odd, vt_clock_stamp's; 0: even,
 * vt_clock_stamp_locked's) that is at least now and above floor. */
static uint64_t next_stamp(uint64_t now, uint64_t floor, uint64_t parity)
{
    uint64_t n = now > floor ? now : floor + 1;
    return n + ((n & 1) ^ parity);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

uint64_t vt_clock_stamp(vt_stamp_clock *c)
{
    uint64_t now = stamp_now(c);
    uint64_t prev = atomic_load_explicit(&c->last, memory_order_relaxed), next;
    do {
        uint64_t locked = atomic_load_explicit(&c->last_locked, memory_order_acquire);
        next = next_stamp(now, max_u64(prev, locked), 1);
    } while (!atomic_compare_exchange_weak_explicit(&c->last, &prev, next, memory_order_acq_rel,
                                                    memory_order_relaxed));
    return next;
}

uint64_t vt_clock_stamp_locked(vt_stamp_clock *c)
{
    uint64_t now = stamp_now(c);
    uint64_t mine = atomic_load_explicit(&c->last_locked, memory_order_relaxed);
    uint64_t other = atomic_load_explicit(&c->last, memory_order_acquire);
    uint64_t next = next_stamp(now, max_u64(mine, other), 0);
    atomic_store_explicit(&c->last_locked, next, memory_order_release);
    return next;
}

bool vt_clock_stamp_uses_tsc(vt_stamp_clock *c)
{
    return atomic_load_explicit(&c->tsc_state, memory_order_acquire) == TSC_READY;
}
