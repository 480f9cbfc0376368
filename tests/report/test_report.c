/* test_report.c: golden tests of the report on synthetic traces with known
 * behaviour (gen.c), the JSON keys, check limits, size parsing,
 * symbolization and robustness against cut and bit-flipped files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "gen.h"
#include "internal.h"
#include "report.h"

#include <ctype.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/vtreport-test-XXXXXX";

static const char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s.vtrace", tmpdir, name);
    return buf;
}

static vr_report *scenario(const char *name)
{
    const char *path = tmp_path(name);
    if (access(path, F_OK) != 0)
        assert_int_equal(vtg_scenario(name, path), 0);
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

static char *render(int (*fn)(FILE *, vr_report *const *, size_t, const vr_options *), vr_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, &r, 1, NULL), 0);
    fclose(f);
    return buf;
}

/* ---- golden: peak, sites, phases, leaks ------------------------------------ */

static void test_peak(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    assert_int_equal(r->peak_allocated, 180 * MiB);
    assert_int_equal(r->peak_allocated_t_ns, 6000);
    assert_int_equal(r->allocations, 6);
    assert_int_equal(r->frees, 3);
    assert_int_equal(r->ndevices, 1);
    assert_int_equal(r->devices[0].peak_allocated, 180 * MiB);
    assert_int_equal(r->devices[0].total_bytes, GiB);
    /* sites at the peak: leaf 2 (100 MiB, 1) then leaf 3 (80 MiB, 2) */
    assert_int_equal(r->nsites, 2);
    assert_int_equal(r->sites[0].stack.id, 2);
    assert_int_equal(r->sites[0].bytes, 100 * MiB);
    assert_int_equal(r->sites[1].stack.id, 3);
    assert_int_equal(r->sites[1].bytes, 80 * MiB);
    assert_int_equal(r->sites[1].count, 2);
    /* phases: innermost NVTX range at allocation */
    assert_int_equal(r->nphases, 2);
    assert_string_equal(r->phases[0].range, "init");
    assert_int_equal(r->phases[0].bytes, 100 * MiB);
    assert_string_equal(r->phases[1].range, "forward");
    assert_int_equal(r->phases[1].bytes, 80 * MiB);
    /* the timeline keeps the exact peak */
    bool found = false;
    for (size_t i = 0; i < r->devices[0].ntimeline; i++)
        found |= r->devices[0].timeline[i].allocated == 180 * MiB &&
                 r->devices[0].timeline[i].t_ns == 6000;
    assert_true(found);
    assert_true(r->has_end);
    vr_report_free(r);
}

static void test_leaks(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    /* leaf 6 is a vramtrace frame over leaf 2: folded, so both merge */
    assert_int_equal(r->nleaks, 2);
    assert_int_equal(r->leaks[0].bytes, 101 * MiB);
    assert_int_equal(r->leaks[0].count, 2);
    assert_int_equal(r->leaks[1].bytes, 4096);
    assert_int_equal(r->leaks[1].count, 1);
    assert_int_equal(r->leaked_bytes, 101 * MiB + 4096);
    /* no frame of the leak's stack is inside libvramtrace.so */
    for (size_t i = 0; i < r->leaks[0].stack.n; i++)
        assert_null(strstr(r->leaks[0].stack.frames[i].module, "libvramtrace"));
    assert_int_equal(r->leaks[0].stack.n, 2);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "105906176 bytes in 2 allocations are definitely lost"));
    free(text);
    vr_report_free(r);
}

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
    /* 10 MiB live after 10 iterations, 1 GiB device: out at iteration 1024 */
    assert_int_equal(r->growth[0].projected_oom_iteration, 1024);
    for (size_t i = 0; i < r->ngrowth; i++)
        assert_int_not_equal(r->growth[i].stack.id, 3); /* freed every iteration */
    assert_true(fabs(r->total_growth.bytes_per_iteration - (double)MiB) < 1.0);
    vr_report_free(r);
}

/* ---- golden: OOM verdicts --------------------------------------------------------- */

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

/* A new trace at path (argv: name, then argv_extra), prelude of stacks. */
static void open_trace(vtg *g, const char *name, int argc, const char *const *argv)
{
    assert_int_equal(vtg_open(g, tmp_path(name), argc, argv), 0);
    vtg_stack(g, 1, 0, 0x1100);
    vtg_string(g, 1, "train_step");
    vtg_device(g, 0, "SimGPU", GiB);
}

