/* gan_alloc's data structures (treap pools, address map), PyTorch's
 * format_size and OOM text, NVTX annotations without a tool, and a
 * randomized run checked for overlaps and leaks. */
#include "alloc_internal.h"
#include "fake_backend.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#define N 10000

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static ga_block *make_blocks(uint64_t *seed)
{
    ga_block *b = calloc(N, sizeof *b);
    assert_non_null(b);
    for (size_t i = 0; i < N; i++) {
        b[i].ptr = 0x100000 + i * 4096;
        b[i].size = 512 * (1 + rng_next(seed) % 64);
    }
    return b;
}

/* Brute-force lower bound by (size, address). */
static const ga_block *brute_lower_bound(const ga_block *b, const int *in, size_t size)
{
    const ga_block *best = NULL;
    for (size_t i = 0; i < N; i++) {
        if (!in[i] || b[i].size < size)
            continue;
        if (!best || b[i].size < best->size || (b[i].size == best->size && b[i].ptr < best->ptr))
            best = &b[i];
    }
    return best;
}

static void test_tree_matches_brute_force(void **state)
{
    (void)state;
    uint64_t seed = 42;
    ga_block *b = make_blocks(&seed);
    int *in = calloc(N, sizeof *in);
    ga_tree t;
    ga_tree_init(&t, 7);
    for (size_t i = 0; i < N; i++, in[i - 1] = 1)
        ga_tree_insert(&t, &b[i]);
    assert_int_equal(t.count, N);
    assert_true(ga_tree_height(&t) < 64); /* expected about 3 ln N = 28 */
    for (size_t i = 0; i < N; i += 2, in[i - 2] = 0)
        ga_tree_remove(&t, &b[i]);
    assert_int_equal(t.count, N / 2);
    for (size_t s = 0; s <= 512 * 65; s += 256)
        assert_ptr_equal(ga_tree_lower_bound(&t, s), brute_lower_bound(b, in, s));
    assert_int_equal(ga_tree_max(&t)->size, 512 * 64);
    for (size_t i = 1; i < N; i += 2)
        ga_tree_remove(&t, &b[i]);
    assert_null(t.root);
    assert_null(ga_tree_lower_bound(&t, 0));
    free(in);
    free(b);
}

static void test_map_insert_remove(void **state)
{
    (void)state;
    uint64_t seed = 1;
    ga_block *b = make_blocks(&seed);
    ga_map m;
    assert_int_equal(ga_map_init(&m), 0);
    for (size_t i = 0; i < N; i++)
        ga_map_insert(&m, &b[i]);
    assert_int_equal(m.count, N);
    assert_true(m.nbuckets >= N);
    assert_null(ga_map_remove(&m, b[5].ptr + 512));
    for (size_t i = N; i-- > 0;)
        assert_ptr_equal(ga_map_remove(&m, b[i].ptr), &b[i]);
    assert_int_equal(m.count, 0);
    assert_null(ga_map_remove(&m, b[0].ptr));
    ga_map_fini(&m);
    free(b);
}

static void expect_size(uint64_t n, const char *want)
{
    char buf[32];
    assert_string_equal(ga_format_size(n, buf, sizeof buf), want);
}

/* PyTorch's format_size boundaries are inclusive. */
static void test_format_size(void **state)
{
    (void)state;
    expect_size(0, "0 bytes");
    expect_size(1024, "1024 bytes");
    expect_size(1025, "1.00 KiB");
    expect_size(MIB, "1024.00 KiB");
    expect_size(MIB + 1, "1.00 MiB");
    expect_size(1073741824ull, "1024.00 MiB");
    expect_size(2 * 1073741824ull, "2.00 GiB");
}

/* The message of the issue, rebuilt from its numbers. */
static void test_oom_text(void **state)
{
    (void)state;
    char buf[512];
    const uint64_t gib = 1073741824ull;
    uint64_t allocated = (uint64_t)(12.10 * (double)gib);
    ga_format_oom(buf, sizeof buf, 2 * gib, 0, (uint64_t)(14.75 * (double)gib),
                  (uint64_t)(1.02 * (double)gib), allocated, allocated + 512 * MIB);
    assert_string_equal(buf, "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                             "capacity of 14.75 GiB of which 1.02 GiB is free. Of the allocated "
                             "memory 12.10 GiB is allocated by this allocator, and 512.00 MiB is "
                             "reserved by this allocator but unallocated.");
}

/* Every NVTX Mem call with no tool attached: returns, changes nothing. */
static void test_nvtx_without_tool(void **state)
{
    (void)state;
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("NVTX_INJECTION32_PATH");
    ga_annot an;
    ga_annot_init(&an);
    void *heap = ga_annot_heap_register(&an, 0x200000, 2 * MIB);
    ga_annot_region_register(&an, heap, 0x200000, 4096);
    ga_annot_region_unregister(&an, 0x200000);
    ga_annot_heap_unregister(&an, heap);
    ga_annot_fini(&an);
    ga_annot_init(&an);
    ga_annot_fini(&an);
}

typedef struct live {
    uintptr_t p;
    size_t n;
} live;

static void expect_disjoint(const live *l, size_t n, uintptr_t p, size_t sz)
{
    for (size_t i = 0; i < n; i++)
        assert_true(p + sz <= l[i].p || l[i].p + l[i].n <= p);
}

static size_t random_size(uint64_t *s)
{
    uint64_t r = rng_next(s);
    if (r % 4 == 0)
        return MIB + r % (11 * MIB); /* large pool */
    return 1 + (r >> 8) % (256 * KIB);
}

/* 4000 random allocations and frees: no overlap, every byte comes back. */
static void test_random_run(void **state)
{
    (void)state;
    fixture *f = fixture_new(GA_CACHING, 1024 * MIB, 0);
    live *l = calloc(FAKE_MAX_LIVE, sizeof *l);
    size_t n = 0;
    uint64_t seed = 12345;
    for (int op = 0; op < 4000; op++) {
        if (n > 0 && (n >= 400 || rng_next(&seed) % 3 == 0)) {
            size_t i = rng_next(&seed) % n;
            ga_free(f->a, (void *)l[i].p);
            l[i] = l[--n];
            continue;
        }
        size_t sz = random_size(&seed);
        void *p = ga_malloc(f->a, sz);
        assert_non_null(p);
        expect_disjoint(l, n, (uintptr_t)p, sz);
        l[n++] = (live){(uintptr_t)p, sz};
    }
    while (n > 0)
        ga_free(f->a, (void *)l[--n].p);
    ga_stats s = ga_get_stats(f->a);
    assert_int_equal(s.allocated_bytes, 0);
    assert_int_equal(s.active_blocks, 0);
    ga_empty_cache(f->a);
    s = ga_get_stats(f->a);
    assert_int_equal(s.reserved_bytes, 0);
    assert_int_equal(s.segments, 0);
    assert_int_equal(f->dev.used, 0);
    assert_int_equal(s.device_malloc_calls, s.device_free_calls);
    free(l);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_matches_brute_force),
        cmocka_unit_test(test_map_insert_remove),
        cmocka_unit_test(test_format_size),
        cmocka_unit_test(test_oom_text),
        cmocka_unit_test(test_nvtx_without_tool),
        cmocka_unit_test(test_random_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
