/* frag.c: heaps and regions announced by a sub-allocator with the NVTX Mem
 * API (heap = a segment such as PyTorch's cudaMalloc'ed block pool, region =
 * a tensor inside it). reserved = heaps + direct allocations outside heaps;
 * allocated = regions + direct allocations outside heaps.
 *
 * Fragmentation, the one definition used at the peak, at each OOM and over
 * time: of the bytes free inside a device's registered heaps (heaps minus
 * their regions), the share not in the largest contiguous free block of any
 * one heap: 1 - largest_free / total_free (0 when nothing is free). A request
 * larger than largest_free fails even though total_free would hold it.
 *
 * Its inputs are kept per device as heaps and regions change (attach,
 * detach): the sums of heap sizes and of region bytes (each at most its
 * heap's size), and how many heaps have each largest free gap, a heap's
 * read at the root of its region tree (state.c). */
#include "state.h"

#include <stdlib.h>

static vr_heap *heap_get(vr_state *s, uint64_t id)
{
    return vr_map_get(&s->heaps, id);
}

/* One more (n = 1) or one fewer (n = -1) heap of d with largest gap g. */
static void gap_count(vr_devstate *d, uint64_t g, int n)
{
    vr_gap_count key = {.largest = g}, *c = RB_FIND(vr_gap_counts, &d->gaps, &key);
    if (!c) {
        c = vr_xcalloc(1, sizeof *c);
        c->largest = g;
        RB_INSERT(vr_gap_counts, &d->gaps, c);
    }
    c->heaps += (uint64_t)(int64_t)n;
    if (!c->heaps) {
        RB_REMOVE(vr_gap_counts, &d->gaps, c);
        free(c);
    }
}

/* Heap h's part of its device's fragmentation inputs: added (attach, after
 * any change of its regions, size or device) or taken away (detach, before
 * one). A heap whose largest gap its tree cannot give (a region overlaps
 * another or leaves the heap) is counted as irregular instead: its regions
 * are walked when the fragmentation is measured, not at every change
 * (frag_measure.c). */
static void attach(vr_state *s, vr_heap *h)
{
    vr_devstate *d = vr_state_device(s, h->device);
    d->frag_allocated += h->region_bytes < h->size ? h->region_bytes : h->size;
    h->irregular = !vr_heap_largest_free_fast(h, &h->largest_free);
    if (h->irregular)
        d->irregular_heaps++;
    else
        gap_count(d, h->largest_free, 1);
    h->lf_stale = h->irregular;
    h->attached = true;
}

static void detach(vr_state *s, vr_heap *h)
{
    if (!h->attached)
        return;
    vr_devstate *d = vr_state_device(s, h->device);
    d->frag_allocated -= h->region_bytes < h->size ? h->region_bytes : h->size;
    if (h->irregular)
        d->irregular_heaps--;
    else
        gap_count(d, h->largest_free, -1);
    h->attached = false;
}

/* Heap h starts (uncovered_add) or stops (uncovered_drop) waiting for its
 * allocation. */
static void uncovered_add(vr_state *s, const vr_heap *h)
{
    bool created;
    vr_uncovered *u = vr_map_put(&s->uncovered_at, h->addr, &created);
    u->heap = created ? h->key : 0;
    u->n++;
    s->uncovered_heaps++;
}

static void uncovered_drop(vr_state *s, const vr_heap *h)
{
    vr_uncovered *u = vr_map_get(&s->uncovered_at, h->addr);
    if (u && --u->n == 0)
        vr_map_del(&s->uncovered_at, h->addr);
    else if (u && u->heap == h->key)
        u->heap = 0;
    s->uncovered_heaps--;
}

/* Cover the live direct allocation at addr by heap h: its bytes now count as
 * reserved (through the heap), no longer as allocated. A pending one (its
 * cudaMalloc just before) was never counted: nothing to take back. */
static void cover(vr_state *s, vr_heap *h, vr_live *l)
{
    if (l->pending)
        l->pending = VR_PENDING_NONE;
    else
        vr_account_direct(s, l, -1);
    l->in_heap = 1;
    vr_live_ext_get(s, l->key)->heap = h->key;
    h->covered_alloc = l->key;
    detach(s, h);
    h->device = l->device;
    attach(s, h);
    uncovered_drop(s, h);
}

bool vr_heap_known(const vr_state *s, uint64_t heap)
{
    return vr_map_get(&s->heaps, heap) != NULL;
}

void vr_heap_register(vr_state *s, const vt_event *ev)
{
    vr_heap *h = vr_map_put(&s->heaps, ev->u.heap.heap, NULL);
    h->addr = ev->u.heap.addr;
    h->size = ev->u.heap.size;
    h->device = 0;
    attach(s, h);
    uncovered_add(s, h);
    vr_live *l = vr_map_get(&s->live, h->addr);
    if (l && l->device >= 0 && !l->in_heap)
        cover(s, h, l);
    vr_devstate *d = vr_state_device(s, h->device);
    d->heap_bytes += h->size;
    vr_account_reserved(s, h->device, (int64_t)h->size);
}

/* The heap that waits for an allocation at addr, NULL when none: found
 * through s->uncovered_at, scanning the heaps only when several wait there
 * (then the first one, as before the index). */
