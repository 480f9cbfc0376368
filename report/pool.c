/* pool.c: a stream-ordered memory pool's reserve at a failed allocation
 * (VT_REC_POOL_STAT, written by the recorder just before that failure's
 * alloc_failed). The pool's reserved-but-unused bytes are the allocator's
 * free reserve, counted like a caching allocator's cached blocks (a heap's
 * free bytes, frag.c): memory the process holds that no allocation uses.
 * Layer 4 of report/ (docs/architecture.md); the renderers' side is
 * pool_text.c. */
#include "state.h"

/* Pool's free reserve on d is spare now and its reserved bytes reserved
 * (its entry in d->pools, made when new; past VR_MAX_POOLS the last
 * entry's; a pool that holds nothing has none: a destroyed pool's last
 * record says so, docs/trace.md), stamped with the round it came in;
 * d->pool_spare their free reserve summed; rel: its time (ns since the
 * start), the round's end's so far. */
static void pool_spare_set(vr_state *s, vr_devstate *d, uint64_t pool, uint64_t spare,
                           uint64_t reserved, uint64_t rel)
{
    d->pool_round_id += !d->pool_round; /* a new round */
    d->pool_round = true;               /* the peak at the round's end: vr_pool_rounds_end */
    uint32_t k = 0;
    while (k < d->npools && d->pools[k].pool != pool && k + 1 < VR_MAX_POOLS)
        k++;
    bool here = k < d->npools && d->pools[k].pool == pool;
    if (!reserved && !spare && (here || k == d->npools)) {
        if (here) /* the entry goes: the last one takes its place */
            d->pools[k] = d->pools[--d->npools];
    } else {
        if (k == d->npools)
            d->npools++;
        else if (!here)
            vr_state_note_once(s,
                               "more than %d stream-ordered pools on one device: the pools' "
                               "free reserve and reserved bytes count the last ones as one",
                               VR_MAX_POOLS);
        d->pools[k].pool = pool;
        d->pools[k].spare = spare;
        d->pools[k].reserved = reserved;
        d->pools[k].round = d->pool_round_id;
    }
    d->pool_spare = 0;
    for (uint32_t i = 0; i < d->npools; i++)
        d->pool_spare += d->pools[i].spare;
    d->pool_round_t = rel;
    s->pool_rounds = true;
    d->pool_sampled = true;
}

/* d's round ended: the reserved bytes of the pools it sampled summed, kept
 * when the most; no other pool's older state in the sum (the recorder's
 * rule too, interpose/poolstat.c): a pool's new state beside another's old
 * one summed to more than the pools ever reserved at once, as did a
 * destroyed pool's reserve, which the driver may give back at a
 * synchronization before the last free, unseen (docs/trace.md, "A
 * destroyed pool's last free"); corpus.pools_random: "288 MiB" where the
 * ledger's pools held 224, a destroyed pool's lone record beside another's
 * state older than a synchronization. */
static void round_end(vr_devstate *d)
{
    d->pool_round = false;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < d->npools; i++)
        sum += d->pools[i].round == d->pool_round_id ? d->pools[i].reserved : 0;
    if (sum > d->pool_reserved_peak) {
        d->pool_reserved_peak = sum;
        d->pool_reserved_peak_t = d->pool_round_t;
    }
}

void vr_pool_rounds_end(vr_state *s, uint32_t tid)
{
    s->pool_rounds = false;
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        if (d->pool_round && (tid == UINT32_MAX || d->pool_tid == tid))
            round_end(d);
        s->pool_rounds |= d->pool_round;
    }
}

void vr_pool_stat(vr_state *s, const vt_event *ev)
{
    vr_devstate *d = vr_state_device(s, ev->u.pool.device);
    d->pool_pending = true;
    if (d->pool_round && d->pool_tid != ev->thread_id)
        round_end(d); /* another thread's round: the rest of it is not this one's */
    d->pool_tid = ev->thread_id;
    d->pool_reserved = ev->u.pool.reserved_bytes;
    d->pool_used = ev->u.pool.used_bytes;
    pool_spare_set(s, d, ev->u.pool.pool,
                   d->pool_reserved > d->pool_used ? d->pool_reserved - d->pool_used : 0,
                   d->pool_reserved, vr_rel_ns(s, ev->ts_ns));
    s->pools_pending = true;
}

