/* state.c: the replay state (state.h) and its accessors: lookups of the
 * string, device and thread tables, notes, the trace-relative clock and the
 * growth bookkeeping shared by the analyses. Calls util and accounting only;
 * every analysis and the event driver (replay.c) sit above it. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

void vr_state_init(vr_state *s, vr_arena *arena, const vt_header *hdr)
{
    memset(s, 0, sizeof(*s));
    s->arena = arena;
    s->hdr = hdr;
    for (unsigned a = 0; a < VT_API_MAX_; a++) {
        const vt_api_info *ai = vt_api_get((enum vt_api)a);
        s->api[a] = (vr_api_props){
            .kind = (uint8_t)ai->kind,
            .host = vt_kind_is_host(ai->kind),
            .handle = ai->space != VT_SPACE_ADDR,
            .live_flags =
                (uint8_t)((ai->stream_ordered ? VR_LIVE_POOLED : 0) |
                          (a == VT_API_CU_GRAPH_LAUNCH ? VR_LIVE_GRAPH : 0) |
                          (vt_api_rounded((enum vt_api)a, ai->kind) ? VR_LIVE_ROUNDED : 0))};
    }
    s->t0 = hdr ? hdr->start_mono_ns : 0;
    s->t_last = s->t0;
    vr_map_init(&s->strings, sizeof(vr_string));
    vr_map_init(&s->stems, sizeof(vr_stem));
    vr_map_init(&s->stacknodes, sizeof(vr_stacknode));
    vr_map_init(&s->pyframes, sizeof(vr_pyframe));
    vr_map_init(&s->ipsyms, sizeof(vr_ipsyms));
    vr_map_init(&s->threads, sizeof(vr_thread));
    vr_map_init(&s->devices, sizeof(vr_devstate));
    vr_map_init(&s->live, sizeof(vr_live));
    vr_map_init(&s->heaps, sizeof(vr_heap));
    vr_map_init(&s->sites, sizeof(vr_counter));
    vr_map_init(&s->phases, sizeof(vr_counter));
    vr_map_init(&s->site_ranges, sizeof(vr_counter));
    vr_map_init(&s->acct, sizeof(vr_acct));
    vr_map_init(&s->vmm_maps, sizeof(vr_vmm_map));
    vr_map_init(&s->live_ext, sizeof(vr_live_ext));
    vr_map_init(&s->uncovered_at, sizeof(vr_uncovered));
    for (int k = 0; k < VR_LEVELS; k++)
        s->level[k].iter.stride = 1;
    s->level[0].iter.slot = 0;
    s->level[1].iter.slot = 2;
    vr_map_init(&s->alloc_sites, sizeof(vr_counter));
    vr_map_init(&s->site_names, sizeof(vr_site_names));
    s->pat.stride = 1;
    s->pat.slot = 1;
    s->win_ns = 1000000; /* 1 ms windows, doubled as the trace gets longer */
    s->hover_ns = 1000;  /* 1 us hover windows (peak.c), doubled likewise */
    s->win_next = s->win_ns;
    s->spans = vr_xcalloc(VR_MAX_SPANS, sizeof(vr_range_span));
}

void vr_state_presize(vr_state *s, const vt_reader *rd)
{
    vt_summary sum;
    if (vt_reader_summary(rd, &sum) && sum.peak_live)
        vr_map_reserve(&s->live,
                       sum.peak_live < VR_PRESIZE_MAX ? (size_t)sum.peak_live : VR_PRESIZE_MAX);
}

/* A heap's tree order: by address (a heap holds one region per address). */
static int vr_region_cmp(const vr_region *a, const vr_region *b)
{
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Sets r's sub_ fields from its own and its children's (vr_region). With
 * L, R its children: the gaps of the subtree are L's, the one between L's
 * highest end and r, the one between the highest end up to r and R's
 * lowest address, and R's (exact when nothing overlaps: R's own gaps are
 * then measured after ends that L and r cannot pass). */
static void region_augment(vr_region *r)
{
    const vr_region *l = RB_LEFT(r, link), *rt = RB_RIGHT(r, link);
    uint64_t end = r->addr + r->size, gap = 0;
    bool overlap = false;
    r->sub_min = l ? l->sub_min : r->addr;
    if (l) {
        gap = l->sub_gap;
        overlap = l->sub_overlap || l->sub_end > r->addr;
        if (r->addr > l->sub_end && r->addr - l->sub_end > gap)
            gap = r->addr - l->sub_end;
        if (l->sub_end > end)
            end = l->sub_end;
    }
    if (rt) {
        overlap = overlap || rt->sub_overlap || end > rt->sub_min;
        if (rt->sub_gap > gap)
            gap = rt->sub_gap;
        if (rt->sub_min > end && rt->sub_min - end > gap)
            gap = rt->sub_min - end;
        if (rt->sub_end > end)
            end = rt->sub_end;
    }
    r->sub_end = end;
    r->sub_gap = gap;
    r->sub_overlap = overlap;
}

