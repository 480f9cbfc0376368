/* peak.c: allocated/reserved accounting, the exact peak, the composition of
 * the peak by call site and NVTX range, and the downsampled timeline.
 *
 * Peak composition without O(sites) work per new peak: counters carry a lazy
 * snapshot. When allocated bytes are about to decrease after a new peak was
 * reached, the state equals the peak state, so the snapshot epoch is bumped
 * (O(1)). A counter modified later first copies its live value into its
 * snapshot (it cannot have changed since the epoch began); at the end,
 * counters not touched since the last epoch still hold the peak value. */
#include "peak_hot.h"

#include <string.h>

static uint32_t site_row_new(vr_state *s, uint32_t stack, uint32_t range)
{
    bool created;
    vr_counter *c = vr_map_put(&s->site_ranges, (uint64_t)range << 32 | stack, &created);
    uint32_t row = vr_map_index_of(&s->site_ranges, c);
    if (created) {
        uint32_t site = vr_map_index_of(&s->sites, vr_map_put(&s->sites, stack, NULL));
        uint32_t phase = vr_map_index_of(&s->phases, vr_map_put(&s->phases, range, NULL));
        c = vr_map_at(&s->site_ranges, row);
        c->site = site;
        c->phase = phase;
    }
    return row;
}

/* Room in the leaf cache for stack ids below want, at most twice the stack
 * nodes seen (ids are node ids: a trace's own are dense). */
static bool leaf_room(vr_state *s, uint32_t stack)
{
    if (stack < s->leaf_cap)
        return true;
    size_t limit = 2 * (s->stacknodes.len + 1024), cap = s->leaf_cap ? s->leaf_cap : 1024;
    if (stack >= limit)
        return false;
    while (cap <= stack)
        cap *= 2;
    s->leaf_rows = vr_xrealloc(s->leaf_rows, cap * sizeof(uint64_t));
    memset(s->leaf_rows + s->leaf_cap, 0, (cap - s->leaf_cap) * sizeof(uint64_t));
    s->leaf_cap = cap;
    return true;
}

uint32_t vr_site_row_lookup(vr_state *s, uint32_t stack, uint32_t range)
{
    if (!leaf_room(s, stack))
        return site_row_new(s, stack, range);
    uint64_t e = s->leaf_rows[stack];
    if (e && (uint32_t)(e >> 32) == range)
        return (uint32_t)e - 1;
    uint32_t row = site_row_new(s, stack, range);
    s->leaf_rows[stack] = (uint64_t)range << 32 | (row + 1);
    return row;
}

void vr_phases_sum(vr_state *s)
{
    size_t i = 0;
    for (vr_counter *p; (p = vr_map_next(&s->phases, &i));) {
        p->live = p->snap = 0;
        p->live_count = p->snap_count = 0;
        p->snap_epoch = s->epoch;
    }
    i = 0;
    for (const vr_counter *c; (c = vr_map_next(&s->site_ranges, &i));) {
        vr_counter *p = vr_map_item(&s->phases, c->phase);
        uint64_t count, peak = vr_counter_peak(s, c, &count);
        p->live += c->live;
        p->live_count += c->live_count;
        p->snap += peak;
        p->snap_count += (uint32_t)count;
    }
}

uint64_t vr_counter_peak(const vr_state *s, const vr_counter *c, uint64_t *count)
{
    if (s->epoch == 0) {
        *count = 0;
        return 0;
    }
    if (c->snap_epoch == s->epoch) {
        *count = c->snap_count;
        return c->snap;
    }
    *count = c->live_count;
    return c->live;
}

