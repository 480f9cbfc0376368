/* oom.c: a verdict for every failed allocation, from the replay state at the
 * moment it failed.
 *
 *   external       device free (the failure's meminfo sample) is much less
 *                  than total - recorded reserved - baseline (device use
 *                  outside the recording at the first meminfo sample), and
 *                  the request would have fit without that difference;
 *   leak           call sites whose live bytes grow across NVTX iterations
 *                  (least-squares slope > 0 and R^2 > 0.9, or a rise that
 *                  kept on: vr_sustained) hold a large share of
 *                  live bytes (one >= 25%, together >= 50%); not when the
 *                  leaking site is a caching allocator's segments whose
 *                  sizes do not repeat across iterations (sizes_repeat, here;
 *                  the allocator is known by its symbols, so model.c makes
 *                  that verdict capacity);
 *   fragmentation  live data + request would fit the device and the free
 *                  memory was there, but not where the request could use
 *                  it: the registered heaps' free bytes, alone or with the
 *                  device's, are >= request while the heaps' largest free
 *                  block is smaller (the cache is fragmented) or was not
 *                  taken (a caching allocator keeps pools of its own: small
 *                  and large requests, streams); the cache holds what the
 *                  device lacks, PyTorch's "reserved but unallocated" (a
 *                  stream-ordered pool's free reserve at its failure counts
 *                  as heap free bytes: pool.c);
 *   capacity       otherwise: live data + request + the device's use outside
 *                  the recording exceed the device.
 */
#include "state.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rounding_slack(vr_state *s, int32_t device);

/* The device's use outside the recording at its first memory sample (total
 * and free bytes): the baseline every later sample is held against. What
 * the recording holds there: its allocations as the driver rounds them
 * (rounding_slack: a failure's use outside the recording counts the
 * rounding of what is live then, so the baseline must not keep that of
 * what was live at the sample), its heaps and the free reserve of the
 * pools sampled with it (pool_spare, bytes: stream-ordered pools', and
 * what the graph memory pool keeps). */
static void take_baseline(vr_state *s, vr_devstate *d, uint64_t total, uint64_t free_b,
                          uint64_t pool_spare)
{
    if (!d->total && total)
        d->total = total;
    if (d->have_baseline || !total)
        return;
    uint64_t used = total - (free_b < total ? free_b : total);
    uint64_t rec = d->direct + rounding_slack(s, d->id) + d->heap_bytes + pool_spare;
    d->baseline_used = used > rec ? used - rec : 0;
    d->have_baseline = true;
}

void vr_oom_meminfo(vr_state *s, const vt_event *ev, uint64_t pending)
{
    vr_devstate *d = vr_state_device(s, ev->u.meminfo.device);
    take_baseline(s, d, ev->u.meminfo.total_bytes, ev->u.meminfo.free_bytes,
                  vr_pool_spare(d, ev->thread_id, true) + vr_graph_pool_kept(d, ev->thread_id) +
                      pending);
}

/* Whether live allocation l counts as allocated on device now: a direct
 * allocation there (not inside a heap, not pending). The one rule of the
 * passes over live allocations below. */
static bool counted_on(const vr_live *l, int32_t device)
{
    return l->device == device && !l->in_heap && !l->pending;
}

/* Live bytes and allocations of one call site (stack id) on one device. */
typedef struct dev_site {
    uint64_t key; /* stack id */
    uint64_t live, count;
} dev_site;

/* The call sites of device's live allocated bytes (direct allocations, then
 * regions of its heaps) into m (dev_site entries, initialized here): one
 * pass over the live allocations, for a failure on one device of several. */
static void group_device_sites(vr_state *s, int32_t device, vr_map *m)
{
    vr_map_init(m, sizeof(dev_site));
    size_t i = 0;
    for (vr_live *l; (l = vr_map_next(&s->live, &i));) {
        if (!counted_on(l, device))
            continue;
        dev_site *e = vr_map_put(m, l->stack, NULL);
        e->live += l->size;
        e->count++;
    }
    i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));)
        for (const vr_region *r = h->device == device ? vr_heap_first(h) : NULL; r;
             r = vr_region_next(r)) {
            dev_site *e = vr_map_put(m, r->stack, NULL);
            e->live += r->size;
            e->count++;
        }
}

