/* A fake device for gan_alloc tests: a capacity in bytes, never-reused
 * addresses (segments are never adjacent), and injectable malloc failures. */
#ifndef GAN_ALLOC_FAKE_BACKEND_H
#define GAN_ALLOC_FAKE_BACKEND_H

#include "alloc.h"

#include <stddef.h>
#include <stdint.h>

#define MIB ((size_t)1048576)
#define KIB ((size_t)1024)
#define FAKE_MAX_LIVE 4096
#define FAKE_ERROR_MEMORY_ALLOCATION 2 /* cudaErrorMemoryAllocation */

typedef struct fake_dev {
    size_t capacity, used; /* bytes */
    uintptr_t next_addr;
    int fail_next; /* the next N mallocs fail regardless of capacity */
    int fail_code; /* ...with this error (0: FAKE_ERROR_MEMORY_ALLOCATION) */
    size_t mallocs, frees, failed_mallocs;
    size_t last_malloc_size; /* bytes asked by the last malloc, failed or not */
    uintptr_t live_ptr[FAKE_MAX_LIVE];
    size_t live_size[FAKE_MAX_LIVE];
    size_t nlive;
} fake_dev;

void fake_init(fake_dev *d, size_t capacity);
ga_backend fake_backend(fake_dev *d);

/* A fake device and an allocator on it. */
typedef struct fixture {
    fake_dev dev;
    ga_backend be;
    ga_allocator *a;
} fixture;

/* cmocka-asserting helpers (fake_backend.c). */
fixture *fixture_new(ga_kind kind, size_t capacity, int device);
/* Destroys the allocator and checks the fake device got every byte back. */
void fixture_free(fixture *f);
/* Checks allocated/reserved bytes, their peaks and device malloc/free calls. */
void expect_stats(const ga_allocator *a, uint64_t allocated, uint64_t reserved,
                  uint64_t peak_allocated, uint64_t peak_reserved, uint64_t mallocs,
                  uint64_t frees);
#endif
