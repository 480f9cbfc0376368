/* model.c: from the replay state to the vr_report model: peak composition,
 * leaks (live at exit, grouped by stack), growth fits, OOM explanations;
 * symbolizes only the stacks that appear in these results. */
#include "state.h"

#include <inttypes.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct raw_site {
    uint32_t stack, range;
    uint64_t bytes, count;
    const char *key;
    vr_stack st;
} raw_site;

typedef struct raw_vec {
    raw_site *v;
    size_t n, cap;
} raw_vec;

/* Room for n entries at once (n: the source map's length), so collecting a
 * table never doubles past what it holds. */
static void raw_reserve(raw_vec *rv, size_t n)
{
    rv->cap = n ? n : 1;
    rv->v = vr_xmalloc(rv->cap * sizeof(raw_site));
}

static void raw_push(raw_vec *rv, uint32_t stack, uint32_t range, uint64_t bytes, uint64_t count)
{
    if (rv->n == rv->cap) {
        rv->cap = rv->cap ? rv->cap * 2 : 64;
        rv->v = vr_xrealloc(rv->v, rv->cap * sizeof(raw_site));
    }
    rv->v[rv->n++] = (raw_site){.stack = stack, .range = range, .bytes = bytes, .count = count};
}

/* The order sites merge by: their range label (key, by range), else their
 * symbolized stacks (vr_stack_order). */
static int cmp_key(const void *a, const void *b)
{
    const raw_site *x = a, *y = b;
    return x->key ? strcmp(x->key, y->key) : vr_stack_order(&x->st, &y->st);
}

static int cmp_bytes_desc(const void *a, const void *b)
{
    const raw_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return cmp_key(x, y);
}

static int cmp_raw_bytes_desc(const void *a, const void *b)
{
    const raw_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->stack != y->stack ? (x->stack < y->stack ? -1 : 1)
                                : (x->range > y->range) - (x->range < y->range);
}

/* Keep report memory bounded by the trace's distinct stacks: past
 * VR_MAX_MERGED_SITES entries only the largest are symbolized and merged
 * (48 bytes a frame, some 1.5 KB for a stack of 31 frames; bench/perf.py
 * "stacks"), with a note naming the table; what the rest hold is added to
 * *lo. */
static void cap_sites(vr_state *s, raw_vec *rv, bool by_range, const char *table, vr_left_out *lo)
{
    if (rv->n <= VR_MAX_MERGED_SITES)
        return;
    qsort(rv->v, rv->n, sizeof(raw_site), cmp_raw_bytes_desc);
    vr_state_note(s,
                  "%s: %zu distinct %s: only the %d largest are %s, the other %zu are counted "
                  "as left out",
                  table, rv->n, by_range ? "NVTX ranges" : "stacks", VR_MAX_MERGED_SITES,
                  by_range ? "listed" : "symbolized and listed", rv->n - VR_MAX_MERGED_SITES);
    for (size_t i = VR_MAX_MERGED_SITES; i < rv->n; i++) {
        lo->stacks++;
        lo->bytes += rv->v[i].bytes;
        lo->count += rv->v[i].count;
    }
    rv->n = VR_MAX_MERGED_SITES;
}

/* Symbolize, merge entries whose stacks symbolize alike, sort by bytes. */
/* The region names given at a stack id, joined: "a, b, c (+N more)". */
static const char *site_names(vr_state *s, uint32_t stack)
{
    const vr_site_names *sn = vr_map_get(&s->site_names, stack);
    if (!sn || !sn->n)
        return "";
    char *out = "";
    for (uint32_t i = 0; i < sn->n; i++)
        out = vr_sprintf(s->arena, "%s%s%s", out, i ? ", " : "", vr_state_string(s, sn->name[i]));
    if (sn->more)
        out = vr_sprintf(s->arena, "%s (+%" PRIu64 " more)", out, sn->more);
    return out;
}

/* The name range id is shown by in the by-range tables: its string, or for
 * an operator's range of PyTorch's emit_nvtx() (vt_range_is_operator: one
 * call, "aten::empty, op_id = 12") the operator's name, so that its calls
 * add up to one row ("aten::empty"), not one row per call. */
static const char *range_label(vr_state *s, uint32_t range)
{
    const char *name = vr_state_string(s, range), *comma = strstr(name, ", ");
    if (!comma || !vt_range_is_operator(name))
        return name;
    return vr_sprintf(s->arena, "%.*s", (int)(comma - name), name);
}

/* The table rv as sites (*out_n of them, arena memory), merged by
 * symbolized stack (or by range label when by_range); table names it in a
 * note, lo gets what is left out (cap_sites). */
static vr_site *merge_sites(vr_state *s, vr_symbolizer *sy, raw_vec *rv, bool by_range,
                            const char *table, vr_left_out *lo, size_t *out_n)
{
    cap_sites(s, rv, by_range, table, lo);
    for (size_t i = 0; i < rv->n; i++) {
        raw_site *r = &rv->v[i];
        if (by_range)
            r->key = range_label(s, r->range);
        else
            r->st = vr_symbolize(sy, r->stack);
    }
    if (rv->n)
        qsort(rv->v, rv->n, sizeof(raw_site), cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < rv->n; i++) {
        if (m && !cmp_key(&rv->v[m - 1], &rv->v[i])) {
            rv->v[m - 1].bytes += rv->v[i].bytes;
            rv->v[m - 1].count += rv->v[i].count;
        } else {
            rv->v[m++] = rv->v[i];
        }
    }
    if (m)
        qsort(rv->v, m, sizeof(raw_site), cmp_bytes_desc);
    vr_site *out = vr_alloc(s->arena, (m ? m : 1) * sizeof(vr_site));
    for (size_t i = 0; i < m; i++) {
        out[i].stack = rv->v[i].st;
        out[i].range = by_range ? (rv->v[i].key[0] ? rv->v[i].key : "(no range)")
                                : vr_state_string(s, rv->v[i].range);
        out[i].range = vr_strdup(s->arena, out[i].range);
        out[i].names = by_range ? "" : site_names(s, rv->v[i].stack);
        out[i].bytes = rv->v[i].bytes;
        out[i].count = rv->v[i].count;
    }
    *out_n = m;
    return out;
}

static vr_site *peak_counters(vr_state *s, vr_symbolizer *sy, vr_map *m, bool by_range,
                              vr_left_out *lo, size_t *n)
{
    raw_vec rv = {0};
    size_t i = 0;
    raw_reserve(&rv, m->len);
    for (vr_counter *c; (c = vr_map_next(m, &i));) {
        uint64_t cnt, b = vr_counter_peak(s, c, &cnt);
        if (b)
            raw_push(&rv, by_range ? 0 : (uint32_t)c->key, by_range ? (uint32_t)c->key : 0, b, cnt);
    }
    vr_site *out =
        merge_sites(s, sy, &rv, by_range,
                    by_range ? "NVTX ranges at the peak" : "call sites at the peak", lo, n);
    free(rv.v);
    return out;
}

/* Sites at the peak inside the dominant range: the (range, stack) counters
 * whose range name is phases[0]'s ("(no range)" stands for none). */
static void build_range_sites(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    if (!r->nphases)
        return;
    const char *dom = r->phases[0].range;
    raw_vec rv = {0};
    size_t i = 0;
    raw_reserve(&rv, s->site_ranges.len);
    for (vr_counter *c; (c = vr_map_next(&s->site_ranges, &i));) {
        const char *name = range_label(s, (uint32_t)(c->key >> 32));
        if (strcmp(name[0] ? name : "(no range)", dom))
            continue;
        uint64_t cnt, b = vr_counter_peak(s, c, &cnt);
        if (b)
            raw_push(&rv, (uint32_t)c->key, (uint32_t)(c->key >> 32), b, cnt);
    }
    const char *table = vr_sprintf(s->arena, "call sites at the peak in %s", dom);
    r->range_sites =
        merge_sites(s, sy, &rv, false, table, &r->range_sites_left_out, &r->nrange_sites);
    free(rv.v);
}

/* The leaks of one kind (its groups, vr_leaks_group), appended to *v (n
 * entries, arena memory); groups is destroyed. */
