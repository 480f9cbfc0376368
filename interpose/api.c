/* api.c: vti.h, the session interface of the NVTX injection (nvtx_inject.c)
 * and the export-table watch: each entry starts the session when it has not
 * started (an event that must be kept), as a hooked CUDA call does. */
#include "vti_internal.h"

bool vti_recording(void)
{
    return vti_session_ensure();
}

int vti_emit(const vt_event *ev)
{
    if (!vti_session_ensure())
        return -1;
    return vti_session_emit(ev);
}

uint32_t vti_capture_stack(int skip)
{
    if (!vti_session_ensure())
        return 0;
    return vti_stack_capture(skip); /* a tail call: no frame of its own to walk */
}

uint32_t vti_intern_string(const char *s)
{
    vti_thread *t;
    uint32_t id;
    if (!s || !vti_session_ensure() || !(t = vti_thread_get()))
        return 0;
    id = vti_intern(t, s);
    vti_thread_put(t);
    return id;
}
