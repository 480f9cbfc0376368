/* cmd_symbolize.c: vramtrace symbolize: name a trace's native frames on the
 * machine that recorded it and append the names to the trace (report.h,
 * vr_embed_symbols; docs/trace.md, "Symbols"), so that a report elsewhere
 * names the same frames. vramtrace run does the same by itself. */
#include "cli.h"

static const char symbolize_head[] =
    "usage: vramtrace symbolize FILE...\n"
    "\n"
    "A trace records return addresses; the report names them from the program's\n"
    "and its libraries' files (checked by build-id). On another machine, without\n"
    "those files, its frames would be offsets and PyTorch's cache could not be told\n"
    "from a leak. Run symbolize on the machine that recorded FILE, after the program\n"
    "has ended: it names every native frame of its call stacks from the files here\n"
    "and appends the names to FILE (nothing in it is changed; a FILE that carries\n"
    "names already is left as it is). vramtrace run does this itself when the\n"
    "program has ended, unless given --no-symbolize.\n"
    "Exit 0 when every FILE carries its names, 2 otherwise.\n"
    "\n";

static void symbolize_usage(FILE *f)
{
    const cli_opt *tabs[] = {NULL};
    cli_help(f, symbolize_head, tabs, "");
}

void cli_symbolize_synopsis(FILE *f)
{
    fputs("  symbolize FILE...\n"
          "        name the native frames of a trace here, for reports on other machines\n",
          f);
}

int cli_symbolize_one(const char *cmd, const char *path, bool verbose)
{
    char err[1024];
    vr_embed_result res;
    vr_options opt = cli_progress_options();
    if (vr_embed_symbols(path, &opt, &res, err, sizeof err) < 0) {
        fprintf(stderr, "vramtrace %s: %s\n", cmd, err);
        return -1;
    }
    if (!verbose)
        return 0;
    if (res.already)
        fprintf(stderr, "vramtrace %s: %s: carries its symbols already; left as it is\n", cmd,
                path);
    else
        fprintf(stderr,
                "vramtrace %s: %s: %zu of %zu return addresses named (%zu frames, inlined ones "
                "included)%s\n",
                cmd, path, res.named, res.ips, res.frames,
                res.named < res.ips ? "; the others are in files that cannot be read here or "
                                      "have no symbols"
                                    : "");
    return 0;
}

static int symbolize_file(const char *cmd, const char *path)
{
    return cli_symbolize_one(cmd, path, true);
}

int cli_cmd_symbolize(int argc, char **argv)
{
    return cli_each_file(argc, argv, "symbolize", symbolize_usage, symbolize_file);
}
