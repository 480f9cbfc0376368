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

/* A CUDA stream capture is an async slice on the Chrome timeline (category
 * cuda_graph, id its stream) from its begin to its end, not an NVTX
 * start/end range in the report's counts. */
static void test_chrome_capture(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "chrome_capture", 0, NULL);
    vtg_capture(&g, 100, 0xabc, 1);
    vtg_alloc(&g, 200, 0x10000000, MiB, 1);
    vtg_capture(&g, 300, 0xabc, 0);
    vtg_end(&g, 400, 0);
    vr_report *r = close_and_analyze(&g, "chrome_capture");
    char *chrome = render(vr_render_chrome, r);
    assert_json(chrome);
    assert_non_null(strstr(chrome, "\"ph\":\"b\""));
    assert_non_null(
        strstr(chrome, "\"cat\":\"cuda_graph\",\"id\":\"0xabc\",\"name\":\"CUDA graph capture\"}"));
    assert_non_null(strstr(chrome, "\"ph\":\"e\""));
    free(chrome);
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"start_end_ranges\":0"));
    free(json);
    vr_report_free(r);
    unlink(tmp_path("chrome_capture"));
}

/* One trace of pid whose start is start_after_ns after the first, with one
 * allocation 1000 ns after its start. */
static vr_report *one(const char *name, uint32_t pid, const char *run_id, uint64_t start_after_ns)
{
    vtg g;
    assert_int_equal(
        vtg_open_head(&g, tmp_path(name),
                      &(vtg_head){.pid = pid, .run_id = run_id, .start_after_ns = start_after_ns}),
        0);
    vtg_stack(&g, 1, 0, 0x1100);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 1000, 0x10000000, MiB, 1);
    vtg_end(&g, 2000, 0);
    return close_and_analyze(&g, name);
}

/* The counter event of pid in chrome: its ts (us), -1 when none. */
static double counter_ts(const char *chrome, uint32_t pid)
{
    char key[64];
    snprintf(key, sizeof key, "\"pid\":%u,\"tid\":0,\"name\":\"device 0 memory\"", pid);
    for (const char *at = strstr(chrome, key); at; at = strstr(at + 1, key)) {
        const char *ts = at;
        while (ts > chrome && strncmp(ts, "\"ts\":", 5))
            ts--;
        return strtod(ts + 5, NULL);
    }
    return -1;
}

/* The processes of one run (one run id) are on one timeline, from the
 * first one's start: a child that started 5 ms after its parent has its
 * events 5 ms later (each used to count from its own start, so a run's
 * processes overlapped in Perfetto). Traces of different runs, or of none,
 * each count from their own start. */
static void test_chrome_run_timeline(void **state)
{
    (void)state;
    const char *run = "0123456789abcdef", *other = "fedcba9876543210";
    vr_report *r[3] = {one("run_parent", 100, run, 0), one("run_child", 200, run, 5000000),
                       one("other_run", 300, other, 7000000)};
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(vr_render_chrome(f, r, 2, NULL), 0);
    fclose(f);
    assert_json(text);
    assert_true(counter_ts(text, 100) == 1.0);
    assert_true(counter_ts(text, 200) == 5001.0);
    free(text);
    f = open_memstream(&text, &len);
    assert_int_equal(vr_render_chrome(f, r + 1, 2, NULL), 0); /* two runs: each its own */
    fclose(f);
    assert_true(counter_ts(text, 200) == 1.0);
    assert_true(counter_ts(text, 300) == 1.0);
    free(text);
    for (int i = 0; i < 3; i++)
        vr_report_free(r[i]);
    unlink(tmp_path("run_parent"));
    unlink(tmp_path("run_child"));
    unlink(tmp_path("other_run"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome),
        cmocka_unit_test(test_chrome_run_timeline),
        cmocka_unit_test(test_chrome_capture),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