/* Keeps (key, live, count) among o's 5 largest top sites. */
static void top_keep(vr_oom_raw *o, uint64_t key, uint64_t live, uint64_t count)
{
    if (!live)
        return;
    size_t k = o->ntop;
    if (k == 5 && live <= o->top_bytes[4])
        return;
    if (k == 5)
        k = 4;
    else
        o->ntop++;
    while (k > 0 && o->top_bytes[k - 1] < live) {
        o->top_keys[k] = o->top_keys[k - 1];
        o->top_bytes[k] = o->top_bytes[k - 1];
        o->top_counts[k] = o->top_counts[k - 1];
        k--;
    }
    o->top_keys[k] = key;
    o->top_bytes[k] = live;
    o->top_counts[k] = count;
}

/* The failing device's largest live call sites: the site counters when all
 * live bytes are on it, else dev (group_device_sites), so that a failure on
 * one device is never put down to what another device holds. */
static void top_sites(vr_state *s, vr_oom_raw *o, const vr_map *dev)
{
    size_t i = 0;
    if (!dev) {
        for (vr_counter *c; (c = vr_map_next(&s->sites, &i));)
            top_keep(o, c->key, c->live, c->live_count);
        return;
    }
    for (const dev_site *e; (e = vr_map_next(dev, &i));)
        top_keep(o, e->key, e->live, e->count);
}

/* The full list of a failure's live sites (vr_oom_raw.all): at most
 * VR_OOM_ALL sites a failure (the largest), held by at most VR_OOM_LISTS
 * failures at once (the oldest let go first). The fatal failure is the last
 * one not recovered and recovered ones let go of theirs when they recover,
 * so it keeps its list unless more than VR_OOM_LISTS later failures awaited
 * their retries at one time. Memory: at most VR_OOM_ALL * VR_OOM_LISTS * 16
 * bytes (4 MiB). */
#define VR_OOM_ALL 4096
#define VR_OOM_LISTS 64

void vr_oom_drop_all(vr_state *s, size_t index)
{
    if (index >= s->nooms || !s->ooms[index].all)
        return;
    free(s->ooms[index].all);
    s->ooms[index].all = NULL;
    s->oom_lists--;
}

static int by_live_desc(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[1] < y[1] ? 1 : x[1] > y[1] ? -1 : (x[0] > y[0]) - (x[0] < y[0]);
}

/* o's list of every site with live bytes (the failing device's: dev, else
 * the site counters, as top_sites), largest first, cut to VR_OOM_ALL. */
static void keep_all(vr_state *s, vr_oom_raw *o, const vr_map *dev)
{
    size_t i = 0, n = 0, cap = 64;
    uint64_t(*all)[2] = malloc(cap * sizeof *all);
    for (const void *e; all && (e = vr_map_next(dev ? dev : &s->sites, &i));) {
        uint64_t key = dev ? ((const dev_site *)e)->key : ((const vr_counter *)e)->key;
        uint64_t live = dev ? ((const dev_site *)e)->live : ((const vr_counter *)e)->live;
        if (!live)
            continue;
        if (n == cap) {
            uint64_t(*more)[2] = realloc(all, 2 * cap * sizeof *all);
            if (!more) {
                free(all);
                return; /* no list: the diff falls back to the top sites */
            }
            all = more;
            cap *= 2;
        }
        all[n][0] = key;
        all[n++][1] = live;
    }
    if (!all)
        return;
    qsort(all, n, sizeof *all, by_live_desc);
    o->all_cut = n > VR_OOM_ALL;
    o->nall = (uint32_t)(n > VR_OOM_ALL ? VR_OOM_ALL : n);
    o->all = all;
    s->oom_lists++;
    for (size_t k = 0; s->oom_lists > VR_OOM_LISTS && k < s->nooms; k++)
        vr_oom_drop_all(s, k);
}

/* Whether samples y of sp grow by the leak rule: slope > 0 and R^2 > 0.9,
 * or a rise that kept on (vr_sustained: kept tensors of random sizes);
 * fit[0], fit[1]: the slope (bytes per iteration) and R^2, when not NULL. */
