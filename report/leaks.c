/* leaks.c: allocations live at the end of the trace (at exit when the END
 * record is there), grouped by stack. Worded "N bytes in M allocations
 * were never freed": not valgrind's "definitely lost", which claims that no
 * pointer to the memory is left; a trace cannot know that. One memory kind at a time: host kinds
 * (pinned, registered) are reported apart from device memory. */
#include "state.h"

#include <stdlib.h>

/* The group of live allocation l: found through its site row's sites item
 * (of_site: group item + 1 per sites item), so a million leaks need no hash
 * lookup each. */
static vr_counter *group_of(vr_state *s, const vr_live *l, vr_map *groups, uint32_t *of_site)
{
    const vr_counter *row = vr_map_item(&s->site_ranges, l->row); /* rows are never deleted */
    uint32_t site = row->site;
    if (of_site[site])
        return vr_map_item(groups, of_site[site] - 1); /* nor are groups */
    vr_counter *c = vr_map_put(groups, l->stack, NULL);
    of_site[site] = vr_map_index_of(groups, c) + 1;
    return c;
}

void vr_leaks_group(vr_state *s, vr_map groups[VT_KIND_MAX_], uint64_t bytes[VT_KIND_MAX_],
                    uint64_t count[VT_KIND_MAX_])
{
    for (int k = 0; k < VT_KIND_MAX_; k++) {
        vr_map_init(&groups[k], sizeof(vr_counter));
        bytes[k] = count[k] = 0;
    }
    size_t nsites = s->sites.nitems + 1;
    uint32_t *of_site = vr_xcalloc(nsites * VT_KIND_MAX_, sizeof(uint32_t));
    /* the live map's items in order, a word of the alive bitmap at a time
     * (vr_map_next's order, without its test per item) */
    const vr_map *m = &s->live;
    for (size_t w = 0; w * 64 < m->nitems; w++) {
        for (uint64_t bits = m->alive[w]; bits; bits &= bits - 1) {
            const vr_live *l = vr_map_item(m, (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits)));
            if (l->kind >= VT_KIND_MAX_)
                continue;
            vr_counter *c = group_of(s, l, &groups[l->kind], of_site + l->kind * nsites);
            c->live += l->size;
            c->live_count++;
            bytes[l->kind] += l->size;
            count[l->kind]++;
        }
    }
    free(of_site);
}