void vr_snapshot_peak(vr_state *s)
{
    s->epoch++;
    s->peak_pending = false;
    /* fragmentation at the peak's own instant: nothing changed allocated bytes
     * since the peak (this runs before the first decrease), and heaps whose
     * regions did not change are not walked again (frag.c's cache) */
    if (!s->have_peak_frag || s->peak_alloc > s->frag_peak_at) {
        s->frag_peak_at = s->peak_alloc;
        vr_devstate *best = NULL;
        size_t i = 0;
        for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));)
            if (d->heap_bytes && (!best || d->peak_alloc > best->peak_alloc))
                best = d;
        if (best) {
            s->peak_frag = vr_frag_now(s, best->id, "peak");
            s->peak_frag.t_ns = vr_rel_ns(s, s->peak_alloc_t);
            s->have_peak_frag = true;
        }
    }
}

void vr_account(vr_state *s, int32_t device, uint32_t stack, uint32_t range, int64_t delta,
                int count)
{
    vr_account_sites(s, vr_site_row(s, stack, range), delta, count, vr_rel_ns(s, s->t_last));
    vr_devstate *d = vr_state_device(s, device);
    vr_device_peak_alloc(s, d);
    vr_timeline_touch(s, d, s->t_last);
}

void vr_account_reserved(vr_state *s, int32_t device, int64_t delta)
{
    vr_account_reserved_total(s, delta);
    vr_devstate *d = vr_state_device(s, device);
    vr_device_peak_res(s, d);
    vr_timeline_touch(s, d, s->t_last);
}

/* ---- timeline ------------------------------------------------------------ */

static void timeline_compact(vr_devstate *d)
{
    size_t out = 0;
    for (size_t i = 0; i < d->nbuckets; i++) {
        vr_bucket b = d->buckets[i];
        b.index /= 2;
        if (out && d->buckets[out - 1].index == b.index) {
            vr_bucket *p = &d->buckets[out - 1];
            if (b.max_alloc > p->max_alloc) {
                p->max_alloc = b.max_alloc;
                p->t_max = b.t_max;
            }
            if (b.max_res > p->max_res)
                p->max_res = b.max_res;
            p->last_alloc = b.last_alloc;
            p->last_res = b.last_res;
            p->t_last = b.t_last;
        } else {
            d->buckets[out++] = b;
        }
    }
    d->nbuckets = out;
    d->bucket_ns *= 2;
}

/* ---- hover samples ------------------------------------------------------- */

/* Keeps the VR_HOVER_SITES largest of the live site counters in h. */
static void hover_top(vr_state *s, vr_hover_raw *h)
{
    memset(h->stack, 0, sizeof h->stack);
    memset(h->bytes, 0, sizeof h->bytes);
    size_t i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));) {
        if (!c->live || c->live <= h->bytes[VR_HOVER_SITES - 1])
            continue;
        size_t k = VR_HOVER_SITES - 1;
        for (; k > 0 && h->bytes[k - 1] < c->live; k--) {
            h->bytes[k] = h->bytes[k - 1];
            h->stack[k] = h->stack[k - 1];
        }
        h->bytes[k] = c->live;
        h->stack[k] = (uint32_t)c->key;
    }
}

/* Records the state of the site counters as it stood after the last change
 * (hover_t, ns since the start). */
void vr_hover_record(vr_state *s)
{
    if (s->nhover == VR_HOVER_POINTS) {
        for (size_t k = 0; k < VR_HOVER_POINTS / 2; k++)
            s->hover[k] = s->hover[2 * k + 1];
        s->nhover = VR_HOVER_POINTS / 2;
        s->hover_ns *= 2;
        s->hover_lo = s->hover_hi = 0; /* the windows changed: vr_hover_window finds its own */
    }
    vr_hover_raw *h = &s->hover[s->nhover++];
    h->t_rel = s->hover_t;
    h->allocated = s->allocated;
    hover_top(s, h);
    s->hover_dirty = false;
}