static bool grows(const uint64_t *y, const vr_sampler *sp, double fit[2])
{
    double sl, r;
    vr_fit(y, sp->n, sp->stride, &sl, &r);
    if (fit)
        fit[0] = sl, fit[1] = r;
    return sl > 0 && (r > 0.9 || vr_sustained(y, sp->n, sp->stride, sl));
}

/* The growing site (grows() over NVTX iterations) holding the most live
 * bytes, when growing sites hold a large share of live bytes (one site >=
 * 25%, or all of them together >= 50%) and the program's live bytes (all
 * devices, as a site's samples) grow too; else NULL. A site's bytes can
 * rise while the program's do not: a caching allocator's segments are
 * put down to the call that found the cache full, and after an emptied
 * cache another site's segments become this one's (a PyTorch run with
 * threads: one line's segments from 2 to 556 MiB, the program's at 710 MiB
 * before and 636 MiB then, was called a leak). Time windows are not used: a
 * ramp-up before the first OOM looks like growth over time.
 * dev (NULL: every live byte is on the failing device): the device's own
 * live bytes per site (group_device_sites) are the shares; a site's growth
 * samples are its bytes on every device. */
static vr_counter *leaking_site(vr_state *s, uint64_t live, const vr_map *dev, double *slope,
                                double *r2)
{
    const vr_level *lv = vr_growth_level(s);
    const vr_sampler *sp = lv ? &lv->iter : NULL;
    if (!sp || sp->n < 3 || !live || !grows(s->total_samples[sp->slot], sp, NULL))
        return NULL;
    vr_counter *best = NULL;
    uint64_t growing = 0, best_live = 0;
    size_t i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));) {
        const dev_site *e = dev ? vr_map_get(dev, c->key) : NULL;
        uint64_t here = dev ? (e ? e->live : 0) : c->live;
        if (here * 50 < live) /* under 2%: not worth a fit */
            continue;
        double fit[2];
        if (!grows(vr_counter_samples(c, sp->slot), sp, fit))
            continue;
        double sl = fit[0], r = fit[1];
        growing += here;
        if (!best || here > best_live) {
            best = c;
            best_live = here;
            *slope = sl;
            *r2 = r;
        }
    }
    if (best && (best_live * 4 >= live || growing * 2 >= live))
        return best;
    return NULL;
}

/* The most device memory the driver's rounding adds to the recorded live
 * device and managed allocations on device (vr_device_rounding: once the
 * device's pool was sampled, its own allocations' placement is in its
 * reserve, which the recording counts; VMM handles are whole granules, host
 * memory is not the device's). */
static uint64_t rounding_slack(vr_state *s, int32_t device)
{
    return vr_device_rounding(vr_state_device(s, device));
}

/* Live bytes on device allocated before `since` and since then. */
static void live_split(vr_state *s, int32_t device, uint64_t since, uint64_t *before,
                       uint64_t *after)
{
    *before = *after = 0;
    size_t i = 0;
    for (vr_live *l; (l = vr_map_next(&s->live, &i));)
        if (counted_on(l, device))
            *(l->ts < since ? before : after) += l->size;
    i = 0;
    for (vr_heap *h; (h = vr_map_next(&s->heaps, &i));)
        for (const vr_region *r = h->device == device ? vr_heap_first(h) : NULL; r;
             r = vr_region_next(r))
            *(r->ts < since ? before : after) += r->size;
}

/* No iteration completed: the failing iteration's live bytes + request per
 * sample. The rest of the step needs more, so this is an upper bound. */
static void batch_upper_bound(vr_state *s, vr_oom_raw *o, uint64_t start, uint64_t baseline)
{
    uint64_t persistent, act;
    live_split(s, o->o.device, start, &persistent, &act);
    uint64_t room = o->o.device_total_bytes;
    if (room <= baseline + persistent || !act)
        return;
    room -= baseline + persistent;
    double per_sample = (double)(act + o->o.requested_bytes) / (double)o->o.batch;
    o->o.max_batch = vr_i64_sat((double)room / per_sample);
    if (o->o.max_batch >= o->o.batch) /* this batch failed: it does not fit */
        o->o.max_batch = o->o.batch - 1;
    o->o.batch_kind = "upper_bound";
}

