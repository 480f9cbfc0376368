/* growth.c: NVTX range stacks per thread, iterations (the most frequent
 * top-level range, e.g. "train_step"; when none repeats, the most frequent
 * range directly inside one, e.g. "step" inside one "train"; ranges numbered
 * by step, "iteration0", "iteration1", ..., count as one), and least-squares
 * growth fits of the live bytes per call site sampled at iteration ends.
 *
 * Without NVTX, iterations come from a repeating call-site pattern: the first
 * call site (full stack) that allocates device memory a second time is the
 * anchor, and each of its allocations after which something was freed since
 * its previous one ends an iteration (a loop that allocates and frees, as
 * bandwidthTest or a training step does; a setup loop that only allocates is
 * not an iteration). Evenly spaced time windows are never iterations: a
 * leak-free allocate/copy/free loop sampled at arbitrary instants shows
 * "growth" that is only where in the loop each sample fell. */
#include "state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The candidate's completions; 0 for a stem whose numbers stopped
 * increasing (vr_range_key_live), which any name then replaces. */
static uint64_t candidate_count(const vr_state *s, const vr_level *lv)
{
    if (!vr_range_key_live(s, lv->iter_name))
        return 0;
    for (size_t i = 0; i < lv->nnames; i++)
        if (lv->names[i].name == lv->iter_name)
            return lv->names[i].count;
    return 0;
}

/* Each growth device's reserved bytes now as the peak of level k's range
 * that began (vr_device_peak_res raises it). */
static void devices_started(vr_state *s, int k)
{
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        vr_devstate *d = vr_growth_device(s, i);
        d->growth->cur_peak[k] = d->direct + d->heap_bytes;
        vr_devgrowth_reopen(s, d->growth);
    }
}

/* The open levels changed: each growth device's open_min again. */
static void devices_reopen(vr_state *s)
{
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        vr_devstate *d = vr_growth_device(s, i);
        vr_devgrowth_reopen(s, d->growth);
    }
}

/* Allocations that failed for lack of memory so far. */
static uint64_t oom_failures(const vr_state *s)
{
    return s->failed - s->failed_error;
}

/* Whether an iteration that began after `before` out-of-memory failures
 * and ended now measures what one needs: one during which such a failure
 * came ends with what the failure left live (PyTorch's activations, held by
 * the exception as the range is popped: peak = end, a need of 0 B, and a
 * projection of step 233 for a run that ran out in step 178), so it is the
 * measure only while no iteration without one has ended (*clean). */
static bool measures_need(const vr_state *s, uint64_t before, bool *clean)
{
    bool failed = oom_failures(s) != before;
    if (failed && *clean)
        return false;
    *clean = !failed;
    return true;
}

/* Level k's range that ended is name k's (vr_level.names) last completed:
 * each growth device's peak during it and its reserved bytes now, when
 * `measure` (measures_need). */
static void devices_ended(vr_state *s, int k, size_t name, bool measure)
{
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        vr_devstate *d = vr_growth_device(s, i);
        if (measure) {
            d->growth->last_peak[k][name] = d->growth->cur_peak[k];
            d->growth->last_end[k][name] = d->direct + d->heap_bytes;
            d->growth->last_spare[k][name] = d->pool_spare;
        }
        vr_devgrowth_reopen(s, d->growth);
    }
}

/* The names[] index of level lv's range name, added when new: past
 * VR_MAX_TOPNAMES in the place of a name of the table's second half that
 * began once and ended (a one-off phase: "load_data", "warmup"), whose
 * measures on the devices are cleared; SIZE_MAX when none may go. Until
 * session 26 the first names stayed: a program with 16 one-off ranges
 * before its training loop had no iterations ("step" was never counted).
 * The first half stays as it was filled: with more names in each step than
 * the table holds, every name would otherwise make way for the next before
 * its second end, and none would repeat. */
