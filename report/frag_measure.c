/* frag_measure.c: fragmentation of a device's registered heaps at one
 * instant (the definition is frag.c's header comment) and the list of
 * samples. Reads heaps only, so the peak (peak.c) and OOM analysis can
 * measure without calling the heap/region bookkeeping above them. */
#include "state.h"

#include <stdlib.h>

/* Largest gap between regions (clamped to the heap), bytes. */
static uint64_t heap_largest_free(const vr_heap *h)
{
    uint64_t best = 0, cur = h->addr, end = h->addr + h->size;
    for (const vr_region *r = vr_heap_first(h); r; r = vr_region_next(r)) {
        if (r->addr > cur && r->addr <= end && r->addr - cur > best)
            best = r->addr - cur;
        if (r->addr + r->size > cur)
            cur = r->addr + r->size;
    }
    if (end > cur && end - cur > best)
        best = end - cur;
    return best;
}

vr_frag vr_frag_now(vr_state *s, int32_t device, const char *when)
{
    vr_frag f = {.t_ns = vr_rel_ns(s, s->t_last), .device = device, .when = when};
    size_t i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));) {
        if (h->device != device)
            continue;
        f.reserved += h->size;
        f.allocated += h->region_bytes < h->size ? h->region_bytes : h->size;
        if (h->lf_dirty) { /* only heaps whose regions changed are walked again */
            if (!vr_heap_largest_free_fast(h, &h->largest_free))
                h->largest_free = heap_largest_free(h);
            h->lf_dirty = false;
        }
        if (h->largest_free > f.largest_free)
            f.largest_free = h->largest_free;
    }
    uint64_t total_free = f.reserved - f.allocated;
    f.fragmentation = total_free ? 1.0 - (double)f.largest_free / (double)total_free : 0.0;
    if (f.fragmentation < 0)
        f.fragmentation = 0;
    return f;
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
