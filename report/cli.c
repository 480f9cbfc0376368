/* cli.c: the vramtrace command: run, report, check. */
#include "report.h"
#include "run_internal.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VRAMTRACE_VERSION
#define VRAMTRACE_VERSION "0.0.0"
#endif
#ifndef VRAMTRACE_INSTALL_LIBDIR
#define VRAMTRACE_INSTALL_LIBDIR "lib"
#endif
#ifndef VRAMTRACE_INSTALL_SIMDIR
#define VRAMTRACE_INSTALL_SIMDIR "lib/vramtrace/sim"
#endif

enum { EXIT_LIMIT = 1, EXIT_INPUT = 2 };

static const char usage_main[] =
    "usage: vramtrace COMMAND [ARGS]\n"
    "\n"
    "  run [--sim[=DEVICE]] [--torch-tensors] [-o FILE] [--force] -- PROGRAM ARGS...\n"
    "        record the device memory of PROGRAM and every process it starts\n"
    "  report FILE... [--json F] [--html F] [--folded F] [--chrome F] [--memory-viz F]\n"
    "                 [--top N] [--quiet]\n"
    "  diff BEFORE AFTER [--json F] [--html F] [--top N] [--quiet]\n"
    "        peak, leaks, growth and OOMs per call site, sorted by change\n"
    "  check FILE [--max-peak SIZE] [--max-leaked SIZE] [--max-host-leaked SIZE] [--no-oom]\n"
    "             [--max-growth SIZE]\n"
    "\n"
    "  vramtrace COMMAND --help   help for one command\n"
    "  vramtrace --version\n";

static const char usage_run[] =
    "usage: vramtrace run [--sim[=DEVICE]] [--torch-tensors] [-o FILE] [--force] [--] PROGRAM "
    "[ARGS...]\n"
    "\n"
    "Run PROGRAM with libvramtrace.so preloaded (LD_PRELOAD) and print every trace\n"
    "of the run when it ends. PROGRAM may be a launcher (timeout, sh, env, mpirun,\n"
    "torchrun): only processes that call CUDA record; the first one gets FILE, each\n"
    "further one FILE with its pid before the extension (a.vtrace -> a.<pid>.vtrace).\n"
    "The exit status is PROGRAM's (128+N if killed by signal N).\n"
    "\n"
    "  --sim[=DEVICE]  run on the simulated CUDA device (LD_LIBRARY_PATH gets its\n"
    "                  directory and LD_PRELOAD its libcudart.so.13, so a program\n"
    "                  whose RPATH names a real runtime, e.g. a PyTorch wheel, still\n"
    "                  gets the simulated one; DEVICE sets VRAMTRACE_SIM_DEVICE, e.g. t4)\n"
    "  --torch-tensors PyTorch: PYTORCH_CUDA_ALLOC_CONF gets backend:cudaMallocAsync,\n"
    "                  so every tensor is one allocation the trace sees (the default\n"
    "                  caching allocator shows only its segments)\n"
    "  -o, --output FILE  trace file (VRAMTRACE_OUTPUT; %p = pid, %h = host)\n"
    "  -f, --force     replace an existing FILE (never replaced otherwise)\n"
    "  -h, --help\n";

static const char usage_report[] =
    "usage: vramtrace report FILE... [options]\n"
    "\n"
    "Replay traces and explain peak, out-of-memory failures, leaks, growth and\n"
    "fragmentation. Text goes to stdout; several files are shown side by side.\n"
    "A trace named like a run (-o a.vtrace) brings the run's other traces\n"
    "(a.<pid>.vtrace); traces of one run get a run section first: processes and\n"
    "devices side by side, device totals summed over processes, and for each\n"
    "failed allocation what the other processes held on its device then.\n"
    "\n"
    "  --json FILE     JSON report (format \"vramtrace-report\")\n"
    "  --html FILE     self-contained HTML report (no network needed)\n"
    "  --folded FILE   bytes at the peak per stack, for flamegraph.pl / speedscope\n"
    "  --chrome FILE   Chrome trace JSON (Perfetto): memory counters, NVTX ranges, OOMs\n"
    "  --memory-viz FILE  PyTorch memory snapshot (pickle) for pytorch.org/memory_viz:\n"
    "                  segments at the fatal failure (else at the peak), device_traces\n"
    "                  up to then\n"
    "  --top N         entries per table (default 10)\n"
    "  -q, --quiet     no text report on stdout\n"
    "  --no-symbols    do not read debug information (addresses only)\n"
    "  --native        keep the Python interpreter's own frames in stacks that\n"
    "                  have Python frames (hidden by default)\n"
    "  --allow-truncated  exit 0 for a cut trace (the report covers what came before)\n"
    "  -h, --help\n"
    "\n"
    "Exit: 0 ok, 1 a trace is truncated, 2 unusable input or output error.\n";

