/* bench_report: how fast `vramtrace report` replays a large trace.
 *
 *   bench_report VRAMTRACE [EVENTS] [--keep FILE]
 *   bench_report VRAMTRACE --live [N]
 *
 * Writes a synthetic trace of about EVENTS events (default 10 million; a
 * training-like loop: 200 call sites, ~10k live allocations, one NVTX range
 * per 1000 allocations, a slow leak) with the trace writer, then runs
 * `vramtrace report -q --json /dev/null TRACE` once and prints the wall time,
 * events per second and the child's maximum resident set size (getrusage).
 * Goal (issue 18): at least 20 M events/s on the 10 M-event storm.
 *
 * --live: N allocations (default 1 million) that are never freed
 * (vtg_stress "live"); prints the report's events per second and its memory
 * per live allocation, the difference of the maximum RSS between N and N/4
 * allocations divided by 3N/4 (start-up memory cancels). Goal (issue 18):
 * at least 10 M events/s and at most 64 bytes per live allocation. */
#include "bench_run.h"
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One report of a vtg_stress "live" trace of n allocations: its wall time
 * (s) and maximum RSS (KiB); -1 on failure. */
static int live_run(const char *vt, uint64_t n, double *wall, double *cpu, long *rss)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_report_live.%d.vtrace", (int)getpid());
    unlink(path);
    int rc = vtg_stress(path, "live", n) == 0 ? bench_run_report_cpu(vt, path, wall, cpu, rss) : -1;
    unlink(path);
    return rc;
}

static int live_main(const char *vt, uint64_t n)
{
    double wall, wall4, cpu, cpu4;
    long rss, rss4;
    if (live_run(vt, n, &wall, &cpu, &rss) != 0 || live_run(vt, n / 4, &wall4, &cpu4, &rss4) != 0) {
        fprintf(stderr, "bench_report: vramtrace report failed\n");
        return 1;
    }
    printf("vramtrace report, %llu allocations never freed: %.2f s, %.2f M events/s, max RSS "
           "%.1f MiB\n",
           (unsigned long long)n, wall, (double)n / wall / 1e6, (double)rss / 1024.0);
    printf("cpu: %.2f s user+system, %.2f M events per CPU second\n", cpu, (double)n / cpu / 1e6);
    printf("report memory per live allocation: %.1f B (RSS %llu vs %llu allocations)\n",
           (double)(rss - rss4) * 1024.0 / (double)(n - n / 4), (unsigned long long)n,
           (unsigned long long)(n / 4));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_report VRAMTRACE [EVENTS] [--keep FILE]\n");
        return 2;
    }
    if (argc > 2 && !strcmp(argv[2], "--live"))
        return live_main(argv[1], argc > 3 ? strtoull(argv[3], NULL, 10) : 1000000);
    uint64_t events = argc > 2 && argv[2][0] != '-' ? strtoull(argv[2], NULL, 10) : 10000000;
    const char *keep = NULL;
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--keep"))
            keep = argv[i + 1];
    char path[256];
    if (keep) {
        snprintf(path, sizeof path, "%s", keep);
        unlink(path);
    } else {
        snprintf(path, sizeof path, "/tmp/bench_report.%d.vtrace", (int)getpid());
    }
    double t = bench_now_s();
    if (vtg_big(path, events) != 0) {
        fprintf(stderr, "bench_report: cannot write %s\n", path);
        return 1;
    }
    struct stat sb;
    stat(path, &sb);
    printf("trace: %llu events, %.1f MiB, written in %.2f s\n", (unsigned long long)events,
           (double)sb.st_size / 1048576.0, bench_now_s() - t);
    double wall, cpu;
    long rss;
    int rc = bench_run_report_cpu(argv[1], path, &wall, &cpu, &rss);
    if (!keep)
        unlink(path);
    if (rc != 0) {
        fprintf(stderr, "bench_report: vramtrace report failed\n");
        return 1;
    }
    printf("vramtrace report: %.2f s, %.2f M events/s, max RSS %.1f MiB\n", wall,
           (double)events / wall / 1e6, (double)rss / 1024.0);
    printf("cpu: %.2f s user+system, %.2f M events per CPU second\n", cpu,
           (double)events / cpu / 1e6);
    return 0;
}
