/* diff.c: match the call sites of two runs by their symbolized frames and
 * compute per-site changes of peak, leaked, growth and OOM bytes.
 *
 * Like heaptrack_print --diff (heaptrack's docs: "Find the differences to
 * this file", it subtracts the costs of one run from the other per symbolized
 * call stack), sites are keyed by what the frames say (function, source file
 * name, line, module name), never by addresses, so runs of two builds match.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { M_PEAK, M_LEAK, M_GROWTH, M_OOM };

/* One (run, metric) contribution before merging. */
typedef struct entry {
    const char *key;
    const vr_stack *stack;
    int run;
    int metric;
    uint64_t bytes; /* M_PEAK, M_LEAK, M_OOM */
    double rate;    /* M_GROWTH: bytes per iteration */
} entry;

typedef struct entries {
    entry *v;
    size_t n, cap;
} entries;

/* The key of st: frames as "function\x1ffile-basename\x1fline\x1fmodule-basename\x1e". */
static char *site_key(const vr_stack *st)
{
    size_t len = 1;
    for (size_t i = 0; i < st->n; i++)
        len += strlen(st->frames[i].function) + strlen(st->frames[i].file) +
               strlen(st->frames[i].module) + 16;
    char *k = vr_xmalloc(len), *p = k;
    for (size_t i = 0; i < st->n; i++) {
        const vr_frame *f = &st->frames[i];
        p += sprintf(p, "%s\x1f%s\x1f%u\x1f%s\x1e", f->function, vr_basename(f->file), f->line,
                     vr_basename(f->module));
    }
    *p = 0;
    return k;
}

static void push(entries *e, const vr_stack *st, int run, int metric, uint64_t bytes, double rate)
{
    if (bytes == 0 && rate == 0)
        return;
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 256;
        e->v = vr_xrealloc(e->v, e->cap * sizeof *e->v);
    }
    e->v[e->n++] = (entry){site_key(st), st, run, metric, bytes, rate};
}

static void collect(entries *e, const vr_report *r, int run, bool *oom_partial)
{
    for (size_t i = 0; i < r->nsites; i++)
        push(e, &r->sites[i].stack, run, M_PEAK, r->sites[i].bytes, 0);
    for (size_t i = 0; i < r->nleaks; i++)
        if (!r->leaks[i].host && !r->leaks[i].cache_of) /* the report's leaks */
            push(e, &r->leaks[i].stack, run, M_LEAK, r->leaks[i].bytes, 0);
    for (size_t i = 0; i < r->ngrowth; i++)
        push(e, &r->growth[i].stack, run, M_GROWTH, 0, r->growth[i].bytes_per_iteration);
    size_t f = vr_fatal_oom(r);
    if (f == SIZE_MAX)
        return;
    const vr_oom *o = &r->ooms[f];
    const vr_site *sites = o->all_sites ? o->all_sites : o->top_sites;
    size_t n = o->all_sites ? o->nall_sites : o->ntop_sites;
    *oom_partial = !o->all_sites || o->all_sites_cut;
    for (size_t i = 0; i < n; i++)
        push(e, &sites[i].stack, run, M_OOM, sites[i].bytes, 0);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

/* a + b, saturated at the largest size (sites merged across 2^64 bytes). */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static void add(vr_diff_site *s, const entry *e)
{
    if (!s->stack.n || e->run == 1)
        s->stack = *e->stack;
    switch (e->metric) {
    case M_PEAK:
        s->peak[e->run] = add_sat(s->peak[e->run], e->bytes);
        break;
    case M_LEAK:
        s->leaked[e->run] = add_sat(s->leaked[e->run], e->bytes);
        break;
    case M_GROWTH:
        s->growth[e->run] += e->rate;
        break;
    default:
        s->oom[e->run] = add_sat(s->oom[e->run], e->bytes);
    }
}

static double absdiff(uint64_t a, uint64_t b)
{
    return a > b ? (double)(a - b) : (double)(b - a);
}

static void score(vr_diff_site *s, double iterations)
{
    double c = absdiff(s->peak[0], s->peak[1]);
    c = fmax(c, absdiff(s->leaked[0], s->leaked[1]));
    c = fmax(c, absdiff(s->oom[0], s->oom[1]));
    c = fmax(c, fabs(s->growth[1] - s->growth[0]) * iterations);
    s->change = c;
}

static int by_change(const void *a, const void *b)
{
    const vr_diff_site *x = a, *y = b;
    if (x->change != y->change)
        return x->change < y->change ? 1 : -1;
    uint64_t px = x->peak[0] + x->peak[1], py = y->peak[0] + y->peak[1];
    return px < py ? 1 : px > py ? -1 : 0;
}

/* Merge runs of equal keys into sites; counts the sites of one run only. */
static void merge(vr_diff *d, entries *e)
{
    d->sites = vr_xcalloc(e->n ? e->n : 1, sizeof *d->sites);
    double iters = (double)(d->run[0]->iterations > d->run[1]->iterations ? d->run[0]->iterations
                                                                          : d->run[1]->iterations);
    for (size_t i = 0; i < e->n;) {
        vr_diff_site *s = &d->sites[d->nsites++];
        bool seen[2] = {false, false};
        size_t j = i;
        for (; j < e->n && !strcmp(e->v[j].key, e->v[i].key); j++) {
            add(s, &e->v[j]);
            seen[e->v[j].run] = true;
        }
        if (seen[0] != seen[1])
            d->only[seen[1]]++;
        score(s, iters < 1 ? 1 : iters);
        i = j;
    }
    qsort(d->sites, d->nsites, sizeof *d->sites, by_change);
}

vr_diff *vr_diff_new(const vr_report *before, const vr_report *after)
{
    vr_diff *d = vr_xcalloc(1, sizeof *d);
    d->run[0] = before;
    d->run[1] = after;
    entries e = {0};
    collect(&e, before, 0, &d->oom_partial[0]);
    collect(&e, after, 1, &d->oom_partial[1]);
    for (int k = 0; k < 2; k++) {
        d->peak_partial[k] = d->run[k]->sites_left_out.stacks > 0;
        d->leak_partial[k] = d->run[k]->leaks_left_out.stacks > 0;
    }
    if (e.n)
        qsort(e.v, e.n, sizeof *e.v, by_key);
    merge(d, &e);
    for (size_t i = 0; i < e.n; i++)
        free((char *)e.v[i].key);
    free(e.v);
    return d;
}

void vr_diff_free(vr_diff *d)
{
    if (!d)
        return;
    free(d->sites);
    free(d);
}
