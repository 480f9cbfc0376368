/* replay.c: the single streaming pass over a trace. State is proportional to
 * live allocations, live regions, distinct stacks and strings; never to the
 * number of events. */
#include "peak_hot.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* ---- event handlers ------------------------------------------------------ */

static void on_module(vr_state *s, const vt_event *ev)
{
    if (s->nmodules == s->capmodules) {
        s->capmodules = s->capmodules ? s->capmodules * 2 : 32;
        s->modules = vr_xrealloc(s->modules, s->capmodules * sizeof(vr_module));
    }
    vr_module *m = &s->modules[s->nmodules++];
    m->id = ev->u.module.id;
    m->path = strdup(ev->u.module.path ? ev->u.module.path : "");
    m->bias = ev->u.module.bias;
    m->start = ev->u.module.start;
    m->end = ev->u.module.end;
    m->build_id = ev->u.module.build_id ? strdup(ev->u.module.build_id) : NULL;
}

/* A numbered name's stem: the first string of that stem (vr_range_key). */
static void string_stem(vr_state *s, vr_string *e)
{
    free(e->stem_text);
    e->stem_text = NULL;
    e->stem = 0;
    memset(e->number, 0, sizeof e->number);
    size_t n = vt_range_stem(e->text, NULL, 0);
    if (!n || n > UINT32_MAX)
        return;
    char *stem = vr_xmalloc(n + 1);
    vt_range_stem(e->text, stem, n + 1);
    bool created;
    vr_stem *st = vr_map_put(&s->stems, vr_text_hash(stem, n), &created);
    if (created)
        st->id = (uint32_t)e->key;
    const vr_string *first = vr_map_get(&s->strings, st->id);
    if (first && first->stem_text && !strcmp(first->stem_text, stem))
        e->stem = st->id;
    else if (first == e || st->id == (uint32_t)e->key)
        e->stem = (uint32_t)e->key;
    if (!e->stem) {
        free(stem);
        return;
    }
    e->stem_text = stem;
    vt_range_numbers(e->text, e->number);
}

static void on_string(vr_state *s, const vt_event *ev)
{
    vr_string *e = vr_map_put(&s->strings, ev->u.string.id, NULL);
    free(e->text);
    e->text = strdup(ev->u.string.text ? ev->u.string.text : "");
    string_stem(s, e);
}

static void on_device(vr_state *s, const vt_event *ev)
{
    vr_devstate *d = vr_state_device(s, ev->u.device.id);
    free(d->name);
    d->name = strdup(ev->u.device.name ? ev->u.device.name : "");
    if (ev->u.device.total_bytes)
        d->total = ev->u.device.total_bytes;
}

/* The live allocation an ALLOC or FREE event names, looked up once per
 * event (replay_keyed) and handed to every step that needs it. */
typedef struct vr_found {
    uint64_t key;
    vr_live *live; /* NULL: not live */
    vr_map_hint hint;
} vr_found;

/* Drops live allocation l; hint: where vr_map_find found it (NULL: look).
 * Inline for on_free (every free of a storm); free_live for the rest. */
static ALWAYS_INLINE void free_live_hot(vr_state *s, vr_live *l, const vr_map_hint *hint)
{
    uint64_t addr = l->key;
    vr_acct_free(s, l->device, (enum vt_kind)l->kind, l->size);
    if (l->device < 0) {
        s->host_pinned -= l->size;
    } else {
        if (l->in_heap) /* its memory is gone, so is the heap: l is now pending, never counted */
            vr_heap_unregister(s, vr_live_ext_get(s, addr)->heap, false);
        if (!l->pending)
            vr_account_direct_inline(s, l, -1);
    }
    if (s->live_ext.len)
        vr_map_del(&s->live_ext, addr);
    if (hint && hint->mods == s->live.mods)
        vr_map_remove(&s->live, hint);
    else
        vr_map_del(&s->live, addr);
}

static void free_live(vr_state *s, vr_live *l, const vr_map_hint *hint)
{
    free_live_hot(s, l, hint);
}

/* Count l as a direct allocation as if at time ts (the peak's time is the
 * allocation's, not the time its thread's next event settled it). */
static ALWAYS_INLINE void account_direct_at(vr_state *s, vr_live *l, uint64_t ts)
{
    uint64_t now = s->t_last;
    s->t_last = ts;
    vr_account_direct_inline(s, l, 1);
    s->t_last = now;
}

/* A pending allocation l is settled: a new one that a heap registered
 * before it claims becomes that heap's memory, never counted as allocated
 * (as when its heap registration follows it); any other is counted at its
 * own time. Inline for hold_new (every allocation of a storm);
 * pending_commit for the rest. */