/* From the last completed iteration it (a names[] entry of level lv): see
 * vr_oom in report.h. Its batch is argv's scaled by the ratio of its first
 * allocation (the batch's input) to the failing iteration's, so that
 * iterations of different batch sizes (e.g. --vary-batch) are measured at
 * their own. */
/* The peak reserved bytes of iteration it's last completed run (a names[]
 * entry of level lv) on device: that device's own (vr_devgrowth), else all
 * devices'. On two devices, all devices' peak put the other's activations
 * in this one's need per sample: 37 for a batch of 181 (test_batch). */
static uint64_t device_last_peak(vr_state *s, int32_t device, const vr_level *lv, size_t it)
{
    const vr_devstate *d = vr_map_get(&s->devices, (uint64_t)(int64_t)device + 1);
    if (!d || !d->growth)
        return lv->names[it].last_peak;
    return d->growth->last_peak[lv - s->level][it];
}

static void batch_measured(vr_state *s, vr_oom_raw *o, const vr_level *lv, size_t it,
                           uint64_t baseline)
{
    uint64_t fixed, rest;
    live_split(s, o->o.device, lv->names[it].first_start, &fixed, &rest);
    uint64_t peak = device_last_peak(s, o->o.device, lv, it), input = lv->names[it].last_input;
    uint64_t now_input = lv->cur == lv->names[it].name ? lv->cur_input : 0;
    double b = (double)o->o.batch;
    if (input && now_input)
        b = b * (double)input / (double)now_input;
    if (peak <= fixed || b <= 0)
        return;
    double per_sample = (double)(peak - fixed) / b;
    uint64_t usable = o->o.device_total_bytes > baseline ? o->o.device_total_bytes - baseline : 0;
    o->o.max_batch = usable > fixed ? vr_i64_sat((double)(usable - fixed) / per_sample) : 0;
    o->o.batch_kind = "measured";
    o->o.batch_fixed_bytes = fixed;
    o->o.batch_per_sample_bytes = vr_u64_sat(per_sample);
}

/* The iteration a failure happened in is the failing thread's range at the
 * level growth uses (the top level when growth uses none). */
static void batch_estimate(vr_state *s, vr_oom_raw *o, vr_thread *t, uint64_t baseline)
{
    o->o.batch = s->hdr ? vr_argv_batch(s->hdr->argv, s->hdr->argc) : -1;
    o->o.max_batch = -1;
    o->o.batch_kind = "";
    const vr_level *grown = vr_growth_level(s);
    size_t l = grown ? (size_t)(grown - s->level) : 0;
    if (o->o.batch <= 0 || !t || t->depth <= l || !o->o.device_total_bytes ||
        o->o.requested_bytes >= VR_IMPOSSIBLE_REQUEST)
        return;
    vr_level *lv = &s->level[l];
    size_t it = vr_level_find(lv, vr_range_key(s, (uint32_t)t->stack[l]));
    if (it != SIZE_MAX && lv->names[it].count && lv->names[it].last_peak)
        batch_measured(s, o, lv, it, baseline);
    else
        batch_upper_bound(s, o, t->stack_ts[l], baseline);
}

static vr_oom_raw *oom_new(vr_state *s)
{
    if (s->nooms == s->capooms) {
        s->capooms = s->capooms ? s->capooms * 2 : 8;
        s->ooms = vr_xrealloc(s->ooms, s->capooms * sizeof(vr_oom_raw));
    }
    vr_oom_raw *o = &s->ooms[s->nooms++];
    memset(o, 0, sizeof(*o));
    return o;
}

/* Whether the leaking site (stack id key) holds live allocations of one size
 * made in different iterations (vr_sizes_repeat): the first 64 leak
 * verdicts of a trace are checked, each a pass over the live allocations;
 * later ones are taken to (a leak verdict as before the check). */
static bool leak_sizes_repeat(vr_state *s, uint64_t key)
{
    if (s->repeat_checks >= 64)
        return true;
    s->repeat_checks++;
    vr_map one;
    vr_map_init(&one, sizeof(vr_site_group));
    vr_map_put(&one, key, NULL); /* group 0 */
    bool repeat = false;
    vr_sizes_repeat(s, vr_growth_sampler(s), &one, &repeat, 1);
    vr_map_destroy(&one);
    return repeat;
}