/* Sums a and b, saturated at UINT64_MAX. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void vr_hover_window(vr_state *s, uint64_t rel)
{
    /* rel >= hover_hi: rel's window may be past hover_t's (the division
     * tells, hover_hi being saturated) */
    if (s->hover_dirty && rel >= s->hover_hi && rel / s->hover_ns > s->hover_t / s->hover_ns)
        vr_hover_record(s);
    s->hover_lo = rel / s->hover_ns * s->hover_ns;
    s->hover_hi = sat_add(s->hover_lo, s->hover_ns);
}

void vr_account_direct(vr_state *s, const vr_live *l, int sign)
{
    vr_account_direct_inline(s, l, sign);
}

void vr_hover_flush(vr_state *s)
{
    if (s->hover_dirty)
        vr_hover_record(s);
}

void vr_timeline_touch(vr_state *s, vr_devstate *d, uint64_t ts)
{
    vr_timeline_at(d, vr_rel_ns(s, ts));
}

/* The bucket of rel, past the last one (a new bucket, after compacting when
 * they are VR_TIMELINE_BUCKETS). Buckets are 1 ns wide at first, so that
 * until there are VR_TIMELINE_BUCKETS of them every event's bytes are a
 * point of the timeline (each bucket keeps its largest and its last); with
 * 1 us, three events of the simulated device within a microsecond lost the
 * middle one (report.diff_random's Chrome counter, now and then). */
void vr_timeline_new_bucket(vr_devstate *d, uint64_t rel)
{
    if (!d->buckets)
        d->bucket_ns = 1;
    if (d->nbuckets == d->capbuckets && d->capbuckets < VR_TIMELINE_BUCKETS) {
        d->capbuckets = d->capbuckets ? 2 * d->capbuckets : 4;
        if (d->capbuckets > VR_TIMELINE_BUCKETS)
            d->capbuckets = VR_TIMELINE_BUCKETS;
        d->buckets = vr_xrealloc(d->buckets, d->capbuckets * sizeof(vr_bucket));
    }
    uint64_t idx = rel / d->bucket_ns;
    if (!d->nbuckets || d->buckets[d->nbuckets - 1].index < idx) {
        while (d->nbuckets == VR_TIMELINE_BUCKETS) {
            timeline_compact(d);
            idx = rel / d->bucket_ns;
            if (d->buckets[d->nbuckets - 1].index >= idx)
                break;
        }
    }
    vr_bucket *b = d->nbuckets ? &d->buckets[d->nbuckets - 1] : NULL;
    if (!b || b->index < idx) {
        b = &d->buckets[d->nbuckets++];
        memset(b, 0, sizeof(*b));
        b->index = idx;
        b->max_alloc = d->direct + d->region_bytes;
        b->t_max = rel;
    }
    vr_bucket_update(b, d, rel);
    uint64_t end =
        b->index + 1 > UINT64_MAX / d->bucket_ns ? UINT64_MAX : (b->index + 1) * d->bucket_ns;
    d->bucket_end = end;
}

/* ---- growth samplers ----------------------------------------------------- */

const uint64_t *vr_counter_samples(const vr_counter *c, int slot)
{
    static const uint64_t zeros[VR_SAMPLES];
    return c->samples ? c->samples[slot] : zeros;
}

/* Give a live site its samples (zeros so far: it was never live at a sample
 * before), unless VR_MAX_SAMPLED_SITES sites have them already. */
static bool site_sampled(vr_state *s, vr_counter *c)
{
    if (c->samples || !c->live)
        return c->samples != NULL;
    if (s->nsampled_sites >= VR_MAX_SAMPLED_SITES) {
        if (!s->sampled_sites_capped)
            vr_state_note(s,
                          "growth is analysed for the first %d call sites live at a sample "
                          "only (the trace has more)",
                          VR_MAX_SAMPLED_SITES);
        s->sampled_sites_capped = true;
        return false;
    }
    c->samples = vr_alloc(s->arena, VR_SAMPLER_SLOTS * sizeof *c->samples);
    s->nsampled_sites++;
    return true;
}

