/* test_frag.c: fragmentation (frag.c): measured at the peak's own instant. */
#include "report_test.h"

/* Fragmentation "at the peak" is measured at the peak's own instant, even
 * when the final peak is under 1 % above an earlier one whose heap layout
 * was different; the worst over time counts the peak's value too. */
static void test_frag_at_peak_instant(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"fragpeak"};
    open_trace(&g, "fragpeak", 1, argv);
    uint64_t base = 0x40000000, ms = 1000000;
    vtg_alloc(&g, 1 * ms, base, 100 * MiB, 1);
    vtg_heap(&g, 1 * ms + 1, 1, base, 100 * MiB);
    vtg_region(&g, 2 * ms, 1, base, 40 * MiB, 1);
    vtg_region(&g, 3 * ms, 1, base + 60 * MiB, 10 * MiB, 1); /* 50 MiB, 40 % fragmented */
    vtg_region_free(&g, 4 * ms, 1, base + 60 * MiB);
    vtg_region(&g, 5 * ms, 1, base + 40 * MiB, 10 * MiB + 100 * 1024, 1); /* +0.2 %, contiguous */
    vtg_region_free(&g, 6 * ms, 1, base + 40 * MiB);
    vtg_end(&g, 7 * ms, 0);
    vr_report *r = close_and_analyze(&g, "fragpeak");
    assert_int_equal(r->peak_allocated, 50 * MiB + 100 * 1024);
    bool seen = false;
    for (size_t i = 0; i < r->nfrag; i++)
        if (!strcmp(r->frag[i].when, "peak")) {
            seen = true;
            assert_int_equal(r->frag[i].t_ns, r->peak_allocated_t_ns);
            assert_int_equal(r->frag[i].allocated, 50 * MiB + 100 * 1024);
            assert_true(r->frag[i].fragmentation < 1e-9);
        }
    assert_true(seen);
    vr_report_free(r);
}

/* ---- random heaps and regions against a model ---------------------------- */

#define MH_HEAPS 8
#define MH_SLOTS 64
#define MH_SLOT MiB

/* The test's own picture of the heaps: heap k on device k % 2 at base(k),
 * MH_SLOTS slots of MH_SLOT; a region starts at a slot and may run into
 * the next slots or past the heap's end. */
typedef struct mheaps {
    bool live[MH_HEAPS];
    uint64_t region[MH_HEAPS][MH_SLOTS]; /* size of the region at slot, 0: none */
    uint64_t seed, t;
} mheaps;

static uint64_t mh_rand(mheaps *m)
{
    m->seed = m->seed * 6364136223846793005ull + 1442695040888963407ull;
    return m->seed >> 33;
}

static uint64_t mh_base(size_t k)
{
    return 0x100000000ull + k * 0x10000000ull;
}

/* The fragmentation inputs of device dev by frag.c's definition, from the
 * model alone. */
static vr_frag mh_expected(const mheaps *m, int32_t dev)
{
    vr_frag f = {.device = dev};
    for (size_t k = 0; k < MH_HEAPS; k++) {
        if (!m->live[k] || (int32_t)(k % 2) != dev)
            continue;
        uint64_t size = MH_SLOTS * MH_SLOT, cur = mh_base(k), end = cur + size, bytes = 0;
        uint64_t best = 0;
        for (size_t j = 0; j < MH_SLOTS; j++) {
            uint64_t a = mh_base(k) + j * MH_SLOT, n = m->region[k][j];
            if (!n)
                continue;
            bytes += n;
            if (a > cur && a <= end && a - cur > best)
                best = a - cur;
            if (a + n > cur)
                cur = a + n;
        }
        if (end > cur && end - cur > best)
            best = end - cur;
        f.reserved += size;
        f.allocated += bytes < size ? bytes : size;
        if (best > f.largest_free)
            f.largest_free = best;
    }
    return f;
}

/* One random step: a region registered at a free slot, one unregistered,
 * or (rarely) a heap unregistered and registered again without regions. */
static void mh_step(mheaps *m, vtg *g)
{
    size_t k = mh_rand(m) % MH_HEAPS, j = mh_rand(m) % MH_SLOTS;
    uint64_t a = mh_base(k) + j * MH_SLOT;
    if (mh_rand(m) % 200 == 0) {
        vtg_heap_free(g, m->t++, k + 1);
        vtg_heap(g, m->t++, k + 1, mh_base(k), MH_SLOTS * MH_SLOT);
        memset(m->region[k], 0, sizeof m->region[k]);
    } else if (!m->region[k][j]) {
        m->region[k][j] = 4096 + mh_rand(m) % (2 * MH_SLOT); /* may overlap the next slot */
        vtg_region(g, m->t++, k + 1, a, m->region[k][j], 1);
    } else {
        vtg_region_free(g, m->t++, k + 1, a);
        m->region[k][j] = 0;
    }
}

/* Heaps on two devices filled and emptied at random, with an
 * out-of-memory failure on each device every 250 steps: each "oom"
 * fragmentation sample is the model's (frag.c keeps the inputs per device
 * as regions come and go; this holds them against a walk of the model). */
static void test_frag_random_heaps(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"fragrandom"};
    open_trace(&g, "fragrandom", 1, argv);
    mheaps m = {.seed = 11, .t = 1000};
    for (size_t k = 0; k < MH_HEAPS; k++) {
        vtg_alloc_on(&g, m.t++, mh_base(k), MH_SLOTS * MH_SLOT, 1, (int32_t)(k % 2),
                     VT_API_CUDA_MALLOC);
        vtg_heap(&g, m.t++, k + 1, mh_base(k), MH_SLOTS * MH_SLOT);
        m.live[k] = true;
    }
    enum { STEPS = 10000, EVERY = 250 };
    vr_frag want[2 * STEPS / EVERY];
    size_t nwant = 0;
    for (int i = 1; i <= STEPS; i++) {
        mh_step(&m, &g);
        if (i % EVERY)
            continue;
        for (int32_t dev = 0; dev < 2; dev++) {
            vtg_failed_on(&g, m.t++, 100 * GiB, 1, VT_ERROR_OUT_OF_MEMORY, dev, VT_API_CUDA_MALLOC,
                          MiB, GiB);
            want[nwant++] = mh_expected(&m, dev);
        }
    }
    vtg_end(&g, m.t, 1);
    vr_report *r = close_and_analyze(&g, "fragrandom");
    size_t seen = 0;
    for (size_t i = 0; i < r->nfrag; i++) {
        if (strcmp(r->frag[i].when, "oom"))
            continue;
        assert_true(seen < nwant);
        assert_int_equal(r->frag[i].device, want[seen].device);
        assert_int_equal(r->frag[i].reserved, want[seen].reserved);
        assert_int_equal(r->frag[i].allocated, want[seen].allocated);
        assert_int_equal(r->frag[i].largest_free, want[seen].largest_free);
        seen++;
    }
    assert_int_equal(seen, nwant);
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frag_at_peak_instant),
        cmocka_unit_test(test_frag_random_heaps),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
