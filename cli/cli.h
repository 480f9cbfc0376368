/* cli.h: the vramtrace command (docs/architecture.md, "cli/"): one file per
 * command, the option tables --help and getopt_long are generated from, the
 * table of report outputs, and `vramtrace run`'s side of a run. cli/ uses
 * report/ (report.h) and trace/ (vtrace.h); nothing uses cli/. */
#ifndef VRAMTRACE_CLI_H
#define VRAMTRACE_CLI_H

#include "report.h"
#include "vtrace.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit statuses of every command but run (which passes the program's on). */
enum { CLI_EXIT_LIMIT = 1, CLI_EXIT_INPUT = 2 };

/* ---- option tables (options.c) --------------------------------------------- */

/* One option of a command: long name (without "--"), short letter or 0,
 * getopt_long's has_arg, the value getopt_long returns for it (the short
 * letter when there is one), the argument's name in --help ("FILE", NULL
 * for none) and the help text (lines after the first start below the
 * text column). A table ends with a row whose name is NULL. */
typedef struct cli_opt {
    const char *name;
    char letter;
    int has_arg;
    int val;
    const char *arg;
    const char *help;
} cli_opt;

/* A command's options for getopt_long: the rows of each table of tabs
 * (NULL-terminated list of tables), then "help"/-h, into a malloc'd struct
 * option array (with its zero row) and its short-option string into
 * shorts (lead: "+" to stop at the first operand, or ""). NULL on no
 * memory. */
struct option *cli_getopt_table(const cli_opt *const *tabs, const char *lead, char *shorts,
                                size_t len);
/* --help of a command: head, one line (or more) per option of each table
 * of tabs in the "  --name ARG  help" layout, "  -h, --help", then foot. */
void cli_help(FILE *f, const char *head, const cli_opt *const *tabs, const char *foot);
/* " [--name F]" for each row of tab (any argument shown as F), on f: the
 * main usage's synopsis of the output options. */
void cli_synopsis(FILE *f, const cli_opt *tab);

/* ---- report outputs (outputs.c) ---------------------------------------------- */

typedef int (*cli_render_fn)(FILE *, vr_report *const *, size_t, const vr_options *);

/* One output file a command can write: the command ("report", "diff"), its
 * option, the format's name (messages), the extension of the file named
 * when the option is given a directory, the help text and the renderer. */
typedef struct cli_output {
    const char *command;
    cli_opt opt;
    const char *format;
    const char *ext;
    cli_render_fn render;
} cli_output;

/* The table (ends with a row whose command is NULL). */
#define CLI_OUT_VAL 1000
#define CLI_MAX_OUTPUTS 16
extern const cli_output cli_outputs[];
/* The option rows of command's outputs, in table order, into rows (a
 * cli_opt table whose vals are CLI_OUT_VAL + the output's index into
 * cli_outputs); returns rows. */
const cli_opt *cli_output_opts(const char *command, cli_opt rows[CLI_MAX_OUTPUTS + 1]);
/* The paths a command was given for its outputs, indexed like cli_outputs
 * (owned: the DIR/STEM.EXT names cli_outputs_prepare made). */
typedef struct cli_out_paths {
    const char *path[CLI_MAX_OUTPUTS];
    char *owned[CLI_MAX_OUTPUTS];
} cli_out_paths;
/* The output option c (a getopt_long value) of command: true when it is
 * one and its path was stored. */
bool cli_output_option(int c, const char *command, cli_out_paths *p);
/* Before anything is read: an output given an existing directory becomes
 * DIR/STEM.EXT (STEM: the names of the first nstem inputs without their
 * extensions, joined by "-vs-"); then outputs that are links or name an
 * input or each other are refused, and so are outputs whose directory cannot
 * take a new file (missing, read-only). 0, or -1 said on stderr. */
int cli_outputs_prepare(char **inputs, size_t nin, size_t nstem, cli_out_paths *outs);
/* Render each requested output for the reports r[n] into a temporary file
 * renamed into place ("-" is stdout; a device or FIFO is written in place).
 * -1 when one failed (said on stderr). Frees what prepare made. */
int cli_outputs_write(const char *cmd, cli_out_paths *outs, vr_report *const *r, size_t n,
                      const vr_options *opt);
void cli_outputs_free(cli_out_paths *outs);

/* ---- commands ----------------------------------------------------------------- */

