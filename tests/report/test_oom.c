/* test_oom.c: out-of-memory failures (oom.c, verdict.c): the verdicts, the use outside the
 * recording, recovered and fatal failures and how many are kept; repeated
 * failures (and failed frees) counted on the one listed. */
#include "internal.h"
#include "report_test.h"
#include "run_internal.h"

static void test_verdict_capacity(void **state)
{
    (void)state;
    vr_report *r = scenario("capacity");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_int_equal(o->requested_bytes, 256 * MiB);
    assert_int_equal(o->live_allocated, 712 * MiB);
    assert_int_equal(o->batch, 64);
    assert_int_equal(o->max_batch, 60);
    assert_int_equal(o->t_ns, 500);
    assert_true(o->ntop_sites >= 2);
    assert_int_equal(o->top_sites[0].stack.id, 3);
    /* the OOM is in the first train_step: only an upper bound is known */
    assert_string_equal(o->batch_kind, "upper_bound");
    assert_non_null(strstr(o->explanation, "no training step completed, so no batch is known "
                                           "to fit: batches above 60 cannot fit (an upper bound"));
    assert_null(strstr(o->explanation, "largest batch that fits is"));
    /* ... and the commands that measure one, at half the bound */
    assert_non_null(strstr(o->explanation, "vramtrace run -o batch30.vtrace --"));
    assert_int_equal(r->failed_allocations, 1);
    vr_report_free(r);
}

/* A request larger than any device (a size_t that went negative): its
 * remedy says the size is wrong, and no batch is estimated from it; a
 * request of twice the device is still a batch too large. */
static void test_impossible_request(void **state)
{
    (void)state;
    const uint64_t sizes[] = {UINT64_MAX - 4095, 2 * GiB};
    for (int k = 0; k < 2; k++) {
        vtg g;
        const char *argv[] = {"train", "--batch", "64"};
        const char *name = k ? "impossible2" : "impossible";
        open_trace(&g, name, 3, argv);
        vtg_stack(&g, 1, 0, 0x1100);
        vtg_meminfo(&g, 1, GiB, GiB);
        vtg_push(&g, 2, 1);
        vtg_failed(&g, 3, sizes[k], 1, GiB - 64 * MiB, GiB);
        vtg_pop(&g, 4);
        vtg_end(&g, 5, 1);
        vr_report *r = close_and_analyze(&g, name);
        vr_headline hl;
        vr_headline_of(r, &hl);
        bool wrong = strstr(hl.remedy, "its size was likely computed wrong") != NULL;
        assert_true(wrong == (k == 0));
        if (k == 0) {
            assert_non_null(strstr(hl.remedy, "the request (16.00 EiB) is larger than any device"));
            assert_int_equal(r->ooms[0].max_batch, -1);
        } else {
            assert_non_null(strstr(hl.remedy, "batch"));
        }
        vr_report_free(r);
    }
}

/* A request larger than the whole device without a batch to scale (numba's
 * 1 TiB array on a 15 GiB device): its remedy says no freeing makes it fit,
 * not "the working set does not fit"; a request below the device keeps
 * that. */
static void test_request_above_device(void **state)
{
    (void)state;
    const uint64_t sizes[] = {2 * GiB, 512 * MiB};
    for (int k = 0; k < 2; k++) {
        vtg g;
        const char *name = k ? "below_device" : "above_device";
        open_steps(&g, name);
        vtg_alloc(&g, 2, 0x10000000, 600 * MiB, 5);
        vtg_failed(&g, 3, sizes[k], 7, GiB - 600 * MiB, GiB);
        vtg_end(&g, 5, 1);
        vr_report *r = close_and_analyze(&g, name);
        assert_int_equal(r->ooms[0].verdict, VR_VERDICT_CAPACITY);
        vr_headline hl;
        vr_headline_of(r, &hl);
        bool alone = strstr(hl.remedy, "the request alone (2.00 GiB) is larger than the whole "
                                       "device (1.00 GiB): no freeing makes it fit") != NULL;
        assert_int_equal(alone, k == 0);
        assert_int_equal(strstr(hl.remedy, "the working set does not fit") != NULL, k == 1);
        /* The verdict too: above the device the live data is no part of the
         * cause (it read "live data (600.00 MiB) + the request (2.00 GiB)
         * exceed the device", as if freeing it could help). */
        const char *e = r->ooms[0].explanation;
        assert_int_equal(strstr(e, "the request (2.00 GiB) alone exceeds the whole device "
                                   "(1.00 GiB): it cannot fit whatever is freed") != NULL,
                         k == 0);
        assert_int_equal(strstr(e, "live data (600.00 MiB) + the request") != NULL, k == 1);
        vr_report_free(r);
        unlink(tmp_path(name));
    }
}

static void test_verdict_leak(void **state)
{
    (void)state;
    vr_report *r = scenario("leakoom");
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_LEAK);
    assert_int_equal(r->ooms[0].top_sites[0].stack.id, 2);
    assert_non_null(strstr(r->ooms[0].explanation, "40.00 MiB per iteration"));
    vr_report_free(r);
}

/* One site's bytes grow 10 MiB a step while another's fall as much (a
 * caching allocator's segments put down to the call that found the cache
 * full): the program's bytes do not grow, so a failure is no leak (it was,
 * by the growing site alone). The same with the other site kept: a leak. */
static vr_report *moved_bytes(const char *name, bool moved)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_stack(&g, 1, 0, 0x1100);
    vtg_stack(&g, 2, 0, 0x2200);
    vtg_meminfo(&g, 1, GiB, GiB);
    uint64_t t = 10;
    for (uint64_t i = 0; i < 10; i++) {
        vtg_alloc(&g, t++, 0x100000000 + i * 16 * MiB, 16 * MiB, 1); /* site 1, 16 MiB each */
    }
    for (uint64_t i = 0; i < 8; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc(&g, t++, 0x200000000 + i * 16 * MiB, 16 * MiB, 2); /* site 2 grows */
        if (moved)
            vtg_free(&g, t++, 0x100000000 + i * 16 * MiB); /* site 1 falls */
        vtg_pop(&g, t++);
    }
    vtg_push(&g, t++, 1);
    vtg_failed_on(&g, t++, 900 * MiB, 2, 2, 0, VT_API_CUDA_MALLOC, 500 * MiB, GiB);
    vtg_pop(&g, t++);
    vtg_end(&g, t, 1);
    return close_and_analyze(&g, name);
}

static void test_verdict_leak_needs_program_growth(void **state)
{
    (void)state;
    vr_report *r = moved_bytes("moved", true);
    assert_int_equal(r->nooms, 1);
    assert_int_not_equal(r->ooms[0].verdict, VR_VERDICT_LEAK);
    vr_report_free(r);
    unlink(tmp_path("moved"));
    r = moved_bytes("kept", false);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_LEAK);
    vr_report_free(r);
    unlink(tmp_path("kept"));
}

/* Two sites grow each step: site 2 by 4 MiB (the fastest, first in the
 * headline's list), site 3 by 2 MiB on top of 300 MiB it holds from the
 * start (the most at the failure: the leak verdict's site). The remedy
 * names the verdict's site, and the other growing ones: it named the
 * fastest alone, another line than the verdict above it. */
static void test_leak_remedy_names_verdict_site(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "two_growing", 0, NULL);
    vtg_stack(&g, 2, 0, 0x2200);
    vtg_stack(&g, 3, 0, 0x3300);
    vtg_meminfo(&g, 1, GiB, GiB);
    uint64_t t = 10;
    vtg_alloc(&g, t++, 0x300000000, 300 * MiB, 3);
    for (uint64_t i = 0; i < 10; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc(&g, t++, 0x100000000 + i * 4 * MiB, 4 * MiB, 2);
        vtg_alloc(&g, t++, 0x200000000 + i * 2 * MiB, 2 * MiB, 3);
        vtg_pop(&g, t++);
    }
    vtg_push(&g, t++, 1);
    vtg_failed_on(&g, t++, 900 * MiB, 2, 2, 0, VT_API_CUDA_MALLOC, 500 * MiB, GiB);
    vtg_pop(&g, t++);
    vtg_end(&g, t, 1);
    vr_report *r = close_and_analyze(&g, "two_growing");
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_LEAK);
    assert_int_equal(r->ooms[0].top_sites[0].stack.id, 3);
    vr_headline hl;
    vr_headline_of(r, &hl);
    assert_int_equal(hl.nsites, 2);
    assert_true(hl.sites[0].bytes_per_iteration > hl.sites[1].bytes_per_iteration);
    char want[256];
    snprintf(want, sizeof want,
             "release what %s keeps alive across iterations, and what the "
             "other growing sites listed keep",
             hl.sites[1].label);
    if (strcmp(hl.remedy, want))
        fail_msg("remedy \"%s\", wanted \"%s\"", hl.remedy, want);
    vr_report_free(r);
    unlink(tmp_path("two_growing"));
}

static void test_verdict_frag(void **state)
{
    (void)state;
    vr_report *r = scenario("frag");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_FRAGMENTATION);
    assert_int_equal(o->heap_free, 50 * MiB);
    assert_int_equal(o->heap_largest_free, 10 * MiB);
    /* reserved = heap + direct outside heaps; allocated = regions + direct */
    assert_int_equal(o->live_reserved, 1000 * MiB);
    assert_int_equal(o->live_allocated, 950 * MiB);
    assert_int_equal(r->peak_reserved, 1000 * MiB);
    assert_int_equal(r->peak_allocated, 1000 * MiB); /* 900 + 10 regions of 10 */
    bool oom_frag = false;
    for (size_t i = 0; i < r->nfrag; i++)
        if (!strcmp(r->frag[i].when, "oom")) {
            oom_frag = true;
            assert_true(fabs(r->frag[i].fragmentation - 0.8) < 1e-9);
        }
    assert_true(oom_frag);
    vr_report_free(r);
}

