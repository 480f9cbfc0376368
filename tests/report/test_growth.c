/* test_growth.c: growth across iterations (growth.c): the iteration, the fitted growth per
 * call site and its projection. */
#include "report_test.h"

static void test_growth(void **state)
{
    (void)state;
    vr_report *r = scenario("growth");
    assert_string_equal(r->iteration_name, "train_step");
    assert_int_equal(r->iterations, 10);
    assert_true(r->ngrowth >= 1);
    assert_int_equal(r->growth[0].stack.id, 2);
    assert_true(fabs(r->growth[0].bytes_per_iteration - (double)MiB) < 1.0);
    assert_true(r->growth[0].r2 > 0.999999);
    /* 10 MiB live after 10 iterations, 1 GiB device, each iteration's 8 MiB
     * temporary on top: iteration j peaks at j + 8 MiB, so 1016 fills the
     * device exactly and 1017 is out (it was 1024: the temporary ignored) */
    assert_int_equal(r->growth[0].projected_oom_iteration, 1017);
    for (size_t i = 0; i < r->ngrowth; i++)
        assert_int_not_equal(r->growth[i].stack.id, 3); /* freed every iteration */
    assert_true(fabs(r->total_growth.bytes_per_iteration - (double)MiB) < 1.0);
    vr_report_free(r);
}

/* A run that dies in its first step (allocations over 30 ms, then an OOM,
 * no NVTX, no repeated call site): no iterations, so no growth and no
 * projection. Time windows used to fit a slope through the ramp-up. */
static void test_no_projection_first_step(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"firststep"};
    open_trace(&g, "firststep", 1, argv);
    uint64_t ms = 1000000;
    for (uint32_t i = 0; i < 30; i++) {
        vtg_stack(&g, 100 + i, 0, 0x2000 + i);
        vtg_alloc(&g, (i + 1) * ms, 0x10000000 + i * 16 * MiB, 16 * MiB, 100 + i);
    }
    vtg_failed(&g, 31 * ms, 600 * MiB, 1, 500 * MiB, GiB);
    vtg_end(&g, 32 * ms, 1);
    vr_report *r = close_and_analyze(&g, "firststep");
    assert_string_equal(r->iteration_kind, "");
    assert_int_equal(r->iterations, 0);
    assert_int_equal(r->total_growth.projected_oom_iteration, -1);
    assert_true(r->total_growth.bytes_per_iteration == 0);
    assert_int_equal(r->ngrowth, 0);
    vr_report_free(r);
}

/* Two raw stacks that differ only in a folded vramtrace frame are one call
 * site: their growth is fitted as one (20 MiB + 20 MiB per iteration), and
 * a failure lists them as one top site. */
static void test_growth_merged(void **state)
{
    (void)state;
    const char *path = tmp_path("growth_merged");
    if (access(path, F_OK) != 0) {
        vtg g;
        const char *argv[] = {"merged"};
        assert_int_equal(vtg_open(&g, path, 1, argv), 0);
        vtg_module(&g, 1, "/opt/fake/libuser.so", 0, 0x1000, 0x100000);
        vtg_module(&g, 2, "/opt/fake/lib/libvramtrace.so", 0, 0x200000, 0x300000);
        vtg_stack(&g, 1, 0, 0x1100);
        vtg_stack(&g, 2, 1, 0x2200);
        vtg_stack(&g, 3, 2, 0x200100); /* the same site, through a vramtrace frame */
        vtg_string(&g, 1, "train_step");
        vtg_device(&g, 0, "SimGPU", 64 * GiB);
        uint64_t t = 1000;
        for (uint64_t i = 0; i < 10; i++) {
            vtg_push(&g, t++, 1);
            vtg_alloc(&g, t++, 0x100000000 + i * 64 * MiB, 20 * MiB, 2);
            vtg_alloc(&g, t++, 0x800000000 + i * 64 * MiB, 20 * MiB, 3);
            vtg_pop(&g, t++);
        }
        vtg_failed(&g, t++, 64 * GiB, 2, 64 * GiB - 400 * MiB, 64 * GiB);
        vtg_end(&g, t, 1);
        assert_int_equal(vtg_close(&g), 0);
    }
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->ngrowth, 1);
    assert_true(fabs(r->growth[0].bytes_per_iteration - 40.0 * MiB) < 1.0);
    /* ... and the failure's top sites hold it once, with both stacks' bytes */
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].ntop_sites, 1);
    assert_int_equal(r->ooms[0].top_sites[0].bytes, 400 * MiB);
    assert_int_equal(r->ooms[0].top_sites[0].count, 20);
    vr_report_free(r);
}

