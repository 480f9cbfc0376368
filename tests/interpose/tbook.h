/* tbook.h: the test programs' own bookkeeping of what they allocated, printed
 * as the "expect:" line that run_case.sh hands to vt_check. */
#ifndef VRAMTRACE_TESTS_TBOOK_H
#define VRAMTRACE_TESTS_TBOOK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tbook {
    uint64_t allocs, frees, failed, bytes, live, peak, hlive, hpeak, live_n, peak_n;
} tbook;

static inline void tb_alloc(tbook *b, uint64_t size, int host)
{
    uint64_t *cur = host ? &b->hlive : &b->live, *peak = host ? &b->hpeak : &b->peak;
    b->allocs++;
    if (++b->live_n > b->peak_n)
        b->peak_n = b->live_n;
    b->bytes += size;
    *cur += size;
    if (*cur > *peak)
        *peak = *cur;
}

static inline void tb_free(tbook *b, uint64_t size, int host)
{
    b->frees++;
    b->live_n--;
    *(host ? &b->hlive : &b->live) -= size;
}

static inline void tb_print(const tbook *b, const char *extra)
{
    printf("expect: allocs=%" PRIu64 " frees=%" PRIu64 " failed=%" PRIu64 " alloc_bytes=%" PRIu64
           " peak=%" PRIu64 " host_peak=%" PRIu64 " leaked=%" PRIu64 " leaked_bytes=%" PRIu64
           " unmatched_frees=0 %s\n",
           b->allocs, b->frees, b->failed, b->bytes, b->peak, b->hpeak, b->live_n,
           b->live + b->hlive, extra ? extra : "");
    fflush(stdout);
}

#endif