static void test_verdict_external(void **state)
{
    (void)state;
    vr_report *r = scenario("external");
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_EXTERNAL);
    assert_int_equal(r->ooms[0].external_bytes, 574 * MiB);
    assert_int_equal(r->ooms[0].device_free_bytes, 100 * MiB);
    vr_report_free(r);
}

/* The OOM's use outside the recording: the same numbers in the model (and
 * so in JSON) as in the text: the baseline plus what appeared since. */
static void test_outside_recording_agrees(void **state)
{
    (void)state;
    vr_report *r = scenario("capacity");
    assert_true(r->nooms >= 1);
    const vr_oom *o = &r->ooms[r->nooms - 1];
    char want[128], b1[32], b2[32];
    snprintf(want, sizeof want, "%s of it used outside the recording: %s in use at the start",
             vr_format_size(o->baseline_bytes + o->external_bytes, b1, sizeof b1),
             vr_format_size(o->baseline_bytes, b2, sizeof b2));
    assert_int_equal(o->baseline_bytes, 100 * MiB);
    assert_non_null(strstr(o->explanation, want));
    vr_report_free(r);
}

/* More failures than the report keeps: the first ones and the latest are
 * listed, so the fatal failure (the last, never retried) is never lost; a
 * retry after the cap still marks only its own failure recovered. */
static void test_oom_cap_keeps_fatal(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"retries"};
    open_trace(&g, "retries", 1, argv);
    for (uint64_t i = 0; i < 1499; i++) {
        vtg_failed(&g, 100 + 2 * i, 64 * MiB, 1, 32 * MiB, GiB);
        vtg_alloc(&g, 101 + 2 * i, 0x10000000 + i * 0x1000000, 64 * MiB, 1); /* retried */
    }
    vtg_failed(&g, 5000, 512 * MiB, 1, 32 * MiB, GiB); /* the fatal one */
    vtg_end(&g, 6000, 2);
    vr_report *r = close_and_analyze(&g, "retries");
    assert_int_equal(r->failed_allocations, 1500);
    assert_int_equal(r->recovered_allocations, 1499);
    assert_int_equal(r->nooms, 1000);
    size_t fatal = vr_fatal_oom(r);
    assert_int_equal(fatal, 999);
    assert_int_equal(r->ooms[fatal].requested_bytes, 512 * MiB);
    assert_false(r->ooms[fatal].recovered);
    assert_true(r->ooms[998].recovered);
    char *json = render(vr_render_json, r);
    const char *f1 = strstr(json, "\"fatal\":true");
    assert_non_null(f1);
    assert_null(strstr(f1 + 1, "\"fatal\":true")); /* exactly one */
    free(json);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "1000 of 1500 failed allocations kept"));
    free(text);
    vr_report_free(r);
}

/* A diff renderer's output for the pair r (before, after). */
/* The fatal failure lists every site live at it, largest first (what the
 * diff's bytes at OOM per site come from), beyond its 5 top sites, up to
 * 4096 (then cut, the largest kept); a recovered failure keeps no list. */
static void test_oom_all_sites(void **state)
{
    (void)state;
    for (uint32_t sites = 7; sites <= 5000; sites += 4993) {
        vtg g;
        char name[32];
        const char *argv[] = {"sites"};
        snprintf(name, sizeof name, "sites%u", sites);
        open_trace(&g, name, 1, argv);
        for (uint32_t k = 1; k <= sites; k++) { /* site k: stack k + 1, k * 512 bytes */
            vtg_stack(&g, k + 1, 0, 0x400000 + 16 * k);
            vtg_alloc(&g, k, 0x10000000 + (uint64_t)k * 0x100000, 512 * (uint64_t)k, k + 1);
        }
        vtg_failed(&g, 9000, 64 * MiB, 2, 32 * MiB, 64 * GiB);
        vtg_alloc(&g, 9001, 0x4000000000, 64 * MiB, 2);         /* retried: recovered */
        vtg_failed(&g, 9002, 512 * MiB, 1, 32 * MiB, 64 * GiB); /* fatal */
        vtg_end(&g, 9100, 1);
        vr_report *r = close_and_analyze(&g, name);
        assert_int_equal(r->nooms, 2);
        assert_null(r->ooms[0].all_sites); /* recovered */
        const vr_oom *o = &r->ooms[vr_fatal_oom(r)];
        assert_int_equal(o->ntop_sites, 5);
        assert_non_null(o->all_sites);
        assert_int_equal(o->nall_sites, sites < 4096 ? sites : 4096);
        assert_int_equal(o->all_sites_cut, sites > 4096);
        /* largest first: site 1 also holds the retried 64 MiB */
        assert_int_equal(o->all_sites[0].bytes, 64 * MiB + 512);
        assert_int_equal(o->all_sites[1].bytes, 512 * (uint64_t)sites);
        assert_int_equal(o->all_sites[o->nall_sites - 1].bytes,
                         512 * (uint64_t)(sites < 4096 ? 2 : sites - 4094));
        for (size_t k = 2; k < o->nall_sites; k++)
            assert_true(o->all_sites[k].bytes < o->all_sites[k - 1].bytes);
        /* the diff (the run against itself) says when a list was cut */
        vr_report *pair[2] = {r, r};
        char *text = render_pair(vr_render_diff_text, pair),
             *json = render_pair(vr_render_diff_json, pair);
        const char *note = "note: at OOM before: only the fatal failure's largest sites were kept";
        assert_int_equal(strstr(text, note) != NULL, sites > 4096);
        assert_non_null(strstr(json, sites > 4096 ? "\"oom_sites_complete\":{\"before\":false"
                                                  : "\"oom_sites_complete\":{\"before\":true"));
        free(text);
        free(json);
        vr_report_free(r);
    }
}

/* A failed cudaMalloc whose retry (same thread, same size) succeeds is
 * recovered; a failure followed by a failed retry is not. */
static void test_recovered(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"retry"};
    open_trace(&g, "retry", 1, argv);
    vtg_alloc(&g, 100, 0x10000000, 500 * MiB, 1);
    vtg_failed(&g, 200, 600 * MiB, 1, 400 * MiB, GiB);
    vtg_free(&g, 300, 0x10000000); /* the cache is released */
    vtg_alloc(&g, 400, 0x20000000, 600 * MiB, 1);
    vtg_failed(&g, 500, 300 * MiB, 1, 200 * MiB, GiB);
    vtg_alloc(&g, 600, 0x60000000, 100 * MiB, 1); /* another size: not a retry */
    vtg_end(&g, 700, 0);
    vr_report *r = close_and_analyze(&g, "retry");
    assert_int_equal(r->nooms, 2);
    assert_true(r->ooms[0].recovered);
    assert_false(r->ooms[1].recovered);
    assert_int_equal(r->recovered_allocations, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vr_limits lim = {
        .max_peak = -1, .max_leaked = -1, .max_growth = -1, .max_host_leaked = -1, .no_oom = true};
    assert_int_equal(vr_check(f, r, &lim), 1);
    fclose(f);
    assert_non_null(strstr(buf, "1 failed allocation not recovered"));
    free(buf);
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"recovered\":true"));
    assert_non_null(strstr(json, "\"recovered_failed_allocations\":1"));
    free(json);
    vr_report_free(r);

    open_trace(&g, "retry_ok", 1, argv);
    vtg_failed(&g, 200, 600 * MiB, 1, 400 * MiB, GiB);
    vtg_alloc(&g, 400, 0x20000000, 600 * MiB, 1);
    vtg_end(&g, 700, 0);
    r = close_and_analyze(&g, "retry_ok");
    f = fopen("/dev/null", "w");
    assert_int_equal(vr_check(f, r, &lim), 0);
    fclose(f);
    vr_report_free(r);
}

/* A recovered failure then a fatal one: the fatal one leads the OOM
 * section (text and HTML), the recovered one is muted and says so. */
static void test_oom_fatal_first(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"fatal"};
    open_trace(&g, "fatal", 1, argv);
    vtg_alloc(&g, 100, 0x10000000, 500 * MiB, 1);
    vtg_failed(&g, 200, 600 * MiB, 1, 400 * MiB, GiB);
    vtg_free(&g, 300, 0x10000000);
    vtg_alloc(&g, 400, 0x20000000, 600 * MiB, 1); /* the retry: #1 recovered */
    vtg_failed(&g, 500, 300 * MiB, 1, 200 * MiB, GiB);
    vtg_end(&g, 700, 1);
    vr_report *r = close_and_analyze(&g, "fatal");
    assert_int_equal(vr_fatal_oom(r), 1);
    char *text = render(vr_render_text, r);
    const char *fatal = strstr(text, "FATAL #2 at");
    assert_non_null(fatal);
    assert_true(fatal < strstr(text, "#1 at"));
    assert_non_null(strstr(text, "the program then exited with status 1"));
    free(text);
    char *html = render(vr_render_html, r);
    char *rows = slice(html, "id=\"ooms\"", "</table>");
    const char *row_fatal = strstr(rows, "<tr class=\"fatal\"><td class=\"n\">#2");
    const char *row_rec = strstr(rows, "<tr class=\"recovered\"><td class=\"n\">#1");
    assert_non_null(row_fatal);
    assert_non_null(row_rec);
    assert_true(row_fatal < row_rec);
    assert_non_null(strstr(row_rec, "recovered: the program retried and went on"));
    char *fatal_row = slice(row_fatal, "<tr", "</tr>");
    assert_non_null(strstr(fatal_row, "FATAL"));
    assert_null(strstr(fatal_row, "recovered:"));
    free(fatal_row);
    free(rows);
    free(html);
    vr_report_free(r);
}

/* Failures that repeat one (the same call, request and verdict) are listed
 * as a count on it: the fatal one's repeats before it, a first failure's
 * after it. Another request or another call is listed apart. numba's 1 TiB
 * request listed 10 near-identical blocks and "... 60 more". */