/* A growth of 1 byte per iteration on a device of 2^64 - 1 bytes: the
 * projected failure lies past what an int64_t holds, so none is projected
 * (fuzz_report found the conversion overflowing, undefined behaviour).
 * Each iteration replaces its allocation by one a byte larger, all within
 * the driver's 512-byte rounding, so that the device memory they take
 * does not grow either (vr_driver_rounded). */
static void test_no_projection_past_int64(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"slow"};
    open_trace(&g, "slow", 1, argv);
    vtg_device(&g, 0, "Huge", UINT64_MAX);
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 10; i++) {
        vtg_push(&g, t++, 1);
        if (i)
            vtg_free(&g, t++, 0x10000000 + (i - 1) * 4096);
        vtg_alloc(&g, t++, 0x10000000 + i * 4096, i + 1, 1);
        vtg_pop(&g, t++);
    }
    vtg_end(&g, t, 0);
    vr_report *r = close_and_analyze(&g, "slow");
    assert_int_equal(r->iterations, 10);
    assert_true(r->total_growth.bytes_per_iteration > 0.5);
    assert_int_equal(r->total_growth.projected_oom_iteration, -1);
    vr_report_free(r);
}

/* A run whose live bytes at each of 12 train_step ends are mib[i] (one
 * block per step, the previous one freed): its report. */
static vr_report *steps_of(const char *name, const uint64_t mib[12])
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 12; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc(&g, t++, 0x10000000 + (i % 2) * GiB, mib[i] * MiB, 1);
        if (i)
            vtg_free(&g, t++, 0x10000000 + ((i - 1) % 2) * GiB);
        vtg_pop(&g, t++);
    }
    vtg_end(&g, t, 0);
    return close_and_analyze(&g, name);
}

/* Stairs: a straight line fits them badly (R^2 0.59), but the last third
 * is above the first third's highest and new highs come in the middle and
 * last thirds: growth (a leak of tensors of varying sizes was HEALTHY, as
 * torch_random_steps_4_stairs shows). One rise that then stays is not. */
static void test_growth_stairs(void **state)
{
    (void)state;
    const uint64_t stairs[12] = {10, 10, 40, 41, 12, 12, 45, 45, 46, 46, 47, 90};
    vr_report *r = steps_of("stairs", stairs);
    assert_true(r->total_growth.r2 < 0.6);
    assert_true(r->total_growth.sustained);
    vr_headline h;
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "growing");
    assert_non_null(strstr(h.text, "R^2 0.588 over 12 train_steps; every train_step end of the "
                                   "last third above the first third's highest"));
    vr_report_free(r);
    unlink(tmp_path("stairs"));

    const uint64_t once[12] = {10, 10, 10, 10, 10, 10, 50, 50, 50, 50, 50, 50};
    r = steps_of("once", once);
    assert_true(r->total_growth.r2 < 0.8);
    assert_false(r->total_growth.sustained); /* no new highest in the last third */
    vr_headline_of(r, &h);
    assert_string_not_equal(h.kind, "growing");
    vr_report_free(r);
    unlink(tmp_path("once"));

    /* one jump, then a last third that rises by 1 MiB where the slope adds
     * about 30 MiB over a third: not a rise that kept on (a PyTorch run's
     * segments, 82 MiB to 706 MiB and then 708 MiB, were called a leak) */
    const uint64_t jump[12] = {10, 10, 10, 10, 10, 10, 80, 80, 80, 80, 80, 81};
    r = steps_of("jump", jump);
    assert_true(r->total_growth.r2 < 0.8);
    assert_false(r->total_growth.sustained);
    vr_headline_of(r, &h);
    assert_string_not_equal(h.kind, "growing");
    vr_report_free(r);
    unlink(tmp_path("jump"));
}

/* How nested_of's run nests its ranges. */
typedef struct nesting {
    bool outer;    /* all steps inside one range "train" */
    int inner;     /* ranges "inner" in each step (one allocation each, freed) */
    int steps;     /* train_steps, each leaving 1 MiB live (never freed) */
    bool numbered; /* each step's range named by its number ("iteration3") */
} nesting;