static ALWAYS_INLINE void pending_commit_hot(vr_state *s, vr_live *l)
{
    bool fresh = l->pending == VR_PENDING_NEW;
    if (fresh && vr_heap_check_alloc(s, l))
        return;
    uint64_t since = fresh ? l->ts : vr_live_ext_get(s, l->key)->pending_ts;
    l->pending = VR_PENDING_NONE;
    account_direct_at(s, l, since);
    if (fresh)
        vr_iteration_alloc(s, l->size);
}

static void pending_commit(vr_state *s, vr_live *l)
{
    pending_commit_hot(s, l);
}

/* l is pending (see VR_PENDING_*): a new one since its own time (l->ts), an
 * uncovered one since vr_live_ext.pending_ts. */
static void hold(vr_state *s, vr_live *l, uint8_t kind)
{
    l->pending = kind;
    if (s->npend == s->cappend) {
        s->cappend = s->cappend ? s->cappend * 2 : 16;
        s->pend = vr_xrealloc(s->pend, s->cappend * sizeof(uint32_t));
    }
    s->pend[s->npend++] = vr_map_index_sized(&s->live, l, sizeof *l); /* no division */
}

/* Live-map key of an allocation (vr_handle_key for a VMM handle). */
static uint64_t live_key(const vr_state *s, uint64_t addr, enum vt_api api)
{
    return vr_api(s, api)->handle ? vr_handle_key(addr) : addr;
}

/* The live-map key of an ALLOC or FREE event, 0 for other events. */
static uint64_t event_key(const vr_state *s, const vt_event *ev)
{
    if (ev->type == VT_REC_ALLOC)
        return live_key(s, ev->u.alloc.addr, ev->u.alloc.api);
    if (ev->type == VT_REC_FREE)
        return live_key(s, ev->u.free.addr, ev->u.free.api);
    return 0;
}

/* What a timed event does to pending allocations. PEND_LEAVES: it neither
 * reads nor lowers the allocated bytes (a heap registration claims a
 * pending allocation at its address; a VMM mapping; markers), so they stay
 * pending. PEND_ALLOC: an allocation leaves them when it is new (at a free
 * address) and ends no pattern iteration (which samples the live bytes).
 * PEND_SETTLES: every other event settles them first. */
enum pend_rule { PEND_LEAVES, PEND_ALLOC, PEND_SETTLES };

static ALWAYS_INLINE enum pend_rule pend_rule(enum vt_rec type)
{
    switch (type) {
    case VT_REC_ALLOC:
        return PEND_ALLOC;
    case VT_REC_HEAP_REGISTER:
    case VT_REC_VMM_MAP:
    case VT_REC_MARK:
    case VT_REC_FREE_FAILED: /* frees nothing */
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_REGION_NAME:
    case VT_REC_CAPTURE:
    case VT_REC_MEMINFO:   /* reads the device's use, which holds them (pending_bytes) */
    case VT_REC_POOL_STAT: /* a pool's state: no allocated bytes */
        return PEND_LEAVES;
    default:
        return PEND_SETTLES;
    }
}

/* ev (of type `type`, f its live-map lookup) leaves pending allocations
 * pending (pend_rule). */
static ALWAYS_INLINE bool neutral(const vr_state *s, enum vt_rec type, const vt_event *ev,
                                  const vr_found *f)
{
    enum pend_rule r = pend_rule(type);
    return r == PEND_LEAVES ||
           (r == PEND_ALLOC && !f->live && !vr_pattern_ticks(s, ev->u.alloc.stack));
}

/* Commit every pending allocation, in time order, each at its own time;
 * except an uncovered one at live-map key freed, which the event being
 * replayed frees (free_live drops it uncounted; 0: none). */
static void settle_pending(vr_state *s, uint64_t freed)
{
    for (size_t i = 0; i < s->npend; i++) {
        vr_live *l = vr_map_at(&s->live, s->pend[i]);
        if (!l || !l->pending)
            continue;
        if (l->pending == VR_PENDING_UNCOVERED && l->key == freed)
            continue;
        pending_commit(s, l);
    }
    s->npend = 0;
}

/* The device memory device's pending allocations take (none of them
 * counted as allocated, nor in a heap, yet: they wait for their heap
 * registration or their settling): their bytes and the driver's rounding
 * that vr_device_rounding would count once they are. */
static uint64_t pending_bytes(vr_state *s, int32_t device)
{
    uint64_t sum = 0;
    bool pooled_in_spare = vr_state_device(s, device)->pool_sampled;
    for (size_t i = 0; i < s->npend; i++) {
        const vr_live *l = vr_map_at(&s->live, s->pend[i]);
        if (!l || !l->pending || l->device != device)
            continue;
        sum += l->size;
        if ((l->flags & VR_LIVE_ROUNDED) && !((l->flags & VR_LIVE_POOLED) && pooled_in_spare))
            sum += vt_driver_slack(l->size);
    }
    return sum;
}

static void mark_recovered(vr_state *s, size_t index, uint64_t seq)
{
    s->recovered++;
    if (index < s->nooms && s->ooms[index].seq == seq) {
        s->ooms[index].o.recovered = true;
        vr_oom_drop_all(s, index);
    }
}

