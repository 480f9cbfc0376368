/* livemap.c: the in-process map of live allocations (address -> size,
 * stack, device, api) and per-device counters, for the OOM diagnosis and
 * the exit summary.
 *
 * Memory (issue 18: at most 32 bytes per live allocation): 16-byte slots,
 * an address and one packed word: the size (low SIZE_BITS bits) and a site
 * id (the high SITE_BITS bits) naming (stack, device, api) in a side table
 * of the distinct sites seen (interned, never dropped: a program has few).
 * An entry that does not fit (size >= 2^40, a VMM handle or mapping: any
 * space but the address space, the site table full) keeps its whole
 * vti_live in an overflow record that its slot's packed word indexes (site
 * id SITE_OVERFLOW): never lost. Open addressing with linear probing and
 * backward-shift deletion (Knuth 6.4, algorithm R), load at most 17/20, in
 * STRIPES tables by address hash, each growing alone by 3/2 (page-sized
 * arrays from mmap, indexed by multiply-shift "fastrange", Lemire 2019), so
 * at any size the map sits between loads 0.57 and 0.85 (19 to 28 bytes per
 * entry) and a resize briefly holds one stripe twice.
 *
 * One lock guards it all: the order lock (orderlock.c), which the hooks
 * already hold around every allocation and free, so the hot path takes no
 * lock of its own and updates the counters without atomic
 * read-modify-writes; the other callers (VMM mappings, device reset, CUPTI,
 * the growth and exit lines) take it here. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vti_internal.h"

#define STRIPES 64
/* Bounded memory: live allocations tracked at most (then tracing stops).
 * Overridable for the unit tests (tests/interpose/test_livemap.c). */
#ifndef VTI_LIVE_MAX_PER_STRIPE
#define VTI_LIVE_MAX_PER_STRIPE (1u << 16)
#endif
#define SIZE_BITS 40
#define SIZE_MASK ((1ull << SIZE_BITS) - 1)
#define SITE_BITS 24
#define SITE_OVERFLOW ((1u << SITE_BITS) - 1) /* the low bits index an overflow record */
/* Distinct sites at most (ids 1..VTI_LIVE_MAX_SITES); overridable for the
 * unit tests. */
#ifndef VTI_LIVE_MAX_SITES
#define VTI_LIVE_MAX_SITES (SITE_OVERFLOW - 1)
#endif
#define MIN_SLOTS 256
/* Load at most LOAD_NUM / LOAD_DEN; growth by 3/2. */
#define LOAD_NUM 17
#define LOAD_DEN 20

typedef struct slot {
    uint64_t addr;
    uint64_t val; /* 0: empty; else size | site << SIZE_BITS (site >= 1) */
} slot;
_Static_assert(sizeof(slot) == 16, "a live map slot is 16 bytes");

typedef struct stripe {
    slot *slots;
    uint32_t cap, count;
    uint32_t limit; /* count at which it grows (or is full) */
} stripe;

/* What a stripe holds before its first entry: one empty slot that only find
 * reads (limit 0: the first insert grows the stripe). */
static slot no_slots[1];
static stripe stripes[STRIPES] = {[0 ... STRIPES - 1] = {.slots = no_slots, .cap = 1}};

/* The interned sites: keys[id] (id 0 unused), found by key through index
 * (open addressing of ids, 0 empty, power-of-two size, at most half full);
 * tmpl[id]: the entry a slot of the site decodes to, less address and size. */
static struct {
    uint64_t *keys;
    vti_live *tmpl;
    uint32_t *index;
    uint32_t n, cap, index_mask, last;
} sites;

/* Entries that do not fit a slot; free ones chained through .addr (index +
 * 1, 0 ends). */
static struct {
    vti_live *recs;
    uint32_t n, cap, free;
} overflow;

/* A device's counters; its live count is allocs - frees. slack_bytes: the
 * device memory its live allocations take beyond their sizes
 * (vt_driver_slack), slack_pool_bytes the part of it of stream-ordered
 * allocations (a sampled pool's reserve stands for theirs: iterfit.c). */
