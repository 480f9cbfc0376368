/* memviz.c: --memory-viz FILE: the run as a PyTorch memory snapshot, the
 * pickled dict torch.cuda.memory._snapshot() returns in PyTorch 2.x, which
 * https://pytorch.org/memory_viz and torch/cuda/_memory_viz.py open.
 *
 * Layout (PyTorch's torch/cuda/memory.py _snapshot docstring and
 * torch/csrc/cuda/Module.cpp, which builds it):
 *   {"segments": [{"device", "address", "total_size", "allocated_size",
 *                  "active_size", "requested_size", "stream", "segment_type"
 *                  ("small"/"large", large > 1 MiB), "segment_pool_id" (0, 0),
 *                  "is_expandable", "frames",
 *                  "blocks": [{"address", "size", "requested_size",
 *                              "state" ("active_allocated"/"inactive"),
 *                              "frames"}]}],
 *    "device_traces": [[{"action", "addr", "size", "stream", "time_us",
 *                        "frames", "device_free" (oom only)}] per device]}
 *   frames: [{"filename", "line", "name"}], innermost first.
 *
 * Mapping: a heap registered with the NVTX Mem API (a caching allocator's
 * cudaMalloc'd chunk) is a segment whose regions are its active blocks and
 * whose gaps are inactive blocks; any other device allocation is a segment
 * of one block. Trace actions: cudaMalloc -> segment_alloc (+ alloc unless a
 * heap claims it), region register -> alloc, region unregister ->
 * free_requested + free_completed, cudaFree -> segment_free, failed
 * allocation -> oom (out-of-memory errors only). As PyTorch's OOM observer
 * does, the snapshot is taken at the fatal (unrecovered) out-of-memory failure
 * of device memory; a run without one is taken at its peak of allocated
 * bytes. device_traces hold the events up to that moment, so
 * memory_viz's replay of the trace ends in the segments' state. Pinned host
 * memory and the VMM API (cuMemCreate/cuMemMap) are not exported.
 */
#include "state.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum act { A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_OOM, A_N };
static const char *const act_name[A_N] = {"alloc",         "free_requested", "free_completed",
                                          "segment_alloc", "segment_free",   "oom"};

typedef struct tentry {
    uint8_t action;
    bool dead; /* the alloc of a cudaMalloc that a heap claimed */
    int32_t device;
    uint32_t stack;
    uint64_t addr, size, stream, time_ns, device_free;
} tentry;

typedef struct mv_seg { /* a live segment, by address */
    uint64_t key;
    uint64_t size, stream;
    int32_t device;
    bool heap;          /* a registered heap's memory: blocks are its regions */
    bool heap_only;     /* a heap registered over no recorded allocation */
    size_t alloc_entry; /* index of its alloc entry */
} mv_seg;

typedef struct mv_block { /* a live region, by address */
    uint64_t key;
    uint64_t size;
    int32_t device;
    uint32_t stack;
} mv_block;

typedef struct sblock {
    uint64_t addr, size;
    uint32_t stack;
    bool active;
} sblock;

typedef struct sseg {
    uint64_t addr, size, stream;
    int32_t device;
    uint32_t stack;
    sblock *blocks;
    size_t nblocks;
} sseg;

typedef struct mv {
    const vr_report *r;
    vr_state s;
    vr_map segs, blocks;
    tentry *e;
    size_t ne, cap, cut; /* cut: entries before the snapshot */
    bool snapped;
    size_t fatal; /* device_fatal */
    sseg *snap;
    size_t nsnap;
    int32_t maxdev;
} mv;

/* The highest device ordinal a snapshot can hold: device_traces is a list
 * indexed by ordinal, and PyTorch's c10::DeviceIndex is an int8_t
 * (c10/core/Device.h). */
#define MEMVIZ_MAX_DEVICE 127

