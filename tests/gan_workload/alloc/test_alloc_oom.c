/* gan_alloc when the device runs out: free-and-retry (PyTorch's malloc():
 * alloc_block || release_cached_blocks && alloc_block), empty_cache, the
 * fragmentation OOM and PyTorch's message; GA_DIRECT. Fake device of 64 MiB. */
#include "alloc_internal.h"
#include "fake_backend.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CAP (64 * MIB)

static int setup(void **state)
{
    *state = fixture_new(GA_CACHING, CAP, 0);
    return 0;
}

static int setup_direct(void **state)
{
    *state = fixture_new(GA_DIRECT, CAP, 0);
    return 0;
}

static int teardown(void **state)
{
    fixture_free(*state);
    return 0;
}

static void expect_counts(const ga_allocator *a, uint64_t retries, uint64_t ooms, uint64_t active,
                          uint64_t segments)
{
    ga_stats s = ga_get_stats(a);
    assert_int_equal(s.num_alloc_retries, retries);
    assert_int_equal(s.num_ooms, ooms);
    assert_int_equal(s.active_blocks, active);
    assert_int_equal(s.segments, segments);
}

/* A cached 30 MiB segment is released so that 40 MiB fits on 64 MiB. */
static void test_retry_after_release_capacity(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 30 * MIB);
    ga_free(f->a, p);
    void *q = ga_malloc(f->a, 40 * MIB);
    assert_non_null(q);
    assert_int_equal(f->dev.failed_mallocs, 1);
    expect_stats(f->a, 40 * MIB, 40 * MIB, 40 * MIB, 40 * MIB, 3, 1);
    expect_counts(f->a, 1, 0, 1, 1);
    assert_string_equal(ga_last_error(f->a), "");
}

/* The backend fails the first cudaMalloc: cached free segments are released
 * (here a small one), the retry succeeds. */
static void test_retry_after_injected_failure(void **state)
{
    fixture *f = *state;
    void *s = ga_malloc(f->a, 4 * KIB);
    ga_free(f->a, s);
    f->dev.fail_next = 1;
    void *l = ga_malloc(f->a, MIB + MIB / 2);
    assert_non_null(l);
    assert_int_equal(f->dev.last_malloc_size, 20 * MIB);
    expect_stats(f->a, MIB + MIB / 2, 20 * MIB, MIB + MIB / 2, 20 * MIB, 3, 1);
    expect_counts(f->a, 1, 0, 1, 1);
}

/* The retry frees only segments without live blocks. */
static void test_retry_keeps_live_segments(void **state)
{
    fixture *f = *state;
    void *live = ga_malloc(f->a, 4 * KIB); /* pins its 2 MiB segment */
    void *c = ga_malloc(f->a, 12 * MIB);
    ga_free(f->a, c);
    f->dev.fail_next = 1;
    void *q = ga_malloc(f->a, 14 * MIB);
    assert_non_null(q);
    assert_non_null(live);
    expect_stats(f->a, 14 * MIB + 4 * KIB, 16 * MIB, 14 * MIB + 4 * KIB, 16 * MIB, 4, 1);
    expect_counts(f->a, 1, 0, 2, 2);
}

/* empty_cache releases every unused segment: reserved drops to allocated
 * when the live blocks fill their segments. */
static void test_empty_cache(void **state)
{
    fixture *f = *state;
    void *live = ga_malloc(f->a, 12 * MIB); /* 12 MiB segment, exact */
    ga_free(f->a, ga_malloc(f->a, KIB));
    ga_free(f->a, ga_malloc(f->a, 30 * MIB));
    expect_stats(f->a, 12 * MIB, 44 * MIB, 42 * MIB, 44 * MIB, 3, 0);
    ga_empty_cache(f->a);
    expect_stats(f->a, 12 * MIB, 12 * MIB, 42 * MIB, 44 * MIB, 3, 2);
    expect_counts(f->a, 0, 0, 1, 1);
    /* A partly used segment stays: reserved stays above allocated. */
    void *x = ga_malloc(f->a, 4 * KIB);
    ga_empty_cache(f->a);
    expect_stats(f->a, 12 * MIB + 4 * KIB, 14 * MIB, 42 * MIB, 44 * MIB, 4, 2);
    ga_free(f->a, x);
    ga_free(f->a, live);
    ga_empty_cache(f->a);
    expect_stats(f->a, 0, 0, 42 * MIB, 44 * MIB, 4, 4);
    expect_counts(f->a, 0, 0, 0, 0);
}

/* Three 20 MiB segments, each holding six 3 MiB blocks (and a 2 MiB tail);
 * every other block freed: 33 MiB cached in pieces of 3 and 2 MiB, 4 MiB
 * left on the device. An 8 MiB request fits nowhere: cudaMalloc(20 MiB)
 * fails, the cache is released (nothing: every segment is pinned), the
 * retry fails, NULL with PyTorch's message. */
static void fragment(fixture *f, void *blk[18])
{
    for (int i = 0; i < 18; i++)
        blk[i] = ga_malloc(f->a, 3 * MIB);
    for (int i = 0; i < 18; i += 2)
        ga_free(f->a, blk[i]);
    expect_stats(f->a, 27 * MIB, 60 * MIB, 54 * MIB, 60 * MIB, 3, 0);
}

