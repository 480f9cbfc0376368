/* test_encode.c: trace/records.c's specialised encoders (the records written
 * for every allocation and free, NVTX Mem region registration and NVTX range)
 * write exactly the bytes, and leave exactly the delta state, of the generic
 * loop over the FIELDS table (vt_rec_encode_generic), on random events of
 * every type in one long chunk and on every combination of extreme values
 * (0, 1, the largest 1- and 2-byte varints, the largest values of 32 and 64
 * bits, the smallest negative ones). The comparison is shown to fail on a
 * changed byte, length or delta state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "records.h"

#define EVENTS 200000

/* splitmix64: a fixed seed, so a failure repeats. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A value of random bit length (0..64 bits): every varint length occurs. */
static uint64_t rand_bits(uint64_t *s)
{
    unsigned bits = (unsigned)(next_rand(s) % 65);
    uint64_t v = next_rand(s);
    return bits == 64 ? v : v & ((1ull << bits) - 1);
}

static const char text[] = "a string field";

/* The types vt_rec_encode unrolls. */
static const enum vt_rec HOT[] = {VT_REC_ALLOC,           VT_REC_FREE,
                                  VT_REC_REGION_REGISTER, VT_REC_REGION_UNREGISTER,
                                  VT_REC_RANGE_PUSH,      VT_REC_RANGE_POP};
#define NHOT (sizeof HOT / sizeof HOT[0])

/* A random event: mostly of the unrolled types, every other type too; every
 * field random (out-of-range apis, negative devices and timestamps going back
 * included), string fields pointing at text, identifiers at a build-id. */
static void rand_event(uint64_t *s, vt_event *ev)
{
    unsigned r = (unsigned)(next_rand(s) % (NHOT + 2));
    uint64_t *words = (uint64_t *)&ev->u;
    memset(ev, 0, sizeof *ev);
    ev->type = r < NHOT ? HOT[r] : (enum vt_rec)(1 + next_rand(s) % (VT_REC_MAX_ - 1));
    ev->ts_ns = next_rand(s) % 8 ? rand_bits(s) : 0;
    for (size_t i = 0; i < sizeof ev->u / sizeof *words; i++)
        words[i] = rand_bits(s);
    if (ev->type == VT_REC_ALLOC)
        ev->u.alloc.api = (enum vt_api)((int)(next_rand(s) % (VT_API_MAX_ + 4)) - 2);
    if (ev->type == VT_REC_FREE)
        ev->u.free.api = (enum vt_api)((int)(next_rand(s) % (VT_API_MAX_ + 4)) - 2);
    vt_rec_set_string(ev, text);
    if (ev->type == VT_REC_MODULE) /* the identifier field: a build-id or none */
        ev->u.module.build_id = next_rand(s) % 2 ? "0123456789abcdef" : NULL;
}

/* NULL when the two encodings (bytes, length, delta state after) are the
 * same; else what differs. */
static const char *differ(const uint8_t *a, size_t na, const vt_delta *da, const uint8_t *b,
                          size_t nb, const vt_delta *db)
{
    if (na != nb)
        return "lengths differ";
    if (memcmp(a, b, na) != 0)
        return "bytes differ";
    if (da->prev_ts != db->prev_ts || da->prev_addr != db->prev_addr ||
        da->base_ts != db->base_ts || da->has_ts != db->has_ts)
        return "delta states differ";
    return NULL;
}

static void test_specialised_equals_generic(void **state)
{
    (void)state;
    uint64_t seed = 18;
    uint8_t a[VT_REC_MAX], b[VT_REC_MAX];
    vt_delta da = {0}, db = {0};
    vt_event ev;
    size_t counts[VT_REC_MAX_] = {0};
    for (int i = 0; i < EVENTS; i++) {
        rand_event(&seed, &ev);
        size_t na = vt_rec_encode(a, &da, &ev);
        size_t nb = vt_rec_encode_generic(b, &db, &ev);
        const char *why = differ(a, na, &da, b, nb, &db);
        if (why)
            fail_msg("event %d (%s): %s", i, vt_rec_name(ev.type), why);
        assert_true(na > 0);
        /* the room the writer reserves for it (vt_rec_encode's contract) */
        assert_true(na <= VT_REC_FIXED_MAX + VT_VARINT_MAX + vt_rec_string_len(&ev));
        counts[ev.type]++;
    }
    for (unsigned t = 1; t < VT_REC_MAX_; t++) /* every type was met */
        assert_true(counts[t] > 0);
    for (size_t h = 0; h < NHOT; h++)
        assert_true(counts[HOT[h]] > EVENTS / (NHOT + 2) / 2);
}