static vr_report *close_and_analyze(vtg *g, const char *name)
{
    assert_int_equal(vtg_close(g), 0);
    char err[256] = "";
    vr_options o = {.no_symbols = true};
    vr_report *r = vr_analyze(tmp_path(name), &o, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

/* A caching allocator's segment: cudaMalloc then, right after on the same
 * thread, nvtxMemHeapRegister at its address. Only the regions are
 * allocated; the segment is reserved. The old replay counted the segment as
 * allocated for an instant (peak 20 MiB) and again when it was unregistered
 * before its cudaFree (peak 21 MiB). A direct allocation keeps its own time. */
static void test_peak_segment(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"segment"};
    open_trace(&g, "segment", 1, argv);
    vtg_alloc(&g, 100, 0x10000000, 20 * MiB, 1);
    vtg_heap(&g, 101, 1, 0x10000000, 20 * MiB);
    vtg_region(&g, 102, 1, 0x10000000, 8 * MiB, 1);
    vtg_region(&g, 103, 1, 0x10800000, 4 * MiB, 1);
    vtg_alloc(&g, 200, 0x40000000, 1 * MiB, 1); /* direct: settled by the meminfo */
    vtg_meminfo(&g, 300, GiB - 21 * MiB, GiB);
    vtg_region_free(&g, 350, 1, 0x10000000);
    vtg_region_free(&g, 351, 1, 0x10800000);
    vtg_heap_free(&g, 400, 1);
    vtg_free(&g, 401, 0x10000000);
    vtg_end(&g, 500, 0);
    vr_report *r = close_and_analyze(&g, "segment");
    assert_int_equal(r->peak_allocated, 13 * MiB);
    assert_int_equal(r->peak_allocated_t_ns, 200);
    assert_int_equal(r->peak_reserved, 21 * MiB);
    assert_int_equal(r->devices[0].peak_allocated, 13 * MiB);
    assert_int_equal(r->leaked_bytes, 1 * MiB);
    vr_report_free(r);
}

/* The hover point at or before t (the page's rule), NULL if none. */
static const vr_hover *hover_at(const vr_report *r, uint64_t t)
{
    const vr_hover *h = NULL;
    for (size_t i = 0; i < r->nhover && r->hover[i].t_ns <= t; i++)
        h = &r->hover[i];
    return h;
}

/* The sites a hover point lists, as leaf ips, with their bytes. */
static void assert_hover(const vr_report *r, uint64_t t, size_t n, const uint64_t *leaf_ip,
                         const uint64_t *bytes)
{
    const vr_hover *h = hover_at(r, t);
    assert_non_null(h);
    assert_int_equal(h->n, n);
    for (size_t k = 0; k < n; k++) {
        assert_true(h->stack[k].n > 0);
        assert_int_equal(h->stack[k].frames[0].ip, leaf_ip[k]);
        assert_int_equal(h->bytes[k], bytes[k]);
    }
}

/* Timeline tooltips: the three largest live sites at an instant, 10 us
 * apart (more than a hover window), read back at instants between events. */
static void test_hover_sites(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"hover"};
    open_trace(&g, "hover", 1, argv);
    for (uint32_t i = 2; i <= 5; i++)
        vtg_stack(&g, i, 1, 0x1000 * i);
    for (uint32_t i = 2; i <= 5; i++) /* site i: (i - 1) MiB at i * 10 us */
        vtg_alloc(&g, i * 10000, 0x10000000ull * i, (i - 1) * MiB, i);
    vtg_free(&g, 60000, 0x50000000);
    vtg_free(&g, 70000, 0x40000000);
    vtg_end(&g, 80000, 0);
    vr_report *r = close_and_analyze(&g, "hover");
    /* site i's leaf: stack i's ip, 0x1000 * i (recorded ip) */
    assert_hover(r, 25000, 1, (uint64_t[]){0x2000}, (uint64_t[]){1 * MiB});
    assert_hover(r, 55000, 3, (uint64_t[]){0x5000, 0x4000, 0x3000},
                 (uint64_t[]){4 * MiB, 3 * MiB, 2 * MiB});
    assert_hover(r, 65000, 3, (uint64_t[]){0x4000, 0x3000, 0x2000},
                 (uint64_t[]){3 * MiB, 2 * MiB, 1 * MiB});
    assert_hover(r, 75000, 2, (uint64_t[]){0x3000, 0x2000}, (uint64_t[]){2 * MiB, 1 * MiB});
    assert_null(hover_at(r, 20000 - 1));
    vr_report_free(r);
}

/* The last event of a cut trace is a direct allocation: still counted. */
static void test_peak_pending_at_end(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"tail"};
    open_trace(&g, "tail", 1, argv);
    vtg_alloc(&g, 100, 0x10000000, 3 * MiB, 1);
    vtg_alloc(&g, 200, 0x20000000, 5 * MiB, 1);
    vr_report *r = close_and_analyze(&g, "tail");
    assert_int_equal(r->peak_allocated, 8 * MiB);
    assert_int_equal(r->peak_allocated_t_ns, 200);
    assert_int_equal(r->leaked_bytes, 8 * MiB);
    vr_report_free(r);
}

/* argv --batch 64, 100 MiB used outside the recording, 200 MiB of weights.
 * train_step 1 loads a 16 MiB input (batch 16 by the input ratio) and peaks
 * at 264 MiB; train_step 2 loads 64 MiB and fails: per sample
 * (264 - 200) / 16 = 4 MiB, largest batch (924 - 200) / 4 = 181. */
