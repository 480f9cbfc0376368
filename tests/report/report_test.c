/* report_test.c: the report unit tests' shared helpers (report_test.h). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH | FTW_PHYS, strndup */
#include "report_test.h"

#include <ctype.h>
#include <ftw.h>

static char tmpdir[] = "/tmp/vtreport-test-XXXXXX";

int vrt_setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int vrt_teardown(void **state)
{
    (void)state;
    if (nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
        fprintf(stderr, "could not remove %s\n", tmpdir);
        return -1;
    }
    return 0;
}

const char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s.vtrace", tmpdir, name);
    return buf;
}

vr_report *scenario(const char *name)
{
    const char *path = tmp_path(name);
    if (access(path, F_OK) != 0)
        assert_int_equal(vtg_scenario(name, path), 0);
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

char *render_len(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r,
                 size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    assert_int_equal(fn(f, &r, 1, NULL), 0);
    fclose(f);
    return buf;
}

char *render(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r)
{
    size_t len = 0;
    return render_len(fn, r, &len);
}

char *render_pair(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *),
                  vr_report *const *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, r, 2, NULL), 0);
    fclose(f);
    return buf;
}

/* A new trace at path (argv: name, then argv_extra), prelude of stacks. */
void open_trace(vtg *g, const char *name, int argc, const char *const *argv)
{
    assert_int_equal(vtg_open(g, tmp_path(name), argc, argv), 0);
    vtg_stack(g, 1, 0, 0x1100);
    vtg_string(g, 1, "train_step");
    vtg_device(g, 0, "SimGPU", GiB);
}

uint32_t two_chains(vtg *g, uint32_t depth, size_t part)
{
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t k = 0; k < depth; k++) {
            size_t idx = depth - 1 - k; /* frame index of this node: the root is the outermost */
            uint64_t ip = 0x10000 + 0x100 * idx + (idx == part ? c * 0x10 : 0);
            vtg_stack(g, 100 + 20 * c + k, k ? 100 + 20 * c + k - 1 : 0, ip);
        }
    return 100 + depth - 1;
}

void open_steps(vtg *g, const char *name)
{
    open_trace(g, name, 0, NULL);
    vtg_meminfo(g, 1, GiB, GiB);
    vtg_stack(g, 5, 0, 0x5500);
    vtg_stack(g, 7, 0, 0x7700);
}

vr_report *close_and_analyze(vtg *g, const char *name)
{
    assert_int_equal(vtg_close(g), 0);
    char err[256] = "";
    vr_options o = {.no_symbols = true};
    vr_report *r = vr_analyze(tmp_path(name), &o, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

/* The part of html from the first occurrence of from up to to (or the end). */
char *slice(const char *html, const char *from, const char *to)
{
    const char *a = strstr(html, from);
    assert_non_null(a);
    const char *b = to ? strstr(a, to) : NULL;
    return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

/* Minimal JSON syntax check (RFC 8259 grammar, no semantics). */
static const char *jvalue(const char *p);

static const char *jws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

static const char *jstring(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *jcontainer(const char *p, char close, bool object)
{
    p = jws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (object) {
            p = jstring(jws(p));
            if (!p || *(p = jws(p)) != ':')
                return NULL;
            p++;
        }
        p = jvalue(p);
        if (!p)
            return NULL;
        p = jws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *jvalue(const char *p)
{
    p = jws(p);
    if (*p == '{')
        return jcontainer(p, '}', true);
    if (*p == '[')
        return jcontainer(p, ']', false);
    if (*p == '"')
        return jstring(p);
    static const char *lit[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(p, lit[i], strlen(lit[i])))
            return p + strlen(lit[i]);
    char *end;
    strtod(p, &end);
    return end != p && (*p == '-' || isdigit((unsigned char)*p)) ? end : NULL;
}

void assert_json(const char *text)
{
    const char *end = jvalue(text);
    if (!end)
        fail_msg("invalid JSON: %.200s", text);
    assert_int_equal(*jws(end), '\0');
}