static vr_report *nested_of(const char *name, nesting n)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_string(&g, 2, "train");
    vtg_string(&g, 3, "inner");
    uint64_t t = 1000;
    if (n.outer)
        vtg_push(&g, t++, 2);
    for (int i = 0; i < n.steps; i++) {
        char num[32];
        snprintf(num, sizeof num, "iteration%d", i);
        vtg_string(&g, 10 + (uint32_t)i, num);
        vtg_push(&g, t++, n.numbered ? 10 + (uint32_t)i : 1);
        for (int k = 0; k < n.inner; k++) {
            vtg_push(&g, t++, 3);
            vtg_alloc(&g, t++, 0x80000000, 5 * MiB, 1);
            vtg_free(&g, t++, 0x80000000);
            vtg_pop(&g, t++);
        }
        vtg_alloc(&g, t++, 0x10000000 + (uint64_t)i * MiB, MiB, 1);
        vtg_pop(&g, t++);
    }
    if (n.outer)
        vtg_pop(&g, t++);
    vtg_end(&g, t, 0);
    return close_and_analyze(&g, name);
}

/* Iterations one level down when no top-level range repeats: "train_step"s
 * inside one "train" (the call-site pattern counted 11 of them and no
 * range). A repeating top-level range still wins over the ranges inside it,
 * even more frequent ones (micro-batches), and loses none of its samples.
 * Steps whose ranges are named by their number ("iteration3", as Nsight
 * Systems' PyTorch examples name them) are one range, "iteration" (they
 * were 12 names completed once each, then the range inside them).
 * A run that died in its second step has no iterations in the ranges of
 * its first: their parent repeats. */
static void test_growth_nested(void **state)
{
    (void)state;
    struct {
        nesting n;
        const char *iteration, *parent;
        uint64_t count;
    } cases[] = {
        {{true, 0, 12, false}, "train_step", "train", 12},
        {{true, 2, 12, false}, "train_step", "train", 12},
        {{false, 1, 12, false}, "train_step", "", 12},
        {{false, 4, 12, false}, "train_step", "", 12},
        {{false, 1, 12, true}, "iteration", "", 12},
        {{false, 4, 2, false}, "", "", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vr_report *r = nested_of("nested", cases[k].n);
        assert_string_equal(r->iteration_name, cases[k].iteration);
        assert_string_equal(r->iteration_parent, cases[k].parent);
        assert_int_equal(r->iteration_numbered, cases[k].n.numbered);
        if (cases[k].count) {
            assert_string_equal(r->iteration_kind, "nvtx_range");
            assert_int_equal(r->iterations, cases[k].count);
            assert_true(fabs(r->total_growth.bytes_per_iteration - (double)MiB) < 1.0);
            assert_true(r->total_growth.r2 > 0.999999);
        }
        vr_report_free(r);
        unlink(tmp_path("nested"));
    }
    /* numbered names that come round again ("layer0" to "layer3" in every
     * step, no step range) are not numbered by step: from the second
     * "layer0" on they count apart, and "layer0" is the iteration (it was
     * "layer", ending 4 times a step) */
    {
        vtg g;
        open_trace(&g, "layers", 0, NULL);
        for (uint32_t k = 0; k < 4; k++) {
            char name[16];
            snprintf(name, sizeof name, "layer%u", k);
            vtg_string(&g, 20 + k, name);
        }
        uint64_t t = 1000;
        for (uint64_t i = 0; i < 12; i++)
            for (uint32_t k = 0; k < 4; k++) {
                vtg_push(&g, t++, 20 + k);
                if (k == 3)
                    vtg_alloc(&g, t++, 0x10000000 + i * MiB, MiB, 1);
                vtg_pop(&g, t++);
            }
        vtg_end(&g, t, 0);
        vr_report *r = close_and_analyze(&g, "layers");
        assert_string_equal(r->iteration_name, "layer0");
        assert_false(r->iteration_numbered);
        assert_int_equal(r->iterations, 11); /* counted apart from the second step on */
        assert_true(fabs(r->total_growth.bytes_per_iteration - (double)MiB) < 1.0);
        vr_report_free(r);
        unlink(tmp_path("layers"));
    }
    /* two steps, nothing else repeats: growth was not measured, and the
     * healthy headline must not say "no growth" (it did) */
    vtg g;
    open_trace(&g, "twosteps", 0, NULL);
    for (uint64_t i = 0, t = 1000; i < 2; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc(&g, t++, 0x10000000, MiB, 1);
        vtg_free(&g, t++, 0x10000000);
        vtg_pop(&g, t++);
    }
    vtg_end(&g, 2000, 0);
    vr_report *r = close_and_analyze(&g, "twosteps");
    assert_string_equal(r->iteration_kind, "");
    vr_headline h;
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "healthy");
    assert_non_null(strstr(h.text, "growth not measured (no iterations"));
    assert_null(strstr(h.text, "no growth"));
    vr_report_free(r);
    unlink(tmp_path("twosteps"));
}