typedef struct dev_counters {
    _Atomic uint64_t live_bytes, peak_bytes, allocs, frees, failures, slack_bytes;
    _Atomic uint64_t slack_pool_bytes;
    _Atomic uint64_t graph_bytes; /* live bytes of graph allocations (cuGraphLaunch's) */
} dev_counters;

static dev_counters counters[VTI_MAX_DEVICES + 1]; /* [0] = host (-1) */
/* Allocations live now on all devices and host, and the most ever at once
 * (the trace's summary, vt_summary.peak_live); under the order lock. */
static _Atomic uint64_t live_all, live_all_peak;

/* Take the order lock unless this thread holds it; true when taken. */
static bool guard_begin(void)
{
    if (vti_order_held())
        return false;
    vti_order_lock();
    return true;
}

static void guard_end(bool taken)
{
    if (taken)
        vti_order_unlock();
}

/* counter += d under the order lock (atomic only for readers' sake). */
static void add(_Atomic uint64_t *counter, uint64_t d)
{
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

/* The counters of device (-1: host; out of range: the nearest end). */
static inline dev_counters *dev(int device)
{
    unsigned i = (unsigned)device + 1;
    if (i <= VTI_MAX_DEVICES)
        return &counters[i];
    return &counters[device < 0 ? 0 : VTI_MAX_DEVICES];
}

/* ---- sites ---------------------------------------------------------------- */

/* A site: (stack, device, api) of an entry in the address space (the only
 * space that slots hold; the others have overflow records). */
static uint64_t site_key(const vti_live *e)
{
    return (uint64_t)e->stack | (uint64_t)(uint16_t)e->device << 32 | (uint64_t)e->api << 48;
}

static uint32_t site_home(uint64_t key, uint32_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & mask;
}

static int site_index_grow(void)
{
    uint32_t mask = sites.index ? sites.index_mask * 2 + 1 : 255;
    uint32_t *n = calloc((size_t)mask + 1, sizeof *n);
    if (!n)
        return -1;
    for (uint32_t id = 1; id <= sites.n; id++) {
        uint32_t i = site_home(sites.keys[id], mask);
        while (n[i])
            i = (i + 1) & mask;
        n[i] = id;
    }
    free(sites.index);
    sites.index = n;
    sites.index_mask = mask;
    return 0;
}

/* Room for one more site; -1 when the table is full or memory is out. */
static int site_reserve(void)
{
    if (sites.n >= VTI_LIVE_MAX_SITES)
        return -1;
    if (sites.n + 2 > sites.cap) {
        uint32_t cap = sites.cap ? sites.cap * 2 : 256;
        uint64_t *k = realloc(sites.keys, cap * sizeof *k);
        vti_live *t = k ? realloc(sites.tmpl, cap * sizeof *t) : NULL;
        if (k)
            sites.keys = k;
        if (!t)
            return -1;
        sites.tmpl = t;
        sites.cap = cap;
    }
    if ((!sites.index || (sites.n + 1) * 2 > sites.index_mask + 1) && site_index_grow() != 0)
        return -1;
    return 0;
}

/* The id of e's site, interned now if new; 0 when it cannot be. */
static uint32_t site_intern(const vti_live *e)
{
    uint64_t key = site_key(e);
    uint32_t i, id;
    if (sites.last && sites.keys[sites.last] == key)
        return sites.last;
    for (i = site_home(key, sites.index_mask); sites.index && (id = sites.index[i]);
         i = (i + 1) & sites.index_mask)
        if (sites.keys[id] == key)
            return sites.last = id;
    if (site_reserve() != 0)
        return 0;
    id = ++sites.n;
    sites.keys[id] = key;
    sites.tmpl[id] = (vti_live){
        .stack = e->stack, .device = e->device, .api = e->api, .space = VT_SPACE_ADDR, .used = 1};
    for (i = site_home(key, sites.index_mask); sites.index[i]; i = (i + 1) & sites.index_mask)
        ;
    sites.index[i] = id;
    return sites.last = id;
}

/* ---- overflow records ------------------------------------------------------ */

/* A record holding e: its index, or -1 when memory is out. */
static int64_t overflow_put(const vti_live *e)
{
    uint32_t i;
    if (overflow.free) {
        i = overflow.free - 1;
        overflow.free = (uint32_t)overflow.recs[i].addr;
    } else {
        if (overflow.n == overflow.cap) {
            uint32_t cap = overflow.cap ? overflow.cap * 2 : 16;
            vti_live *r = realloc(overflow.recs, cap * sizeof *r);
            if (!r)
                return -1;
            overflow.recs = r;
            overflow.cap = cap;
        }
        i = overflow.n++;
    }
    overflow.recs[i] = *e;
    overflow.recs[i].used = 1;
    return i;
}

static void overflow_drop(uint64_t i)
{
    overflow.recs[i].used = 0;
    overflow.recs[i].addr = overflow.free;
    overflow.free = (uint32_t)i + 1;
}

/* ---- slots -------------------------------------------------------------------- */

static uint64_t key_hash(uint64_t addr)
{
    return addr * 0x9E3779B97F4A7C15ull; /* the high bits are used */
}

/* Bits 58..63 pick the stripe, bits 26..57 the home slot in it. */
static stripe *stripe_of(uint64_t h)
{
    return &stripes[(h >> 58) % STRIPES];
}

static uint32_t home_of(uint64_t h, uint32_t cap)
{
    return (uint32_t)(((h >> 26) & 0xFFFFFFFFull) * cap >> 32);
}

static uint32_t next(uint32_t i, uint32_t cap)
{
    return i + 1 == cap ? 0 : i + 1;
}

static uint32_t site_of(const slot *sl)
{
    return (uint32_t)(sl->val >> SIZE_BITS);
}

/* The overflow record of a slot whose site is SITE_OVERFLOW. */
static vti_live *record_of(const slot *sl)
{
    return &overflow.recs[sl->val & SIZE_MASK];
}

static uint8_t space_of(const slot *sl)
{
    return site_of(sl) == SITE_OVERFLOW ? record_of(sl)->space : VT_SPACE_ADDR;
}

/* The whole entry of a used slot. */
static inline void decode(const slot *sl, vti_live *out)
{
    uint32_t site = site_of(sl);
    if (site == SITE_OVERFLOW) {
        *out = *record_of(sl);
        return;
    }
    *out = sites.tmpl[site];
    out->addr = sl->addr;
    out->size = sl->val & SIZE_MASK;
}

/* The packed word of e (interning its site, or taking an overflow record);
 * 0 when memory is out. */
static uint64_t encode(const vti_live *e)
{
    uint32_t site = 0;
    int64_t rec;
    if (e->space == VT_SPACE_ADDR && e->size <= SIZE_MASK)
        site = site_intern(e);
    if (site)
        return e->size | (uint64_t)site << SIZE_BITS;
    rec = overflow_put(e);
    return rec < 0 ? 0 : (uint64_t)rec | (uint64_t)SITE_OVERFLOW << SIZE_BITS;
}

static void place(slot *slots, uint32_t cap, uint64_t addr, uint64_t val)
{
    uint32_t i = home_of(key_hash(addr), cap);
    while (slots[i].val)
        i = next(i, cap);
    slots[i] = (slot){addr, val};
}

/* Zeroed slots for at least *cap entries from mmap (whole pages: *cap
 * becomes what they hold); NULL when memory is out. */
static slot *slots_map(uint32_t *cap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = ((size_t)*cap * sizeof(slot) + page - 1) / page * page;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    *cap = (uint32_t)(bytes / sizeof(slot));
    return p;
}

static int stripe_grow(stripe *s)
{
    uint32_t cap = s->slots != no_slots ? s->cap + s->cap / 2 : MIN_SLOTS;
    slot *n = slots_map(&cap);
    if (!n)
        return -1;
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->slots[i].val)
            place(n, cap, s->slots[i].addr, s->slots[i].val);
    if (s->slots != no_slots)
        munmap(s->slots, (size_t)s->cap * sizeof(slot));
    s->slots = n;
    s->cap = cap;
    s->limit = (uint32_t)((uint64_t)cap * LOAD_NUM / LOAD_DEN);
    if (s->limit > VTI_LIVE_MAX_PER_STRIPE)
        s->limit = VTI_LIVE_MAX_PER_STRIPE;
    return 0;
}