static void test_oom_repeats(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "repeats", 0, NULL);
    vtg_stack(&g, 2, 0, 0x2200);
    vtg_failed(&g, 10, 600 * MiB, 1, 400 * MiB, GiB); /* #1: repeats #5 */
    vtg_failed(&g, 20, 300 * MiB, 1, 400 * MiB, GiB); /* #2: another request */
    vtg_failed(&g, 30, 600 * MiB, 1, 400 * MiB, GiB); /* #3: repeats #5 */
    vtg_failed(&g, 40, 600 * MiB, 2, 400 * MiB, GiB); /* #4: another call */
    vtg_failed(&g, 50, 300 * MiB, 1, 400 * MiB, GiB); /* #5 repeats #2 */
    vtg_failed(&g, 60, 600 * MiB, 1, 400 * MiB, GiB); /* #6: fatal */
    vtg_end(&g, 70, 1);
    vr_report *r = close_and_analyze(&g, "repeats");
    assert_int_equal(r->nooms, 6);
    assert_int_equal(vr_fatal_oom(r), 5);
    const size_t of[] = {5, SIZE_MAX, 5, SIZE_MAX, 1, SIZE_MAX};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(r->ooms[i].repeat.of, of[i]);
    assert_int_equal(r->ooms[5].repeat.n, 2);
    assert_int_equal(r->ooms[1].repeat.n, 1);
    assert_int_equal(r->ooms[3].repeat.n, 0);
    char *text = render(vr_render_text, r);
    const char *fatal = strstr(text, "FATAL #6 at");
    assert_non_null(fatal);
    assert_non_null(
        strstr(fatal, "the same failure (call, request, verdict) 2 more times: #1 at 10 ns to #3 "
                      "at 30 ns\nother failed allocations"));
    const char *two = strstr(text, "\n#2 at 20 ns: cudaMalloc of 300.00 MiB");
    assert_non_null(two);
    assert_non_null(strstr(two, "the same failure (call, request, verdict) 1 more time: #5 at "
                                "50 ns\n#4 at 40 ns"));
    assert_null(strstr(text, "\n#1 at"));
    assert_null(strstr(text, "\n#3 at"));
    assert_null(strstr(text, "\n#5 at"));
    assert_null(strstr(text, "more\n")); /* no "... N more": every failure is accounted for */
    free(text);
    char *html = render(vr_render_html, r);
    char *rows = slice(html, "id=\"ooms\"", "</table>");
    assert_non_null(strstr(rows, "<tr class=\"fatal\"><td class=\"n\">#6"));
    assert_non_null(strstr(rows, "<p class=\"repeats\">the same failure (call, request, verdict) "
                                 "2 more times: #1 at 10 ns to #3 at 30 ns</p>"));
    assert_null(strstr(rows, "<td class=\"n\">#1<br>"));
    assert_non_null(strstr(rows, "<td class=\"n\">#4<br>"));
    free(rows);
    free(html);
    vr_report_free(r);
}

/* The run view (report of a run's processes) lists a process's failures in
 * the same order, each repeat counted on the failure it repeats: JSON
 * "repeats", and the line's "the same failure ... 2 more times". */
static void test_oom_repeats_run(void **state)
{
    (void)state;
    const char *run = "0123456789abcdef";
    vtg g;
    assert_int_equal(
        vtg_open_head(&g, tmp_path("run_holder"), &(vtg_head){.pid = 100, .run_id = run}), 0);
    vtg_stack(&g, 1, 0, 0x1100);
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 5, 0x10000000, 700 * MiB, 1);
    vtg_end(&g, 100, 0);
    vr_report *r[2] = {close_and_analyze(&g, "run_holder"), NULL};
    assert_int_equal(
        vtg_open_head(&g, tmp_path("run_failer"), &(vtg_head){.pid = 200, .run_id = run}), 0);
    vtg_stack(&g, 1, 0, 0x1100);
    vtg_device(&g, 0, "SimGPU", GiB);
    for (uint64_t t = 10; t <= 30; t += 10)
        vtg_failed(&g, t, 600 * MiB, 1, 300 * MiB, GiB); /* #1, #2, #3: the same */
    vtg_failed(&g, 40, 500 * MiB, 1, 300 * MiB, GiB);    /* #4: fatal, another request */
    vtg_end(&g, 100, 1);
    r[1] = close_and_analyze(&g, "run_failer");
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(vr_render_runs(f, r, 2, NULL), 0);
    fclose(f);
    const char *first = strstr(text, "cudaMalloc of 600.00 MiB on device 0 failed at 10 ns");
    assert_non_null(first);
    assert_non_null(strstr(first, "; the same failure (call, request, verdict) 2 more times: #2 at "
                                  "20 ns to #3 at 30 ns\n"));
    assert_null(strstr(text, "failed at 20 ns"));
    free(text);
    f = open_memstream(&text, &len);
    vr_render_runs_json(f, r, 2);
    fclose(f);
    const char *fails = strstr(text, "\"failures\":[");
    assert_non_null(fails);
    size_t n = 0;
    for (const char *p = strstr(fails, "\"requested_bytes\""); p;
         p = strstr(p + 1, "\"requested_bytes\""))
        n++;
    assert_int_equal(n, 2); /* the fatal #4 and #1 with its 2 repeats, not 4 */
    assert_non_null(strstr(fails, "\"requested_bytes\":629145600,\"external_bytes\":0,\"verdict\":"
                                  "\"capacity\",\"repeats\":2"));
    free(text);
    for (int i = 0; i < 2; i++)
        vr_report_free(r[i]);
    unlink(tmp_path("run_holder"));
    unlink(tmp_path("run_failer"));
}

/* Two failures whose listings read the same but whose calls part at a frame
 * the listing leaves out (numba's first attempt and its retry, apart in
 * a folded library frame) are told apart by that frame; calls that part at
 * a listed frame need no such line. */
static void test_oom_alike(void **state)
{
    (void)state;
    for (int listed = 0; listed < 2; listed++) {
        vtg g;
        const char *name = listed ? "alike_listed" : "alike";
        open_trace(&g, name, 0, NULL);
        /* two call chains of 10 frames that part at their outermost frame
         * (index 9: past the 8 listed), or at index 2 (listed) */
        uint32_t leaf = two_chains(&g, 10, listed ? 2 : 9);
        vtg_failed(&g, 10, 600 * MiB, leaf, 400 * MiB, GiB);
        vtg_failed(&g, 20, 600 * MiB, leaf + 20, 400 * MiB, GiB);
        vtg_end(&g, 30, 1);
        vr_report *r = close_and_analyze(&g, name);
        assert_int_equal(r->nooms, 2);
        assert_int_equal(r->ooms[0].repeat.of, SIZE_MAX); /* another call: not a repeat */
        char *text = render(vr_render_text, r);
        const char *line = strstr(text, "not the same call as #2: frame 10 (folded) is ");
        assert_int_equal(line != NULL, !listed);
        if (line)
            assert_non_null(strstr(line, "10900 here, 0x10910 there\n"));
        free(text);
        char *html = render(vr_render_html, r);
        assert_int_equal(strstr(html, "<p class=\"alike\">not the same call as #2") != NULL,
                         !listed);
        free(html);
        /* a failure from a host pool is another request: no line however
         * alike the calls read */
        char buf[512];
        ((vr_oom *)r->ooms)[1].host_pool = true;
        assert_string_equal(vr_oom_alike_text(r, 1, 0, 8, buf, sizeof buf), "");
        ((vr_oom *)r->ooms)[1].host_pool = false;
        assert_int_equal(vr_oom_alike_text(r, 1, 0, 8, buf, sizeof buf)[0] != 0, !listed);
        vr_report_free(r);
    }
}

/* Failed frees that repeat one (the same function, error, call and kind of
 * address; the addresses differ) are counted on it, as failed allocations
 * are: graphs_random listed 10 of its 120 identical frees during a capture
 * and "... 110 more". A free of a live allocation's address, or from
 * another call, is listed apart. */
static void test_free_failed_repeats(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "free_repeats", 0, NULL);
    vtg_stack(&g, 2, 0, 0x2200);
    vtg_string(&g, 2, "cudaFree");
    vtg_alloc(&g, 5, 0x10000000, MiB, 1);
    vtg_free_failed(&g, 10, 0x20000000, 1, 1, 2, 0); /* #1: nothing live there */
    vtg_free_failed(&g, 20, 0x20001000, 1, 1, 2, 0); /* #2: repeats #1 */
    vtg_free_failed(&g, 30, 0x10000000, 1, 1, 2, 0); /* #3: a live allocation there */
    vtg_free_failed(&g, 40, 0x20002000, 1, 2, 2, 0); /* #4: another call */
    vtg_free_failed(&g, 50, 0x20003000, 1, 1, 2, 0); /* #5: repeats #1 */
    vtg_end(&g, 60, 0);
    vr_report *r = close_and_analyze(&g, "free_repeats");
    assert_int_equal(r->nfree_failed, 5);
    const size_t of[] = {SIZE_MAX, 0, SIZE_MAX, SIZE_MAX, 0};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(r->free_failed[i].repeat.of, of[i]);
    assert_int_equal(r->free_failed[0].repeat.n, 2);
    assert_int_equal(r->free_failed[2].live_kind, VT_KIND_DEVICE);
    assert_int_equal(r->free_failed[0].live_kind, -1);
    char *text = render(vr_render_text, r);
    const char *one = strstr(text, "\n#1 at 10 ns: cudaFree(0x20000000) failed with error 1");
    assert_non_null(one);
    assert_non_null(strstr(one, "the same failed free (call, error, kind of address) 2 more "
                                "times: #2 at 20 ns to #5 at 50 ns\n#3 at 30 ns"));
    assert_non_null(strstr(text, "\n#4 at 40 ns"));
    assert_null(strstr(text, "\n#2 at"));
    assert_null(strstr(text, "\n#5 at"));
    assert_null(strstr(text, "more (--json")); /* every failed free is accounted for */
    free(text);
    char *html = render(vr_render_html, r);
    char *rows = slice(html, "id=\"failed_frees\"", "</table>");
    assert_non_null(strstr(rows, "<p class=\"repeats\">the same failed free (call, error, kind "
                                 "of address) 2 more times: #2 at 20 ns to #5 at 50 ns</p>"));
    assert_null(strstr(rows, "<tr><td>#2, "));
    assert_non_null(strstr(rows, "<tr><td>#3, "));
    free(rows);
    free(html);
    vr_report_free(r);
}