/* devices 1 GiB devices; device 0 holds 700 MiB that never change; each of
 * 10 steps holds an 8 MiB temporary on device 1 and keeps 1 MiB there. */
static vr_report *devices_of(const char *name, int32_t devices, bool both)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    for (int32_t d = 0; d < devices; d++)
        vtg_device(&g, d, "sim", GiB);
    vtg_string(&g, 1, "step");
    for (uint32_t k = 1; k <= 4; k++) /* four call sites, apart */
        vtg_stack(&g, k, 0, 0x1000 * k);
    uint64_t t = 1000;
    vtg_alloc_on(&g, t++, 0x10000000, 700 * MiB, 1, 0, VT_API_CUDA_MALLOC);
    for (uint64_t i = 0; i < 10; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc_on(&g, t++, 0x80000000, 8 * MiB, 2, 1, VT_API_CUDA_MALLOC);
        vtg_free(&g, t++, 0x80000000);
        vtg_alloc_on(&g, t++, 0x90000000 + i * MiB, MiB, 3, 1, VT_API_CUDA_MALLOC);
        if (both) /* and 2 MiB a step kept on device 0 */
            vtg_alloc_on(&g, t++, 0x50000000 + i * 2 * MiB, 2 * MiB, 4, 0, VT_API_CUDA_MALLOC);
        vtg_pop(&g, t++);
    }
    vtg_end(&g, t, 0);
    return close_and_analyze(&g, name);
}

/* Growth is projected per device: the 1 MiB a step on device 1 runs out
 * when device 1 is full, 10 MiB live and 7 MiB above a step's end during
 * it: 10 + (1024 - 7 - 10) + 1 = step 1018 on device 1 (the two devices'
 * bytes summed against one device's room said 318). Past 64 devices the
 * projection takes them all together, with a note. */
static void test_growth_per_device(void **state)
{
    (void)state;
    vr_report *r = devices_of("growth_devices", 2, false);
    assert_int_equal(r->iterations, 10);
    assert_int_equal(r->total_growth.projected_oom_iteration, 1018);
    assert_int_equal(r->total_growth.projected_oom_device, 1);
    vr_headline h;
    vr_headline_of(r, &h);
    assert_non_null(strstr(h.text, "out of memory projected at step 1018 on device 1"));
    vr_report_free(r);
    r = devices_of("growth_devices_many", 66, false);
    assert_int_equal(r->total_growth.projected_oom_device, -1);
    assert_int_equal(r->total_growth.projected_oom_iteration, 10 + (1024 - 7 - 710) + 1);
    bool noted = false;
    for (size_t i = 0; i < r->nnotes; i++)
        noted |= strstr(r->notes[i], "for the first 64 devices only") != NULL;
    assert_true(noted);
    vr_report_free(r);
}

/* Both devices grow: 2 MiB a step on device 0 (720 MiB live after 10
 * steps, nothing above a step's end there) runs out first, at step
 * 10 + (1024 - 720) / 2 + 1 = 163; each growing site is projected against
 * its own device: device 1's 1 MiB a step at 1018 (against device 0's room
 * it said 315). */