static const char usage_check[] =
    "usage: vramtrace check FILE [limits]\n"
    "\n"
    "Exit 0 when every limit holds, 1 with one line per broken limit, 2 when FILE\n"
    "cannot be used (not a trace, corrupt, truncated unless --allow-truncated).\n"
    "SIZE: a number with B, KiB, MiB, GiB, TiB (1024-based) or KB, MB, GB, TB (1000-based).\n"
    "\n"
    "  --max-peak SIZE     peak allocated device memory (all devices; device, managed\n"
    "                      and VMM memory, not pinned or registered host memory)\n"
    "  --max-leaked SIZE   device memory live at exit\n"
    "  --max-host-leaked SIZE  pinned and registered host memory live at exit\n"
    "  --no-oom            no unrecovered failed allocation (one is recovered when the\n"
    "                      same thread's next attempt of the same size succeeds, e.g. a\n"
    "                      caching allocator that freed its cache and retried)\n"
    "  --max-growth SIZE   growth of live bytes per iteration (least-squares fit)\n"
    "  --allow-truncated   check a cut trace on what it holds\n"
    "  --allow-incomplete  check a trace without an end-of-process record (the\n"
    "                      program is still running, or died by _exit, SIGKILL or\n"
    "                      a stack overflow: what came after the last flush is lost)\n"
    "  --allow-empty       pass a trace with no allocation, free or failure\n"
    "  -h, --help\n"
    "\n"
    "A trace the checker cannot vouch for exits 2: no end-of-process record, or no\n"
    "memory event at all (a wrapper process was traced, or everything was lost).\n";

/* ---- run ------------------------------------------------------------------ */

/* Directory of the running executable, into buf. */
static int exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