static size_t level_slot(vr_state *s, vr_level *lv, uint32_t name)
{
    size_t k = vr_level_find(lv, name);
    if (k != SIZE_MAX)
        return k;
    if (lv->nnames < VR_MAX_TOPNAMES) {
        k = lv->nnames++;
    } else {
        for (size_t i = VR_MAX_TOPNAMES / 2; i < lv->nnames && k == SIZE_MAX; i++)
            if (lv->names[i].starts <= 1 && lv->names[i].count == lv->names[i].starts &&
                lv->names[i].name != lv->cur && lv->names[i].name != lv->iter_name)
                k = i;
        if (k == SIZE_MAX)
            return SIZE_MAX;
        int level = (int)(lv - s->level);
        for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
            vr_devgrowth *g = vr_growth_device(s, i)->growth;
            g->last_peak[level][k] = g->last_end[level][k] = g->last_spare[level][k] = 0;
        }
    }
    memset(&lv->names[k], 0, sizeof(lv->names[0]));
    lv->names[k].name = name;
    return k;
}

/* A range of level lv began: an iteration candidate whose peak reserved
 * bytes and first allocation are measured (oom.c's batch estimate). */
static void level_started(vr_state *s, vr_level *lv, uint32_t name, uint64_t ts, uint64_t reserved,
                          uint64_t ooms)
{
    size_t k = level_slot(s, lv, name);
    if (k != SIZE_MAX && !lv->names[k].count && !lv->names[k].first_start)
        lv->names[k].first_start = ts;
    if (k != SIZE_MAX)
        lv->names[k].starts++;
    lv->cur = name;
    lv->cur_peak = reserved;
    lv->cur_input = 0;
    lv->cur_ooms = ooms;
}

void vr_growth_range_push(vr_state *s, vr_thread *t, uint64_t entry, uint64_t ts)
{
    if (t->depth == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        if (t->cap > (1u << 20)) { /* runaway pushes without pops: stop nesting */
            t->cap /= 2;
            return;
        }
        t->stack = vr_xrealloc(t->stack, t->cap * sizeof(*t->stack));
        t->stack_ts = vr_xrealloc(t->stack_ts, t->cap * sizeof(*t->stack_ts));
    }
    t->stack[t->depth] = entry;
    t->stack_ts[t->depth] = ts;
    t->depth++;
    if (t->depth <= VR_LEVELS) {
        level_started(s, &s->level[t->depth - 1], vr_range_key(s, (uint32_t)entry), ts, s->reserved,
                      oom_failures(s));
        devices_started(s, (int)t->depth - 1);
    }
}

/* The top-level range's span for the timeline (model.c resolves the name). */
static void push_span(vr_state *s, uint32_t name, uint64_t start, uint64_t end)
{
    if (s->nspans >= VR_MAX_SPANS)
        return;
    vr_range_span *sp = &s->spans[s->nspans++];
    sp->start_ns = vr_rel_ns(s, start);
    sp->end_ns = vr_rel_ns(s, end);
    sp->name = (const char *)(uintptr_t)name;
}

/* A range of level lv ended: counted; when it is the level's candidate, its
 * iteration is sampled; a name completed more often than the candidate
 * becomes the candidate (the sampler restarts). */
static void level_ended(vr_state *s, vr_level *lv, uint32_t name, uint32_t parent, uint64_t end)
{
    size_t k = level_slot(s, lv, name);
    if (k == SIZE_MAX)
        return;
    uint64_t *cnt = &lv->names[k].count;
    (*cnt)++;
    lv->names[k].parent = parent;
    if (name == lv->cur) {
        bool measure = measures_need(s, lv->cur_ooms, &lv->names[k].clean);
        if (measure) {
            lv->names[k].last_peak = lv->cur_peak;
            lv->names[k].last_end = s->reserved;
            lv->names[k].last_input = lv->cur_input;
            lv->names[k].last_spare = vr_pool_spares(s);
        }
        lv->cur = 0;
        devices_ended(s, (int)(lv - s->level), k, measure);
    }
    if (name != lv->iter_name && *cnt > candidate_count(s, lv)) {
        lv->iter_name = name; /* a more frequent range: restart */
        lv->iter.ticks = *cnt - 1;
        lv->iter.stride = 1;
        lv->iter.n = 0;
        lv->iter.times.n = 0;
    }
    if (name == lv->iter_name)
        vr_sampler_tick(s, &lv->iter, end);
}