/* Each: argv[0] is the command's name; returns the exit status. */
int cli_cmd_run(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);
int cli_cmd_diff(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_recover(int argc, char **argv);
int cli_cmd_symbolize(int argc, char **argv);
/* The synopsis lines of the main usage (main.c prints them in order). */
void cli_report_synopsis(FILE *f);
void cli_diff_synopsis(FILE *f);
void cli_check_synopsis(FILE *f);
void cli_run_synopsis(FILE *f);
void cli_recover_synopsis(FILE *f);
void cli_symbolize_synopsis(FILE *f);
/* vr_embed_symbols on path; a failure said on stderr ("vramtrace CMD:
 * ..."), and with verbose also what it named. 0, or -1 on failure. */
int cli_symbolize_one(const char *cmd, const char *path, bool verbose);
/* A command that takes only FILE... (recover, symbolize): usage on stderr
 * and CLI_EXIT_INPUT without files or with an option, --help on stdout
 * (0); else one(cmd, path) for each file, CLI_EXIT_INPUT if one failed
 * (returned < 0), else 0. */
int cli_each_file(int argc, char **argv, const char *cmd, void (*usage)(FILE *),
                  int (*one)(const char *cmd, const char *path));
/* vt_recover on path, saying on stderr what it recovered or why it could
 * not ("vramtrace CMD: ..."), and with verbose also that there was nothing
 * to recover; end as vt_recover's. 0, or -1 on failure. */
int cli_recover_one(const char *cmd, const char *path, const vt_recover_end *end, bool verbose);

/* Options with the progress bar on; VRAMTRACE_PROGRESS_AFTER_MS (a number of
 * ms, >= 1) shows it sooner or later than the default 2 s (tests). */
vr_options cli_progress_options(void);
/* Load every file; 0, 1 if one is truncated (said), 2 if one is unusable
 * (said, r[] up to it filled, the rest NULL). */
int cli_load_all(char **files, size_t n, const vr_options *opt, vr_report **r, const char *cmd);
void cli_free_all(vr_report **r, size_t n);

/* ---- vramtrace run's side of a run (run_list.c, run_files.c) ------------------ */

/* `vramtrace run`'s run: its id and the list file the preload appends each
 * trace's path to (trace/vtrace.h, "Run naming"). */
typedef struct cli_run_list {
    char id[VT_RUN_ID_LEN + 1];
    char list[4096];
    /* set by the caller after cli_run_begin: no --sim and no CUDA driver
     * (cli_cuda_driver_present) */
    bool no_driver;
    /* set by the caller: name each trace's frames at the end (vramtrace
     * symbolize), unless --no-symbolize */
    bool symbolize;
    /* set by the caller when the program could not be executed (said
     * then): no line about traces or the driver at the end */
    bool not_started;
    /* set by the caller once the program ended: its pid and wait status */
    pid_t child;
    int child_status;
    bool child_ended;
} cli_run_list;
/* Whether libcuda.so.1 (the CUDA driver) can be loaded with this process's
 * library path, as the program will search it: asked in a child that
 * leaves with _exit (no driver state in vramtrace). */
bool cli_cuda_driver_present(void);
/* Draw the run id, create the list file (mode 0600, in $TMPDIR or /tmp) and
 * put both in the environment. 0, or -1 with a message on stderr. */
int cli_run_begin(cli_run_list *rl);
/* After the program: recover what each killed process of the run had not
 * written (vt_recover; the end of the program's own process, from its wait
 * status, when its trace has none), with symbolize name their native
 * frames in them (cli_symbolize_one), print the run's traces on stderr ("vramtrace run:
 * trace: P" for one, "vramtrace run: N traces (run ID):" and one per line
 * for several) and remove the list file. With no_driver, the traces that
 * hold no allocation are removed instead and one line names --sim. */
void cli_run_end(cli_run_list *rl);
/* -o PATTERN before the program starts: -1 with a message when it is a bad
 * pattern (vt_name_expand), or names an existing file (removed instead with
 * force). */
int cli_run_output_check(const char *pattern, bool force);
/* --sim=DEVICE before the program starts: -1 with a message listing the
 * profiles when DEVICE is not one of the simulated device's (asked of
 * SIMDIR/libcuda.so.1's vtsim_profiles in a child that leaves with _exit, so
 * that no destructor of the sim runs in vramtrace; sim/README.md,
 * "Identity"), else 0 (also when the sim gives no list). */
int cli_sim_profile_check(const char *simdir, const char *want);
/* The files to report: each given path, then the traces of its run that
 * carry its name with a pid inserted (vt_name_is_sibling, same run id in the
 * header), in its directory, sorted by name. *out is malloc'd (strings too);
 * free with cli_run_files_free. 0, or -1 on no memory. */
int cli_run_files(char **paths, size_t n, char ***out, size_t *nout);
void cli_run_files_free(char **files, size_t n);

#endif
