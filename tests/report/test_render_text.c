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

/* Two call sites whose listings read the same but whose calls part at a
 * frame the listing folds (PyTorch's first cudaMalloc and its retry after
 * emptying its cache) get a line naming that frame, in every listing that
 * folds it: the top sites (8 frames in text, 4 in HTML), the peak range's
 * sites (6), the leaks in HTML (4) but not in text (12 listed). Calls that
 * part at a listed frame get none. */
static void test_sites_alike(void **state)
{
    (void)state;
    for (int listed = 0; listed < 2; listed++) {
        vtg g;
        const char *name = listed ? "sites_alike_listed" : "sites_alike";
        open_trace(&g, name, 0, NULL);
        uint32_t leaf = two_chains(&g, 14, listed ? 2 : 9);
        vtg_alloc(&g, 10, 0x10000000, 200 * 1048576ull, leaf);
        vtg_alloc(&g, 20, 0x20000000, 100 * 1048576ull, leaf + 20);
        vtg_end(&g, 30, 0);
        vr_report *r = close_and_analyze(&g, name);
        assert_int_equal(r->nsites, 2);
        char *text = render(vr_render_text, r);
        char *sites = slice(text, "-- Top sites at peak --", NULL);
        const char *line = strstr(sites, "  not the same call as entry 1 of this list: frame 10 "
                                         "(folded) is ");
        assert_int_equal(line != NULL, !listed);
        if (line)
            assert_non_null(strstr(line, "10910 here, 0x10900 there\n"));
        char *peak = slice(text, "top call sites in", "-- Out of memory");
        assert_int_equal(strstr(peak, "    not the same call as entry 1 of this list") != NULL,
                         !listed);
        char *leaks = slice(text, "-- Leaks --", "-- Growth --");
        assert_null(strstr(leaks, "not the same call")); /* frame 10 is listed there */
        free(leaks);
        free(peak);
        free(sites);
        free(text);
        char *html = render(vr_render_html, r);
        size_t n = 0;
        for (const char *p = strstr(html, "<p class=\"alike\">not the same call as row 1 of this "
                                          "table: frame 10 (folded)");
             p; p = strstr(p + 1, "<p class=\"alike\">not the same call as row 1"))
            n++;
        assert_int_equal(n, listed ? 0 : 3); /* top sites, range sites, leaks */
        free(html);
        vr_report_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_sections),
        cmocka_unit_test(test_sites_alike),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
