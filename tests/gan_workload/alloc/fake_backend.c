#include "fake_backend.h"

#include <string.h>

#define FAKE_BASE ((uintptr_t)0x7f0000000000ull)
#define FAKE_GAP ((uintptr_t)(2 * MIB))

void fake_init(fake_dev *d, size_t capacity)
{
    memset(d, 0, sizeof *d);
    d->capacity = capacity;
    d->next_addr = FAKE_BASE;
}

static int fake_malloc(void *ctx, void **p, size_t n)
{
    fake_dev *d = ctx;
    d->mallocs++;
    d->last_malloc_size = n;
    if (d->fail_next > 0 || n > d->capacity - d->used || d->nlive == FAKE_MAX_LIVE) {
        int code = FAKE_ERROR_MEMORY_ALLOCATION;
        if (d->fail_next > 0) {
            d->fail_next--;
            code = d->fail_code ? d->fail_code : code;
        }
        d->failed_mallocs++;
        return code;
    }
    *p = (void *)d->next_addr;
    d->live_ptr[d->nlive] = d->next_addr;
    d->live_size[d->nlive++] = n;
    d->used += n;
    d->next_addr += (n + FAKE_GAP - 1) / FAKE_GAP * FAKE_GAP + FAKE_GAP;
    return 0;
}

static int fake_free(void *ctx, void *p)
{
    fake_dev *d = ctx;
    d->frees++;
    for (size_t i = 0; i < d->nlive; i++) {
        if (d->live_ptr[i] == (uintptr_t)p) {
            d->used -= d->live_size[i];
            d->nlive--;
            d->live_ptr[i] = d->live_ptr[d->nlive];
            d->live_size[i] = d->live_size[d->nlive];
            return 0;
        }
    }
    return 1; /* cudaErrorInvalidValue */
}

static int fake_mem_get_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    fake_dev *d = ctx;
    *free_bytes = d->capacity - d->used;
    *total_bytes = d->capacity;
    return 0;
}

ga_backend fake_backend(fake_dev *d)
{
    return (ga_backend){
        .malloc = fake_malloc, .free = fake_free, .mem_get_info = fake_mem_get_info, .ctx = d};
}

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <cmocka.h>

fixture *fixture_new(ga_kind kind, size_t capacity, int device)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    fake_init(&f->dev, capacity);
    f->be = fake_backend(&f->dev);
    f->a = ga_create(kind, &f->be, device);
    assert_non_null(f->a);
    return f;
}

void fixture_free(fixture *f)
{
    ga_destroy(f->a);
    assert_int_equal(f->dev.used, 0);
    assert_int_equal(f->dev.nlive, 0);
    free(f);
}

void expect_stats(const ga_allocator *a, uint64_t allocated, uint64_t reserved,
                  uint64_t peak_allocated, uint64_t peak_reserved, uint64_t mallocs, uint64_t frees)
{
    ga_stats s = ga_get_stats(a);
    assert_int_equal(s.allocated_bytes, allocated);
    assert_int_equal(s.reserved_bytes, reserved);
    assert_int_equal(s.peak_allocated_bytes, peak_allocated);
    assert_int_equal(s.peak_reserved_bytes, peak_reserved);
    assert_int_equal(s.device_malloc_calls, mallocs);
    assert_int_equal(s.device_free_calls, frees);
}