/* Extreme values: the timestamp and the payload's words all one of these,
 * but for one word another (every pair, every word in turn). */
static const uint64_t EXTREME[] = {0,          1,         0x7f,       0x80,
                                   0x3fff,     0x4000,    INT32_MAX,  (uint64_t)INT32_MIN,
                                   UINT32_MAX, INT64_MAX, UINT64_MAX, (uint64_t)INT64_MIN};
#define NEXTREME (sizeof EXTREME / sizeof EXTREME[0])

/* One extreme event of type t: word j of its payload (of the first eight)
 * set to y, the others and the timestamp to x. */
static void extreme_event(vt_event *ev, enum vt_rec t, size_t j, uint64_t x, uint64_t y)
{
    uint64_t *words = (uint64_t *)&ev->u;
    size_t n = sizeof ev->u / sizeof *words < 8 ? sizeof ev->u / sizeof *words : 8;
    memset(ev, 0, sizeof *ev);
    ev->type = t;
    ev->ts_ns = x;
    for (size_t k = 0; k < n; k++)
        words[k] = k == j ? y : x;
    vt_rec_set_string(ev, text);
}

static void test_extremes_equal_generic(void **state)
{
    (void)state;
    uint8_t a[VT_REC_MAX], b[VT_REC_MAX];
    vt_event ev;
    size_t done = 0;
    for (size_t h = 0; h < NHOT; h++) {
        vt_delta da = {0}, db = {0}; /* one chunk per type: deltas from every value */
        for (size_t j = 0; j < 8; j++)
            for (size_t x = 0; x < NEXTREME; x++)
                for (size_t y = 0; y < NEXTREME; y++) {
                    extreme_event(&ev, HOT[h], j, EXTREME[x], EXTREME[y]);
                    size_t na = vt_rec_encode(a, &da, &ev);
                    size_t nb = vt_rec_encode_generic(b, &db, &ev);
                    const char *why = differ(a, na, &da, b, nb, &db);
                    if (why)
                        fail_msg("%s, word %zu = %#llx, others %#llx: %s", vt_rec_name(HOT[h]), j,
                                 (unsigned long long)EXTREME[y], (unsigned long long)EXTREME[x],
                                 why);
                    done++;
                }
    }
    assert_int_equal(done, NHOT * 8 * NEXTREME * NEXTREME);
}

static void test_checker_rejects_differences(void **state)
{
    (void)state;
    uint64_t seed = 7;
    uint8_t a[VT_REC_MAX], b[VT_REC_MAX];
    vt_delta da = {0}, db = {0};
    vt_event ev;
    do
        rand_event(&seed, &ev);
    while (ev.type != VT_REC_ALLOC);
    size_t na = vt_rec_encode(a, &da, &ev);
    size_t nb = vt_rec_encode_generic(b, &db, &ev);
    assert_null(differ(a, na, &da, b, nb, &db));
    b[na / 2] ^= 1; /* one bit of one field */
    assert_non_null(differ(a, na, &da, b, nb, &db));
    b[na / 2] ^= 1;
    assert_non_null(differ(a, na, &da, b, nb - 1, &db));
    db.prev_addr++; /* a wrong address delta for the next record */
    assert_non_null(differ(a, na, &da, b, nb, &db));
    db.prev_addr--;
    ev.u.alloc.size ^= 1ull << 40; /* another event gives other bytes */
    vt_delta dc = {0};
    nb = vt_rec_encode_generic(b, &dc, &ev);
    assert_non_null(differ(a, na, &da, b, nb, &dc));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_specialised_equals_generic),
        cmocka_unit_test(test_extremes_equal_generic),
        cmocka_unit_test(test_checker_rejects_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
