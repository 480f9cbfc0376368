/* check.c: CI limits on a report (vramtrace check), in the spirit of
 * pytest-memray's limit_memory / limit_leaks. */
#include "internal.h"
#include "vsize.h"

#include <inttypes.h>
#include <string.h>

/* One broken limit; both sizes in bytes too when they format alike (a limit
 * a few bytes under the value). */
static int broken(FILE *out, const char *what, uint64_t got, int64_t limit)
{
    char a[32], b[32];
    vr_format_size(got, a, sizeof a);
    vr_format_size((uint64_t)limit, b, sizeof b);
    if (strcmp(a, b))
        fprintf(out, "%s %s exceeds the limit %s\n", what, a, b);
    else
        fprintf(out, "%s %s (%" PRIu64 " bytes) exceeds the limit %s (%" PRId64 " bytes)\n", what,
                a, got, b, limit);
    return 1;
}

/* A leak limit on live bytes less what a caching allocator holds as its
 * cache (the headline's leak): 1 when broken (named, with "besides a caching
 * allocator's cache" when there is one), else 0; limit < 0: none. */
static int leak_limit(FILE *out, const char *what, uint64_t live, uint64_t cached, int64_t limit)
{
    uint64_t leaked = live - cached;
    if (limit < 0 || leaked <= (uint64_t)limit)
        return 0;
    char name[128];
    snprintf(name, sizeof name, "%s%s", what,
             cached ? " (besides a caching allocator's cache)" : "");
    return broken(out, name, leaked, limit);
}

int vr_check(FILE *out, const vr_report *r, const vr_limits *lim)
{
    int n = 0;
    if (lim->max_peak >= 0 && r->peak_allocated > (uint64_t)lim->max_peak)
        n += broken(out, "peak allocated", r->peak_allocated, lim->max_peak);
    n += leak_limit(out, "leaked device memory", r->leaked_bytes, r->cached_at_exit_bytes,
                    lim->max_leaked);
    n += leak_limit(out, "leaked host memory (pinned, registered)", r->host_leaked_bytes,
                    r->host_cached_at_exit_bytes, lim->max_host_leaked);
    if (lim->max_growth >= 0 && r->total_growth.bytes_per_iteration > (double)lim->max_growth) {
        char a[32], b[32];
        fprintf(out,
                "growth %s per iteration (R^2 %.3f over %llu iterations) exceeds the limit %s\n",
                vr_format_size(vr_u64_sat(r->total_growth.bytes_per_iteration), a, sizeof a),
                r->total_growth.r2, (unsigned long long)r->iterations,
                vr_format_size((uint64_t)lim->max_growth, b, sizeof b));
        n++;
    }
    uint64_t fatal = vr_unrecovered_ooms(r);
    if (lim->no_oom && fatal) {
        fprintf(out, "%llu failed allocation%s not recovered (--no-oom; %llu more recovered)\n",
                (unsigned long long)fatal, vsize_plural(fatal),
                (unsigned long long)r->recovered_allocations);
        n++;
    }
    return n;
}