static void leaks_of_kind(vr_state *s, vr_symbolizer *sy, enum vt_kind kind, vr_map *groups,
                          vr_leak **v, size_t *n, vr_left_out *lo)
{
    raw_vec rv = {0};
    size_t i = 0;
    raw_reserve(&rv, groups->len);
    for (vr_counter *c; (c = vr_map_next(groups, &i));)
        raw_push(&rv, (uint32_t)c->key, 0, c->live, c->live_count);
    vr_map_destroy(groups);
    size_t m;
    const char *table = vr_sprintf(s->arena, "leaks of %s memory", vt_kind_name(kind));
    vr_site *sites = merge_sites(s, sy, &rv, false, table, lo, &m);
    free(rv.v);
    vr_leak *out = vr_alloc(s->arena, (*n + m ? *n + m : 1) * sizeof(vr_leak));
    if (*n)
        memcpy(out, *v, *n * sizeof(vr_leak));
    for (size_t k = 0; k < m; k++)
        out[*n + k] = (vr_leak){.stack = sites[k].stack,
                                .bytes = sites[k].bytes,
                                .count = sites[k].count,
                                .kind = vt_kind_name(kind),
                                .host = vt_kind_is_host(kind),
                                .cache_of = vr_cache_holder(&sites[k].stack)};
    *v = out;
    *n += m;
}

static int leak_cmp(const void *pa, const void *pb)
{
    const vr_leak *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return (a->bytes < b->bytes) - (a->bytes > b->bytes);
    int k = strcmp(a->kind, b->kind);
    return k ? k : (a->stack.id > b->stack.id) - (a->stack.id < b->stack.id);
}

/* Whether st starts inside PyTorch's libc10_cuda.so without a name there (a
 * trace reported away from the PyTorch that recorded it): vr_cache_holder
 * cannot recognise the allocator. */
static bool unnamed_torch(const vr_stack *st)
{
    return st->n && !strcmp(st->frames[0].function, "??") &&
           !strncmp(vr_basename(st->frames[0].module), "libc10_cuda.so", 14);
}

/* Device memory leaks count in leaked_bytes; host kinds in host_leaked_bytes;
 * the list holds both, each labelled with its kind, largest first. */
static void build_leaks(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    vr_leak *v = NULL;
    size_t n = 0;
    vr_map groups[VT_KIND_MAX_];
    uint64_t bytes[VT_KIND_MAX_], count[VT_KIND_MAX_];
    vr_leaks_group(s, groups, bytes, count);
    for (int k = 0; k < VT_KIND_MAX_; k++) {
        leaks_of_kind(s, sy, (enum vt_kind)k, &groups[k], &v, &n, &r->leaks_left_out);
        bool host = vt_kind_is_host((enum vt_kind)k);
        *(host ? &r->host_leaked_bytes : &r->leaked_bytes) += bytes[k];
        *(host ? &r->host_leaked_count : &r->leaked_count) += count[k];
    }
    for (size_t i = 0; i < n; i++) {
        if (!v[i].cache_of && unnamed_torch(&v[i].stack))
            vr_state_note_once(s, "memory live at exit was allocated inside PyTorch's "
                                  "libc10_cuda.so, whose functions have no names here: its "
                                  "caching allocator's cache cannot be told from a leak (report "
                                  "the trace where the recording PyTorch is installed)");
        if (v[i].cache_of) {
            *(v[i].host ? &r->host_cached_at_exit_bytes : &r->cached_at_exit_bytes) += v[i].bytes;
            *(v[i].host ? &r->host_cached_at_exit_count : &r->cached_at_exit_count) += v[i].count;
        }
    }
    if (n)
        qsort(v, n, sizeof(vr_leak), leak_cmp);
    r->leaks = v ? v : vr_alloc(s->arena, sizeof(vr_leak));
    r->nleaks = n;
}

/* ---- growth --------------------------------------------------------------- */

static uint64_t device_headroom(vr_state *s)
{
    uint64_t best = 0;
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        uint64_t room = d->total > d->baseline_used ? d->total - d->baseline_used : 0;
        if (room > best)
            best = room;
    }
    return best;
}

static uint64_t above(uint64_t peak, uint64_t end)
{
    return peak > end ? peak - end : 0;
}

/* Whether growth is measured over call-site-pattern iterations. */
static bool pattern_iterations(vr_state *s)
{
    return vr_growth_sampler(s) == &s->pat;
}

/* What an iteration needs above what it leaves live (excess, bytes) and
 * the free reserve of stream-ordered pools at its end (spare, bytes),
 * which holds that much of it (rooms_of). */
typedef struct iter_need {
    uint64_t excess, spare;
} iter_need;

/* What an iteration needs on top of what it leaves live: the last
 * completed one's peak reserved bytes above its end (its activations, its
 * temporaries), an NVTX range's or a call-site-pattern iteration's (from
 * one anchor allocation to the next); bytes. Without it a history kept
 * each step was projected to run out 30 % late (torch_retained_list_emit_nvtx:
 * 232 for 178). */
static iter_need iteration_need(vr_state *s)
{
    if (pattern_iterations(s)) { /* each device's, summed: at most that */
        iter_need sum = {0, 0};
        for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
            const vr_devgrowth *g = vr_growth_device(s, i)->growth;
            sum.excess += above(g->pat_last_peak, g->pat_last_end);
            sum.spare += g->pat_last_spare;
        }
        return sum;
    }
    vr_level *lv = (vr_level *)vr_growth_level(s);
    size_t k = lv ? vr_level_find(lv, lv->iter_name) : SIZE_MAX;
    if (k == SIZE_MAX)
        return (iter_need){0, 0};
    return (iter_need){above(lv->names[k].last_peak, lv->names[k].last_end),
                       lv->names[k].last_spare};
}

/* The first iteration after which live bytes (live at the end of
 * iteration `iterations`, growing slope bytes per iteration) exceed room;
 * one that fills it exactly still fits. -1 when they never do, when they
 * exceed it already, or past what an int64_t holds. */
static int64_t project(uint64_t iterations, double slope, uint64_t room, uint64_t live)
{
    if (!(slope > 0) || room < live || iterations < 3)
        return -1;
    double more = floor((double)(room - live) / slope) + 1;
    return (double)iterations + more < 0x1p63 ? (int64_t)iterations + (int64_t)more : -1;
}

/* The iteration whose end the last of sp's samples is, of `iterations`
 * completed: samples are kept at every stride-th iteration's end
 * (peak.c), and the projection counts from that sample's bytes (from the
 * last iteration it said 2 steps late for a run that ran out in step 178,
 * sampled every 4th). */
static uint64_t sampled_at(const vr_sampler *sp, uint64_t iterations)
{
    return iterations - iterations % sp->stride;
}

/* The room a device (room: its total less the use outside the recording)
 * leaves for what iterations keep, in allocated bytes (alloc: less what one
 * iteration needs above its end, need.excess) and in the reserved bytes of
 * project_reserved (reserved: less only the part of that need that a
 * stream-ordered pool's free reserve at the iteration's end, need.spare, does
 * not hold: the reserved bytes count that reserve already). */
typedef struct growth_room {
    uint64_t alloc, reserved;
} growth_room;

static growth_room rooms_of(uint64_t room, iter_need need)
{
    uint64_t rest = need.excess > need.spare ? need.excess - need.spare : 0;
    return (growth_room){room > need.excess ? room - need.excess : 0,
                         room > rest ? room - rest : 0};
}

/* The projection of growth whose allocated bytes at the iteration ends,
 * fitted, are slope (bytes per iteration) and live (the last), refined by
 * the reserved bytes at the same ends (yr: with a stream-ordered pool's free
 * reserve, sampled there): when the allocated bytes grow (the headline's
 * rule: slope >= 1 B and R^2 >= 0.8 or a rise that kept on), the earlier of
 * the two projections. A caching allocator's segments fill the device, and
 * when its free blocks fragment they grow faster than what it hands out: a
 * GAN keeping each step's activations grew 69.9 MiB a step allocated and
 * 76.6 MiB reserved, and ran out in step 48 where the allocated bytes
 * projected 53. So does a pool's reserve (PyTorch's cudaMallocAsync backend:
 * 12 MiB a step kept, its pool 12.8 MiB a step and some 650 MiB above what
 * is allocated at a step's end; projected 190 from the allocated bytes, the
 * run raised in step 178). Where nothing is cached the two are one. */