static tentry *push(mv *m, uint8_t action, int32_t device, uint64_t addr, uint64_t size,
                    uint64_t ts)
{
    if (m->ne == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 1024;
        m->e = vr_xrealloc(m->e, m->cap * sizeof *m->e);
    }
    if (device > m->maxdev)
        m->maxdev = device;
    tentry *t = &m->e[m->ne++];
    *t = (tentry){.action = action,
                  .device = device,
                  .addr = addr,
                  .size = size,
                  .time_ns = vr_rel_ns(&m->s, ts)};
    return t;
}

static void free_block(mv *m, uint64_t addr, uint64_t ts)
{
    mv_block *b = vr_map_get(&m->blocks, addr);
    if (!b)
        return;
    push(m, A_FREE_REQ, b->device, addr, b->size, ts)->stack = b->stack;
    push(m, A_FREE_DONE, b->device, addr, b->size, ts)->stack = b->stack;
    vr_map_del(&m->blocks, addr);
}

/* Every region of heap id goes (reset, unregister, its memory freed). */
static void heap_clear(mv *m, uint64_t id, uint64_t ts)
{
    vr_heap *h = vr_map_get(&m->s.heaps, id);
    for (const vr_region *r = h ? vr_heap_first(h) : NULL; r; r = vr_region_next(r))
        free_block(m, r->addr, ts);
}

static bool device_mem(const vt_event *ev)
{
    const vt_api_info *ai = vt_api_get(ev->u.alloc.api);
    return ev->u.alloc.device >= 0 && ai->space == VT_SPACE_ADDR &&
           (ai->kind == VT_KIND_DEVICE || ai->kind == VT_KIND_MANAGED);
}

static void on_alloc(mv *m, const vt_event *ev)
{
    if (!device_mem(ev))
        return;
    const uint64_t a = ev->u.alloc.addr, n = ev->u.alloc.size;
    tentry *t = push(m, A_SEG_ALLOC, ev->u.alloc.device, a, n, ev->ts_ns);
    t->stack = ev->u.alloc.stack;
    t->stream = ev->u.alloc.stream;
    mv_seg *sg = vr_map_put(&m->segs, a, NULL);
    *sg = (mv_seg){.key = a,
                   .size = n,
                   .stream = ev->u.alloc.stream,
                   .device = ev->u.alloc.device,
                   .alloc_entry = m->ne};
    t = push(m, A_ALLOC, ev->u.alloc.device, a, n, ev->ts_ns);
    t->stack = ev->u.alloc.stack;
    t->stream = ev->u.alloc.stream;
}

static void on_free(mv *m, const vt_event *ev)
{
    uint64_t a = ev->u.free.addr;
    mv_seg *sg = vr_map_get(&m->segs, a);
    if (!sg || sg->heap_only)
        return;
    if (sg->heap) {
        size_t i = 0;
        for (vr_heap *h; (h = vr_map_next(&m->s.heaps, &i));)
            if (h->covered_alloc == a)
                heap_clear(m, h->key, ev->ts_ns);
        sg = vr_map_get(&m->segs, a);
    } else {
        push(m, A_FREE_REQ, sg->device, a, sg->size, ev->ts_ns)->stream = sg->stream;
        push(m, A_FREE_DONE, sg->device, a, sg->size, ev->ts_ns)->stream = sg->stream;
    }
    push(m, A_SEG_FREE, sg->device, a, sg->size, ev->ts_ns)->stream = sg->stream;
    vr_map_del(&m->segs, a);
}

/* After the replay of a heap registration: claim the allocation it covers. */
static void on_heap_registered(mv *m, const vt_event *ev)
{
    vr_heap *h = vr_map_get(&m->s.heaps, ev->u.heap.heap);
    if (!h || h->device < 0)
        return;
    mv_seg *sg = h->covered_alloc ? vr_map_get(&m->segs, h->covered_alloc) : NULL;
    if (sg) {
        sg->heap = true;
        m->e[sg->alloc_entry].dead = true;
        return;
    }
    push(m, A_SEG_ALLOC, h->device, h->addr, h->size, ev->ts_ns);
    sg = vr_map_put(&m->segs, h->addr, NULL);
    *sg = (mv_seg){
        .key = h->addr, .size = h->size, .device = h->device, .heap = true, .heap_only = true};
}

