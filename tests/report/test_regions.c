/* test_regions.c: a heap's region tree (state.c: vr_heap_insert_region,
 * vr_heap_remove_region, vr_heap_region_resized, vr_heap_largest_free_fast)
 * against a plain array of the same regions, sorted and walked here: after
 * every random insert, remove and resize, the tree's walk is in address
 * order and its largest free gap is the array's; when a region overlaps
 * another or leaves the heap, the fast answer must decline. */
#include "report_test.h"
#include "state.h"

#define HEAP_ADDR 0x100000ull
#define HEAP_SIZE (4096ull * 4096ull)
#define SLOTS 512

typedef struct model {
    vr_region *at[SLOTS]; /* the region starting at slot k, or NULL */
    uint64_t seed;
} model;

static uint64_t next_rand(model *m)
{
    m->seed = m->seed * 6364136223846793005ull + 1442695040888963407ull;
    return m->seed >> 33;
}

/* The largest gap by the definition (frag.c's header comment), from the
 * model's regions in slot order; *irregular: some region overlaps an
 * earlier one or lies outside the heap. */
static uint64_t model_largest(const model *m, bool *irregular)
{
    uint64_t cur = HEAP_ADDR, end = HEAP_ADDR + HEAP_SIZE, best = 0;
    *irregular = false;
    for (size_t k = 0; k < SLOTS; k++) {
        const vr_region *r = m->at[k];
        if (!r)
            continue;
        if (r->addr < cur || r->addr + r->size > end)
            *irregular = true;
        if (r->addr > cur && r->addr - cur > best)
            best = r->addr - cur;
        if (r->addr + r->size > cur)
            cur = r->addr + r->size;
    }
    return end > cur && end - cur > best ? end - cur : best;
}

/* One random step: a new region at a free slot, the removal of one, or a
 * new size for one. big: sizes up to three slots (overlaps, and past the
 * heap's end from the last slots); else at most one slot. */
static void step(model *m, vr_heap *h, bool big)
{
    size_t k = next_rand(m) % SLOTS;
    uint64_t slot = HEAP_SIZE / SLOTS;
    uint64_t size = 1 + next_rand(m) % (big ? 3 * slot : slot);
    vr_region *r = m->at[k];
    if (!r) {
        r = calloc(1, sizeof *r);
        r->addr = HEAP_ADDR + k * slot;
        r->size = size;
        vr_heap_insert_region(h, r);
        m->at[k] = r;
    } else if (next_rand(m) % 3) {
        vr_heap_remove_region(h, r);
        free(r);
        m->at[k] = NULL;
    } else {
        r->size = size;
        vr_heap_region_resized(r);
    }
}

/* The tree's walk is the model's regions in order; its fast answer is the
 * model's largest gap, or declines exactly when the model is irregular. */
static void check(const model *m, const vr_heap *h)
{
    const vr_region *t = vr_heap_first(h);
    for (size_t k = 0; k < SLOTS; k++) {
        if (!m->at[k])
            continue;
        assert_ptr_equal(t, m->at[k]);
        t = vr_region_next(t);
    }
    assert_null(t);
    bool irregular;
    uint64_t want = model_largest(m, &irregular), got = 0;
    bool fast = vr_heap_largest_free_fast(h, &got);
    assert_int_equal(fast, !irregular);
    if (fast)
        assert_int_equal(got, want);
}

static void run(bool big, uint64_t seed)
{
    model m = {.seed = seed};
    vr_heap h = {.addr = HEAP_ADDR, .size = HEAP_SIZE};
    check(&m, &h);
    for (int i = 0; i < 20000; i++) {
        step(&m, &h, big);
        check(&m, &h);
    }
    for (size_t k = 0; k < SLOTS; k++)
        if (m.at[k]) {
            vr_heap_remove_region(&h, m.at[k]);
            free(m.at[k]);
            m.at[k] = NULL;
            check(&m, &h);
        }
}

/* Regions inside their slots: never overlapping, always inside the heap. */
static void test_regions_disjoint(void **state)
{
    (void)state;
    run(false, 1);
    run(false, 2);
}

/* Regions up to three slots long: overlaps and regions past the heap's end
 * come and go; the fast answer must decline while one is there. */
static void test_regions_overlapping(void **state)
{
    (void)state;
    run(true, 3);
    run(true, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regions_disjoint),
        cmocka_unit_test(test_regions_overlapping),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
