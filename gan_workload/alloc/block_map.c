/* Live blocks by address: a chained hash map (PyTorch keeps
 * ska::flat_hash_map<void*, Block*> allocated_blocks for the same purpose). */
#include "alloc_internal.h"

#include <stdlib.h>

#define GA_MAP_INITIAL_BUCKETS 1024

static size_t bucket_of(uintptr_t ptr, size_t nbuckets)
{
    /* Blocks are 512-byte aligned: drop those bits, then Fibonacci-hash. */
    uint64_t h = ((uint64_t)ptr >> 9) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (nbuckets - 1);
}

int ga_map_init(ga_map *m)
{
    m->count = 0;
    m->nbuckets = GA_MAP_INITIAL_BUCKETS;
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    return m->buckets ? 0 : -1;
}

void ga_map_fini(ga_map *m)
{
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
}

static void grow(ga_map *m)
{
    size_t n = m->nbuckets * 2;
    ga_block **nb = calloc(n, sizeof *nb);
    if (!nb)
        return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        ga_block *b = m->buckets[i];
        while (b) {
            ga_block *next = b->hnext;
            size_t k = bucket_of(b->ptr, n);
            b->hnext = nb[k];
            nb[k] = b;
            b = next;
        }
    }
    free(m->buckets);
    m->buckets = nb;
    m->nbuckets = n;
}

void ga_map_insert(ga_map *m, ga_block *b)
{
    if (m->count >= m->nbuckets)
        grow(m);
    size_t k = bucket_of(b->ptr, m->nbuckets);
    b->hnext = m->buckets[k];
    m->buckets[k] = b;
    m->count++;
}

ga_block *ga_map_remove(ga_map *m, uintptr_t ptr)
{
    ga_block **link = &m->buckets[bucket_of(ptr, m->nbuckets)];
    for (; *link; link = &(*link)->hnext) {
        ga_block *b = *link;
        if (b->ptr == ptr) {
            *link = b->hnext;
            b->hnext = NULL;
            m->count--;
            return b;
        }
    }
    return NULL;
}
