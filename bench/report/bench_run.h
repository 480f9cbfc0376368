/* bench_run.h: what the report benchmarks share: a monotonic clock in seconds
 * and one timed, measured run of `vramtrace report`. */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

/* CLOCK_MONOTONIC in seconds. */
double bench_now_s(void);

/* Runs `VT report -q --json /dev/null PATH` in a child; *wall gets its wall
 * seconds, *maxrss_kib its maximum resident set size (KiB, getrusage).
 * Returns the report's exit status, or -1 when it could not run or died. */
int bench_run_report(const char *vt, const char *path, double *wall, long *maxrss_kib);
/* The same, with the child's CPU seconds (user + system, getrusage) in
 * *cpu: the figure to compare on a shared machine, where wall time also
 * counts the time other processes held the cores. */
int bench_run_report_cpu(const char *vt, const char *path, double *wall, double *cpu,
                         long *maxrss_kib);

#endif
