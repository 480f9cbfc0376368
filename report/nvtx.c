/* nvtx.c: the NVTX events of the model (vr_report.nvtx): thread names,
 * push/pop ranges and start/end ranges in trace order, kept during the
 * replay so that no renderer reads the trace again (render_chrome.c shows
 * them). Names are string ids until the model is built: a string record may
 * come after the range that uses it. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

/* At most this many events are kept (32 bytes each); the rest are left out
 * with a note. */
#define VR_MAX_NVTX 1000000

static vr_nvtx_event *nvtx_push(vr_state *s)
{
    if (s->nnvtx == VR_MAX_NVTX) {
        if (!s->nvtx_capped)
            vr_state_note(s, "the first %d NVTX events are kept for the Chrome trace only",
                          VR_MAX_NVTX);
        s->nvtx_capped = true;
        return NULL;
    }
    if (s->nnvtx == s->capnvtx) {
        s->capnvtx = s->capnvtx ? 2 * s->capnvtx : 64;
        s->nvtx = vr_xrealloc(s->nvtx, s->capnvtx * sizeof *s->nvtx);
    }
    vr_nvtx_event *e = &s->nvtx[s->nnvtx++];
    memset(e, 0, sizeof *e);
    return e;
}

/* The event's phase, 0 when ev is not kept (a pop without a push). */
static char nvtx_phase(vr_state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_THREAD:
        return 'M';
    case VT_REC_RANGE_PUSH:
        vr_state_thread(s, ev->thread_id)->nvtx_open++;
        return 'B';
    case VT_REC_RANGE_POP: {
        vr_thread *t = vr_state_thread(s, ev->thread_id);
        if (!t->nvtx_open)
            return 0;
        t->nvtx_open--;
        return 'E';
    }
    case VT_REC_RANGE_START:
        return 'b';
    case VT_REC_RANGE_END:
        return 'e';
    case VT_REC_CAPTURE:
        return ev->u.capture.began ? 'b' : 'e';
    default:
        return 0;
    }
}

void vr_nvtx_thread_ended(vr_state *s, uint32_t tid)
{
    vr_thread *t = vr_map_get(&s->threads, tid);
    for (vr_nvtx_event *e; t && t->nvtx_open && (e = nvtx_push(s)); t->nvtx_open--) {
        e->ph = 'E';
        e->tid = tid;
        e->t_ns = vr_rel_ns(s, s->t_last);
    }
}

void vr_nvtx_record(vr_state *s, const vt_event *ev)
{
    char ph = nvtx_phase(s, ev);
    vr_nvtx_event *e = ph ? nvtx_push(s) : NULL;
    if (!e)
        return;
    e->ph = ph;
    if (ph == 'M') {
        e->tid = ev->u.thread.id;
        e->name = strdup(ev->u.thread.name ? ev->u.thread.name : "");
        return;
    }
    e->tid = ev->thread_id;
    e->t_ns = vr_rel_ns(s, ev->ts_ns);
    if (ph == 'B')
        e->id = ev->u.range.name; /* string id, resolved by vr_nvtx_build */
    else if (ev->type == VT_REC_CAPTURE)
        e->capture = true, e->id = ev->u.capture.stream;
    else if (ph == 'b' || ph == 'e')
        e->id = ev->u.range_se.id;
    if (ph == 'b' && !e->capture)
        e->name = (const char *)(uintptr_t)ev->u.range_se.name;
}

static const char *nvtx_name(vr_state *s, const vr_nvtx_event *e)
{
    uint32_t id = e->ph == 'B' ? (uint32_t)e->id : (uint32_t)(uintptr_t)e->name;
    const vr_string *str = id ? vr_map_get(&s->strings, id) : NULL;
    return vr_strdup(s->arena, str ? str->text : "(unnamed)");
}

void vr_nvtx_build(vr_state *s, vr_report *r)
{
    vr_nvtx_event *out = vr_alloc(s->arena, (s->nnvtx ? s->nnvtx : 1) * sizeof *out);
    for (size_t i = 0; i < s->nnvtx; i++) {
        vr_nvtx_event e = s->nvtx[i];
        if (e.ph == 'M')
            e.name = vr_strdup(s->arena, e.name);
        else if (e.capture)
            e.name = VR_CAPTURE_SPAN;
        else if (e.ph == 'B' || e.ph == 'b')
            e.name = nvtx_name(s, &s->nvtx[i]);
        else
            e.name = e.ph == 'e' ? "range" : "";
        if (e.ph == 'B')
            e.id = 0;
        out[i] = e;
    }
    r->nvtx = out;
    r->nnvtx = s->nnvtx;
}