static void test_batch_measured(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"train", "--batch", "64"};
    open_trace(&g, "measured", 3, argv);
    vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
    vtg_alloc(&g, 200, 0x10000000, 200 * MiB, 1);
    vtg_push(&g, 300, 1);
    vtg_alloc(&g, 301, 0x100000000, 16 * MiB, 1);
    for (uint64_t i = 0; i < 3; i++)
        vtg_alloc(&g, 302 + i, 0x200000000 + i * 16 * MiB, 16 * MiB, 1);
    vtg_free(&g, 310, 0x100000000);
    for (uint64_t i = 0; i < 3; i++)
        vtg_free(&g, 311 + i, 0x200000000 + i * 16 * MiB);
    vtg_pop(&g, 320);
    vtg_push(&g, 400, 1);
    vtg_alloc(&g, 401, 0x100000000, 64 * MiB, 1);
    for (uint64_t i = 0; i < 8; i++)
        vtg_alloc(&g, 402 + i, 0x200000000 + i * 64 * MiB, 64 * MiB, 1);
    vtg_failed(&g, 500, 256 * MiB, 1, 148 * MiB, GiB);
    vtg_end(&g, 600, 1);
    vr_report *r = close_and_analyze(&g, "measured");
    assert_int_equal(r->nooms, 1);
    const vr_oom *o = &r->ooms[0];
    assert_int_equal(o->verdict, VR_VERDICT_CAPACITY);
    assert_string_equal(o->batch_kind, "measured");
    assert_int_equal(o->batch_fixed_bytes, 200 * MiB);
    assert_int_equal(o->batch_per_sample_bytes, 4 * MiB);
    assert_int_equal(o->max_batch, 181);
    assert_non_null(strstr(o->explanation, "largest batch that fits is estimated at about 181 "
                                           "(from a completed step"));
    assert_non_null(strstr(o->explanation, "confirm it with a run: vramtrace run -o "
                                           "batch181.vtrace --"));
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"suggested_batch\":181,\"suggested_batch_kind\":\"measured\""));
    free(json);
    char *html = render(vr_render_html, r);
    assert_non_null(
        strstr(html, "class=\"batch measured\">estimated largest batch: about 181 (from"));
    free(html);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "largest batch that fits is estimated at about 181"));
    free(text);
    vr_report_free(r);
}

/* A failed cudaMalloc whose retry (same thread, same size) succeeds is
 * recovered; a failure followed by a failed retry is not. */
/* A VMM handle (cuMemCreate) whose value equals a live device pointer's:
 * the two are separate allocations, and cuMemRelease frees only the handle. */
static void test_vmm_handle_key(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"vmm"};
    open_trace(&g, "vmm", 1, argv);
    vtg_alloc(&g, 100, 0x7000, 1 * MiB, 1);
    vtg_alloc_api(&g, 200, 0x7000, 2 * MiB, 1, VT_API_CU_MEM_CREATE);
    vtg_free_api(&g, 300, 0x7000, VT_API_CU_MEM_CREATE);
    vtg_end(&g, 400, 0);
    vr_report *r = close_and_analyze(&g, "vmm");
    assert_int_equal(r->allocations, 2);
    assert_int_equal(r->frees, 1);
    assert_int_equal(r->unknown_frees, 0);
    assert_int_equal(r->peak_allocated, 3 * MiB);
    assert_int_equal(r->leaked_bytes, 1 * MiB);
    vr_report_free(r);
}

/* VMM: a handle released while mapped lives until its last mapping goes
 * (vectorAddMMAP releases right after mapping); the accounting counts it as
 * one vmm allocation that died at the unmap. An unmap covering two mappings
 * ends both. */
static void test_vmm_mapped_release(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"vmm_map"};
    open_trace(&g, "vmm_map", 1, argv);
    vtg_alloc_api(&g, 100, 0x10, 64 * MiB, 1, VT_API_CU_MEM_CREATE);
    vtg_vmm_map(&g, 110, 0x10, 0x7f0000000000ull, 64 * MiB);
    vtg_free_api(&g, 120, 0x10, VT_API_CU_MEM_CREATE); /* released, still mapped */
    vtg_alloc(&g, 200, 0x5000, 1 * MiB, 1);            /* 65 MiB live */
    vtg_free(&g, 210, 0x5000);
    vtg_alloc_api(&g, 300, 0x20, 2 * MiB, 1, VT_API_CU_MEM_CREATE);
    vtg_vmm_map(&g, 310, 0x20, 0x7f1000000000ull, 1 * MiB);
    vtg_vmm_map(&g, 320, 0x20, 0x7f1000100000ull, 1 * MiB);
    vtg_free_api(&g, 330, 0x20, VT_API_CU_MEM_CREATE);
    vtg_vmm_unmap(&g, 400, 0x7f0000000000ull, 64 * MiB); /* the 64 MiB dies here */
    vtg_vmm_unmap(&g, 410, 0x7f1000000000ull, 2 * MiB);  /* both mappings of 0x20 */
    vtg_end(&g, 500, 0);
    vr_report *r = close_and_analyze(&g, "vmm_map");
    assert_int_equal(r->peak_allocated, 66 * MiB); /* 64 MiB still mapped + 0x20's 2 MiB */
    assert_int_equal(r->leaked_bytes, 0);
    assert_int_equal(r->naccounting, 2);
    const vr_acct_row *v = &r->accounting[1];
    assert_string_equal(v->kind, "vmm");
    assert_int_equal(v->allocations, 2);
    assert_int_equal(v->frees, 2);
    assert_int_equal(v->peak_live_bytes, 66 * MiB);
    assert_int_equal(v->leaked_bytes, 0);
    vr_report_free(r);
}