/* e's driver rounding (+1) or its end (-1) into c's slack counters: the
 * allocations on a device whose api takes it (vt_api_rounded, the report's
 * rule). */
static inline void count_slack(dev_counters *c, const vti_live *e, int sign)
{
    const vt_api_info *a = e->device >= 0 ? vt_api_get((enum vt_api)e->api) : NULL;
    if (!a || !vt_api_rounded((enum vt_api)e->api, a->kind))
        return;
    uint64_t slack = sign > 0 ? vt_driver_slack(e->size) : -vt_driver_slack(e->size);
    add(&c->slack_bytes, slack);
    if (a->stream_ordered)
        add(&c->slack_pool_bytes, slack);
}

static inline void count_alloc(const vti_live *e)
{
    dev_counters *c = dev(e->device);
    count_slack(c, e, 1);
    if (e->api == VT_API_CU_GRAPH_LAUNCH)
        add(&c->graph_bytes, e->size);
    uint64_t live = atomic_load_explicit(&c->live_bytes, memory_order_relaxed) + e->size;
    atomic_store_explicit(&c->live_bytes, live, memory_order_relaxed);
    if (live > atomic_load_explicit(&c->peak_bytes, memory_order_relaxed))
        atomic_store_explicit(&c->peak_bytes, live, memory_order_relaxed);
    add(&c->allocs, 1);
    uint64_t all = atomic_load_explicit(&live_all, memory_order_relaxed) + 1;
    atomic_store_explicit(&live_all, all, memory_order_relaxed);
    if (all > atomic_load_explicit(&live_all_peak, memory_order_relaxed))
        atomic_store_explicit(&live_all_peak, all, memory_order_relaxed);
}

