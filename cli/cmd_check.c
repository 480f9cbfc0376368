/* cmd_check.c: vramtrace check: limits on one trace for CI (exit 1 names
 * each broken limit). Sizes by the one grammar (size/vsize.h). */
#include "cli.h"
#include "vsize.h"

#include <stdlib.h>

enum { O_PEAK = 256, O_LEAK, O_HOSTLEAK, O_GROWTH, O_NOOOM, O_TRUNC, O_INCOMPLETE, O_EMPTY };

static const cli_opt check_opts[] = {
    {"max-peak", 0, required_argument, O_PEAK, "SIZE",
     "peak allocated device memory (all devices; device, managed\n"
     "and VMM memory, not pinned or registered host memory)"},
    {"max-leaked", 0, required_argument, O_LEAK, "SIZE",
     "device memory live at exit, besides what a caching\n"
     "allocator holds as its cache (PyTorch's segments)"},
    {"max-host-leaked", 0, required_argument, O_HOSTLEAK, "SIZE",
     "pinned and registered host memory live at exit, besides\n"
     "a caching allocator's cache (PyTorch's pinned blocks)"},
    {"no-oom", 0, no_argument, O_NOOOM, NULL,
     "no unrecovered failed allocation (one is recovered when the\n"
     "same thread's next attempt of the same size succeeds, e.g. a\n"
     "caching allocator that freed its cache and retried)"},
    {"max-growth", 0, required_argument, O_GROWTH, "SIZE",
     "growth of live bytes per iteration (least-squares fit)"},
    {"allow-truncated", 0, no_argument, O_TRUNC, NULL, "check a cut trace on what it holds"},
    {"allow-incomplete", 0, no_argument, O_INCOMPLETE, NULL,
     "check a trace without an end-of-process record (the\n"
     "program is still running, or died by SIGKILL outside\n"
     "vramtrace run: vramtrace recover FILE first)"},
    {"allow-empty", 0, no_argument, O_EMPTY, NULL,
     "pass a trace with no allocation, free or failure"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const char check_head[] =
    "usage: vramtrace check FILE [limits]\n"
    "\n"
    "Exit 0 when every limit holds, 1 with one line per broken limit, 2 when FILE\n"
    "cannot be used (not a trace, corrupt, truncated unless --allow-truncated).\n"
    "SIZE: a number of bytes, or a number (a fraction allowed) and a unit,\n"
    "    " VSIZE_UNITS_1024 "\n"
    "    or " VSIZE_UNITS_1000 ":\n"
    "    " VSIZE_EXAMPLES ".\n"
    "\n";

static const char check_foot[] =
    "\n"
    "A trace the checker cannot vouch for exits 2: no end-of-process record, or no\n"
    "memory event at all (a wrapper process was traced, or everything was lost).\n";

static void check_usage(FILE *f)
{
    const cli_opt *tabs[] = {check_opts, NULL};
    cli_help(f, check_head, tabs, check_foot);
}

void cli_check_synopsis(FILE *f)
{
    fputs("  check FILE [--max-peak SIZE] [--max-leaked SIZE] [--max-host-leaked SIZE] [--no-oom]\n"
          "             [--max-growth SIZE]\n",
          f);
}

static int size_arg(const char *opt, const char *s, int64_t *out)
{
    uint64_t v;
    int rc = vsize_parse(s, &v);
    if (rc == VSIZE_OK && v > INT64_MAX)
        rc = VSIZE_RANGE;
    if (rc != VSIZE_OK) {
        fprintf(stderr, "vramtrace check: %s: bad size '%s': %s (%s)\n", opt, s, vsize_strerror(rc),
                VSIZE_EXAMPLES);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* A trace the limits cannot be judged on: no END record (the end of the
 * process was not seen, so later events may be missing), or no memory event
 * at all. Prints why; true when check must fail. */
static bool unvouched(const vr_report *r, bool allow_incomplete, bool allow_empty)
{
    if (!r->has_end && !allow_incomplete) {
        fprintf(stderr,
                "vramtrace check: %s: no end-of-process record: the program is still running "
                "or was killed (SIGKILL), so events may be missing (vramtrace recover adds "
                "those a killed process left); --allow-incomplete checks what is there\n",
                r->path);
        return true;
    }
    if (r->allocations + r->frees + r->failed_allocations == 0 && !allow_empty) {
        fprintf(stderr,
                "vramtrace check: %s: 0 events recorded (no allocation, free or failure): "
                "nothing to check; --allow-empty passes it\n",
                r->path);
        return true;
    }
    return false;
}

typedef struct check_args {
    vr_limits lim;
    bool allow_trunc, allow_incomplete, allow_empty;
} check_args;

/* Applies option c: 0, or -1 on a bad size (said). */
static int check_option(int c, check_args *a)
{
    switch (c) {
    case O_PEAK:
        return size_arg("--max-peak", optarg, &a->lim.max_peak);
    case O_LEAK:
        return size_arg("--max-leaked", optarg, &a->lim.max_leaked);
    case O_HOSTLEAK:
        return size_arg("--max-host-leaked", optarg, &a->lim.max_host_leaked);
    case O_GROWTH:
        return size_arg("--max-growth", optarg, &a->lim.max_growth);
    case O_NOOOM:
        a->lim.no_oom = true;
        return 0;
    case O_TRUNC:
        a->allow_trunc = true;
        return 0;
    case O_INCOMPLETE:
        a->allow_incomplete = true;
        return 0;
    default: /* O_EMPTY: getopt_long returns nothing else here */
        a->allow_empty = true;
        return 0;
    }
}

/* Parse the options into a: -1 go on, else the exit status. */
static int parse_check(int argc, char **argv, check_args *a)
{
    const cli_opt *tabs[] = {check_opts, NULL};
    char shorts[16];
    struct option *opts = cli_getopt_table(tabs, "", shorts, sizeof shorts);
    int c, rc = opts ? -1 : CLI_EXIT_INPUT;
    while (rc < 0 && (c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        if (c == 'h')
            rc = (check_usage(stdout), 0);
        else if (c == '?' || c == ':')
            rc = (check_usage(stderr), CLI_EXIT_INPUT);
        else if (check_option(c, a) < 0)
            rc = CLI_EXIT_INPUT;
    }
    free(opts);
    return rc;
}

int cli_cmd_check(int argc, char **argv)
{
    check_args a = {
        .lim = {.max_peak = -1, .max_leaked = -1, .max_growth = -1, .max_host_leaked = -1}};
    int rc = parse_check(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (argc - optind != 1) {
        fputs("vramtrace check: exactly one trace file wanted\n", stderr);
        check_usage(stderr);
        return CLI_EXIT_INPUT;
    }
    vr_options opt = cli_progress_options();
    vr_report **r = calloc(1, sizeof(*r));
    if (!r)
        return CLI_EXIT_INPUT;
    rc = cli_load_all(argv + optind, 1, &opt, r, "check");
    if (rc == CLI_EXIT_INPUT || (rc == 1 && !a.allow_trunc) ||
        unvouched(r[0], a.allow_incomplete, a.allow_empty)) {
        cli_free_all(r, 1);
        return CLI_EXIT_INPUT;
    }
    int broken = vr_check(stdout, r[0], &a.lim);
    cli_free_all(r, 1);
    return broken ? CLI_EXIT_LIMIT : 0;
}