/* The pending recovery of VMM handle key (by_thread: of thread key) ends:
 * recovered (its handle was mapped) or not (released unmapped: the retry's
 * pages were given back, as PyTorch's expandable segments do when a later
 * page of the same request fails; or the thread failed again). */
static void end_recovery(vr_state *s, uint64_t key, bool by_thread, bool recovered)
{
    for (size_t i = 0; i < s->nrecov; i++)
        if ((by_thread ? s->recov[i].tid : s->recov[i].key) == key) {
            if (recovered)
                mark_recovered(s, s->recov[i].fail_index, s->recov[i].fail_seq);
            s->recov[i] = s->recov[--s->nrecov];
            return;
        }
}

/* An allocation attempt on thread t (key: the allocation's live-map key
 * when it succeeded): its previous failure, if any, is recovered when this
 * attempt succeeded with the same size and device. A VMM handle's creation
 * is recovered only once the retry's handle is mapped: handles come in one
 * page size, so a retry of that size may be a page of a mapping that fails
 * again, whose pages are then released unmapped (PyTorch's expandable
 * segments: ExpandableSegment::map). */
static void attempt(vr_state *s, vr_thread *t, bool ok, uint64_t size, int32_t device, uint64_t key)
{
    if (!t->fail_open)
        return;
    t->fail_open = false;
    if (!ok || size != t->fail_size || device != t->fail_device)
        return;
    if (!t->fail_vmm) {
        mark_recovered(s, t->fail_index, t->fail_seq);
        return;
    }
    if (s->nrecov == s->caprecov) {
        s->caprecov = s->caprecov ? 2 * s->caprecov : 4;
        s->recov = vr_xrealloc(s->recov, s->caprecov * sizeof *s->recov);
    }
    s->recov[s->nrecov++] = (struct vr_recovery){
        .key = key, .tid = t->key, .fail_index = t->fail_index, .fail_seq = t->fail_seq};
}

static void on_failed(vr_state *s, const vt_event *ev)
{
    vr_thread *t = vr_state_thread(s, ev->thread_id);
    vr_acct_failed(s, vr_kind_device(s, ev->u.failed.api, ev->u.failed.device),
                   vr_api(s, ev->u.failed.api)->kind);
    attempt(s, t, false, 0, 0, 0);
    if (s->nrecov)
        end_recovery(s, t->key, true, false); /* its retry failed too */
    s->failed++;
    vr_oom_failed(s, ev, t);
    t->unmapped = 0; /* the mapping failed: its pages are given back */
    if (ev->u.failed.error != VT_ERROR_OUT_OF_MEMORY) { /* nothing a retry recovers */
        s->failed_error++;
        return;
    }
    t->fail_open = true;
    t->fail_size = ev->u.failed.size;
    t->fail_device = ev->u.failed.device;
    t->fail_vmm = vr_api(s, ev->u.failed.api)->kind == VT_KIND_VMM;
    t->fail_index = s->nooms - 1;
    t->fail_seq = s->failed;
}

/* A thread's start record (trace format 15) for an id already seen: the
 * kernel gave the id of a thread that ended to a new one (ids wrap at
 * pid_max; the recorder writes this record before any other of a thread). The earlier thread ended
 * before it, by the latest time replayed: its open ranges end uncounted,
 * its pending failure is never retried (the new thread's allocations are
 * no retry of it), its captures and created-but-unmapped VMM bytes are not
 * the new thread's, and on the timeline its ranges end before its name. */
static void thread_announced(vr_state *s, uint32_t tid)
{
    vr_thread *t = vr_map_get(&s->threads, tid);
    if (!t)
        return;
    vr_nvtx_thread_ended(s, tid);
    vr_growth_thread_ended(s, t, s->t_last);
    t->fail_open = false;
    t->unmapped = 0;
    vr_state_captures_drop(s, tid);
}

/* Events that settle whatever is pending, whatever the state: timed ones
 * of PEND_SETTLES (a definition record is filed, never replayed: it settles
 * nothing). An allocation followed by one of them is counted at once, as it
 * would be there. */
static ALWAYS_INLINE bool always_settles(enum vt_rec type)
{
    return !vt_rec_is_definition(type) && pend_rule(type) == PEND_SETTLES;
}

/* A new device allocation l waits for the next event that settles it
 * (hold), unless that event, next (NULL: not known yet), settles it anyway
 * and nothing else is pending: then it is counted now, as settling would
 * count it (at its own time; no heap waits for an allocation to cover, which
 * would be counted at the settling event's time). */
static ALWAYS_INLINE void hold_new(vr_state *s, vr_live *l, const vt_event *next)
{
    if (!s->npend && !s->uncovered_heaps && next && always_settles(next->type)) {
        l->pending = VR_PENDING_NEW;
        pending_commit_hot(s, l);
        return;
    }
    hold(s, l, VR_PENDING_NEW);
}