/* Move the leaking site to the front of the OOM's top sites. */
static void leak_first(vr_oom_raw *o, uint64_t key)
{
    for (size_t k = 0; k < o->ntop; k++) {
        if (o->top_keys[k] != key)
            continue;
        uint64_t kk = o->top_keys[k], kb = o->top_bytes[k], kc = o->top_counts[k];
        memmove(&o->top_keys[1], &o->top_keys[0], k * sizeof(uint64_t));
        memmove(&o->top_bytes[1], &o->top_bytes[0], k * sizeof(uint64_t));
        memmove(&o->top_counts[1], &o->top_counts[0], k * sizeof(uint64_t));
        o->top_keys[0] = kk;
        o->top_bytes[0] = kb;
        o->top_counts[0] = kc;
        return;
    }
}

/* The fragmentation rule (the file's comment) on failure o, with heaps (the
 * device's registered heaps or pool hold memory), total (the device's bytes,
 * 0 if unknown) and base (its use outside the recording at the start). The
 * device's free bytes count only when the failure sampled them (meminfo):
 * the explanation names them. */
static bool pieces_would_fit(const vr_oom *o, bool heaps, bool meminfo, uint64_t total,
                             uint64_t base)
{
    uint64_t need = o->requested_bytes;
    if (!heaps || !o->heap_free)
        return false;
    if (total && o->live_allocated + need + base > total)
        return false;
    if (o->heap_free >= need)
        return true;
    return meminfo && o->device_free_bytes >= need - o->heap_free;
}

/* The free reserve of device d's stream-ordered pools at another call's
 * failure o (has_pool unset; each pool at its latest state, e.g. at the last
 * iteration's end), when the device's free bytes (meminfo: the failure
 * sampled them) agree that the pools still hold it: not when the device had
 * that much more free than live data, the baseline and the reserve leave (a
 * pool whose release threshold is 0 gives its reserve back at a
 * synchronization); 5 % of the device's slack. Bytes. A cudaMalloc beside a
 * pool that held 500 MiB read them as used outside the recording. */
static uint64_t pools_held(const vr_devstate *d, const vr_oom *o, uint64_t base, bool meminfo)
{
    uint64_t total = o->device_total_bytes, spare = d->pool_spare;
    if (o->has_pool || !spare || !meminfo || !total)
        return 0;
    uint64_t left = total > o->live_reserved + base ? total - o->live_reserved - base : 0;
    uint64_t expect = left > spare ? left - spare : 0;
    return o->device_free_bytes <= expect + total / 20 ? spare : 0;
}

#define VR_MAX_OOMS 1000

/* Whether the failing call took from a stream-ordered pool of the device
 * (cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAllocAsync,
 * cuMemAllocFromPoolAsync), whose state the recorder writes just before the
 * failure (docs/trace.md, "Pool state at a failed stream-ordered
 * allocation"): that pool is the failure's own (vr_oom.has_pool). Not a
 * host or managed pool's (o: its api filled): the pools sampled are the
 * device's. */
static bool own_pool(const vt_event *ev, const vr_oom *o)
{
    return vt_api_get(ev->u.failed.api)->stream_ordered && !o->host_pool && !o->managed_pool;
}

/* The free reserve of the device's pools at another call's failure (a
 * cudaMalloc), into o->pools_free_bytes: as the recorder sampled them just
 * before it, from the same thread (every out-of-memory failure on a device
 * since trace format 13, empty pools too), exact; else, at an
 * out-of-memory failure on a device, pools_held's estimate from their
 * latest state (base: the baseline, bytes). Until session 44 the sample was
 * taken as the failing call's own pool: every cudaMalloc failure showed
 * "memory pool: 0 B reserved", and a caching allocator's fragmentation
 * (vary_batch_fragmentation) was explained as a pool's. */
