/* test_render_json.c: the JSON renderer (render_json.c): its keys (docs/architecture.md, "The
 * JSON report") and several reports in one document. */
#include "report_test.h"

static void test_json_keys(void **state)
{
    (void)state;
    static const char *names[] = {"basic", "capacity", "frag", "xss"};
    static const char *keys[] = {"\"format\":\"vramtrace-report\"",
                                 "\"version\":",
                                 "\"program\":{\"argv\":[",
                                 "\"pid\":4242",
                                 "\"exit\":",
                                 "\"devices\":[{\"id\":0",
                                 "\"name\":",
                                 "\"total_bytes\":",
                                 "\"totals\":{",
                                 "\"allocations\":",
                                 "\"frees\":",
                                 "\"failed_allocations\":",
                                 "\"peak_allocated_bytes\":",
                                 "\"peak_time_ns\":",
                                 "\"peak_reserved_bytes\":",
                                 "\"leaks\":[",
                                 "\"growth\":[",
                                 "\"ooms\":[",
                                 "\"sites\":[",
                                 "\"phases\":[",
                                 "\"fragmentation\":[",
                                 "\"notes\":["};
    for (size_t n = 0; n < 4; n++) {
        vr_report *r = scenario(names[n]);
        char *json = render(vr_render_json, r);
        assert_json(json);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!strstr(json, keys[k]))
                fail_msg("%s: key %s missing", names[n], keys[k]);
        if (!strcmp(names[n], "basic")) {
            assert_non_null(strstr(json, "\"peak_allocated_bytes\":188743680"));
            assert_non_null(strstr(json, "\"peak_time_ns\":6000"));
            assert_non_null(strstr(
                json, "{\"bytes\":105906176,\"count\":2,\"kind\":\"device\",\"cache_of\":null,"
                      "\"stack\":[{\"function\":"));
            assert_non_null(strstr(json, "\"cached_at_exit_bytes\":0,"));
            assert_non_null(strstr(json, "\"module\":\"/opt/fake/libuser.so\""));
        }
        if (!strcmp(names[n], "capacity"))
            assert_non_null(strstr(json, "\"verdict\":\"capacity\""));
        if (!strcmp(names[n], "xss"))
            assert_null(strstr(json, "<script>")); /* escaped as \u003c */
        free(json);
        vr_report_free(r);
    }
}

static void test_json_several(void **state)
{
    (void)state;
    vr_report *r[2] = {scenario("basic"), scenario("growth")};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(vr_render_json(f, r, 2, NULL), 0);
    assert_int_equal(vr_render_chrome(f, r, 0, NULL), 0);
    fclose(f);
    /* the first document ends at its first newline */
    char *nl = strchr(buf, '\n');
    assert_non_null(nl);
    *nl = 0;
    assert_json(buf);
    assert_non_null(strstr(buf, "\"files\":["));
    assert_json(nl + 1);
    free(buf);
    vr_report_free(r[0]);
    vr_report_free(r[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_keys),
        cmocka_unit_test(test_json_several),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