static int64_t project_reserved(const vr_sampler *sp, uint64_t iterations, growth_room room,
                                const vr_growth *g, const uint64_t *yr)
{
    iterations = sampled_at(sp, iterations);
    int64_t a = project(iterations, g->bytes_per_iteration, room.alloc, g->live_bytes);
    if (g->bytes_per_iteration < 1.0 || (g->r2 < 0.8 && !g->sustained) || sp->n < 3)
        return a;
    double slope, r2;
    vr_fit(yr, sp->n, sp->stride, &slope, &r2);
    int64_t b = project(iterations, slope, room.reserved, yr[sp->n - 1]);
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* Least-squares growth over the samples; projected only from at least
 * three complete iterations, and only to an iteration an int64_t holds
 * (a growth of a few bytes per iteration projects none). The projection is
 * the first iteration after which live bytes would exceed room (the
 * device's room less one iteration's own need: build_growth), one that
 * fills it exactly still fits. */
static vr_growth fit_growth(const uint64_t *y, const vr_sampler *sp, uint64_t iterations,
                            uint64_t room, uint64_t total_live)
{
    vr_growth g = {.iterations = iterations, .projected_oom_iteration = -1};
    vr_fit(y, sp->n, sp->stride, &g.bytes_per_iteration, &g.r2);
    g.sustained = vr_sustained(y, sp->n, sp->stride, g.bytes_per_iteration);
    g.live_bytes = sp->n ? y[sp->n - 1] : 0;
    g.projected_oom_device = -1;
    if (sp->n >= 3)
        g.projected_oom_iteration =
            project(sampled_at(sp, iterations), g.bytes_per_iteration, room, total_live);
    return g;
}

static int cmp_growth(const void *a, const void *b)
{
    const vr_growth *x = a, *y = b;
    if (x->bytes_per_iteration != y->bytes_per_iteration)
        return x->bytes_per_iteration < y->bytes_per_iteration ? 1 : -1;
    return x->stack.id < y->stack.id ? -1 : x->stack.id > y->stack.id;
}

/* A growth candidate: the samples of every site whose stack symbolizes alike
 * (vr_stack_order), summed. */
typedef struct growth_group {
    vr_stack st;
    uint64_t samples[VR_SAMPLES];
    uint32_t raw;         /* the stack id (before merging) */
    const char *cache_of; /* vr_growth.cache_of */
} growth_group;

static int cmp_group_key(const void *a, const void *b)
{
    return vr_stack_order(&((const growth_group *)a)->st, &((const growth_group *)b)->st);
}

/* cache_of of the groups (g[0..m), sorted by key: a run of one key is one
 * logical site) that a caching allocator's segments make, unless their sizes
 * repeat across iterations (vr_sizes_repeat). */
static void mark_cache_growth(vr_state *s, const vr_sampler *sp, growth_group *g, size_t m)
{
    vr_map sites;
    vr_map_init(&sites, sizeof(vr_site_group));
    size_t runs = 0;
    for (size_t j = 0; j < m; j++) {
        if (j && !vr_stack_order(&g[j - 1].st, &g[j].st)) {
            g[j].cache_of = g[j - 1].cache_of;
        } else {
            g[j].cache_of = vr_cache_holder(&g[j].st);
            runs++;
        }
        if (g[j].cache_of)
            ((vr_site_group *)vr_map_put(&sites, g[j].raw, NULL))->group = (uint32_t)(runs - 1);
    }
    bool *repeat = sites.len ? vr_xcalloc(runs, sizeof(bool)) : NULL;
    if (repeat)
        vr_sizes_repeat(s, sp, &sites, repeat, runs);
    for (size_t j = 0, run = 0; j < m; j++) {
        run += j && vr_stack_order(&g[j - 1].st, &g[j].st);
        if (repeat && repeat[run])
            g[j].cache_of = NULL;
    }
    free(repeat);
    vr_map_destroy(&sites);
}

/* The growth of every call site with growth samples, summed (bytes per
 * iteration; vr_report.growth_analysed). */
static double analysed_growth(vr_state *s, const vr_sampler *sp)
{
    uint64_t sum[VR_SAMPLES] = {0};
    size_t i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));) {
        const uint64_t *smp = vr_counter_samples(c, sp->slot);
        for (uint32_t t = 0; c->samples && t < sp->n; t++)
            sum[t] += smp[t];
    }
    return fit_growth(sum, sp, 0, 0, 0).bytes_per_iteration;
}

/* Sites grouped by their logical frame chain (inlined frames included), so
 * that one call site recorded under several raw stacks grows as one. */
static growth_group *growth_groups(vr_state *s, vr_symbolizer *sy, const vr_sampler *sp, size_t *n)
{
    size_t sampled = 0, m = 0, i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));)
        sampled += c->samples != NULL; /* at most VR_MAX_SAMPLED_SITES */
    growth_group *g = vr_xcalloc(sampled + 1, sizeof(growth_group));
    i = 0;
    for (vr_counter *c; (c = vr_map_next(&s->sites, &i));) {
        const uint64_t *smp = vr_counter_samples(c, sp->slot);
        uint64_t any = 0;
        for (uint32_t t = 0; c->samples && t < sp->n; t++)
            any |= smp[t];
        if (!any) /* adds nothing to a group: not worth symbolizing */
            continue;
        g[m].st = vr_symbolize(sy, (uint32_t)c->key);
        g[m].raw = (uint32_t)c->key;
        memcpy(g[m].samples, smp, sizeof g[m].samples);
        m++;
    }
    if (m)
        qsort(g, m, sizeof(growth_group), cmp_group_key);
    mark_cache_growth(s, sp, g, m);
    size_t k = 0;
    for (size_t j = 0; j < m; j++) {
        if (k && !vr_stack_order(&g[k - 1].st, &g[j].st)) {
            for (size_t t = 0; t < VR_SAMPLES; t++)
                g[k - 1].samples[t] += g[j].samples[t];
        } else {
            g[k++] = g[j];
        }
    }
    *n = k;
    return g;
}

/* The range a nested iteration range was last inside ("" at top level). */
static const char *iteration_parent(vr_state *s, const vr_level *lv)
{
    bool numbered;
    for (size_t k = 0; lv == &s->level[1] && k < lv->nnames; k++)
        if (lv->names[k].name == lv->iter_name && lv->names[k].parent)
            return vr_range_key_name(s, lv->names[k].parent, &numbered);
    return "";
}

/* What one iteration needs on device d above what it leaves there: the
 * last completed iteration's peak reserved bytes on d above its end (NVTX
 * or call-site pattern, as iteration_need), and its pools' free reserve at
 * its end. */
static iter_need device_need(vr_state *s, const vr_devstate *d)
{
    const vr_devgrowth *g = d->growth;
    if (pattern_iterations(s))
        return (iter_need){above(g->pat_last_peak, g->pat_last_end), g->pat_last_spare};
    vr_level *lv = (vr_level *)vr_growth_level(s);
    size_t k = lv ? vr_level_find(lv, lv->iter_name) : SIZE_MAX;
    if (k == SIZE_MAX)
        return (iter_need){0, 0};
    int level = (int)(lv - s->level);
    return (iter_need){above(g->last_peak[level][k], g->last_end[level][k]),
                       g->last_spare[level][k]};
}

/* A device's room for growth (its total less the use outside the
 * recording and one iteration's need there) and its live bytes at the last
 * iteration end. */
typedef struct dev_room {
    int32_t id;
    uint64_t room, live;
} dev_room;

/* Growth projected per device: each device's own bytes at the iteration
 * ends, fitted, against its own room (its total less the use outside the
 * recording and what one iteration needs there); the first device to run
 * out is the projection, into t (with its device), its room and live bytes
 * into *room and *live. False when the devices are not followed one by one
 * (more than VR_MAX_GROWTH_DEVICES: t keeps the projection over all). A
 * model on one device and a leak on another ran out where the leaking
 * device did, not where the sum of both met one device's room (step 232,
 * projected at 100 before: devices_test.sh). */
