/* state.c: the lowest layer of the preload library: the calling thread's
 * re-entry depth and current device, and whether the session records. Every
 * other file may read or move this state; this file calls only settings.c
 * (quiet) and msg.c (the "tracing stopped" line). A stop requested from deep
 * inside (the writer failed, a table is full) lands here, and the life cycle
 * (lifecycle.c) and the session core (session.c) read it. The events'
 * timestamps (vti_stamps) come from here too. */
#include <stdatomic.h>

#include "vti_internal.h"

VTI_TLS int vti_tl_depth;
VTI_TLS int vti_tl_device;
VTI_TLS bool vti_tl_context_switched;

_Atomic int vti_state_word = VTI_S_OFF;
vt_stamp_clock vti_stamps; /* the event timestamps (vt_clock_stamp) */

int vti_state(void)
{
    return atomic_load_explicit(&vti_state_word, memory_order_acquire) & ~VTI_STOPPING;
}

/* The state part of the word becomes to when it is from (or, from -1: in any
 * case); the stopping bit is kept. */
static bool state_replace(int from, int to)
{
    int w = atomic_load(&vti_state_word);
    do
        if (from >= 0 && (w & ~VTI_STOPPING) != from)
            return false;
    while (!atomic_compare_exchange_weak(&vti_state_word, &w, (w & VTI_STOPPING) | to));
    return true;
}

bool vti_state_move(int from, int to)
{
    return state_replace(from, to);
}

void vti_state_set(int s)
{
    state_replace(-1, s);
}

void vti_state_fork_child(void)
{
    atomic_store(&vti_state_word, VTI_S_CHILD); /* a parent in its exit forked: not the child's */
}

void vti_state_stopping(void)
{
    atomic_fetch_or(&vti_state_word, VTI_STOPPING);
}

bool vti_enabled(void)
{
    return vti_on();
}

void vti_stop(const char *why)
{
    if (vti_state_move(VTI_S_ON, VTI_S_STOPPED) && !vti_settings_get()->quiet)
        vti_msg("vramtrace: tracing stopped: %s\n", why);
}

uint64_t vti_now_ns(void)
{
    return vti_stamp();
}
