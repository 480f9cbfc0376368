/* bench_report: how fast `vramtrace report` replays a large trace.
 *
 *   bench_report VRAMTRACE [EVENTS] [--keep FILE]
 *
 * Writes a synthetic trace of about EVENTS events (default 10 million; a
 * training-like loop: 200 call sites, ~10k live allocations, one NVTX range
 * per 1000 allocations, a slow leak) with the trace writer, then runs
 * `vramtrace report -q --json /dev/null TRACE` once and prints the wall time,
 * events per second and the child's maximum resident set size (getrusage).
 * Goal (issue): under 10 s on one core and under 200 MiB for 10M events. */
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_report VRAMTRACE [EVENTS] [--keep FILE]\n");
        return 2;
    }
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
    double wall;
    long rss;
    int rc = bench_run_report(argv[1], path, &wall, &rss);
    if (!keep)
        unlink(path);
    if (rc != 0) {
        fprintf(stderr, "bench_report: vramtrace report failed\n");
        return 1;
    }
    printf("vramtrace report: %.2f s, %.2f M events/s, max RSS %.1f MiB\n", wall,
           (double)events / wall / 1e6, (double)rss / 1024.0);
    return 0;
}
