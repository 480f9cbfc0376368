/* bench_run.c: see bench_run.h. */
#include "bench_run.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int bench_run_report(const char *vt, const char *path, double *wall, long *maxrss_kib)
{
    double cpu;
    return bench_run_report_cpu(vt, path, wall, &cpu, maxrss_kib);
}

int bench_run_report_cpu(const char *vt, const char *path, double *wall, double *cpu,
                         long *maxrss_kib)
{
    double t = bench_now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl(vt, vt, "report", "-q", "--json", "/dev/null", path, (char *)NULL);
        perror("exec vramtrace");
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0)
        return -1;
    *wall = bench_now_s() - t;
    *maxrss_kib = ru.ru_maxrss;
    *cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
