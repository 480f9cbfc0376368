/* test_render_html.c: the HTML renderer (render_html.c): the timeline's window and the batch
 * advice's wording. */
#include "report_test.h"

/* Widths of the shaded iterations (rect class="phase") in an SVG; returns
 * how many, their smallest width in *min. */
static size_t phase_widths(const char *svg, double *min)
{
    size_t n = 0;
    *min = 1e9;
    for (const char *p = svg; (p = strstr(p, "class=\"phase\"")); p++) {
        const char *w = strstr(p, "width=\"");
        assert_non_null(w);
        double v = strtod(w + 7, NULL);
        *min = v < *min ? v : *min;
        n++;
    }
    return n;
}

/* A 10 s run whose device activity is 5.00 s - 5.10 s: the default timeline
 * spans the activity (iterations wide enough to see, ticks in s since the
 * start, no "0 s"), the whole run is a second, hidden view. The iteration
 * open at the failure is shaded up to it. */
static void test_html_timeline_window(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"late"};
    const uint64_t ms = 1000000, t = 5000 * ms;
    open_trace(&g, "late", 1, argv);
    for (uint64_t i = 0; i < 4; i++) {
        vtg_push(&g, t + i * 25 * ms, 1);
        vtg_alloc(&g, t + i * 25 * ms + 1, 0x10000000, (10 + i) * MiB, 1);
        vtg_free(&g, t + i * 25 * ms + 20 * ms, 0x10000000);
        vtg_pop(&g, t + i * 25 * ms + 24 * ms);
    }
    vtg_push(&g, t + 100 * ms, 1); /* the failing iteration never ends */
    vtg_failed(&g, t + 101 * ms, 2 * GiB, 1, 900 * MiB, GiB);
    vtg_end(&g, 10000 * ms, 1);
    vr_report *r = close_and_analyze(&g, "late");
    assert_int_equal(r->nspans, 5); /* shaded up to the failure, not to the exit */
    assert_int_equal(r->spans[4].start_ns, t + 100 * ms);
    assert_int_equal(r->spans[4].end_ns, t + 101 * ms);
    char *html = render(vr_render_html, r);
    char *act = slice(html, "id=\"timeline-0\"", "id=\"timeline-0-whole\"");
    char *all = slice(html, "id=\"timeline-0-whole\"", "</svg>");
    double min;
    assert_int_equal(phase_widths(act, &min), 5);
    assert_true(min > 8); /* 1 ms of ~107 ms over 940 px; 24 ms iterations > 200 px */
    assert_int_equal(phase_widths(all, &min), 5);
    assert_true(min < 5);
    assert_null(strstr(act, ">0 s<"));
    assert_non_null(strstr(act, ">5.04 s<"));
    assert_non_null(strstr(all, ">0 s<"));
    assert_non_null(strstr(act, "class=\"oom\""));
    assert_non_null(strstr(act, "class=\"peak\""));
    assert_non_null(strstr(all, "display:none"));
    assert_non_null(strstr(html, "class=\"tl-whole\""));
    free(act);
    free(all);
    free(html);
    vr_report_free(r);
}

/* The suggested batch's kind is worded apart in HTML and text. */
static void test_html_batch_kind(void **state)
{
    (void)state;
    vr_report *r = scenario("capacity");
    char *html = render(vr_render_html, r);
    assert_non_null(strstr(html, "class=\"batch upper_bound\">batches above 60 cannot fit (an "
                                 "upper bound, not a batch known to fit"));
    assert_null(strstr(html, "class=\"batch measured\""));
    free(html);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "batches above 60 cannot fit (an upper bound"));
    free(text);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_timeline_window),
        cmocka_unit_test(test_html_batch_kind),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
