/* filter.c: double-counting filter between CUPTI activity and the hooks
 * (see vtcupti.h and README.md). */
#include <pthread.h>
#include <stdlib.h>

#include "vtcupti.h"

/* Correlation ids grow by one per API call: a direct-mapped table keeps the
 * last VTC_CORR_SLOTS of them without collisions among recent ids. Records
 * arrive up to a flush period (100 ms) after their call, so the window must
 * hold every call made in that time: 65 536 did not on an H200, where
 * corpus_tiny's 100 000 allocations and frees evicted the ids of their own
 * calls before the records came and 94 344 allocations were counted twice
 * (cupti/README.md, "Status"). 2^22 ids: 16 MiB of address space, calloc'd,
 * so only the pages of ids in use are touched. */
#define VTC_CORR_SLOTS (1u << 22)

struct vtc_filter {
    uint32_t *hooked;     /* VTC_CORR_SLOTS ids + 1 of hooked calls, 0 = empty */
    pthread_mutex_t lock; /* guards live */
    uint64_t *live;       /* open addressing: 0 empty, 1 deleted, else addr */
    size_t cap, used, count;
};

#define LIVE_EMPTY 0u
#define LIVE_DEAD 1u

vtc_filter *vtc_filter_new(void)
{
    vtc_filter *f = calloc(1, sizeof *f);
    if (f && !(f->hooked = calloc(VTC_CORR_SLOTS, sizeof *f->hooked))) {
        free(f);
        return NULL;
    }
    if (f)
        pthread_mutex_init(&f->lock, NULL);
    return f;
}

void vtc_filter_free(vtc_filter *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->lock);
    free(f->hooked);
    free(f->live);
    free(f);
}

void vtc_filter_mark_hooked(vtc_filter *f, uint32_t id)
{
    __atomic_store_n(&f->hooked[id % VTC_CORR_SLOTS], id + 1, __ATOMIC_RELAXED);
}

/* true (and forgotten) when id was marked hooked. */
static bool take_hooked(vtc_filter *f, uint32_t id)
{
    uint32_t want = id + 1;
    return id != 0 && __atomic_compare_exchange_n(&f->hooked[id % VTC_CORR_SLOTS], &want, 0, false,
                                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static size_t live_hash(uint64_t a, size_t cap)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return (size_t)a & (cap - 1);
}

/* Slot of addr, or of the first free slot on its probe path (*found says). */
static size_t live_probe(const vtc_filter *f, uint64_t addr, bool *found)
{
    size_t i = live_hash(addr, f->cap), free_slot = SIZE_MAX;
    for (;; i = (i + 1) & (f->cap - 1)) {
        if (f->live[i] == addr) {
            *found = true;
            return i;
        }
        if (f->live[i] == LIVE_DEAD && free_slot == SIZE_MAX)
            free_slot = i;
        if (f->live[i] == LIVE_EMPTY) {
            *found = false;
            return free_slot == SIZE_MAX ? i : free_slot;
        }
    }
}

static int live_grow(vtc_filter *f)
{
    if ((f->used + 1) * 2 <= f->cap)
        return 0;
    size_t cap = 64;
    while (cap < (f->count + 1) * 4)
        cap *= 2;
    uint64_t *n = calloc(cap, sizeof *n), *old = f->live;
    if (!n)
        return -1;
    size_t oldcap = f->cap;
    f->live = n, f->cap = cap, f->used = f->count;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i] > LIVE_DEAD) {
            bool found;
            f->live[live_probe(f, old[i], &found)] = old[i];
        }
    free(old);
    return 0;
}

static bool live_add(vtc_filter *f, uint64_t addr)
{
    if (addr <= LIVE_DEAD || live_grow(f) != 0)
        return false;
    bool found;
    size_t i = live_probe(f, addr, &found);
    if (!found) {
        f->used += f->live[i] == LIVE_EMPTY;
        f->live[i] = addr;
        f->count++;
    }
    return true;
}

static bool live_take(vtc_filter *f, uint64_t addr)
{
    bool found = false;
    size_t i = f->cap && addr > LIVE_DEAD ? live_probe(f, addr, &found) : 0;
    if (found) {
        f->live[i] = LIVE_DEAD;
        f->count--;
    }
    return found;
}

bool vtc_filter_keep(vtc_filter *f, const vt_event *ev, uint32_t id, bool hooks_have)
{
    bool hooked = take_hooked(f, id);
    bool keep = false;
    pthread_mutex_lock(&f->lock);
    if (ev->type == VT_REC_ALLOC)
        keep = !hooked && !hooks_have && live_add(f, ev->u.alloc.addr);
    else if (ev->type == VT_REC_FREE)
        keep = live_take(f, ev->u.free.addr);
    pthread_mutex_unlock(&f->lock);
    return keep;
}

size_t vtc_filter_live(const vtc_filter *f)
{
    return f->count;
}
