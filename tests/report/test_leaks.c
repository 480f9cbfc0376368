/* test_leaks.c: leaks (leaks.c): what is still allocated at the end, by call site. */
#include "report_test.h"

static void test_leaks(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    /* leaf 6 is a vramtrace frame over leaf 2: folded, so both merge */
    assert_int_equal(r->nleaks, 2);
    assert_int_equal(r->leaks[0].bytes, 101 * MiB);
    assert_int_equal(r->leaks[0].count, 2);
    assert_int_equal(r->leaks[1].bytes, 4096);
    assert_int_equal(r->leaks[1].count, 1);
    assert_int_equal(r->leaked_bytes, 101 * MiB + 4096);
    /* no frame of the leak's stack is inside libvramtrace.so */
    for (size_t i = 0; i < r->leaks[0].stack.n; i++)
        assert_null(strstr(r->leaks[0].stack.frames[i].module, "libvramtrace"));
    assert_int_equal(r->leaks[0].stack.n, 2);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "105906176 bytes in 2 allocations were never freed"));
    free(text);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaks),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
