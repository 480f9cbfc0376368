/* bench_report_limits: `vramtrace report` memory on traces that multiply
 * report state cheaply (issue 14): N distinct stacks, N NVTX ranges never
 * popped, N device ids, N regions live in one heap and as many registered
 * again, N heaps filled at once, N heaps waiting for their allocation while
 * 10 N allocations come and go, N VMM pages unmapped in one call
 * (tests/report/gen.c, vtg_stress).
 *
 *   bench_report_limits VRAMTRACE [STACKS RANGES DEVICES REGIONS HEAPS WAITING
 *                       MAPPINGS] [--max-rss MIB]
 *
 * Defaults: 1000000 stacks, 100000 ranges, 100000 devices, 100000 regions,
 * 100000 heaps, 10000 waiting heaps, 100000 mappings.
 * For each trace
 * prints its size, the report's wall time and maximum resident set size
 * (getrusage of the child); exits 1 when a report fails or, with --max-rss,
 * when its RSS exceeds MIB (the goal: 512). */
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

static int one(const char *vt, const char *kind, uint64_t n, long max_rss_mib)
{
    char path[] = "/tmp/vt_limits.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(path); /* the writer creates it (O_EXCL) */
    if (vtg_stress(path, kind, n) != 0) {
        fprintf(stderr, "bench_report_limits: cannot write the %s trace\n", kind);
        return -1;
    }
    struct stat st;
    stat(path, &st);
    double wall = 0;
    long rss = 0;
    int rc = bench_run_report(vt, path, &wall, &rss);
    unlink(path);
    printf("%-8s n=%-8llu trace %8.1f KiB  report exit %d  %7.2f s  max RSS %7.1f MiB\n", kind,
           (unsigned long long)n, (double)st.st_size / 1024, rc, wall, (double)rss / 1024);
    if (rc != 0)
        return -1;
    if (max_rss_mib > 0 && rss / 1024 > max_rss_mib) {
        printf("  FAIL: max RSS over %ld MiB\n", max_rss_mib);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n[7] = {1000000, 100000, 100000, 100000, 100000, 10000, 100000};
    long max_rss = 0;
    int k = 0;
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_report_limits VRAMTRACE [STACKS RANGES DEVICES REGIONS HEAPS WAITING "
                "MAPPINGS] [--max-rss MIB]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--max-rss") && i + 1 < argc)
            max_rss = atol(argv[++i]);
        else if (k < 7)
            n[k++] = strtoull(argv[i], NULL, 10);
    }
    const char *kinds[] = {"stacks", "ranges",  "devices", "regions",
                           "heaps",  "waiting", "mappings"};
    int bad = 0;
    for (int i = 0; i < 7; i++)
        bad |= one(argv[1], kinds[i], n[i], max_rss) != 0;
    return bad ? 1 : 0;
}
