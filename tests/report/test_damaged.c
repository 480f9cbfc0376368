/* test_damaged.c: robustness: every cut and many bit flips of a trace give a report or an
 * error, never a crash; valid traces at the edges of their fields' ranges (the findings
 * of fuzz_report, tests/fuzz) give a report in bounded time. */
#include "report_test.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* Every cut and many bit flips: a report or an error, never a crash. */
static void test_damaged(void **state)
{
    (void)state;
    vr_report *whole = scenario("frag");
    vr_report_free(whole);
    size_t len;
    unsigned char *b = slurp(tmp_path("frag"), &len);
    size_t ok = 0, errors = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char err[256];
        vr_options o = {.no_symbols = true};
        vr_report *r = vr_analyze_mem(b, cut, &o, err, sizeof err);
        if (r) {
            /* a cut at a frame boundary reads as a clean end without END */
            assert_true(r->truncated || !r->has_end || cut == len);
            ok++;
        } else {
            assert_true(err[0] != 0);
            errors++;
        }
        vr_report_free(r);
    }
    assert_true(errors > 0); /* the header alone cannot be cut */
    uint64_t seed = 7;
    for (int k = 0; k < 2000; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t pos = (size_t)(seed >> 33) % len;
        unsigned char bit = (unsigned char)(1u << ((seed >> 20) & 7));
        b[pos] ^= bit;
        char err[256];
        vr_options o = {.no_symbols = true};
        vr_report *r = vr_analyze_mem(b, len, &o, err, sizeof err);
        vr_report_free(r);
        b[pos] ^= bit;
    }
    free(b);
    (void)ok;
}

/* The summary frame (docs/trace.md, "Summary") with peak_live, at out. */
static void summary_frame(unsigned char out[24], uint64_t peak_live)
{
    const uint32_t words[2] = {0x184D2A5Eu, 16};
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(words[i / 4] >> (8 * (i % 4)));
    memcpy(out + 8, "VTSUMARY", 8);
    for (int i = 0; i < 8; i++)
        out[16 + i] = (unsigned char)(peak_live >> (8 * i));
}

/* A trace's summary only sizes the replay's live map: the same report
 * without one and with a hint of 0, 1, the scenario's own count, a
 * thousand, and 2^64 - 1 (capped at VR_PRESIZE_MAX entries: an uncapped
 * reservation of that size fails and aborts). */
static void test_summary_hint(void **state)
{
    (void)state;
    vr_report_free(scenario("frag"));
    size_t len;
    unsigned char *b = slurp(tmp_path("frag"), &len);
    unsigned char *c = malloc(len + 24);
    assert_non_null(c);
    memcpy(c, b, len);
    char *want = NULL;
    const uint64_t hints[] = {0, 1, 3, 1000, UINT64_MAX};
    for (int k = -1; k < (int)(sizeof hints / sizeof hints[0]); k++) {
        if (k >= 0)
            summary_frame(c + len, hints[k]);
        char err[256];
        vr_options o = {.no_symbols = true};
        vr_report *r = vr_analyze_mem(c, k < 0 ? len : len + 24, &o, err, sizeof err);
        assert_non_null(r);
        char *json = render(vr_render_json, r);
        vr_report_free(r);
        if (!want) {
            want = json;
            continue;
        }
        assert_string_equal(json, want);
        free(json);
    }
    free(want);
    free(c);
    free(b);
}

/* A clock at its end: events 2^64 - 1 ns after the start (a corrupt clock).
 * The fragmentation windows once doubled past 2^64 and never caught up (the
 * report spun for minutes); the HTML timeline's scale passed 2^64 and its
 * tick loops could wrap. Each output must come, and say the length. */
static void test_clock_at_its_end(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "clockend", 0, NULL);
    uint64_t end = UINT64_MAX - g.t0;
    vtg_alloc(&g, 1000, 0x10000000, 64 * MiB, 1);
    vtg_heap(&g, 2000, 1, 0x10000000, 64 * MiB); /* a heap: windows sample it */
    vtg_alloc(&g, end / 2, 0x20000000, 1 * MiB, 1);
    vtg_free(&g, end - 1, 0x20000000);
    vtg_alloc(&g, end, 0x30000000, 2 * MiB, 1);
    vr_report *r = close_and_analyze(&g, "clockend");
    assert_true(r->duration_ns >= end - 1);
    char *text = render(vr_render_text, r), *json = render(vr_render_json, r),
         *html = render(vr_render_html, r);
    assert_non_null(strstr(text, "Peak"));
    assert_json(json);
    assert_non_null(strstr(html, "Timeline"));
    free(text);
    free(json);
    free(html);
    vr_report_free(r);
}

/* --memory-viz: device ordinals 0 to 127 (PyTorch's c10::DeviceIndex is an
 * int8_t); past them a message and -1, where it once wrote a list per
 * ordinal up to the trace's largest (2^31 of them). */
static void test_memviz_device_ordinal(void **state)
{
    (void)state;
    static const int32_t devices[] = {127, 128, INT32_MAX};
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++) {
        vtg g;
        open_trace(&g, "ordinal", 0, NULL);
        vtg_alloc_on(&g, 1000, 0x10000000, 1 * MiB, 1, devices[i], VT_API_UNKNOWN);
        vr_report *r = close_and_analyze(&g, "ordinal");
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        assert_int_equal(vr_render_memviz(f, &r, 1, NULL), devices[i] <= 127 ? 0 : -1);
        fclose(f);
        assert_true(devices[i] <= 127 ? len > 0 : len == 0);
        free(buf);
        vr_report_free(r);
        unlink(tmp_path("ordinal"));
    }
}

/* A diff across the top of the byte range: the peak from 1 byte to
 * 2^64 - 1. The change, a double of 2^64, was converted to an integer out of
 * its range (undefined behaviour, found by fuzz_report); it saturates, and
 * reads as the largest size. The call site's bytes stay integers. */
static void test_diff_at_the_top(void **state)
{
    (void)state;
    vr_report *run[2];
    const uint64_t sizes[2] = {1, UINT64_MAX};
    for (int i = 0; i < 2; i++) {
        vtg g;
        open_trace(&g, i ? "top_after" : "top_before", 0, NULL);
        vtg_device(&g, 0, "Huge", UINT64_MAX);
        vtg_alloc(&g, 1000, 0x10000000, sizes[i], 1);
        vtg_end(&g, 2000, 0);
        run[i] = close_and_analyze(&g, i ? "top_after" : "top_before");
    }
    char *buf = NULL, want[64];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(vr_render_diff_text(f, run, 2, NULL), 0);
    fclose(f);
    const char *top = vr_format_size(UINT64_MAX, (char[32]){0}, 32);
    snprintf(want, sizeof want, "+%s\n", top);
    assert_non_null(strstr(buf, want));
    /* the call site's own change: its bytes were once doubles converted
     * back past 2^64 (read as 0 B) */
    snprintf(want, sizeof want, "peak    1 B -> %s (+%s)\n", top, top);
    assert_non_null(strstr(buf, want));
    free(buf);
    vr_report_free(run[0]);
    vr_report_free(run[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damaged),          cmocka_unit_test(test_summary_hint),
        cmocka_unit_test(test_clock_at_its_end), cmocka_unit_test(test_memviz_device_ordinal),
        cmocka_unit_test(test_diff_at_the_top),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