/* A failure on device 0 of a two-device run: its top sites, shares and
 * verdict are the device's own. Device 1's larger site (stack 3), growing
 * over every iteration, was once named first with 2000% of device 0's live
 * bytes, and made device 0's failure a leak. */
static void test_oom_other_device(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "other_device", 0, NULL);
    vtg_device(&g, 1, "SimGPU", 1024 * MiB);
    vtg_stack(&g, 2, 0, 0x1200);
    vtg_stack(&g, 3, 0, 0x1300);
    vtg_alloc_on(&g, 10, 0x10000000, 10 * MiB, 2, 0, VT_API_UNKNOWN);
    vtg_alloc_on(&g, 20, 0x11000000, 5 * MiB, 1, 0, VT_API_UNKNOWN);
    for (uint64_t i = 0; i < 4; i++) { /* 50 MiB more on device 1 each step */
        vtg_push(&g, 100 + 100 * i, 1);
        vtg_alloc_on(&g, 110 + 100 * i, 0x20000000 + i * 0x4000000, 50 * MiB, 3, 1, VT_API_UNKNOWN);
        vtg_pop(&g, 190 + 100 * i);
    }
    vtg_failed_on(&g, 600, 2048 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC, 1009 * MiB, 1024 * MiB);
    vtg_end(&g, 700, 1);
    vr_report *r = close_and_analyze(&g, "other_device");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->live_allocated, 15 * MiB);
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_int_equal(o->ntop_sites, 2);
    assert_int_equal(o->top_sites[0].stack.id, 2);
    assert_int_equal(o->top_sites[0].bytes, 10 * MiB);
    assert_int_equal(o->top_sites[1].stack.id, 1);
    assert_int_equal(o->top_sites[1].bytes, 5 * MiB);
    assert_non_null(strstr(o->explanation, "(10.00 MiB, 67%)"));
    vr_report_free(r);
    unlink(tmp_path("other_device"));
}

/* An 8 MiB stream-ordered failure on a device of total_mib with free_mib
 * free, while 100 MiB of cudaMalloc and 30 MiB from the pool are live, and
 * the pool holds 32 MiB: the report of it. */
static vr_report *pool_failure(const char *name, uint64_t total_mib, uint64_t free_mib)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 100 * MiB, 1);
    vtg_alloc_api(&g, 15, 0x20000000, 30 * MiB, 1, VT_API_CUDA_MALLOC_ASYNC);
    vtg_pool_stat(&g, 20, 0x5000, 32 * MiB, 30 * MiB);
    vtg_failed_on(&g, 20, 8 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC_ASYNC, free_mib * MiB,
                  total_mib * MiB);
    vtg_end(&g, 30, 1);
    return close_and_analyze(&g, name);
}

/* A pool that refuses a request while the device has room for it as a new
 * segment is at a limit of its own (cudaMemPoolProps.maxSize; corpus.random
 * found them): the explanation said the request exceeded a device with
 * 14 GiB free, or that the device's free memory was fragmented. Without room
 * on the device, the device's capacity explains it as before. */
static void test_oom_pool_limit(void **state)
{
    (void)state;
    vr_report *r = pool_failure("pool_limit", 1024, 892);
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_true(o->has_pool);
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_non_null(strstr(o->explanation, "the device had 892.00 MiB free, room for the 8.00 "
                                           "MiB requested, but the memory pool (32.00 MiB "
                                           "reserved, 30.00 MiB in use)"));
    assert_null(strstr(o->explanation, "exceed the device"));
    vr_headline h;
    vr_headline_of(r, &h);
    assert_non_null(strstr(h.remedy, "cudaMemPoolProps.maxSize"));
    vr_report_free(r);
    unlink(tmp_path("pool_limit"));

    /* no 8 MiB segment fits, and the pool's 2 MiB of free reserve with the
     * device's 5 MiB are less than the request: the device is full */
    r = pool_failure("pool_full_device", 137, 5);
    o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_non_null(strstr(o->explanation, "exceed the device"));
    vr_headline_of(r, &h);
    assert_null(strstr(h.remedy, "maxSize"));
    vr_report_free(r);
    unlink(tmp_path("pool_full_device"));
}

/* A request_mib failure on a 1 GiB device: 900 MiB of cudaMalloc, and a
 * 100 MiB heap (a caching allocator's segment) whose ten 10 MiB regions
 * are live but for two apart (20 MiB free in 10 MiB holes), so 24 MiB
 * free on the device: the report of it. */
static vr_report *split_failure(const char *name, uint64_t request_mib)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_meminfo(&g, 1, GiB, GiB);
    vtg_alloc(&g, 10, 0x200000000, 900 * MiB, 1);
    vtg_alloc(&g, 20, 0x10000000, 100 * MiB, 1);
    vtg_heap(&g, 21, 1, 0x10000000, 100 * MiB);
    for (uint64_t i = 0; i < 10; i++)
        vtg_region(&g, 30 + i, 1, 0x10000000 + i * 10 * MiB, 10 * MiB, 1);
    vtg_region_free(&g, 50, 1, 0x10000000 + 2 * 10 * MiB);
    vtg_region_free(&g, 51, 1, 0x10000000 + 6 * 10 * MiB);
    vtg_failed(&g, 60, request_mib * MiB, 1, 24 * MiB, GiB);
    vtg_end(&g, 70, 1);
    return close_and_analyze(&g, name);
}

/* The free memory a request needs split between the cache's holes and the
 * device (PyTorch's "reserved but unallocated"), or in a hole the allocator
 * did not take: fragmentation. The explanation said "live data (980.00 MiB)
 * + the request (30.00 MiB) exceed the device (1.00 GiB ...)", which they
 * do not. With more than the two together, capacity, and then its sum does
 * exceed the device. */
static void test_verdict_split(void **state)
{
    (void)state;
    vr_report *r = split_failure("split", 30);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->heap_free, 20 * MiB);
    assert_int_equal(o->heap_largest_free, 10 * MiB);
    assert_int_equal(o->live_allocated, 980 * MiB);
    assert_int_equal(o->verdict, VR_VERDICT_FRAGMENTATION);
    assert_non_null(strstr(o->explanation, "the device had 24.00 MiB free and the registered "
                                           "heaps 20.00 MiB in free blocks (the largest 10.00 "
                                           "MiB): together 44.00 MiB for the 30.00 MiB "
                                           "requested"));
    assert_null(strstr(o->explanation, "exceed the device"));
    vr_report_free(r);
    unlink(tmp_path("split"));

    /* a 10 MiB request the heaps' 10 MiB holes could take, yet the
     * allocator asked the device (another pool's blocks): fragmentation */
    r = split_failure("split_pool", 10);
    o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_FRAGMENTATION);
    assert_non_null(strstr(o->explanation, "the registered heaps hold 20.00 MiB free, among them "
                                           "a block of 10.00 MiB, no smaller than the 10.00 MiB "
                                           "requested, which the allocator did not take"));
    vr_report_free(r);
    unlink(tmp_path("split_pool"));

    r = split_failure("split_full", 50);
    o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_true(o->live_allocated + o->requested_bytes + o->baseline_bytes + o->external_bytes >
                o->device_total_bytes);
    assert_non_null(strstr(o->explanation, "live data (980.00 MiB) + the request (50.00 MiB) "
                                           "exceed the device"));
    vr_report_free(r);
    unlink(tmp_path("split_full"));
}

/* 300 live allocations of 3 MiB (each takes 4 MiB of a real device: its
 * 2 MiB granularity), then a 3 GiB request on a 4 GiB device with `free_mib`
 * free: the report of it. */
static vr_report *rounded_failure(const char *name, uint64_t free_mib)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_meminfo(&g, 1, 4096 * MiB, 4096 * MiB);
    for (uint64_t i = 0; i < 300; i++)
        vtg_alloc(&g, 10 + i, 0x100000000 + i * 4 * MiB, 3 * MiB, 1);
    vtg_failed_on(&g, 400, 3072 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC, free_mib * MiB, 4096 * MiB);
    vtg_end(&g, 500, 1);
    return close_and_analyze(&g, name);
}

/* Device use that the driver's rounding of the recorded allocations
 * explains is not use outside the process: 300 MiB of it made the verdict
 * "external" (other processes), where the program's own allocations took
 * it. Beyond what rounding can take, the verdict stays external. */
static void test_oom_rounding_not_external(void **state)
{
    (void)state;
    vr_report *r = rounded_failure("rounded", 4096 - 300 * 4);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->external_bytes, 300 * MiB);
    assert_int_equal(o->rounding_bytes, 300 * MiB);
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_non_null(strstr(o->explanation, "300.00 MiB since, of which up to 300.00 MiB is the "
                                           "driver's rounding of the recorded allocations"));
    vr_report_free(r);
    unlink(tmp_path("rounded"));

    r = rounded_failure("rounded_and_more", 4096 - 300 * 4 - 500);
    o = &r->ooms[0];
    assert_int_equal(o->external_bytes, 800 * MiB);
    assert_int_equal(o->verdict, VR_VERDICT_EXTERNAL);
    vr_report_free(r);
    unlink(tmp_path("rounded_and_more"));
}