/* A segment claimed by its heap registration although another allocation
 * came in between (another thread's, in the trace's time order): the claimed
 * segment never counts as allocated, the other allocation does. */
static void test_claim_after_other_alloc(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"claim"};
    open_trace(&g, "claim", 1, argv);
    vtg_alloc(&g, 100, 0x100000, 20 * MiB, 1); /* the segment */
    vtg_alloc(&g, 110, 0x9000000, 2 * MiB, 1); /* someone else's */
    vtg_heap(&g, 120, 7, 0x100000, 20 * MiB);
    vtg_region(&g, 130, 7, 0x100000, 1 * MiB, 1);
    vtg_region_free(&g, 140, 7, 0x100000);
    vtg_end(&g, 200, 0);
    vr_report *r = close_and_analyze(&g, "claim");
    assert_int_equal(r->peak_allocated, 3 * MiB);
    assert_int_equal(r->peak_reserved, 22 * MiB);
    vr_report_free(r);
}

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
    assert_non_null(strstr(buf, "1 failed allocations not recovered"));
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

/* ---- HTML and text OOM sections -------------------------------------------------- */

/* The part of html from the first occurrence of from up to to (or the end). */
static char *slice(const char *html, const char *from, const char *to)
{
    const char *a = strstr(html, from);
    assert_non_null(a);
    const char *b = to ? strstr(a, to) : NULL;
    return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

/* Widths of the shaded iterations (rect class="phase") in an SVG; returns
 * how many, their smallest width in *min. */
static size_t phase_widths(const char *svg, double *min)
{
    size_t n = 0;
    *min = 1e9;
    for (const char *p = svg; (p = strstr(p, "class=\"phase\"")); p++) {
        const char *w = strstr(p, "width=\"");
        assert_non_null(w);
        double v = strtod(w + 7, NULL);
        *min = v < *min ? v : *min;
        n++;
    }
    return n;
}

/* A 10 s run whose device activity is 5.00 s - 5.10 s: the default timeline
 * spans the activity (iterations wide enough to see, ticks in s since the
 * start, no "0 s"), the whole run is a second, hidden view. The iteration
 * open at the failure is shaded up to it. */
static void test_html_timeline_window(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"late"};
    const uint64_t ms = 1000000, t = 5000 * ms;
    open_trace(&g, "late", 1, argv);
    for (uint64_t i = 0; i < 4; i++) {
        vtg_push(&g, t + i * 25 * ms, 1);
        vtg_alloc(&g, t + i * 25 * ms + 1, 0x10000000, (10 + i) * MiB, 1);
        vtg_free(&g, t + i * 25 * ms + 20 * ms, 0x10000000);
        vtg_pop(&g, t + i * 25 * ms + 24 * ms);
    }
    vtg_push(&g, t + 100 * ms, 1); /* the failing iteration never ends */
    vtg_failed(&g, t + 101 * ms, 2 * GiB, 1, 900 * MiB, GiB);
    vtg_end(&g, 10000 * ms, 1);
    vr_report *r = close_and_analyze(&g, "late");
    assert_int_equal(r->nspans, 5); /* shaded up to the failure, not to the exit */
    assert_int_equal(r->spans[4].start_ns, t + 100 * ms);
    assert_int_equal(r->spans[4].end_ns, t + 101 * ms);
    char *html = render(vr_render_html, r);
    char *act = slice(html, "id=\"timeline-0\"", "id=\"timeline-0-whole\"");
    char *all = slice(html, "id=\"timeline-0-whole\"", "</svg>");
    double min;
    assert_int_equal(phase_widths(act, &min), 5);
    assert_true(min > 8); /* 1 ms of ~107 ms over 940 px; 24 ms iterations > 200 px */
    assert_int_equal(phase_widths(all, &min), 5);
    assert_true(min < 5);
    assert_null(strstr(act, ">0 s<"));
    assert_non_null(strstr(act, ">5.04 s<"));
    assert_non_null(strstr(all, ">0 s<"));
    assert_non_null(strstr(act, "class=\"oom\""));
    assert_non_null(strstr(act, "class=\"peak\""));
    assert_non_null(strstr(all, "display:none"));
    assert_non_null(strstr(html, "class=\"tl-whole\""));
    free(act);
    free(all);
    free(html);
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

/* The suggested batch's kind is worded apart in HTML and text. */
static void test_html_batch_kind(void **state)
{
    (void)state;
    vr_report *r = scenario("capacity");
    char *html = render(vr_render_html, r);
    assert_non_null(strstr(html, "class=\"batch upper_bound\">batches above 60 cannot fit (an "
                                 "upper bound, not a batch known to fit"));
    assert_null(strstr(html, "class=\"batch measured\""));
    free(html);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "batches above 60 cannot fit (an upper bound"));
    free(text);
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

/* ---- batch advice across runs (batch.c) --------------------------------------------- */

/* A program whose step needs BA_FIXED + BA_PER * batch bytes on a 1 GiB
 * device with 100 MiB used outside the recording: the largest batch that
 * fits is (usable - fixed) / per sample. */