static void test_growth_per_device_sites(void **state)
{
    (void)state;
    vr_report *r = devices_of("growth_devices_both", 2, true);
    assert_int_equal(r->total_growth.projected_oom_iteration, 163);
    assert_int_equal(r->total_growth.projected_oom_device, 0);
    assert_int_equal(r->ngrowth, 2);
    for (size_t i = 0; i < r->ngrowth; i++) {
        const vr_growth *g = &r->growth[i];
        bool dev0 = fabs(g->bytes_per_iteration - 2.0 * MiB) < 1;
        print_message("site %u: %.0f B/step, out of memory at step %lld\n", g->stack.id,
                      g->bytes_per_iteration, (long long)g->projected_oom_iteration);
        assert_true(dev0 || fabs(g->bytes_per_iteration - (double)MiB) < 1);
        assert_int_equal(g->projected_oom_iteration, dev0 ? 163 : 1018);
    }
    vr_report_free(r);
}

/* Twelve call-site-pattern iterations on a 1 GiB device: each allocates a
 * temporary (the anchor, stack 5), frees it and keeps 1 MiB (stack 7), all
 * with api. */
static vr_report *pattern_loop(const char *name, enum vt_api api, uint64_t temporary)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_stack(&g, 5, 0, 0x5500);
    vtg_stack(&g, 7, 0, 0x7700);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_meminfo(&g, 10, GiB, GiB);
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 12; i++) {
        vtg_alloc_api(&g, t++, 0x80000000, temporary, 5, api);
        vtg_free_api(&g, t++, 0x80000000, api);
        vtg_alloc_api(&g, t++, 0x10000000 + i * MiB, MiB, 7, api);
    }
    vtg_end(&g, t, 0);
    return close_and_analyze(&g, name);
}

/* Iterations of the call-site pattern (no NVTX): the growth headline says
 * what one is, since the anchor may allocate several times a step (a loop
 * over layers: 6 "iterations" a step, a projection 6 times too far in steps
 * read as steps), and that an NVTX range per step gives per-step figures. */
static void test_growth_pattern_words(void **state)
{
    (void)state;
    vr_report *r = pattern_loop("pattern", VT_API_CUDA_MALLOC, 4 * MiB);
    assert_string_equal(r->iteration_kind, "call_site");
    vr_headline h;
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "growing");
    assert_non_null(strstr(h.text, "; an iteration: each allocation at 0x5500"));
    assert_non_null(strstr(h.text, "an NVTX range per step gives per-step figures"));
    vr_report_free(r);
    unlink(tmp_path("pattern"));
}

/* A call-site-pattern iteration's own need (a 100 MiB temporary above
 * what the iteration leaves: 99 MiB, since it keeps 1 MiB) is taken from the
 * room like an NVTX iteration's, on the device and over all devices: the
 * projection is the first iteration after which the live bytes exceed the
 * 1 GiB device less those 99 MiB. Without it the projection was 99
 * iterations late. */
static void test_growth_pattern_excess(void **state)
{
    (void)state;
    vr_report *r = pattern_loop("pattern_excess", VT_API_CUDA_MALLOC, 100 * MiB);
    assert_string_equal(r->iteration_kind, "call_site");
    const vr_growth *tg = &r->total_growth;
    assert_true(fabs(tg->bytes_per_iteration - (double)MiB) < 1.0);
    uint64_t room = GiB - 99 * MiB;
    int64_t want = (int64_t)tg->iterations + (int64_t)((room - tg->live_bytes) / MiB) + 1;
    assert_int_equal(tg->projected_oom_iteration, want);
    assert_int_equal(tg->projected_oom_device, 0);
    vr_report_free(r);
    unlink(tmp_path("pattern_excess"));
}

/* Call-site-pattern iterations whose kept allocations come from a
 * stream-ordered pool: the recorder samples the pool's free reserve at NVTX
 * range ends only, so the device memory taken at the pattern's iteration
 * ends is not known, and nothing is projected (PyTorch's cudaMallocAsync
 * backend without NVTX ranges projected 4 to 50 times the step it ran out
 * in); the headline keeps the growth and says why, as a note does. The same
 * loop with cudaMalloc projects. */