/* The tree's rotations keep the sub_ fields of the nodes they move; the
 * insert and remove below fix the path to the root themselves. */
#undef RB_AUGMENT
#define RB_AUGMENT(x) region_augment(x)
RB_GENERATE(vr_regions, vr_region, link, vr_region_cmp)

/* Recomputes the sub_ fields of r and of every region above it. */
static void augment_up(vr_region *r)
{
    for (; r; r = RB_PARENT(r, link))
        region_augment(r);
}

void vr_heap_insert_region(vr_heap *h, vr_region *r)
{
    region_augment(r);
    RB_INSERT(vr_regions, &h->regions, r);
    augment_up(r);
}

void vr_heap_remove_region(vr_heap *h, vr_region *r)
{
    vr_region *above = RB_PARENT(r, link);
    RB_REMOVE(vr_regions, &h->regions, r);
    augment_up(above);
}

void vr_heap_region_resized(vr_region *r)
{
    augment_up(r);
}

bool vr_heap_largest_free_fast(const vr_heap *h, uint64_t *largest)
{
    const vr_region *root = RB_ROOT(&h->regions);
    uint64_t end = h->addr + h->size;
    if (!root) {
        *largest = h->size;
        return true;
    }
    if (root->sub_overlap || root->sub_min < h->addr || root->sub_end > end)
        return false;
    uint64_t best = root->sub_gap;
    if (root->sub_min - h->addr > best)
        best = root->sub_min - h->addr;
    if (end - root->sub_end > best)
        best = end - root->sub_end;
    *largest = best;
    return true;
}

static int vr_gap_cmp(const vr_gap_count *a, const vr_gap_count *b)
{
    return a->largest < b->largest ? -1 : a->largest > b->largest;
}

#undef RB_AUGMENT
#define RB_AUGMENT(x) ((void)(x))
RB_GENERATE(vr_gap_counts, vr_gap_count, link, vr_gap_cmp)

/* Frees the regions of the subtree at r (balanced: the recursion is
 * O(log n) deep), without the rebalancing a removal does. */
static void free_subtree(vr_region *r)
{
    if (!r)
        return;
    free_subtree(RB_LEFT(r, link));
    free_subtree(RB_RIGHT(r, link));
    free(r);
}

void vr_heap_free_regions(vr_heap *h)
{
    free_subtree(RB_ROOT(&h->regions));
    RB_INIT(&h->regions);
    h->nregions = 0;
}

uint64_t vr_heap_largest_free_walk(const vr_heap *h)
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

const vr_region *vr_heap_first(const vr_heap *h)
{
    return RB_MIN(vr_regions, (struct vr_regions *)&h->regions);
}

const vr_region *vr_region_next(const vr_region *r)
{
    return RB_NEXT(vr_regions, NULL, (vr_region *)r);
}

void vr_state_destroy(vr_state *s)
{
    size_t i = 0;
    for (vr_string *e; (e = vr_map_next(&s->strings, &i));) {
        free(e->text);
        free(e->stem_text);
    }
    i = 0;
    for (vr_thread *t; (t = vr_map_next(&s->threads, &i));) {
        free(t->stack);
        free(t->stack_ts);
    }
    i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        free(d->name);
        free(d->buckets);
        for (vr_gap_count *g; (g = RB_ROOT(&d->gaps));) {
            RB_REMOVE(vr_gap_counts, &d->gaps, g);
            free(g);
        }
    }
    i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));)
        vr_heap_free_regions(h);
    for (size_t k = 0; k < s->nmodules; k++) {
        free(s->modules[k].path);
        free(s->modules[k].build_id);
    }
    for (size_t k = 0; k < s->nnvtx; k++)
        if (s->nvtx[k].ph == 'M') /* thread names: the only strings nvtx.c owns */
            free((char *)s->nvtx[k].name);
    free(s->nvtx);
    for (int k = 0; k < VR_LEVELS; k++)
        free(s->level[k].iter.times.ts);
    free(s->pat.times.ts);
    for (size_t k = 0; k < s->nnotes; k++)
        free(s->notes[k]);
    free(s->modules);
    free(s->notes);
    for (size_t k = 0; k < s->nooms; k++)
        free(s->ooms[k].all); /* the lists not let go before (oom.c) */
    free(s->ooms);
    free(s->free_failed);
    free(s->frags);
    free(s->spans);
    free(s->pend);
    free(s->recov);
    free(s->captures);
    free(s->exit_reason);
    vr_acct_destroy(s);
    vr_map_destroy(&s->vmm_maps);
    vr_map_destroy(&s->live_ext);
    vr_map_destroy(&s->uncovered_at);
    free(s->leaf_rows);
    vr_map_destroy(&s->alloc_sites);
    vr_map_destroy(&s->site_names);
    vr_map_destroy(&s->strings);
    vr_map_destroy(&s->stems);
    vr_map_destroy(&s->stacknodes);
    vr_map_destroy(&s->pyframes);
    vr_map_destroy(&s->ipsyms);
    free(s->syms);
    vr_map_destroy(&s->threads);
    vr_map_destroy(&s->devices);
    vr_map_destroy(&s->live);
    vr_map_destroy(&s->heaps);
    vr_map_destroy(&s->sites);
    vr_map_destroy(&s->phases);
    vr_map_destroy(&s->site_ranges);
}