/* next: the event after ev, NULL when not known (hold_new). */
static ALWAYS_INLINE void on_alloc(vr_state *s, const vt_event *ev, const vr_found *f,
                                   const vt_event *next)
{
    if (f->live) { /* the free was not recorded: the address was reused */
        free_live(s, f->live, &f->hint);
        s->unknown_frees++;
    }
    s->allocations++;
    vr_thread *t = vr_state_thread(s, ev->thread_id);
    attempt(s, t, true, ev->u.alloc.size, ev->u.alloc.device, f->key);
    uint32_t row = vr_site_row(s, ev->u.alloc.stack, vr_thread_range(t));
    vr_live *l = vr_map_insert_raw(&s->live, f->key, &f->hint);
    *l = (vr_live){.key = f->key,
                   .size = ev->u.alloc.size,
                   .ts = ev->ts_ns,
                   .stack = ev->u.alloc.stack,
                   .row = row,
                   .kind = vr_api(s, ev->u.alloc.api)->kind,
                   .flags = vr_api(s, ev->u.alloc.api)->live_flags |
                            (t->captures ? VR_LIVE_CAPTURED : 0),
                   .device = vr_kind_device(s, ev->u.alloc.api, ev->u.alloc.device)};
    vr_acct_alloc(s, l->device, (enum vt_kind)l->kind, l->size);
    if (l->kind == VT_KIND_VMM)
        t->unmapped += l->size;
    if (l->device < 0) {
        s->host_pinned += l->size;
        if (s->host_pinned > s->host_pinned_peak)
            s->host_pinned_peak = s->host_pinned;
        return;
    }
    vr_pattern_alloc(s, l->stack, l->ts);
    hold_new(s, l, next);
}

static bool vmm_mapped(vr_state *s, const vr_live *l)
{
    if (l->kind != VT_KIND_VMM)
        return false;
    const vr_live_ext *x = vr_map_get(&s->live_ext, l->key);
    return x && x->nmaps;
}

static ALWAYS_INLINE void on_free(vr_state *s, const vt_event *ev, const vr_found *f)
{
    vr_live *l = f->live;
    if (!l) {
        if (ev->u.free.addr)
            s->unknown_frees++;
        return;
    }
    s->frees++;
    s->pat_freed = true;
    if (vmm_mapped(s, l)) {
        l->flags |= VR_LIVE_RELEASED; /* cuMemRelease of a mapped handle: alive until unmapped */
        return;
    }
    if (s->nrecov)
        end_recovery(s, l->key, false, false);
    free_live_hot(s, l, &f->hint);
}

/* cuMemMap: the handle's memory stays alive while mapped. */
static void on_vmm_map(vr_state *s, const vt_event *ev)
{
    uint64_t key = live_key(s, ev->u.vmm.handle, VT_API_CU_MEM_CREATE);
    vr_live *l = vr_map_get(&s->live, key);
    if (!l)
        return; /* a handle created before the recording (or imported) */
    if (s->nrecov)
        end_recovery(s, key, false, true);
    vr_state_thread(s, ev->thread_id)->unmapped = 0;
    vr_vmm_map *m = vr_map_put(&s->vmm_maps, ev->u.vmm.addr, NULL);
    if (m->handle_key) { /* the address was mapped and its unmap not seen */
        vr_live_ext *old = vr_map_get(&s->live_ext, m->handle_key);
        if (old && old->nmaps)
            old->nmaps--;
    }
    m->size = ev->u.vmm.size;
    m->handle_key = key;
    vr_live_ext_get(s, key)->nmaps++;
}

/* One mapping at address a goes: a released handle dies with its last one. */
static void unmap_one(vr_state *s, uint64_t a)
{
    vr_vmm_map *m = vr_map_get(&s->vmm_maps, a);
    uint64_t key = m->handle_key;
    vr_map_del(&s->vmm_maps, a);
    vr_live *l = vr_map_get(&s->live, key);
    vr_live_ext *x = l ? vr_map_get(&s->live_ext, key) : NULL;
    if (!x || !x->nmaps)
        return;
    if (--x->nmaps == 0 && (l->flags & VR_LIVE_RELEASED))
        free_live(s, l, NULL);
}

/* cuMemUnmap(addr, size): every mapping that starts inside the range
 * (PyTorch's expandable segments unmap many pages in one call), in one
 * pass over the mappings: O(mappings) per call (a rescan after each
 * unmapping was O(unmapped x mappings): 30 k pages in one call took
 * 0.5 s). Unmapping deletes the entry just walked, which vr_map_next
 * allows. */
static void on_vmm_unmap(vr_state *s, const vt_event *ev)
{
    uint64_t lo = ev->u.vmm.addr, hi = lo + ev->u.vmm.size;
    vr_vmm_map *m = vr_map_get(&s->vmm_maps, lo);
    if (m && m->size >= ev->u.vmm.size) {
        unmap_one(s, lo);
        return;
    }
    size_t i = 0;
    for (vr_vmm_map *e; (e = vr_map_next(&s->vmm_maps, &i));)
        if (e->key >= lo && e->key < hi)
            unmap_one(s, e->key);
}