/* vr_device_overhead of all devices, bytes. */
static uint64_t all_overhead(vr_state *s)
{
    uint64_t sum = 0;
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));)
        sum += vr_device_overhead(d);
    return sum;
}

static void sampler_record(vr_state *s, vr_sampler *sp)
{
    size_t i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));)
        if (site_sampled(s, c))
            c->samples[sp->slot][sp->n] = c->live;
    s->total_samples[sp->slot][sp->n] = s->allocated;
    s->reserved_samples[sp->slot][sp->n] = s->reserved + all_overhead(s);
    s->host_samples[sp->slot][sp->n] = s->host_pinned;
    for (uint32_t g = 0; g < s->ngrowth_devices; g++) {
        vr_devstate *d = vr_growth_device(s, g);
        d->growth->samples[sp->slot][sp->n] = d->direct + d->region_bytes;
        d->growth->res_samples[sp->slot][sp->n] = d->direct + d->heap_bytes + vr_device_overhead(d);
    }
    sp->n++;
    if (sp->n < VR_SAMPLES)
        return;
    /* decimate: keep the odd-indexed samples (ticks 2k * stride) */
    i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));)
        for (uint32_t k = 0; c->samples && k < VR_SAMPLES / 2; k++)
            c->samples[sp->slot][k] = c->samples[sp->slot][2 * k + 1];
    for (uint32_t k = 0; k < VR_SAMPLES / 2; k++) {
        s->total_samples[sp->slot][k] = s->total_samples[sp->slot][2 * k + 1];
        s->reserved_samples[sp->slot][k] = s->reserved_samples[sp->slot][2 * k + 1];
        s->host_samples[sp->slot][k] = s->host_samples[sp->slot][2 * k + 1];
    }
    for (uint32_t g = 0; g < s->ngrowth_devices; g++) {
        vr_devgrowth *dg = vr_growth_device(s, g)->growth;
        for (uint32_t k = 0; k < VR_SAMPLES / 2; k++) {
            dg->samples[sp->slot][k] = dg->samples[sp->slot][2 * k + 1];
            dg->res_samples[sp->slot][k] = dg->res_samples[sp->slot][2 * k + 1];
        }
    }
    sp->n = VR_SAMPLES / 2;
    sp->stride *= 2;
}

/* One tick of a sampler (an iteration ended, or a time window passed). */
void vr_sampler_tick(vr_state *s, vr_sampler *sp, uint64_t ts)
{
    vr_ticks *k = &sp->times;
    if (k->n < VR_MAX_TICK_TIMES) {
        if (k->n == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 64;
            k->ts = vr_xrealloc(k->ts, k->cap * sizeof *k->ts);
        }
        k->ts[k->n++] = ts;
    }
    sp->ticks++;
    if (sp->ticks % sp->stride == 0)
        sampler_record(s, sp);
}

/* Fragmentation over time: one sample per device with heaps, at evenly spaced
 * windows (1 ms, doubled whenever 64 have passed). */
static void frag_sample(vr_state *s, uint64_t ts)
{
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        if (!d->heap_bytes)
            continue;
        vr_frag f = vr_frag_now(s, d->id, "sample");
        f.t_ns = vr_rel_ns(s, ts);
        vr_frag_push(s, &f);
    }
}

void vr_tick_windows(vr_state *s, uint64_t ts)
{
    if (ts <= s->t0)
        return;
    uint64_t rel = ts - s->t0;
    while (rel >= s->win_next && s->win_next != UINT64_MAX) {
        if (s->heaps.len)
            frag_sample(s, s->t0 + s->win_next);
        if (++s->win_n == VR_SAMPLES) { /* windows twice as long */
            s->win_n = VR_SAMPLES / 2;
            s->win_ns *= 2;
        }
        /* past 2^64 ns (a corrupt clock): no window ends again */
        if (__builtin_mul_overflow(s->win_n + 1, s->win_ns, &s->win_next))
            s->win_next = UINT64_MAX;
    }
}