#define VR_MAX_NOTES 200

/* Append note t (malloc'ed; NULL: none) to s, or free it; once: unless s
 * holds the same text already. */
static void add_note(vr_state *s, char *t, bool once)
{
    for (size_t i = 0; t && once && i < s->nnotes; i++)
        if (!strcmp(s->notes[i], t)) {
            free(t);
            return;
        }
    if (!t || s->nnotes == VR_MAX_NOTES) {
        free(t);
        return;
    }
    if (s->nnotes == s->capnotes) {
        s->capnotes = s->capnotes ? s->capnotes * 2 : 8;
        s->notes = vr_xrealloc(s->notes, s->capnotes * sizeof(char *));
    }
    s->notes[s->nnotes++] = t;
}

/* The note fmt/ap formats, added (once: unless the same text is there). */
static void note_v(vr_state *s, bool once, const char *fmt, va_list ap)
{
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0)
        t = NULL;
    add_note(s, t, once);
}

void vr_state_note(vr_state *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note_v(s, false, fmt, ap);
    va_end(ap);
}

void vr_state_note_once(vr_state *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    note_v(s, true, fmt, ap);
    va_end(ap);
}

const char *vr_state_string(const vr_state *s, uint32_t id)
{
    const vr_string *e = id ? vr_map_get(&s->strings, id) : NULL;
    return e ? e->text : "";
}

/* A stem's key is its first string's id with this bit: apart from that
 * string's own name (string ids with the bit set are never stems). */
#define STEM_KEY 0x80000000u

/* The key of string e (id), its stem's first string being first (NULL when
 * it has none): vr_range_key's rule. */
static uint32_t key_of(const vr_string *e, const vr_string *first, uint32_t id)
{
    if (!e || !e->stem || (e->stem & STEM_KEY) || !first || first->stem_repeated)
        return id;
    return e->stem | STEM_KEY;
}

uint32_t vr_range_key(const vr_state *s, uint32_t id)
{
    const vr_string *e = id ? vr_map_get(&s->strings, id) : NULL;
    const vr_string *first = e && e->stem ? vr_map_get(&s->strings, e->stem) : NULL;
    return key_of(e, first, id);
}

uint32_t vr_range_end_key(vr_state *s, uint32_t id)
{
    const vr_string *e = id ? vr_map_get(&s->strings, id) : NULL;
    vr_string *first = e && e->stem ? vr_map_get(&s->strings, e->stem) : NULL;
    if (first && !first->stem_repeated) {
        if (first->stem_seen && vt_range_numbers_cmp(e->number, first->stem_last) <= 0)
            first->stem_repeated = true;
        memcpy(first->stem_last, e->number, sizeof first->stem_last);
        first->stem_seen = true;
    }
    return key_of(e, first, id);
}

bool vr_range_key_live(const vr_state *s, uint32_t key)
{
    const vr_string *e = key & STEM_KEY ? vr_map_get(&s->strings, key & ~STEM_KEY) : NULL;
    return !e || e->stem != (key & ~STEM_KEY) || !e->stem_repeated;
}

const char *vr_range_key_name(vr_state *s, uint32_t id, bool *numbered)
{
    *numbered = (id & STEM_KEY) != 0;
    const vr_string *e = id ? vr_map_get(&s->strings, id & ~STEM_KEY) : NULL;
    if (!e)
        return "";
    return vr_strdup(s->arena, *numbered && e->stem_text ? e->stem_text : e->text);
}

