/* The graph memory pool of a simulated device (struct sim_gpool): the
 * device memory that backs graph allocation nodes while a launch holds them,
 * kept reserved after their free, as an H200 (driver 580.159.04) answered
 * tests/gpu/probe_graphpool.c and probe_graphmem.c (tests/gpu/README.md,
 * sessions 30 and 31; README.md, "Graph memory nodes"). Byte accounting
 * only; all functions run under the device's lock. */
#include "sim_internal.h"

size_t sim_pool_segment(size_t r)
{
    size_t g = SIM_POOL_SEGMENT;
    return r > SIZE_MAX - g ? 0 : (r < g ? g : (r + g - 1) / g * g);
}

size_t sim_gpool_charge(size_t rounded)
{
    return sim_pool_segment(rounded);
}

/* The reserve grew or shrank: its high watermarks. */
static void note_high(struct sim_gpool *p)
{
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
    if (p->reserved - p->stuck > p->used_high)
        p->used_high = p->reserved - p->stuck;
}

/* The pool's bytes no live allocation holds (a failed launch's excluded). */
static size_t pool_free(const struct sim_gpool *p)
{
    return p->reserved - p->stuck - p->live;
}

bool sim_gpool_reserve(struct sim_gpool *p, size_t demand, size_t *room)
{
    size_t have = pool_free(p);
    if (demand <= have)
        return true;
    size_t grow = sim_pool_segment(demand - have);
    if (!grow || grow > *room)
        grow = demand - have;
    if (grow > *room)
        return false;
    p->reserved += grow;
    *room -= grow;
    note_high(p);
    return true;
}

void sim_gpool_exhaust(struct sim_gpool *p, size_t room)
{
    size_t len = room / SIM_POOL_SEGMENT * SIM_POOL_SEGMENT;
    p->reserved += len;
    p->stuck += len;
    note_high(p);
}

size_t sim_gpool_trim(struct sim_gpool *p)
{
    size_t released = pool_free(p);
    p->reserved -= released;
    return released;
}

void sim_gpool_clear(struct sim_gpool *p)
{
    p->reserved = p->stuck = p->live = p->base = 0;
}
