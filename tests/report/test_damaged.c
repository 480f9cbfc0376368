/* test_damaged.c: robustness: every cut and many bit flips of a trace give a report or an
 * error, never a crash. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damaged),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
