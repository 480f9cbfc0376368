/* cmd_report.c: vramtrace report and vramtrace diff: load traces, print the
 * text on stdout, write the outputs of cli_outputs (outputs.c). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

vr_options cli_progress_options(void)
{
    vr_options opt = {.progress = true};
    const char *e = getenv("VRAMTRACE_PROGRESS_AFTER_MS");
    if (e && *e) {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (!*end && v >= 1 && v <= UINT32_MAX)
            opt.progress_after_ms = (uint32_t)v;
    }
    return opt;
}

int cli_load_all(char **files, size_t n, const vr_options *opt, vr_report **r, const char *cmd)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        r[i] = vr_analyze(files[i], opt, err, sizeof err);
        if (!r[i]) {
            fprintf(stderr, "vramtrace %s: %s: %s\n", cmd, files[i], err);
            return CLI_EXIT_INPUT;
        }
        if (r[i]->truncated) {
            fprintf(stderr,
                    "vramtrace %s: %s: the trace is truncated (cut inside a frame); "
                    "using the events before the cut\n",
                    cmd, files[i]);
            rc = 1;
        }
    }
    return rc;
}

void cli_free_all(vr_report **r, size_t n)
{
    for (size_t i = 0; r && i < n; i++)
        vr_report_free(r[i]);
    free(r);
}

/* ---- the options report and diff share ------------------------------------- */

enum { O_TOP = 200, O_NOSYM, O_TRACESYM, O_NATIVE, O_TRUNC };

static const cli_opt view_opts[] = {
    {"top", 0, required_argument, O_TOP, "N", "entries per table (default 10)"},
    {"quiet", 'q', no_argument, 'q', NULL, "no text report on stdout"},
    {"no-symbols", 0, no_argument, O_NOSYM, NULL, "do not read debug information (addresses only)"},
    {"trace-symbols", 0, no_argument, O_TRACESYM, NULL,
     "name native frames only from the names the trace carries\n"
     "(vramtrace symbolize), never from files here: the report\n"
     "another machine gives"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const cli_opt report_opts[] = {
    {"native", 0, no_argument, O_NATIVE, NULL,
     "keep the Python interpreter's own frames in stacks that\n"
     "have Python frames (hidden by default)"},
    {"allow-truncated", 0, no_argument, O_TRUNC, NULL,
     "exit 0 for a cut trace (the report covers what came before)"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static int parse_top(const char *s, size_t *top)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > 1000000)
        return -1;
    *top = (size_t)v;
    return 0;
}

/* What one parsed option of report or diff asks for. */
typedef struct view {
    vr_options opt;
    bool quiet, allow_trunc;
    cli_out_paths outs;
} view;

/* Applies option c of command cmd: 1 handled, 0 not an option of view_opts,
 * report_opts or the outputs, -1 a bad value (said on stderr). */
static int view_option(int c, const char *cmd, view *v)
{
    switch (c) {
    case O_TOP:
        if (parse_top(optarg, &v->opt.top) == 0)
            return 1;
        fprintf(stderr, "vramtrace %s: --top wants a positive number, not '%s'\n", cmd, optarg);
        return -1;
    case 'q':
        v->quiet = true;
        return 1;
    case O_NOSYM:
        v->opt.no_symbols = true;
        return 1;
    case O_TRACESYM:
        v->opt.trace_symbols = true;
        return 1;
    case O_NATIVE:
        v->opt.native = true;
        return 1;
    case O_TRUNC:
        v->allow_trunc = true;
        return 1;
    default:
        return cli_output_option(c, cmd, &v->outs) ? 1 : 0;
    }
}

/* Parse report's or diff's options from the tables tabs into v: -1 go on,
 * else the exit status (help, a bad option). */
static int parse_view(int argc, char **argv, const char *cmd, const cli_opt *const *tabs,
                      void (*usage)(FILE *), view *v)
{
    char shorts[32];
    struct option *opts = cli_getopt_table(tabs, "", shorts, sizeof shorts);
    int c, rc = opts ? -1 : CLI_EXIT_INPUT;
    memset(v, 0, sizeof *v);
    v->opt = cli_progress_options();
    while (rc < 0 && (c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        int k = c == 'h' ? 0 : view_option(c, cmd, v);
        if (k < 0)
            rc = CLI_EXIT_INPUT;
        else if (c == 'h')
            rc = (usage(stdout), 0);
        else if (k == 0)
            rc = (usage(stderr), CLI_EXIT_INPUT);
    }
    free(opts);
    return rc;
}

/* ---- report ------------------------------------------------------------------ */

static const char report_head[] =
    "usage: vramtrace report FILE... [options]\n"
    "\n"
    "Replay traces and explain peak, out-of-memory failures, leaks, growth and\n"
    "fragmentation. Text goes to stdout; several files are shown side by side.\n"
    "A trace named like a run (-o a.vtrace) brings the run's other traces\n"
    "(a.<pid>.vtrace); traces of one run get a run section first: processes and\n"
    "devices side by side, device totals summed over processes, and for each\n"
    "failed allocation what the other processes held on its device then.\n"
    "An output FILE that is a directory gets the first trace's name with the\n"
    "format's extension.\n"
    "\n";

static const char report_foot[] =
    "\n"
    "Exit: 0 ok, 1 a trace is truncated, 2 unusable input or output error.\n";

static void report_usage(FILE *f)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    const cli_opt *tabs[] = {cli_output_opts("report", rows), view_opts, report_opts, NULL};
    cli_help(f, report_head, tabs, report_foot);
}

void cli_report_synopsis(FILE *f)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    fputs("  report FILE...", f);
    cli_synopsis(f, cli_output_opts("report", rows));
    fputs("\n                 [--top N] [--quiet]\n", f);
}

/* The reports of files[n] as text and outputs; the exit status. */
static int report_files(char **files, size_t n, view *v)
{
    vr_report **r = calloc(n, sizeof(*r));
    if (!r || cli_outputs_prepare(files, n, 1, &v->outs) < 0) {
        free(r);
        cli_outputs_free(&v->outs);
        return CLI_EXIT_INPUT;
    }
    int rc = cli_load_all(files, n, &v->opt, r, "report");
    if (rc == CLI_EXIT_INPUT) {
        cli_free_all(r, n);
        cli_outputs_free(&v->outs);
        return rc;
    }
    if (v->allow_trunc)
        rc = 0;
    if (!v->quiet &&
        (vr_render_runs(stdout, r, n, &v->opt) < 0 || vr_render_text(stdout, r, n, &v->opt) < 0))
        rc = CLI_EXIT_INPUT;
    if (cli_outputs_write("report", &v->outs, r, n, &v->opt) < 0)
        rc = CLI_EXIT_INPUT;
    cli_free_all(r, n);
    return rc;
}

int cli_cmd_report(int argc, char **argv)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    const cli_opt *tabs[] = {cli_output_opts("report", rows), view_opts, report_opts, NULL};
    view v;
    int rc = parse_view(argc, argv, "report", tabs, report_usage, &v);
    if (rc >= 0)
        return rc;
    size_t n = (size_t)(argc - optind);
    if (!n) {
        fputs("vramtrace report: no trace file given\n", stderr);
        report_usage(stderr);
        return CLI_EXIT_INPUT;
    }
    char **files;
    if (cli_run_files(argv + optind, n, &files, &n) < 0)
        return CLI_EXIT_INPUT;
    rc = report_files(files, n, &v);
    cli_run_files_free(files, n);
    return rc;
}

