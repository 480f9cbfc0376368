/* repeats.c: which failed allocations and failed frees repeat a listed one
 * (counted on it, not listed again), and which listed entries (failures,
 * sites, leaks, growth, failed frees) read alike without being the same
 * call. "The same call" is one rule, the sites' merging order
 * (vr_stack_order, symbolize.c). docs/report.md, "Failed allocations",
 * "Failed frees" and "Call sites". */
#include "state.h"

#include <stdio.h>
#include <string.h>

bool vr_same_call(const vr_stack *a, const vr_stack *b)
{
    return a->id == b->id || vr_stack_order(a, b) == 0;
}

/* Everything vr_oom_same compares but the call: API, device, request,
 * error, verdict, NVTX range, outcome and pool kind. */
static bool same_request(const vr_oom *a, const vr_oom *b)
{
    return a->device == b->device && a->requested_bytes == b->requested_bytes &&
           a->error == b->error && a->verdict == b->verdict && a->recovered == b->recovered &&
           a->host_pool == b->host_pool && a->managed_pool == b->managed_pool &&
           !strcmp(a->api, b->api) && !strcmp(a->range, b->range);
}

bool vr_oom_same(const vr_oom *a, const vr_oom *b)
{
    return same_request(a, b) && vr_same_call(&a->stack, &b->stack);
}

/* The entry that entry i repeats, SIZE_MAX when none: lead, else the
 * earliest entry before it that repeats none. */
static size_t repeated(const vr_repeat_list *l, size_t i)
{
    if (i == l->lead)
        return SIZE_MAX;
    if (l->lead != SIZE_MAX && l->same(l->items, l->lead, i))
        return l->lead;
    for (size_t j = 0; j < i; j++)
        if (j != l->lead && l->repeat(l->items, j)->of == SIZE_MAX && l->same(l->items, j, i))
            return j;
    return SIZE_MAX;
}

void vr_repeats_group(const vr_repeat_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        l->repeat(l->items, i)->n = 0;
    for (size_t i = 0; i < l->n; i++) {
        vr_repeat *x = l->repeat(l->items, i);
        x->of = repeated(l, i);
        if (x->of == SIZE_MAX)
            continue;
        vr_repeat *rep = l->repeat(l->items, x->of);
        if (!rep->n++)
            rep->first = i;
        rep->last = i;
    }
}

const char *vr_repeats_text(const vr_repeat *x, const char *what, uint64_t first_ns,
                            uint64_t last_ns, char *buf, size_t len)
{
    int k = snprintf(buf, len, "the same %s %zu more time%s: #%zu at %s", what, x->n,
                     x->n == 1 ? "" : "s", x->first + 1, VR_TIME(first_ns));
    if (x->n > 1 && k >= 0 && (size_t)k < len)
        snprintf(buf + k, len - (size_t)k, " to #%zu at %s", x->last + 1, VR_TIME(last_ns));
    return buf;
}

static vr_repeat *oom_repeat(void *items, size_t i)
{
    return &((vr_oom *)items)[i].repeat;
}

static bool oom_same(const void *items, size_t a, size_t b)
{
    return vr_oom_same(&((const vr_oom *)items)[a], &((const vr_oom *)items)[b]);
}

void vr_oom_group(vr_oom *ooms, size_t nooms, size_t fatal)
{
    vr_repeats_group(&(vr_repeat_list){ooms, nooms, fatal, oom_repeat, oom_same});
}

const char *vr_oom_repeats_text(const vr_report *r, const vr_oom *o, char *buf, size_t len)
{
    return vr_repeats_text(&o->repeat, "failure (call, request, verdict)",
                           r->ooms[o->repeat.first].t_ns, r->ooms[o->repeat.last].t_ns, buf, len);
}

/* Whether the listings of a and b (max frames each) read the same although
 * the stacks differ: the same depth, and every frame either listing shows
 * the same in both (vr_frame_same_key). The first frame where they part,
 * SIZE_MAX when they read apart or do not part. */
static size_t parts_unlisted(const vr_stack *a, const vr_stack *b, size_t max)
{
    if (a->n != b->n)
        return SIZE_MAX;
    size_t first = SIZE_MAX;
    for (size_t k = 0; k < a->n; k++) {
        if (vr_frame_same_key(&a->frames[k], &b->frames[k]))
            continue;
        if (vr_stack_lists(a, max, k) || vr_stack_lists(b, max, k))
            return SIZE_MAX;
        first = first < k ? first : k;
    }
    return first;
}

/* "not the same call as OTHER: frame K (folded) is X here, Y there" into
 * buf (truncated to len), frame k of here and there parting. */
static const char *alike_line(char *buf, size_t len, const char *other, size_t k,
                              const vr_stack *here, const vr_stack *there)
{
    char b1[256], b2[256];
    snprintf(buf, len, "not the same call as %s: frame %zu (folded) is %s here, %s there", other,
             k + 1, vr_frame_name(&here->frames[k], b1, sizeof b1),
             vr_frame_name(&there->frames[k], b2, sizeof b2));
    return buf;
}

const char *vr_oom_alike_text(const vr_report *r, size_t fatal, size_t i, size_t max, char *buf,
                              size_t len)
{
    buf[0] = 0;
    for (size_t j = vr_oom_next(r, fatal, SIZE_MAX); j != SIZE_MAX && j != i;
         j = vr_oom_next(r, fatal, j)) {
        if (!same_request(&r->ooms[j], &r->ooms[i]))
            continue;
        size_t k = parts_unlisted(&r->ooms[j].stack, &r->ooms[i].stack, max);
        if (k == SIZE_MAX)
            continue;
        char other[32];
        snprintf(other, sizeof other, "#%zu", j + 1);
        return alike_line(buf, len, other, k, &r->ooms[i].stack, &r->ooms[j].stack);
    }
    return buf;
}

const char *vr_listed_alike_text(const vr_stack *first, size_t stride, size_t i, size_t max,
                                 const char *other_fmt, char *buf, size_t len)
{
    buf[0] = 0;
    const vr_stack *st = (const vr_stack *)((const char *)first + i * stride);
    for (size_t j = 0; j < i; j++) {
        const vr_stack *above = (const vr_stack *)((const char *)first + j * stride);
        size_t k = parts_unlisted(above, st, max);
        if (k == SIZE_MAX)
            continue;
        char other[64];
        snprintf(other, sizeof other, other_fmt, j + 1);
        return alike_line(buf, len, other, k, st, above);
    }
    return buf;
}
