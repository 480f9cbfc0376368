/* pool_text.c: a stream-ordered failure's pool as the renderers show it
 * (internal.h; the model's side is pool.c): the remedy of a fragmented pool,
 * the text line and the JSON member. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))

const char *vr_pool_remedy(vr_arena *a, const vr_oom *o)
{
    char b1[32];
    return vr_sprintf(a,
                      "the pool's free reserve (%s) is in holes smaller than the request: "
                      "allocate in smaller or equal-sized pieces (fixed shapes), or use PyTorch's "
                      "default backend with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, "
                      "which maps and unmaps pages so freed memory goes back to the device (the "
                      "torch_vary_shapes_expandable scenario then ran all its steps)",
                      SZ(o->pool_reserved_bytes - o->pool_used_bytes, b1));
}

bool vr_pool_at_limit(const vr_oom *o)
{
    uint64_t r = o->requested_bytes, seg = VR_POOL_SEGMENT;
    if ((!o->has_pool && !o->managed_pool) || !o->device_total_bytes || r > UINT64_MAX - seg)
        return false;
    return o->device_free_bytes >= (r + seg - 1) / seg * seg;
}

const char *vr_pool_limit_remedy(vr_arena *a, const vr_oom *o)
{
    char b1[32];
    if (o->managed_pool)
        return "the managed pool is at its limit while the device has room: raise its maximum "
               "size (cudaMemPoolProps.maxSize, fixed when the pool is made) or allocate from a "
               "pool without one";
    return vr_sprintf(a,
                      "the pool is full at %s reserved while the device has room: raise its "
                      "maximum size (cudaMemPoolProps.maxSize, fixed when the pool is made) or "
                      "allocate from a pool without one (the device's default pool)",
                      SZ(o->pool_reserved_bytes, b1));
}

void vr_pool_text(FILE *f, const vr_oom *o)
{
    char b1[32], b2[32], b3[32];
    if (o->has_pool)
        fprintf(f, "  memory pool: %s reserved, %s used, %s free reserve\n",
                SZ(o->pool_reserved_bytes, b1), SZ(o->pool_used_bytes, b2),
                SZ(o->pool_reserved_bytes - o->pool_used_bytes, b3));
}

void vr_pool_json(FILE *f, const vr_oom *o)
{
    fprintf(f, "\"pools_free_bytes\":%" PRIu64 ",", o->pools_free_bytes);
    if (!o->has_pool) {
        fputs("\"pool\":null,", f);
        return;
    }
    fprintf(f,
            "\"pool\":{\"reserved_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
            ",\"free_reserve_bytes\":%" PRIu64 "},",
            o->pool_reserved_bytes, o->pool_used_bytes,
            o->pool_reserved_bytes - o->pool_used_bytes);
}