/* Room for one more entry in s; -1 when it is full or memory is out. */
static int stripe_reserve(stripe *s)
{
    if (s->count < s->limit)
        return 0;
    return s->count >= VTI_LIVE_MAX_PER_STRIPE ? -1 : stripe_grow(s);
}

/* Insert e without counting it; the order lock held. */
static inline int insert_locked(const vti_live *e)
{
    stripe *s = stripe_of(key_hash(e->addr));
    uint64_t val;
    if (stripe_reserve(s) != 0 || !(val = encode(e)))
        return -1;
    place(s->slots, s->cap, e->addr, val);
    s->count++;
    return 0;
}

/* Insert e without counting it (a mapping). */
static int insert_uncounted(const vti_live *e)
{
    bool taken = guard_begin();
    int rc = insert_locked(e);
    guard_end(taken);
    return rc;
}

int vti_live_insert(const vti_live *e)
{
    bool taken = guard_begin();
    int rc = insert_locked(e);
    if (rc == 0)
        count_alloc(e);
    guard_end(taken);
    return rc;
}

/* Forward distance from slot a to slot b. */
static uint32_t dist(uint32_t a, uint32_t b, uint32_t cap)
{
    return b >= a ? b - a : b + cap - a;
}

/* Backward-shift deletion of slot i (Knuth 6.4, algorithm R); its overflow
 * record goes too. */
