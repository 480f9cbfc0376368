/* replay.c: the single streaming pass over a trace. State is proportional to
 * live allocations, live regions, distinct stacks and strings; never to the
 * number of events. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t vr_rel_ns(const vr_state *s, uint64_t ts)
{
    return ts > s->t0 ? ts - s->t0 : 0;
}

void vr_state_init(vr_state *s, vr_arena *arena, const vt_header *hdr)
{
    memset(s, 0, sizeof(*s));
    s->arena = arena;
    s->hdr = hdr;
    s->t0 = hdr ? hdr->start_mono_ns : 0;
    s->t_last = s->t0;
    vr_map_init(&s->strings, sizeof(vr_string));
    vr_map_init(&s->stacknodes, sizeof(vr_stacknode));
    vr_map_init(&s->pyframes, sizeof(vr_pyframe));
    vr_map_init(&s->threads, sizeof(vr_thread));
    vr_map_init(&s->devices, sizeof(vr_devstate));
    vr_map_init(&s->live, sizeof(vr_live));
    vr_map_init(&s->heaps, sizeof(vr_heap));
    vr_map_init(&s->sites, sizeof(vr_counter));
    vr_map_init(&s->phases, sizeof(vr_counter));
    vr_map_init(&s->site_ranges, sizeof(vr_counter));
    vr_map_init(&s->acct, sizeof(vr_acct));
    vr_map_init(&s->vmm_maps, sizeof(vr_vmm_map));
    s->iter.stride = 1;
    s->iter.slot = 0;
    vr_map_init(&s->alloc_sites, sizeof(vr_counter));
    vr_map_init(&s->site_names, sizeof(vr_site_names));
    s->pat.stride = 1;
    s->pat.slot = 1;
    s->win_ns = 1000000; /* 1 ms windows, doubled as the trace gets longer */
    s->win_next = s->win_ns;
    s->spans = vr_xcalloc(VR_MAX_SPANS, sizeof(vr_range_span));
}

void vr_state_destroy(vr_state *s)
{
    size_t i = 0;
    for (vr_string *e; (e = vr_map_next(&s->strings, &i));)
        free(e->text);
    i = 0;
    for (vr_thread *t; (t = vr_map_next(&s->threads, &i));) {
        free(t->stack);
        free(t->stack_ts);
    }
    i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        free(d->name);
        free(d->buckets);
    }
    i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));)
        free(h->regions);
    for (size_t k = 0; k < s->nmodules; k++)
        free(s->modules[k].path);
    for (size_t k = 0; k < s->nnotes; k++)
        free(s->notes[k]);
    free(s->modules);
    free(s->notes);
    free(s->ooms);
    free(s->frags);
    free(s->spans);
    free(s->pend);
    free(s->exit_reason);
    vr_acct_destroy(s);
    vr_map_destroy(&s->vmm_maps);
    vr_map_destroy(&s->alloc_sites);
    vr_map_destroy(&s->site_names);
    vr_map_destroy(&s->strings);
    vr_map_destroy(&s->stacknodes);
    vr_map_destroy(&s->pyframes);
    vr_map_destroy(&s->threads);
    vr_map_destroy(&s->devices);
    vr_map_destroy(&s->live);
    vr_map_destroy(&s->heaps);
    vr_map_destroy(&s->sites);
    vr_map_destroy(&s->phases);
    vr_map_destroy(&s->site_ranges);
}

#define VR_MAX_NOTES 200

void vr_state_note(vr_state *s, const char *fmt, ...)
{
    if (s->nnotes == VR_MAX_NOTES)
        return;
    if (s->nnotes == s->capnotes) {
        s->capnotes = s->capnotes ? s->capnotes * 2 : 8;
        s->notes = vr_xrealloc(s->notes, s->capnotes * sizeof(char *));
    }
    va_list ap;
    va_start(ap, fmt);
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0)
        t = NULL;
    va_end(ap);
    if (t)
        s->notes[s->nnotes++] = t;
}

