/* main.c: the vramtrace command: run, report, diff, check, recover,
 * symbolize (cli.h). */
#include "cli.h"

#include <string.h>

#ifndef VRAMTRACE_VERSION
#define VRAMTRACE_VERSION "0.0.0"
#endif

/* The commands, in the order the main usage lists them. */
static const struct command {
    const char *name;
    int (*fn)(int, char **);
    void (*synopsis)(FILE *);
} commands[] = {
    {"run", cli_cmd_run, cli_run_synopsis},
    {"report", cli_cmd_report, cli_report_synopsis},
    {"diff", cli_cmd_diff, cli_diff_synopsis},
    {"check", cli_cmd_check, cli_check_synopsis},
    {"recover", cli_cmd_recover, cli_recover_synopsis},
    {"symbolize", cli_cmd_symbolize, cli_symbolize_synopsis},
};

static void usage_main(FILE *f)
{
    fputs("usage: vramtrace COMMAND [ARGS]\n\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        commands[i].synopsis(f);
    fputs("\n"
          "  vramtrace COMMAND --help   help for one command\n"
          "  vramtrace --version\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return CLI_EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("vramtrace %s\n", VRAMTRACE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) {
            /* getopt_long names argv[0] in its messages: "vramtrace report:"
             * as every other message of the command */
            char name[32];
            snprintf(name, sizeof name, "vramtrace %s", commands[i].name);
            argv[1] = name;
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "vramtrace: unknown command '%s'\n", cmd);
    usage_main(stderr);
    return CLI_EXIT_INPUT;
}