/* First of dir/../rel for rels that exists, into out. */
static int find_rel(const char *dir, const char *const *rels, char *out, size_t len)
{
    for (; *rels; rels++) {
        snprintf(out, len, "%s/../%s", dir, *rels);
        char real[PATH_MAX];
        if (realpath(out, real)) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    return -1;
}

static void prepend_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        setenv(name, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s%c%s", value, sep, old);
    setenv(name, v, 1);
    free(v);
}

/* Options with the progress bar on; VRAMTRACE_PROGRESS_AFTER_MS (a number of
 * ms, >= 1) shows it sooner or later than the default 2 s (tests). */
static vr_options progress_options(void)
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

typedef struct run_opts {
    bool sim, force, torch_tensors;
    const char *sim_device, *output;
} run_opts;

/* --sim: the simulated device's directory on LD_LIBRARY_PATH and its runtime
 * preloaded after the already prepended libvramtrace.so (value of
 * LD_PRELOAD: "libvramtrace.so:SIM/libcudart.so.13:<old>"), so that a
 * DT_RPATH naming a real libcudart.so.13 (PyTorch's wheels) is not searched:
 * the soname is already loaded. */
static int run_setenv_sim(const run_opts *o, const char *dir, const char *preload)
{
    const char *sim[] = {"lib/sim", VRAMTRACE_INSTALL_SIMDIR, NULL};
    char path[PATH_MAX + 64], rt[PATH_MAX + 96];
    if (find_rel(dir, sim, path, sizeof path) < 0) {
        fprintf(stderr, "vramtrace run: simulated device not found in %s/../lib/sim or %s/../%s\n",
                dir, dir, VRAMTRACE_INSTALL_SIMDIR);
        return -1;
    }
    if (o->sim_device && vr_sim_profile_check(path, o->sim_device) < 0)
        return -1;
    prepend_env("LD_LIBRARY_PATH", path, ':');
    snprintf(rt, sizeof rt, "%s/libcudart.so.13", path);
    prepend_env("LD_PRELOAD", rt, ':');
    prepend_env("LD_PRELOAD", preload, ':');
    if (o->sim_device)
        setenv("VRAMTRACE_SIM_DEVICE", o->sim_device, 1);
    return 0;
}

/* --torch-tensors: PyTorch's caching allocator hands each tensor to
 * cudaMallocAsync when PYTORCH_CUDA_ALLOC_CONF has backend:cudaMallocAsync
 * (PyTorch docs, "CUDA semantics: Using custom memory allocators for CUDA").
 * Other settings already there are kept; another backend is refused. */
static int torch_tensors_env(void)
{
    static const char want[] = "backend:cudaMallocAsync";
    const char *old = getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (old && strstr(old, want))
        return 0;
    if (old && strstr(old, "backend:")) {
        fprintf(stderr,
                "vramtrace run: --torch-tensors: PYTORCH_CUDA_ALLOC_CONF=%s already "
                "names a backend (refusing another backend)\n",
                old);
        return -1;
    }
    prepend_env("PYTORCH_CUDA_ALLOC_CONF", want, ',');
    return 0;
}

static int run_setenv(const run_opts *o)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    if (exe_dir(dir, sizeof dir) < 0) {
        fprintf(stderr, "vramtrace run: cannot find the vramtrace executable's directory\n");
        return -1;
    }
    const char *pre[] = {"lib/libvramtrace.so", VRAMTRACE_INSTALL_LIBDIR "/libvramtrace.so", NULL};
    if (find_rel(dir, pre, path, sizeof path) < 0) {
        fprintf(stderr, "vramtrace run: libvramtrace.so not found in %s/../lib or %s/../%s\n", dir,
                dir, VRAMTRACE_INSTALL_LIBDIR);
        return -1;
    }
    if (!o->sim)
        prepend_env("LD_PRELOAD", path, ':');
    else if (run_setenv_sim(o, dir, path) < 0)
        return -1;
    if (o->torch_tensors && torch_tensors_env() < 0)
        return -1;
    if (o->output)
        setenv("VRAMTRACE_OUTPUT", o->output, 1);
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sim", optional_argument, NULL, 's'}, {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},     {"torch-tensors", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    run_opts o = {0};
    int c;
    while ((c = getopt_long(argc, argv, "+o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            o.sim = true;
            o.sim_device = optarg;
            break;
        case 'o':
            o.output = optarg;
            break;
        case 'f':
            o.force = true;
            break;
        case 'T':
            o.torch_tensors = true;
            break;
        case 'h':
            fputs(usage_run, stdout);
            return 0;
        default:
            fputs(usage_run, stderr);
            return EXIT_INPUT;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "vramtrace run: no program given\n%s", usage_run);
        return EXIT_INPUT;
    }
    vr_run_list rl;
    if (vr_run_output_check(o.output, o.force) < 0 || run_setenv(&o) < 0 || vr_run_begin(&rl) < 0)
        return EXIT_INPUT;
    rl.no_driver = !o.sim && !vr_cuda_driver_present(); /* then one line naming --sim */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "vramtrace run: fork: %s\n", strerror(errno));
        vr_run_end(&rl);
        return EXIT_INPUT;
    }
    if (pid == 0) {
        execvp(argv[optind], &argv[optind]);
        fprintf(stderr, "vramtrace run: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    signal(SIGINT, SIG_IGN); /* the child gets ^C and decides; we report after */
    signal(SIGQUIT, SIG_IGN);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            vr_run_end(&rl);
            return EXIT_INPUT;
        }
    vr_run_end(&rl);
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "vramtrace: %s killed by signal %d\n", argv[optind], WTERMSIG(st));
        return 128 + WTERMSIG(st);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INPUT;
}

/* ---- report ---------------------------------------------------------------- */

typedef struct out_file {
    const char *path;
    int (*render)(FILE *, vr_report *const *, size_t, const vr_options *);
} out_file;

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

/* Check every output path against the inputs and each other; 0 or -1. */
static int outputs_refused(char **inputs, size_t nin, const out_file *out, size_t nout)
{
    file_id *ids = calloc(nin + 1, sizeof *ids);
    int rc = ids ? 0 : -1;
    for (size_t i = 0; ids && i < nin; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0)
            ids[i] = (file_id){st.st_dev, st.st_ino};
    }
    const char *outs[nout ? nout : 1];
    for (size_t i = 0; i < nout; i++)
        outs[i] = out[i].path;
    for (size_t i = 0; rc == 0 && i < nout; i++) {
        if (!outs[i])
            continue;
        rc = output_refused(outs[i], ids, nin);
        for (size_t j = 0; j < i && rc == 0; j++)
            if (outs[j] && strcmp(outs[i], "-") && !strcmp(outs[i], outs[j])) {
                fprintf(stderr, "vramtrace: %s is given for two outputs\n", outs[i]);
                rc = -1;
            }
        for (size_t j = 0; j < nin && rc == 0; j++)
            if (!strcmp(outs[i], inputs[j])) {
                fprintf(stderr, "vramtrace: %s is an input trace: refusing to overwrite it\n",
                        outs[i]);
                rc = -1;
            }
    }
    free(ids);
    return rc;
}

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

