/* gan_alloc against PyTorch's c10/cuda/CUDACachingAllocator.cpp rules:
 * round_size, get_pool, get_allocation_size, should_split, free_block
 * (coalescing) and best-fit reuse. Fake device of 256 MiB. */
#include "alloc_internal.h"
#include "fake_backend.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define CAP (256 * MIB)

static int setup(void **state)
{
    *state = fixture_new(GA_CACHING, CAP, 0);
    return 0;
}

static int teardown(void **state)
{
    fixture_free(*state);
    return 0;
}

static uintptr_t u(void *p)
{
    return (uintptr_t)p;
}

static void expect_pool(const ga_allocator *a, int is_small, size_t count, size_t largest)
{
    size_t c, l;
    ga_pool_info(a, is_small, &c, &l);
    assert_int_equal(c, count);
    assert_int_equal(l, largest);
}

/* round_size: at least kMinBlockSize, then multiples of 512. */
static void test_round_size(void **state)
{
    (void)state;
    assert_int_equal(ga_round_size(0), 512);
    assert_int_equal(ga_round_size(1), 512);
    assert_int_equal(ga_round_size(512), 512);
    assert_int_equal(ga_round_size(513), 1024);
    assert_int_equal(ga_round_size(MIB), MIB);
    assert_int_equal(ga_round_size(MIB + 1), MIB + 512);
}

/* A small request: a 512-rounded block out of a 2 MiB (kSmallBuffer) segment. */
static void test_small_request_in_2mib_segment(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 1000);
    assert_non_null(p);
    assert_int_equal(f->dev.last_malloc_size, 2 * MIB);
    expect_stats(f->a, 1024, 2 * MIB, 1024, 2 * MIB, 1, 0);
    void *q = ga_malloc(f->a, 1);
    assert_int_equal(u(q), u(p) + 1024);
    expect_stats(f->a, 1536, 2 * MIB, 1536, 2 * MIB, 1, 0);
    assert_int_equal(u(p) % 512, 0);
    ga_stats s = ga_get_stats(f->a);
    assert_int_equal(s.active_blocks, 2);
    assert_int_equal(s.segments, 1);
}

/* get_pool: size <= kSmallSize (1 MiB) is small; 1 MiB + 1 is large and gets
 * a 20 MiB (kLargeBuffer) segment. */
static void test_pool_boundary_1mib(void **state)
{
    fixture *f = *state;
    void *s1 = ga_malloc(f->a, MIB);
    assert_int_equal(f->dev.last_malloc_size, 2 * MIB);
    void *l = ga_malloc(f->a, MIB + 1);
    assert_non_null(l);
    assert_int_equal(f->dev.last_malloc_size, 20 * MIB);
    expect_stats(f->a, 2 * MIB + 512, 22 * MIB, 2 * MIB + 512, 22 * MIB, 2, 0);
    /* The second 1 MiB fills the small segment exactly: no split (remaining 0). */
    void *s2 = ga_malloc(f->a, MIB);
    assert_int_equal(u(s2), u(s1) + MIB);
    expect_stats(f->a, 3 * MIB + 512, 22 * MIB, 3 * MIB + 512, 22 * MIB, 2, 0);
    expect_pool(f->a, 1, 0, 0);
    expect_pool(f->a, 0, 1, 20 * MIB - MIB - 512);
}

/* get_allocation_size: 1 MiB < size < 10 MiB (kMinLargeAlloc) share 20 MiB
 * segments; size >= 10 MiB gets its own segment rounded to 2 MiB. */
static void test_large_segments_20mib_then_rounded(void **state)
{
    fixture *f = *state;
    void *a = ga_malloc(f->a, MIB + 1);
    void *b = ga_malloc(f->a, 9 * MIB + MIB / 2);
    assert_int_equal(u(b), u(a) + MIB + 512);
    expect_stats(f->a, 10 * MIB + MIB / 2 + 512, 20 * MIB, 10 * MIB + MIB / 2 + 512, 20 * MIB, 1,
                 0);
    /* 10 MiB - 1 rounds to 10 MiB == kMinLargeAlloc: own 10 MiB segment. */
    void *c = ga_malloc(f->a, 10 * MIB - 1);
    assert_non_null(c);
    assert_int_equal(f->dev.last_malloc_size, 10 * MIB);
    expect_stats(f->a, 20 * MIB + MIB / 2 + 512, 30 * MIB, 20 * MIB + MIB / 2 + 512, 30 * MIB, 2,
                 0);
    /* 10 MiB + 1: segment rounded up to 12 MiB (kRoundLarge). */
    void *d = ga_malloc(f->a, 10 * MIB + 1);
    assert_non_null(d);
    assert_int_equal(f->dev.last_malloc_size, 12 * MIB);
    expect_stats(f->a, 30 * MIB + MIB / 2 + 1024, 42 * MIB, 30 * MIB + MIB / 2 + 1024, 42 * MIB, 3,
                 0);
}

/* should_split, large pool: only when remaining > kSmallSize. An unsplit
 * block counts whole in allocated bytes, as in PyTorch. */
