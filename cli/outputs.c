/* outputs.c: the one table of the files `vramtrace report` and `vramtrace
 * diff` can write (option, format, extension, renderer), and how they are
 * written: never through a link, never onto an input, all or nothing. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT(cmd, flag, i, fmt, ext, help, fn)                                                      \
    {                                                                                              \
        cmd, {flag, 0, required_argument, CLI_OUT_VAL + (i), "FILE", help}, fmt, ext, fn           \
    }

const cli_output cli_outputs[] = {
    OUT("report", "json", 0, "JSON report", ".json", "JSON report (format \"vramtrace-report\")",
        vr_render_json),
    OUT("report", "html", 1, "HTML report", ".html",
        "self-contained HTML report (no network needed)", vr_render_html),
    OUT("report", "folded", 2, "folded stacks", ".folded",
        "bytes at the peak per stack, for flamegraph.pl / speedscope", vr_render_folded),
    OUT("report", "chrome", 3, "Chrome trace", ".chrome.json",
        "Chrome trace JSON (Perfetto): memory counters, NVTX ranges, OOMs", vr_render_chrome),
    OUT("report", "memory-viz", 4, "PyTorch memory snapshot", ".pickle",
        "PyTorch memory snapshot (pickle) for pytorch.org/memory_viz:\n"
        "segments at the fatal failure (else at the peak), device_traces\n"
        "up to then",
        vr_render_memviz),
    OUT("diff", "json", 5, "JSON diff", ".diff.json", "JSON diff (format \"vramtrace-diff\")",
        vr_render_diff_json),
    OUT("diff", "html", 6, "HTML diff", ".diff.html", "self-contained HTML page",
        vr_render_diff_html),
    {NULL, {NULL, 0, 0, 0, NULL, NULL}, NULL, NULL, NULL},
};

_Static_assert(sizeof cli_outputs / sizeof cli_outputs[0] - 1 <= CLI_MAX_OUTPUTS,
               "cli_out_paths holds CLI_MAX_OUTPUTS paths");

const cli_opt *cli_output_opts(const char *command, cli_opt rows[CLI_MAX_OUTPUTS + 1])
{
    size_t n = 0;
    for (size_t i = 0; cli_outputs[i].command; i++)
        if (!strcmp(cli_outputs[i].command, command))
            rows[n++] = cli_outputs[i].opt;
    rows[n] = (cli_opt){0};
    return rows;
}

bool cli_output_option(int c, const char *command, cli_out_paths *p)
{
    int i = c - CLI_OUT_VAL;
    if (i < 0 || (size_t)i >= sizeof cli_outputs / sizeof cli_outputs[0] - 1 ||
        strcmp(cli_outputs[i].command, command))
        return false;
    p->path[i] = optarg;
    return true;
}

/* ---- directories: DIR/STEM.EXT ------------------------------------------------- */

/* The name of path's last component without its extension, appended to buf. */
static void add_stem(char *buf, size_t len, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot > base ? (size_t)(dot - base) : strlen(base), have = strlen(buf);
    snprintf(buf + have, len - have, "%.*s", (int)n, base);
}

/* outs->path[i] names a directory: make it DIR/STEM.EXT. 0 or -1. */
static int into_dir(cli_out_paths *outs, size_t i, char **inputs, size_t nstem)
{
    char stem[PATH_MAX] = "", path[PATH_MAX];
    for (size_t k = 0; k < nstem; k++) {
        if (k)
            strncat(stem, "-vs-", sizeof stem - strlen(stem) - 1);
        add_stem(stem, sizeof stem, inputs[k]);
    }
    const char *dir = outs->path[i];
    size_t dl = strlen(dir);
    if (snprintf(path, sizeof path, "%s%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", stem,
                 cli_outputs[i].ext) >= (int)sizeof path ||
        !(outs->owned[i] = strdup(path))) {
        fprintf(stderr, "vramtrace: %s: name too long\n", dir);
        return -1;
    }
    outs->path[i] = outs->owned[i];
    return 0;
}

/* ---- refusals ---------------------------------------------------------------- */

static FILE *temp_beside(const char *path, char *tmp, size_t len);

/* Why path cannot be written after temp_beside failed with errno: the
 * directory that refused the temporary file is named, since mkstemp's errno
 * alone misleads where the directory exists but takes no new files (ENOENT
 * in /proc, for a path that exists). */
static void say_unwritable(const char *cmd, const cli_output *o, const char *path)
{
    int err = errno;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) + (slash == path) : 1;
    fprintf(stderr, "vramtrace %s: cannot write the %s %s: cannot create a file in %.*s: %s\n", cmd,
            o->format, path, dirlen, slash ? path : ".", strerror(err));
}

/* Output i can be written where it goes: a temporary file beside it is
 * created and removed again (the file itself is written only after the
 * report is made, all or nothing), so that a path in a missing or read-only
 * directory fails before the traces are replayed and before any text is
 * printed. "-" and an existing device or FIFO are opened only then. 0 or -1
 * with a message. */
