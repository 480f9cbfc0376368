/* test_livemap.c: interpose/livemap.c, the preload's map of live
 * allocations, compiled into this program with small limits (at most
 * VTI_LIVE_MAX_SITES = 1000 distinct sites, so that entries beyond them take
 * overflow records; test_livemap_full also with VTI_LIVE_MAX_PER_STRIPE =
 * 300). Every answer of the map (vti_live_remove/release/has, the counters)
 * is held against a plain reference: arrays indexed by allocation number.
 * Covered: random operations with sizes >= 2^40, many distinct sites, the
 * same address in the address and VMM-handle spaces, growth across several
 * resizes (and the memory that leaves: at most 32 bytes of slots per live
 * entry), backward-shift deletion across the end of a stripe, VMM mappings,
 * the device reset's drain, a full stripe. The entry checker is shown to
 * fail on wrong entries. Each test leaves the map empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vti_internal.h"

#define NIDS 160000
#ifdef LIVEMAP_FULL_ONLY
#define FULL_LIMIT VTI_LIVE_MAX_PER_STRIPE
#else
#define FULL_LIMIT 0 /* full_stripe runs in test_livemap_full only */
#endif
#define NDEV 8 /* devices 0..NDEV-1, and -1 (host) */

/* The reference: entry id of space sp (VT_SPACE_ADDR, VT_SPACE_VMM_HANDLE)
 * is live when ref[sp][id].used. Both spaces use the same address for an
 * id: the same value is an allocation's address and a handle. */