static void on_heap_unregister(mv *m, const vt_event *ev)
{
    vr_heap *h = vr_map_get(&m->s.heaps, ev->u.heap.heap);
    if (!h)
        return;
    uint64_t addr = h->addr;
    heap_clear(m, ev->u.heap.heap, ev->ts_ns);
    mv_seg *sg = vr_map_get(&m->segs, addr);
    if (sg && sg->heap_only) {
        push(m, A_SEG_FREE, sg->device, addr, sg->size, ev->ts_ns);
        vr_map_del(&m->segs, addr);
    }
}

static void region_alloc(mv *m, const vt_event *ev, uint64_t size, uint32_t stack)
{
    vr_heap *h = vr_map_get(&m->s.heaps, ev->u.region.heap);
    if (!h || h->device < 0)
        return;
    push(m, A_ALLOC, h->device, ev->u.region.addr, size, ev->ts_ns)->stack = stack;
    mv_block *b = vr_map_put(&m->blocks, ev->u.region.addr, NULL);
    b->size = size;
    b->device = h->device;
    b->stack = stack;
}

static void on_region_resize(mv *m, const vt_event *ev)
{
    mv_block *b = vr_map_get(&m->blocks, ev->u.region.addr);
    if (!b)
        return;
    uint32_t stack = b->stack;
    free_block(m, ev->u.region.addr, ev->ts_ns);
    region_alloc(m, ev, ev->u.region.size, stack);
}

static void on_failed(mv *m, const vt_event *ev)
{
    if (ev->u.failed.device < 0 || ev->u.failed.error != VT_ERROR_OUT_OF_MEMORY)
        return;
    tentry *t = push(m, A_OOM, ev->u.failed.device, 0, ev->u.failed.size, ev->ts_ns);
    t->stack = ev->u.failed.stack;
    t->device_free = ev->u.failed.free_bytes;
}

/* Trace entries of ev, from the state before its replay. */
static void before_replay(mv *m, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_ALLOC:
        on_alloc(m, ev);
        break;
    case VT_REC_FREE:
        on_free(m, ev);
        break;
    case VT_REC_ALLOC_FAILED:
        on_failed(m, ev);
        break;
    case VT_REC_HEAP_UNREGISTER:
        on_heap_unregister(m, ev);
        break;
    case VT_REC_HEAP_RESET:
        heap_clear(m, ev->u.heap.heap, ev->ts_ns);
        break;
    case VT_REC_REGION_REGISTER:
        region_alloc(m, ev, ev->u.region.size, ev->u.region.stack);
        break;
    case VT_REC_REGION_UNREGISTER:
        free_block(m, ev->u.region.addr, ev->ts_ns);
        break;
    case VT_REC_REGION_RESIZE:
        on_region_resize(m, ev);
        break;
    default:
        break;
    }
}

/* ---- the snapshot's segments ------------------------------------------- */

static sseg *snap_push(mv *m, size_t *cap)
{
    if (m->nsnap == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        m->snap = vr_xrealloc(m->snap, *cap * sizeof *m->snap);
    }
    sseg *g = &m->snap[m->nsnap++];
    memset(g, 0, sizeof *g);
    return g;
}