static bool project_per_device(vr_state *s, const vr_sampler *sp, vr_growth *t, dev_room *rooms,
                               uint64_t *room, uint64_t *live)
{
    if (s->growth_devices_capped || !s->ngrowth_devices || sp->n < 3)
        return false;
    t->projected_oom_iteration = -1;
    t->projected_oom_device = -1;
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        const vr_devstate *d = vr_growth_device(s, i);
        const uint64_t *y = d->growth->samples[sp->slot];
        vr_growth g = {.live_bytes = y[sp->n - 1]};
        vr_fit(y, sp->n, sp->stride, &g.bytes_per_iteration, &g.r2);
        g.sustained = vr_sustained(y, sp->n, sp->stride, g.bytes_per_iteration);
        uint64_t total = d->total > d->baseline_used ? d->total - d->baseline_used : 0;
        growth_room gr = rooms_of(total, device_need(s, d));
        rooms[i] = (dev_room){d->id, gr.alloc, g.live_bytes};
        int64_t at = project_reserved(sp, t->iterations, gr, &g, d->growth->res_samples[sp->slot]);
        if (at >= 0 && (t->projected_oom_iteration < 0 || at < t->projected_oom_iteration)) {
            t->projected_oom_iteration = at;
            t->projected_oom_device = d->id;
            *room = rooms[i].room;
            *live = rooms[i].live;
        }
    }
    return true;
}

/* The device each stack's live allocations are on (-2: several), in a map
 * of stack id -> site_device, over the live allocations at the end. */
typedef struct site_device {
    uint64_t key; /* stack id */
    int32_t device;
} site_device;

static void site_devices(vr_state *s, vr_map *out)
{
    vr_map_init(out, sizeof(site_device));
    size_t i = 0;
    for (const vr_live *l; (l = vr_map_next(&s->live, &i));) {
        if (l->device < 0 || !l->stack)
            continue;
        bool created;
        site_device *e = vr_map_put(out, l->stack, &created);
        e->device = created || e->device == l->device ? l->device : -2;
    }
}

/* A growing site's room and live bytes: its device's (rooms[0..n)) when
 * its live allocations are on one device, else the first to run out's. */
static const dev_room *site_room(const vr_map *devs, uint32_t stack, const dev_room *rooms,
                                 uint32_t n, const dev_room *first)
{
    const site_device *e = vr_map_get(devs, stack);
    for (uint32_t i = 0; e && i < n; i++)
        if (rooms[i].id == e->device)
            return &rooms[i];
    return first;
}

/* A projection that counts a stream-ordered pool's free reserve says how
 * far to trust it: the reserve grows in irregular steps as kept allocations
 * split it (tests/pytorch/projection_random.py). Only where a pool held
 * some: a device's empty pool is sampled too (at every failed cudaMalloc),
 * and then there is no reserve to count. */
static void note_pool_projection(vr_state *s)
{
    size_t i = 0;
    for (const vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        if (!d->pool_sampled || !d->pool_reserved_peak || !d->growth)
            continue;
        vr_state_note(s,
                      "the growth projection counts the free reserve of device %d's "
                      "stream-ordered pool, which grows in irregular steps as kept allocations "
                      "split it: a trend, not a bound (PyTorch's cudaMallocAsync backend in "
                      "tests: from 40 %% of the steps, a third early to twice as late; from a "
                      "run that ran out, mostly within 3 %%, up to 16 %% late on runs of a few "
                      "dozen steps)",
                      d->id);
        return;
    }
}

/* Whether the projection is withheld: call-site-pattern iterations, and a
 * growth device's memory came from a stream-ordered pool, whose free
 * reserve the recorder samples at NVTX range ends only (not at this
 * pattern's iteration ends: it does not know them), so the device memory
 * the run takes is not known where the fit needs it. PyTorch's
 * cudaMallocAsync backend without NVTX ranges projected 4 to 50 times the
 * step it ran out in (seeds of tests/pytorch/projection_random.py, the
 * loop without its range); with the note, the way to a projection. */
static bool pool_unsampled(vr_state *s)
{
    if (!pattern_iterations(s))
        return false;
    for (uint32_t i = 0; i < s->ngrowth_devices; i++) {
        const vr_devstate *d = vr_growth_device(s, i);
        if (d->pool_allocs) {
            vr_state_note(s,
                          "no out of memory is projected: device %d's memory comes from a "
                          "stream-ordered pool (cudaMallocAsync), whose free reserve vramtrace "
                          "samples at the end of each NVTX range, and this run's iterations are "
                          "a call-site pattern, not NVTX ranges; mark each step with an NVTX "
                          "range (torch.cuda.nvtx.range, nvtxRangePush) for a projection",
                          d->id);
            return true;
        }
    }
    return false;
}

/* The projection of the total growth withheld (pool_unsampled); the sites'
 * are where they are fitted. */
static void withhold_total(vr_report *r)
{
    r->growth_unprojected = true;
    r->total_growth.projected_oom_iteration = -1;
    r->total_growth.projected_oom_device = -1;
}

static void build_growth(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    const vr_sampler *sp = vr_growth_sampler(s);
    const vr_level *lv = vr_growth_level(s);
    bool numbered = false;
    r->iteration_name = lv ? vr_range_key_name(s, lv->iter_name, &numbered) : "";
    r->iteration_numbered = numbered;
    r->iteration_parent = lv ? iteration_parent(s, lv) : "";
    r->iteration_kind = !sp ? "" : lv ? "nvtx_range" : "call_site";
    if (sp == &s->pat)
        r->iteration_site = vr_symbolize(sy, s->pat_anchor);
    r->total_growth = (vr_growth){.projected_oom_iteration = -1, .projected_oom_device = -1};
    r->host_growth = r->total_growth;
    r->growth_sites_capped = s->sampled_sites_capped;
    if (!sp)
        return; /* no iterations: no growth, no projection */
    r->iterations = sp->ticks;
    /* out of memory comes when what iterations leave live plus what one
     * needs while it runs no longer fits */
    growth_room all = rooms_of(device_headroom(s), iteration_need(s));
    uint64_t room = all.alloc;
    uint64_t total_live = sp->n ? s->total_samples[sp->slot][sp->n - 1] : 0;
    r->total_growth = fit_growth(s->total_samples[sp->slot], sp, r->iterations, room, total_live);
    r->total_growth.projected_oom_iteration =
        project_reserved(sp, r->iterations, all, &r->total_growth, s->reserved_samples[sp->slot]);
    r->host_growth = fit_growth(s->host_samples[sp->slot], sp, r->iterations, 0, 0);
    if (r->growth_sites_capped)
        r->growth_analysed = analysed_growth(s, sp);
    dev_room rooms[VR_MAX_GROWTH_DEVICES];
    bool per_device = project_per_device(s, sp, &r->total_growth, rooms, &room, &total_live);
    bool unsampled = pool_unsampled(s);
    if (unsampled)
        withhold_total(r);
    else if (r->total_growth.projected_oom_iteration >= 0)
        note_pool_projection(s);
    if (sp->n < 3)
        return;
    /* each site's projection: against its device's room, else the first
     * device to run out */
    const dev_room first = {-1, room, total_live};
    vr_map devs;
    site_devices(s, &devs);
    size_t ngroups, n = 0;
    growth_group *groups = growth_groups(s, sy, sp, &ngroups);
    vr_growth *out = vr_alloc(s->arena, (ngroups ? ngroups : 1) * sizeof(vr_growth));
    for (size_t k = 0; k < ngroups; k++) {
        const dev_room *dr =
            per_device ? site_room(&devs, groups[k].raw, rooms, s->ngrowth_devices, &first)
                       : &first;
        vr_growth x = fit_growth(groups[k].samples, sp, r->iterations, dr->room, dr->live);
        if (x.bytes_per_iteration < 1.0 || (x.r2 < 0.5 && !x.sustained))
            continue;
        x.stack = groups[k].st;
        x.cache_of = groups[k].cache_of;
        if (unsampled)
            x.projected_oom_iteration = -1;
        out[n++] = x;
    }
    free(groups);
    vr_map_destroy(&devs);
    if (n)
        qsort(out, n, sizeof(vr_growth), cmp_growth);
    r->growth = out;
    r->ngrowth = n;
}

