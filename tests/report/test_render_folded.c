/* test_render_folded.c: the folded-stacks renderer (render_folded.c). */
#include "report_test.h"

static void test_folded(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    char *folded = render(vr_render_folded, r);
    /* root first, bytes last: two stacks at the peak */
    assert_non_null(strstr(folded, "libuser.so+0x1100;libuser.so+0x2200 104857600\n"));
    assert_non_null(strstr(folded, "libuser.so+0x1100;libuser.so+0x3300 83886080\n"));
    free(folded);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