static void test_fragmentation_oom(void **state)
{
    fixture *f = *state;
    void *blk[18];
    fragment(f, blk);
    assert_null(ga_malloc(f->a, 8 * MIB));
    expect_stats(f->a, 27 * MIB, 60 * MIB, 54 * MIB, 60 * MIB, 5, 0);
    expect_counts(f->a, 1, 1, 9, 3);
    assert_string_equal(ga_last_error(f->a),
                        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                        "capacity of 64.00 MiB of which 4.00 MiB is free. Of the allocated memory "
                        "27.00 MiB is allocated by this allocator, and 33.00 MiB is reserved by "
                        "this allocator but unallocated.");
    ga_stats s = ga_get_stats(f->a);
    assert_true(s.reserved_bytes - s.allocated_bytes > 8 * MIB);
    /* Still usable: a 3 MiB request takes a cached hole. */
    void *p = ga_malloc(f->a, 3 * MIB);
    assert_ptr_equal(p, blk[0]);
    assert_string_equal(ga_last_error(f->a), "");
}

typedef struct seen {
    ga_failure f[4];
    int n;
} seen;

static void observe(void *ctx, const ga_failure *f)
{
    seen *s = ctx;
    assert_true(s->n < 4);
    s->f[s->n++] = *f;
}

/* The failure observer sees both failed mallocs of the fragmentation OOM
 * (the first try and the retry) with the allocator's state then: the 33 MiB
 * the cache holds unallocated are in 3 MiB holes (fragment()). */
static void test_failure_observer(void **state)
{
    fixture *f = *state;
    void *blk[18];
    seen s = {.n = 0};
    ga_set_failure_observer(f->a, observe, &s);
    fragment(f, blk);
    assert_int_equal(s.n, 0);
    assert_null(ga_malloc(f->a, 8 * MIB));
    assert_int_equal(s.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s.f[i].requested, 20 * MIB);
        assert_int_equal(s.f[i].retry, i);
        assert_int_equal(s.f[i].allocated_bytes, 27 * MIB);
        assert_int_equal(s.f[i].reserved_bytes, 60 * MIB);
        assert_int_equal(s.f[i].largest_free_block, 3 * MIB);
        assert_int_equal(s.f[i].device_free, 4 * MIB);
        assert_int_equal(s.f[i].device_total, CAP);
    }
    ga_set_failure_observer(f->a, NULL, NULL);
    assert_null(ga_malloc(f->a, 8 * MIB));
    assert_int_equal(s.n, 2);
}

/* Too big for the device at all: the message shows the rounded segment size
 * and the device number. */
static void test_capacity_oom_message(void **state)
{
    fixture *f = *state;
    ga_allocator *a = ga_create(GA_CACHING, &f->be, 3);
    assert_null(ga_malloc(a, 100 * MIB - 5));
    assert_string_equal(ga_last_error(a),
                        "CUDA out of memory. Tried to allocate 100.00 MiB. GPU 3 has a total "
                        "capacity of 64.00 MiB of which 64.00 MiB is free. Of the allocated memory "
                        "0 bytes is allocated by this allocator, and 0 bytes is reserved by this "
                        "allocator but unallocated.");
    expect_stats(a, 0, 0, 0, 0, 2, 0);
    expect_counts(a, 1, 1, 0, 0);
    assert_null(ga_malloc(a, SIZE_MAX));
    expect_counts(a, 1, 2, 0, 0);
    ga_destroy(a);
}

/* Backend errors other than out-of-memory fail at once: no retry, no OOM. */
static void test_other_backend_error(void **state)
{
    fixture *f = *state;
    ga_free(f->a, ga_malloc(f->a, 30 * MIB)); /* a cached segment */
    f->dev.fail_next = 1;
    f->dev.fail_code = 100; /* cudaErrorNoDevice */
    assert_null(ga_malloc(f->a, 4 * KIB));
    assert_string_equal(ga_last_error(f->a),
                        "device malloc of 2097152 bytes failed with error 100");
    expect_stats(f->a, 0, 30 * MIB, 30 * MIB, 30 * MIB, 2, 0);
    expect_counts(f->a, 0, 0, 0, 1);
    assert_non_null(ga_malloc(f->a, 4 * KIB));
    assert_string_equal(ga_last_error(f->a), "");
}

/* GA_DIRECT: one device malloc/free per request, exact sizes, no cache. */
static void test_direct(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 1000);
    assert_int_equal(f->dev.last_malloc_size, 1000);
    void *q = ga_malloc(f->a, 3 * MIB);
    expect_stats(f->a, 3 * MIB + 1000, 3 * MIB + 1000, 3 * MIB + 1000, 3 * MIB + 1000, 2, 0);
    ga_free(f->a, p);
    expect_stats(f->a, 3 * MIB, 3 * MIB, 3 * MIB + 1000, 3 * MIB + 1000, 2, 1);
    ga_empty_cache(f->a);
    expect_stats(f->a, 3 * MIB, 3 * MIB, 3 * MIB + 1000, 3 * MIB + 1000, 2, 1);
    assert_null(ga_malloc(f->a, 62 * MIB));
    assert_string_equal(ga_last_error(f->a),
                        "CUDA out of memory. Tried to allocate 62.00 MiB. GPU 0 has a total "
                        "capacity of 64.00 MiB of which 61.00 MiB is free. Of the allocated memory "
                        "3.00 MiB is allocated by this allocator, and 0 bytes is reserved by this "
                        "allocator but unallocated.");
    expect_counts(f->a, 0, 1, 1, 1);
    ga_free(f->a, q);
    expect_stats(f->a, 0, 0, 3 * MIB + 1000, 3 * MIB + 1000, 3, 2);
    expect_counts(f->a, 0, 1, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retry_after_release_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_injected_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_keeps_live_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fragmentation_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_observer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_oom_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_backend_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct, setup_direct, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
