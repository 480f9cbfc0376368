/* freefail.c: the free calls that failed (VT_REC_FREE_FAILED, trace format
 * 12). A failed free frees nothing: what the address holds stays live. Each
 * one is classified by what the recording held at its address at the time
 * (the live map): an allocation starting there, which this call does not
 * free (the wrong API's free, or a free refused for the error's reason), or
 * none (a double free, a pointer inside an allocation, one never allocated
 * or made before the recording). The recorder flags a CUDA graph allocation
 * node's address (VT_FREE_FAILED_GRAPH_NODE): its memory exists only while a
 * launch holds it, and freeing it otherwise fails (CUDA_ERROR_INVALID_VALUE
 * on an H200, tests/gpu/README.md), which PyTorch's cudaMallocAsync
 * allocator turns into an abort. docs/report.md, "Failed frees". */
#include "state.h"

#include <stdlib.h>
#include <string.h>

void vr_free_failed_note(vr_state *s, const vt_event *ev)
{
    s->free_failed_total++;
    if (s->nfree_failed == VR_FREE_FAILED_KEPT)
        return;
    if (s->nfree_failed == s->capfree_failed) {
        s->capfree_failed = s->capfree_failed ? 2 * s->capfree_failed : 16;
        s->free_failed = vr_xrealloc(s->free_failed, s->capfree_failed * sizeof *s->free_failed);
    }
    uint64_t a = ev->u.free_failed.addr;
    const vr_live *l = vr_map_find(&s->live, a, NULL);
    if (!l) /* a VMM handle (cuMemRelease) */
        l = vr_map_find(&s->live, vr_handle_key(a), NULL);
    s->free_failed[s->nfree_failed++] = (vr_free_failed_raw){
        .ts = ev->ts_ns,
        .addr = a,
        .error = ev->u.free_failed.error,
        .stack = ev->u.free_failed.stack,
        .call = ev->u.free_failed.call,
        .flags = ev->u.free_failed.flags,
        .live_size = l ? l->size : 0,
        .live_kind = l ? l->kind : 0,
        .calls_before = s->allocations + s->frees,
    };
}

/* What error means for a free call, with a leading " (", or "". */
static const char *free_error_meaning(int32_t error)
{
    switch (error) {
    case 1:
        return " (invalid value: the address was refused)";
    case 400:
        return " (invalid handle)";
    case 713:
        return " (host memory not registered)";
    case 900:
        return " (operation not permitted when a stream is capturing: a capture in the global "
               "or thread-local mode forbids it, and that capture is now invalidated)";
    case 906:
        return " (the legacy stream while a blocking stream captures)";
    default:
        return "";
    }
}

static const char *what_of(vr_arena *a, const vr_free_failed_raw *raw)
{
    char b1[32];
    const char *held =
        raw->live_size
            ? vr_sprintf(a,
                         "a live allocation starts there (%s, %s) and stays live: this call "
                         "does not free that kind of memory, or it was refused for its error",
                         vt_kind_name((enum vt_kind)raw->live_kind),
                         vr_format_size(raw->live_size, b1, sizeof b1))
            : "no live allocation starts there: freed already, a pointer inside an "
              "allocation, never allocated, or made before the recording began";
    if (!(raw->flags & VT_FREE_FAILED_GRAPH_NODE))
        return held;
    return vr_sprintf(a,
                      "a CUDA graph allocation node's address, whose memory exists only while a "
                      "launch of its graph holds it (%s). PyTorch's backend:cudaMallocAsync "
                      "aborts here (\"CUDA error: invalid argument\" in a tensor's destructor) "
                      "when a captured graph's outputs are dropped before any replay: replay the "
                      "graph, or keep its outputs while it lives",
                      raw->live_size ? held
                                     : "the graph never ran, or the memory was freed already");
}

bool vr_free_failed_same(const vr_free_failed *a, const vr_free_failed *b)
{
    return a->error == b->error && a->graph_node == b->graph_node && a->live_kind == b->live_kind &&
           !strcmp(a->call, b->call) && vr_same_call(&a->stack, &b->stack);
}

static vr_repeat *free_failed_repeat(void *items, size_t i)
{
    return &((vr_free_failed *)items)[i].repeat;
}

static bool free_failed_same(const void *items, size_t a, size_t b)
{
    const vr_free_failed *x = items;
    return vr_free_failed_same(&x[a], &x[b]);
}

const char *vr_free_failed_repeats_text(const vr_report *r, const vr_free_failed *x, char *buf,
                                        size_t len)
{
    return vr_repeats_text(&x->repeat, "failed free (call, error, kind of address)",
                           r->free_failed[x->repeat.first].t_ns,
                           r->free_failed[x->repeat.last].t_ns, buf, len);
}

void vr_free_failed_build(vr_state *s, vr_symbolizer *sy, vr_report *r)
{
    vr_free_failed *out = vr_alloc(s->arena, (s->nfree_failed ? s->nfree_failed : 1) * sizeof *out);
    for (size_t i = 0; i < s->nfree_failed; i++) {
        const vr_free_failed_raw *raw = &s->free_failed[i];
        out[i] = (vr_free_failed){
            .t_ns = vr_rel_ns(s, raw->ts),
            .addr = raw->addr,
            .error = raw->error,
            .error_meaning = free_error_meaning(raw->error),
            .call = vr_strdup(s->arena, vr_state_string(s, raw->call)),
            .what = what_of(s->arena, raw),
            .graph_node = (raw->flags & VT_FREE_FAILED_GRAPH_NODE) != 0,
            .live_kind = raw->live_size ? (int32_t)raw->live_kind : -1,
            .stack = vr_symbolize(sy, raw->stack),
            .calls_after = s->allocations + s->frees - raw->calls_before,
        };
    }
    vr_repeats_group(
        &(vr_repeat_list){out, s->nfree_failed, SIZE_MAX, free_failed_repeat, free_failed_same});
    r->free_failed = out;
    r->nfree_failed = s->nfree_failed;
    r->free_failed_total = s->free_failed_total;
}
