/* test_peak.c: the peak (peak.c): its value and instant, the sites and phases at it, caching
 * allocators' segments, the timeline's hover sites and the sites of the range
 * that dominates it. */
#include "report_test.h"

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

/* Allocations made while their thread has a CUDA stream capture open are
 * counted as the capture's (PyTorch's graph pools take their segments so),
 * at the device's peak reserved, at exit and at a failure: the one made
 * between begin and end on the capturing thread, not another thread's at
 * the same time, not the same thread's after the end, wherever the end was
 * made (relaxed mode: any thread). Without capture records nothing is. */
static void test_peak_captured(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "captured", 0, NULL);
    vt_tbuf *other = vt_writer_attach(g.w, 200);
    vtg_alloc(&g, 100, 0x10000000, 8 * MiB, 1);
    vtg_capture(&g, 200, 0xabc, 1);
    vtg_alloc(&g, 300, 0x20000000, 24 * MiB, 1); /* the capture's */
    vt_event ev = {.type = VT_REC_ALLOC, .ts_ns = g.t0 + 310};
    ev.u.alloc = (__typeof__(ev.u.alloc)){.addr = 0x30000000, .size = 2 * MiB, .stack = 1};
    assert_int_equal(vt_write(other, &ev), 0);         /* another thread's: not the capture's */
    vtg_alloc(&g, 400, 0x40000000, 40 * MiB + 512, 1); /* the capture's */
    ev = (vt_event){.type = VT_REC_CAPTURE, .ts_ns = g.t0 + 500};
    ev.u.capture.stream = 0xabc; /* ended by the other thread */
    assert_int_equal(vt_write(other, &ev), 0);
    vtg_alloc(&g, 600, 0x50000000, 1 * MiB, 1); /* after the end */
    vtg_free(&g, 700, 0x20000000);
    vtg_failed_on(&g, 800, 900 * MiB, 1, 2, 0, VT_API_CUDA_MALLOC, 100 * MiB, GiB);
    vtg_end(&g, 900, 0);
    vt_writer_detach(g.w, other);
    vr_report *r = close_and_analyze(&g, "captured");
    assert_true(r->had_captures);
    assert_int_equal(r->devices[0].peak_reserved, 75 * MiB + 512);
    assert_int_equal(r->devices[0].captured_at_peak, 64 * MiB + 512);
    assert_int_equal(r->devices[0].captured_at_exit, 40 * MiB + 512);
    assert_int_equal(r->ooms[0].live_captured, 40 * MiB + 512);
    char *json = render(vr_render_json, r);
    assert_non_null(strstr(json, "\"captured_at_peak_bytes\":67109376,"
                                 "\"captured_at_exit_bytes\":41943552"));
    assert_non_null(strstr(json, "\"live_captured_bytes\":41943552"));
    free(json);
    char *text = render(vr_render_text, r);
    assert_non_null(strstr(text, "made during CUDA graph captures: 64.00 MiB of the peak reserved, "
                                 "40.00 MiB live at exit"));
    assert_non_null(strstr(text, "of the 51.00 MiB live then, 40.00 MiB was allocated during CUDA "
                                 "graph captures"));
    vr_headline h;
    vr_headline_of(r, &h); /* most of the live memory is the graphs': the remedy says so */
    assert_non_null(strstr(h.remedy, "; 40.00 MiB of the 51.00 MiB live was allocated during CUDA "
                                     "graph captures and is kept while those graphs live"));
    free(text);
    vr_report_free(r);
    unlink(tmp_path("captured"));

    vr_report *plain = scenario("basic");
    assert_false(plain->had_captures);
    assert_int_equal(plain->devices[0].captured_at_peak, 0);
    text = render(vr_render_text, plain);
    assert_null(strstr(text, "CUDA graph"));
    free(text);
    vr_report_free(plain);
}

/* The per-thread default stream (VT_STREAM_PER_THREAD) is each thread's
 * own under one value: two threads capture "it" at once, and one thread's
 * end leaves the other's capture open (corpus.per_thread_stream: the
 * report counted 12 of its 16 MiB made during captures now and then); on
 * any other stream the end closes it, whichever thread ends it. */
