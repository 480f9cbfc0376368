/* test_feed.c: the replay's read-ahead (feed.c): events cross its blocks in
 * order and keep their strings, however many there are and wherever a block
 * ends. */
#include "report_test.h"

/* vtg_stress "ranges": n times a string "range i", a push of it and an
 * allocation, so strings fall at every offset of the feed's blocks; each
 * range's name is its own string's, in order. */
static void test_strings_across_blocks(void **state)
{
    (void)state;
    const uint64_t n = 5000; /* 15 k events: several blocks */
    const char *path = tmp_path("ranges");
    assert_int_equal(vtg_stress(path, "ranges", n), 0);
    char err[256];
    vr_options o = {.no_symbols = true};
    vr_report *r = vr_analyze(path, &o, err, sizeof err);
    assert_non_null(r);
    uint64_t pushes = 0;
    for (size_t k = 0; k < r->nnvtx; k++) {
        if (r->nvtx[k].ph != 'B')
            continue;
        char want[32];
        snprintf(want, sizeof want, "range %llu", (unsigned long long)pushes++);
        assert_string_equal(r->nvtx[k].name, want);
    }
    assert_int_equal(pushes, n);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_across_blocks),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
