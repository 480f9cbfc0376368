/* test_sections: every section of the report model (report.h,
 * VR_MODEL_SECTIONS) reaches the text, JSON and HTML outputs. A generated
 * trace (vtg_scenario "sections") makes every section non-empty; each
 * section's marker must be in each output. The checker is also shown to
 * fail: with one renderer's marker of one section taken out of its output,
 * exactly that section and output are reported missing. */
#include "gen.h"
#include "report.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

enum { OUT_TEXT, OUT_JSON, OUT_HTML, NOUT };
static const char *const out_names[NOUT] = {"text", "JSON", "HTML"};

typedef struct section {
    const char *name;
    const char *marker[NOUT];
} section;

#define X(name, nonempty, text, json, html) {#name, {text, json, html}},
static const section sections[] = {VR_MODEL_SECTIONS(X)};
#undef X
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* Which sections of r are non-empty, by the table's own expressions. */
static void nonempty(const vr_report *r, bool *out)
{
    size_t k = 0;
#define X(name, expr, text, json, html) out[k++] = (expr) != 0;
    VR_MODEL_SECTIONS(X)
#undef X
}

static char *render(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    vr_options opt = {.no_symbols = true};
    assert_int_equal(fn(f, &r, 1, &opt), 0);
    fclose(f);
    return buf;
}

/* Sections whose marker is missing from an output: "section/output" names
 * into miss (at most max), their count. */
static size_t missing(char *const out[NOUT], const char **miss_sec, int *miss_out, size_t max)
{
    size_t n = 0;
    for (size_t s = 0; s < NSECTIONS; s++)
        for (int o = 0; o < NOUT; o++)
            if (!strstr(out[o], sections[s].marker[o]) && n < max) {
                miss_sec[n] = sections[s].name;
                miss_out[n++] = o;
            }
    return n;
}

static vr_report *sections_report(void)
{
    char path[] = "/tmp/vt_sections.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path); /* the writer creates it */
    assert_int_equal(vtg_scenario("sections", path), 0);
    char err[256];
    vr_options opt = {.no_symbols = true};
    vr_report *r = vr_analyze(path, &opt, err, sizeof err);
    unlink(path);
    assert_non_null(r);
    return r;
}

static void render_all(vr_report *r, char *out[NOUT])
{
    out[OUT_TEXT] = render(vr_render_text, r);
    out[OUT_JSON] = render(vr_render_json, r);
    out[OUT_HTML] = render(vr_render_html, r);
}

static void test_fixture_fills_every_section(void **state)
{
    (void)state;
    vr_report *r = sections_report();
    bool ne[NSECTIONS];
    nonempty(r, ne);
    for (size_t s = 0; s < NSECTIONS; s++) {
        if (!ne[s])
            fail_msg("section %s is empty in the fixture", sections[s].name);
    }
    vr_report_free(r);
}

static void test_every_section_reaches_every_output(void **state)
{
    (void)state;
    vr_report *r = sections_report();
    char *out[NOUT];
    render_all(r, out);
    const char *sec[64];
    int o[64];
    size_t n = missing(out, sec, o, 64);
    for (size_t i = 0; i < n; i++)
        print_error("section %s does not reach the %s output\n", sec[i], out_names[o[i]]);
    assert_int_equal(n, 0);
    for (int k = 0; k < NOUT; k++)
        free(out[k]);
    vr_report_free(r);
}

/* Removes every occurrence of marker from s (a renderer that dropped it). */
static void drop(char *s, const char *marker)
{
    size_t len = strlen(marker);
    for (char *p; (p = strstr(s, marker));)
        memmove(p, p + len, strlen(p + len) + 1);
}

/* The checker fails: for each section and output in turn, the output with
 * that marker dropped makes exactly that pair missing. */
static void test_dropped_section_is_caught(void **state)
{
    (void)state;
    vr_report *r = sections_report();
    char *out[NOUT];
    render_all(r, out);
    for (size_t s = 0; s < NSECTIONS; s++)
        for (int k = 0; k < NOUT; k++) {
            char *copy[NOUT] = {out[0], out[1], out[2]};
            copy[k] = strdup(out[k]);
            drop(copy[k], sections[s].marker[k]);
            const char *sec[64];
            int o[64];
            size_t n = missing(copy, sec, o, 64);
            assert_int_equal(n, 1);
            assert_string_equal(sec[0], sections[s].name);
            assert_int_equal(o[0], k);
            free(copy[k]);
        }
    for (int k = 0; k < NOUT; k++)
        free(out[k]);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_fills_every_section),
        cmocka_unit_test(test_every_section_reaches_every_output),
        cmocka_unit_test(test_dropped_section_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