/* ---- devices and timeline -------------------------------------------------- */

static int cmp_device(const void *a, const void *b)
{
    const vr_device *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void build_device(vr_state *s, vr_devstate *d, vr_device *o)
{
    o->id = d->id;
    o->name = vr_strdup(s->arena, d->name ? d->name : "");
    o->total_bytes = d->total;
    o->baseline_bytes = d->have_baseline ? d->baseline_used : 0;
    o->peak_allocated = d->peak_alloc;
    o->peak_allocated_t_ns = vr_rel_ns(s, d->peak_alloc_t);
    o->peak_reserved = d->peak_res;
    o->peak_reserved_t_ns = vr_rel_ns(s, d->peak_res_t);
    o->pool_reserved_peak = d->pool_reserved_peak;
    o->pool_reserved_peak_t_ns = d->pool_reserved_peak_t;
    o->captured_at_peak = d->captured_at_peak;
    o->captured_at_exit = d->captured;
    o->graph_at_peak = d->graph_at_peak;
    o->graph_at_exit = d->graph;
    vr_point *p = vr_alloc(s->arena, (2 * d->nbuckets + 1) * sizeof(vr_point));
    size_t n = 0;
    for (size_t i = 0; i < d->nbuckets; i++) {
        const vr_bucket *b = &d->buckets[i];
        p[n++] = (vr_point){b->t_max, b->max_alloc, b->max_res};
        /* also at the max's time: one event that frees several allocations
         * (a cuMemUnmap of several released handles) leaves its bucket's
         * max and its last state at one time; the last was dropped, and a
         * device's timeline ended above what it held at exit
         * (corpus.vmm_random, check_ledger.py's timeline check) */
        if (b->t_last != b->t_max || b->last_alloc != b->max_alloc || b->last_res != b->max_res)
            p[n++] = (vr_point){b->t_last, b->last_alloc, b->last_res};
    }
    o->timeline = p;
    o->ntimeline = n;
}

/* The hover point at the exact peak: the largest sites of the peak's
 * composition (r->sites, merged by symbolized stack). */
static vr_hover peak_hover(const vr_report *r)
{
    vr_hover h = {.t_ns = r->peak_allocated_t_ns, .allocated = r->peak_allocated};
    for (size_t k = 0; k < VR_HOVER_SITES && k < r->nsites; k++) {
        h.stack[k] = r->sites[k].stack;
        h.bytes[k] = r->sites[k].bytes;
        h.names[k] = r->sites[k].names;
        h.n++;
    }
    return h;
}

/* The hover samples with their stacks symbolized, and the peak's own point
 * in its place in time (the samples miss it unless it opened a window). */
static void build_hover(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    vr_hover *h = vr_alloc(s->arena, (s->nhover + 2) * sizeof(vr_hover));
    size_t n = 0;
    bool peak = r->peak_allocated == 0;
    for (size_t i = 0; i < s->nhover; i++) {
        const vr_hover_raw *raw = &s->hover[i];
        if (!peak && raw->t_rel >= r->peak_allocated_t_ns) {
            h[n++] = peak_hover(r);
            peak = true;
            if (raw->t_rel == r->peak_allocated_t_ns)
                continue;
        }
        h[n] = (vr_hover){.t_ns = raw->t_rel, .allocated = raw->allocated};
        for (size_t k = 0; k < VR_HOVER_SITES && raw->bytes[k]; k++) {
            h[n].stack[k] = vr_symbolize(sy, raw->stack[k]);
            h[n].bytes[k] = raw->bytes[k];
            h[n].names[k] = site_names(s, raw->stack[k]);
            h[n].n++;
        }
        n++;
    }
    if (!peak)
        h[n++] = peak_hover(r);
    r->hover = h;
    r->nhover = n;
}

static void build_devices(vr_state *s, vr_report *r)
{
    vr_device *out = vr_alloc(s->arena, (s->devices.len + 1) * sizeof(vr_device));
    size_t n = 0, i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));)
        if (d->id >= 0)
            build_device(s, d, &out[n++]);
    if (n)
        qsort(out, n, sizeof(vr_device), cmp_device);
    r->devices = out;
    r->ndevices = n;
}

/* ---- OOMs -------------------------------------------------------------------- */

static bool same_frame(const vr_frame *x, const vr_frame *y)
{
    char b1[64], b2[64];
    return !strcmp(vr_frame_label(x, b1, sizeof b1), vr_frame_label(y, b2, sizeof b2));
}

/* Leading (leaf-side) frames every top site of o shares: an allocator's own
 * frames (ga_malloc < alloc_tensor < tr_new), which name no site apart. 0
 * with fewer than two sites. */
static size_t shared_frames(const vr_oom *o)
{
    if (o->ntop_sites < 2)
        return 0;
    size_t n = o->top_sites[0].stack.n;
    for (size_t k = 1; k < o->ntop_sites; k++) {
        n = vr_shared_frames(&o->top_sites[0].stack, &o->top_sites[k].stack, n, same_frame);
    }
    return n;
}

/* "leaf < caller < caller" (up to 4 functions): names call sites that share
 * an allocator entry point apart. With `shared` common leaf-side frames
 * (shared_frames) beyond the first two, the middle ones are elided:
 * "leaf < ... < last shared < first distinct < ...". A stack with Python
 * frames starts at its lead frame (the program's line). */
static const char *site_name(vr_arena *a, const vr_stack *st, size_t shared)
{
    if (!st->n)
        return "(no stack)";
    char *out = "";
    const char *prev = NULL;
    for (size_t i = st->lead, k = 0; i < st->n && k < 4; i++) {
        if (i == 1 && shared > 2 && !st->lead) {
            i = shared - 1;
            out = vr_sprintf(a, "%s < ...", out);
        }
        char buf[512];
        const vr_frame *fr = &st->frames[i];
        if (prev && !strcmp(prev, vr_frame_label(fr, buf, sizeof buf)))
            continue;
        const char *fn = vr_frame_name(fr, buf, sizeof buf);
        out = vr_sprintf(a, "%s%s%s", out, k ? " < " : "", fn);
        prev = fr->function;
        k++;
    }
    return out;
}

static char *dominant(vr_arena *a, const vr_oom *o)
{
    char *out = "";
    char b1[32];
    uint64_t live = o->live_allocated ? o->live_allocated : 1;
    size_t shared = shared_frames(o);
    for (size_t i = 0; i < o->ntop_sites && i < 3; i++) {
        const vr_site *t = &o->top_sites[i];
        out = vr_sprintf(a, "%s%s%s (%s, %.0f%%)", out, i ? ", " : "",
                         site_name(a, &t->stack, shared), vr_format_size(t->bytes, b1, sizeof b1),
                         100.0 * (double)t->bytes / (double)live);
    }
    return out;
}

/* The dominant sites' words where a verdict's sentence needs a noun. */
static const char *dominant_or_none(const char *dom)
{
    return dom[0] ? dom : "nothing recorded";
}

/* The capacity explanation's suggested batch (see vr_oom.batch_kind). An
 * upper bound is never worded as a batch that fits: it comes with the
 * commands that measure one (a second run, then vr_batch_advise on both). */
static const char *batch_advice(vr_arena *a, const vr_report *r, const vr_oom *o, const char *e)
{
    char b1[32], b2[32];
    if (o->max_batch < 0)
        return e;
    if (!strcmp(o->batch_kind, "upper_bound")) {
        int64_t next = o->max_batch / 2 > 0 ? o->max_batch / 2 : 1;
        return vr_sprintf(
            a,
            "%s; at --batch %lld no training step completed, so no batch is known to fit: "
            "batches above %lld cannot fit (an upper bound: this step's live data and request, "
            "scaled to the batch, already exceed the device, and the full step needs more); to "
            "measure the largest batch that fits, record a run at a smaller batch and report "
            "both traces: %s && vramtrace report %s batch%lld.vtrace",
            e, (long long)o->batch, (long long)o->max_batch,
            vr_batch_command(a, r->argv, r->argc, next), r->path, (long long)next);
    }
    return vr_sprintf(
        a,
        "%s; at --batch %lld the largest batch that fits is estimated at about %lld (from a "
        "completed step: %s that does not scale with the batch + %s per sample; a caching "
        "allocator's memory is a step function of the batch, so confirm it with a run: %s && "
        "vramtrace report %s batch%lld.vtrace)",
        e, (long long)o->batch, (long long)o->max_batch,
        vr_format_size(o->batch_fixed_bytes, b1, sizeof b1),
        vr_format_size(o->batch_per_sample_bytes, b2, sizeof b2),
        vr_batch_command(a, r->argv, r->argc, o->max_batch), r->path, (long long)o->max_batch);
}