#define BA_FIXED (200 * MiB)
#define BA_PER (4 * MiB)
#define BA_USABLE (GiB - 100 * MiB)
#define BA_TRUE ((int64_t)((BA_USABLE - BA_FIXED) / BA_PER))

static vr_report *batch_run(const char *program, int64_t batch)
{
    char name[64], arg[32];
    snprintf(name, sizeof name, "batch_%s_%lld", program, (long long)batch);
    snprintf(arg, sizeof arg, "%lld", (long long)batch);
    const char *path = tmp_path(name);
    const char *argv[] = {program, "--batch", arg};
    if (access(path, F_OK) != 0) {
        vtg g;
        assert_int_equal(vtg_open(&g, path, 3, argv), 0);
        vtg_stack(&g, 1, 0, 0x1100);
        vtg_device(&g, 0, "SimGPU", GiB);
        vtg_meminfo(&g, 100, GiB - 100 * MiB, GiB);
        vtg_alloc(&g, 200, 0x10000000, BA_FIXED, 1);
        uint64_t act = BA_PER * (uint64_t)batch;
        bool fits = BA_FIXED + act <= BA_USABLE;
        if (fits) {
            vtg_alloc(&g, 300, 0x100000000, act, 1);
            vtg_free(&g, 400, 0x100000000);
        } else {
            vtg_failed(&g, 300, act, 1, BA_USABLE - BA_FIXED, GiB);
        }
        vtg_end(&g, 500, fits ? 0 : 1);
        assert_int_equal(vtg_close(&g), 0);
    }
    char err[256] = "";
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    if (!r)
        fail_msg("analyze %s: %s", name, err);
    return r;
}

static vr_batch_advice advise(const char *p1, int64_t b1, const char *p2, int64_t b2, bool *ok)
{
    static vr_report *keep[2]; /* freed by the next call */
    for (int i = 0; i < 2; i++)
        vr_report_free(keep[i]);
    keep[0] = batch_run(p1, b1);
    keep[1] = batch_run(p2, b2);
    vr_batch_advice a;
    *ok = vr_batch_advise(keep, 2, &a);
    return a;
}

static void test_batch_advice(void **state)
{
    (void)state;
    bool ok;
    /* one run that fits, one that fails: interpolated to the device */
    vr_batch_advice a = advise("train", BA_TRUE / 2, "train", BA_TRUE * 2, &ok);
    assert_true(ok);
    assert_string_equal(a.kind, "estimate");
    assert_int_equal(a.batch, BA_TRUE);
    assert_int_equal(a.fits, BA_TRUE / 2);
    assert_int_equal(a.fails, BA_TRUE * 2);
    assert_int_equal(a.next, BA_TRUE);
    assert_non_null(strstr(a.next_command, "vramtrace run -o batch"));
    assert_non_null(strstr(a.next_command, " train --batch "));
    /* two runs that fit: extrapolated from their step peaks */
    a = advise("train", BA_TRUE / 4, "train", BA_TRUE / 2, &ok);
    assert_string_equal(a.kind, "estimate");
    assert_int_equal(a.batch, BA_TRUE);
    /* the answer and the batch above it: measured */
    a = advise("train", BA_TRUE, "train", BA_TRUE + 1, &ok);
    assert_string_equal(a.kind, "measured");
    assert_int_equal(a.batch, BA_TRUE);
    assert_int_equal(a.next, -1);
    assert_string_equal(a.next_command, "");
    /* two failed runs: only an upper bound, worded as one, and a smaller run to record */
    a = advise("train", BA_TRUE * 2, "train", BA_TRUE * 3, &ok);
    assert_string_equal(a.kind, "upper_bound");
    assert_true(a.batch < BA_TRUE * 2);
    assert_non_null(strstr(a.text, "cannot fit"));
    assert_true(a.next > 0 && a.next < a.batch);
    /* another program's run is no point of this one: one run alone advises nothing */
    a = advise("train", BA_TRUE / 2, "other", BA_TRUE * 2, &ok);
    assert_false(ok);
    assert_string_equal(a.kind, "");
    advise("train", BA_TRUE / 2, "train", BA_TRUE / 2, &ok); /* e.g. two processes of a run */
    assert_false(ok);
    vr_report *one = batch_run("train", 10);
    assert_false(vr_batch_advise(&one, 1, &a));
    vr_report_free(one);
    advise("train", 1, "train", 1, &ok); /* frees the last pair */
}

/* At the peak "backward" (stacks 2, 3, 4: 30, 20 and 10 MiB, stack 2 also
 * 5 MiB in "forward") dominates: its sites are listed largest first, bytes
 * inside the range only; the text names them under the Peak section. */