void vr_pool_range_ended(vr_state *s, uint32_t tid)
{
    if (!s->pools_pending)
        return;
    s->pools_pending = false;
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));) {
        if (d->pool_pending && d->pool_tid == tid)
            d->pool_pending = false;
        s->pools_pending |= d->pool_pending;
    }
}

void vr_oom_take_pool(vr_devstate *d, const vt_event *ev, vr_oom *o)
{
    if (!d->pool_pending || d->pool_tid != ev->thread_id)
        return;
    o->live_reserved += d->pool_spare;
    d->pool_pending = false;
    o->has_pool = true;
    o->pool_reserved_bytes = d->pool_reserved;
    o->pool_used_bytes = d->pool_used < d->pool_reserved ? d->pool_used : d->pool_reserved;
}

uint64_t vr_pool_spare(vr_devstate *d, uint32_t tid, bool take)
{
    if (!d->pool_pending || d->pool_tid != tid)
        return 0;
    d->pool_pending = !take;
    return d->pool_spare;
}

void vr_frag_add_pool(vr_frag *f, const vr_oom *o)
{
    if (!o->has_pool || o->error != VT_ERROR_OUT_OF_MEMORY)
        return;
    f->reserved += o->pool_reserved_bytes;
    f->allocated += o->pool_used_bytes;
    vr_frag_settle(f);
}

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))

const char *vr_pool_explain(vr_arena *a, const vr_oom *o, const char *live)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    uint64_t spare = o->pool_reserved_bytes - o->pool_used_bytes;
    return vr_sprintf(
        a,
        "the memory pool holds %s reserved from the device of which %s are in use: %s of free "
        "reserve, and the device has %s free, together %s for the %s requested, but no piece is "
        "large enough: every hole in the pool's reserve is smaller than the request (the pool "
        "could not place it) and the device's free memory is too; the pool's reserve is "
        "fragmented; live data: %s",
        SZ(o->pool_reserved_bytes, b1), SZ(o->pool_used_bytes, b2), SZ(spare, b3),
        SZ(o->device_free_bytes, b4), SZ(spare + o->device_free_bytes, b5),
        SZ(o->requested_bytes, b6), live);
}

const char *vr_pools_held_explain(vr_arena *a, const vr_oom *o, const char *live)
{
    char b1[32], b2[32], b3[32], b4[32];
    return vr_sprintf(
        a,
        "the device's stream-ordered pools hold %s of free reserve, which this %s cannot use, "
        "and the device had %s free: together %s for the %s requested; the pools keep memory "
        "the device lacks (lower their release threshold, cudaMemPoolAttrReleaseThreshold, or "
        "trim them, cudaMemPoolTrimTo, before such calls); live data: %s",
        SZ(o->pools_free_bytes, b1), o->api, SZ(o->device_free_bytes, b2),
        SZ(o->pools_free_bytes + o->device_free_bytes, b3), SZ(o->requested_bytes, b4), live);
}

const char *vr_pool_limit_explain(vr_arena *a, const vr_oom *o, const char *live)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (o->managed_pool)
        return vr_sprintf(a,
                          "the device had %s free, room for the %s requested, but the managed "
                          "pool it was asked of did not take it: the pool is at a limit of its "
                          "own (its maximum size, which the driver does not report), not the "
                          "device's; live data: %s",
                          SZ(o->device_free_bytes, b1), SZ(o->requested_bytes, b2),
                          live[0] ? live : "nothing recorded");
    return vr_sprintf(
        a,
        "the device had %s free, room for the %s requested, but the memory pool (%s reserved, "
        "%s in use) did not take it from the device: the pool is at a limit of its own (its "
        "maximum size), not the device's; live data: %s",
        SZ(o->device_free_bytes, b1), SZ(o->requested_bytes, b2), SZ(o->pool_reserved_bytes, b3),
        SZ(o->pool_used_bytes, b4), live[0] ? live : "nothing recorded");
}

uint64_t vr_pool_spares(vr_state *s)
{
    uint64_t sum = 0;
    size_t i = 0;
    for (vr_devstate *d; (d = vr_map_next(&s->devices, &i));)
        sum += d->pool_spare;
    return sum;
}

uint64_t vr_device_rounding(const vr_devstate *d)
{
    return d->pool_sampled ? d->slack - d->slack_pool : d->slack;
}

uint64_t vr_device_overhead(const vr_devstate *d)
{
    return vr_device_rounding(d) + (d->pool_sampled ? d->pool_spare : 0);
}