/* A failed allocation call of `error` of `mib` MiB at ts (ns). */
static void failed_at(vtg *g, uint64_t ts, uint64_t mib, int32_t error)
{
    vtg_failed_on(g, ts, mib * MiB, 1, error, 0, VT_API_CUDA_MALLOC, 900 * MiB, 1024 * MiB);
}

/* A failed allocation with another error than out of memory (1: an invalid
 * argument; 700: a kernel faulted earlier and every call fails) is no OOM:
 * it was once reported as "OUT OF MEMORY (capacity): live data + the request
 * exceed the device" and could be the run's fatal failure. It is listed as
 * not out of memory, is never fatal, and the out-of-memory failure before it
 * stays the fatal one. */
static void test_oom_other_errors(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "other_errors", 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 100 * MiB, 1);
    failed_at(&g, 20, 2048, 2);
    failed_at(&g, 30, 0, 1);
    failed_at(&g, 40, 1, 700);
    vtg_end(&g, 50, 1);
    vr_report *r = close_and_analyze(&g, "other_errors");
    assert_int_equal(r->nooms, 3);
    assert_int_equal(r->failed_allocations, 3);
    assert_int_equal(r->error_allocations, 2);
    assert_int_equal(vr_unrecovered_ooms(r), 1); /* what check --no-oom and diff count */
    assert_int_equal(vr_fatal_oom(r), 0);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_CAPACITY);
    assert_int_equal(r->ooms[1].verdict, VR_VERDICT_ERROR);
    assert_non_null(strstr(r->ooms[1].explanation, "not out of memory: the call failed with "
                                                   "error 1 (invalid value"));
    assert_non_null(strstr(r->ooms[2].explanation, "error 700 (illegal address"));
    vr_headline h;
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "oom");
    assert_string_equal(h.cause, "capacity");
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "failed: 3 (0 recovered, 2 not out of memory)"));
    assert_non_null(
        strstr(text, "-- Out of memory (3; 2 of the failed allocations not out of memory) --"));
    assert_null(strstr(text, "verdict: error"));
    free(text);
    vr_report_free(r);
    unlink(tmp_path("other_errors"));

    open_trace(&g, "only_errors", 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 100 * MiB, 1);
    failed_at(&g, 20, 1, 700);
    vtg_end(&g, 50, 1);
    r = close_and_analyze(&g, "only_errors");
    assert_int_equal(vr_fatal_oom(r), SIZE_MAX);
    assert_int_equal(vr_unrecovered_ooms(r), 0);
    vr_headline_of(r, &h);
    assert_string_not_equal(h.kind, "oom");
    vr_limits lim = {
        .max_peak = -1, .max_leaked = -1, .max_host_leaked = -1, .max_growth = -1, .no_oom = true};
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    assert_int_equal(vr_check(null, r, &lim), 0);
    fclose(null);
    vr_report_free(r);
    unlink(tmp_path("only_errors"));
}

/* The initialisation error (3) in a process forked without exec is the
 * child of a process that initialised CUDA: the explanation says so, with
 * the parent's pid and the remedy; elsewhere error 3 is only named. A
 * failure whose cudaMemGetInfo failed too (0 of 0) has its device's free
 * bytes unknown, not 0 B. */
static void test_oom_fork_child(void **state)
{
    (void)state;
    vtg g;
    const char *fork_words = "forked without exec (from pid 4141)";
    assert_int_equal(vtg_open_head(&g, tmp_path("fork_child"),
                                   &(vtg_head){.ppid = 4141, .flags = VT_HDR_CHILD_AFTER_FORK}),
                     0);
    vtg_failed_on(&g, 20, 4096, 1, 3, 0, VT_API_CUDA_MALLOC, 0, 0);
    vtg_failed_on(&g, 30, 4096, 1, 1, 0, VT_API_CUDA_MALLOC, 0, 0);
    vtg_end(&g, 50, 0);
    vr_report *r = close_and_analyze(&g, "fork_child");
    assert_true(r->forked);
    assert_int_equal(r->ppid, 4141);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_ERROR);
    assert_non_null(strstr(r->ooms[0].explanation, "error 3 (initialization error"));
    assert_non_null(strstr(r->ooms[0].explanation, fork_words));
    assert_non_null(strstr(r->ooms[0].explanation, "\"spawn\""));
    assert_null(strstr(r->ooms[1].explanation, fork_words)); /* error 1: not the fork's */
    vr_headline h;
    vr_headline_of(r, &h); /* sound memory, but no allocation worked: no "none needed" */
    assert_string_equal(h.kind, "healthy");
    assert_non_null(strstr(h.remedy, "none for memory; but 2 allocations failed with another "
                                     "error than out of memory, the first with error 3"));
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "failed (error 3); device free unknown\n"));
    assert_null(strstr(text, "device free 0 B of 0 B"));
    free(text);
    vr_report_free(r);
    unlink(tmp_path("fork_child"));

    assert_int_equal(vtg_open_head(&g, tmp_path("fork_child_no_ppid"),
                                   &(vtg_head){.flags = VT_HDR_CHILD_AFTER_FORK}),
                     0);
    vtg_failed_on(&g, 20, 4096, 1, 3, 0, VT_API_CUDA_MALLOC, 0, 0);
    vtg_end(&g, 50, 0);
    r = close_and_analyze(&g, "fork_child_no_ppid"); /* parent unknown: no "pid 0" */
    assert_non_null(strstr(r->ooms[0].explanation, "forked without exec, and a child"));
    vr_report_free(r);
    unlink(tmp_path("fork_child_no_ppid"));

    open_trace(&g, "not_fork_child", 0, NULL);
    failed_at(&g, 20, 1, 3);
    vtg_end(&g, 50, 0);
    r = close_and_analyze(&g, "not_fork_child");
    assert_false(r->forked);
    assert_non_null(strstr(r->ooms[0].explanation, "error 3 (initialization error"));
    assert_null(strstr(r->ooms[0].explanation, "forked"));
    text = render(vr_render_text, r);
    assert_non_null(strstr(text, "device free 900.00 MiB of 1.00 GiB"));
    free(text);
    vr_report_free(r);
    unlink(tmp_path("not_fork_child"));
}

/* A cudaMalloc refused during a CUDA graph capture (900, "operation not
 * permitted when stream is capturing") is no OOM, and its explanation says
 * what the capture mode forbids and how to allocate instead. */
static void test_oom_capture_refused(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "capture_refused", 0, NULL);
    failed_at(&g, 20, 48, 900);
    vtg_end(&g, 50, 0);
    vr_report *r = close_and_analyze(&g, "capture_refused");
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_ERROR);
    assert_non_null(strstr(r->ooms[0].explanation, "error 900 (operation not permitted when a "
                                                   "stream is capturing"));
    assert_non_null(strstr(r->ooms[0].explanation, "cudaStreamCaptureModeRelaxed"));
    assert_non_null(strstr(r->ooms[0].explanation, "the device had 900.00 MiB free"));
    vr_report_free(r);
    unlink(tmp_path("capture_refused"));
}

/* A failure whose memory sample failed too (the record's free and total 0:
 * cuMemAlloc after cuDevicePrimaryCtxReset, error 709, when cuMemGetInfo has
 * no context either) on a device the trace knows (15 GiB): its free bytes
 * are unknown. The report filled the total in from the device and then said
 * "the device had 0 B free" (corpus.contexts, against the sim's ledger). */
static void test_oom_free_unknown(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "free_unknown", 0, NULL);
    vtg_failed_on(&g, 20, MiB, 1, 709, 0, VT_API_CU_MEM_ALLOC, 0, 0);
    vtg_end(&g, 50, 0);
    vr_report *r = close_and_analyze(&g, "free_unknown");
    assert_false(r->ooms[0].free_known);
    assert_null(strstr(r->ooms[0].explanation, "the device had"));
    assert_true(r->ooms[0].device_total_bytes > 0); /* the device record's */
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"device_free_bytes\":null"));
    free(json);
    vr_report_free(r);
    unlink(tmp_path("free_unknown"));
}

/* A failure of pinned host memory (cudaMallocHost, device -1): host RAM, not
 * the device's. It was explained as live data + the request exceeding the
 * current device (whose free bytes the failure sampled), with a device site
 * at 10485760000% of 0 B; its live data are now the pinned bytes, its sites
 * the pinned allocations', and the text says the device has no part in it. */
static void test_oom_pinned_host(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "pinned_host", 0, NULL);
    vtg_stack(&g, 2, 0, 0x1200);
    vtg_alloc(&g, 10, 0x10000000, 10 * MiB, 1);
    vtg_alloc_on(&g, 20, 0x7f0000000000, 100 * MiB, 2, -1, VT_API_CUDA_MALLOC_HOST);
    vtg_failed_on(&g, 30, 8192 * MiB, 2, 2, -1, VT_API_CUDA_MALLOC_HOST, 900 * MiB, 1024 * MiB);
    vtg_end(&g, 50, 1);
    vr_report *r = close_and_analyze(&g, "pinned_host");
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_int_equal(o->live_allocated, 100 * MiB);
    assert_int_equal(o->ntop_sites, 1);
    assert_int_equal(o->top_sites[0].stack.id, 2);
    assert_non_null(strstr(o->explanation, "pinned host memory: 100.00 MiB of it live"));
    assert_non_null(strstr(o->explanation, "the device has no part in it"));
    assert_non_null(strstr(o->explanation, "(100.00 MiB, 100%)"));
    vr_headline h2;
    vr_headline_of(r, &h2);
    assert_non_null(strstr(h2.text, "of pinned host memory failed"));
    assert_non_null(strstr(h2.remedy, "pin less host memory"));
    vr_report_free(r);
    unlink(tmp_path("pinned_host"));
}