const char *vr_state_string(const vr_state *s, uint32_t id)
{
    const vr_string *e = id ? vr_map_get(&s->strings, id) : NULL;
    return e ? e->text : "";
}

vr_devstate *vr_state_device(vr_state *s, int32_t id)
{
    bool created;
    vr_devstate *d = vr_map_put(&s->devices, (uint64_t)(int64_t)id + 1, &created);
    if (created)
        d->id = id;
    return d;
}

vr_thread *vr_state_thread(vr_state *s, uint32_t tid)
{
    return vr_map_put(&s->threads, tid, NULL);
}

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
}

static void on_string(vr_state *s, const vt_event *ev)
{
    vr_string *e = vr_map_put(&s->strings, ev->u.string.id, NULL);
    free(e->text);
    e->text = strdup(ev->u.string.text ? ev->u.string.text : "");
}

static void on_device(vr_state *s, const vt_event *ev)
{
    vr_devstate *d = vr_state_device(s, ev->u.device.id);
    free(d->name);
    d->name = strdup(ev->u.device.name ? ev->u.device.name : "");
    if (ev->u.device.total_bytes)
        d->total = ev->u.device.total_bytes;
}

static void free_live(vr_state *s, vr_live *l)
{
    uint64_t addr = l->key;
    vr_acct_free(s, l->device, (enum vt_kind)l->kind, l->size);
    if (l->device < 0) {
        s->host_pinned -= l->size;
    } else {
        if (l->in_heap) {
            /* its memory is gone, so is the heap: l is now pending, never counted */
            vr_heap_unregister(s, l->heap, false);
            l = vr_map_get(&s->live, addr);
        }
        if (!l->pending)
            vr_account_direct(s, l, -1);
    }
    vr_map_del(&s->live, addr);
}

size_t vr_topname(vr_state *s, uint32_t name)
{
    for (size_t i = 0; i < s->ntopnames; i++)
        if (s->topnames[i].name == name)
            return i;
    if (s->ntopnames == VR_MAX_TOPNAMES)
        return SIZE_MAX;
    memset(&s->topnames[s->ntopnames], 0, sizeof(s->topnames[0]));
    s->topnames[s->ntopnames].name = name;
    return s->ntopnames++;
}

void vr_iteration_alloc(vr_state *s, uint64_t bytes)
{
    if (s->cur_top && !s->cur_top_input)
        s->cur_top_input = bytes;
}

/* Count l as a direct allocation as if at time ts (the peak's time is the
 * allocation's, not the time its thread's next event settled it). */
static void account_direct_at(vr_state *s, vr_live *l, uint64_t ts)
{
    uint64_t now = s->t_last;
    s->t_last = ts;
    vr_account_direct(s, l, 1);
    s->t_last = now;
}

void vr_pending_commit(vr_state *s, vr_live *l)
{
    bool fresh = l->pending == VR_PENDING_NEW;
    l->pending = VR_PENDING_NONE;
    account_direct_at(s, l, l->pending_ts);
    if (!fresh)
        return;
    vr_iteration_alloc(s, l->size);
    vr_heap_check_alloc(s, l);
}

/* l is pending (see VR_PENDING_*) since ts. */
static void hold(vr_state *s, vr_live *l, uint8_t kind, uint64_t ts)
{
    l->pending = kind;
    l->pending_ts = ts;
    if (s->npend == s->cappend) {
        s->cappend = s->cappend ? s->cappend * 2 : 16;
        s->pend = vr_xrealloc(s->pend, s->cappend * sizeof(uint64_t));
    }
    s->pend[s->npend++] = l->key;
}

/* Live-map key of an allocation: VMM handles (cuMemCreate) are not addresses
 * and may equal a device pointer's value, so they get their own key space:
 * bit 63, which no device or host virtual address has (x86-64 and CUDA's
 * unified addressing use at most 57 bits). */
static uint64_t live_key(uint64_t addr, enum vt_api api)
{
    return vt_api_get(api)->space == VT_SPACE_VMM_HANDLE ? addr | (1ull << 63) : addr;
}

