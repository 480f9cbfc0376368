/* cmd_run.c: vramtrace run: the program under the preload (and the
 * simulated device with --sim), every trace of the run listed at the end. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VRAMTRACE_INSTALL_LIBDIR
#define VRAMTRACE_INSTALL_LIBDIR "lib"
#endif
#ifndef VRAMTRACE_INSTALL_SIMDIR
#define VRAMTRACE_INSTALL_SIMDIR "lib/vramtrace/sim"
#endif

enum { O_SIM = 300, O_TORCH, O_NOSYMBOLIZE };

static const cli_opt run_opts_table[] = {
    {"sim", 0, optional_argument, O_SIM, "DEVICE",
     "run on the simulated CUDA device (LD_LIBRARY_PATH gets its\n"
     "directory and LD_PRELOAD its libcudart.so.13, so a program\n"
     "whose RPATH names a real runtime, e.g. a PyTorch wheel, still\n"
     "gets the simulated one; DEVICE sets VRAMTRACE_SIM_DEVICE, e.g. t4)"},
    {"torch-tensors", 0, no_argument, O_TORCH, NULL,
     "PyTorch: PYTORCH_CUDA_ALLOC_CONF gets backend:cudaMallocAsync,\n"
     "so every tensor is one allocation the trace sees (the default\n"
     "caching allocator shows only its segments)"},
    {"output", 'o', required_argument, 'o', "FILE",
     "trace file (VRAMTRACE_OUTPUT; %p = pid, %h = host, %% = %)"},
    {"force", 'f', no_argument, 'f', NULL, "replace an existing FILE (never replaced otherwise)"},
    {"no-symbolize", 0, no_argument, O_NOSYMBOLIZE, NULL,
     "do not name the traces' frames when the program has ended\n"
     "(vramtrace symbolize: a report on a machine without the\n"
     "program's files then shows offsets)"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const char run_head[] =
    "usage: vramtrace run [--sim[=DEVICE]] [--torch-tensors] [-o FILE] [--force] [--] PROGRAM "
    "[ARGS...]\n"
    "\n"
    "Run PROGRAM with libvramtrace.so preloaded (LD_PRELOAD) and print every trace\n"
    "of the run when it ends. PROGRAM may be a launcher (timeout, sh, env, mpirun,\n"
    "torchrun): only processes that call CUDA record; the first one gets FILE, each\n"
    "further one FILE with its pid before the extension (a.vtrace -> a.<pid>.vtrace).\n"
    "The exit status is PROGRAM's (128+N if killed by signal N; 127 if it cannot be\n"
    "run, 2 if vramtrace's own options or -o are refused). A process of the\n"
    "run killed by SIGKILL (e.g. the out-of-memory killer) did not write its last\n"
    "records: run appends them from the trace's spill file (vramtrace recover), and\n"
    "records PROGRAM's own kill in its trace. When PROGRAM has ended, run names the\n"
    "native frames of every trace from the files here and appends the names to it\n"
    "(vramtrace symbolize), so that a report on another machine names them too.\n"
    "\n";

static void run_usage(FILE *f)
{
    const cli_opt *tabs[] = {run_opts_table, NULL};
    cli_help(f, run_head, tabs, "");
}

void cli_run_synopsis(FILE *f)
{
    fputs("  run [--sim[=DEVICE]] [--torch-tensors] [-o FILE] [--force] -- PROGRAM ARGS...\n"
          "        record the device memory of PROGRAM and every process it starts\n",
          f);
}

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

typedef struct run_opts {
    bool sim, force, torch_tensors, no_symbolize;
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
    if (o->sim_device && cli_sim_profile_check(path, o->sim_device) < 0)
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

/* Wait for the program pid, then list the run's traces: its exit status. */
static int wait_program(pid_t pid, const char *prog, cli_run_list *rl)
{
    int st;
    signal(SIGINT, SIG_IGN); /* the child gets ^C and decides; we report after */
    signal(SIGQUIT, SIG_IGN);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            cli_run_end(rl);
            return CLI_EXIT_INPUT;
        }
    rl->child = pid;
    rl->child_status = st;
    rl->child_ended = true;
    cli_run_end(rl);
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "vramtrace: %s killed by signal %d\n", prog, WTERMSIG(st));
        return 128 + WTERMSIG(st);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : CLI_EXIT_INPUT;
}

/* In the child: exec prog[], else say why, send errno up the close-on-exec
 * pipe fd (which closes unread when the exec succeeds) and exit 127, as a
 * shell does. */
static void exec_child(char **prog, int fd)
{
    execvp(prog[0], prog);
    int e = errno;
    fprintf(stderr, "vramtrace run: cannot run %s: %s\n", prog[0], strerror(e));
    ssize_t k = write(fd, &e, sizeof e); /* failed: the parent takes it for a run */
    (void)k;
    _exit(127);
}

/* In the parent: true when the child's exec failed (exec_child's errno came
 * up the pipe, whose read end fd is closed here). */
static bool exec_failed(int fd)
{
    int e;
    ssize_t k;
    do
        k = read(fd, &e, sizeof e);
    while (k < 0 && errno == EINTR);
    close(fd);
    return k == (ssize_t)sizeof e;
}

/* Run prog[] (NULL-terminated) in the run's environment. */
static int run_program(const run_opts *o, char **prog)
{
    cli_run_list rl;
    if (cli_run_output_check(o->output, o->force) < 0 || run_setenv(o) < 0 ||
        cli_run_begin(&rl) < 0)
        return CLI_EXIT_INPUT;
    rl.no_driver = !o->sim && !cli_cuda_driver_present(); /* then one line naming --sim */
    rl.symbolize = !o->no_symbolize;
    int pfd[2];
    fflush(NULL);
    bool piped = pipe2(pfd, O_CLOEXEC) == 0;
    pid_t pid = piped ? fork() : -1;
    if (pid < 0) {
        fprintf(stderr, "vramtrace run: cannot start %s: %s\n", prog[0], strerror(errno));
        if (piped) {
            close(pfd[0]);
            close(pfd[1]);
        }
        cli_run_end(&rl);
        return CLI_EXIT_INPUT;
    }
    if (pid == 0) {
        close(pfd[0]);
        exec_child(prog, pfd[1]);
    }
    close(pfd[1]);
    rl.not_started = exec_failed(pfd[0]);
    return wait_program(pid, prog[0], &rl);
}

int cli_cmd_run(int argc, char **argv)
{
    const cli_opt *tabs[] = {run_opts_table, NULL};
    char shorts[32];
    struct option *opts = cli_getopt_table(tabs, "+", shorts, sizeof shorts);
    run_opts o = {0};
    int c, rc = -1;
    while (opts && rc < 0 && (c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        switch (c) {
        case O_SIM:
            o.sim = true;
            o.sim_device = optarg;
            break;
        case 'o':
            o.output = optarg;
            break;
        case 'f':
            o.force = true;
            break;
        case O_TORCH:
            o.torch_tensors = true;
            break;
        case O_NOSYMBOLIZE:
            o.no_symbolize = true;
            break;
        case 'h':
            run_usage(stdout);
            rc = 0;
            break;
        default:
            run_usage(stderr);
            rc = CLI_EXIT_INPUT;
        }
    }
    free(opts);
    if (!opts)
        return CLI_EXIT_INPUT;
    if (rc >= 0)
        return rc;
    if (optind >= argc) {
        fputs("vramtrace run: no program given\n", stderr);
        run_usage(stderr);
        return CLI_EXIT_INPUT;
    }
    return run_program(&o, argv + optind);
}