static void on_end(vr_state *s, const vt_event *ev)
{
    s->has_end = true;
    s->exit_status = ev->u.end.status;
    s->exit_signal = ev->u.end.signal;
    free(s->exit_reason);
    s->exit_reason = strdup(ev->u.end.reason ? ev->u.end.reason : "");
}

static uint32_t thread_range(vr_state *s, uint32_t tid)
{
    return vr_thread_range(vr_map_get(&s->threads, tid));
}

static void on_heap_unregister(vr_state *s, const vt_event *ev)
{
    uint64_t addr = vr_heap_unregister(s, ev->u.heap.heap, false);
    vr_live *l = addr ? vr_map_get(&s->live, addr) : NULL;
    if (l)
        hold(s, l, VR_PENDING_UNCOVERED);
}

/* A heap id registered again drops its old registration first; the
 * allocation it covered, when the heap moved elsewhere, counts as direct
 * again (pending since now: vr_heap_unregister). */
static void on_heap_register(vr_state *s, const vt_event *ev)
{
    if (vr_heap_known(s, ev->u.heap.heap)) {
        uint64_t was = vr_heap_unregister(s, ev->u.heap.heap, false);
        vr_live *old = was ? vr_map_get(&s->live, was) : NULL;
        if (old && was != ev->u.heap.addr)
            pending_commit(s, old);
    }
    vr_heap_register(s, ev);
}

static ALWAYS_INLINE void on_timed(vr_state *s, enum vt_rec type, const vt_event *ev,
                                   const vr_found *f, const vt_event *next)
{
    switch (type) {
    case VT_REC_ALLOC:
        on_alloc(s, ev, f, next);
        break;
    case VT_REC_FREE:
        on_free(s, ev, f);
        break;
    case VT_REC_ALLOC_FAILED:
        on_failed(s, ev);
        break;
    case VT_REC_MEMINFO:
        vr_oom_meminfo(s, ev, pending_bytes(s, ev->u.meminfo.device));
        break;
    case VT_REC_RANGE_PUSH:
        vr_growth_range_push(s, vr_state_thread(s, ev->thread_id),
                             (uint64_t)ev->u.range.domain << 32 | ev->u.range.name, ev->ts_ns);
        break;
    case VT_REC_RANGE_POP:
        vr_growth_range_pop(s, vr_state_thread(s, ev->thread_id), ev->u.range.domain, ev->ts_ns);
        vr_pool_range_ended(s, ev->thread_id);
        break;
    case VT_REC_CAPTURE:
        vr_state_capture(s, ev);
        break;
    case VT_REC_FREE_FAILED:
        vr_free_failed_note(s, ev);
        break;
    case VT_REC_HEAP_REGISTER:
        on_heap_register(s, ev);
        break;
    case VT_REC_HEAP_UNREGISTER:
        on_heap_unregister(s, ev);
        break;
    case VT_REC_HEAP_RESET:
        vr_heap_unregister(s, ev->u.heap.heap, true);
        break;
    case VT_REC_REGION_REGISTER:
        vr_region_register(s, ev, thread_range(s, ev->thread_id));
        break;
    case VT_REC_REGION_UNREGISTER:
        vr_region_unregister(s, ev->u.region.heap, ev->u.region.addr);
        break;
    case VT_REC_REGION_RESIZE:
        vr_region_resize(s, ev->u.region.heap, ev->u.region.addr, ev->u.region.size);
        break;
    case VT_REC_REGION_NAME:
        vr_region_name(s, ev->u.region.heap, ev->u.region.addr, ev->u.region.name);
        break;
    case VT_REC_END:
        on_end(s, ev);
        break;
    case VT_REC_VMM_MAP:
        on_vmm_map(s, ev);
        break;
    case VT_REC_VMM_UNMAP:
        on_vmm_unmap(s, ev);
        break;
    case VT_REC_POOL_STAT:
        if (ev->u.pool.pool == VT_POOL_GRAPH)
            vr_graph_pool_stat(s, ev);
        else
            vr_pool_stat(s, ev);
        break;
    default: /* marks, start/end ranges, region names: not needed here */
        break;
    }
}

/* Events that may lower allocated bytes: the peak's composition and its
 * fragmentation are taken before any of their state changes. */
static ALWAYS_INLINE bool lowers(enum vt_rec type, const vr_found *f)
{
    switch (type) {
    case VT_REC_FREE:
    case VT_REC_REGION_UNREGISTER:
    case VT_REC_REGION_RESIZE:
    case VT_REC_HEAP_UNREGISTER:
    case VT_REC_HEAP_RESET:
    case VT_REC_VMM_UNMAP:
        return true;
    case VT_REC_ALLOC: /* at a live address: its unrecorded free */
        return f->live != NULL;
    default:
        return false;
    }
}

