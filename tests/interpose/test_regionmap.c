/* test_regionmap.c: unit tests of interpose/regionmap.c, the NVTX Mem region
 * map: every operation checked against a model of the live keys and the
 * table's invariant (each entry's probe run from its home slot to its slot
 * has no empty slot); keys picked by their home slot so that probe runs
 * collide and wrap around the end of the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "regionmap.h"

/* A key not used yet whose home slot in m is home (by search; keys > 0). */
static uint64_t key_at(const vti_rmap *m, size_t home, uint64_t *next)
{
    for (;; (*next)++)
        if (vti_rmap_home(m, *next) == home)
            return (*next)++;
}

/* No empty slot between any entry's home and its slot; each entry's home
 * remembered right; live matches. */
static void check_invariant(const vti_rmap *m)
{
    size_t mask = m->cap - 1, full = 0;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].full)
            continue;
        full++;
        assert_int_equal(m->slots[j].home, vti_rmap_home(m, m->slots[j].key));
        for (size_t i = vti_rmap_home(m, m->slots[j].key); i != j; i = (i + 1) & mask)
            assert_true(m->slots[i].full);
    }
    assert_int_equal(full, m->live);
}

static size_t index_of(const vti_rmap *m, uint64_t key)
{
    const vti_rmap_slot *s = vti_rmap_find(m, key);
    assert_non_null(s);
    return (size_t)(s - m->slots);
}

/* A run of four keys homed at the last two slots wraps to slots 0 and 1;
 * deleting the first shifts the other three back, across the table end. */
static void test_wrap_shift(void **state)
{
    (void)state;
    vti_rmap m = {0};
    uint64_t next = 1, k[4];
    assert_int_equal(vti_rmap_insert(&m, 1000000, 0, 0, 0), 0); /* makes the table */
    vti_rmap_del(&m, vti_rmap_find(&m, 1000000));
    size_t last = m.cap - 1;
    k[0] = key_at(&m, last - 1, &next);
    k[1] = key_at(&m, last - 1, &next);
    k[2] = key_at(&m, last, &next);
    k[3] = key_at(&m, 0, &next);
    for (int i = 0; i < 4; i++)
        assert_int_equal(vti_rmap_insert(&m, k[i], (uint64_t)i, 0, 0), 0);
    assert_int_equal(index_of(&m, k[0]), last - 1);
    assert_int_equal(index_of(&m, k[1]), last);
    assert_int_equal(index_of(&m, k[2]), 0);
    assert_int_equal(index_of(&m, k[3]), 1);
    vti_rmap_del(&m, vti_rmap_find(&m, k[0]));
    check_invariant(&m);
    assert_null(vti_rmap_find(&m, k[0]));
    assert_int_equal(index_of(&m, k[1]), last - 1);
    assert_int_equal(index_of(&m, k[2]), last);
    assert_int_equal(index_of(&m, k[3]), 0);
    assert_int_equal(vti_rmap_find(&m, k[3])->a, 3);
    assert_false(m.slots[1].full);
    /* k[3] (home 0) must stay put when the gap opens before its home */
    vti_rmap_del(&m, vti_rmap_find(&m, k[2]));
    check_invariant(&m);
    assert_int_equal(index_of(&m, k[3]), 0);
    assert_int_equal(index_of(&m, k[1]), last - 1);
    vti_rmap_free(&m);
}

/* Random inserts and deletes over a small key set (many collisions, runs
 * across the table end, growth) against a model of the live keys. */
static void test_churn_model(void **state)
{
    (void)state;
    enum { KEYS = 300, STEPS = 60000 };
    static bool live[KEYS];
    vti_rmap m = {0};
    uint32_t x = 99;
    memset(live, 0, sizeof live);
    for (int step = 0; step < STEPS; step++) {
        x = x * 1103515245u + 12345u;
        unsigned i = (x >> 8) % KEYS;
        uint64_t key = (uint64_t)i * 4096; /* addresses, as regions have */
        if (!live[i]) {
            assert_int_equal(vti_rmap_insert(&m, key, i, i + 1, i + 2), 0);
            live[i] = true;
        } else {
            vti_rmap_del(&m, vti_rmap_find(&m, key));
            live[i] = false;
        }
        if (step % 97 == 0)
            check_invariant(&m);
        for (unsigned k = 0; k < KEYS; k += step % 7 + 1) {
            vti_rmap_slot *s = vti_rmap_find(&m, (uint64_t)k * 4096);
            assert_int_equal(s != NULL, live[k]);
            if (s)
                assert_true(s->a == k && s->b == k + 1 && s->c == k + 2);
        }
    }
    check_invariant(&m);
    vti_rmap_free(&m);
}

/* Deleting while scanning by index (looking at a slot again after a deletion
 * there, as regions_drop_heap does) removes every matching entry and no
 * other, also when runs wrap around the table end. */
static void test_delete_while_scanning(void **state)
{
    (void)state;
    uint64_t next = 1;
    for (int round = 0; round < 200; round++) {
        vti_rmap m = {0};
        assert_int_equal(vti_rmap_insert(&m, 0, 0, 0, 0), 0);
        vti_rmap_del(&m, vti_rmap_find(&m, 0));
        uint64_t keys[31];
        size_t n = 0;
        for (; n < 31; n++) { /* crowded at the end: the runs wrap */
            size_t home = (m.cap - 1 - (size_t)(round + n * 7) % 12) & (m.cap - 1);
            keys[n] = key_at(&m, home, &next);
            assert_int_equal(vti_rmap_insert(&m, keys[n], 0, (keys[n] + round) % 3, 0), 0);
        }
        for (size_t i = 0; i < m.cap;) {
            if (m.slots[i].full && m.slots[i].b == 1)
                vti_rmap_del(&m, &m.slots[i]);
            else
                i++;
        }
        check_invariant(&m);
        for (size_t k = 0; k < n; k++)
            assert_int_equal(vti_rmap_find(&m, keys[k]) != NULL, (keys[k] + round) % 3 != 1);
        vti_rmap_free(&m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_shift),
        cmocka_unit_test(test_churn_model),
        cmocka_unit_test(test_delete_while_scanning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
