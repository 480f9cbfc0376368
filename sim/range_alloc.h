/* First-fit range allocator over one virtual address range (internal to sim/).
 * Freed ranges coalesce with their neighbours, so a freed address is handed
 * out again by the next request that fits there, as on a real device. */
#ifndef SIM_RANGE_ALLOC_H
#define SIM_RANGE_ALLOC_H
#include <stddef.h>
#include <stdint.h>

struct ra_block {
    uintptr_t start;
    size_t len;
    struct ra_block *next;
};

struct range_alloc {
    uintptr_t base;
    size_t len;
    struct ra_block *free_list; /* sorted by start, never adjacent */
};

/* Initialise over [base, base+len). Returns 0, or -1 when out of host memory. */
int ra_init(struct range_alloc *ra, uintptr_t base, size_t len);
/* Release the bookkeeping (not the range itself). */
void ra_destroy(struct range_alloc *ra);
/* Take `len` bytes (a multiple of `align`, a power of two) at the lowest
 * `align`-aligned address that fits. Returns the address, or 0 when no free
 * range fits (or host memory for bookkeeping ran out). */
uintptr_t ra_take(struct range_alloc *ra, size_t len, size_t align);
/* Give back [addr, addr+len), which ra_take returned. */
void ra_give(struct range_alloc *ra, uintptr_t addr, size_t len);
#endif