/* A heap: its regions as active blocks, the gaps between them inactive. */
static void snap_heap(const vr_state *s, sseg *g, const vr_heap *h)
{
    const vr_live *l = h->covered_alloc ? vr_map_get(&s->live, h->covered_alloc) : NULL;
    g->stack = l ? l->stack : 0; /* the cudaMalloc of the chunk */
    g->addr = h->addr;
    g->size = h->size;
    g->device = h->device;
    g->blocks = vr_xcalloc(2 * h->nregions + 1, sizeof *g->blocks);
    uint64_t at = h->addr, end = h->addr + h->size;
    for (const vr_region *rg = vr_heap_first(h); rg; rg = vr_region_next(rg)) {
        if (rg->addr < at || rg->addr + rg->size > end)
            continue; /* overlapping or outside: not a block of this segment */
        if (rg->addr > at)
            g->blocks[g->nblocks++] = (sblock){at, rg->addr - at, 0, false};
        g->blocks[g->nblocks++] = (sblock){rg->addr, rg->size, rg->stack, true};
        at = rg->addr + rg->size;
    }
    if (at < end)
        g->blocks[g->nblocks++] = (sblock){at, end - at, 0, false};
}

static void snapshot(mv *m)
{
    size_t cap = 0, i = 0;
    for (vr_heap *h; (h = vr_map_next(&m->s.heaps, &i));)
        if (h->device >= 0)
            snap_heap(&m->s, snap_push(m, &cap), h);
    i = 0;
    for (vr_live *l; (l = vr_map_next(&m->s.live, &i));) {
        if (l->device < 0 || l->in_heap || (l->key >> 63) ||
            (l->kind != VT_KIND_DEVICE && l->kind != VT_KIND_MANAGED))
            continue;
        sseg *g = snap_push(m, &cap);
        mv_seg *sg = vr_map_get(&m->segs, l->key);
        *g = (sseg){.addr = l->key,
                    .size = l->size,
                    .device = l->device,
                    .stack = l->stack,
                    .stream = sg ? sg->stream : 0,
                    .nblocks = 1};
        g->blocks = vr_xcalloc(1, sizeof *g->blocks);
        g->blocks[0] = (sblock){l->key, l->size, l->stack, true};
    }
    for (size_t k = 0; k < m->nsnap; k++)
        if (m->snap[k].device > m->maxdev)
            m->maxdev = m->snap[k].device;
    m->cut = m->ne;
    m->snapped = true;
}

/* The fatal failure of device memory (vr_fatal_oom's rule on a device): a
 * snapshot holds device memory only, so a fatal failure of pinned host
 * memory leaves it at the last device failure before, else at the peak. */
static size_t device_fatal(const vr_report *r)
{
    for (size_t i = r->nooms; i-- > 0;) {
        const vr_oom *o = &r->ooms[i];
        if (vr_oom_may_be_fatal(o) && o->device >= 0)
            return i;
    }
    return SIZE_MAX;
}

/* The snapshot's moment: right after the fatal failure, else once the
 * replay reached the report's peak of allocated bytes. */
static bool snapshot_now(const mv *m, const vt_event *ev)
{
    if (m->fatal != SIZE_MAX) {
        const vr_oom *o = &m->r->ooms[m->fatal];
        return ev->type == VT_REC_ALLOC_FAILED && vr_rel_ns(&m->s, ev->ts_ns) == o->t_ns &&
               ev->u.failed.size == o->requested_bytes;
    }
    return m->s.peak_alloc >= m->r->peak_allocated && m->r->peak_allocated > 0;
}

/* Replay the trace at path; returns its reader (open: the state points into
 * its header) or NULL with a message. */
static vt_reader *replay(mv *m, const char *path)
{
    char err[256];
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr,
                "vramtrace: --memory-viz reads the trace a second time: %s is not a file (a "
                "pipe?); write the trace to a file first\n",
                path);
        return NULL;
    }
    vt_reader *rd = vt_reader_open(path, err, sizeof err);
    if (!rd) {
        fprintf(stderr, "vramtrace: --memory-viz: %s: %s\n", path, err);
        return NULL;
    }
    vr_state_init(&m->s, m->r->arena, vt_reader_header(rd));
    vr_state_presize(&m->s, rd);
    vr_map_init(&m->segs, sizeof(mv_seg));
    vr_map_init(&m->blocks, sizeof(mv_block));
    vt_event ev;
    while (vt_reader_next(rd, &ev) == 1) {
        before_replay(m, &ev);
        vr_replay_one(&m->s, &ev);
        if (ev.type == VT_REC_HEAP_REGISTER)
            on_heap_registered(m, &ev);
        if (!m->snapped && snapshot_now(m, &ev))
            snapshot(m);
    }
    vr_replay_settle(&m->s);
    if (!m->snapped)
        snapshot(m); /* the end of the trace */
    return rd;
}

