/* graphpool.c: a device's CUDA graph memory pool at a failed allocation
 * (VT_REC_POOL_STAT of pool VT_POOL_GRAPH, trace format 13, written by the
 * recorder just before that failure's alloc_failed). A driver keeps freed
 * graph memory reserved in that pool, and a graph launch that ran out of
 * memory can leave the device's free memory there until the context ends
 * (an H200: sim/README.md, "Graph memory nodes"); no allocation record shows
 * it, so without this sample the report read it as use outside the
 * recording. Layer 4 of report/ (docs/architecture.md), with its renderers'
 * side. */
#include "state.h"

#include <inttypes.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))

void vr_graph_pool_stat(vr_state *s, const vt_event *ev)
{
    vr_devstate *d = vr_state_device(s, ev->u.pool.device);
    d->gpool_pending = true;
    d->gpool_tid = ev->thread_id;
    d->gpool_reserved = ev->u.pool.reserved_bytes;
}

uint64_t vr_graph_pool_kept(vr_devstate *d, uint32_t tid)
{
    if (!d->gpool_pending || d->gpool_tid != tid)
        return 0;
    d->gpool_pending = false;
    return d->gpool_reserved > d->graph ? d->gpool_reserved - d->graph : 0;
}

void vr_oom_take_graph_pool(vr_devstate *d, const vt_event *ev, vr_oom *o)
{
    if (!d->gpool_pending || d->gpool_tid != ev->thread_id)
        return;
    d->gpool_pending = false;
    o->has_graph_pool = true;
    o->graph_pool_reserved_bytes = d->gpool_reserved;
    o->graph_pool_kept_bytes =
        d->gpool_reserved > o->live_graph ? d->gpool_reserved - o->live_graph : 0;
    o->live_reserved += o->graph_pool_kept_bytes;
}

bool vr_graph_pool_would_fit(const vr_oom *o)
{
    return o->graph_pool_kept_bytes &&
           o->device_free_bytes + o->graph_pool_kept_bytes >= o->requested_bytes;
}

bool vr_graph_launch_failed(const vr_oom *o)
{
    return o->api && !strcmp(o->api, vt_api_name(VT_API_CU_GRAPH_LAUNCH));
}

const char *vr_graph_pool_addend(vr_arena *a, const vr_oom *o)
{
    char b1[32];
    if (!o->graph_pool_kept_bytes || vr_graph_launch_failed(o))
        return "";
    return vr_sprintf(a,
                      " + what the CUDA graph memory pool kept (%s, held by no live graph "
                      "allocation)",
                      SZ(o->graph_pool_kept_bytes, b1));
}

const char *vr_graph_pool_clause(vr_arena *a, const vr_oom *o)
{
    char b1[32];
    if (!o->graph_pool_kept_bytes)
        return "";
    if (vr_graph_launch_failed(o))
        return vr_sprintf(a,
                          "; after it failed the CUDA graph memory pool held %s that no live "
                          "graph allocation used (a graph launch that runs out of memory can "
                          "leave the device's free memory there until the context ends)",
                          SZ(o->graph_pool_kept_bytes, b1));
    if (vr_graph_pool_would_fit(o))
        return "; without what the graph pool kept the request would have fit (the driver "
               "keeps it, no allocation of the program holds it)";
    return "";
}

const char *vr_graph_pool_remedy(vr_arena *a, const vr_oom *o, const vr_oom *launch)
{
    char b1[32], b2[32];
    const char *why =
        launch ? vr_sprintf(a,
                            "a graph launch that ran out of memory before it (cuGraphLaunch of "
                            "%s at %s) left the device's free memory there, where it stays until "
                            "the context ends (an H200 did): avoid that launch (it asked for "
                            "more than the device has) or reset the device after it "
                            "(cudaDeviceReset)",
                            SZ(launch->requested_bytes, b2), VR_TIME(launch->t_ns))
               : "freed graph memory stays there until cudaDeviceGraphMemTrim() (a cudaMalloc "
                 "takes it back by itself, not every call does): trim before this call";
    return vr_sprintf(a, "the CUDA graph memory pool held %s that no graph allocation used: %s",
                      SZ(o->graph_pool_kept_bytes, b1), why);
}

void vr_graph_pool_text(FILE *f, const vr_oom *o)
{
    char b1[32], b2[32];
    if (o->has_graph_pool)
        fprintf(f,
                "  CUDA graph memory pool: %s reserved, %s of it held by no live graph "
                "allocation\n",
                SZ(o->graph_pool_reserved_bytes, b1), SZ(o->graph_pool_kept_bytes, b2));
}

void vr_graph_pool_json(FILE *f, const vr_oom *o)
{
    if (!o->has_graph_pool) {
        fputs("\"graph_pool\":null,", f);
        return;
    }
    fprintf(f, "\"graph_pool\":{\"reserved_bytes\":%" PRIu64 ",\"kept_bytes\":%" PRIu64 "},",
            o->graph_pool_reserved_bytes, o->graph_pool_kept_bytes);
}
