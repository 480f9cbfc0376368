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

/* Names every frame of r's sites as symbols would, from its ip (two_chains's
 * ips): "f3" for frame index 3, "alloc+0x9d0" at the first chain's parting
 * frame, "alloc+0x2d39" at the second's (PyTorch's first cudaMalloc and its
 * retry). */
static void name_frames(vr_report *r)
{
    static char names[20][16];
    for (size_t k = 0; k < 20; k++)
        snprintf(names[k], sizeof names[k], "f%zu", k);
    for (size_t i = 0; i < r->nsites; i++)
        for (size_t k = 0; k < r->sites[i].stack.n; k++) {
            vr_frame *fr = (vr_frame *)&r->sites[i].stack.frames[k];
            uint64_t ip = fr->ip - 0x10000;
            fr->function = ip & 0x10 ? "alloc+0x2d39" : names[ip / 0x100 % 20];
            if (!(ip & 0x10) && (r->sites[1 - i].stack.frames[k].ip & 0x10))
                fr->function = "alloc+0x9d0";
        }
}

/* Two call sites whose listings read the same but whose calls part at a
 * frame the listing folds (PyTorch's first cudaMalloc and its retry after
 * emptying its cache) get a line naming that frame, in every listing that
 * folds it: the top sites (8 frames in text, 4 in HTML), the peak range's
 * sites (6), the leaks in HTML (4) but not in text (12 listed), the
 * diff's sites (8). Calls that
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
        name_frames(r); /* the diff keys sites by names, not addresses */
        const char *before = listed ? "sites_alike_listed_before" : "sites_alike_before";
        assert_int_equal(vtg_open(&g, tmp_path(before), 0, NULL), 0);
        vtg_device(&g, 0, "SimGPU", GiB);
        vtg_end(&g, 30, 0);
        vr_report *pair[2] = {close_and_analyze(&g, before), r};
        char *diff = render_pair(vr_render_diff_text, pair); /* both sites are new */
        assert_int_equal(strstr(diff, "\n    not the same call as entry 1 of this list: frame 10 "
                                      "(folded)") != NULL,
                         !listed);
        free(diff);
        vr_report_free(pair[0]);
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