/* Render into a temporary file and rename it onto o->path: a failure leaves
 * no half-written file, and a link planted meanwhile is replaced, never
 * followed. "-" writes to stdout; an existing device or FIFO is written in
 * place. */
static int write_output(const out_file *o, vr_report *const *r, size_t n, const vr_options *opt)
{
    char tmp[PATH_MAX];
    if (!o->path)
        return 0;
    struct stat st;
    bool dash = !strcmp(o->path, "-");
    /* A device or FIFO (/dev/null, a pipe) is written in place. */
    bool direct = dash || (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode));
    FILE *f = dash ? stdout : direct ? fopen(o->path, "w") : temp_beside(o->path, tmp, sizeof tmp);
    if (!f) {
        fprintf(stderr, "vramtrace report: cannot write %s: %s\n", o->path, strerror(errno));
        return -1;
    }
    int rc = o->render(f, r, n, opt);
    if (dash)
        rc = fflush(f) != 0 ? -1 : rc;
    else if (direct)
        rc = fclose(f) != 0 ? -1 : rc;
    else if (fclose(f) != 0 || rc < 0 || rename(tmp, o->path) != 0)
        rc = -1;
    if (rc < 0 && !direct)
        unlink(tmp);
    if (rc < 0)
        fprintf(stderr, "vramtrace report: error writing %s\n", o->path);
    return rc;
}

/* Every requested output of outs[nouts]; -1 when one of them failed. */
static int write_outputs(const out_file *outs, size_t nouts, vr_report *const *r, size_t n,
                         const vr_options *opt)
{
    int rc = 0;
    for (size_t i = 0; i < nouts; i++)
        if (write_output(&outs[i], r, n, opt) < 0)
            rc = -1;
    return rc;
}

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

/* The view options report and diff share. */
enum { O_TOP = 200, O_NOSYM };

/* Applies a view option (--top, -q, --no-symbols) of command cmd: 1 handled,
 * 0 not one of them, -1 a bad value (said on stderr). */
static int view_option(int c, const char *cmd, vr_options *opt, bool *quiet)
{
    switch (c) {
    case O_TOP:
        if (parse_top(optarg, &opt->top) < 0) {
            fprintf(stderr, "vramtrace %s: --top wants a positive number, not '%s'\n", cmd, optarg);
            return -1;
        }
        return 1;
    case 'q':
        *quiet = true;
        return 1;
    case O_NOSYM:
        opt->no_symbols = true;
        return 1;
    default:
        return 0;
    }
}