/* Events that neither read nor lower the allocated bytes: a new allocation
 * (at a free address), a heap registration (it claims a pending allocation
 * at its address), a VMM mapping, and markers. They leave pending
 * allocations pending; every other event settles them first. */
static bool neutral(const vr_state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_ALLOC: /* a pattern iteration's end samples the live bytes */
        return !vr_map_get(&s->live, live_key(ev->u.alloc.addr, ev->u.alloc.api)) &&
               !vr_pattern_ticks(s, ev->u.alloc.stack);
    case VT_REC_HEAP_REGISTER:
    case VT_REC_VMM_MAP:
    case VT_REC_MARK:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_REGION_NAME:
        return true;
    default:
        return false;
    }
}

/* Commit every pending allocation, in time order, each at its own time;
 * except an uncovered one that ev frees (free_live drops it uncounted).
 * ev may be NULL (the end of the trace). */
static void settle_pending(vr_state *s, const vt_event *ev)
{
    if (!s->npend || (ev && neutral(s, ev)))
        return;
    uint64_t freed = ev && ev->type == VT_REC_FREE ? live_key(ev->u.free.addr, ev->u.free.api) : 0;
    for (size_t i = 0; i < s->npend; i++) {
        vr_live *l = vr_map_get(&s->live, s->pend[i]);
        if (!l || !l->pending)
            continue;
        if (l->pending == VR_PENDING_UNCOVERED && l->key == freed)
            continue;
        vr_pending_commit(s, l);
    }
    s->npend = 0;
}

/* An allocation attempt on thread t: its previous failure, if any, is
 * recovered when this attempt succeeded with the same size and device. */
static void attempt(vr_state *s, vr_thread *t, bool ok, uint64_t size, int32_t device)
{
    if (!t->fail_open)
        return;
    t->fail_open = false;
    if (!ok || size != t->fail_size || device != t->fail_device)
        return;
    s->recovered++;
    if (t->fail_index < s->nooms && s->ooms[t->fail_index].seq == t->fail_seq)
        s->ooms[t->fail_index].o.recovered = true;
}

static void on_failed(vr_state *s, const vt_event *ev)
{
    vr_thread *t = vr_state_thread(s, ev->thread_id);
    vr_acct_failed(s, vr_kind_device(ev->u.failed.api, ev->u.failed.device),
                   vt_api_get(ev->u.failed.api)->kind);
    attempt(s, t, false, 0, 0);
    s->failed++;
    vr_oom_failed(s, ev, t);
    t->fail_open = true;
    t->fail_size = ev->u.failed.size;
    t->fail_device = ev->u.failed.device;
    t->fail_index = s->nooms - 1;
    t->fail_seq = s->failed;
}

static void on_alloc(vr_state *s, const vt_event *ev)
{
    uint64_t key = live_key(ev->u.alloc.addr, ev->u.alloc.api);
    vr_live *old = vr_map_get(&s->live, key);
    if (old) { /* the free was not recorded: the address was reused */
        free_live(s, old);
        s->unknown_frees++;
    }
    s->allocations++;
    vr_thread *t = vr_state_thread(s, ev->thread_id);
    attempt(s, t, true, ev->u.alloc.size, ev->u.alloc.device);
    vr_live *l = vr_map_put(&s->live, key, NULL);
    l->size = ev->u.alloc.size;
    l->ts = ev->ts_ns;
    l->stack = ev->u.alloc.stack;
    l->range = vr_thread_range(t);
    l->kind = (uint8_t)vt_api_get(ev->u.alloc.api)->kind;
    l->device = vr_kind_device(ev->u.alloc.api, ev->u.alloc.device);
    vr_acct_alloc(s, l->device, (enum vt_kind)l->kind, l->size);
    if (l->device < 0) {
        s->host_pinned += l->size;
        if (s->host_pinned > s->host_pinned_peak)
            s->host_pinned_peak = s->host_pinned;
        return;
    }
    vr_pattern_alloc(s, l->stack);
    hold(s, vr_map_get(&s->live, key), VR_PENDING_NEW, ev->ts_ns);
}