void vr_growth_range_pop(vr_state *s, vr_thread *t, uint32_t domain, uint64_t ts)
{
    size_t i = t->depth;
    while (i > 0 && (t->stack[i - 1] >> 32) != domain)
        i--;
    if (i == 0)
        return; /* pop without push: ignore */
    uint32_t name = (uint32_t)t->stack[i - 1];
    uint64_t start = t->stack_ts[i - 1];
    t->depth = i - 1;
    for (size_t k = t->depth + 1; k < VR_LEVELS; k++)
        s->level[k].cur = 0; /* ranges left open above it end uncounted */
    if (t->depth + 1 < VR_LEVELS)
        devices_reopen(s);
    if (t->depth < VR_LEVELS)
        level_ended(s, &s->level[t->depth], vr_range_end_key(s, name),
                    t->depth ? vr_range_key(s, (uint32_t)t->stack[0]) : 0, ts);
    if (t->depth == 0)
        push_span(s, name, start, ts);
}

void vr_growth_thread_ended(vr_state *s, vr_thread *t, uint64_t ts)
{
    if (!t->depth)
        return;
    for (size_t k = 0; k < t->depth && k < VR_LEVELS; k++)
        if (s->level[k].cur == vr_range_key(s, (uint32_t)t->stack[k]))
            s->level[k].cur = 0; /* another thread's range there stays current */
    devices_reopen(s);
    push_span(s, (uint32_t)t->stack[0], t->stack_ts[0], ts > t->stack_ts[0] ? ts : t->stack_ts[0]);
    t->depth = 0;
}

