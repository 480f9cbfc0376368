/* run_list.c: `vramtrace run`'s side of a run (trace/vtrace.h, "Run
 * naming"): one run id for the process tree, the list every recording
 * process adds its trace to, and what is printed when the program ends. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>
#include <strings.h>
#include <sys/wait.h>

int cli_run_begin(cli_run_list *rl)
{
    const char *tmp = getenv("TMPDIR");
    memset(rl, 0, sizeof *rl);
    if (vt_run_id_new(rl->id) != 0) {
        fprintf(stderr, "vramtrace run: cannot draw a run id: %s\n", strerror(errno));
        return -1;
    }
    snprintf(rl->list, sizeof rl->list, "%s/vramtrace-run.%s.XXXXXX", tmp && *tmp ? tmp : "/tmp",
             rl->id);
    int fd = mkstemp(rl->list);
    if (fd < 0) {
        fprintf(stderr, "vramtrace run: cannot create the run's list in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        rl->list[0] = '\0';
        return -1;
    }
    close(fd);
    setenv(VT_ENV_RUN_ID, rl->id, 1);
    setenv(VT_ENV_RUN_LIST, rl->list, 1);
    return 0;
}

/* path relative to the working directory when it lies under it. */
static const char *shown(const char *path, const char *cwd)
{
    size_t n = strlen(cwd);
    if (n > 1 && !strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

/* No driver: remove the traces without a single allocation (the program's
 * CUDA calls failed for want of a driver) and say so in one line naming
 * --sim. The number of traces kept. */
static size_t no_driver_end(FILE *f)
{
    char line[PATH_MAX + 64], err[256];
    size_t kept = 0, removed = 0;
    vr_options opt = {.no_symbols = true};
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        vr_report *r = vr_analyze(line, &opt, err, sizeof err);
        bool empty = r && !r->allocations && !r->failed_allocations;
        vr_report_free(r);
        if (empty && unlink(line) == 0)
            removed++;
        else
            kept++;
    }
    if (!kept)
        fprintf(stderr,
                "vramtrace run: no CUDA driver on this machine (libcuda.so.1 not found)%s: "
                "run the program on the simulated device with --sim (e.g. --sim=t4)\n",
                removed ? ", the program allocated nothing and its trace was removed" : "");
    if (f)
        rewind(f);
    return kept;
}

/* Recover every trace of the run whose process left a spill file; the
 * program's own process gets its end from the wait status. */
static void recover_all(const cli_run_list *rl, FILE *f)
{
    char line[PATH_MAX + 64];
    vt_recover_end end = {.pid = (uint32_t)rl->child, .ts_ns = vt_clock_ns()};
    if (rl->child_ended && WIFSIGNALED(rl->child_status)) {
        end.signal = WTERMSIG(rl->child_status);
        end.reason = "killed; its end recorded by vramtrace run";
    } else if (rl->child_ended) {
        end.status = WIFEXITED(rl->child_status) ? WEXITSTATUS(rl->child_status) : -1;
        end.reason = "left without closing its trace (_exit); its end recorded by vramtrace run";
    }
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        cli_recover_one("run", line, rl->child_ended ? &end : NULL, false);
    }
    if (f)
        rewind(f);
}

void cli_run_end(cli_run_list *rl)
{
    char cwd[PATH_MAX] = "", line[PATH_MAX + 64];
    FILE *f = rl->list[0] ? fopen(rl->list, "r") : NULL;
    size_t n = 0;
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    recover_all(rl, f);
    if (rl->no_driver && !rl->not_started && !no_driver_end(f)) {
        fclose(f);
        f = NULL;
        n = 1; /* said above */
    }
    while (f && rl->symbolize && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        cli_symbolize_one("run", line, false);
    }
    for (int pass = 0; f && pass < 2; pass++) {
        rewind(f);
        if (pass == 1 && n > 1)
            fprintf(stderr, "vramtrace run: %zu traces (run %s):\n", n, rl->id);
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            if (pass == 0)
                n++;
            else if (n == 1)
                fprintf(stderr, "vramtrace run: trace: %s\n", shown(line, cwd));
            else
                fprintf(stderr, "vramtrace run:   %s\n", shown(line, cwd));
        }
    }
    if (!n && !rl->not_started)
        fprintf(stderr, "vramtrace run: no trace written (no process of the run made a CUDA "
                        "call)\n");
    if (f)
        fclose(f);
    if (rl->list[0])
        unlink(rl->list);
    rl->list[0] = '\0';
}

int cli_run_output_check(const char *pattern, bool force)
{
    char host[256] = "unknown", path[PATH_MAX];
    if (!pattern)
        return 0;
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    if (vt_name_expand(pattern, 0, host, path, sizeof path) != 0) {
        fprintf(stderr, "vramtrace run: bad -o '%s': %s\n", pattern, VT_NAME_PATTERN_RULE);
        return -1;
    }
    if (vt_name_has_pid(pattern) || access(path, F_OK) != 0)
        return 0; /* every process's own name, or free */
    if (force && unlink(path) == 0)
        return 0;
    if (force) {
        fprintf(stderr, "vramtrace run: --force: cannot remove %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(stderr,
            "vramtrace run: %s already exists and a trace is never overwritten: remove it, "
            "choose another -o, or replace it with --force\n",
            path);
    return -1;
}

/* In the child: 0 when want is one of the sim's profiles (or the sim gives
 * no list), 1 with the message. */
static int profile_known(const char *simdir, const char *want)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/libcuda.so.1", simdir);
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    const char *(*list)(void) = NULL;
    if (h)
        *(void **)&list = dlsym(h, "vtsim_profiles");
    if (!list)
        return 0;
    const char *keys = list();
    size_t n = strlen(want);
    for (const char *k = keys; *k; k += strcspn(k, " "), k += *k == ' ')
        if (strcspn(k, " ") == n && !strncasecmp(k, want, n))
            return 0;
    fprintf(stderr, "vramtrace run: unknown --sim profile '%s': the simulated device has %s\n",
            want, keys);
    return 1;
}

int cli_sim_profile_check(const char *simdir, const char *want)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0; /* cannot ask: the sim warns and uses its default */
    if (pid == 0)
        _exit(profile_known(simdir, want)); /* _exit: none of the sim's destructors */
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 1 ? -1 : 0;
}

bool cli_cuda_driver_present(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return true; /* cannot ask: assume there is one */
    if (pid == 0)
        _exit(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) ? 0 : 1);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return true;
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}