static void test_large_split_rule(void **state)
{
    fixture *f = *state;
    /* 19 MiB in a 20 MiB segment: remaining exactly 1 MiB, no split. */
    void *a = ga_malloc(f->a, 19 * MIB);
    assert_non_null(a);
    expect_stats(f->a, 20 * MIB, 20 * MIB, 20 * MIB, 20 * MIB, 1, 0);
    expect_pool(f->a, 0, 0, 0);
    /* 19 MiB - 512: remaining 1 MiB + 512, split. */
    void *b = ga_malloc(f->a, 19 * MIB - 512);
    assert_non_null(b);
    expect_stats(f->a, 39 * MIB - 512, 40 * MIB, 39 * MIB - 512, 40 * MIB, 2, 0);
    expect_pool(f->a, 0, 1, MIB + 512);
    /* 25 MiB: 26 MiB segment, remaining 1 MiB, no split: allocated += 26 MiB. */
    void *c = ga_malloc(f->a, 25 * MIB);
    assert_non_null(c);
    expect_stats(f->a, 65 * MIB - 512, 66 * MIB, 65 * MIB - 512, 66 * MIB, 3, 0);
    /* 9 MiB: the cached 1 MiB + 512 block is too small; a new 20 MiB segment,
     * split (remaining 11 MiB). */
    void *d = ga_malloc(f->a, 9 * MIB);
    assert_non_null(d);
    expect_stats(f->a, 74 * MIB - 512, 86 * MIB, 74 * MIB - 512, 86 * MIB, 4, 0);
    expect_pool(f->a, 0, 2, 11 * MIB);
}

/* should_split, large pool: a cached block bigger than needed by <= 1 MiB is
 * handed out whole. */
static void test_large_no_split_of_cached_block(void **state)
{
    fixture *f = *state;
    void *a = ga_malloc(f->a, MIB + 1);           /* 20 MiB segment, split */
    void *b = ga_malloc(f->a, 9 * MIB + MIB / 2); /* remaining 9.5 MiB - 512 */
    (void)a;
    (void)b;
    void *c = ga_malloc(f->a, 9 * MIB); /* remaining 0.5 MiB - 512: whole block */
    assert_int_equal(u(c), u(a) + 10 * MIB + MIB / 2 + 512);
    expect_stats(f->a, 20 * MIB, 20 * MIB, 20 * MIB, 20 * MIB, 1, 0);
    expect_pool(f->a, 0, 0, 0);
}

/* should_split, small pool: remaining >= kMinBlockSize splits, even 512. */
static void test_small_split_rule(void **state)
{
    fixture *f = *state;
    void *a = ga_malloc(f->a, MIB);
    void *b = ga_malloc(f->a, MIB - 512);
    assert_int_equal(u(b), u(a) + MIB);
    expect_pool(f->a, 1, 1, 512);
    void *c = ga_malloc(f->a, 1);
    assert_int_equal(u(c), u(a) + 2 * MIB - 512);
    expect_pool(f->a, 1, 0, 0);
    expect_stats(f->a, 2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB, 1, 0);
    /* The segment is full: the next small request needs a new one. */
    void *d = ga_malloc(f->a, 1);
    assert_non_null(d);
    expect_stats(f->a, 2 * MIB + 512, 4 * MIB, 2 * MIB + 512, 4 * MIB, 2, 0);
}

/* Small blocks never come from the large pool and vice versa. */
static void test_pools_are_separate(void **state)
{
    fixture *f = *state;
    void *s = ga_malloc(f->a, 4 * KIB);
    ga_free(f->a, s);
    void *l = ga_malloc(f->a, MIB + MIB / 2);
    assert_non_null(l);
    expect_stats(f->a, MIB + MIB / 2, 22 * MIB, MIB + MIB / 2, 22 * MIB, 2, 0);
    ga_free(f->a, l);
    void *s2 = ga_malloc(f->a, 4 * KIB);
    assert_ptr_equal(s2, s);
    expect_stats(f->a, 4 * KIB, 22 * MIB, MIB + MIB / 2, 22 * MIB, 2, 0);
    expect_pool(f->a, 0, 1, 20 * MIB);
}

/* Three 4 KiB blocks A B C at the start of a small segment, tail free. */
static void abc(fixture *f, void **a, void **b, void **c)
{
    *a = ga_malloc(f->a, 4 * KIB);
    *b = ga_malloc(f->a, 4 * KIB);
    *c = ga_malloc(f->a, 4 * KIB);
    assert_int_equal(u(*b), u(*a) + 4 * KIB);
    assert_int_equal(u(*c), u(*b) + 4 * KIB);
    expect_pool(f->a, 1, 1, 2 * MIB - 12 * KIB);
}

/* free_block merges with the previous free neighbour. */
static void test_coalesce_with_prev(void **state)
{
    fixture *f = *state;
    void *a, *b, *c;
    abc(f, &a, &b, &c);
    ga_free(f->a, a);
    expect_pool(f->a, 1, 2, 2 * MIB - 12 * KIB);
    ga_free(f->a, b);
    expect_pool(f->a, 1, 2, 2 * MIB - 12 * KIB); /* A+B is one 8 KiB block */
    void *ab = ga_malloc(f->a, 8 * KIB);         /* best fit: the merged block */
    assert_ptr_equal(ab, a);
    expect_pool(f->a, 1, 1, 2 * MIB - 12 * KIB);
    expect_stats(f->a, 12 * KIB, 2 * MIB, 12 * KIB, 2 * MIB, 1, 0);
}

