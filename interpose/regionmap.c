/* regionmap.c: see regionmap.h. */
#include <stdlib.h>

#include "regionmap.h"

#define RMAP_MIN_CAP 64

size_t vti_rmap_home(const vti_rmap *m, uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (m->cap - 1);
}

vti_rmap_slot *vti_rmap_find(const vti_rmap *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = vti_rmap_home(m, key);; i = (i + 1) & mask) {
        vti_rmap_slot *s = &m->slots[i];
        if (!s->full)
            return NULL;
        if (s->key == key)
            return s;
    }
}

/* The first empty slot of key's probe run (the key is not in m), its home
 * set. */
static vti_rmap_slot *free_slot(const vti_rmap *m, uint64_t key)
{
    size_t mask = m->cap - 1, home = vti_rmap_home(m, key), i = home;
    while (m->slots[i].full)
        i = (i + 1) & mask;
    m->slots[i].home = (uint32_t)home;
    return &m->slots[i];
}

/* Double the table (or make the first one). -1: no memory, m unchanged. */
static __attribute__((noinline)) int grow(vti_rmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : RMAP_MIN_CAP;
    if (cap > (size_t)UINT32_MAX + 1) /* homes are 32-bit */
        return -1;
    vti_rmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    vti_rmap n = {slots, cap, m->live};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].full) {
            vti_rmap_slot *to = free_slot(&n, m->slots[i].key);
            uint32_t home = to->home;
            *to = m->slots[i];
            to->home = home;
        }
    free(m->slots);
    *m = n;
    return 0;
}

int vti_rmap_insert(vti_rmap *m, uint64_t key, uint64_t a, uint64_t b, uint64_t c)
{
    if (__builtin_expect((m->live + 1) * 2 > m->cap, 0) && grow(m) != 0)
        return -1;
    vti_rmap_slot *s = free_slot(m, key);
    s->key = key;
    s->a = a;
    s->b = b;
    s->c = c;
    s->full = 1;
    m->live++;
    return 0;
}

/* Index k lies cyclically in (i, j]. */
static int cyclic_between(size_t i, size_t k, size_t j)
{
    return i <= j ? i < k && k <= j : i < k || k <= j;
}

void vti_rmap_del(vti_rmap *m, vti_rmap_slot *s)
{
    size_t mask = m->cap - 1, gap = (size_t)(s - m->slots);
    for (size_t j = (gap + 1) & mask; m->slots[j].full; j = (j + 1) & mask) {
        /* the entry at j stays when its run starts after the gap */
        if (cyclic_between(gap, m->slots[j].home, j))
            continue;
        m->slots[gap] = m->slots[j];
        gap = j;
    }
    m->slots[gap].full = 0;
    m->live--;
}

void vti_rmap_free(vti_rmap *m)
{
    free(m->slots);
    *m = (vti_rmap){NULL, 0, 0};
}
