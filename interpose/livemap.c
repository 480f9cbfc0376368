/* livemap.c: the in-process map of live allocations (address -> size,
 * stack, device, api) and per-device counters, for the OOM diagnosis and
 * the exit summary. Open addressing (32-byte slots, load at most 3/4) with
 * linear probing and backward-shift
 * deletion, in STRIPES tables by address hash (each grows alone). One lock
 * guards it all: the order lock (vti_internal.h), which the hooks already
 * hold around every allocation and free, so the hot path takes no lock of
 * its own and updates the counters without atomic read-modify-writes; the
 * other callers (VMM mappings, device reset, CUPTI, the growth and exit
 * lines) take it here. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "vti_internal.h"

#define STRIPES 64
/* Bounded memory: live allocations tracked at most (then tracing stops). */
#define MAX_LIVE_PER_STRIPE (1u << 16)

typedef struct slot {
    vti_live e; /* e.used: the slot holds an entry */
} slot;

typedef struct stripe {
    slot *slots;
    size_t mask, count;
} stripe;

static stripe stripes[STRIPES];

typedef struct dev_counters {
    _Atomic uint64_t live_bytes, peak_bytes, live_count, allocs, frees, failures;
} dev_counters;

static dev_counters counters[VTI_MAX_DEVICES + 1]; /* [0] = host (-1) */

/* The order lock (vti_internal.h, vti_order_lock); tl_holds: this thread
 * holds it. */
static pthread_mutex_t order_mutex = PTHREAD_MUTEX_INITIALIZER;
static VTI_TLS bool tl_holds;

void vti_order_lock(void)
{
    pthread_mutex_lock(&order_mutex);
    tl_holds = true;
}

void vti_order_unlock(void)
{
    tl_holds = false;
    pthread_mutex_unlock(&order_mutex);
}