/* ---- diff --------------------------------------------------------------------- */

static const char diff_head[] =
    "usage: vramtrace diff BEFORE AFTER [options]\n"
    "\n"
    "Compare two traces (a run before and after a change) per call site, matched\n"
    "by symbolized frames (function, file, line), not addresses: bytes live at the\n"
    "peak, leaked at exit, growth per iteration and live at the fatal failure,\n"
    "sorted by the largest change. Like heaptrack_print --diff.\n"
    "An output FILE that is a directory gets BEFORE-vs-AFTER (names without their\n"
    "extensions) with the format's extension.\n"
    "\n";

static void diff_usage(FILE *f)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    const cli_opt *tabs[] = {cli_output_opts("diff", rows), view_opts, NULL};
    cli_help(f, diff_head, tabs, report_foot);
}

void cli_diff_synopsis(FILE *f)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    fputs("  diff BEFORE AFTER", f);
    cli_synopsis(f, cli_output_opts("diff", rows));
    fputs(" [--top N] [--quiet]\n"
          "        peak, leaks, growth and OOMs per call site, sorted by change\n",
          f);
}

int cli_cmd_diff(int argc, char **argv)
{
    cli_opt rows[CLI_MAX_OUTPUTS + 1];
    const cli_opt *tabs[] = {cli_output_opts("diff", rows), view_opts, NULL};
    view v;
    int rc = parse_view(argc, argv, "diff", tabs, diff_usage, &v);
    if (rc >= 0)
        return rc;
    if (argc - optind != 2) {
        fputs("vramtrace diff: two trace files wanted (BEFORE AFTER)\n", stderr);
        diff_usage(stderr);
        return CLI_EXIT_INPUT;
    }
    char **files = argv + optind;
    vr_report **r = calloc(2, sizeof(*r));
    if (!r || cli_outputs_prepare(files, 2, 2, &v.outs) < 0) {
        free(r);
        cli_outputs_free(&v.outs);
        return CLI_EXIT_INPUT;
    }
    rc = cli_load_all(files, 2, &v.opt, r, "diff");
    if (rc != CLI_EXIT_INPUT && !v.quiet && vr_render_diff_text(stdout, r, 2, &v.opt) < 0)
        rc = CLI_EXIT_INPUT;
    if (rc != CLI_EXIT_INPUT && cli_outputs_write("diff", &v.outs, r, 2, &v.opt) < 0)
        rc = CLI_EXIT_INPUT;
    cli_outputs_free(&v.outs);
    cli_free_all(r, 2);
    return rc;
}