static void on_free(vr_state *s, const vt_event *ev)
{
    vr_live *l = vr_map_get(&s->live, live_key(ev->u.free.addr, ev->u.free.api));
    if (!l) {
        if (ev->u.free.addr)
            s->unknown_frees++;
        return;
    }
    s->frees++;
    s->pat_freed = true;
    if (l->kind == VT_KIND_VMM && l->nmaps) {
        l->released = 1; /* cuMemRelease of a mapped handle: alive until unmapped */
        return;
    }
    free_live(s, l);
}

/* cuMemMap: the handle's memory stays alive while mapped. */
static void on_vmm_map(vr_state *s, const vt_event *ev)
{
    uint64_t key = live_key(ev->u.vmm.handle, VT_API_CU_MEM_CREATE);
    vr_live *l = vr_map_get(&s->live, key);
    if (!l)
        return; /* a handle created before the recording (or imported) */
    vr_vmm_map *m = vr_map_put(&s->vmm_maps, ev->u.vmm.addr, NULL);
    if (m->handle_key) { /* the address was mapped and its unmap not seen */
        vr_live *old = vr_map_get(&s->live, m->handle_key);
        if (old && old->nmaps)
            old->nmaps--;
    }
    m->size = ev->u.vmm.size;
    m->handle_key = key;
    l = vr_map_get(&s->live, key);
    l->nmaps++;
}

/* One mapping at address a goes: a released handle dies with its last one. */
static void unmap_one(vr_state *s, uint64_t a)
{
    vr_vmm_map *m = vr_map_get(&s->vmm_maps, a);
    uint64_t key = m->handle_key;
    vr_map_del(&s->vmm_maps, a);
    vr_live *l = vr_map_get(&s->live, key);
    if (!l || !l->nmaps)
        return;
    if (--l->nmaps == 0 && l->released)
        free_live(s, l);
}

/* cuMemUnmap(addr, size): every mapping that starts inside the range. */
static void on_vmm_unmap(vr_state *s, const vt_event *ev)
{
    uint64_t lo = ev->u.vmm.addr, hi = lo + ev->u.vmm.size;
    vr_vmm_map *m = vr_map_get(&s->vmm_maps, lo);
    if (m && m->size >= ev->u.vmm.size) {
        unmap_one(s, lo);
        return;
    }
    for (bool again = true; again;) { /* deleting moves entries: rescan */
        again = false;
        size_t i = 0;
        for (vr_vmm_map *e; (e = vr_map_next(&s->vmm_maps, &i));)
            if (e->key >= lo && e->key < hi) {
                unmap_one(s, e->key);
                again = true;
                break;
            }
    }
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
        hold(s, l, VR_PENDING_UNCOVERED, ev->ts_ns);
}

static void on_timed(vr_state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_ALLOC:
        on_alloc(s, ev);
        break;
    case VT_REC_FREE:
        on_free(s, ev);
        break;
    case VT_REC_ALLOC_FAILED:
        on_failed(s, ev);
        break;
    case VT_REC_MEMINFO:
        vr_oom_meminfo(s, ev);
        break;
    case VT_REC_RANGE_PUSH:
        vr_growth_range_push(s, vr_state_thread(s, ev->thread_id),
                             (uint64_t)ev->u.range.domain << 32 | ev->u.range.name, ev->ts_ns);
        break;
    case VT_REC_RANGE_POP:
        vr_growth_range_pop(s, vr_state_thread(s, ev->thread_id), ev->u.range.domain, ev->ts_ns);
        break;
    case VT_REC_HEAP_REGISTER:
        vr_heap_register(s, ev);
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
        vr_pool_stat(s, ev);
        break;
    default: /* marks, start/end ranges, region names: not needed here */
        break;
    }
}