/* The one live-map lookup of an ALLOC or FREE event (key: event_key, h:
 * its vr_map_hash). */
static ALWAYS_INLINE void find_live(vr_state *s, enum vt_rec type, uint64_t key, uint32_t h,
                                    vr_found *f)
{
    f->key = key;
    if (type == VT_REC_ALLOC || type == VT_REC_FREE)
        f->live = vr_map_find_hashed(&s->live, key, h, &f->hint);
}

/* The events nvtx.c keeps for the model. */
static bool is_nvtx(uint8_t type)
{
    return type == VT_REC_THREAD || type == VT_REC_RANGE_PUSH || type == VT_REC_RANGE_POP ||
           type == VT_REC_RANGE_START || type == VT_REC_RANGE_END || type == VT_REC_CAPTURE;
}

/* A definition record (no time) into its table: true; false for a timed
 * event. */
static bool on_definition(vr_state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_MODULE:
        on_module(s, ev);
        return true;
    case VT_REC_MODULE_RESET: /* the symbolizer takes the newest module at an ip */
        return true;
    case VT_REC_STACK_NODE: {
        vr_stacknode *n = vr_map_put(&s->stacknodes, ev->u.stack_node.id, NULL);
        n->parent = ev->u.stack_node.parent;
        n->ip = ev->u.stack_node.ip;
        return true;
    }
    case VT_REC_PY_STACK_NODE: {
        vr_stacknode *n = vr_map_put(&s->stacknodes, ev->u.py_stack_node.id, NULL);
        n->parent = ev->u.py_stack_node.parent;
        n->python = true;
        n->pyframe = ev->u.py_stack_node.frame;
        return true;
    }
    case VT_REC_PY_FRAME: {
        vr_pyframe *f = vr_map_put(&s->pyframes, ev->u.py_frame.id, NULL);
        f->function = ev->u.py_frame.function;
        f->file = ev->u.py_frame.file;
        f->line = ev->u.py_frame.line;
        return true;
    }
    case VT_REC_STRING:
        on_string(s, ev);
        return true;
    case VT_REC_SYMBOL:
        vr_state_symbol(s, ev);
        return true;
    case VT_REC_DEVICE:
        on_device(s, ev);
        return true;
    case VT_REC_NOTE:
        vr_state_note(s, "%s", ev->u.note.text ? ev->u.note.text : "");
        return true;
    case VT_REC_THREAD:
        return true;
    default:
        return false;
    }
}

/* A timed event ev of type `type` (ev->type: a constant where the storm's
 * allocations and frees inline it, so that every switch on it folds); key:
 * its event_key, h: the key's vr_map_hash; next: the event after it, NULL
 * when not known. */
static ALWAYS_INLINE void replay_timed(vr_state *s, enum vt_rec type, const vt_event *ev,
                                       uint64_t key, uint32_t h, const vt_event *next)
{
    if (ev->ts_ns > s->t_last)
        s->t_last = ev->ts_ns;
    vr_found f = {0};
    find_live(s, type, key, h, &f);
    /* settling neither inserts nor deletes live entries: f stays valid */
    if (s->npend && !neutral(s, type, ev, &f))
        settle_pending(s, type == VT_REC_FREE ? f.key : 0);
    if (s->peak_pending && lowers(type, &f))
        vr_snapshot_peak(s); /* the state is still the peak's: nothing changed yet */
    if (s->pool_rounds && type != VT_REC_POOL_STAT)
        vr_pool_rounds_end(s, ev->thread_id);
    vr_tick_time(s, ev->ts_ns);
    on_timed(s, type, ev, &f, next);
}

/* Feed one event to the state; key: its event_key, h: the key's vr_map_hash;
 * next: the event after it, NULL when not known. */
static void replay_keyed(vr_state *s, const vt_event *ev, uint64_t key, uint32_t h,
                         const vt_event *next)
{
    s->events++;
    switch (ev->type) { /* most events: each its own copy of replay_timed */
    case VT_REC_ALLOC:
        replay_timed(s, VT_REC_ALLOC, ev, key, h, next);
        return;
    case VT_REC_FREE:
        replay_timed(s, VT_REC_FREE, ev, key, h, next);
        return;
    default:
        break;
    }
    if (ev->type == VT_REC_THREAD && ev->u.thread.start) /* not a name given later */
        thread_announced(s, ev->u.thread.id);
    if (is_nvtx(ev->type))
        vr_nvtx_record(s, ev);
    if (!on_definition(s, ev))
        replay_timed(s, ev->type, ev, key, h, next);
}

/* replay_keyed with its allocations and frees inlined into the caller's
 * loop (replay_block): no call per event of a storm. */
