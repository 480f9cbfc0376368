/* test_check.c: vramtrace check's limits (check.c). */
#include "report_test.h"

static void test_check(void **state)
{
    (void)state;
    vr_report *r = scenario("growth");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vr_limits ok = {
        .max_peak = 100 * MiB, .max_leaked = 10 * MiB, .max_growth = 2 * MiB, .no_oom = true};
    assert_int_equal(vr_check(f, r, &ok), 0);
    vr_limits bad = {.max_peak = 10 * MiB, .max_leaked = MiB, .max_growth = 1000, .no_oom = true};
    assert_int_equal(vr_check(f, r, &bad), 3);
    fclose(f);
    assert_non_null(strstr(buf, "peak allocated"));
    assert_non_null(strstr(buf, "leaked"));
    assert_non_null(strstr(buf, "growth"));
    free(buf);
    vr_report_free(r);
    r = scenario("capacity");
    vr_limits oom = {
        .max_peak = -1, .max_leaked = -1, .max_growth = -1, .max_host_leaked = -1, .no_oom = true};
    f = fopen("/dev/null", "w");
    assert_int_equal(vr_check(f, r, &oom), 1);
    fclose(f);
    vr_report_free(r);
}

/* A limit one byte under the peak: the line tells the two apart in bytes
 * (it read "147.21 MiB exceeds the limit 147.21 MiB"); the peak itself as the
 * limit passes. */
static void test_check_one_byte(void **state)
{
    (void)state;
    vr_report *r = scenario("growth");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vr_limits at = {.max_peak = (int64_t)r->peak_allocated,
                    .max_leaked = -1,
                    .max_growth = -1,
                    .max_host_leaked = -1};
    assert_int_equal(vr_check(f, r, &at), 0);
    at.max_peak--;
    assert_int_equal(vr_check(f, r, &at), 1);
    fclose(f);
    char want[128];
    snprintf(want, sizeof want, "(%llu bytes) exceeds the limit",
             (unsigned long long)r->peak_allocated);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof want, "(%llu bytes)\n", (unsigned long long)r->peak_allocated - 1);
    assert_non_null(strstr(buf, want));
    free(buf);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_check_one_byte),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
