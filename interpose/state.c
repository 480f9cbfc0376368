/* state.c: the lowest layer of the preload library: the calling thread's
 * re-entry depth and current device, and whether the session records. Every
 * other file may read or move this state; this file calls only settings.c
 * (quiet) and msg.c (the "tracing stopped" line). A stop requested from deep
 * inside (the writer failed, a table is full) lands here, and the life cycle
 * (lifecycle.c) and the session core (session.c) read it. The events'
 * timestamps (vti_now_ns) come from here too. */
#include <stdatomic.h>

#include "vti_internal.h"

VTI_TLS int vti_tl_depth;
VTI_TLS int vti_tl_device;

static _Atomic int state = VTI_S_OFF;
static _Atomic int stopping;  /* exit in progress: no new writes */
static vt_stamp_clock stamps; /* the event timestamps (vt_clock_stamp) */

int vti_state(void)
{
    return atomic_load_explicit(&state, memory_order_acquire);
}

bool vti_state_move(int from, int to)
{
    return atomic_compare_exchange_strong(&state, &from, to);
}

void vti_state_set(int s)
{
    atomic_store(&state, s);
}

void vti_state_stopping(void)
{
    atomic_store(&stopping, 1);
}

bool vti_enabled(void)
{
    return atomic_load_explicit(&state, memory_order_acquire) == VTI_S_ON &&
           !atomic_load_explicit(&stopping, memory_order_relaxed);
}

void vti_stop(const char *why)
{
    if (vti_state_move(VTI_S_ON, VTI_S_STOPPED) && !vti_settings_get()->quiet)
        vti_msg("vramtrace: tracing stopped: %s\n", why);
}

uint64_t vti_now_ns(void)
{
    return vt_clock_stamp(&stamps);
}
