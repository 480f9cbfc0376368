#include "range_alloc.h"

#include <stdlib.h>

static struct ra_block *block_new(uintptr_t start, size_t len, struct ra_block *next)
{
    struct ra_block *b = malloc(sizeof *b);
    if (b) {
        b->start = start;
        b->len = len;
        b->next = next;
    }
    return b;
}

int ra_init(struct range_alloc *ra, uintptr_t base, size_t len)
{
    ra->base = base;
    ra->len = len;
    ra->free_list = block_new(base, len, NULL);
    return ra->free_list ? 0 : -1;
}

void ra_destroy(struct range_alloc *ra)
{
    struct ra_block *b = ra->free_list;
    while (b) {
        struct ra_block *n = b->next;
        free(b);
        b = n;
    }
    ra->free_list = NULL;
}

/* Carve [addr, addr+len) out of block *pp; may split it in two. */
static int carve(struct ra_block **pp, uintptr_t addr, size_t len)
{
    struct ra_block *b = *pp;
    uintptr_t end = addr + len, bend = b->start + b->len;
    if (addr > b->start && end < bend) {
        struct ra_block *tail = block_new(end, bend - end, b->next);
        if (!tail)
            return -1;
        b->len = addr - b->start;
        b->next = tail;
    } else if (addr > b->start) {
        b->len = addr - b->start;
    } else if (end < bend) {
        b->start = end;
        b->len = bend - end;
    } else {
        *pp = b->next;
        free(b);
    }
    return 0;
}

uintptr_t ra_take(struct range_alloc *ra, size_t len, size_t align)
{
    for (struct ra_block **pp = &ra->free_list; *pp; pp = &(*pp)->next) {
        struct ra_block *b = *pp;
        uintptr_t addr = (b->start + align - 1) & ~(uintptr_t)(align - 1);
        if (addr - b->start + len > b->len || addr < b->start)
            continue;
        return carve(pp, addr, len) == 0 ? addr : 0;
    }
    return 0;
}

void ra_give(struct range_alloc *ra, uintptr_t addr, size_t len)
{
    struct ra_block **pp = &ra->free_list, *prev = NULL;
    while (*pp && (*pp)->start < addr) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    struct ra_block *next = *pp;
    if (prev && prev->start + prev->len == addr) {
        prev->len += len;
        if (next && prev->start + prev->len == next->start) {
            prev->len += next->len;
            prev->next = next->next;
            free(next);
        }
        return;
    }
    if (next && addr + len == next->start) {
        next->start = addr;
        next->len += len;
        return;
    }
    struct ra_block *b = block_new(addr, len, next);
    if (b) /* on host OOM the range is lost to the allocator, never reused twice */
        *pp = b;
}