/* Take the order lock unless this thread holds it; true when taken. */
static bool guard_begin(void)
{
    if (tl_holds)
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

static uint64_t key_hash(uint64_t addr, uint8_t space)
{
    uint64_t h = (addr ^ ((uint64_t)space << 62)) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static stripe *stripe_of(uint64_t h)
{
    return &stripes[(h >> 58) % STRIPES];
}

static dev_counters *dev(int device)
{
    int i = device + 1;
    if (i < 0)
        i = 0;
    if (i > VTI_MAX_DEVICES)
        i = VTI_MAX_DEVICES;
    return &counters[i];
}

static void place(slot *slots, size_t mask, const vti_live *e)
{
    size_t i = key_hash(e->addr, e->space) & mask;
    while (slots[i].e.used)
        i = (i + 1) & mask;
    slots[i].e = *e;
    slots[i].e.used = true;
}

static int stripe_grow(stripe *s)
{
    size_t cap = s->slots ? (s->mask + 1) * 2 : 256;
    slot *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; s->slots && i <= s->mask; i++)
        if (s->slots[i].e.used)
            place(n, cap - 1, &s->slots[i].e);
    free(s->slots);
    s->slots = n;
    s->mask = cap - 1;
    return 0;
}

static void count_alloc(const vti_live *e)
{
    dev_counters *c = dev(e->device);
    uint64_t live = atomic_load_explicit(&c->live_bytes, memory_order_relaxed) + e->size;
    atomic_store_explicit(&c->live_bytes, live, memory_order_relaxed);
    if (live > atomic_load_explicit(&c->peak_bytes, memory_order_relaxed))
        atomic_store_explicit(&c->peak_bytes, live, memory_order_relaxed);
    add(&c->live_count, 1);
    add(&c->allocs, 1);
}

/* Insert e without counting it (a mapping). */
static int insert_uncounted(const vti_live *e)
{
    stripe *s = stripe_of(key_hash(e->addr, e->space));
    int rc = 0;
    bool taken = guard_begin();
    if (s->count >= MAX_LIVE_PER_STRIPE)
        rc = -1;
    else if ((!s->slots || (s->count + 1) * 4 > (s->mask + 1) * 3) && stripe_grow(s) != 0)
        rc = -1;
    if (rc == 0) {
        place(s->slots, s->mask, e);
        s->count++;
    }
    guard_end(taken);
    return rc;
}

int vti_live_insert(const vti_live *e)
{
    bool taken = guard_begin();
    int rc = insert_uncounted(e);
    if (rc == 0)
        count_alloc(e);
    guard_end(taken);
    return rc;
}

/* Backward-shift deletion of slot i (Knuth 6.4, algorithm R). */
static void erase(stripe *s, size_t i)
{
    size_t j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & s->mask;
        if (!s->slots[j].e.used)
            break;
        home = key_hash(s->slots[j].e.addr, s->slots[j].e.space) & s->mask;
        if (((j - home) & s->mask) >= ((j - i) & s->mask)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].e.used = false;
    s->count--;
}

static void count_free(const vti_live *e)
{
    dev_counters *c = dev(e->device);
    add(&c->live_bytes, -e->size);
    add(&c->live_count, (uint64_t)-1);
    add(&c->frees, 1);
}

/* The slot of (addr, space) whose hash is h in s, or NULL; s->lock held. */
static slot *find(stripe *s, uint64_t h, uint64_t addr, uint8_t space)
{
    for (size_t i = h & s->mask; s->slots && s->slots[i].e.used; i = (i + 1) & s->mask)
        if (s->slots[i].e.addr == addr && s->slots[i].e.space == space)
            return &s->slots[i];
    return NULL;
}

bool vti_live_remove(uint64_t addr, uint8_t space, vti_live *out)
{
    uint64_t h = key_hash(addr, space);
    stripe *s = stripe_of(h);
    slot *sl;
    bool taken = guard_begin();
    sl = find(s, h, addr, space);
    if (sl) {
        *out = sl->e;
        erase(s, (size_t)(sl - s->slots));
        count_free(out);
    }
    guard_end(taken);
    return sl != NULL;
}

bool vti_live_release(uint64_t handle, vti_live *out)
{
    uint64_t h = key_hash(handle, VT_SPACE_VMM_HANDLE);
    stripe *s = stripe_of(h);
    bool dies = false;
    bool taken = guard_begin();
    slot *sl = find(s, h, handle, VT_SPACE_VMM_HANDLE);
    if (sl) {
        *out = sl->e;
        sl->e.released = 1;
        dies = sl->e.maps == 0;
        if (dies) {
            erase(s, (size_t)(sl - s->slots));
            count_free(out);
        }
    }
    guard_end(taken);
    return sl != NULL;
}

/* Add delta to handle's mapping count; a released handle whose count drops
 * to 0 dies. Returns its device, -1 when it is not live. */
static int handle_maps(uint64_t handle, int delta)
{
    uint64_t h = key_hash(handle, VT_SPACE_VMM_HANDLE);
    stripe *s = stripe_of(h);
    vti_live gone;
    int device = -1;
    bool dies = false;
    bool taken = guard_begin();
    slot *sl = find(s, h, handle, VT_SPACE_VMM_HANDLE);
    if (sl && (delta > 0 || sl->e.maps)) {
        device = sl->e.device;
        sl->e.maps += (uint32_t)delta;
        dies = sl->e.maps == 0 && sl->e.released;
        gone = sl->e;
        if (dies) {
            erase(s, (size_t)(sl - s->slots));
            count_free(&gone);
        }
    }
    guard_end(taken);
    return device;
}

int vti_live_vmm_map(uint64_t handle, uint64_t addr, uint64_t size)
{
    int device = handle_maps(handle, 1);
    vti_live m = {.addr = addr,
                  .size = size,
                  .device = INT16_MIN,
                  .space = VTI_SPACE_MAPPING,
                  .handle = handle};
    if (device != -1 && insert_uncounted(&m) != 0)
        handle_maps(handle, -1); /* map full: the handle dies at its release */
    return device;
}

/* Remove the mapping at addr: its size, 0 when there is none. */
static uint64_t unmap_one(uint64_t addr)
{
    uint64_t h = key_hash(addr, VTI_SPACE_MAPPING);
    stripe *s = stripe_of(h);
    vti_live m = {0};
    bool taken = guard_begin();
    slot *sl = find(s, h, addr, VTI_SPACE_MAPPING);
    if (sl) {
        m = sl->e;
        erase(s, (size_t)(sl - s->slots));
    }
    guard_end(taken);
    if (sl)
        handle_maps(m.handle, -1);
    return sl ? m.size : 0;
}

void vti_live_vmm_unmap(uint64_t addr, uint64_t size)
{
    /* mappings placed back to back from addr (an expandable segment's chunks) */
    for (uint64_t a = addr, n; a < addr + size && (n = unmap_one(a)); a += n)
        ;
}

bool vti_live_has(uint64_t addr)
{
    uint64_t h = key_hash(addr, 0);
    stripe *s = stripe_of(h);
    bool found;
    bool taken = guard_begin();
    found = find(s, h, addr, 0) != NULL;
    guard_end(taken);
    return found;
}

/* What cudaDeviceReset frees: every device address allocation, stream-ordered
 * ones too (the reset destroys the primary context and with it its memory
 * pools: "Destroy all allocations and reset all state on the current device",
 * CUDA Runtime API, cudaDeviceReset; the simulated device's ledger agrees),
 * but neither host memory nor VMM handles. */
static bool dies_in_reset(const vti_live *e)
{
    const vt_api_info *info = vt_api_get((enum vt_api)e->api);
    return e->space == VT_SPACE_ADDR && !vt_kind_is_host(info->kind);
}

/* Pop one live entry of device from stripe s into *out; false when none. */
static bool pop_device(stripe *s, int device, vti_live *out)
{
    bool found = false;
    bool taken = guard_begin();
    for (size_t i = 0; s->slots && i <= s->mask; i++) {
        if (s->slots[i].e.used && s->slots[i].e.device == device && dies_in_reset(&s->slots[i].e)) {
            *out = s->slots[i].e;
            erase(s, i);
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
        while (pop_device(&stripes[k], device, &e)) {
            count_free(&e);
            fn(&e, arg);
        }
    guard_end(taken);
}

void vti_counters_get(int device, vti_counters *out)
{
    dev_counters *c = dev(device);
    bool taken = guard_begin();
    out->live_bytes = atomic_load(&c->live_bytes);
    out->peak_bytes = atomic_load(&c->peak_bytes);
    out->live_count = atomic_load(&c->live_count);
    out->allocs = atomic_load(&c->allocs);
    out->frees = atomic_load(&c->frees);
    out->failures = atomic_load(&c->failures);
    guard_end(taken);
}

void vti_count_failure(int device)
{
    bool taken = guard_begin();
    add(&dev(device)->failures, 1);
    guard_end(taken);
}

/* Add (stack, bytes) into the site list (linear; n small relative to the
 * number of distinct stacks in practice, bounded by cap). */
static void site_add(vti_site *sites, int *n, int cap, uint32_t stack, uint64_t bytes)
{
    for (int i = 0; i < *n; i++)
        if (sites[i].stack == stack) {
            sites[i].bytes += bytes;
            sites[i].count++;
            return;
        }
    if (*n < cap)
        sites[(*n)++] = (vti_site){stack, bytes, 1};
}

static int site_cmp(const void *a, const void *b)
{
    const vti_site *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

int vti_live_top_sites(int device, vti_site *out, int n)
{
    enum { CAP = 4096 };
    vti_site *sites = malloc(CAP * sizeof *sites);
    int count = 0;
    if (!sites)
        return 0;
    for (int k = 0; k < STRIPES; k++) {
        stripe *s = &stripes[k];
        bool taken = guard_begin();
        for (size_t i = 0; s->slots && i <= s->mask; i++)
            if (s->slots[i].e.used && s->slots[i].e.device == device)
                site_add(sites, &count, CAP, s->slots[i].e.stack, s->slots[i].e.size);
        guard_end(taken);
    }
    qsort(sites, (size_t)count, sizeof *sites, site_cmp);
    if (count > n)
        count = n;
    memcpy(out, sites, (size_t)count * sizeof *sites);
    free(sites);
    return count;
}
