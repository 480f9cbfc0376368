/* frag_measure.c: fragmentation of a device's registered heaps at one
 * instant (the definition is frag.c's header comment) and the list of
 * samples. Reads only the device's inputs that frag.c keeps up to date
 * (vr_devstate: heap_bytes, frag_allocated, gaps), in O(log heaps), so
 * the peak (peak.c) and OOM analysis can measure at every new peak without
 * calling the heap/region bookkeeping above them. */
#include "state.h"

#include <stdlib.h>

vr_frag vr_frag_now(vr_state *s, int32_t device, const char *when)
{
    vr_frag f = {.t_ns = vr_rel_ns(s, s->t_last), .device = device, .when = when};
    const vr_devstate *d = vr_map_get(&s->devices, (uint64_t)(int64_t)device + 1);
    const vr_gap_count *g = d ? RB_MAX(vr_gap_counts, (struct vr_gap_counts *)&d->gaps) : NULL;
    if (d) {
        f.reserved = d->heap_bytes;
        f.allocated = d->frag_allocated;
    }
    f.largest_free = g ? g->largest : 0;
    size_t i = 0;
    for (vr_heap *h; d && d->irregular_heaps && (h = vr_map_next(&s->heaps, &i));) {
        if (!h->attached || !h->irregular || h->device != device)
            continue;
        if (h->lf_stale) /* walked once per change at most */
            h->largest_free = vr_heap_largest_free_walk(h);
        h->lf_stale = false;
        if (h->largest_free > f.largest_free)
            f.largest_free = h->largest_free;
    }
    vr_frag_settle(&f);
    return f;
}

void vr_frag_settle(vr_frag *f)
{
    uint64_t total_free = f->reserved > f->allocated ? f->reserved - f->allocated : 0;
    f->fragmentation = total_free ? 1.0 - (double)f->largest_free / (double)total_free : 0.0;
    if (f->fragmentation < 0)
        f->fragmentation = 0;
}

#define VR_MAX_FRAGS 1000

void vr_frag_push(vr_state *s, const vr_frag *f)
{
    if (s->nfrags == VR_MAX_FRAGS)
        return;
    if (s->nfrags == s->capfrags) {
        s->capfrags = s->capfrags ? s->capfrags * 2 : 16;
        s->frags = vr_xrealloc(s->frags, s->capfrags * sizeof(vr_frag));
    }
    s->frags[s->nfrags++] = *f;
}