/* free_block merges with the next free neighbour (here the tail). */
static void test_coalesce_with_next(void **state)
{
    fixture *f = *state;
    void *a, *b, *c;
    abc(f, &a, &b, &c);
    ga_free(f->a, c);
    expect_pool(f->a, 1, 1, 2 * MIB - 8 * KIB);
    ga_free(f->a, b);
    expect_pool(f->a, 1, 1, 2 * MIB - 4 * KIB);
    expect_stats(f->a, 4 * KIB, 2 * MIB, 12 * KIB, 2 * MIB, 1, 0);
}

/* Freeing the middle block joins both sides into the whole segment, which
 * empty_cache can then release. */
static void test_coalesce_both_sides(void **state)
{
    fixture *f = *state;
    void *a, *b, *c;
    abc(f, &a, &b, &c);
    ga_free(f->a, a);
    ga_free(f->a, c);
    expect_pool(f->a, 1, 2, 2 * MIB - 8 * KIB);
    ga_free(f->a, b);
    expect_pool(f->a, 1, 1, 2 * MIB);
    ga_empty_cache(f->a);
    expect_pool(f->a, 1, 0, 0);
    expect_stats(f->a, 0, 0, 12 * KIB, 2 * MIB, 1, 1);
}

/* A freed block comes back at the same address (best fit, lowest address). */
static void test_reuse_same_address(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 3000);
    ga_free(f->a, p);
    assert_ptr_equal(ga_malloc(f->a, 3000), p);
    void *l = ga_malloc(f->a, 50 * MIB);
    ga_free(f->a, l);
    void *l2 = ga_malloc(f->a, 49 * MIB); /* remaining 1 MiB: whole block */
    assert_ptr_equal(l2, l);
    expect_stats(f->a, 50 * MIB + 3072, 52 * MIB, 50 * MIB + 3072, 52 * MIB, 2, 0);
    ga_stats s = ga_get_stats(f->a);
    assert_int_equal(s.active_blocks, 2);
    assert_int_equal(s.num_alloc_retries, 0);
}

/* Best fit: the smallest free block that fits, not the first or largest. */
static void test_best_fit(void **state)
{
    fixture *f = *state;
    void *blk[6];
    const size_t sz[6] = {64 * KIB, 4 * KIB, 16 * KIB, 4 * KIB, 8 * KIB, 4 * KIB};
    for (int i = 0; i < 6; i++)
        blk[i] = ga_malloc(f->a, sz[i]);
    ga_free(f->a, blk[0]); /* 64 KiB hole */
    ga_free(f->a, blk[2]); /* 16 KiB hole */
    ga_free(f->a, blk[4]); /* 8 KiB hole */
    assert_ptr_equal(ga_malloc(f->a, 6 * KIB), blk[4]);
    assert_ptr_equal(ga_malloc(f->a, 9 * KIB), blk[2]);
    assert_ptr_equal(ga_malloc(f->a, 17 * KIB), blk[0]);
}

/* Zero bytes gets a unique 512-byte block; ga_free(NULL) does nothing. */
static void test_zero_bytes_and_null(void **state)
{
    fixture *f = *state;
    void *a = ga_malloc(f->a, 0);
    void *b = ga_malloc(f->a, 0);
    assert_non_null(a);
    assert_int_equal(u(b), u(a) + 512);
    ga_free(f->a, NULL);
    expect_stats(f->a, 1024, 2 * MIB, 1024, 2 * MIB, 1, 0);
}

/* Unknown and double frees are reported and change nothing. */
static void test_bad_free(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 4 * KIB);
    ga_free(f->a, (void *)(u(p) + 512));
    assert_string_not_equal(ga_last_error(f->a), "");
    expect_stats(f->a, 4 * KIB, 2 * MIB, 4 * KIB, 2 * MIB, 1, 0);
    ga_free(f->a, p);
    ga_free(f->a, p);
    assert_string_not_equal(ga_last_error(f->a), "");
    expect_stats(f->a, 0, 2 * MIB, 4 * KIB, 2 * MIB, 1, 0);
    expect_pool(f->a, 1, 1, 2 * MIB);
}

/* reset_peak_memory_stats: peaks drop to the current values. */
static void test_reset_peaks(void **state)
{
    fixture *f = *state;
    void *p = ga_malloc(f->a, 30 * MIB);
    ga_free(f->a, p);
    ga_empty_cache(f->a);
    ga_reset_peak_stats(f->a);
    expect_stats(f->a, 0, 0, 0, 0, 1, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_size),
        cmocka_unit_test_setup_teardown(test_small_request_in_2mib_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_boundary_1mib, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_segments_20mib_then_rounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_split_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_no_split_of_cached_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_split_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pools_are_separate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_with_prev, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_with_next, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_both_sides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reuse_same_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_best_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_bytes_and_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_peaks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