static void test_growth_pattern_pool_unprojected(void **state)
{
    (void)state;
    for (int pool = 1; pool >= 0; pool--) {
        const char *name = pool ? "pattern_pool" : "pattern_malloc";
        enum vt_api api = pool ? VT_API_CUDA_MALLOC_ASYNC : VT_API_CUDA_MALLOC;
        vr_report *r = pattern_loop(name, api, 4 * MiB);
        assert_string_equal(r->iteration_kind, "call_site");
        assert_true(fabs(r->total_growth.bytes_per_iteration - (double)MiB) < 1.0);
        assert_int_equal(r->growth_unprojected, pool);
        assert_int_equal(r->total_growth.projected_oom_iteration < 0, pool);
        assert_true(r->ngrowth >= 1);
        assert_int_equal(r->growth[0].projected_oom_iteration < 0, pool);
        vr_headline h;
        vr_headline_of(r, &h);
        assert_string_equal(h.kind, "growing");
        assert_int_equal(h.projected_oom_iteration < 0, pool);
        assert_int_equal(strstr(h.text, "no out of memory projected") != NULL, pool);
        bool noted = false;
        for (size_t k = 0; k < r->nnotes; k++)
            noted |= strstr(r->notes[k], "stream-ordered pool (cudaMallocAsync)") != NULL;
        assert_int_equal(noted, pool);
        vr_report_free(r);
        unlink(tmp_path(name));
    }
}

/* The note that a projection counts a stream-ordered pool's free reserve
 * comes only where a pool held some: a program that never allocates from a
 * pool still gets its device's (empty) pool sampled, e.g. at every failed
 * cuMemAlloc (numba's arrays: the note appeared on every such report). An
 * NVTX loop of cudaMalloc that keeps 1 MiB a step, the pool sampled at each
 * range end with nothing reserved, then with a 64 MiB free reserve. */
static void test_growth_pool_note_needs_reserve(void **state)
{
    (void)state;
    for (int held = 0; held <= 1; held++) {
        const char *name = held ? "pool_note_held" : "pool_note_empty";
        vtg g;
        open_trace(&g, name, 0, NULL);
        vtg_string(&g, 1, "step");
        vtg_stack(&g, 7, 0, 0x7700);
        vtg_device(&g, 0, "SimGPU", GiB);
        vtg_meminfo(&g, 10, GiB, GiB);
        uint64_t t = 1000;
        for (uint64_t i = 0; i < 12; i++) {
            vtg_push(&g, t++, 1);
            vtg_alloc(&g, t++, 0x10000000 + i * MiB, MiB, 7);
            vtg_pool_stat(&g, t++, 0x900, held ? 64 * MiB : 0, 0);
            vtg_pop(&g, t++);
        }
        vtg_end(&g, t, 0);
        vr_report *r = close_and_analyze(&g, name);
        assert_true(r->total_growth.bytes_per_iteration > 0);
        bool noted = false;
        for (size_t k = 0; k < r->nnotes; k++)
            noted |= strstr(r->notes[k], "free reserve of device 0's stream-ordered pool") != NULL;
        assert_int_equal(noted, held);
        vr_report_free(r);
        unlink(tmp_path(name));
    }
}

/* An iteration during which an allocation failed for lack of memory is no
 * measure of what one needs: a PyTorch step that raises OutOfMemoryError
 * pops its range while the exception still holds its activations (peak =
 * end). Ten steps each keep 2 MiB and need a 16 MiB temporary; the
 * eleventh fails with its temporary live at its end. The projection keeps
 * the clean steps' 16 MiB from the 1 GiB device (it left none: step 233
 * projected for a PyTorch run that ran out in step 178), with
 * call-site-pattern iterations too (no NVTX: the temporary is the anchor). */
static vr_report *failed_last_step(const char *name, bool nvtx)
{
    vtg g;
    open_steps(&g, name);
    uint64_t t = 1000;
    for (uint64_t i = 0; i <= 10; i++) {
        if (nvtx)
            vtg_push(&g, t++, 1);
        vtg_alloc(&g, t++, 0x80000000, 16 * MiB, 5);              /* the temporary */
        vtg_alloc(&g, t++, 0x10000000 + i * 2 * MiB, 2 * MiB, 7); /* kept */
        if (i == 10)
            vtg_failed(&g, t++, 32 * MiB, 7, 0, GiB);
        else
            vtg_free(&g, t++, 0x80000000);
        if (nvtx)
            vtg_pop(&g, t++);
    }
    if (!nvtx) { /* the pattern's iteration ends at the anchor's next
                  * allocation after a free: its need measured 2 MiB */
        vtg_free(&g, t++, 0x10000000 + 20 * MiB);
        vtg_alloc(&g, t++, 0x90000000, 16 * MiB, 5);
    }
    vtg_end(&g, t, 1);
    return close_and_analyze(&g, name);
}