/* Events that may lower allocated bytes: the peak's composition and its
 * fragmentation are taken before any of their state changes. */
static bool lowers(const vr_state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_FREE:
    case VT_REC_REGION_UNREGISTER:
    case VT_REC_REGION_RESIZE:
    case VT_REC_HEAP_UNREGISTER:
    case VT_REC_HEAP_RESET:
    case VT_REC_VMM_UNMAP:
        return true;
    case VT_REC_ALLOC: /* at a live address: its unrecorded free */
        return vr_map_get(&s->live, live_key(ev->u.alloc.addr, ev->u.alloc.api)) != NULL;
    default:
        return false;
    }
}

/* Feed one event to the state. */
static void replay_event(vr_state *s, const vt_event *ev)
{
    s->events++;
    switch (ev->type) {
    case VT_REC_MODULE:
        on_module(s, ev);
        return;
    case VT_REC_MODULE_RESET: /* the symbolizer takes the newest module at an ip */
        return;
    case VT_REC_STACK_NODE: {
        vr_stacknode *n = vr_map_put(&s->stacknodes, ev->u.stack_node.id, NULL);
        n->parent = ev->u.stack_node.parent;
        n->ip = ev->u.stack_node.ip;
        return;
    }
    case VT_REC_PY_STACK_NODE: {
        vr_stacknode *n = vr_map_put(&s->stacknodes, ev->u.py_stack_node.id, NULL);
        n->parent = ev->u.py_stack_node.parent;
        n->python = true;
        n->pyframe = ev->u.py_stack_node.frame;
        return;
    }
    case VT_REC_PY_FRAME: {
        vr_pyframe *f = vr_map_put(&s->pyframes, ev->u.py_frame.id, NULL);
        f->function = ev->u.py_frame.function;
        f->file = ev->u.py_frame.file;
        f->line = ev->u.py_frame.line;
        return;
    }
    case VT_REC_STRING:
        on_string(s, ev);
        return;
    case VT_REC_DEVICE:
        on_device(s, ev);
        return;
    case VT_REC_NOTE:
        vr_state_note(s, "%s", ev->u.note.text ? ev->u.note.text : "");
        return;
    case VT_REC_THREAD:
        return;
    default:
        break;
    }
    if (ev->ts_ns > s->t_last)
        s->t_last = ev->ts_ns;
    settle_pending(s, ev);
    if (s->peak_pending && lowers(s, ev))
        vr_snapshot_peak(s); /* the state is still the peak's: nothing changed yet */
    vr_tick_time(s, ev->ts_ns);
    on_timed(s, ev);
}

/* For a second pass over a trace (memviz.c): the same replay, one event at a
 * time, and the settling of what is pending at its end. */
void vr_replay_one(vr_state *s, const vt_event *ev)
{
    replay_event(s, ev);
}

void vr_replay_settle(vr_state *s)
{
    settle_pending(s, NULL);
}

/* ---- progress ------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
    p.started = p.on ? mono_ns() : 0;
    p.after =
        (uint64_t)(opt && opt->progress_after_ms ? opt->progress_after_ms : 2000) * 1000000ull;
    return p;
}

static void progress_update(vr_progress *p, vt_reader *rd)
{
    if (mono_ns() - p->started < p->after)
        return;
    uint64_t size = vt_reader_file_size(rd), off = vt_reader_offset(rd);
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

static int replay_all(vr_state *s, vt_reader *rd, const vr_options *opt, char *err, size_t errlen)
{
    vr_progress prog = progress_start(opt);
    vt_event ev;
    int rc;
    while ((rc = vt_reader_next(rd, &ev)) == 1) {
        replay_event(s, &ev);
        if (prog.on && (s->events & 0xffff) == 0)
            progress_update(&prog, rd);
    }
    settle_pending(s, NULL);
    progress_end(&prog);
    if (rc < 0) {
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

void vr_report_free(vr_report *r)
{
    if (!r)
        return;
    vr_arena_free(r->arena);
    free(r);
}