/* Load every file; returns 0, 1 if one is truncated, 2 if one is unusable. */
static int load_all(char **files, size_t n, const vr_options *opt, vr_report **r, const char *cmd)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        r[i] = vr_analyze(files[i], opt, err, sizeof err);
        if (!r[i]) {
            fprintf(stderr, "vramtrace %s: %s: %s\n", cmd, files[i], err);
            return EXIT_INPUT;
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

static void free_all(vr_report **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        vr_report_free(r[i]);
    free(r);
}

static int cmd_report(int argc, char **argv)
{
    enum { O_JSON = 256, O_HTML, O_FOLDED, O_CHROME, O_TRUNC, O_NATIVE, O_MEMVIZ };
    static const struct option opts[] = {{"json", required_argument, NULL, O_JSON},
                                         {"html", required_argument, NULL, O_HTML},
                                         {"folded", required_argument, NULL, O_FOLDED},
                                         {"chrome", required_argument, NULL, O_CHROME},
                                         {"memory-viz", required_argument, NULL, O_MEMVIZ},
                                         {"top", required_argument, NULL, O_TOP},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"no-symbols", no_argument, NULL, O_NOSYM},
                                         {"native", no_argument, NULL, O_NATIVE},
                                         {"allow-truncated", no_argument, NULL, O_TRUNC},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    out_file outs[] = {{NULL, vr_render_json},
                       {NULL, vr_render_html},
                       {NULL, vr_render_folded},
                       {NULL, vr_render_chrome},
                       {NULL, vr_render_memviz}};
    vr_options opt = progress_options();
    bool quiet = false, allow_trunc = false;
    int c;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        int v = view_option(c, "report", &opt, &quiet);
        if (v < 0)
            return EXIT_INPUT;
        if (v > 0)
            continue;
        switch (c) {
        case O_JSON:
        case O_HTML:
        case O_FOLDED:
        case O_CHROME:
            outs[c - O_JSON].path = optarg;
            break;
        case O_MEMVIZ:
            outs[4].path = optarg;
            break;
        case O_NATIVE:
            opt.native = true;
            break;
        case O_TRUNC:
            allow_trunc = true;
            break;
        case 'h':
            fputs(usage_report, stdout);
            return 0;
        default:
            fputs(usage_report, stderr);
            return EXIT_INPUT;
        }
    }
    size_t n = (size_t)(argc - optind);
    if (!n) {
        fprintf(stderr, "vramtrace report: no trace file given\n%s", usage_report);
        return EXIT_INPUT;
    }
    char **files;
    vr_run_files(argv + optind, n, &files, &n);
    if (outputs_refused(files, n, outs, sizeof outs / sizeof outs[0]) < 0) {
        vr_run_files_free(files, n);
        return EXIT_INPUT;
    }
    vr_report **r = calloc(n, sizeof(*r));
    if (!r) {
        vr_run_files_free(files, n);
        return EXIT_INPUT;
    }
    int rc = load_all(files, n, &opt, r, "report");
    vr_run_files_free(files, n);
    if (rc == EXIT_INPUT) {
        free_all(r, n);
        return rc;
    }
    if (allow_trunc)
        rc = 0;
    if (!quiet &&
        (vr_render_runs(stdout, r, n, &opt) < 0 || vr_render_text(stdout, r, n, &opt) < 0))
        rc = EXIT_INPUT;
    if (write_outputs(outs, sizeof outs / sizeof outs[0], r, n, &opt) < 0)
        rc = EXIT_INPUT;
    free_all(r, n);
    return rc;
}

/* ---- diff ------------------------------------------------------------------- */

static const char usage_diff[] =
    "usage: vramtrace diff BEFORE AFTER [options]\n"
    "\n"
    "Compare two traces (a run before and after a change) per call site, matched\n"
    "by symbolized frames (function, file, line), not addresses: bytes live at the\n"
    "peak, leaked at exit, growth per iteration and live at the fatal failure,\n"
    "sorted by the largest change. Like heaptrack_print --diff.\n"
    "\n"
    "  --json FILE     JSON diff (format \"vramtrace-diff\")\n"
    "  --html FILE     self-contained HTML page\n"
    "  --top N         sites shown in text and HTML (default 10)\n"
    "  -q, --quiet     no text on stdout\n"
    "  --no-symbols    do not read debug information (sites then match by address)\n"
    "  -h, --help\n"
    "\n"
    "Exit: 0 ok, 1 a trace is truncated, 2 unusable input or output error.\n";

static int cmd_diff(int argc, char **argv)
{
    enum { O_JSON = 256, O_HTML };
    static const struct option opts[] = {{"json", required_argument, NULL, O_JSON},
                                         {"html", required_argument, NULL, O_HTML},
                                         {"top", required_argument, NULL, O_TOP},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"no-symbols", no_argument, NULL, O_NOSYM},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    out_file outs[] = {{NULL, vr_render_diff_json}, {NULL, vr_render_diff_html}};
    vr_options opt = progress_options();
    bool quiet = false;
    int c;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        int v = view_option(c, "diff", &opt, &quiet);
        if (v < 0)
            return EXIT_INPUT;
        if (v > 0)
            continue;
        switch (c) {
        case O_JSON:
        case O_HTML:
            outs[c - O_JSON].path = optarg;
            break;
        case 'h':
            fputs(usage_diff, stdout);
            return 0;
        default:
            fputs(usage_diff, stderr);
            return EXIT_INPUT;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "vramtrace diff: two trace files wanted (BEFORE AFTER)\n%s", usage_diff);
        return EXIT_INPUT;
    }
    char **files = argv + optind;
    vr_report **r = calloc(2, sizeof(*r));
    if (!r || outputs_refused(files, 2, outs, 2) < 0) {
        free(r);
        return EXIT_INPUT;
    }
    int rc = load_all(files, 2, &opt, r, "diff");
    if (rc == EXIT_INPUT) {
        free_all(r, 2);
        return rc;
    }
    if (!quiet && vr_render_diff_text(stdout, r, 2, &opt) < 0)
        rc = EXIT_INPUT;
    if (write_outputs(outs, 2, r, 2, &opt) < 0)
        rc = EXIT_INPUT;
    free_all(r, 2);
    return rc;
}