static void test_growth_failed_last_step(void **state)
{
    (void)state;
    for (int nvtx = 1; nvtx >= 0; nvtx--) {
        vr_report *r = failed_last_step(nvtx ? "failed_step" : "failed_pattern", nvtx);
        assert_string_equal(r->iteration_kind, nvtx ? "nvtx_range" : "call_site");
        const vr_growth *tg = &r->total_growth;
        assert_true(tg->bytes_per_iteration > MiB);
        uint64_t room = GiB - 16 * MiB;
        int64_t want = (int64_t)tg->iterations +
                       (int64_t)floor((double)(room - tg->live_bytes) / tg->bytes_per_iteration) +
                       1;
        print_message("%s: %llu iterations, %.0f B each, live %llu: step %lld (want %lld)\n",
                      r->iteration_kind, (unsigned long long)tg->iterations,
                      tg->bytes_per_iteration, (unsigned long long)tg->live_bytes,
                      (long long)tg->projected_oom_iteration, (long long)want);
        assert_int_equal(tg->projected_oom_iteration, want);
        assert_int_equal(tg->projected_oom_device, 0);
        vr_report_free(r);
        unlink(tmp_path(nvtx ? "failed_step" : "failed_pattern"));
    }
}

/* A stream-ordered pool sampled at each step's end (the recorder writes its
 * state before the range's end): ten steps each keep 2 MiB and need a 16
 * MiB temporary, and the pool holds 48 MiB above what is allocated at each
 * end (the temporary's reserve and 32 MiB it cannot reuse). The device
 * fills when the pool does: when the 20 MiB kept plus those 48 MiB reach
 * the 1 GiB device less nothing more (the reserve holds the temporary):
 * step 10 + (1024 - 68) / 2 + 1 = 489, where the allocated bytes alone
 * (20 MiB + a 16 MiB need) said 505. Without samples, 505. */
static vr_report *pool_steps(const char *name, bool sampled)
{
    vtg g;
    open_steps(&g, name);
    uint64_t t = 1000;
    for (uint64_t i = 1; i <= 10; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc_api(&g, t++, 0x80000000, 16 * MiB, 5, VT_API_CUDA_MALLOC_ASYNC);
        vtg_alloc_api(&g, t++, 0x10000000 + i * 2 * MiB, 2 * MiB, 7, VT_API_CUDA_MALLOC_ASYNC);
        vtg_free_api(&g, t++, 0x80000000, VT_API_CUDA_MALLOC_ASYNC);
        if (sampled)
            vtg_pool_stat(&g, t++, 0, i * 2 * MiB + 48 * MiB, i * 2 * MiB);
        vtg_pop(&g, t++);
    }
    vtg_end(&g, t, 0);
    return close_and_analyze(&g, name);
}

static void test_growth_pool_reserve(void **state)
{
    (void)state;
    for (int sampled = 1; sampled >= 0; sampled--) {
        const char *name = sampled ? "pool_steps" : "pool_steps_unsampled";
        vr_report *r = pool_steps(name, sampled);
        const vr_growth *tg = &r->total_growth;
        assert_int_equal(tg->iterations, 10);
        assert_true(fabs(tg->bytes_per_iteration - 2.0 * MiB) < 1.0);
        assert_int_equal(tg->projected_oom_iteration, sampled ? 489 : 505);
        assert_int_equal(tg->projected_oom_device, 0);
        vr_report_free(r);
        unlink(tmp_path(name));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_no_projection_first_step),
        cmocka_unit_test(test_growth_merged),
        cmocka_unit_test(test_no_projection_past_int64),
        cmocka_unit_test(test_growth_stairs),
        cmocka_unit_test(test_growth_nested),
        cmocka_unit_test(test_growth_pattern_words),
        cmocka_unit_test(test_growth_pattern_excess),
        cmocka_unit_test(test_growth_pattern_pool_unprojected),
        cmocka_unit_test(test_growth_pool_note_needs_reserve),
        cmocka_unit_test(test_growth_failed_last_step),
        cmocka_unit_test(test_growth_pool_reserve),
        cmocka_unit_test(test_growth_per_device),
        cmocka_unit_test(test_growth_per_device_sites),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