/* What a failed allocation's error code (not out of memory) means, where the
 * runtime's and the driver's codes agree (driver_types.h cudaError, cuda.h
 * CUresult); "" otherwise. */
static const char *error_meaning(int32_t error)
{
    switch (error) {
    case 1:
        return " (invalid value: an argument was refused)";
    case 3:
        return " (initialization error: CUDA was not, or could not be, initialised in this "
               "process; the driver API's calls fail so before cuInit)";
    case 100:
        return " (no CUDA device)";
    case 101:
        return " (invalid device ordinal)";
    case 700:
        return " (illegal address: an earlier kernel faulted and the context is lost, so "
               "every later call fails)";
    case 712:
        return " (host memory already registered)";
    case 713:
        return " (host memory not registered)";
    case 719:
        return " (launch failure: an earlier kernel failed and the context is lost)";
    case 900:
        return " (operation not permitted when a stream is capturing: the allocation was made "
               "while a CUDA graph was being captured in the global or thread-local mode, which "
               "forbids it, and that capture is now invalidated; allocate before the capture, or "
               "capture in cudaStreamCaptureModeRelaxed as PyTorch's allocator does)";
    case 901:
        return " (a stream capture was invalidated by an earlier forbidden call)";
    default:
        return "";
    }
}

/* What the initialisation error means in a process forked without exec: a
 * child of a process that had initialised CUDA cannot use it (NVIDIA: CUDA
 * is not fork-safe; every call of such a child fails with error 3, cuInit
 * included; sim/README.md "Fork"). "" elsewhere. */
static const char *fork_words(vr_arena *a, const vr_report *r, int32_t error)
{
    if (error != 3 || !r->forked)
        return "";
    return vr_sprintf(a,
                      "; this process was forked without exec%s, and a child forked after its "
                      "parent initialised CUDA cannot use it: start it with exec (Python "
                      "multiprocessing's \"spawn\" or \"forkserver\" start method) or make "
                      "the parent's first CUDA call after its forks",
                      r->ppid ? vr_sprintf(a, " (from pid %" PRIu32 ")", r->ppid) : "");
}

/* A leak's failure where the allocator's free reserve (a caching
 * allocator's free blocks, a stream-ordered pool's reserve) is at least half
 * the live bytes yet holds no piece of the request: what is kept splits it,
 * and the device filled with much less live than it holds (PyTorch's
 * cudaMallocAsync backend keeping 2.7 MiB a step beside 60 MiB temporaries:
 * 455 MiB live on a 2 GiB device, 1.2 GiB in the pool's reserve). "" when
 * not so. */
static const char *split_reserve(vr_arena *a, const vr_oom *o)
{
    if (o->heap_free < o->requested_bytes || o->heap_free < o->live_allocated / 2 ||
        o->heap_largest_free >= o->requested_bytes)
        return "";
    char b1[32], b2[32], b3[32];
    return vr_sprintf(a,
                      ", and what is kept splits the %s: it held %s free but no piece of the "
                      "%s requested, so the device filled with only %s live",
                      o->has_pool ? "pool's reserve" : "cached blocks",
                      vr_format_size(o->heap_free, b1, sizeof b1),
                      vr_format_size(o->requested_bytes, b2, sizeof b2),
                      vr_format_size(o->live_allocated, b3, sizeof b3));
}

/* The explanation of a failure with another error than out of memory. */
static const char *explain_error(vr_arena *a, const vr_report *r, const vr_oom *o)
{
    char b1[32];
    const char *e = vr_sprintf(a,
                               "not out of memory: the call failed with error %d%s, not the "
                               "out-of-memory error (2: cudaErrorMemoryAllocation, "
                               "CUDA_ERROR_OUT_OF_MEMORY)%s",
                               o->error, error_meaning(o->error), fork_words(a, r, o->error));
    if (o->device < 0 || !o->free_known) /* host memory, or no answer from the device */
        return e;
    return vr_sprintf(a, "%s; the device had %s free", e,
                      vr_format_size(o->device_free_bytes, b1, sizeof b1));
}

static const char *explain_verdict(vr_arena *a, const vr_report *r, const vr_oom_raw *raw,
                                   const vr_oom *o);

/* The verdict's explanation; a failed VMM handle creation that ended a
 * mapping's run of pages says how much of the mapping was made before it. */
static const char *explain(vr_arena *a, const vr_report *r, const vr_oom_raw *raw, const vr_oom *o)
{
    const char *e = explain_verdict(a, r, raw, o);
    char b1[32], b2[32];
    if (!o->mapping_bytes || o->verdict == VR_VERDICT_ERROR)
        return e;
    return vr_sprintf(a,
                      "%s; this call is one page of a mapping: %s of pages were created for it "
                      "before this one failed, not yet mapped (counted in the live data), so "
                      "the mapping needed at least %s (PyTorch's expandable segments create a "
                      "request's pages one by one, then map them)",
                      e, vr_format_size(o->mapping_bytes, b1, sizeof b1),
                      vr_format_size(o->mapping_bytes + o->requested_bytes, b2, sizeof b2));
}

/* The request of a capacity failure as its text gives it: its size, and
 * the device memory the driver takes for it (vr_driver_rounded) where only
 * that makes live data + the request + the use outside the recording
 * exceed the device (a 15.50 MiB cudaMalloc with 15.85 MiB free fails: the
 * driver takes 16 MiB; the text's sum fell short of the device). */
static const char *request_words(vr_arena *a, const vr_oom *o)
{
    char b1[32], b2[32];
    uint64_t need = o->live_allocated + o->baseline_bytes + o->external_bytes;
    uint64_t req = o->requested_bytes, taken = vr_driver_rounded(req);
    vr_format_size(req, b1, sizeof b1);
    if (o->device < 0 || !o->device_total_bytes || need + req > o->device_total_bytes ||
        need + taken <= o->device_total_bytes)
        return vr_sprintf(a, "%s", b1);
    return vr_sprintf(a, "%s, %s as the driver allocates it", b1,
                      vr_format_size(taken, b2, sizeof b2));
}

/* The external verdict's words: the device's free bytes below what the
 * recording leaves. dom: the dominant sites' words. */
static const char *explain_external(vr_arena *a, const vr_oom *o, const char *dom)
{
    char b1[32], b2[32], b3[32], b4[32];
    return vr_sprintf(a,
                      "the device reported %s free where the recording leaves %s: %s more "
                      "are used outside what was recorded than at the start (other "
                      "processes, untracked libraries; %s outside the recording in all); "
                      "recorded live data: %s",
                      vr_format_size(o->device_free_bytes, b1, sizeof b1),
                      vr_format_size(o->device_free_bytes + o->external_bytes, b2, sizeof b2),
                      vr_format_size(o->external_bytes, b3, sizeof b3),
                      vr_format_size(o->baseline_bytes + o->external_bytes, b4, sizeof b4), dom);
}

/* The fragmentation verdict's words: a stream-ordered pool's, the pools'
 * held reserve, or the registered heaps' free blocks (oom.c decides which). */