static inline void erase(stripe *s, uint32_t i)
{
    uint32_t j = i;
    if (site_of(&s->slots[i]) == SITE_OVERFLOW)
        overflow_drop(s->slots[i].val & SIZE_MASK);
    for (;;) {
        uint32_t home;
        j = next(j, s->cap);
        if (!s->slots[j].val)
            break;
        home = home_of(key_hash(s->slots[j].addr), s->cap);
        if (dist(home, j, s->cap) >= dist(i, j, s->cap)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i] = (slot){0, 0};
    s->count--;
}

static inline void count_free(const vti_live *e)
{
    dev_counters *c = dev(e->device);
    count_slack(c, e, -1);
    if (e->api == VT_API_CU_GRAPH_LAUNCH)
        add(&c->graph_bytes, -e->size);
    add(&c->live_bytes, -e->size);
    add(&c->frees, 1);
    add(&live_all, (uint64_t)-1);
}

/* The slot of (addr, space) whose hash is h in s, or NULL; the order lock
 * held. */
static inline slot *find(stripe *s, uint64_t h, uint64_t addr, uint8_t space)
{
    for (uint32_t i = home_of(h, s->cap); s->slots[i].val; i = next(i, s->cap))
        if (s->slots[i].addr == addr && space_of(&s->slots[i]) == space)
            return &s->slots[i];
    return NULL;
}

bool vti_live_remove(uint64_t addr, uint8_t space, vti_live *restrict out)
{
    uint64_t h = key_hash(addr);
    stripe *s = stripe_of(h);
    slot *sl;
    bool taken = guard_begin();
    sl = find(s, h, addr, space);
    if (sl) {
        decode(sl, out);
        erase(s, (uint32_t)(sl - s->slots));
        count_free(out);
    }
    guard_end(taken);
    return sl != NULL;
}

/* The overflow record of a live VMM handle (they always have one), or
 * NULL; its slot in *where. The order lock held. */
static vti_live *handle_find(uint64_t handle, stripe **s, slot **where)
{
    uint64_t h = key_hash(handle);
    *s = stripe_of(h);
    *where = find(*s, h, handle, VT_SPACE_VMM_HANDLE);
    return *where && site_of(*where) == SITE_OVERFLOW ? record_of(*where) : NULL;
}

int vti_live_release(uint64_t handle, vti_live *out)
{
    stripe *s;
    slot *sl;
    int done = VTI_RELEASE_NOT_LIVE;
    bool taken = guard_begin();
    vti_live *r = handle_find(handle, &s, &sl);
    if (r && r->retains) {
        r->retains--;
        done = VTI_RELEASE_RETAINED;
    } else if (r) {
        *out = *r;
        r->released = 1;
        done = VTI_RELEASE_PENDING;
        if (r->maps == 0) {
            erase(s, (uint32_t)(sl - s->slots));
            count_free(out);
            done = VTI_RELEASE_DIED;
        }
    }
    guard_end(taken);
    return done;
}

void vti_live_retain(uint64_t handle)
{
    stripe *s;
    slot *sl;
    bool taken = guard_begin();
    vti_live *r = handle_find(handle, &s, &sl);
    if (r && r->released)
        r->released = 0;
    else if (r && r->retains < UINT16_MAX)
        r->retains++;
    guard_end(taken);
}

/* Add delta to handle's mapping count; a released handle whose count drops
 * to 0 dies (then *gone is it, and true is returned). *device: the handle's
 * device, -1 when it is not live. */
static bool handle_maps(uint64_t handle, int delta, int *device, vti_live *gone)
{
    stripe *s;
    slot *sl;
    bool died = false;
    bool taken = guard_begin();
    vti_live *r = handle_find(handle, &s, &sl);
    *device = -1;
    if (r && (delta > 0 || r->maps)) {
        *device = r->device;
        r->maps += (uint32_t)delta;
        *gone = *r;
        if (gone->maps == 0 && gone->released) {
            erase(s, (uint32_t)(sl - s->slots));
            count_free(gone);
            died = true;
        }
    }
    guard_end(taken);
    return died;
}

int vti_live_vmm_map(uint64_t handle, uint64_t addr, uint64_t size)
{
    int device, unused;
    vti_live gone;
    handle_maps(handle, 1, &device, &gone);
    vti_live m = {.addr = addr,
                  .size = size,
                  .device = INT16_MIN,
                  .space = VTI_SPACE_MAPPING,
                  .handle = handle};
    if (device != -1 && insert_uncounted(&m) != 0) /* map full: the handle dies at its release */
        handle_maps(handle, -1, &unused, &gone);   /* (not released yet: it does not die here) */
    return device;
}

/* Remove the mapping at addr: its size, 0 when there is none; a released
 * handle that dies with it goes to died(handle's entry, arg). */
static uint64_t unmap_one(uint64_t addr, void (*died)(const vti_live *, void *), void *arg)
{
    uint64_t h = key_hash(addr);
    stripe *s = stripe_of(h);
    vti_live m = {0}, gone;
    int device;
    bool taken = guard_begin();
    slot *sl = find(s, h, addr, VTI_SPACE_MAPPING);
    if (sl) {
        decode(sl, &m);
        erase(s, (uint32_t)(sl - s->slots));
    }
    guard_end(taken);
    if (sl && handle_maps(m.handle, -1, &device, &gone))
        died(&gone, arg);
    return sl ? m.size : 0;
}

void vti_live_vmm_unmap(uint64_t addr, uint64_t size, void (*died)(const vti_live *, void *),
                        void *arg)
{
    /* mappings placed back to back from addr (an expandable segment's chunks) */
    for (uint64_t a = addr, n; a < addr + size && (n = unmap_one(a, died, arg)); a += n)
        ;
}

bool vti_live_has(uint64_t addr)
{
    uint64_t h = key_hash(addr);
    stripe *s = stripe_of(h);
    bool found;
    bool taken = guard_begin();
    found = find(s, h, addr, VT_SPACE_ADDR) != NULL;
    guard_end(taken);
    return found;
}

/* Whether e dies with device's contexts (cudaDeviceReset and the driver's
 * context ends): every device address allocation and CUDA array of the
 * device, stream-ordered ones too (the reset destroys the primary context
 * and with it its memory pools: "Destroy all allocations and reset all state
 * on the current device", CUDA Runtime API, cudaDeviceReset), and the pinned
 * and registered host memory made while one of its contexts was current
 * (VTI_LIVE_HOST_OF; an H200 freed it, tests/gpu/README.md); not VMM
 * handles. The simulated device's ledger agrees. */
static bool dies_in_reset(const vti_live *e, int device)
{
    const vt_api_info *info = vt_api_get((enum vt_api)e->api);
    if (e->space != VT_SPACE_ADDR && e->space != VT_SPACE_ARRAY)
        return false;
    return vt_kind_is_host(info->kind) ? vti_live_host_owner(e) == device : e->device == device;
}

/* Pop the first live entry of device at or after slot *pos of stripe s into
 * *out; false when none. The slot popped is looked at again next time
 * (deletion shifts a later entry into it; entries only move backwards, so
 * none is skipped). */
static bool pop_device(stripe *s, int device, uint32_t *pos, vti_live *out)
{
    bool found = false;
    bool taken = guard_begin();
    for (; *pos < s->cap; ++*pos) {
        if (!s->slots[*pos].val)
            continue;
        decode(&s->slots[*pos], out);
        if (dies_in_reset(out, device)) {
            erase(s, *pos);
            found = true;
            break;
        }
    }
    guard_end(taken);
    return found;
}

void vti_live_drain_device(int device, void (*fn)(const vti_live *e, void *arg), void *arg)
{
    vti_live e;
    bool taken = guard_begin();
    for (int k = 0; k < STRIPES; k++)
        for (uint32_t pos = 0; pop_device(&stripes[k], device, &pos, &e);) {
            count_free(&e);
            fn(&e, arg);
        }
    guard_end(taken);
}

void vti_live_each(void (*fn)(const vti_live *e, void *arg), void *arg)
{
    vti_live e;
    bool taken = guard_begin();
    for (int k = 0; k < STRIPES; k++)
        for (uint32_t i = 0; stripes[k].slots != no_slots && i < stripes[k].cap; i++)
            if (stripes[k].slots[i].val) {
                decode(&stripes[k].slots[i], &e);
                fn(&e, arg);
            }
    guard_end(taken);
}

void vti_counters_get(int device, vti_counters *out)
{
    dev_counters *c = dev(device);
    bool taken = guard_begin();
    out->live_bytes = atomic_load(&c->live_bytes);
    out->slack_bytes = atomic_load(&c->slack_bytes);
    out->slack_pool_bytes = atomic_load(&c->slack_pool_bytes);
    out->graph_bytes = atomic_load(&c->graph_bytes);
    out->peak_bytes = atomic_load(&c->peak_bytes);
    out->allocs = atomic_load(&c->allocs);
    out->frees = atomic_load(&c->frees);
    out->live_count = out->allocs - out->frees;
    out->failures = atomic_load(&c->failures);
    guard_end(taken);
}

uint64_t vti_live_peak_count(void)
{
    return atomic_load(&live_all_peak);
}

void vti_count_failure(int device)
{
    bool taken = guard_begin();
    add(&dev(device)->failures, 1);
    guard_end(taken);
}

/* Add (stack, bytes) into the site list (linear; n small relative to the
 * number of distinct stacks in practice, bounded by cap). */
static void site_add(vti_site *list, int *n, int cap, uint32_t stack, uint64_t bytes)
{
    for (int i = 0; i < *n; i++)
        if (list[i].stack == stack) {
            list[i].bytes += bytes;
            list[i].count++;
            return;
        }
    if (*n < cap)
        list[(*n)++] = (vti_site){stack, bytes, 1};
}

static int site_cmp(const void *a, const void *b)
{
    const vti_site *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Add stripe s's entries of device to the list. */
static void stripe_sites(stripe *s, int device, vti_site *list, int *n, int cap)
{
    vti_live e;
    bool taken = guard_begin();
    for (uint32_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].val)
            continue;
        decode(&s->slots[i], &e);
        if (vti_live_device(&e) == device)
            site_add(list, n, cap, e.stack, e.size);
    }
    guard_end(taken);
}

