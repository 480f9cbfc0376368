/* peak_hot.h: internal to report/. The part of peak.c's accounting that
 * every allocation and free of a replay runs, as inline functions: peak.c's
 * own callers and replay.c's (free_live, pending_commit) share these
 * definitions, and the replay's loop has no call per event for them. Their
 * rare steps (a hover sample, a new timeline bucket, a peak snapshot) stay
 * calls into peak.c. */
#ifndef VRAMTRACE_REPORT_PEAK_HOT_H
#define VRAMTRACE_REPORT_PEAK_HOT_H

#include "state.h"

/* Records the state of the site counters as it stood after the last change
 * (s->hover_t, ns since the start): one hover sample. */
void vr_hover_record(vr_state *s);
/* The timeline bucket of rel (ns since the start) past d's last one: a new
 * bucket, after compacting when there are VR_TIMELINE_BUCKETS. */
void vr_timeline_new_bucket(vr_devstate *d, uint64_t rel);
/* The site counters change at rel (ns since the start), outside the window
 * of hover_ns that holds the last change (hover_t): when that change lies
 * in an earlier window (1 us at first), the state it left (exact until
 * now) is kept as a hover sample, one per window (vr_hover_record: when
 * VR_HOVER_POINTS are kept, every other one is dropped and the windows
 * double; O(sites) per sample); then the window of rel is taken. */
void vr_hover_window(vr_state *s, uint64_t rel);

/* Change counter c by delta bytes and count allocations, its live value
 * first kept as its snapshot when the snapshot epoch moved on since it was
 * last changed (epoch: the state's, in a local: a store into a counter
 * could otherwise alias it). */
static inline void vr_counter_add(uint64_t epoch, vr_counter *c, int64_t delta, int count)
{
    if (c->snap_epoch != epoch) {
        c->snap = c->live;
        c->snap_count = c->live_count;
        c->snap_epoch = epoch;
    }
    c->live += (uint64_t)delta;
    c->live_count += (uint32_t)count; /* -1 wraps to a decrement */
}

/* The site counters change at rel (ns since the start). Only when rel
 * leaves the window of hover_ns that holds the last change (hover_t, in
 * [hover_lo, hover_hi)) is there more to do (vr_hover_window). */
static inline void vr_hover_change(vr_state *s, uint64_t rel)
{
    if (rel < s->hover_lo || rel >= s->hover_hi)
        vr_hover_window(s, rel);
    s->hover_t = rel;
    s->hover_dirty = true;
}

/* The all-devices part of an allocated-bytes change at rel (s->t_last, ns
 * since the start): lazy snapshot, site row and site counters, the peak
 * (phase counters are summed from the rows at the end: vr_phases_sum).
 * Inline: every allocation and free goes through it (twice). The counters
 * are found before any is changed (their stores could alias the maps). */
static inline __attribute__((always_inline)) void
vr_account_sites(vr_state *s, uint32_t row, int64_t delta, int count, uint64_t rel)
{
    if (delta < 0 && s->peak_pending)
        vr_snapshot_peak(s);
    vr_hover_change(s, rel);
    vr_counter *c = vr_map_item(&s->site_ranges, row);
    vr_counter *site = vr_map_item(&s->sites, c->site);
    uint64_t epoch = s->epoch, allocated = s->allocated + (uint64_t)delta;
    vr_counter_add(epoch, c, delta, count);
    vr_counter_add(epoch, site, delta, count);
    s->allocated = allocated;
    if (allocated > s->peak_alloc) {
        s->peak_alloc = allocated;
        s->peak_alloc_t = s->t_last;
        s->peak_pending = true;
    }
}

static inline void vr_device_peak_alloc(const vr_state *s, vr_devstate *d)
{
    uint64_t a = d->direct + d->region_bytes;
    if (a > d->peak_alloc) {
        d->peak_alloc = a;
        d->peak_alloc_t = s->t_last;
    }
}

/* The all-devices part of a reserved-bytes change. */
static inline void vr_account_reserved_total(vr_state *s, int64_t delta)
{
    s->reserved += (uint64_t)delta;
    for (int k = 0; k < VR_LEVELS; k++)
        if (s->level[k].cur && s->reserved > s->level[k].cur_peak)
            s->level[k].cur_peak = s->reserved;
    if (s->reserved > s->peak_res) {
        s->peak_res = s->reserved;
        s->peak_res_t = s->t_last;
    }
}

static inline void vr_device_peak_res(const vr_state *s, vr_devstate *d)
{
    uint64_t r = d->direct + d->heap_bytes;
    if (r > d->peak_res) {
        d->peak_res = r;
        d->peak_res_t = s->t_last;
        d->captured_at_peak = d->captured;
        d->graph_at_peak = d->graph;
    }
    vr_devgrowth *g = d->growth;
    if (g && r > g->open_min) { /* a new peak of an open range or pattern iteration */
        for (int k = 0; k < VR_LEVELS; k++)
            if (s->level[k].cur && r > g->cur_peak[k])
                g->cur_peak[k] = r;
        if (r > g->pat_peak)
            g->pat_peak = r;
        vr_devgrowth_reopen(s, g);
    }
}

/* The last bucket takes the device's state at rel. */
static inline void vr_bucket_update(vr_bucket *b, const vr_devstate *d, uint64_t rel)
{
    uint64_t a = d->direct + d->region_bytes, r = d->direct + d->heap_bytes;
    if (a > b->max_alloc) {
        b->max_alloc = a;
        b->t_max = rel;
    }
    if (r > b->max_res)
        b->max_res = r;
    b->last_alloc = a;
    b->last_res = r;
    b->t_last = rel;
}

/* The common case inline: rel (ns since the start) in the last bucket or
 * before it (its index is not past the last one's). */
static inline __attribute__((always_inline)) void vr_timeline_at(vr_devstate *d, uint64_t rel)
{
    if (rel < d->bucket_end) /* 0 while there is no bucket */
        vr_bucket_update(&d->buckets[d->nbuckets - 1], d, rel);
    else
        vr_timeline_new_bucket(d, rel);
}

/* vr_account_direct (state.h), inline. */
static inline __attribute__((always_inline)) void
vr_account_direct_inline(vr_state *s, const vr_live *l, int sign)
{
    int64_t delta = sign * (int64_t)l->size;
    uint64_t rel = vr_rel_ns(s, s->t_last);
    vr_devstate *d = vr_state_device(s, l->device);
    d->direct += (uint64_t)delta;
    if (l->flags & VR_LIVE_CAPTURED)
        d->captured += (uint64_t)delta;
    if (l->flags & VR_LIVE_GRAPH) {
        d->graph += (uint64_t)delta;
        s->had_graph_memory = true;
    }
    if (l->flags & VR_LIVE_ROUNDED) { /* vt_api_rounded */
        uint64_t slack = vt_driver_slack(l->size);
        d->slack += sign > 0 ? slack : -slack;
        if (l->flags & VR_LIVE_POOLED) {
            d->slack_pool += sign > 0 ? slack : -slack;
            d->pool_allocs = true;
        }
    }
    vr_account_sites(s, l->row, delta, sign, rel);
    vr_device_peak_alloc(s, d);
    vr_account_reserved_total(s, delta);
    vr_device_peak_res(s, d);
    vr_timeline_at(d, rel);
}

#endif
