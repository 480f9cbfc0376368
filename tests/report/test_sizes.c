/* test_sizes.c: the size parser (util.c, vr_parse_size). */
#include "report_test.h"

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"0", 0},       {"512", 512},         {"512B", 512},
              {"1KiB", 1024}, {"1.5 MiB", 1572864}, {"2GiB", 2 * GiB},
              {"1KB", 1000},  {"3MB", 3000000},     {"1GB", 1000000000},
              {"1gib", GiB},  {"1TiB", 1024 * GiB}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        if (vr_parse_size(ok[i].s, &v) != 0)
            fail_msg("'%s' rejected", ok[i].s);
        assert_int_equal(v, ok[i].v);
    }
    static const char *bad[] = {"", "MiB", "-1", "1XB", "1 MiB x", "abc", "1e400", NULL};
    uint64_t v;
    for (size_t i = 0; bad[i]; i++)
        if (vr_parse_size(bad[i], &v) == 0)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(vr_parse_size(NULL, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