int vti_live_top_sites(int device, vti_site *out, int n)
{
    enum { CAP = 4096 };
    vti_site *list = malloc(CAP * sizeof *list);
    int count = 0;
    if (!list)
        return 0;
    for (int k = 0; k < STRIPES; k++)
        stripe_sites(&stripes[k], device, list, &count, CAP);
    qsort(list, (size_t)count, sizeof *list, site_cmp);
    if (count > n)
        count = n;
    memcpy(out, list, (size_t)count * sizeof *list);
    free(list);
    return count;
}

void vti_live_where(uint64_t addr, uint8_t space, vti_live_place *out)
{
    uint64_t h = key_hash(addr);
    stripe *s = stripe_of(h);
    bool taken = guard_begin();
    slot *sl = find(s, h, addr, space);
    *out = (vti_live_place){.stripe = (int)(s - stripes),
                            .cap = s->cap,
                            .home = home_of(h, s->cap),
                            .slot = sl ? (int64_t)(sl - s->slots) : -1,
                            .overflow = sl && site_of(sl) == SITE_OVERFLOW,
                            .sites = sites.n,
                            .records = overflow.n};
    guard_end(taken);
}

void vti_live_fork_reset(void)
{
    /* the parent's tables are left, not freed: they may be mid-growth */
    for (int k = 0; k < STRIPES; k++)
        stripes[k] = (stripe){.slots = no_slots, .cap = 1};
    memset(&sites, 0, sizeof sites);
    memset(&overflow, 0, sizeof overflow);
    memset(counters, 0, sizeof counters);
    atomic_store(&live_all, 0);
    atomic_store(&live_all_peak, 0);
}