/* A healthy run that leaked pinned host memory and had a failed allocation
 * of another error: its headline said "nothing leaked ... no failed
 * allocation". */
static void test_healthy_says_what_it_saw(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "healthy_truth", 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 10 * MiB, 1);
    vtg_alloc_on(&g, 20, 0x7f0000000000, 5 * MiB, 1, -1, VT_API_CUDA_MALLOC_HOST);
    failed_at(&g, 30, 1, 1);
    vtg_free(&g, 40, 0x10000000);
    vtg_end(&g, 50, 0);
    vr_report *r = close_and_analyze(&g, "healthy_truth");
    vr_headline hl;
    vr_headline_of(r, &hl);
    assert_string_equal(hl.kind, "healthy");
    assert_non_null(
        strstr(hl.text, "no device memory leaked (5.00 MiB of pinned host memory was)"));
    assert_non_null(strstr(hl.text, "no out-of-memory failure left unrecovered (1 failed "
                                    "allocation: 0 recovered, 1 not out of memory)"));
    assert_null(strstr(hl.text, "nothing leaked"));
    vr_report_free(r);
    unlink(tmp_path("healthy_truth"));
}

/* A run without a memory failure whose program failed: the headline says
 * so instead of HEALTHY or LEAKED AT EXIT (an allocator's own limit raises
 * out of memory with no failing CUDA call; a crash leaves memory live);
 * the same trace at exit 0 is a leak. */
static void test_failed_exit_not_healthy(void **state)
{
    (void)state;
    for (int status = 0; status <= 1; status++) {
        vtg g;
        open_trace(&g, "failed_exit", 0, NULL);
        vtg_alloc(&g, 10, 0x10000000, 10 * MiB, 1);
        vtg_alloc(&g, 20, 0x20000000, MiB, 1);
        vtg_free(&g, 40, 0x10000000);
        vtg_end(&g, 50, status);
        vr_report *r = close_and_analyze(&g, "failed_exit");
        vr_headline hl;
        vr_headline_of(r, &hl);
        if (status) { /* the 1 MiB live at a failed exit is told, not the verdict */
            assert_string_equal(hl.kind, "exited");
            assert_non_null(strstr(hl.text, "EXITED WITH STATUS 1, NO MEMORY FAILURE SEEN: "
                                            "peak reserved 11.00 MiB"));
            assert_non_null(strstr(hl.text, "1.00 MiB of device memory in 1 allocation live at "
                                            "exit"));
            assert_non_null(strstr(hl.remedy, "set_per_process_memory_fraction"));
        } else {
            assert_string_equal(hl.kind, "leaked");
            assert_non_null(strstr(hl.text, "LEAKED AT EXIT: 1.00 MiB"));
        }
        vr_report_free(r);
        unlink(tmp_path("failed_exit"));
    }
}

/* Killed by a signal: SIGKILL's remedy names the out-of-memory killer (what
 * sends it with no device failure), another signal's does not. */
static void test_killed_remedy(void **state)
{
    (void)state;
    const int sigs[] = {9, 15};
    for (int i = 0; i < 2; i++) {
        vtg g;
        open_trace(&g, "killed", 0, NULL);
        vtg_alloc(&g, 10, 0x10000000, 10 * MiB, 1);
        vtg_end_signal(&g, 50, sigs[i]);
        vr_report *r = close_and_analyze(&g, "killed");
        vr_headline hl;
        vr_headline_of(r, &hl);
        assert_string_equal(hl.kind, "exited");
        char want[64];
        snprintf(want, sizeof want, "KILLED BY SIGNAL %d, NO MEMORY FAILURE SEEN", sigs[i]);
        assert_non_null(strstr(hl.text, want));
        bool oom_killer = strstr(hl.remedy, "out-of-memory killer") != NULL;
        assert_int_equal(oom_killer, sigs[i] == 9);
        vr_report_free(r);
        unlink(tmp_path("killed"));
    }
}

/* A trace without the end-of-process record (killed by SIGKILL, cut short):
 * what is live at its end is not called leaked at exit. */
static void test_no_end_not_leaked(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "no_end", 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 10 * MiB, 1);
    vr_report *r = close_and_analyze(&g, "no_end");
    vr_headline hl;
    vr_headline_of(r, &hl);
    assert_string_equal(hl.kind, "no_end");
    assert_non_null(strstr(hl.text, "NO END OF PROCESS RECORDED"));
    assert_non_null(strstr(hl.text, "10.00 MiB of device memory in 1 allocation live when the "
                                    "trace ends"));
    assert_null(strstr(hl.text, "LEAKED"));
    assert_non_null(strstr(hl.remedy, "not a leak"));
    vr_report_free(r);
    unlink(tmp_path("no_end"));
}

/* A VMM handle's creation (cuMemCreate) is recovered only when the retry's
 * handle of the same size is mapped: PyTorch's expandable segments create a
 * request's 20 MiB pages one by one and, when one fails, release the pages
 * created for it unmapped. Before, the next page of the retry "recovered"
 * every failure (torch_random_oom_4_expandable: 50 of 52 failures
 * recovered, where PyTorch raised 26 errors). */
static void test_vmm_recovered_when_mapped(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "vmm_retry", 0, NULL);
    vtg_failed_on(&g, 10, 20 * MiB, 1, 2, 0, VT_API_CU_MEM_CREATE, 10 * MiB, GiB);
    vtg_alloc_api(&g, 20, 0x10, 20 * MiB, 1, VT_API_CU_MEM_CREATE); /* the retry's page */
    vtg_failed_on(&g, 30, 20 * MiB, 1, 2, 0, VT_API_CU_MEM_CREATE, 10 * MiB, GiB);
    vtg_free_api(&g, 40, 0x10, VT_API_CU_MEM_CREATE); /* given back unmapped: raised */
    vtg_alloc_api(&g, 50, 0x20, 20 * MiB, 1, VT_API_CU_MEM_CREATE); /* a new request */
    vtg_failed_on(&g, 60, 20 * MiB, 1, 2, 0, VT_API_CU_MEM_CREATE, 10 * MiB, GiB);
    vtg_alloc_api(&g, 70, 0x30, 20 * MiB, 1, VT_API_CU_MEM_CREATE); /* its retry, mapped */
    vtg_vmm_map(&g, 80, 0x30, 0x7f0000000000ull, 20 * MiB);
    vtg_end(&g, 90, 0);
    vr_report *r = close_and_analyze(&g, "vmm_retry");
    assert_int_equal(r->nooms, 3);
    assert_false(r->ooms[0].recovered); /* its retry failed */
    assert_false(r->ooms[1].recovered); /* its retry's handle was released unmapped */
    assert_true(r->ooms[2].recovered);  /* mapped */
    assert_int_equal(r->recovered_allocations, 1);
    /* the pages each failed mapping had made before its failed one */
    assert_int_equal(r->ooms[0].mapping_bytes, 0);
    assert_int_equal(r->ooms[1].mapping_bytes, 20 * MiB);
    assert_int_equal(r->ooms[2].mapping_bytes, 20 * MiB); /* 0x10 was given back */
    assert_non_null(strstr(r->ooms[1].explanation, "this call is one page of a mapping: 20.00 MiB "
                                                   "of pages were created for it before this one "
                                                   "failed"));
    assert_null(strstr(r->ooms[0].explanation, "one page of a mapping"));
    vr_report_free(r);
    unlink(tmp_path("vmm_retry"));
}

/* One 512 MiB out-of-memory failure never retried, then the end of the
 * process with status: the report of it and its text and JSON. */
static vr_report *one_failure(const char *name, int status, char **text, char **json)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_alloc(&g, 10, 0x10000000, 100 * MiB, 1);
    failed_at(&g, 20, 512, 2);
    vtg_alloc(&g, 30, 0x20000000, 10 * MiB, 1); /* the program went on */
    vtg_end(&g, 50, status);
    vr_report *r = close_and_analyze(&g, name);
    *text = render(vr_render_text, r);
    *json = render(vr_render_json, r);
    return r;
}

static void one_failure_done(const char *name, vr_report *r, char *text, char *json)
{
    free(text);
    free(json);
    vr_report_free(r);
    unlink(tmp_path(name));
}

/* A program that catches the error (PyTorch's OutOfMemoryError in a try,
 * a CUDA program that gives a request up) and exits with status 0 did not
 * die of it: the report called its last failure FATAL and the run OUT OF
 * MEMORY (torch_random_oom_1 found it). Exiting with status 1 after it
 * keeps FATAL. */
static void test_oom_handled(void **state)
{
    (void)state;
    char *text, *json;
    vr_report *r = one_failure("handled", 0, &text, &json);
    assert_true(vr_oom_handled(r));
    assert_int_equal(vr_fatal_oom(r), 0); /* still the failure listed first */
    vr_headline h;
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "oom_handled");
    assert_string_equal(h.cause, "capacity");
    assert_non_null(strstr(h.text, "OUT OF MEMORY, HANDLED (capacity): cudaMalloc of 512.00 MiB"));
    assert_non_null(strstr(h.text, "; the program went on and exited with status 0"));
    assert_non_null(strstr(text, "HANDLED #1 at "));
    assert_null(strstr(text, "FATAL"));
    assert_non_null(strstr(json, "\"fatal\":false"));
    assert_null(strstr(json, "\"fatal\":true"));
    char *html = render(vr_render_html, r);
    assert_non_null(strstr(html, "HANDLED: the last failure that was not recovered; the program "
                                 "went on and exited with status 0"));
    assert_null(strstr(html, "FATAL"));
    free(html);
    one_failure_done("handled", r, text, json);

    r = one_failure("died", 1, &text, &json);
    assert_false(vr_oom_handled(r));
    vr_headline_of(r, &h);
    assert_string_equal(h.kind, "oom");
    assert_null(strstr(h.text, "HANDLED"));
    assert_non_null(strstr(text, "FATAL #1 at "));
    assert_non_null(strstr(text, "the program then exited with status 1"));
    assert_non_null(strstr(json, "\"fatal\":true"));
    one_failure_done("died", r, text, json);
}

