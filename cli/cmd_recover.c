/* cmd_recover.c: vramtrace recover: append to a trace what its process
 * recorded but had not written when it was killed (trace/vtrace.h,
 * "Recovery after a kill"). vramtrace run does the same by itself. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

static const char recover_head[] =
    "usage: vramtrace recover FILE...\n"
    "\n"
    "A process killed by SIGKILL (the out-of-memory killer, a notebook restarting its\n"
    "kernel) did not write what it recorded since its last flush (up to 100 ms).\n"
    "That is kept in the trace's spill file in /dev/shm; recover appends it to FILE\n"
    "and removes the spill file. vramtrace run does this itself for the traces of\n"
    "its run. A trace that was closed has no spill file and is left unchanged.\n"
    "Exit 0 when every FILE is complete or was recovered, 2 otherwise.\n"
    "\n";

static void recover_usage(FILE *f)
{
    const cli_opt *tabs[] = {NULL};
    cli_help(f, recover_head, tabs, "");
}

void cli_recover_synopsis(FILE *f)
{
    fputs("  recover FILE...\n"
          "        append what a killed process recorded but had not written\n",
          f);
}

/* Recover path and say what happened in one line on stderr: 0 or -1. */
int cli_recover_one(const char *cmd, const char *path, const vt_recover_end *end, bool verbose)
{
    char err[512];
    vt_recover_result res;
    int rc = vt_recover(path, end, &res, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "vramtrace %s: %s\n", cmd, err);
        return -1;
    }
    if (rc == 0 && verbose)
        fprintf(stderr,
                "vramtrace %s: %s: nothing to recover (no spill file: the trace was closed or "
                "already recovered)\n",
                cmd, path);
    if (rc > 0 && (res.chunks || res.end_added || res.dropped_bytes))
        fprintf(stderr,
                "vramtrace %s: %s: recovered %" PRIu64 " bytes of records the process had "
                "not written%s%s\n",
                cmd, path, res.bytes,
                res.dropped_bytes ? " (its incomplete last batch cut off)" : "",
                res.end_added ? "; its end added" : "");
    if (rc > 0 && verbose && !res.chunks && !res.dropped_bytes)
        fprintf(stderr,
                "vramtrace %s: %s: every record was already in the trace; its spill file is "
                "removed\n",
                cmd, path);
    if (rc > 0 && res.invalid_bytes)
        fprintf(stderr,
                "vramtrace %s: %s: %" PRIu64 " bytes of its spill file were not whole records "
                "(the file was damaged) and were left out\n",
                cmd, path, res.invalid_bytes);
    return 0;
}

static int recover_file(const char *cmd, const char *path)
{
    return cli_recover_one(cmd, path, NULL, true);
}

int cli_cmd_recover(int argc, char **argv)
{
    return cli_each_file(argc, argv, "recover", recover_usage, recover_file);
}

int cli_each_file(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
                  int (*one)(const char *cmd, const char *path))
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            fprintf(stderr, "vramtrace %s: unknown option '%s'\n", cmd, argv[i]);
            usage(stderr);
            return CLI_EXIT_INPUT;
        }
    }
    int bad = 0;
    for (int i = 1; i < argc; i++)
        bad |= one(cmd, argv[i]) < 0;
    return bad ? CLI_EXIT_INPUT : 0;
}
