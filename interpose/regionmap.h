/* regionmap.h: the NVTX Mem region maps of nvtx_inject.c (live regions by
 * address and by handle): 64-bit key to three 64-bit values, open
 * addressing with linear probing and backward-shift deletion (Knuth, TAOCP
 * vol. 3, 6.4, algorithm R), so there are no tombstones: a program that
 * registers and unregisters regions all run long never rehashes, and a
 * lookup stops at the first empty slot. Load at most 1/2; the table only
 * grows (to the peak of live entries; at most 2^32 slots). Not thread-safe:
 * the caller locks. */
#ifndef VRAMTRACE_REGIONMAP_H
#define VRAMTRACE_REGIONMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct vti_rmap_slot {
    uint64_t key, a, b, c; /* the values' meaning is the caller's */
    uint32_t full;         /* 0: empty */
    uint32_t home;         /* vti_rmap_home of key (deletion reads it) */
} vti_rmap_slot;

typedef struct vti_rmap {
    vti_rmap_slot *slots; /* cap slots, cap a power of two (0: none yet) */
    size_t cap, live;
} vti_rmap;

/* The slot holding key, or NULL. The pointer is valid until the next
 * insert or delete. */
vti_rmap_slot *vti_rmap_find(const vti_rmap *m, uint64_t key);

/* Insert key, which must not be in m, with values a, b, c. Returns 0, or -1
 * when out of memory (m unchanged). May move every entry (growth). */
int vti_rmap_insert(vti_rmap *m, uint64_t key, uint64_t a, uint64_t b, uint64_t c);

/* Delete the entry in slot s (full, of m). Later entries of its probe run
 * move back into the gap: slot s then holds another entry or is empty. An
 * entry moves only to a slot between s and its old slot (cyclically), so a
 * scan by increasing index that deletes as it goes sees every entry when it
 * looks at slot s again after a deletion there (nvtx_inject.c,
 * regions_drop_heap). */
void vti_rmap_del(vti_rmap *m, vti_rmap_slot *s);

/* The slot index where key's probe run starts (for tests). */
size_t vti_rmap_home(const vti_rmap *m, uint64_t key);

/* Free the table; m becomes empty. */
void vti_rmap_free(vti_rmap *m);

#endif