static vti_live ref[2][NIDS];
static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t rnd(void)
{
    /* xorshift64* (Vigna 2016) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Address of id: a bijection of id (distinct for distinct ids), 256-aligned. */
static uint64_t addr_of(uint32_t id)
{
    uint32_t x = id + 1;
    x = (x ^ (x >> 16)) * 0x45D9F3Bu;
    x = (x ^ (x >> 16)) * 0x45D9F3Bu;
    x ^= x >> 16;
    return 0x7F0000000000ull | (uint64_t)x << 8;
}

/* NULL when got is want (every field a caller reads); else which differs. */
static const char *entry_diff(const vti_live *want, const vti_live *got)
{
    if (got->addr != want->addr)
        return "addr";
    if (got->size != want->size)
        return "size";
    if (got->device != want->device)
        return "device";
    if (got->api != want->api)
        return "api";
    if (got->space != want->space)
        return "space";
    if (want->space == VTI_SPACE_MAPPING)
        return got->handle != want->handle ? "handle" : NULL;
    if (got->stack != want->stack)
        return "stack";
    if (want->space == VT_SPACE_VMM_HANDLE && got->maps != want->maps)
        return "maps";
    return NULL;
}

static void expect_entry(const vti_live *want, const vti_live *got)
{
    const char *d = entry_diff(want, got);
    if (d)
        fail_msg("entry at 0x%llx (space %d): %s differs", (unsigned long long)want->addr,
                 want->space, d);
}

static uint64_t random_size(void)
{
    uint64_t r = rnd() % 100;
    if (r < 5) /* does not fit the slot's 40 bits */
        return (1ull << 40) + (rnd() % (1ull << 44));
    if (r < 8)
        return (1ull << 40) - 1 - rnd() % 2; /* the largest that fit */
    return (rnd() % 4096 + 1) * 256;
}

static const uint8_t apis[] = {VT_API_CUDA_MALLOC, VT_API_CUDA_MALLOC_ASYNC, VT_API_CU_MEM_ALLOC,
                               VT_API_CUDA_MALLOC_MANAGED, VT_API_CUDA_MALLOC_HOST};

/* A new random entry for id in space sp. */
static vti_live random_entry(uint32_t id, uint8_t sp)
{
    vti_live e = {.addr = addr_of(id), .size = random_size(), .space = sp};
    e.stack = (uint32_t)(rnd() % 3000); /* three times VTI_LIVE_MAX_SITES sites */
    e.api = sp == VT_SPACE_VMM_HANDLE ? VT_API_CU_MEM_CREATE : apis[rnd() % sizeof apis];
    e.device = e.api == VT_API_CUDA_MALLOC_HOST ? -1 : (int16_t)(rnd() % NDEV);
    return e;
}

static void ref_insert(uint32_t id, uint8_t sp)
{
    vti_live e = random_entry(id, sp);
    assert_int_equal(vti_live_insert(&e), 0);
    e.used = 1;
    ref[sp][id] = e;
}

/* Remove id (space sp) from map and reference; the map's answer checked. */
static void ref_remove(uint32_t id, uint8_t sp)
{
    vti_live got;
    bool live = sp == VT_SPACE_VMM_HANDLE
                    ? vti_live_release(addr_of(id), &got) == VTI_RELEASE_DIED /* never mapped */
                    : vti_live_remove(addr_of(id), sp, &got);
    if (live != (bool)ref[sp][id].used)
        fail_msg("id %u space %d: map says %s", id, sp, live ? "live" : "not live");
    if (live)
        expect_entry(&ref[sp][id], &got);
    ref[sp][id].used = 0;
}

/* Counters of every device against the reference. */
static void expect_counters(void)
{
    for (int d = -1; d < NDEV; d++) {
        uint64_t bytes = 0, count = 0;
        vti_counters c;
        for (int sp = 0; sp < 2; sp++)
            for (uint32_t id = 0; id < NIDS; id++)
                if (ref[sp][id].used && ref[sp][id].device == d) {
                    bytes += ref[sp][id].size;
                    count++;
                }
        vti_counters_get(d, &c);
        assert_int_equal(c.live_bytes, bytes);
        assert_int_equal(c.live_count, count);
        assert_int_equal(c.allocs - c.frees, count);
    }
}

/* Slots of all stripes together, and the live entries of the reference;
 * each stripe holds at most 17/20 of its slots. */
static void slot_use(uint64_t *slots, uint64_t *live)
{
    uint32_t count[64] = {0}, cap[64] = {0};
    *slots = *live = 0;
    for (int sp = 0; sp < 2; sp++)
        for (uint32_t id = 0; id < NIDS; id++)
            if (ref[sp][id].used) {
                vti_live_place p;
                vti_live_where(addr_of(id), (uint8_t)sp, &p);
                assert_true(p.slot >= 0 && p.slot < p.cap);
                count[p.stripe]++;
                cap[p.stripe] = p.cap;
                ++*live;
            }
    for (int k = 0; k < 64; k++) {
        assert_true((uint64_t)count[k] * 20 <= (uint64_t)cap[k] * 17);
        *slots += cap[k];
    }
}

/* Insert ids 0..n-1 (a tenth of them handles) and check that each stripe
 * stays at most 17/20 full, grows only when an insert would take it past
 * that, and then by at most 3/2 (rounded up to a 4 KiB page of slots). */
static void ramp_up(uint32_t n)
{
    uint32_t count[64] = {0}, cap[64] = {0};
    for (uint32_t id = 0; id < n; id++) {
        uint8_t sp = rnd() % 10 ? VT_SPACE_ADDR : VT_SPACE_VMM_HANDLE;
        vti_live_place p;
        ref_insert(id, sp);
        vti_live_where(addr_of(id), sp, &p);
        if (cap[p.stripe] && p.cap != cap[p.stripe]) {
            if ((uint64_t)(count[p.stripe] + 1) * 20 <= (uint64_t)cap[p.stripe] * 17)
                fail_msg("stripe %d grew at %u of %u", p.stripe, count[p.stripe], cap[p.stripe]);
            assert_true(p.cap > cap[p.stripe] && p.cap <= cap[p.stripe] * 3 / 2 + 256);
        }
        cap[p.stripe] = p.cap;
        if ((uint64_t)++count[p.stripe] * 20 > (uint64_t)p.cap * 17)
            fail_msg("stripe %d: %u in %u slots", p.stripe, count[p.stripe], p.cap);
    }
}

static void remove_all(void)
{
    for (int sp = 0; sp < 2; sp++)
        for (uint32_t id = 0; id < NIDS; id++)
            if (ref[sp][id].used)
                ref_remove(id, (uint8_t)sp);
    expect_counters();
}

/* Random inserts, removes (of live and dead entries) and lookups in both
 * spaces against the reference; first growing to 150000 live (several
 * resizes of every stripe), then a mix, then down to none. */
static void random_against_reference(void **state)
{
    uint64_t slots, live;
    vti_live_place p;
    (void)state;
    ramp_up(150000);
    expect_counters();
    slot_use(&slots, &live);
    assert_int_equal(live, 150000);
    /* memory: 16-byte slots, at most 32 bytes per live entry */
    if (slots * 16 > live * 32)
        fail_msg("%llu slots for %llu live: %.1f bytes each", (unsigned long long)slots,
                 (unsigned long long)live, 16.0 * (double)slots / (double)live);
    vti_live_where(addr_of(0), VT_SPACE_ADDR, &p);
    assert_true(p.cap >= 256 * 3 / 2 * 3 / 2 * 3 / 2 * 3 / 2); /* grew at least 4 times */
    assert_int_equal(p.sites, 1000);                           /* the sites ran out */
    for (int op = 0; op < 300000; op++) {
        uint32_t id = (uint32_t)(rnd() % NIDS);
        uint8_t sp = rnd() % 4 ? VT_SPACE_ADDR : VT_SPACE_VMM_HANDLE;
        uint64_t r = rnd() % 3;
        if (r == 0 && !ref[sp][id].used)
            ref_insert(id, sp);
        else if (r == 1)
            ref_remove(id, sp);
        else if (vti_live_has(addr_of(id)) != (bool)ref[VT_SPACE_ADDR][id].used)
            fail_msg("vti_live_has(id %u) differs", id);
    }
    expect_counters();
    remove_all();
}

/* Candidates for one stripe: addresses whose home slot is the last (two),
 * the first, and the one before the last. */
typedef struct wrap_set {
    uint64_t last[3], first, before_last;
    int nlast, nfirst, nbefore;
} wrap_set;

/* Fill sets[stripe] until one stripe has them all; its index. */
static int find_wrap_set(wrap_set *sets)
{
    for (uint64_t a = 1;; a++) {
        vti_live_place p;
        wrap_set *w;
        vti_live_where(a << 8, VT_SPACE_ADDR, &p);
        w = &sets[p.stripe];
        if (p.home == p.cap - 1 && w->nlast < 3)
            w->last[w->nlast++] = a << 8;
        else if (p.home == 0 && !w->nfirst)
            w->first = a << 8, w->nfirst = 1;
        else if (p.home == p.cap - 2 && !w->nbefore)
            w->before_last = a << 8, w->nbefore = 1;
        if (w->nlast == 3 && w->nfirst && w->nbefore)
            return p.stripe;
    }
}

static int64_t slot_of(uint64_t addr)
{
    vti_live_place p;
    vti_live_where(addr, VT_SPACE_ADDR, &p);
    return p.slot;
}

static void insert_plain(uint64_t addr)
{
    vti_live e = {.addr = addr, .size = 256, .stack = 7, .api = VT_API_CUDA_MALLOC};
    assert_int_equal(vti_live_insert(&e), 0);
}

static void remove_plain(uint64_t addr)
{
    vti_live got;
    assert_true(vti_live_remove(addr, VT_SPACE_ADDR, &got));
    assert_int_equal(got.addr, addr);
}

/* Every stripe past its first growth (so that capacities stay put). */
static void grow_all_stripes(void)
{
    uint64_t a = 1ull << 40;
    for (int k = 0; k < 64; k++) {
        vti_live_place p;
        do
            vti_live_where(a += 256, VT_SPACE_ADDR, &p);
        while (p.stripe != k);
        if (p.cap > 1)
            continue;
        insert_plain(a);
        remove_plain(a);
    }
}

/* Backward-shift deletion across the end of a stripe: entries whose home is
 * the last slot wrap to the first ones and move back when a hole opens. */
static void wrap_around_deletion(void **state)
{
    wrap_set sets[64] = {0};
    wrap_set *w;
    vti_live_place p;
    uint32_t last;
    (void)state;
    grow_all_stripes();
    w = &sets[find_wrap_set(sets)];
    vti_live_where(w->first, VT_SPACE_ADDR, &p);
    last = p.cap - 1;
    insert_plain(w->last[0]);
    insert_plain(w->last[1]);
    insert_plain(w->first);
    insert_plain(w->before_last);
    assert_int_equal(slot_of(w->last[0]), last);
    assert_int_equal(slot_of(w->last[1]), 0); /* wrapped */
    assert_int_equal(slot_of(w->first), 1);   /* pushed on by it */
    assert_int_equal(slot_of(w->before_last), last - 1);
    remove_plain(w->last[0]); /* the hole at the end pulls both back */
    assert_int_equal(slot_of(w->last[0]), -1);
    assert_int_equal(slot_of(w->last[1]), last);
    assert_int_equal(slot_of(w->first), 0);
    assert_int_equal(slot_of(w->before_last), last - 1);
    insert_plain(w->last[2]); /* home last: wraps past first to 1 */
    assert_int_equal(slot_of(w->last[2]), 1);
    remove_plain(w->first); /* slot 0: last[2] (home: the last slot) moves into it */
    assert_int_equal(slot_of(w->last[2]), 0);
    assert_int_equal(slot_of(w->last[1]), last);
    remove_plain(w->before_last);
    remove_plain(w->last[1]); /* the hole at its home pulls last[2] back across the end */
    assert_int_equal(slot_of(w->last[2]), last);
    remove_plain(w->last[2]);
    assert_false(vti_live_has(w->last[2]));
}

/* Which entries take overflow records: sizes >= 2^40, VMM handles, sites
 * beyond the limit; the others are packed in their slot. */
static void overflow_records(void **state)
{
    vti_live e = {.addr = 0x5000000, .size = 1ull << 40, .stack = 1, .api = VT_API_CUDA_MALLOC};
    vti_live got;
    vti_live_place p;
    (void)state;
    assert_int_equal(vti_live_insert(&e), 0);
    vti_live_where(e.addr, VT_SPACE_ADDR, &p);
    assert_true(p.overflow);
    assert_true(vti_live_remove(e.addr, VT_SPACE_ADDR, &got));
    expect_entry(&e, &got);
    for (int k = 0; k < 10; k++) { /* a freed record is taken again */
        vti_live_place q;
        assert_int_equal(vti_live_insert(&e), 0);
        assert_true(vti_live_remove(e.addr, VT_SPACE_ADDR, &got));
        vti_live_where(e.addr, VT_SPACE_ADDR, &q);
        assert_int_equal(q.records, p.records);
    }
    e.size = (1ull << 40) - 1;
    assert_int_equal(vti_live_insert(&e), 0);
    vti_live_where(e.addr, VT_SPACE_ADDR, &p);
    assert_true(p.sites < 1000);
    assert_false(p.overflow);      /* packed */
    e.space = VT_SPACE_VMM_HANDLE; /* the same value as a handle */
    e.api = VT_API_CU_MEM_CREATE;
    assert_int_equal(vti_live_insert(&e), 0);
    vti_live_where(e.addr, VT_SPACE_VMM_HANDLE, &p);
    assert_true(p.overflow);
    assert_int_equal(vti_live_release(e.addr, &got), VTI_RELEASE_DIED);
    expect_entry(&e, &got);
    assert_true(vti_live_has(e.addr)); /* the allocation stays */
    assert_true(vti_live_remove(e.addr, VT_SPACE_ADDR, &got));
    assert_int_equal(got.size, (1ull << 40) - 1);
    assert_false(vti_live_has(e.addr));
}

/* vti_live_vmm_unmap's died: counts the handles and keeps the last. */
static void died(const vti_live *e, void *arg)
{
    vti_live *last = arg;
    uint8_t n = last->used;
    *last = *e;
    last->used = (uint8_t)(n + 1);
}

/* A mapped handle outlives its release until its last mapping goes, which
 * reports it (died); a retain between makes it live again. */
static void vmm_mappings(void **state)
{
    vti_live h = {.addr = 0x42,
                  .size = 3 << 20,
                  .stack = 3,
                  .device = 2,
                  .api = VT_API_CU_MEM_CREATE,
                  .space = VT_SPACE_VMM_HANDLE};
    vti_live got;
    vti_live_place p;
    vti_counters c0, c1;
    (void)state;
    assert_int_equal(vti_live_vmm_map(0x43, 0x9000000, 1 << 20), -1); /* not live */
    vti_counters_get(2, &c0);
    assert_int_equal(vti_live_insert(&h), 0);
    for (uint64_t k = 0; k < 3; k++)
        assert_int_equal(vti_live_vmm_map(h.addr, 0x9000000 + (k << 20), 1 << 20), 2);
    assert_false(vti_live_has(0x9000000)); /* a mapping is not an allocation */
    vti_live last = {0};
    vti_live_vmm_unmap(0x9000000, 2 << 20, died, &last); /* two chunks, back to back */
    assert_int_equal(last.used, 0);                      /* not released: nothing died */
    vti_live_where(0x9100000, VTI_SPACE_MAPPING, &p);
    assert_int_equal(p.slot, -1);
    vti_live_where(0x9200000, VTI_SPACE_MAPPING, &p);
    assert_true(p.slot >= 0);
    assert_int_equal(vti_live_release(h.addr, &got), VTI_RELEASE_PENDING);
    h.maps = 1;
    expect_entry(&h, &got);
    vti_live_where(h.addr, VT_SPACE_VMM_HANDLE, &p);
    assert_true(p.slot >= 0); /* released but mapped: live */
    vti_counters_get(2, &c1);
    assert_int_equal(c1.live_count, c0.live_count + 1);
    /* retained again while mapped: live after an unmap, until released */
    vti_live_retain(h.addr);
    assert_int_equal(vti_live_vmm_map(h.addr, 0x9300000, 1 << 20), 2);
    vti_live_vmm_unmap(0x9200000, 1 << 20, died, &last);
    vti_live_vmm_unmap(0x9300000, 1 << 20, died, &last); /* all unmapped: not released, lives */
    assert_int_equal(last.used, 0);
    assert_int_equal(vti_live_vmm_map(h.addr, 0x9200000, 1 << 20), 2);
    /* retained once more: that reference's release is not the handle's */
    vti_live_retain(h.addr);
    assert_int_equal(vti_live_release(h.addr, &got), VTI_RELEASE_RETAINED);
    assert_int_equal(vti_live_release(h.addr, &got), VTI_RELEASE_PENDING);
    assert_int_equal(last.used, 0);
    vti_live_vmm_unmap(0x9200000, 1 << 20, died, &last); /* the last mapping */
    assert_int_equal(last.used, 1);
    h.maps = 0;
    h.released = 1;
    expect_entry(&h, &last);
    vti_live_where(h.addr, VT_SPACE_VMM_HANDLE, &p);
    assert_int_equal(p.slot, -1);
    vti_counters_get(2, &c1);
    assert_int_equal(c1.live_count, c0.live_count);
    assert_int_equal(c1.frees, c0.frees + 1);
}

static void collect(const vti_live *e, void *arg)
{
    uint32_t *n = arg;
    uint32_t id = (uint32_t)(e->size / 256 - 1); /* size encodes the id here */
    expect_entry(&ref[VT_SPACE_ADDR][id], e);
    if (ref[VT_SPACE_ADDR][id].device != 1)
        fail_msg("drained an entry of device %d", ref[VT_SPACE_ADDR][id].device);
    ref[VT_SPACE_ADDR][id].used = 0;
    ++*n;
}

/* The device reset's drain: every address-space entry of the device goes
 * (each reported once), host memory and handles stay. */
static void drain_device(void **state)
{
    uint32_t n = 0, want = 0;
    (void)state;
    for (uint32_t id = 0; id < 20000; id++) {
        vti_live e = random_entry(id, VT_SPACE_ADDR);
        e.size = (uint64_t)(id + 1) * 256;
        e.device = e.api == VT_API_CUDA_MALLOC_HOST ? -1 : (int16_t)(id % 3);
        assert_int_equal(vti_live_insert(&e), 0);
        e.used = 1;
        ref[VT_SPACE_ADDR][id] = e;
        want += e.device == 1;
        if (id % 7 == 0)
            ref_insert(id, VT_SPACE_VMM_HANDLE);
    }
    vti_live_drain_device(1, collect, &n);
    assert_int_equal(n, want);
    for (uint32_t id = 0; id < 20000; id++)
        if (ref[VT_SPACE_ADDR][id].used != vti_live_has(addr_of(id)))
            fail_msg("id %u: after the drain the map says %s", id,
                     vti_live_has(addr_of(id)) ? "live" : "not live");
    expect_counters();
    remove_all();
}

/* vti_live_each's visitor: the entry must be a live one of the reference
 * (ids below *(uint32_t *)arg), not seen before; it is marked seen (used 2). */
static void visit(const vti_live *e, void *arg)
{
    uint32_t n = *(uint32_t *)arg;
    for (uint32_t id = 0; id < n; id++) {
        vti_live *r = &ref[e->space == VT_SPACE_VMM_HANDLE][id];
        if (r->used && r->addr == e->addr && r->space == e->space) {
            if (r->used != 1)
                fail_msg("id %u space %d visited twice", id, e->space);
            expect_entry(r, e);
            r->used = 2;
            return;
        }
    }
    fail_msg("visited %#llx (space %d), which is not live", (unsigned long long)e->addr, e->space);
}

/* vti_live_each visits every live entry once, of both spaces and overflow
 * records too (sizes of 2^40 and more), and nothing removed. */
static void each_visits_all(void **state)
{
    uint32_t n = 3000;
    (void)state;
    for (uint32_t id = 0; id < n; id++) {
        ref_insert(id, VT_SPACE_ADDR);
        if (id % 5 == 0)
            ref_insert(id, VT_SPACE_VMM_HANDLE);
    }
    for (uint32_t id = 0; id < n; id += 3)
        ref_remove(id, VT_SPACE_ADDR);
    vti_live_each(visit, &n);
    for (int sp = 0; sp < 2; sp++)
        for (uint32_t id = 0; id < n; id++) {
            if (ref[sp][id].used == 1)
                fail_msg("id %u space %d live but not visited", id, sp);
            ref[sp][id].used = ref[sp][id].used ? 1 : 0;
        }
    remove_all();
}

/* The entry checker finds each field a caller reads when it differs. */
static void checker_catches_wrong_entry(void **state)
{
    vti_live want = random_entry(5, VT_SPACE_ADDR), got;
    (void)state;
    assert_null(entry_diff(&want, &want));
    got = want, got.addr += 256;
    assert_string_equal(entry_diff(&want, &got), "addr");
    got = want, got.size ^= 1ull << 41;
    assert_string_equal(entry_diff(&want, &got), "size");
    got = want, got.stack++;
    assert_string_equal(entry_diff(&want, &got), "stack");
    got = want, got.device++;
    assert_string_equal(entry_diff(&want, &got), "device");
    got = want, got.api++;
    assert_string_equal(entry_diff(&want, &got), "api");
    got = want, got.space = VT_SPACE_VMM_HANDLE;
    assert_string_equal(entry_diff(&want, &got), "space");
}

/* A full stripe (VTI_LIVE_MAX_PER_STRIPE entries) refuses the next insert,
 * which leaves no trace, and keeps every entry it has; other stripes still
 * take theirs. */
static void full_stripe(void **state)
{
    uint32_t id, in_full = 0;
    vti_live_place p;
    int full;
    (void)state;
    for (id = 0; id < NIDS; id++) {
        vti_live e = random_entry(id, VT_SPACE_ADDR);
        if (vti_live_insert(&e) != 0)
            break;
        e.used = 1;
        ref[VT_SPACE_ADDR][id] = e;
    }
    assert_true(id < NIDS);
    vti_live_where(addr_of(id), VT_SPACE_ADDR, &p);
    assert_int_equal(p.slot, -1);
    full = p.stripe;
    for (uint32_t k = 0; k < id; k++) {
        vti_live_where(addr_of(k), VT_SPACE_ADDR, &p);
        assert_true(p.slot >= 0);
        in_full += p.stripe == full;
    }
    assert_int_equal(in_full, FULL_LIMIT);
    do
        vti_live_where(addr_of(++id), VT_SPACE_ADDR, &p);
    while (p.stripe == full);
    ref_insert(id, VT_SPACE_ADDR);
    expect_counters();
    remove_all();
}

int main(void)
{
    const struct CMUnitTest map_tests[] = {
        cmocka_unit_test(checker_catches_wrong_entry),
        cmocka_unit_test(wrap_around_deletion),
        cmocka_unit_test(overflow_records),
        cmocka_unit_test(vmm_mappings),
        cmocka_unit_test(random_against_reference),
        cmocka_unit_test(drain_device),
        cmocka_unit_test(each_visits_all),
    };
    const struct CMUnitTest full_tests[] = {cmocka_unit_test(full_stripe)};
#ifdef LIVEMAP_FULL_ONLY
    (void)map_tests;
    return cmocka_run_group_tests(full_tests, NULL, NULL);
#else
    (void)full_tests;
    return cmocka_run_group_tests(map_tests, NULL, NULL);
#endif
}
