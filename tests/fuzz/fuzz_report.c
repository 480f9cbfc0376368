/* fuzz_report.c: libFuzzer target for the report: replay, analyses and
 * every renderer, on any trace.
 *
 * The input is a whole file or one batch (fuzz_image.h). It is written to a
 * scratch file (the memory_viz renderer reads the trace a second time by
 * path) and reported like `vramtrace report` does, into /dev/null: text,
 * JSON, HTML, folded stacks, Chrome trace, memory_viz and a check against
 * limits; then beside the report of the image's first half (a truncated
 * run): side by side, the runs section and the diff both ways. An unusable
 * trace must give an error message; any other must give a report. Never a
 * crash, a hang, or memory without bound. Symbols are on for one input in
 * four (by its length; libdw's start is slow): a seed names a real file
 * with its build-id (vt_fuzz_seeds itself) and return addresses in it. */
#include "fuzz_image.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch file, made once per process ($TMPDIR or /tmp) and unlinked
 * at once: it is reached by its descriptor's /proc/self/fd path, so that
 * no run, however it ends, leaves it behind. */
static int scratch(char *path, size_t len)
{
    static int fd = -1;
    if (fd < 0) {
        char made[4096];
        const char *dir = getenv("TMPDIR");
        snprintf(made, sizeof made, "%s/fuzz_report.XXXXXX", dir && *dir ? dir : "/tmp");
        fd = mkstemp(made);
        if (fd >= 0)
            unlink(made);
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* Everything one report is rendered into. */
static void render_one(FILE *out, vr_report *r, const vr_options *opt)
{
    vr_report *const one[] = {r};
    if (vr_render_text(out, one, 1, opt) < 0 || vr_render_json(out, one, 1, opt) < 0 ||
        vr_render_html(out, one, 1, opt) < 0 || vr_render_folded(out, one, 1, opt) < 0 ||
        vr_render_chrome(out, one, 1, opt) < 0)
        abort(); /* /dev/null takes everything */
    /* may refuse a trace with a message (a device ordinal no snapshot holds) */
    vr_render_memviz(out, one, 1, opt);
    vr_limits lim = {
        .max_peak = 1, .max_leaked = 0, .max_growth = 0, .max_host_leaked = 0, .no_oom = true};
    vr_check(out, r, &lim);
}

/* Everything two reports are rendered into: side by side, the runs section
 * and the diff, both ways. */
static void render_two(FILE *out, vr_report *a, vr_report *b, const vr_options *opt)
{
    vr_report *const ab[] = {a, b}, *const ba[] = {b, a};
    if (vr_render_text(out, ab, 2, opt) < 0 || vr_render_json(out, ab, 2, opt) < 0 ||
        vr_render_html(out, ab, 2, opt) < 0 || vr_render_runs(out, ab, 2, opt) < 0 ||
        vr_render_diff_text(out, ab, 2, opt) < 0 || vr_render_diff_json(out, ab, 2, opt) < 0 ||
        vr_render_diff_html(out, ab, 2, opt) < 0 || vr_render_diff_text(out, ba, 2, opt) < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    char path[4096], err[512] = "";
    if (!null && !(null = fopen("/dev/null", "w")))
        abort();
    int fd = scratch(path, sizeof path);
    size_t len;
    uint8_t *owned;
    const uint8_t *img = vtf_image(data, size, &len, &owned);
    if (fd < 0 || !img || ftruncate(fd, 0) < 0 || pwrite(fd, img, len, 0) != (ssize_t)len)
        abort();
    vr_options opt = {.no_symbols = size % 4 != 0, .top = 1 + size % 12};
    vr_report *r = vr_analyze(path, &opt, err, sizeof err);
    if (!r && !err[0])
        abort(); /* an unusable trace says why */
    /* the image cut in half: another run (truncated, or unusable) to diff */
    vr_report *half = r ? vr_analyze_mem(img, len / 2, &opt, err, sizeof err) : NULL;
    free(owned);
    if (r)
        render_one(null, r, &opt);
    if (r && half)
        render_two(null, half, r, &opt);
    else if (r)
        render_two(null, r, r, &opt);
    vr_report_free(half);
    vr_report_free(r);
    return 0;
}