static vr_heap *waiting_heap(vr_state *s, uint64_t addr)
{
    const vr_uncovered *u = vr_map_get(&s->uncovered_at, addr);
    if (!u)
        return NULL;
    if (u->heap)
        return heap_get(s, u->heap);
    size_t i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));)
        if (!h->covered_alloc && h->addr == addr)
            return h;
    return NULL;
}

bool vr_heap_check_alloc_slow(vr_state *s, vr_live *l)
{
    vr_heap *h = waiting_heap(s, l->key);
    if (!h)
        return false;
    /* the heap was counted on device 0 until now */
    vr_state_device(s, h->device)->heap_bytes -= h->size;
    vr_account_reserved(s, h->device, -(int64_t)h->size);
    cover(s, h, l);
    vr_state_device(s, h->device)->heap_bytes += h->size;
    vr_account_reserved(s, h->device, (int64_t)h->size);
    return true;
}

static void drop_regions(vr_state *s, vr_heap *h)
{
    vr_devstate *d = vr_state_device(s, h->device);
    for (const vr_region *r = vr_heap_first(h); r; r = vr_region_next(r)) {
        d->region_bytes -= r->size;
        vr_account(s, h->device, r->stack, r->range, -(int64_t)r->size, -1);
    }
    detach(s, h);
    vr_heap_free_regions(h);
    h->region_bytes = 0;
    attach(s, h);
}

uint64_t vr_heap_unregister(vr_state *s, uint64_t id, bool reset_only)
{
    vr_heap *h = heap_get(s, id);
    if (!h)
        return 0;
    drop_regions(s, h);
    if (reset_only)
        return 0;
    vr_devstate *d = vr_state_device(s, h->device);
    d->heap_bytes -= h->size;
    vr_account_reserved(s, h->device, -(int64_t)h->size);
    vr_live *l = h->covered_alloc ? vr_map_get(&s->live, h->covered_alloc) : NULL;
    uint64_t uncovered = 0;
    if (l && l->in_heap) { /* counted again only if not freed right after */
        l->in_heap = 0;
        l->pending = VR_PENDING_UNCOVERED;
        vr_live_ext_get(s, l->key)->pending_ts = s->t_last;
        uncovered = l->key;
    } else if (!h->covered_alloc) {
        uncovered_drop(s, h);
    }
    detach(s, h);
    vr_map_del(&s->heaps, id); /* drop_regions left its tree empty */
    return uncovered;
}

static vr_region *region_find(vr_heap *h, uint64_t addr)
{
    vr_region key = {.addr = addr};
    return RB_FIND(vr_regions, &h->regions, &key);
}

void vr_region_register(vr_state *s, const vt_event *ev, uint32_t range)
{
    vr_heap *h = heap_get(s, ev->u.region.heap);
    if (!h)
        return; /* region of an unknown heap: nothing to attribute it to */
    if (region_find(h, ev->u.region.addr)) {
        vr_region_unregister(s, ev->u.region.heap, ev->u.region.addr);
        h = heap_get(s, ev->u.region.heap);
    }
    vr_region *r = vr_xcalloc(1, sizeof *r);
    r->addr = ev->u.region.addr;
    r->size = ev->u.region.size;
    r->stack = ev->u.region.stack;
    r->range = range;
    r->ts = s->t_last;
    detach(s, h);
    vr_heap_insert_region(h, r); /* no region at addr: dropped above */
    h->nregions++;
    h->region_bytes += r->size;
    attach(s, h);
    vr_iteration_alloc(s, r->size);
    vr_state_device(s, h->device)->region_bytes += r->size;
    vr_account(s, h->device, r->stack, r->range, (int64_t)r->size, 1);
}

void vr_region_name(vr_state *s, uint64_t heap, uint64_t addr, uint32_t name)
{
    vr_heap *h = heap_get(s, heap);
    vr_region *r = h ? region_find(h, addr) : NULL;
    if (!r || !name)
        return;
    vr_site_names *sn = vr_map_put(&s->site_names, r->stack, NULL);
    for (uint32_t i = 0; i < sn->n; i++)
        if (sn->name[i] == name)
            return;
    if (sn->n < VR_SITE_NAMES)
        sn->name[sn->n++] = name;
    else
        sn->more++;
}

void vr_region_unregister(vr_state *s, uint64_t heap, uint64_t addr)
{
    vr_heap *h = heap_get(s, heap);
    vr_region *r = h ? region_find(h, addr) : NULL;
    if (!r)
        return;
    uint64_t size = r->size;
    uint32_t stack = r->stack, range = r->range;
    detach(s, h);
    vr_heap_remove_region(h, r);
    free(r);
    h->nregions--;
    h->region_bytes -= size;
    attach(s, h);
    vr_state_device(s, h->device)->region_bytes -= size;
    vr_account(s, h->device, stack, range, -(int64_t)size, -1);
}

void vr_region_resize(vr_state *s, uint64_t heap, uint64_t addr, uint64_t size)
{
    vr_heap *h = heap_get(s, heap);
    vr_region *r = h ? region_find(h, addr) : NULL;
    if (!r)
        return;
    int64_t delta = (int64_t)size - (int64_t)r->size;
    uint32_t stack = r->stack, range = r->range;
    detach(s, h);
    h->region_bytes += (uint64_t)delta;
    r->size = size;
    vr_heap_region_resized(r);
    attach(s, h);
    vr_state_device(s, h->device)->region_bytes += (uint64_t)delta;
    vr_account(s, h->device, stack, range, delta, 0);
}
