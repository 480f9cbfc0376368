/* vti.h: internal interface of the preload library's session, shared by the
 * hooks (hooks_*.c), the NVTX injection (nvtx_inject.c) and the CUPTI loader.
 * Not installed; the public face of interpose/ is the CUDA API itself and the
 * VRAMTRACE_* environment (see interpose/README.md). */
#ifndef VRAMTRACE_VTI_H
#define VRAMTRACE_VTI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../trace/vtrace.h"

/* A lock for the preload's short critical sections (orderlock.c): taken
 * with one compare-and-swap, released with a plain store where Linux
 * membarrier works (an exchange where it does not); a waiter spins, yields,
 * then sleeps on a futex. Half a pthread mutex's instructions per
 * uncontended pair under callgrind (29 against 57; bench/README.md,
 * "Session 39"). Not reentrant; errno is kept. Static initializer
 * VTI_LOCK_INIT. */
typedef struct vti_lock {
    _Atomic uint32_t word;     /* 0 free, 1 held */
    _Atomic uint32_t sleepers; /* threads counted before sleeping */
} vti_lock;
#define VTI_LOCK_INIT                                                                              \
    {                                                                                              \
        0, 0                                                                                       \
    }
void vti_lock_take(vti_lock *l);
void vti_lock_give(vti_lock *l);
/* Free, no sleeper: in a fork child (its other threads are gone). */
void vti_lock_reset(vti_lock *l);

/* true while the session records (started, not stopped by an internal
 * failure, not a child that gave up after fork). */
bool vti_enabled(void);
/* vti_enabled() for an event that must be kept (an NVTX range, heap or
 * thread name begins): starts the session first when it has not started
 * yet, as a hooked CUDA call does (README.md, "Processes and runs"). */
bool vti_recording(void);
/* An event's timestamp: CLOCK_MONOTONIC ns, strictly increasing across the
 * process's threads (vt_clock_stamp): the trace's order of events is the
 * order in which they took their stamps. */
uint64_t vti_now_ns(void);
/* Record ev from the calling thread (ts_ns 0 = now). Returns 0, or -1 when
 * tracing is off. Never blocks on unwinding; never fails the caller. */
int vti_emit(const vt_event *ev);
/* Capture the calling thread's stack (skipping `skip` innermost frames of
 * vramtrace itself) into the trie; returns the leaf node id, 0 if none. */
uint32_t vti_capture_stack(int skip);
/* Intern a UTF-8 string (emits VT_REC_STRING once per distinct string);
 * returns its id (> 0), or 0 when tracing is off. */
uint32_t vti_intern_string(const char *s);

/* An NVTX push/pop range named name ended at level 0 (top level) or 1
 * (directly inside the top-level one named parent); deeper ones are not
 * passed. An
 * iteration candidate for the exit line's growth verdict (iterfit.c samples
 * the live device bytes), by the report's rule (report/growth.c). */
void vti_iter_end(const char *name, int level, const char *parent);
/* A top-level NVTX push/pop range named name began (a nested range is an
 * iteration only inside a top-level one begun once: iterfit.c). */
void vti_iter_begin(const char *name);
/* An NVTX range named name that may end an iteration (level 0 or 1) is
 * about to be recorded as ended: a VT_REC_POOL_STAT of the current pool of
 * each device that a stream-ordered allocation took from (vti_pool_used,
 * poolstat.c), so that the report knows the pool's free reserve at
 * iteration ends, where it fills the device as a caching allocator's cached
 * blocks do (the growth projection, report/model.c). Nothing when no such
 * allocation was made, nor for an operator's range (vt_range_is_operator:
 * emit_nvtx's thousands a step, never an iteration). */
void vti_pool_iteration_end(const char *name);

#endif