static ALWAYS_INLINE void replay_hot(vr_state *s, const vt_event *ev, uint64_t key, uint32_t h,
                                     const vt_event *next)
{
    if (ev->type == VT_REC_ALLOC || ev->type == VT_REC_FREE) {
        s->events++;
        if (ev->type == VT_REC_ALLOC)
            replay_timed(s, VT_REC_ALLOC, ev, key, h, next);
        else
            replay_timed(s, VT_REC_FREE, ev, key, h, next);
        return;
    }
    replay_keyed(s, ev, key, h, next);
}

/* For a second pass over a trace (memviz.c): the same replay, one event at a
 * time, and the settling of what is pending at its end. */
void vr_replay_one(vr_state *s, const vt_event *ev)
{
    uint64_t key = event_key(s, ev);
    replay_keyed(s, ev, key, vr_map_hash(key), NULL);
}

void vr_replay_settle(vr_state *s)
{
    settle_pending(s, 0);
    vr_pool_rounds_end(s, UINT32_MAX);
}

/* ---- progress ------------------------------------------------------------ */

/* The progress bar on stderr: only on a terminal, only once the replay has
 * run for `after` ns, redrawn when the percentage changes, and wiped at the
 * end with spaces (no escape sequences: any terminal, TERM=dumb too). */
typedef struct vr_progress {
    bool on, shown;
    int pct;
    uint64_t started, after;
} vr_progress;

#define PROGRESS_BAR 40
#define PROGRESS_WIDTH (int)(sizeof "replaying [] 100%" - 1 + PROGRESS_BAR)

static vr_progress progress_start(const vr_options *opt)
{
    vr_progress p = {.pct = -1};
    p.on = opt && opt->progress && isatty(2);
    p.started = p.on ? vt_clock_ns() : 0;
    p.after =
        (uint64_t)(opt && opt->progress_after_ms ? opt->progress_after_ms : 2000) * 1000000ull;
    return p;
}

/* off: compressed bytes read of size. */
static void progress_update(vr_progress *p, uint64_t off, uint64_t size)
{
    if (vt_clock_ns() - p->started < p->after)
        return;
    int pct = size ? (int)(off * 100 / size) : 0;
    if (pct > 100)
        pct = 100;
    if (pct == p->pct)
        return;
    char bar[PROGRESS_BAR + 1];
    memset(bar, ' ', PROGRESS_BAR);
    memset(bar, '=', (size_t)pct * PROGRESS_BAR / 100);
    bar[PROGRESS_BAR] = 0;
    fprintf(stderr, "\rreplaying [%s] %3d%%", bar, pct);
    p->pct = pct;
    p->shown = true;
}

static void progress_end(vr_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r%*s\r", PROGRESS_WIDTH, "");
}

/* Events replay_all looks up together: their live-map slots are fetched
 * from memory together instead of one cache miss after the other. */
#define VR_AHEAD 16

/* The live-map keys and hashes of the n (<= VR_AHEAD) events at q,
 * prefetching the live-map slots of allocations and frees, then the
 * entries that frees will read. Even a map of 10 k entries gains (storm: 9 %
 * less CPU time): the batch being decoded streams through the caches
 * between two lookups. */