/* The device's use outside the recording at the first memory sample, when a
 * stream-ordered pool already reserved more than its allocations use (32 MiB
 * for a 1 MiB tensor): the pool_stat written with the sample (trace version
 * 8) makes its 31 MiB of free reserve the recording's. Without it, the
 * reserve was counted as outside the recording (torch_random_oom_3_tensors
 * found 30.84 MiB too many). */
static uint64_t baseline_with(const char *name, bool pool_sample)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_alloc_api(&g, 10, 0x20000000, MiB, 1, VT_API_CUDA_MALLOC_ASYNC);
    if (pool_sample)
        vtg_pool_stat(&g, 11, 0x5000, 32 * MiB, MiB);
    vtg_meminfo(&g, 12, GiB - 300 * MiB - 32 * MiB, GiB); /* 300 MiB: the context */
    vtg_failed_on(&g, 20, 2 * GiB, 1, 2, 0, VT_API_CUDA_MALLOC, GiB - 300 * MiB - 32 * MiB, GiB);
    vtg_end(&g, 30, 1);
    vr_report *r = close_and_analyze(&g, name);
    assert_int_equal(r->nooms, 1);
    assert_false(r->ooms[0].has_pool); /* the sample's pool_stat is not the failure's */
    uint64_t base = r->ooms[0].baseline_bytes;
    vr_report_free(r);
    unlink(tmp_path(name));
    return base;
}

static void test_pool_sample_baseline(void **state)
{
    (void)state;
    assert_int_equal(baseline_with("pool_sample", true), 300 * MiB);
    assert_int_equal(baseline_with("no_pool_sample", false), 331 * MiB);
}

/* A device's first memory sample taken while allocations are live (a second
 * device first asked after the program used it): the driver's rounding of
 * those allocations (100 B take 512 B; 3 MiB take 4 MiB) is the recording's,
 * not use outside it. The baseline kept it (412 B, then 1 MiB more here),
 * and every later failure's outside_recording_bytes were too high by it once
 * those allocations were freed (a PYTORCH_NO_CUDA_MEMORY_CACHING=1 run on
 * two devices: 165,664 B). */
static void test_baseline_rounding(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "rounding", 0, NULL);
    vtg_alloc(&g, 10, 0x20000000, 100, 1);
    vtg_alloc(&g, 11, 0x30000000, 3 * MiB, 1);
    vtg_meminfo(&g, 12, GiB - 300 * MiB - 512 - 4 * MiB, GiB); /* 300 MiB: the context */
    vtg_free(&g, 13, 0x20000000);
    vtg_free(&g, 14, 0x30000000);
    vtg_failed_on(&g, 20, 2 * GiB, 1, 2, 0, VT_API_CUDA_MALLOC, GiB - 300 * MiB, GiB);
    vtg_end(&g, 30, 1);
    vr_report *r = close_and_analyze(&g, "rounding");
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].baseline_bytes, 300 * MiB);
    assert_int_equal(r->ooms[0].baseline_bytes + r->ooms[0].external_bytes, 300 * MiB);
    vr_report_free(r);
    unlink(tmp_path("rounding"));
}

/* A leak of 4 MiB a step beside a 60 MiB temporary, from a stream-ordered
 * pool: at the failure the pool holds reserve (reserve_mib) beyond its 60
 * MiB used, and the rest of the 2 GiB device but 59 MiB is used outside the
 * recording. With 1.2 GiB of reserve free and no piece of 60 MiB (the pool
 * failed the request) the leak's explanation says that what is kept splits
 * the reserve, and how little was live; with 8 MiB free it does not. */
static vr_report *split_pool(const char *name, uint64_t reserve_mib)
{
    vtg g;
    open_trace(&g, name, 0, NULL);
    vtg_device(&g, 0, "SimGPU", 2 * GiB);
    uint64_t other_mib = 1929 - reserve_mib; /* a context, other processes */
    vtg_meminfo(&g, 1, 2 * GiB - other_mib * MiB, 2 * GiB);
    vtg_stack(&g, 2, 0, 0x2200);
    uint64_t t = 10;
    for (uint64_t i = 0; i < 15; i++) {
        vtg_push(&g, t++, 1);
        vtg_alloc_api(&g, t++, 0x80000000, 60 * MiB, 1, VT_API_CUDA_MALLOC_ASYNC);
        vtg_alloc_api(&g, t++, 0x100000000 + i * 4 * MiB, 4 * MiB, 2, VT_API_CUDA_MALLOC_ASYNC);
        vtg_free_api(&g, t++, 0x80000000, VT_API_CUDA_MALLOC_ASYNC);
        vtg_pop(&g, t++);
    }
    vtg_push(&g, t++, 1);
    vtg_pool_stat(&g, t, 0, 60 * MiB + reserve_mib * MiB, 60 * MiB);
    vtg_failed_on(&g, t++, 60 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC_ASYNC,
                  (2048 - other_mib - 60 - reserve_mib) * MiB, 2 * GiB);
    vtg_pop(&g, t++);
    vtg_end(&g, t, 1);
    return close_and_analyze(&g, name);
}

static void test_leak_splits_pool(void **state)
{
    (void)state;
    vr_report *r = split_pool("split_pool", 1229);
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    print_message("%s\n", o->explanation);
    assert_int_equal(o->verdict, VR_VERDICT_LEAK);
    assert_non_null(strstr(o->explanation,
                           "memory is retained across iterations, and what is kept splits the "
                           "pool's reserve: it held 1.20 GiB free but no piece of the 60.00 MiB "
                           "requested, so the device filled with only 60.00 MiB live; live data"));
    vr_report_free(r);
    unlink(tmp_path("split_pool"));
    r = split_pool("whole_pool", 8);
    assert_int_equal(r->ooms[0].verdict, VR_VERDICT_LEAK);
    assert_null(strstr(r->ooms[0].explanation, "splits"));
    vr_report_free(r);
    unlink(tmp_path("whole_pool"));
}

/* A stream-ordered pool's allocations are placed by the pool, not rounded
 * by the driver one by one: once the pool's state is known (its pool_stat
 * before the failure) their rounding no longer explains use outside the
 * recording. A hundred 3 MiB allocations from the pool (100 MiB of
 * cudaMalloc-style rounding), 150 MiB taken by another process, a 600 MiB
 * request fails: external (the rounding made it 50 MiB, under 5 % of the
 * device, and capacity). */
static void test_pool_rounding_not_external(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "pool_rounding", 0, NULL);
    vtg_meminfo(&g, 1, GiB, GiB);
    uint64_t t = 10;
    for (uint64_t i = 0; i < 100; i++)
        vtg_alloc_api(&g, t++, 0x100000000 + i * 4 * MiB, 3 * MiB, 1, VT_API_CUDA_MALLOC_ASYNC);
    vtg_pool_stat(&g, t, 0, 304 * MiB, 300 * MiB);
    vtg_failed_on(&g, t++, 600 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC_ASYNC, (720 - 150) * MiB, GiB);
    vtg_end(&g, t, 1);
    vr_report *r = close_and_analyze(&g, "pool_rounding");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    print_message("%s: external %llu, rounding %llu\n", vr_verdict_name(o->verdict),
                  (unsigned long long)o->external_bytes, (unsigned long long)o->rounding_bytes);
    assert_int_equal(o->verdict, VR_VERDICT_EXTERNAL);
    assert_int_equal(o->external_bytes, 150 * MiB);
    assert_int_equal(o->rounding_bytes, 0);
    vr_report_free(r);
    unlink(tmp_path("pool_rounding"));
}

/* held: the pool still holds its 500 MiB at the failure (the device's
 * free bytes say so), else it gave them back since its last state (a
 * release threshold of 0 at a synchronization) and 950 MiB are asked. */
static vr_report *pool_any(const char *name, bool held)
{
    vtg g;
    open_steps(&g, name);
    vtg_push(&g, 5, 1);
    vtg_alloc_api(&g, 10, 0x100000000, 100 * MiB, 5, VT_API_CUDA_MALLOC_ASYNC);
    vtg_pool_stat(&g, 11, 0x5000, 600 * MiB, 100 * MiB);
    vtg_pop(&g, 12);
    vtg_failed_on(&g, 20, (held ? 450 : 950) * MiB, 5, 2, 0, VT_API_CUDA_MALLOC,
                  (held ? 424 : 924) * MiB, GiB);
    vtg_end(&g, 30, 1);
    return close_and_analyze(&g, name);
}

/* Two pools of device 0 sampled in two rounds (the recorder writes every
 * pool of the device one after the other): 256 MiB and 0 at the first; at
 * the second the other pool's 32 MiB come first, then the first pool's 0.
 * The pools never reserved more than 256 MiB at once; a peak taken
 * between the second round's two records said 288 (corpus.pools_random,
 * now and then). */
static void test_pool_peak_per_round(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "rounds", 0, NULL);
    vtg_pool_stat(&g, 10, 0x5000, 256 * MiB, 0);
    vtg_pool_stat(&g, 11, 0x6000, 0, 0);
    vtg_meminfo(&g, 12, GiB - 300 * MiB - 256 * MiB, GiB);
    vtg_pool_stat(&g, 20, 0x6000, 32 * MiB, 0);
    vtg_pool_stat(&g, 21, 0x5000, 0, 0);
    vtg_meminfo(&g, 22, GiB - 300 * MiB - 32 * MiB, GiB);
    vtg_end(&g, 30, 0);
    vr_report *r = close_and_analyze(&g, "rounds");
    assert_int_equal(r->ndevices, 1);
    assert_int_equal(r->devices[0].pool_reserved_peak, 256 * MiB);
    assert_int_equal(r->devices[0].pool_reserved_peak_t_ns, 11);
    vr_report_free(r);
    unlink(tmp_path("rounds"));
}