static void pools_at_failure(vr_devstate *d, const vt_event *ev, vr_oom_raw *o, uint64_t base)
{
    bool oom = ev->u.failed.error == VT_ERROR_OUT_OF_MEMORY;
    bool now = oom && d->pool_pending && d->pool_tid == ev->thread_id; /* sampled at those only */
    uint64_t spare = vr_pool_spare(d, ev->thread_id, true);
    if (now)
        o->o.pools_free_bytes = spare;
    else if (oom && o->o.device >= 0)
        o->o.pools_free_bytes = pools_held(d, &o->o, base, ev->u.failed.total_bytes != 0);
}

/* The failure's fields that the event and the device's state (d, after
 * the baseline: base, bytes) give: its request, the device's free bytes,
 * the live bytes, the pools, its call stack and NVTX range (t: the
 * thread). */
static void oom_fill(vr_state *s, const vt_event *ev, vr_thread *t, vr_devstate *d, vr_oom_raw *o,
                     uint64_t base)
{
    o->o.t_ns = vr_rel_ns(s, ev->ts_ns);
    o->o.device = ev->u.failed.device;
    o->o.requested_bytes = ev->u.failed.size;
    o->o.error = ev->u.failed.error;
    o->o.api = vt_api_name(ev->u.failed.api);
    o->o.host_pool = ev->u.failed.api == VT_API_CUDA_MALLOC_HOST_POOL ||
                     ev->u.failed.api == VT_API_CU_MEM_ALLOC_HOST_POOL;
    o->o.managed_pool = ev->u.failed.api == VT_API_CUDA_MALLOC_MANAGED_POOL ||
                        ev->u.failed.api == VT_API_CU_MEM_ALLOC_MANAGED_POOL;
    o->o.device_free_bytes = ev->u.failed.free_bytes;
    o->o.free_known = ev->u.failed.total_bytes != 0; /* vtrace.h: 0/0 if unknown */
    o->o.device_total_bytes = ev->u.failed.total_bytes ? ev->u.failed.total_bytes : d->total;
    o->o.live_allocated = d->direct + d->region_bytes;
    o->o.live_reserved = d->direct + d->heap_bytes;
    o->o.live_captured = d->captured;
    o->o.live_graph = d->graph;
    vr_oom_take_graph_pool(d, ev, &o->o);
    if (own_pool(ev, &o->o))
        vr_oom_take_pool(d, ev, &o->o);
    else
        pools_at_failure(d, ev, o, base);
    if (vr_api(s, ev->u.failed.api)->kind == VT_KIND_VMM)
        o->o.mapping_bytes = t->unmapped;
    o->stack = ev->u.failed.stack;
    o->range = vr_thread_range(t);
    if (o->o.device < 0) /* pinned host memory: its live bytes are the host's */
        o->o.live_allocated = o->o.live_reserved = s->host_pinned;
}

/* The device's bytes against the recording at an out-of-memory failure:
 * the pools' free reserve counted as the process's (pools_at_failure), the
 * bytes used outside the recording since the baseline (base, bytes) and
 * the part of them the driver's rounding may explain. Returns the free bytes the recording leaves
 * (bytes). */
static uint64_t oom_outside(vr_state *s, const vt_event *ev, vr_oom_raw *o, uint64_t base)
{
    uint64_t total = o->o.device_total_bytes;
    o->o.live_reserved += o->o.pools_free_bytes;
    uint64_t expected_free =
        total > o->o.live_reserved + base ? total - o->o.live_reserved - base : 0;
    if (ev->u.failed.total_bytes && expected_free > o->o.device_free_bytes)
        o->o.external_bytes = expected_free - o->o.device_free_bytes;
    /* the part of the use that appeared since the baseline that the driver's
     * rounding of what is recorded may explain: never "used outside" */
    uint64_t slack = rounding_slack(s, o->o.device);
    o->o.rounding_bytes = slack < o->o.external_bytes ? slack : o->o.external_bytes;
    return expected_free;
}

/* The registered heaps and pools at the failure: their free bytes and
 * largest free block, kept as a fragmentation sample. Returns their
 * reserved bytes. */
static uint64_t oom_heaps(vr_state *s, vr_oom_raw *o)
{
    vr_frag f = vr_frag_now(s, o->o.device, "oom");
    vr_frag_add_pool(&f, &o->o);
    f.reserved += o->o.pools_free_bytes; /* free, and no block of it for this call */
    vr_frag_settle(&f);
    o->o.heap_free = f.reserved - f.allocated;
    o->o.heap_largest_free = f.largest_free;
    if (f.reserved)
        vr_frag_push(s, &f);
    return f.reserved;
}