static void test_peak_captured_per_thread_stream(void **state)
{
    (void)state;
    vtg g;
    open_trace(&g, "captured_ptsz", 0, NULL);
    vt_tbuf *other = vt_writer_attach(g.w, 200);
    vtg_capture(&g, 100, VT_STREAM_PER_THREAD, 1);
    vt_event ev = {.type = VT_REC_CAPTURE, .ts_ns = g.t0 + 110};
    ev.u.capture = (__typeof__(ev.u.capture)){.stream = VT_STREAM_PER_THREAD, .began = 1};
    assert_int_equal(vt_write(other, &ev), 0); /* the other thread's own capture */
    ev = (vt_event){.type = VT_REC_CAPTURE, .ts_ns = g.t0 + 120};
    ev.u.capture.stream = VT_STREAM_PER_THREAD; /* it ends its own */
    assert_int_equal(vt_write(other, &ev), 0);
    vtg_alloc(&g, 200, 0x10000000, 4 * MiB, 1); /* still this thread's capture's */
    vtg_capture(&g, 300, VT_STREAM_PER_THREAD, 0);
    vtg_alloc(&g, 400, 0x20000000, 1 * MiB, 1); /* after its end */
    vtg_end(&g, 500, 0);
    vt_writer_detach(g.w, other);
    vr_report *r = close_and_analyze(&g, "captured_ptsz");
    assert_int_equal(r->devices[0].captured_at_exit, 4 * MiB);
    vr_report_free(r);
    unlink(tmp_path("captured_ptsz"));
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

/* The device's first memory sample between a segment's cudaMalloc and its
 * heap registration (the preload samples at a device's first allocation):
 * the sample neither counts the segment as allocated (a random caching
 * allocator's peak came out one segment high: corpus.nvtxmem_random) nor
 * leaves it out of what the process holds there (the baseline). */
static void test_claim_after_memory_sample(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"sample"};
    open_trace(&g, "sample", 1, argv);
    vtg_alloc(&g, 100, 0x100000, 20 * MiB, 1); /* the segment */
    vtg_meminfo(&g, 105, GiB - 300 * MiB - 20 * MiB, GiB);
    vtg_heap(&g, 120, 7, 0x100000, 20 * MiB);
    vtg_region(&g, 130, 7, 0x100000, 1 * MiB, 1);
    vtg_failed_on(&g, 140, 2 * GiB, 1, 2, 0, VT_API_CUDA_MALLOC, GiB - 300 * MiB - 20 * MiB, GiB);
    vtg_end(&g, 200, 0);
    vr_report *r = close_and_analyze(&g, "sample");
    assert_int_equal(r->peak_allocated, 1 * MiB);
    assert_int_equal(r->peak_reserved, 20 * MiB);
    assert_int_equal(r->nooms, 1);
    assert_int_equal(r->ooms[0].baseline_bytes, 300 * MiB);
    assert_int_equal(r->ooms[0].external_bytes, 0);
    vr_report_free(r);
}

/* Heaps registered before their allocation is seen (another thread's
 * cudaMalloc recorded after the registration, in the trace's time order):
 * the allocation at a heap's address is claimed by it when it comes,
 * counted as reserved only, while many other heaps still wait and
 * allocations at other addresses count as allocated. */
static void test_claim_before_alloc(void **state)
{
    (void)state;
    vtg g;
    const char *argv[] = {"claimfirst"};
    open_trace(&g, "claimfirst", 1, argv);
    uint64_t t = 100;
    for (uint64_t k = 0; k < 50; k++) /* 50 heaps of 2 MiB, not allocated yet */
        vtg_heap(&g, t++, k + 1, 0x10000000 + k * 2 * MiB, 2 * MiB);
    vtg_alloc(&g, t++, 0x90000000, 3 * MiB, 1);               /* no heap there: allocated */
    vtg_alloc(&g, t++, 0x10000000 + 7 * 2 * MiB, 2 * MiB, 1); /* heap 8's */
    vtg_region(&g, t++, 8, 0x10000000 + 7 * 2 * MiB, 1 * MiB, 1);
    vtg_region_free(&g, t++, 8, 0x10000000 + 7 * 2 * MiB);
    vtg_free(&g, t++, 0x90000000);
    vtg_end(&g, t, 0);
    vr_report *r = close_and_analyze(&g, "claimfirst");
    assert_int_equal(r->peak_allocated, 4 * MiB);
    assert_int_equal(r->peak_reserved, 103 * MiB);
    vr_report_free(r);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak),
        cmocka_unit_test(test_peak_segment),
        cmocka_unit_test(test_hover_sites),
        cmocka_unit_test(test_peak_pending_at_end),
        cmocka_unit_test(test_claim_after_memory_sample),
        cmocka_unit_test(test_claim_after_other_alloc),
        cmocka_unit_test(test_claim_before_alloc),
        cmocka_unit_test(test_range_sites),
        cmocka_unit_test(test_peak_captured),
        cmocka_unit_test(test_peak_captured_per_thread_stream),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
