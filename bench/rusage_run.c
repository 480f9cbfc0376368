/* rusage_run: runs a command and prints what it cost, for bench/perf.py.
 *
 *   rusage_run COMMAND [ARG]...
 *
 * Forks and execs COMMAND (PATH searched), waits for it with wait4 and
 * prints on stderr, as its last line,
 *   rusage wall_s=<s> cpu_s=<user+system s> maxrss_kib=<KiB>
 * (CLOCK_MONOTONIC; CPU and peak RSS of the command and the children it
 * waited for, getrusage(2)). A small process of its own so that the peak
 * RSS is the command's: Linux carries the high-water mark of the memory an
 * exec replaces into the new program's ru_maxrss, so a command started
 * straight from a large parent (Python) reports at least the parent's size.
 * Exit status: the command's (128 + signal when it was killed), 127 when it
 * could not be run, 2 on bad usage. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    struct rusage ru;
    int st;
    double t0;
    pid_t pid;
    if (argc < 2) {
        fprintf(stderr, "usage: rusage_run COMMAND [ARG]...\n");
        return 2;
    }
    t0 = now_s();
    pid = fork();
    if (pid < 0) {
        perror("rusage_run: fork");
        return 127;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("rusage_run: exec");
        _exit(127);
    }
    if (wait4(pid, &st, 0, &ru) < 0) {
        perror("rusage_run: wait4");
        return 127;
    }
    fprintf(stderr, "rusage wall_s=%.6f cpu_s=%.6f maxrss_kib=%ld\n", now_s() - t0,
            tv_s(ru.ru_utime) + tv_s(ru.ru_stime), ru.ru_maxrss);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