void vr_fit(const uint64_t *y, uint32_t n, uint64_t stride, double *slope, double *r2)
{
    *slope = 0;
    *r2 = 0;
    if (n < 2)
        return;
    double mx = 0, my = 0;
    for (uint32_t i = 0; i < n; i++) {
        mx += (double)(i + 1) * (double)stride;
        my += (double)y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (uint32_t i = 0; i < n; i++) {
        double dx = (double)(i + 1) * (double)stride - mx, dy = (double)y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (sxx <= 0)
        return;
    *slope = sxy / sxx;
    *r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 0;
    if (*r2 > 1)
        *r2 = 1;
    if (!isfinite(*slope))
        *slope = 0;
}

bool vr_sustained(const uint64_t *y, uint32_t n, uint64_t stride, double slope)
{
    uint32_t k = n / 3;
    if (n < 6 || slope < 1.0)
        return false;
    uint64_t high = 0, first_max = 0, last_min = UINT64_MAX, before_last = 0;
    bool high_mid = false;
    for (uint32_t i = 0; i < n; i++) {
        if (i < k)
            first_max = y[i] > first_max ? y[i] : first_max;
        if (i >= n - k)
            last_min = y[i] < last_min ? y[i] : last_min;
        if (i == n - k)
            before_last = high;
        if (y[i] > high && i >= k && i < n - k)
            high_mid = true;
        high = y[i] > high ? y[i] : high;
    }
    /* the last third's rise: at least a quarter of what the slope adds over a third */
    double rise = (double)(high - before_last), fair = slope * (double)stride * (double)k / 4;
    return last_min > first_max && high_mid && high > before_last && rise >= fair;
}

/* Whether the nested candidate's (last) parent began at most once: one
 * range around the loop ("train"; a parent not counted, the level's table
 * full, is taken to be one). A parent that repeats is the loop itself: a
 * training step with 3 "D.forward" ranges inside that died in its second
 * step has no iterations yet, not iterations of D.forward. (Ranges
 * numbered by step, "iteration17", are one top-level range that repeats.) */
static bool parent_once(const vr_state *s)
{
    const vr_level *in = &s->level[1], *top = &s->level[0];
    uint32_t parent = 0;
    for (size_t i = 0; i < in->nnames; i++)
        if (in->names[i].name == in->iter_name)
            parent = in->names[i].parent;
    for (size_t i = 0; i < top->nnames; i++)
        if (top->names[i].name == parent)
            return top->names[i].starts <= 1;
    return true;
}

const vr_level *vr_growth_level(const vr_state *s)
{
    for (int k = 0; k < VR_LEVELS; k++) {
        const vr_level *lv = &s->level[k];
        if (lv->iter_name && candidate_count(s, lv) >= 3 && lv->iter.n >= 3 &&
            (k == 0 || parent_once(s)))
            return lv;
    }
    return NULL;
}

const vr_sampler *vr_growth_sampler(const vr_state *s)
{
    const vr_level *lv = vr_growth_level(s);
    if (lv)
        return &lv->iter;
    if (s->pat.ticks >= 3 && s->pat.n >= 3)
        return &s->pat;
    return NULL;
}

static bool pattern_anchor(const vr_state *s, uint32_t stack)
{
    if (!stack)
        return false;
    if (s->pat_anchor)
        return stack == s->pat_anchor;
    return vr_map_get(&s->alloc_sites, stack) != NULL;
}

bool vr_pattern_anchor_lookup(const vr_state *s, uint32_t stack)
{
    return pattern_anchor(s, stack);
}

/* A call-site-pattern iteration begins: the one before it completed, with
 * each growth device's peak reserved bytes during it and the bytes now, its
 * end (model.c: what an iteration needs above what it leaves), kept when
 * it measures that (measures_need). */
static void pattern_iteration_began(vr_state *s)
{
    bool measure = measures_need(s, s->pat_ooms, &s->pat_clean);
    s->pat_ooms = oom_failures(s);
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        vr_devstate *d = vr_growth_device(s, i);
        vr_devgrowth *g = d->growth;
        if (measure) {
            g->pat_last_peak = g->pat_peak;
            g->pat_last_end = d->direct + d->heap_bytes;
            g->pat_last_spare = d->pool_spare;
        }
        g->pat_peak = d->direct + d->heap_bytes;
        vr_devgrowth_reopen(s, g);
    }
}

void vr_pattern_alloc_slow(vr_state *s, uint32_t stack, uint64_t ts)
{
    if (!stack)
        return;
    if (pattern_anchor(s, stack)) {
        s->pat_anchor = stack;
        if (s->pat_freed) {
            vr_sampler_tick(s, &s->pat, ts);
            pattern_iteration_began(s);
        }
        s->pat_freed = false;
        return;
    }
    if (!s->pat_anchor)
        vr_map_put(&s->alloc_sites, stack, NULL);
}

/* One live allocation of a candidate site: its group, size and iteration. */
typedef struct sized_alloc {
    uint32_t group;
    uint64_t size, iteration;
} sized_alloc;

static int cmp_sized(const void *a, const void *b)
{
    const sized_alloc *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return x->iteration < y->iteration ? -1 : x->iteration > y->iteration;
}

/* The iteration (0-based) sampler ticks k says time ts fell in: how many
 * ticks came at or before it. */
static uint64_t iteration_at(const vr_ticks *k, uint64_t ts)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->ts[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void vr_sizes_repeat(const vr_state *s, const vr_sampler *sp, const vr_map *sites, bool *groups,
                     size_t ngroups)
{
    memset(groups, 0, ngroups * sizeof *groups);
    if (!sp)
        return;
    const vr_ticks *k = &sp->times;
    sized_alloc *v = NULL;
    size_t n = 0, cap = 0, i = 0;
    for (const vr_live *l; (l = vr_map_next(&s->live, &i));) {
        const vr_site_group *g = vr_map_get(sites, l->stack);
        if (!g || g->group >= ngroups)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            v = vr_xrealloc(v, cap * sizeof *v);
        }
        v[n++] = (sized_alloc){g->group, l->size, iteration_at(k, l->ts)};
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_sized);
    for (size_t j = 1; j < n; j++)
        if (v[j].group == v[j - 1].group && v[j].size == v[j - 1].size &&
            v[j].iteration != v[j - 1].iteration)
            groups[v[j].group] = true;
    free(v);
}