/* ---- pickling ---------------------------------------------------------- */

typedef struct frames_memo {
    uint64_t key; /* stack id + 1 */
    uint32_t memo;
} frames_memo;

typedef struct out {
    vr_pickle p;
    vr_symbolizer *sy;
    vr_map memo;
    uint32_t act_memo[A_N];
    bool act_put[A_N];
} out;

static void kv_int(out *o, const char *k, int64_t v)
{
    vr_pk_str(&o->p, k);
    vr_pk_int(&o->p, v);
}

static void kv_uint(out *o, const char *k, uint64_t v)
{
    vr_pk_str(&o->p, k);
    vr_pk_uint(&o->p, v);
}

static void kv_str(out *o, const char *k, const char *v)
{
    vr_pk_str(&o->p, k);
    vr_pk_str(&o->p, v);
}

static void frame(out *o, const vr_frame *fr)
{
    char buf[64];
    vr_pk_dict(&o->p);
    vr_pk_mark(&o->p);
    kv_str(o, "filename", fr->file[0] ? fr->file : fr->module);
    kv_int(o, "line", fr->line);
    kv_str(o, "name", vr_frame_label(fr, buf, sizeof buf));
    vr_pk_setitems(&o->p);
}

/* The frames list of stack id (written once, then a memo reference). */
static void frames(out *o, uint32_t stack)
{
    vr_pk_str(&o->p, "frames");
    bool created;
    frames_memo *fm = vr_map_put(&o->memo, (uint64_t)stack + 1, &created);
    if (!created) {
        vr_pk_get(&o->p, fm->memo);
        return;
    }
    vr_stack st = stack ? vr_symbolize(o->sy, stack) : (vr_stack){0};
    vr_pk_list(&o->p);
    uint32_t id = vr_pk_put(&o->p);
    fm = vr_map_get(&o->memo, (uint64_t)stack + 1);
    fm->memo = id;
    if (!st.n)
        return;
    vr_pk_mark(&o->p);
    for (size_t i = 0; i < st.n; i++)
        frame(o, &st.frames[i]);
    vr_pk_appends(&o->p);
}

static void block(out *o, const sblock *b)
{
    vr_pk_dict(&o->p);
    vr_pk_mark(&o->p);
    kv_uint(o, "address", b->addr);
    kv_uint(o, "size", b->size);
    kv_uint(o, "requested_size", b->active ? b->size : 0);
    kv_str(o, "state", b->active ? "active_allocated" : "inactive");
    frames(o, b->active ? b->stack : 0);
    vr_pk_setitems(&o->p);
}

static void segment(out *o, const sseg *g)
{
    uint64_t active = 0;
    for (size_t i = 0; i < g->nblocks; i++)
        active += g->blocks[i].active ? g->blocks[i].size : 0;
    vr_pk_dict(&o->p);
    vr_pk_mark(&o->p);
    kv_int(o, "device", g->device);
    kv_uint(o, "address", g->addr);
    kv_uint(o, "total_size", g->size);
    kv_uint(o, "allocated_size", active);
    kv_uint(o, "active_size", active);
    kv_uint(o, "requested_size", active);
    kv_uint(o, "stream", g->stream);
    kv_str(o, "segment_type", g->size > (1u << 20) ? "large" : "small");
    vr_pk_str(&o->p, "segment_pool_id");
    vr_pk_int(&o->p, 0);
    vr_pk_int(&o->p, 0);
    vr_pk_tuple2(&o->p);
    vr_pk_str(&o->p, "is_expandable");
    fputc(0x89, o->p.f); /* NEWFALSE */
    frames(o, g->stack);
    vr_pk_str(&o->p, "blocks");
    vr_pk_list(&o->p);
    vr_pk_mark(&o->p);
    for (size_t i = 0; i < g->nblocks; i++)
        block(o, &g->blocks[i]);
    vr_pk_appends(&o->p);
    vr_pk_setitems(&o->p);
}