static const char *explain_fragmentation(vr_arena *a, const vr_oom *o, const char *dom)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    if (o->has_pool)
        return vr_pool_explain(a, o, dom);
    if (o->pools_free_bytes)
        return vr_pools_held_explain(a, o, dom);
    if (o->heap_largest_free >= o->requested_bytes) /* oom.c: a block not taken */
        return vr_sprintf(
            a,
            "the registered heaps hold %s free, among them a block of %s, no smaller than "
            "the %s requested, which the allocator did not take for this request (a "
            "caching allocator keeps pools of its own: PyTorch's small and large requests, "
            "streams), and the device had %s free: the cache holds free memory this "
            "request could not use; live data: %s",
            vr_format_size(o->heap_free, b1, sizeof b1),
            vr_format_size(o->heap_largest_free, b2, sizeof b2),
            vr_format_size(o->requested_bytes, b3, sizeof b3),
            vr_format_size(o->device_free_bytes, b4, sizeof b4), dom);
    if (o->heap_free < o->requested_bytes) /* oom.c: with the device's free bytes */
        return vr_sprintf(
            a,
            "the device had %s free and the registered heaps %s in free blocks (the "
            "largest %s): together %s for the %s requested, but no piece is large enough: "
            "the cache holds free memory the device lacks (PyTorch: reserved but "
            "unallocated); live data: %s",
            vr_format_size(o->device_free_bytes, b1, sizeof b1),
            vr_format_size(o->heap_free, b2, sizeof b2),
            vr_format_size(o->heap_largest_free, b3, sizeof b3),
            vr_format_size(o->device_free_bytes + o->heap_free, b4, sizeof b4),
            vr_format_size(o->requested_bytes, b5, sizeof b5), dom);
    return vr_sprintf(a,
                      "the registered heaps hold %s free but the largest free block is %s, "
                      "smaller than the %s requested: the cache is fragmented; live data: %s",
                      vr_format_size(o->heap_free, b1, sizeof b1),
                      vr_format_size(o->heap_largest_free, b2, sizeof b2),
                      vr_format_size(o->requested_bytes, b3, sizeof b3), dom);
}

/* The leak verdict's words: the growing site, its slope per iteration and
 * fit (raw: oom.c's regression), its share of the live bytes. */
static const char *explain_leak(vr_arena *a, const vr_oom_raw *raw, const vr_oom *o,
                                const char *dom)
{
    char b1[32], b2[32];
    return vr_sprintf(a,
                      "%s grows by %s per iteration (R^2 = %.3f) and holds %.0f%% of the %s "
                      "live: memory is retained across iterations%s; live data: %s",
                      o->ntop_sites ? site_name(a, &o->top_sites[0].stack, shared_frames(o))
                                    : "a call site",
                      vr_format_size(vr_u64_sat(raw->leak_slope), b1, sizeof b1), raw->leak_r2,
                      o->ntop_sites && o->live_allocated
                          ? 100.0 * (double)o->top_sites[0].bytes / (double)o->live_allocated
                          : 0.0,
                      vr_format_size(o->live_allocated, b2, sizeof b2), split_reserve(a, o), dom);
}

/* The capacity verdict of pinned host memory: the host refused it. */
static const char *explain_host_capacity(vr_arena *a, const vr_oom *o, const char *dom)
{
    char b1[32], b2[32];
    return vr_sprintf(a,
                      "pinned host memory: %s of it live (recorded) and the request (%s) "
                      "could not be page-locked: pinned memory is host RAM, and %s "
                      "refused more; the device has no part in it; dominated by %s",
                      vr_format_size(o->live_allocated, b1, sizeof b1),
                      vr_format_size(o->requested_bytes, b2, sizeof b2),
                      o->host_pool ? "the host pool's maximum size "
                                     "(cudaMemPoolProps.maxSize, which the driver does "
                                     "not report) or the host (its free memory, a "
                                     "container's limit)"
                                   : "the host (its free memory, a container's limit)",
                      dominant_or_none(dom));
}

/* The capacity verdict of a request larger than the whole device: the live
 * data is named as what it is, no part of the cause (the sum with it read as
 * if freeing the dominant sites could help). */
static const char *explain_above_device(vr_arena *a, const vr_oom *o, const char *dom)
{
    char b1[32], b2[32], b3[32];
    const char *e = vr_sprintf(a,
                               "the request (%s) alone exceeds the whole device (%s): it cannot "
                               "fit whatever is freed",
                               vr_format_size(o->requested_bytes, b1, sizeof b1),
                               vr_format_size(o->device_total_bytes, b2, sizeof b2));
    if (!o->live_allocated || !dom[0])
        return vr_sprintf(a, "%s; no recorded allocation was live", e);
    return vr_sprintf(a, "%s; live data at the failure, no part of the cause: %s, dominated by %s",
                      e, vr_format_size(o->live_allocated, b3, sizeof b3), dom);
}

/* The capacity verdict's words: live data, the request and what is used
 * outside the recording against the device's size, then the batch advice. */
static const char *explain_capacity(vr_arena *a, const vr_report *r, const vr_oom *o,
                                    const char *dom)
{
    if (o->device < 0)
        return explain_host_capacity(a, o, dom);
    if (vr_pool_at_limit(o))
        return vr_pool_limit_explain(a, o, dom);
    if (o->device_total_bytes && o->requested_bytes > o->device_total_bytes)
        return batch_advice(a, r, o, explain_above_device(a, o, dom));
    char b1[32], b3[32], b4[32], b5[32], b6[32], b7[32];
    const char *e = vr_sprintf(
        a,
        "live data (%s) + the request (%s)%s exceed the device (%s, %s of it used outside "
        "the recording: %s in use at the start, %s since%s%s%s); dominated by %s",
        vr_format_size(o->live_allocated, b1, sizeof b1), request_words(a, o),
        vr_graph_pool_addend(a, o),
        o->device_total_bytes ? vr_format_size(o->device_total_bytes, b3, sizeof b3)
                              : "size unknown",
        vr_format_size(o->baseline_bytes + o->external_bytes, b4, sizeof b4),
        vr_format_size(o->baseline_bytes, b5, sizeof b5),
        vr_format_size(o->external_bytes, b6, sizeof b6),
        o->rounding_bytes ? ", of which up to " : "",
        o->rounding_bytes ? vr_format_size(o->rounding_bytes, b7, sizeof b7) : "",
        o->rounding_bytes ? " is the driver's rounding of the recorded allocations to its "
                            "granularity"
                          : "",
        dominant_or_none(dom));
    e = vr_sprintf(a, "%s%s", e, vr_graph_pool_clause(a, o));
    return batch_advice(a, r, o, e);
}

static const char *explain_verdict(vr_arena *a, const vr_report *r, const vr_oom_raw *raw,
                                   const vr_oom *o)
{
    if (o->verdict == VR_VERDICT_ERROR)
        return explain_error(a, r, o);
    const char *dom = dominant(a, o);
    switch (o->verdict) {
    case VR_VERDICT_EXTERNAL:
        return explain_external(a, o, dom);
    case VR_VERDICT_FRAGMENTATION:
        return explain_fragmentation(a, o, dom);
    case VR_VERDICT_LEAK:
        return explain_leak(a, raw, o, dom);
    case VR_VERDICT_CAPACITY:
    default:
        return explain_capacity(a, r, o, dom);
    }
}

static int cmp_site_bytes(const void *a, const void *b)
{
    const vr_site *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Merge the failure's top sites whose stacks symbolize alike (one logical
 * call site recorded under several raw stacks), largest first after the
 * first `keep` (the leaking site leads a leak verdict). Returns the new count.
 * Only the raw top sites are merged: a part of a site outside them is not
 * added. */
static size_t merge_top(vr_site *t, size_t n, size_t keep)
{
    size_t m = 0;
    for (size_t i = 0; i < n && i < 8; i++) {
        size_t j = 0;
        while (j < m && vr_stack_order(&t[j].stack, &t[i].stack))
            j++;
        if (j < m) {
            t[j].bytes += t[i].bytes;
            t[j].count += t[i].count;
            continue;
        }
        t[m++] = t[i];
    }
    if (m > keep)
        qsort(t + keep, m - keep, sizeof(vr_site), cmp_site_bytes);
    return m;
}

