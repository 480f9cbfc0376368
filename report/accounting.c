/* accounting.c: per (device, memory kind) counts of allocation calls, frees,
 * failures, live and peak bytes and what is live at the end: the report's
 * "accounting" section, the same numbers the simulated device writes in its
 * ledger (docs/report.md, "The accounting section"). Fed by replay.c
 * at each event's own place in the trace's time order, so it does not depend
 * on the heap/pending logic of the allocated/reserved accounting. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

vr_acct *vr_acct_lookup(vr_state *s, int32_t device, enum vt_kind kind)
{
    uint64_t key = vr_acct_key(device, kind);
    bool created;
    vr_acct *a = vr_map_put(&s->acct, key, &created);
    if (created) {
        a->device = device;
        a->kind = (uint8_t)kind;
    }
    s->acct_key = key;
    s->acct_item = vr_map_index_of(&s->acct, a) + 1;
    return a;
}

void vr_acct_failed(vr_state *s, int32_t device, enum vt_kind kind)
{
    vr_acct *a = vr_acct_get(s, device, kind);
    a->failed++;
    if (a->nfail == a->capfail) {
        a->capfail = a->capfail ? a->capfail * 2 : 4;
        a->at_fail = vr_xrealloc(a->at_fail, a->capfail * sizeof(uint64_t));
    }
    a->at_fail[a->nfail++] = a->live;
}

static int row_cmp(const void *pa, const void *pb)
{
    const vr_acct *a = *(vr_acct *const *)pa, *b = *(vr_acct *const *)pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

void vr_acct_build(vr_state *s, vr_report *r)
{
    size_t n = s->acct.len, k = 0, i = 0;
    vr_acct **sorted = vr_xcalloc(n ? n : 1, sizeof(*sorted));
    for (vr_acct *a; (a = vr_map_next(&s->acct, &i));)
        sorted[k++] = a;
    qsort(sorted, n, sizeof(*sorted), row_cmp);
    vr_acct_row *rows = vr_alloc(s->arena, (n ? n : 1) * sizeof(vr_acct_row));
    for (k = 0; k < n; k++) {
        const vr_acct *a = sorted[k];
        uint64_t *fails = vr_alloc(s->arena, (a->nfail ? a->nfail : 1) * sizeof(uint64_t));
        if (a->nfail)
            memcpy(fails, a->at_fail, a->nfail * sizeof(uint64_t));
        rows[k] = (vr_acct_row){.device = a->device,
                                .kind = vt_kind_name((enum vt_kind)a->kind),
                                .host = vt_kind_is_host((enum vt_kind)a->kind),
                                .allocations = a->allocations,
                                .frees = a->frees,
                                .failed = a->failed,
                                .peak_live_bytes = a->peak,
                                .live_bytes_at_failures = fails,
                                .nfailures = a->nfail,
                                .leaked_bytes = a->live,
                                .leaked_allocations = a->live_count};
    }
    free(sorted);
    r->accounting = rows;
    r->naccounting = n;
}

void vr_acct_destroy(vr_state *s)
{
    size_t i = 0;
    for (vr_acct *a; (a = vr_map_next(&s->acct, &i));)
        free(a->at_fail);
    vr_map_destroy(&s->acct);
}
