/* test_render_text.c: the text renderer (render_text.c): its sections. */
#include "report_test.h"

static void test_text_sections(void **state)
{
    (void)state;
    vr_report *r = scenario("frag");
    char *text = render(vr_render_text, r);
    static const char *sections[] = {"== vramtrace report",
                                     "-- Peak --",
                                     "-- Out of memory",
                                     "-- Leaks --",
                                     "-- Growth --",
                                     "-- Fragmentation",
                                     "-- Top sites at peak --",
                                     "verdict: fragmentation"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strstr(text, sections[i]))
            fail_msg("section %s missing", sections[i]);
    free(text);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_sections),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
