/* test_frag.c: fragmentation (frag.c): measured at the peak's own instant. */
#include "report_test.h"

/* Fragmentation "at the peak" is measured at the peak's own instant, even
 * when the final peak is under 1 % above an earlier one whose heap layout
 * was different; the worst over time counts the peak's value too. */
static void test_frag_at_peak_instant(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"fragpeak"};
    open_trace(&g, "fragpeak", 1, argv);
    uint64_t base = 0x40000000, ms = 1000000;
    vtg_alloc(&g, 1 * ms, base, 100 * MiB, 1);
    vtg_heap(&g, 1 * ms + 1, 1, base, 100 * MiB);
    vtg_region(&g, 2 * ms, 1, base, 40 * MiB, 1);
    vtg_region(&g, 3 * ms, 1, base + 60 * MiB, 10 * MiB, 1); /* 50 MiB, 40 % fragmented */
    vtg_region_free(&g, 4 * ms, 1, base + 60 * MiB);
    vtg_region(&g, 5 * ms, 1, base + 40 * MiB, 10 * MiB + 100 * 1024, 1); /* +0.2 %, contiguous */
    vtg_region_free(&g, 6 * ms, 1, base + 40 * MiB);
    vtg_end(&g, 7 * ms, 0);
    vr_report *r = close_and_analyze(&g, "fragpeak");
    assert_int_equal(r->peak_allocated, 50 * MiB + 100 * 1024);
    bool seen = false;
    for (size_t i = 0; i < r->nfrag; i++)
        if (!strcmp(r->frag[i].when, "peak")) {
            seen = true;
            assert_int_equal(r->frag[i].t_ns, r->peak_allocated_t_ns);
            assert_int_equal(r->frag[i].allocated, 50 * MiB + 100 * 1024);
            assert_true(r->frag[i].fragmentation < 1e-9);
        }
    assert_true(seen);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frag_at_peak_instant),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
