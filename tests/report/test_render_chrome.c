/* test_render_chrome.c: the Chrome trace renderer (render_chrome.c). */
#include "report_test.h"

static void test_chrome(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    char *chrome = render(vr_render_chrome, r);
    assert_json(chrome);
    assert_non_null(strstr(chrome, "\"ph\":\"C\""));
    assert_non_null(strstr(chrome, "\"ph\":\"B\""));
    assert_non_null(strstr(chrome, "\"name\":\"forward\""));
    free(chrome);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
