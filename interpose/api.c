/* api.c: vti.h, the session interface of the NVTX injection (nvtx_inject.c)
 * and the export-table watch: each entry starts the session when it has not
 * started (an event that must be kept), as a hooked CUDA call does. */
#include "vti_internal.h"

/* vti_session_ensure() with its common answer first: started and recording
 * is one load (as vti_hook_enter_outer), no call. */
static inline bool session_ready(void)
{
    return vti_on() || vti_session_ensure();
}

bool vti_recording(void)
{
    return session_ready();
}

int vti_emit(const vt_event *ev)
{
    if (!session_ready())
        return -1;
    return vti_session_emit(ev);
}

uint32_t vti_capture_stack(int skip)
{
    if (!session_ready())
        return 0;
    return vti_stack_capture(skip); /* a tail call: no frame of its own to walk */
}

uint32_t vti_intern_string(const char *s)
{
    vti_thread *t;
    uint32_t id;
    if (!s || !session_ready() || !(t = vti_thread_get()))
        return 0;
    id = vti_intern(t, s);
    vti_thread_put(t);
    return id;
}