static void build_ooms(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    vr_oom *out = vr_alloc(s->arena, (s->nooms ? s->nooms : 1) * sizeof(vr_oom));
    for (size_t i = 0; i < s->nooms; i++) {
        const vr_oom_raw *raw = &s->ooms[i];
        vr_oom *o = &out[i];
        *o = raw->o;
        o->stack = vr_symbolize(sy, raw->stack);
        o->range = vr_strdup(s->arena, vr_state_string(s, raw->range));
        vr_site *t = vr_alloc(s->arena, (raw->ntop ? raw->ntop : 1) * sizeof(vr_site));
        for (size_t k = 0; k < raw->ntop; k++) {
            t[k].stack = vr_symbolize(sy, (uint32_t)raw->top_keys[k]);
            t[k].range = "";
            t[k].bytes = raw->top_bytes[k];
            t[k].count = raw->top_counts[k];
        }
        o->top_sites = t;
        if (o->verdict == VR_VERDICT_LEAK && !raw->sizes_repeat && raw->ntop &&
            vr_cache_holder(&t[0].stack))
            o->verdict = VR_VERDICT_CAPACITY; /* its growth may be cache: vr_sizes_repeat */
        o->ntop_sites = merge_top(t, raw->ntop, o->verdict == VR_VERDICT_LEAK);
        o->explanation = explain(s->arena, r, raw, o);
    }
    r->ooms = out;
    r->nooms = s->nooms;
    size_t f = vr_fatal_oom(r);
    vr_oom_group(out, s->nooms, f);
    if (f != SIZE_MAX && s->ooms[f].all) { /* its every live site, for the diff */
        const vr_oom_raw *raw = &s->ooms[f];
        vr_site *t = vr_alloc(s->arena, (raw->nall ? raw->nall : 1) * sizeof(vr_site));
        for (size_t k = 0; k < raw->nall; k++)
            t[k] = (vr_site){.stack = vr_symbolize(sy, (uint32_t)raw->all[k][0]),
                             .range = "",
                             .names = "",
                             .bytes = raw->all[k][1]};
        out[f].all_sites = t;
        out[f].nall_sites = raw->nall;
        out[f].all_sites_cut = raw->all_cut;
    }
}

/* ---- the rest ------------------------------------------------------------------ */

static void build_header(vr_state *s, vr_report *r)
{
    const vt_header *h = s->hdr;
    r->pid = h->pid;
    r->ppid = h->ppid;
    r->start_mono_ns = h->start_mono_ns;
    r->run_id = vr_strdup(s->arena, h->run_id && vt_run_id_valid(h->run_id) ? h->run_id : "");
    r->forked = (h->flags & VT_HDR_CHILD_AFTER_FORK) != 0;
    r->host = vr_strdup(s->arena, h->host);
    r->program = vr_strdup(s->arena, h->program);
    r->vramtrace_version = vr_strdup(s->arena, h->vramtrace_version);
    r->records_failed_frees = h->format_version >= 12; /* VT_REC_FREE_FAILED */
    r->start_wall_ns = h->start_wall_ns;
    size_t argc = h->argv ? h->argc : 0;
    const char **argv = vr_alloc(s->arena, (argc + 1) * sizeof(char *));
    for (size_t i = 0; i < argc; i++)
        argv[i] = vr_strdup(s->arena, h->argv[i]);
    r->argv = argv;
    r->argc = argc;
    r->duration_ns = vr_rel_ns(s, s->t_last);
}

/* The last device activity (timeline point or failed allocation), ns since
 * the trace's start; the last event when there was none. */
static uint64_t last_activity(const vr_state *s)
{
    uint64_t last = 0;
    size_t i = 0;
    const vr_devstate *d;
    while ((d = vr_map_next(&s->devices, &i)))
        if (d->nbuckets && d->buckets[d->nbuckets - 1].t_last > last)
            last = d->buckets[d->nbuckets - 1].t_last;
    for (size_t k = 0; k < s->nooms; k++)
        if (s->ooms[k].o.t_ns > last)
            last = s->ooms[k].o.t_ns;
    return last ? last : vr_rel_ns(s, s->t_last);
}

/* Top-level range spans: the completed ones, then those still open at the
 * end of the trace (the iteration that failed and ended the program), shown
 * up to the last device activity (not through the program's exit). */
static void build_spans(vr_state *s, vr_report *r)
{
    size_t cap = s->nspans + s->threads.len;
    vr_range_span *sp = vr_alloc(s->arena, (cap ? cap : 1) * sizeof(vr_range_span));
    size_t n = 0, i = 0;
    uint64_t end = last_activity(s);
    for (; n < s->nspans; n++) {
        sp[n] = s->spans[n];
        sp[n].name = vr_strdup(s->arena, vr_state_string(s, (uint32_t)(uintptr_t)s->spans[n].name));
    }
    const vr_thread *t;
    while ((t = vr_map_next(&s->threads, &i)) && n < VR_MAX_SPANS) {
        if (!t->depth)
            continue;
        uint64_t start = vr_rel_ns(s, t->stack_ts[0]);
        sp[n++] = (vr_range_span){start, end > start ? end : start,
                                  vr_strdup(s->arena, vr_state_string(s, (uint32_t)t->stack[0]))};
    }
    r->spans = sp;
    r->nspans = n;
}

static void build_misc(vr_state *s, vr_report *r)
{
    r->has_end = s->has_end;
    r->had_captures = s->had_captures;
    r->had_graph_memory = s->had_graph_memory;
    r->exit_status = s->exit_status;
    r->exit_signal = s->exit_signal;
    r->exit_reason = vr_strdup(s->arena, s->exit_reason);
    r->allocations = s->allocations;
    r->frees = s->frees;
    r->failed_allocations = s->failed;
    r->recovered_allocations = s->recovered;
    r->error_allocations = s->failed_error;
    r->unknown_frees = s->unknown_frees;
    r->events = s->events;
    r->peak_allocated = s->peak_alloc;
    r->peak_allocated_t_ns = vr_rel_ns(s, s->peak_alloc_t);
    r->peak_reserved = s->peak_res;
    r->peak_reserved_t_ns = vr_rel_ns(s, s->peak_res_t);
    r->host_pinned_peak = s->host_pinned_peak;
    size_t nf = s->nfrags + (s->have_peak_frag ? 1 : 0);
    vr_frag *f = vr_alloc(s->arena, (nf ? nf : 1) * sizeof(vr_frag));
    size_t k = 0;
    if (s->have_peak_frag)
        f[k++] = s->peak_frag;
    for (size_t i = 0; i < s->nfrags; i++)
        f[k++] = s->frags[i];
    r->frag = f;
    r->nfrag = k;
    build_spans(s, r);
    vr_nvtx_build(s, r);
}

static void build_notes(vr_state *s, vr_report *r)
{
    if (!s->has_end && !r->truncated)
        vr_state_note(s, "no end-of-process record: the program was killed or the recorder "
                         "stopped early; leaks are the allocations live at the end of the trace");
    if (s->unknown_frees)
        vr_state_note(s, "%llu frees of addresses with no recorded allocation",
                      (unsigned long long)s->unknown_frees);
    const char **n = vr_alloc(s->arena, (s->nnotes + 1) * sizeof(char *));
    for (size_t i = 0; i < s->nnotes; i++)
        n[i] = vr_strdup(s->arena, s->notes[i]);
    r->notes = n;
    r->nnotes = s->nnotes;
}

void vr_build_model(vr_state *s, vr_report *r, const vr_options *opt)
{
    if (s->peak_pending)
        vr_snapshot_peak(s); /* the trace ended at its peak */
    vr_hover_flush(s);
    vr_symbolizer *sy =
        vr_symbolizer_new(s, opt && opt->no_symbols, opt && opt->native, opt && opt->trace_symbols);
    build_header(s, r);
    build_misc(s, r);
    build_devices(s, r);
    r->sites = peak_counters(s, sy, &s->sites, false, &r->sites_left_out, &r->nsites);
    vr_phases_sum(s);
    r->phases = peak_counters(s, sy, &s->phases, true, &r->phases_left_out, &r->nphases);
    build_range_sites(s, sy, r);
    build_hover(s, sy, r);
    build_leaks(s, sy, r);
    vr_acct_build(s, r);
    build_growth(s, sy, r);
    build_ooms(s, sy, r);
    vr_free_failed_build(s, sy, r);
    build_notes(s, r);
    vr_symbolizer_free(sy);
}