static void look_ahead(vr_state *s, const vt_event *q, size_t n, uint64_t *keys, uint32_t *hashes)
{
    for (size_t i = 0; i < n; i++) {
        keys[i] = event_key(s, &q[i]);
        hashes[i] = vr_map_hash(keys[i]);
        if (q[i].type == VT_REC_ALLOC || q[i].type == VT_REC_FREE)
            vr_map_prefetch(&s->live, hashes[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (q[i].type == VT_REC_FREE)
            vr_map_prefetch_entry(&s->live, hashes[i]);
}

/* Replays the n events at evs; off: the reader's offset after them (of
 * size, compressed bytes). */
static void replay_block(vr_state *s, const vt_event *evs, size_t n, vr_progress *prog,
                         uint64_t off, uint64_t size)
{
    uint64_t keys[VR_AHEAD];
    uint32_t hashes[VR_AHEAD];
    for (size_t at = 0; at < n; at += VR_AHEAD) {
        size_t m = n - at < VR_AHEAD ? n - at : VR_AHEAD;
        look_ahead(s, evs + at, m, keys, hashes);
        for (size_t i = 0; i < m; i++)
            replay_hot(s, &evs[at + i], keys[i], hashes[i],
                       at + i + 1 < n ? &evs[at + i + 1] : NULL);
    }
    if (prog->on)
        progress_update(prog, off, size);
}

/* Events replay_all asks the reader for at once (it stops after one with a
 * string: that lives in the reader's buffer until the next read). */
#define VR_READ 256

static int replay_all(vr_state *s, vt_reader *rd, const vr_options *opt, char *err, size_t errlen)
{
    vr_progress prog = progress_start(opt);
    vt_event evs[VR_READ];
    long n;
    while ((n = vt_reader_read(rd, evs, VR_READ)) > 0)
        replay_block(s, evs, (size_t)n, &prog, vt_reader_offset(rd), vt_reader_file_size(rd));
    settle_pending(s, 0);
    vr_pool_rounds_end(s, UINT32_MAX);
    progress_end(&prog);
    if (n < 0) {
        const char *m = vt_reader_error(rd);
        snprintf(err, errlen, "corrupt trace after %llu events (at byte %llu of %llu): %s",
                 (unsigned long long)s->events, (unsigned long long)vt_reader_offset(rd),
                 (unsigned long long)vt_reader_file_size(rd), m ? m : "unknown error");
        return -1;
    }
    return 0;
}

static vr_report *analyze(vt_reader *rd, const char *path, const vr_options *opt, char *err,
                          size_t errlen)
{
    vr_report *r = vr_xcalloc(1, sizeof(*r));
    r->arena = vr_arena_new();
    r->path = vr_strdup(r->arena, path);
    vr_state s;
    vr_state_init(&s, r->arena, vt_reader_header(rd));
    vr_state_presize(&s, rd);
    if (replay_all(&s, rd, opt, err, errlen) < 0) {
        vr_state_destroy(&s);
        vt_reader_close(rd);
        vr_report_free(r);
        return NULL;
    }
    r->truncated = vt_reader_truncated(rd);
    if (r->truncated)
        vr_state_note(&s,
                      "the trace file is truncated at byte %llu: the report covers the events "
                      "before the cut",
                      (unsigned long long)vt_reader_offset(rd));
    char spill[256];
    if (strcmp(path, "(memory)") && vt_recover_pending(path, spill, sizeof spill))
        vr_state_note(&s,
                      "%s holds what the process recorded after its last flush: it is still "
                      "running, or it was killed; once it has ended, `vramtrace recover %s` "
                      "appends those records to this trace",
                      spill, path);
    vr_build_model(&s, r, opt);
    vr_state_destroy(&s);
    vt_reader_close(rd);
    return r;
}

vr_report *vr_analyze(const char *path, const vr_options *opt, char *err, size_t errlen)
{
    vt_reader *rd = vt_reader_open(path, err, errlen);
    return rd ? analyze(rd, path, opt, err, errlen) : NULL;
}

vr_report *vr_analyze_mem(const void *data, size_t len, const vr_options *opt, char *err,
                          size_t errlen)
{
    vt_reader *rd = vt_reader_open_mem(data, len, err, errlen);
    return rd ? analyze(rd, "(memory)", opt, err, errlen) : NULL;
}

/* The definitions of the trace rd into s (modules, stack nodes, strings,
 * symbols...): all vr_embed_symbols needs. -1 on a corrupt or cut trace. */
static int read_definitions(vr_state *s, vt_reader *rd, const char *path, const vr_options *opt,
                            char *err, size_t errlen)
{
    vt_event evs[VR_READ];
    long n;
    vr_progress prog = progress_start(opt);
    while ((n = vt_reader_read(rd, evs, VR_READ)) > 0) {
        for (long i = 0; i < n; i++)
            if (vt_rec_is_definition(evs[i].type))
                on_definition(s, &evs[i]);
        if (prog.on)
            progress_update(&prog, vt_reader_offset(rd), vt_reader_file_size(rd));
    }
    progress_end(&prog);
    if (n < 0 || vt_reader_truncated(rd)) {
        const char *m = n < 0 ? vt_reader_error(rd) : NULL;
        snprintf(err, errlen, "%s: %s at byte %llu of %llu: nothing appended", path,
                 n < 0 ? (m ? m : "corrupt") : "cut short (it ends inside a frame)",
                 (unsigned long long)vt_reader_offset(rd),
                 (unsigned long long)vt_reader_file_size(rd));
        return -1;
    }
    return 0;
}

int vr_embed_symbols(const char *path, const vr_options *opt, vr_embed_result *res, char *err,
                     size_t errlen)
{
    memset(res, 0, sizeof *res);
    vt_reader *rd = vt_reader_open(path, err, errlen);
    if (!rd) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", path, why); /* like every other error here */
        return -1;
    }
    vr_arena *arena = vr_arena_new();
    vr_state s;
    vr_state_init(&s, arena, vt_reader_header(rd));
    int rc = read_definitions(&s, rd, path, opt, err, errlen);
    vt_reader_close(rd);
    res->already = rc == 0 && s.nsyms > 0;
    if (rc == 0 && !res->already) {
        vr_symbolizer *sy = vr_symbolizer_new(&s, false, true, false);
        vt_event *evs = NULL;
        size_t n = vr_symbols_records(sy, &evs, res);
        if (n)
            rc = vt_append_definitions(path, evs, n, err, errlen);
        vr_symbolizer_free(sy);
    }
    vr_state_destroy(&s);
    vr_arena_free(arena);
    return rc;
}

void vr_report_free(vr_report *r)
{
    if (!r)
        return;
    vr_arena_free(r->arena);
    free(r);
}