static int output_unwritable(const char *cmd, const cli_output *o, const char *path)
{
    char tmp[PATH_MAX];
    struct stat st;
    if (!strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
        return 0;
    FILE *f = temp_beside(path, tmp, sizeof tmp);
    if (!f) {
        say_unwritable(cmd, o, path);
        return -1;
    }
    fclose(f);
    unlink(tmp);
    return 0;
}

/* Identity (device, inode) of each input trace, to refuse outputs onto them. */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
} file_id;

/* Refuse an output path that is a symbolic link or that names one of the
 * inputs (same device and inode, through any link): 0 or -1 with a message. */
static int output_refused(const char *path, const file_id *in, size_t nin)
{
    struct stat st;
    if (!strcmp(path, "-"))
        return 0;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        fprintf(stderr, "vramtrace: %s is a symbolic link: refusing to write through it\n", path);
        return -1;
    }
    if (stat(path, &st) != 0)
        return 0;
    for (size_t i = 0; i < nin; i++)
        if (st.st_dev == in[i].dev && st.st_ino == in[i].ino) {
            fprintf(stderr, "vramtrace: %s is an input trace: refusing to overwrite it\n", path);
            return -1;
        }
    return 0;
}

/* Output i against the inputs (by name and identity) and the outputs
 * before it: 0 or -1 with a message. */
static int one_refused(const cli_out_paths *outs, size_t i, char **inputs, const file_id *ids,
                       size_t nin)
{
    const char *p = outs->path[i];
    if (output_refused(p, ids, nin) < 0)
        return -1;
    for (size_t j = 0; j < i; j++)
        if (outs->path[j] && strcmp(p, "-") && !strcmp(p, outs->path[j])) {
            fprintf(stderr, "vramtrace: %s is given for two outputs\n", p);
            return -1;
        }
    for (size_t j = 0; j < nin; j++)
        if (!strcmp(p, inputs[j])) {
            fprintf(stderr, "vramtrace: %s is an input trace: refusing to overwrite it\n", p);
            return -1;
        }
    return 0;
}

int cli_outputs_prepare(char **inputs, size_t nin, size_t nstem, cli_out_paths *outs)
{
    file_id *ids = calloc(nin + 1, sizeof *ids);
    int rc = ids ? 0 : -1;
    struct stat st;
    for (size_t i = 0; ids && i < nin; i++)
        if (stat(inputs[i], &st) == 0)
            ids[i] = (file_id){st.st_dev, st.st_ino};
    for (size_t i = 0; rc == 0 && i < CLI_MAX_OUTPUTS; i++) {
        if (!outs->path[i])
            continue;
        if (stat(outs->path[i], &st) == 0 && S_ISDIR(st.st_mode))
            rc = into_dir(outs, i, inputs, nstem < nin ? nstem : nin);
        if (rc == 0)
            rc = one_refused(outs, i, inputs, ids, nin);
        if (rc == 0)
            rc = output_unwritable(cli_outputs[i].command, &cli_outputs[i], outs->path[i]);
    }
    free(ids);
    return rc;
}

void cli_outputs_free(cli_out_paths *outs)
{
    for (size_t i = 0; i < CLI_MAX_OUTPUTS; i++) {
        free(outs->owned[i]);
        outs->owned[i] = NULL;
    }
}

/* ---- writing ------------------------------------------------------------------ */

/* A new temporary file next to path (O_EXCL, never through a link), with the
 * permissions fopen("w") would give; its name into tmp. NULL on error. */
static FILE *temp_beside(const char *path, char *tmp, size_t len)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(tmp, len, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) >= (int)len) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd < 0)
        return NULL;
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
    }
    return f;
}

/* Render into a temporary file and rename it onto path: a failure leaves no
 * half-written file, and a link planted meanwhile is replaced, never
 * followed. "-" writes to stdout; an existing device or FIFO is written in
 * place. */
static int write_output(const char *cmd, const char *path, const cli_output *o, vr_report *const *r,
                        size_t n, const vr_options *opt)
{
    char tmp[PATH_MAX];
    struct stat st;
    bool dash = !strcmp(path, "-");
    bool direct = dash || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
    FILE *f = dash ? stdout : direct ? fopen(path, "w") : temp_beside(path, tmp, sizeof tmp);
    if (!f && !direct) {
        say_unwritable(cmd, o, path);
        return -1;
    }
    if (!f) {
        fprintf(stderr, "vramtrace %s: cannot write the %s %s: %s\n", cmd, o->format, path,
                strerror(errno));
        return -1;
    }
    int rc = o->render(f, r, n, opt);
    if (dash)
        rc = fflush(f) != 0 ? -1 : rc;
    else if (direct)
        rc = fclose(f) != 0 ? -1 : rc;
    else if (fclose(f) != 0 || rc < 0 || rename(tmp, path) != 0)
        rc = -1;
    if (rc < 0 && !direct)
        unlink(tmp);
    if (rc < 0)
        fprintf(stderr, "vramtrace %s: error writing the %s %s\n", cmd, o->format, path);
    return rc;
}

int cli_outputs_write(const char *cmd, cli_out_paths *outs, vr_report *const *r, size_t n,
                      const vr_options *opt)
{
    int rc = 0;
    for (size_t i = 0; cli_outputs[i].command; i++)
        if (outs->path[i] && write_output(cmd, outs->path[i], &cli_outputs[i], r, n, opt) < 0)
            rc = -1;
    cli_outputs_free(outs);
    return rc;
}