/* Two pools sampled at a step's end, 160 and 32 MiB (192); then the
 * second is destroyed with allocations outstanding and its lone record
 * (docs/trace.md, "A destroyed pool") says 96 MiB: it grew into what the
 * first gave back at a synchronization, unseen. A peak taken there summed
 * the first's old 160 with it, 256 MiB the pools never held at once
 * (corpus.pools_random: "288 MiB" against the ledger's 224); the next
 * round (32 + 96) is below the first. */
static void test_pool_peak_lone_record(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "lone", 0, NULL);
    vtg_pool_stat(&g, 10, 0x5000, 160 * MiB, 0);
    vtg_pool_stat(&g, 11, 0x6000, 32 * MiB, MiB);
    vtg_alloc(&g, 12, 0x7000, MiB, 0);
    vtg_pool_stat(&g, 20, 0x6000, 96 * MiB, 64 * MiB);
    vtg_free(&g, 21, 0x7000);
    vtg_pool_stat(&g, 30, 0x5000, 32 * MiB, 0);
    vtg_pool_stat(&g, 31, 0x6000, 96 * MiB, 64 * MiB);
    vtg_end(&g, 40, 0);
    vr_report *r = close_and_analyze(&g, "lone");
    assert_int_equal(r->ndevices, 1);
    assert_int_equal(r->devices[0].pool_reserved_peak, 192 * MiB);
    assert_int_equal(r->devices[0].pool_reserved_peak_t_ns, 11);
    vr_report_free(r);
    unlink(tmp_path("lone"));
}

/* A pool's free reserve is the process's memory whatever call fails: 100
 * MiB live from the device's pool, which holds 500 MiB more (its state at
 * the last step's end), and a 450 MiB cudaMalloc fails with 424 MiB free.
 * Nothing is used outside the recording (it read the pool's 500 MiB as
 * such: external), and the pool holds what the cudaMalloc lacked:
 * fragmentation, said of the pools (capacity said 100 MiB + 450 MiB exceed
 * the 1 GiB device). */
static void test_pool_reserve_any_failure(void **state)
{
    (void)state;
    vr_report *r = pool_any("pool_any", true);
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    print_message("%s: external %llu, live reserved %llu\n", vr_verdict_name(o->verdict),
                  (unsigned long long)o->external_bytes, (unsigned long long)o->live_reserved);
    assert_int_equal(o->verdict, VR_VERDICT_FRAGMENTATION);
    assert_int_equal(o->external_bytes, 0);
    assert_int_equal(o->live_reserved, 600 * MiB);
    assert_int_equal(o->pools_free_bytes, 500 * MiB);
    assert_non_null(strstr(o->explanation,
                           "the device's stream-ordered pools hold 500.00 MiB of free reserve, "
                           "which this cudaMalloc cannot use, and the device had 424.00 MiB free: "
                           "together 924.00 MiB for the 450.00 MiB requested"));
    vr_headline h;
    vr_headline_of(r, &h);
    assert_non_null(strstr(h.remedy, "the device's stream-ordered pools hold 500.00 MiB free "
                                     "that a cudaMalloc cannot use: trim them"));
    vr_report_free(r);
    unlink(tmp_path("pool_any"));
    r = pool_any("pool_gone", false);
    o = &r->ooms[0];
    assert_int_equal(o->pools_free_bytes, 0);
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    vr_report_free(r);
    unlink(tmp_path("pool_gone"));
}

/* The recorder samples the device's pools just before every out-of-memory
 * failure, an empty pool too (trace format 13). For a cudaMalloc that
 * sample is the device's pools, not the failing call's own pool: sc_frag's
 * heap (50 MiB free, largest block 10 MiB) with an empty pool sampled at
 * the 30 MiB cudaMalloc failure is the cache's fragmentation, explained by
 * the heaps and remedied by emptying the cache, with no "pool" (until
 * session 44: "the memory pool holds 0 B reserved ... the pool's reserve is
 * fragmented", vary_batch_fragmentation's text). The pools' free reserve at
 * that failure is their sample's, exact (spare: 0 or 64 MiB). A
 * cudaMallocAsync failure keeps its pool as its own. */
static vr_report *frag_with_pool(const char *name, enum vt_api api, uint64_t spare)
{
    vtg g;
    open_steps(&g, name);
    vtg_alloc(&g, 200, 0x200000000, 900 * MiB, 5);
    vtg_alloc(&g, 300, 0x10000000, 100 * MiB, 7);
    vtg_heap(&g, 301, 1, 0x10000000, 100 * MiB);
    for (uint64_t i = 0; i < 10; i++)
        vtg_region(&g, 400 + i, 1, 0x10000000 + i * 10 * MiB, 10 * MiB, 7);
    for (uint64_t i = 1; i < 10; i += 2)
        vtg_region_free(&g, 500 + i, 1, 0x10000000 + i * 10 * MiB);
    vtg_pool_stat(&g, 599, 0x5000, spare, 0);
    vtg_failed_on(&g, 600, 30 * MiB, 5, 2, 0, api, 24 * MiB, GiB);
    vtg_end(&g, 700, 1);
    return close_and_analyze(&g, name);
}

static void test_pool_sample_not_the_mallocs(void **state)
{
    (void)state;
    vr_report *r = frag_with_pool("frag_pool_empty", VT_API_CUDA_MALLOC, 0);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_FRAGMENTATION);
    assert_false(o->has_pool);
    assert_int_equal(o->pools_free_bytes, 0);
    assert_int_equal(o->heap_free, 50 * MiB);
    assert_non_null(strstr(o->explanation, "the registered heaps hold 50.00 MiB free but the "
                                           "largest free block is 10.00 MiB"));
    vr_headline h;
    vr_headline_of(r, &h);
    assert_non_null(strstr(h.remedy, "free blocks (largest 10.00 MiB) are too small"));
    char *txt = render(vr_render_text, r);
    assert_null(strstr(txt, "memory pool:"));
    free(txt);
    vr_report_free(r);
    unlink(tmp_path("frag_pool_empty"));

    r = frag_with_pool("frag_pool_spare", VT_API_CUDA_MALLOC, 64 * MiB);
    o = &r->ooms[0];
    assert_false(o->has_pool);
    assert_int_equal(o->pools_free_bytes, 64 * MiB);
    assert_int_equal(o->heap_free, 114 * MiB);
    /* the failure's fragmentation sample holds the pools' free reserve as
     * free bytes no block of which this call can take (it read 0.8, the
     * heap's alone, beside a reserved that counted the pools) */
    size_t oom_frags = 0;
    for (size_t i = 0; i < r->nfrag; i++)
        if (!strcmp(r->frag[i].when, "oom")) {
            oom_frags++;
            assert_int_equal(r->frag[i].reserved, 164 * MiB);
            assert_true(fabs(r->frag[i].fragmentation - (1.0 - 10.0 / 114.0)) < 1e-9);
        }
    assert_int_equal(oom_frags, 1);
    vr_report_free(r);
    unlink(tmp_path("frag_pool_spare"));

    r = frag_with_pool("frag_pool_async", VT_API_CUDA_MALLOC_ASYNC, 0);
    o = &r->ooms[0];
    assert_true(o->has_pool);
    assert_int_equal(o->pools_free_bytes, 0);
    vr_report_free(r);
    unlink(tmp_path("frag_pool_async"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_capacity),
        cmocka_unit_test(test_impossible_request),
        cmocka_unit_test(test_request_above_device),
        cmocka_unit_test(test_verdict_leak),
        cmocka_unit_test(test_leak_splits_pool),
        cmocka_unit_test(test_pool_rounding_not_external),
        cmocka_unit_test(test_pool_reserve_any_failure),
        cmocka_unit_test(test_pool_sample_not_the_mallocs),
        cmocka_unit_test(test_pool_peak_per_round),
        cmocka_unit_test(test_pool_peak_lone_record),
        cmocka_unit_test(test_verdict_leak_needs_program_growth),
        cmocka_unit_test(test_leak_remedy_names_verdict_site),
        cmocka_unit_test(test_verdict_frag),
        cmocka_unit_test(test_verdict_split),
        cmocka_unit_test(test_verdict_external),
        cmocka_unit_test(test_outside_recording_agrees),
        cmocka_unit_test(test_oom_cap_keeps_fatal),
        cmocka_unit_test(test_oom_all_sites),
        cmocka_unit_test(test_recovered),
        cmocka_unit_test(test_oom_fatal_first),
        cmocka_unit_test(test_oom_repeats),
        cmocka_unit_test(test_oom_repeats_run),
        cmocka_unit_test(test_oom_alike),
        cmocka_unit_test(test_free_failed_repeats),
        cmocka_unit_test(test_oom_other_device),
        cmocka_unit_test(test_oom_pool_limit),
        cmocka_unit_test(test_oom_rounding_not_external),
        cmocka_unit_test(test_oom_other_errors),
        cmocka_unit_test(test_oom_fork_child),
        cmocka_unit_test(test_oom_capture_refused),
        cmocka_unit_test(test_oom_handled),
        cmocka_unit_test(test_vmm_recovered_when_mapped),
        cmocka_unit_test(test_pool_sample_baseline),
        cmocka_unit_test(test_baseline_rounding),
        cmocka_unit_test(test_oom_pinned_host),
        cmocka_unit_test(test_healthy_says_what_it_saw),
        cmocka_unit_test(test_failed_exit_not_healthy),
        cmocka_unit_test(test_no_end_not_leaked),
        cmocka_unit_test(test_killed_remedy),
        cmocka_unit_test(test_oom_free_unknown),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