/* A new device id: a vr_devgrowth for the first VR_MAX_GROWTH_DEVICES. */
static void device_created(vr_state *s, vr_devstate *d, int32_t id)
{
    d->id = id;
    if (id < 0)
        return; /* host memory: no room to run out of */
    if (s->ngrowth_devices == VR_MAX_GROWTH_DEVICES) {
        if (!s->growth_devices_capped)
            vr_state_note(s,
                          "growth is projected per device for the first %d devices only: this "
                          "trace has more, so it is projected over all devices' bytes together",
                          VR_MAX_GROWTH_DEVICES);
        s->growth_devices_capped = true;
        return;
    }
    d->growth = vr_alloc(s->arena, sizeof *d->growth);
    memset(d->growth, 0, sizeof *d->growth);
    vr_devgrowth_reopen(s, d->growth);
    s->growth_devices[s->ngrowth_devices++] = vr_map_index_of(&s->devices, d) + 1;
}

vr_devstate *vr_state_device_lookup(vr_state *s, int32_t id)
{
    bool created;
    vr_devstate *d = vr_map_put(&s->devices, (uint64_t)(int64_t)id + 1, &created);
    if (created)
        device_created(s, d, id);
    s->device_id = id;
    s->device_item = vr_map_index_of(&s->devices, d) + 1;
    return d;
}

vr_thread *vr_state_thread_lookup(vr_state *s, uint32_t tid)
{
    vr_thread *t = vr_map_put(&s->threads, tid, NULL);
    s->thread_tid = tid;
    s->thread_item = vr_map_index_of(&s->threads, t) + 1;
    return t;
}

vr_live_ext *vr_live_ext_get(vr_state *s, uint64_t key)
{
    return vr_map_put(&s->live_ext, key, NULL);
}

/* The capture open on stream, if one is, ends: the one thread tid began
 * when stream is the per-thread default stream (each thread's own stream
 * under one value: another thread's end there ended this one's capture, a
 * report counted 12 of the 16 MiB corpus.per_thread_stream's four threads
 * made during captures now and then). */
static void capture_end(vr_state *s, uint64_t stream, uint32_t tid)
{
    for (size_t i = 0; i < s->ncaptures; i++)
        if (s->captures[i].stream == stream &&
            (stream != VT_STREAM_PER_THREAD || s->captures[i].tid == tid)) {
            vr_thread *t = vr_state_thread(s, s->captures[i].tid);
            if (t->captures)
                t->captures--;
            s->captures[i] = s->captures[--s->ncaptures];
            return;
        }
}

void vr_state_captures_drop(vr_state *s, uint32_t tid)
{
    vr_thread *t = vr_map_get(&s->threads, tid);
    for (size_t i = s->ncaptures; i-- > 0;)
        if (s->captures[i].tid == tid)
            s->captures[i] = s->captures[--s->ncaptures];
    if (t)
        t->captures = 0;
}

void vr_state_capture(vr_state *s, const vt_event *ev)
{
    uint64_t stream = ev->u.capture.stream;
    capture_end(s, stream, ev->thread_id); /* a begin on a stream still open ends the one before */
    if (!ev->u.capture.began || s->ncaptures == VR_MAX_CAPTURES)
        return;
    if (s->ncaptures == s->capcaptures) {
        s->capcaptures = s->capcaptures ? s->capcaptures * 2 : 8;
        s->captures = vr_xrealloc(s->captures, s->capcaptures * sizeof *s->captures);
    }
    s->captures[s->ncaptures++] = (struct vr_capture){stream, ev->thread_id};
    vr_state_thread(s, ev->thread_id)->captures++;
    s->had_captures = true;
}

size_t vr_level_find(const vr_level *lv, uint32_t name)
{
    for (size_t i = 0; i < lv->nnames; i++)
        if (lv->names[i].name == name)
            return i;
    return SIZE_MAX;
}

void vr_state_symbol(vr_state *s, const vt_event *ev)
{
    const uint64_t ip = ev->u.symbol.ip;
    vr_ipsyms *e = vr_map_get(&s->ipsyms, ip);
    if (ev->u.symbol.index == 0) {
        e = vr_map_put(&s->ipsyms, ip, NULL);
        e->first = (uint32_t)s->nsyms;
        e->n = 0;
    } else if (!e || e->n != ev->u.symbol.index || e->first + e->n != s->nsyms) {
        vr_state_note_once(s, "symbol records out of order (a damaged trace): ignored");
        return;
    }
    if (s->nsyms == s->capsyms) {
        s->capsyms = s->capsyms ? 2 * s->capsyms : 256;
        s->syms = vr_xrealloc(s->syms, s->capsyms * sizeof *s->syms);
    }
    s->syms[s->nsyms++] = (vr_symbol){ev->u.symbol.function, ev->u.symbol.file, ev->u.symbol.line,
                                      (ev->u.symbol.flags & VT_SYMBOL_INLINED) != 0};
    e->n++;
}