/* The verdict of an out-of-memory failure on a device, in this order:
 * used outside the recording, a leak (dev: the device's own site counters,
 * or NULL for the state's), a stream-ordered pool at its limit,
 * fragmentation, capacity. base: the baseline (bytes). */
static void oom_verdict(vr_state *s, const vt_event *ev, vr_oom_raw *o, vr_map *dev, uint64_t base)
{
    uint64_t total = o->o.device_total_bytes;
    uint64_t expected_free = oom_outside(s, ev, o, base);
    uint64_t heaps = oom_heaps(s, o);
    double slope = 0, r2 = 0;
    vr_counter *leak = NULL;
    bool external = ev->u.failed.total_bytes && expected_free >= o->o.requested_bytes &&
                    o->o.external_bytes - o->o.rounding_bytes > total / 20;
    if (external) {
        o->o.verdict = VR_VERDICT_EXTERNAL;
    } else if ((leak = leaking_site(s, o->o.live_allocated, dev, &slope, &r2))) {
        o->o.verdict = VR_VERDICT_LEAK;
        o->sizes_repeat = leak_sizes_repeat(s, leak->key);
        leak_first(o, leak->key);
        o->leak_slope = slope;
        o->leak_r2 = r2;
    } else if (vr_pool_at_limit(&o->o)) {
        o->o.verdict = VR_VERDICT_CAPACITY; /* the pool's capacity: vr_pool_limit_explain */
    } else if (pieces_would_fit(&o->o, heaps != 0, ev->u.failed.total_bytes != 0, total, base)) {
        o->o.verdict = VR_VERDICT_FRAGMENTATION;
    } else {
        o->o.verdict = VR_VERDICT_CAPACITY;
    }
}

/* At most VR_MAX_OOMS failures are kept: the first ones and always the
 * latest (the last slot is reused), so the fatal failure is never lost. */
void vr_oom_failed(vr_state *s, const vt_event *ev, vr_thread *t)
{
    bool oom = ev->u.failed.error == VT_ERROR_OUT_OF_MEMORY;
    if (s->nooms == VR_MAX_OOMS && !oom)
        return; /* the last slot keeps the latest out-of-memory failure */
    if (s->nooms == VR_MAX_OOMS)
        vr_oom_drop_all(s, --s->nooms);
    vr_oom_raw *o = oom_new(s);
    o->seq = s->failed;
    vr_devstate *d = vr_state_device(s, ev->u.failed.device);
    /* a failure before any memory sample (the program's first call failed):
     * its own sample is the first, nothing can have appeared since */
    if (ev->u.failed.device >= 0)
        take_baseline(s, d, ev->u.failed.total_bytes, ev->u.failed.free_bytes,
                      vr_pool_spare(d, ev->thread_id, false));
    uint64_t base = d->have_baseline ? d->baseline_used : 0;
    oom_fill(s, ev, t, d, o, base);
    /* the site counters are the failing device's own when every live site
     * byte is on it (never for host memory: they hold no host bytes) */
    vr_map dev;
    bool by_device = oom && (o->o.device < 0 || s->allocated != o->o.live_allocated);
    if (by_device)
        group_device_sites(s, o->o.device, &dev);
    if (oom) {
        top_sites(s, o, by_device ? &dev : NULL);
        keep_all(s, o, by_device ? &dev : NULL);
    }
    if (!oom || o->o.device < 0) { /* another error, or the host's: no device state explains it */
        o->o.verdict = oom ? VR_VERDICT_CAPACITY : VR_VERDICT_ERROR;
        o->o.batch = o->o.max_batch = -1;
        o->o.batch_kind = "";
        if (by_device)
            vr_map_destroy(&dev);
        return;
    }
    oom_verdict(s, ev, o, by_device ? &dev : NULL, base);
    if (by_device)
        vr_map_destroy(&dev);
    batch_estimate(s, o, t, base);
    o->baseline = base;
    o->o.baseline_bytes = base;
}
