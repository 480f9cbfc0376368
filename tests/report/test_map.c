/* test_map.c: the report's hash map (util.c, vr_map) against a plain array. */
#include "internal.h"
#include "report_test.h"

typedef struct kv {
    uint64_t key, value;
} kv;

static void test_map(void **state)
{
    (void)state;
    vr_map m;
    vr_map_init(&m, sizeof(kv));
    enum { N = 20000 };
    uint64_t *ref = calloc(N, sizeof(uint64_t));
    uint64_t seed = 1;
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t k = (seed >> 33) % N;
        if ((seed >> 20) & 1) {
            kv *e = vr_map_put(&m, k * 4096, NULL);
            e->value = (uint64_t)i + 1;
            ref[k] = (uint64_t)i + 1;
        } else {
            assert_int_equal(vr_map_del(&m, k * 4096), ref[k] != 0);
            ref[k] = 0;
        }
    }
    size_t live = 0;
    for (uint64_t k = 0; k < N; k++) {
        kv *e = vr_map_get(&m, k * 4096);
        if (ref[k]) {
            assert_non_null(e);
            assert_int_equal(e->value, ref[k]);
            live++;
        } else {
            assert_null(e);
        }
    }
    assert_int_equal(m.len, live);
    /* item numbers are stable: an entry stays at its item until deleted,
     * through inserts that grow the index */
    kv *first = vr_map_put(&m, 1, NULL);
    first->value = 7;
    uint32_t item = vr_map_index_of(&m, first);
    for (uint64_t k = 0; k < 4 * N; k++)
        vr_map_put(&m, (k + N) * 4096, NULL);
    assert_ptr_equal(vr_map_at(&m, item), vr_map_get(&m, 1));
    assert_int_equal(((kv *)vr_map_at(&m, item))->value, 7);
    assert_true(vr_map_del(&m, 1));
    assert_null(vr_map_at(&m, item));
    free(ref);
    vr_map_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