static void test_range_sites(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"ranges"};
    open_trace(&g, "ranges", 1, argv);
    for (uint32_t k = 2; k <= 4; k++)
        vtg_stack(&g, k, 0, 0x1000 * k);
    vtg_string(&g, 2, "forward");
    vtg_string(&g, 3, "backward");
    vtg_push(&g, 100, 2);
    vtg_alloc(&g, 101, 0x10000000, 5 * MiB, 2);
    vtg_alloc(&g, 102, 0x18000000, 1 * MiB, 4);
    vtg_pop(&g, 110);
    vtg_push(&g, 200, 3);
    vtg_alloc(&g, 201, 0x20000000, 10 * MiB, 4);
    vtg_alloc(&g, 202, 0x30000000, 30 * MiB, 2);
    vtg_alloc(&g, 203, 0x40000000, 20 * MiB, 3);
    vtg_free(&g, 300, 0x30000000); /* after the peak */
    vtg_pop(&g, 310);
    vtg_end(&g, 400, 0);
    vr_report *r = close_and_analyze(&g, "ranges");
    assert_string_equal(r->phases[0].range, "backward");
    assert_int_equal(r->nrange_sites, 3);
    assert_int_equal(r->range_sites[0].bytes, 30 * MiB);
    assert_int_equal(r->range_sites[0].stack.id, 2);
    assert_int_equal(r->range_sites[1].bytes, 20 * MiB);
    assert_int_equal(r->range_sites[2].bytes, 10 * MiB);
    assert_int_equal(r->range_sites[2].stack.id, 4);
    char *text = render(vr_render_text, r);
    char *peak = slice(text, "-- Peak --", "-- Out of memory");
    assert_non_null(strstr(peak, "top call sites in backward at the peak:\n"
                                 "     30.00 MiB  50.0% of the range        1 allocs\n"));
    free(peak);
    free(text);
    vr_report_free(r);
}

/* ---- JSON ------------------------------------------------------------------------ */

/* Minimal JSON syntax check (RFC 8259 grammar, no semantics). */
static const char *jvalue(const char *p);

static const char *jws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

static const char *jstring(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *jcontainer(const char *p, char close, bool object)
{
    p = jws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (object) {
            p = jstring(jws(p));
            if (!p || *(p = jws(p)) != ':')
                return NULL;
            p++;
        }
        p = jvalue(p);
        if (!p)
            return NULL;
        p = jws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *jvalue(const char *p)
{
    p = jws(p);
    if (*p == '{')
        return jcontainer(p, '}', true);
    if (*p == '[')
        return jcontainer(p, ']', false);
    if (*p == '"')
        return jstring(p);
    static const char *lit[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(p, lit[i], strlen(lit[i])))
            return p + strlen(lit[i]);
    char *end;
    strtod(p, &end);
    return end != p && (*p == '-' || isdigit((unsigned char)*p)) ? end : NULL;
}

static void assert_json(const char *text)
{
    const char *end = jvalue(text);
    if (!end)
        fail_msg("invalid JSON: %.200s", text);
    assert_int_equal(*jws(end), '\0');
}

static void test_json_keys(void **state)
{
    (void)state;
    static const char *names[] = {"basic", "capacity", "frag", "xss"};
    static const char *keys[] = {"\"format\":\"vramtrace-report\"",
                                 "\"version\":",
                                 "\"program\":{\"argv\":[",
                                 "\"pid\":4242",
                                 "\"exit\":",
                                 "\"devices\":[{\"id\":0",
                                 "\"name\":",
                                 "\"total_bytes\":",
                                 "\"totals\":{",
                                 "\"allocations\":",
                                 "\"frees\":",
                                 "\"failed_allocations\":",
                                 "\"peak_allocated_bytes\":",
                                 "\"peak_time_ns\":",
                                 "\"peak_reserved_bytes\":",
                                 "\"leaks\":[",
                                 "\"growth\":[",
                                 "\"ooms\":[",
                                 "\"sites\":[",
                                 "\"phases\":[",
                                 "\"fragmentation\":[",
                                 "\"notes\":["};
    for (size_t n = 0; n < 4; n++) {
        vr_report *r = scenario(names[n]);
        char *json = render(vr_render_json, r);
        assert_json(json);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!strstr(json, keys[k]))
                fail_msg("%s: key %s missing", names[n], keys[k]);
        if (!strcmp(names[n], "basic")) {
            assert_non_null(strstr(json, "\"peak_allocated_bytes\":188743680"));
            assert_non_null(strstr(json, "\"peak_time_ns\":6000"));
            assert_non_null(strstr(
                json,
                "{\"bytes\":105906176,\"count\":2,\"kind\":\"device\",\"stack\":[{\"function\":"));
            assert_non_null(strstr(json, "\"module\":\"/opt/fake/libuser.so\""));
        }
        if (!strcmp(names[n], "capacity"))
            assert_non_null(strstr(json, "\"verdict\":\"capacity\""));
        if (!strcmp(names[n], "xss"))
            assert_null(strstr(json, "<script>")); /* escaped as \u003c */
        free(json);
        vr_report_free(r);
    }
}

static void test_json_several(void **state)
{
    (void)state;
    vr_report *r[2] = {scenario("basic"), scenario("growth")};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(vr_render_json(f, r, 2, NULL), 0);
    assert_int_equal(vr_render_chrome(f, r, 0, NULL), 0);
    fclose(f);
    /* the first document ends at its first newline */
    char *nl = strchr(buf, '\n');
    assert_non_null(nl);
    *nl = 0;
    assert_json(buf);
    assert_non_null(strstr(buf, "\"files\":["));
    assert_json(nl + 1);
    free(buf);
    vr_report_free(r[0]);
    vr_report_free(r[1]);
}

static void test_chrome_folded(void **state)
{
    (void)state;
    vr_report *r = scenario("basic");
    char *chrome = render(vr_render_chrome, r);
    assert_json(chrome);
    assert_non_null(strstr(chrome, "\"ph\":\"C\""));
    assert_non_null(strstr(chrome, "\"ph\":\"B\""));
    assert_non_null(strstr(chrome, "\"name\":\"forward\""));
    free(chrome);
    char *folded = render(vr_render_folded, r);
    /* root first, bytes last: two stacks at the peak */
    assert_non_null(strstr(folded, "libuser.so+0x1100;libuser.so+0x2200 104857600\n"));
    assert_non_null(strstr(folded, "libuser.so+0x1100;libuser.so+0x3300 83886080\n"));
    free(folded);
    vr_report_free(r);
}

static void test_text_sections(void **state)
{
    (void)state;
    vr_report *r = scenario("frag");
    char *text = render(vr_render_text, r);
    static const char *sections[] = {"== vramtrace report",
                                     "-- Peak --",
                                     "-- Out of memory",
                                     "-- Leaks --",
                                     "-- Growth --",
                                     "-- Fragmentation",
                                     "-- Top sites at peak --",
                                     "verdict: fragmentation"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strstr(text, sections[i]))
            fail_msg("section %s missing", sections[i]);
    free(text);
    vr_report_free(r);
}

/* ---- check and sizes ---------------------------------------------------------------- */

static void test_check(void **state)
{
    (void)state;
    vr_report *r = scenario("growth");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vr_limits ok = {
        .max_peak = 100 * MiB, .max_leaked = 10 * MiB, .max_growth = 2 * MiB, .no_oom = true};
    assert_int_equal(vr_check(f, r, &ok), 0);
    vr_limits bad = {.max_peak = 10 * MiB, .max_leaked = MiB, .max_growth = 1000, .no_oom = true};
    assert_int_equal(vr_check(f, r, &bad), 3);
    fclose(f);
    assert_non_null(strstr(buf, "peak allocated"));
    assert_non_null(strstr(buf, "leaked"));
    assert_non_null(strstr(buf, "growth"));
    free(buf);
    vr_report_free(r);
    r = scenario("capacity");
    vr_limits oom = {
        .max_peak = -1, .max_leaked = -1, .max_growth = -1, .max_host_leaked = -1, .no_oom = true};
    f = fopen("/dev/null", "w");
    assert_int_equal(vr_check(f, r, &oom), 1);
    fclose(f);
    vr_report_free(r);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"0", 0},       {"512", 512},         {"512B", 512},
              {"1KiB", 1024}, {"1.5 MiB", 1572864}, {"2GiB", 2 * GiB},
              {"1KB", 1000},  {"3MB", 3000000},     {"1GB", 1000000000},
              {"1gib", GiB},  {"1TiB", 1024 * GiB}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        if (vr_parse_size(ok[i].s, &v) != 0)
            fail_msg("'%s' rejected", ok[i].s);
        assert_int_equal(v, ok[i].v);
    }
    static const char *bad[] = {"", "MiB", "-1", "1XB", "1 MiB x", "abc", "1e400", NULL};
    uint64_t v;
    for (size_t i = 0; bad[i]; i++)
        if (vr_parse_size(bad[i], &v) == 0)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(vr_parse_size(NULL, &v), -1);
}

