/* options.c: a command's option tables turned into getopt_long's table and
 * into its --help (cli.h), so that the two cannot disagree. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The -h/--help row every command has. */
static const cli_opt help_row = {"help", 'h', no_argument, 'h', NULL, NULL};

static size_t count_rows(const cli_opt *const *tabs)
{
    size_t n = 0;
    for (; *tabs; tabs++)
        for (const cli_opt *o = *tabs; o->name; o++)
            n++;
    return n;
}

/* Append o's short-option letter (with ':' for an argument) to shorts. */
static void add_short(const cli_opt *o, char *shorts, size_t len, size_t *k)
{
    if (!o->letter || *k + 3 >= len)
        return;
    shorts[(*k)++] = o->letter;
    if (o->has_arg == required_argument)
        shorts[(*k)++] = ':';
    shorts[*k] = '\0';
}

struct option *cli_getopt_table(const cli_opt *const *tabs, const char *lead, char *shorts,
                                size_t len)
{
    struct option *out = calloc(count_rows(tabs) + 2, sizeof *out);
    size_t n = 0, k = (size_t)snprintf(shorts, len, "%s", lead);
    if (!out)
        return NULL;
    for (; *tabs; tabs++)
        for (const cli_opt *o = *tabs; o->name; o++) {
            out[n++] = (struct option){o->name, o->has_arg, NULL, o->val};
            add_short(o, shorts, len, &k);
        }
    out[n] = (struct option){help_row.name, help_row.has_arg, NULL, help_row.val};
    add_short(&help_row, shorts, len, &k);
    return out;
}

/* Column of the help texts: "  --json FILE     JSON report". */
enum { HELP_COL = 18 };

/* "--name", "--name ARG" or "--name[=ARG]" into buf; its length. */
static int option_name(const cli_opt *o, char *buf, size_t len)
{
    bool opt = o->has_arg == optional_argument && o->arg;
    return snprintf(buf, len, "--%s%s%s%s", o->name,
                    opt      ? "[="
                    : o->arg ? " "
                             : "",
                    o->arg ? o->arg : "", opt ? "]" : "");
}

static void help_row_print(FILE *f, const cli_opt *o)
{
    char name[64], full[80];
    option_name(o, name, sizeof name);
    int w = o->letter ? snprintf(full, sizeof full, "  -%c, %s", o->letter, name)
                      : snprintf(full, sizeof full, "  %s", name);
    fputs(full, f);
    const char *h = o->help ? o->help : "";
    if (!*h) {
        fputc('\n', f);
        return;
    }
    fprintf(f, "%*s", w < HELP_COL - 1 ? HELP_COL - w : 2, "");
    for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
        fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
    fprintf(f, "%s\n", h);
}

void cli_help(FILE *f, const char *head, const cli_opt *const *tabs, const char *foot)
{
    fputs(head, f);
    for (; *tabs; tabs++)
        for (const cli_opt *o = *tabs; o->name; o++)
            help_row_print(f, o);
    help_row_print(f, &help_row);
    fputs(foot, f);
}

void cli_synopsis(FILE *f, const cli_opt *tab)
{
    for (const cli_opt *o = tab; o->name; o++)
        fprintf(f, " [--%s%s]", o->name, o->arg ? " F" : "");
}
