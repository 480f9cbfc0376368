/* leaks.c: allocations live at the end of the trace (at exit when the END
 * record is there), grouped by stack. Valgrind's wording: "N bytes in M
 * allocations are definitely lost". One memory kind at a time: host kinds
 * (pinned, registered) are reported apart from device memory. */
#include "state.h"

void vr_leaks_group(vr_state *s, enum vt_kind kind, vr_map *groups, uint64_t *bytes,
                    uint64_t *count)
{
    vr_map_init(groups, sizeof(vr_counter));
    *bytes = *count = 0;
    size_t i = 0;
    for (vr_live *l; (l = vr_map_next(&s->live, &i));) {
        if (l->kind != kind)
            continue;
        vr_counter *c = vr_map_put(groups, l->stack, NULL);
        c->live += l->size;
        c->live_count++;
        *bytes += l->size;
        (*count)++;
    }
}