static void action(out *o, uint8_t a)
{
    vr_pk_str(&o->p, "action");
    if (o->act_put[a]) {
        vr_pk_get(&o->p, o->act_memo[a]);
        return;
    }
    vr_pk_str(&o->p, act_name[a]);
    o->act_memo[a] = vr_pk_put(&o->p);
    o->act_put[a] = true;
}

static void entry(out *o, const tentry *t)
{
    vr_pk_dict(&o->p);
    vr_pk_mark(&o->p);
    action(o, t->action);
    if (t->action != A_OOM)
        kv_uint(o, "addr", t->addr);
    else
        kv_uint(o, "device_free", t->device_free);
    kv_uint(o, "size", t->size);
    kv_uint(o, "stream", t->stream);
    kv_uint(o, "time_us", t->time_ns / 1000);
    frames(o, t->stack);
    vr_pk_setitems(&o->p);
}

static void device_traces(out *o, const mv *m)
{
    vr_pk_str(&o->p, "device_traces");
    vr_pk_list(&o->p);
    vr_pk_mark(&o->p);
    for (int32_t d = 0; d <= m->maxdev; d++) {
        vr_pk_list(&o->p);
        vr_pk_mark(&o->p);
        for (size_t i = 0; i < m->cut; i++)
            if (m->e[i].device == d && !m->e[i].dead)
                entry(o, &m->e[i]);
        vr_pk_appends(&o->p);
    }
    vr_pk_appends(&o->p);
}

static void write_snapshot(FILE *f, mv *m, const vr_options *opt)
{
    out o = {0};
    o.sy = vr_symbolizer_new(&m->s, opt && opt->no_symbols, opt && opt->native,
                             opt && opt->trace_symbols);
    vr_map_init(&o.memo, sizeof(frames_memo));
    vr_pk_begin(&o.p, f);
    vr_pk_dict(&o.p);
    vr_pk_mark(&o.p);
    vr_pk_str(&o.p, "segments");
    vr_pk_list(&o.p);
    vr_pk_mark(&o.p);
    for (size_t i = 0; i < m->nsnap; i++)
        segment(&o, &m->snap[i]);
    vr_pk_appends(&o.p);
    device_traces(&o, m);
    vr_pk_setitems(&o.p);
    vr_pk_end(&o.p);
    vr_map_destroy(&o.memo);
    vr_symbolizer_free(o.sy);
}

static void mv_free(mv *m)
{
    for (size_t i = 0; i < m->nsnap; i++)
        free(m->snap[i].blocks);
    free(m->snap);
    free(m->e);
    vr_map_destroy(&m->segs);
    vr_map_destroy(&m->blocks);
    vr_state_destroy(&m->s);
}

int vr_render_memviz(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    if (n != 1) {
        fprintf(stderr, "vramtrace: --memory-viz takes the trace of one process (%zu given)\n", n);
        return -1;
    }
    mv m = {.r = r[0], .fatal = device_fatal(r[0]), .maxdev = 0};
    vt_reader *rd = replay(&m, r[0]->path);
    if (!rd)
        return -1;
    int rc = 0;
    if (m.maxdev > MEMVIZ_MAX_DEVICE) {
        fprintf(stderr,
                "vramtrace: --memory-viz: the trace names device %d; a PyTorch memory snapshot "
                "holds devices 0 to %d only\n",
                m.maxdev, MEMVIZ_MAX_DEVICE);
        rc = -1;
    } else {
        write_snapshot(out, &m, opt);
    }
    mv_free(&m);
    vt_reader_close(rd);
    return rc == 0 && fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