/* ---- symbolization on this very executable -------------------------------------------- */

__attribute__((noinline)) int vtt_user_site(int x);
__attribute__((noinline)) int vtt_user_site(int x)
{
    volatile int y = x + 1;
    return y * 2;
}

uintptr_t vtt_cxx_site_address(void);

typedef struct self_mod {
    uintptr_t addr;
    uint64_t bias, start, end;
    char path[512];
} self_mod;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    self_mod *m = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < hi) {
            m->bias = info->dlpi_addr;
            m->start = lo;
            m->end = hi;
            if (info->dlpi_name && info->dlpi_name[0])
                snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
            else if (!realpath("/proc/self/exe", m->path))
                m->path[0] = 0;
            return 1;
        }
    }
    return 0;
}

static void test_symbolize(void **state)
{
    (void)state;
    self_mod m = {.addr = (uintptr_t)&vtt_user_site};
    assert_int_equal(dl_iterate_phdr(find_self, &m), 1);
    const char *path = tmp_path("symbols");
    const char *argv[] = {"symbols"};
    vtg g;
    assert_int_equal(vtg_open(&g, path, 1, argv), 0);
    vtg_module(&g, 1, m.path, m.bias, m.start, m.end);
    vtg_module(&g, 2, "/opt/fake/libcudart.so.13", 0, 0x1000, 0x2000);
    vtg_stack(&g, 1, 0, (uint64_t)vtt_cxx_site_address() + 4);
    vtg_stack(&g, 2, 1, (uint64_t)(uintptr_t)&vtt_user_site + 4);
    vtg_stack(&g, 3, 2, 0x1100); /* inside "libcudart": folded */
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 100, 0x1000000, MiB, 3);
    vtg_end(&g, 200, 0);
    assert_int_equal(vtg_close(&g), 0);
    char err[256];
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->nleaks, 1);
    const vr_stack *st = &r->leaks[0].stack;
    assert_true(st->n >= 2);
    assert_string_equal(st->frames[0].function, "vtt_user_site");
    assert_non_null(strstr(st->frames[0].file, "test_report.c"));
    assert_true(st->frames[0].line > 0);
    assert_non_null(strstr(st->frames[st->n - 1].function, "vtt::cxx_site(int)"));
    vr_report_free(r);
}