/* ---- check ------------------------------------------------------------------- */

static int size_arg(const char *opt, const char *s, int64_t *out)
{
    uint64_t v;
    if (vr_parse_size(s, &v) < 0 || v > INT64_MAX) {
        fprintf(stderr, "vramtrace check: %s: bad size '%s' (e.g. 512MiB, 2GiB, 100MB, 4096)\n",
                opt, s);
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
                "or ended without exit() (_exit, SIGKILL, stack overflow), so events may be "
                "missing; --allow-incomplete checks what is there\n",
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

static int cmd_check(int argc, char **argv)
{
    enum { O_PEAK = 256, O_LEAK, O_HOSTLEAK, O_GROWTH, O_NOOOM, O_TRUNC, O_INCOMPLETE, O_EMPTY };
    static const struct option opts[] = {{"max-peak", required_argument, NULL, O_PEAK},
                                         {"max-leaked", required_argument, NULL, O_LEAK},
                                         {"max-host-leaked", required_argument, NULL, O_HOSTLEAK},
                                         {"max-growth", required_argument, NULL, O_GROWTH},
                                         {"no-oom", no_argument, NULL, O_NOOOM},
                                         {"allow-truncated", no_argument, NULL, O_TRUNC},
                                         {"allow-incomplete", no_argument, NULL, O_INCOMPLETE},
                                         {"allow-empty", no_argument, NULL, O_EMPTY},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    vr_limits lim = {.max_peak = -1, .max_leaked = -1, .max_growth = -1, .max_host_leaked = -1};
    bool allow_trunc = false, allow_incomplete = false, allow_empty = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_PEAK:
            bad = size_arg("--max-peak", optarg, &lim.max_peak);
            break;
        case O_LEAK:
            bad = size_arg("--max-leaked", optarg, &lim.max_leaked);
            break;
        case O_HOSTLEAK:
            bad = size_arg("--max-host-leaked", optarg, &lim.max_host_leaked);
            break;
        case O_GROWTH:
            bad = size_arg("--max-growth", optarg, &lim.max_growth);
            break;
        case O_NOOOM:
            lim.no_oom = true;
            break;
        case O_TRUNC:
            allow_trunc = true;
            break;
        case O_INCOMPLETE:
            allow_incomplete = true;
            break;
        case O_EMPTY:
            allow_empty = true;
            break;
        case 'h':
            fputs(usage_check, stdout);
            return 0;
        default:
            fputs(usage_check, stderr);
            return EXIT_INPUT;
        }
        if (bad)
            return EXIT_INPUT;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "vramtrace check: exactly one trace file wanted\n%s", usage_check);
        return EXIT_INPUT;
    }
    vr_options opt = progress_options();
    vr_report **r = calloc(1, sizeof(*r));
    if (!r)
        return EXIT_INPUT;
    int rc = load_all(argv + optind, 1, &opt, r, "check");
    if (rc == EXIT_INPUT || (rc == 1 && !allow_trunc)) {
        free_all(r, 1);
        return EXIT_INPUT;
    }
    if (unvouched(r[0], allow_incomplete, allow_empty)) {
        free_all(r, 1);
        return EXIT_INPUT;
    }
    int broken = vr_check(stdout, r[0], &lim);
    free_all(r, 1);
    return broken ? EXIT_LIMIT : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("vramtrace %s\n", VRAMTRACE_VERSION);
        return 0;
    }
    int (*fn)(int, char **) = !strcmp(cmd, "run")      ? cmd_run
                              : !strcmp(cmd, "report") ? cmd_report
                              : !strcmp(cmd, "check")  ? cmd_check
                              : !strcmp(cmd, "diff")   ? cmd_diff
                                                       : NULL;
    if (!fn) {
        fprintf(stderr, "vramtrace: unknown command '%s'\n%s", cmd, usage_main);
        return EXIT_INPUT;
    }
    return fn(argc - 1, argv + 1);
}
