/* test_size.c: the one size grammar and format (size/vsize.h), with the
 * inputs it must refuse and the reason it gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vsize.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)

static void test_parse_accepts(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        {"0", 0},
        {"4096", 4096},
        {"512B", 512},
        {"512 b", 512},
        {" 1KiB ", KiB},
        {"1.5 MiB", 1572864},
        {"2GiB", 2 * GiB},
        {"16g", 16 * GiB},
        {"16G", 16 * GiB},
        {"1k", KiB},
        {"300M", 300 * MiB},
        {"2T", 2 * TiB},
        {"1KB", 1000},
        {"3MB", 3000000},
        {"1GB", 1000000000},
        {"4gb", 4000000000ull},
        {"1gib", GiB},
        {"1TiB", TiB},
        {"1PiB", 1ull << 50},
        {"15EiB", 15ull << 60},
        {".5KiB", 512},
        {"0.3GiB", 322122547}, /* 322122547.2 */
        {"0.0005KiB", 1},      /* 0.512: half up */
        {"0.0004KiB", 0},      /* 0.4096 */
        {"1.0B", 1},
        {"1.000000000000000000000001KiB", KiB},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 12345;
        int rc = vsize_parse(ok[i].s, &v);
        if (rc != VSIZE_OK)
            fail_msg("'%s' refused: %s", ok[i].s, vsize_strerror(rc));
        if (v != ok[i].v)
            fail_msg("'%s' = %llu, want %llu", ok[i].s, (unsigned long long)v,
                     (unsigned long long)ok[i].v);
    }
}

static void test_parse_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int err;
    } bad[] = {
        {"", VSIZE_EMPTY},
        {"   ", VSIZE_EMPTY},
        {"MiB", VSIZE_NUMBER},
        {"-1", VSIZE_NUMBER},
        {"+1", VSIZE_NUMBER},
        {"abc", VSIZE_NUMBER},
        {".", VSIZE_NUMBER},
        {"1.", VSIZE_NUMBER},
        {"1XB", VSIZE_UNIT},
        {"1 MiB x", VSIZE_UNIT},
        {"1e3", VSIZE_UNIT},
        {"1e400", VSIZE_UNIT},
        {"0x10", VSIZE_UNIT},
        {"1..5", VSIZE_NUMBER},
        {"1,5GiB", VSIZE_UNIT},
        {"1 M i B", VSIZE_UNIT},
        {"1.5", VSIZE_FRACTION},
        {"2.5B", VSIZE_FRACTION},
        {"18446744073709551616", VSIZE_RANGE},
        {"16EiB", VSIZE_RANGE},
        {"17179869184GiB", VSIZE_RANGE},
        {"99999999999999999999999KiB", VSIZE_RANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 777;
        int rc = vsize_parse(bad[i].s, &v);
        if (rc != bad[i].err)
            fail_msg("'%s': got %d (%s), want %d (%s)", bad[i].s, rc, vsize_strerror(rc),
                     bad[i].err, vsize_strerror(bad[i].err));
        assert_int_equal(v, 777); /* untouched */
    }
    uint64_t v;
    assert_int_equal(vsize_parse(NULL, &v), VSIZE_EMPTY);
    assert_string_equal(vsize_strerror(VSIZE_FRACTION), "a fraction of a byte");
    assert_string_equal(vsize_strerror(42), "bad size");
}

static void test_format(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        const char *s;
    } cases[] = {
        {0, "0 B"},
        {1, "1 B"},
        {1023, "1023 B"},
        {1024, "1.00 KiB"},
        {1536, "1.50 KiB"},
        {1048575, "1.00 MiB"}, /* not "1024.00 KiB" */
        {1048576 - 6000, "1018.14 KiB"},
        {3 * GiB / 2, "1.50 GiB"},
        {15 * GiB, "15.00 GiB"},
        {TiB, "1.00 TiB"},
        {UINT64_MAX, "16.00 EiB"},
    };
    char buf[VSIZE_LEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(vsize_format(cases[i].v, buf, sizeof buf), cases[i].s);
    char small[6];
    assert_string_equal(vsize_format(1536, small, sizeof small), "1.50 "); /* cut, terminated */
}

/* What is printed reads back within the printed precision: half a unit of
 * the last decimal, 0.005 of a unit that is at most the value itself. */
static void test_round_trip(void **state)
{
    (void)state;
    uint64_t x = 1;
    char buf[VSIZE_LEN];
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t v = x >> (i % 60);
        uint64_t back = 0;
        vsize_format(v, buf, sizeof buf);
        if (v >= (15ull << 60)) /* 16.00 EiB does not fit */
            continue;
        if (vsize_parse(buf, &back) != VSIZE_OK)
            fail_msg("'%s' (from %llu) does not read back", buf, (unsigned long long)v);
        double err = (double)back - (double)v;
        double unit = v < 1024 ? 0.5 : (double)v * 0.005 + 1;
        if (err < -unit || err > unit)
            fail_msg("%llu -> '%s' -> %llu", (unsigned long long)v, buf, (unsigned long long)back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