/* ---- robustness ------------------------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* Every cut and many bit flips: a report or an error, never a crash. */
static void test_damaged(void **state)
{
    (void)state;
    vr_report *whole = scenario("frag");
    vr_report_free(whole);
    size_t len;
    unsigned char *b = slurp(tmp_path("frag"), &len);
    size_t ok = 0, errors = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char err[256];
        vr_options o = {.no_symbols = true};
        vr_report *r = vr_analyze_mem(b, cut, &o, err, sizeof err);
        if (r) {
            /* a cut at a frame boundary reads as a clean end without END */
            assert_true(r->truncated || !r->has_end || cut == len);
            ok++;
        } else {
            assert_true(err[0] != 0);
            errors++;
        }
        vr_report_free(r);
    }
    assert_true(errors > 0); /* the header alone cannot be cut */
    uint64_t seed = 7;
    for (int k = 0; k < 2000; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t pos = (size_t)(seed >> 33) % len;
        unsigned char bit = (unsigned char)(1u << ((seed >> 20) & 7));
        b[pos] ^= bit;
        char err[256];
        vr_options o = {.no_symbols = true};
        vr_report *r = vr_analyze_mem(b, len, &o, err, sizeof err);
        vr_report_free(r);
        b[pos] ^= bit;
    }
    free(b);
    (void)ok;
}

/* ---- the live map ------------------------------------------------------------------------ */

typedef struct kv {
    uint64_t key, value;
} kv;

static void test_map(void **state)
{
    (void)state;
    vr_map m;
    vr_map_init(&m, sizeof(kv));
    enum { N = 20000 };
    uint64_t *ref = calloc(N, sizeof(uint64_t));
    uint64_t seed = 1;
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t k = (seed >> 33) % N;
        if ((seed >> 20) & 1) {
            kv *e = vr_map_put(&m, k * 4096, NULL);
            e->value = (uint64_t)i + 1;
            ref[k] = (uint64_t)i + 1;
        } else {
            assert_int_equal(vr_map_del(&m, k * 4096), ref[k] != 0);
            ref[k] = 0;
        }
    }
    size_t live = 0;
    for (uint64_t k = 0; k < N; k++) {
        kv *e = vr_map_get(&m, k * 4096);
        if (ref[k]) {
            assert_non_null(e);
            assert_int_equal(e->value, ref[k]);
            live++;
        } else {
            assert_null(e);
        }
    }
    assert_int_equal(m.len, live);
    /* item numbers are stable: an entry stays at its item until deleted,
     * through inserts that grow the index */
    kv *first = vr_map_put(&m, 1, NULL);
    first->value = 7;
    uint32_t item = vr_map_index_of(&m, first);
    for (uint64_t k = 0; k < 4 * N; k++)
        vr_map_put(&m, (k + N) * 4096, NULL);
    assert_ptr_equal(vr_map_at(&m, item), vr_map_get(&m, 1));
    assert_int_equal(((kv *)vr_map_at(&m, item))->value, 7);
    assert_true(vr_map_del(&m, 1));
    assert_null(vr_map_at(&m, item));
    free(ref);
    vr_map_destroy(&m);
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak),
        cmocka_unit_test(test_leaks),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_verdict_capacity),
        cmocka_unit_test(test_verdict_leak),
        cmocka_unit_test(test_verdict_frag),
        cmocka_unit_test(test_verdict_external),
        cmocka_unit_test(test_peak_segment),
        cmocka_unit_test(test_hover_sites),
        cmocka_unit_test(test_peak_pending_at_end),
        cmocka_unit_test(test_batch_measured),
        cmocka_unit_test(test_recovered),
        cmocka_unit_test(test_oom_cap_keeps_fatal),
        cmocka_unit_test(test_vmm_handle_key),
        cmocka_unit_test(test_html_timeline_window),
        cmocka_unit_test(test_vmm_mapped_release),
        cmocka_unit_test(test_no_projection_first_step),
        cmocka_unit_test(test_claim_after_other_alloc),
        cmocka_unit_test(test_frag_at_peak_instant),
        cmocka_unit_test(test_outside_recording_agrees),
        cmocka_unit_test(test_oom_fatal_first),
        cmocka_unit_test(test_html_batch_kind),
        cmocka_unit_test(test_range_sites),
        cmocka_unit_test(test_json_keys),
        cmocka_unit_test(test_json_several),
        cmocka_unit_test(test_batch_advice),
        cmocka_unit_test(test_growth_merged),
        cmocka_unit_test(test_chrome_folded),
        cmocka_unit_test(test_text_sections),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_symbolize),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_map),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return rc;
}
