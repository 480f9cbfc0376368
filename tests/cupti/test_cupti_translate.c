/* test_cupti_translate.c: CUPTI activity records (the real CUDA 13 structs
 * from cupti_activity.h, built here by hand) -> vt_event, and the filter that
 * keeps activity from double counting what the hooks recorded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <cupti_activity.h>

#include "../../cupti/vtcupti.h"

static CUpti_ActivityMemory4 mem_rec(CUpti_ActivityMemoryOperationType op,
                                     CUpti_ActivityMemoryKind kind, uint64_t addr, uint64_t bytes)
{
    CUpti_ActivityMemory4 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = op;
    r.memoryKind = kind;
    r.correlationId = 42;
    r.address = addr;
    r.bytes = bytes;
    r.timestamp = 123456789;
    r.deviceId = 1;
    r.contextId = 7;
    r.streamId = CUPTI_INVALID_STREAM_ID;
    return r;
}

static void test_device_allocation(void **state)
{
    (void)state;
    CUpti_ActivityMemory4 r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x7f0000001000, 1 << 20);
    vt_event ev;
    assert_int_equal(vtc_translate_memory(&r, &ev), 1);
    assert_int_equal(ev.type, VT_REC_ALLOC);
    assert_int_equal(ev.ts_ns, 123456789);
    assert_int_equal(ev.u.alloc.addr, 0x7f0000001000);
    assert_int_equal(ev.u.alloc.size, 1 << 20);
    assert_int_equal(ev.u.alloc.device, 1);
    assert_int_equal(ev.u.alloc.api, VT_API_CUPTI);
    assert_int_equal(ev.u.alloc.stream, 0);
    assert_int_equal(ev.u.alloc.stack, 0);
}

static void test_async_and_host_memory(void **state)
{
    (void)state;
    vt_event ev;
    CUpti_ActivityMemory4 r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x1000, 512);
    r.isAsync = 1;
    r.streamId = 13;
    assert_int_equal(vtc_translate_memory(&r, &ev), 1);
    assert_int_equal(ev.u.alloc.stream, 13);
    r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                0x2000, 4096);
    assert_int_equal(vtc_translate_memory(&r, &ev), 1);
    assert_int_equal(ev.u.alloc.device, -1);
    r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    assert_int_equal(vtc_translate_memory(&r, &ev), 1);
    assert_int_equal(ev.u.alloc.device, 1);
}

static void test_release(void **state)
{
    (void)state;
    CUpti_ActivityMemory4 r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x3000, 4096);
    vt_event ev;
    assert_int_equal(vtc_translate_memory(&r, &ev), 1);
    assert_int_equal(ev.type, VT_REC_FREE);
    assert_int_equal(ev.u.free.addr, 0x3000);
    assert_int_equal(ev.u.free.device, 1);
    assert_int_equal(ev.u.free.api, VT_API_CUPTI);
}

static void test_not_counted(void **state)
{
    (void)state;
    vt_event ev;
    CUpti_ActivityMemory4 r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x1000, 1);
    assert_int_equal(vtc_translate_memory(&r, &ev), 0);
    r = mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                0, 64);
    assert_int_equal(vtc_translate_memory(&r, &ev), 0);
    r.address = 0x1000;
    r.bytes = 0;
    assert_int_equal(vtc_translate_memory(&r, &ev), 0);
    assert_int_equal(vtc_translate_memory(NULL, &ev), -1);
    assert_int_equal(vtc_translate_memory(&r, NULL), -1);
}

static CUpti_ActivityMemoryPool3 pool_rec(CUpti_ActivityMemoryPoolOperationType op)
{
    CUpti_ActivityMemoryPool3 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    r.memoryPoolOperationType = op;
    r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    r.deviceId = 0;
    r.address = 0x7f0000000000;
    r.size = 2 << 20;
    r.releaseThreshold = 1 << 20;
    r.utilizedSize = 4096;
    r.minBytesToKeep = 65536;
    r.timestamp = 99;
    return r;
}

static void test_pool_notes(void **state)
{
    (void)state;
    char buf[256];
    vt_event ev;
    CUpti_ActivityMemoryPool3 r = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED);
    assert_int_equal(vtc_translate_pool(&r, &ev, buf, sizeof buf), 1);
    assert_int_equal(ev.type, VT_REC_NOTE);
    assert_int_equal(ev.ts_ns, 99);
    assert_ptr_equal(ev.u.note.text, buf);
    assert_string_equal(buf, "CUPTI memory pool created: device 0 address 0x7f0000000000 size "
                             "2097152 release_threshold 1048576 utilized 4096 type local");
    r = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED);
    assert_int_equal(vtc_translate_pool(&r, &ev, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "pool trimmed: "));
    assert_non_null(strstr(buf, " min_bytes_to_keep 65536"));
    r = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED);
    r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
    assert_int_equal(vtc_translate_pool(&r, &ev, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "pool destroyed: "));
    assert_non_null(strstr(buf, "type imported"));
}

static void test_pool_edges(void **state)
{
    (void)state;
    char small[16];
    vt_event ev;
    CUpti_ActivityMemoryPool3 r = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED);
    assert_int_equal(vtc_translate_pool(&r, &ev, small, sizeof small), 1);
    assert_int_equal(strlen(small), sizeof small - 1); /* truncated, terminated */
    r = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID);
    assert_int_equal(vtc_translate_pool(&r, &ev, small, sizeof small), 0);
    assert_int_equal(vtc_translate_pool(NULL, &ev, small, sizeof small), -1);
    assert_int_equal(vtc_translate_pool(&r, &ev, NULL, 0), -1);
}

/* ---- filter ------------------------------------------------------------- */

static vt_event alloc_ev(uint64_t addr)
{
    vt_event ev = {.type = VT_REC_ALLOC};
    ev.u.alloc.addr = addr;
    ev.u.alloc.size = 64;
    return ev;
}

static vt_event free_ev(uint64_t addr)
{
    vt_event ev = {.type = VT_REC_FREE};
    ev.u.free.addr = addr;
    return ev;
}

static void test_filter_hooked_calls_dropped(void **state)
{
    (void)state;
    vtc_filter *f = vtc_filter_new();
    assert_non_null(f);
    vt_event a = alloc_ev(0x1000), fr = free_ev(0x1000);
    vtc_filter_mark_hooked(f, 5); /* cudaMalloc made inside a hook */
    vtc_filter_mark_hooked(f, 6); /* its cudaFree, also hooked */
    assert_false(vtc_filter_keep(f, &a, 5, false));
    assert_false(vtc_filter_keep(f, &fr, 6, false));
    assert_int_equal(vtc_filter_live(f), 0);
    /* the hooks still hold it live (record arrived before the hooked free) */
    vt_event b = alloc_ev(0x2000);
    assert_false(vtc_filter_keep(f, &b, 7, true));
    vtc_filter_free(f);
}

static void test_filter_unhooked_pair_kept(void **state)
{
    (void)state;
    vtc_filter *f = vtc_filter_new();
    vt_event a = alloc_ev(0x3000), fr = free_ev(0x3000);
    assert_true(vtc_filter_keep(f, &a, 10, false));
    assert_int_equal(vtc_filter_live(f), 1);
    assert_true(vtc_filter_keep(f, &fr, 11, false));
    assert_false(vtc_filter_keep(f, &fr, 12, false)); /* double free: once only */
    assert_int_equal(vtc_filter_live(f), 0);
    /* a free of something the hooks allocated is not CUPTI's to record */
    vt_event other = free_ev(0x4000);
    assert_false(vtc_filter_keep(f, &other, 13, false));
    vtc_filter_free(f);
}

/* A record arrives after many more calls than the old 65 536-id window held
 * (corpus_tiny on an H200: 100 000 allocations, then their frees, before the
 * first buffer came): the hooked call is still known and dropped. */
static void test_filter_late_records(void **state)
{
    (void)state;
    vtc_filter *f = vtc_filter_new();
    assert_non_null(f);
    const uint32_t calls = 400000;
    for (uint32_t id = 1; id <= calls; id++)
        vtc_filter_mark_hooked(f, id);
    for (uint32_t id = 1; id <= calls; id += 2) {
        vt_event a = alloc_ev((uint64_t)id << 12), fr = free_ev((uint64_t)id << 12);
        assert_false(vtc_filter_keep(f, &a, id, false));
        assert_false(vtc_filter_keep(f, &fr, id + 1, false));
    }
    assert_int_equal(vtc_filter_live(f), 0);
    vtc_filter_free(f);
}

static void test_filter_many_live(void **state)
{
    (void)state;
    vtc_filter *f = vtc_filter_new();
    for (uint64_t i = 1; i <= 5000; i++) {
        vt_event a = alloc_ev(i << 12);
        assert_true(vtc_filter_keep(f, &a, (uint32_t)i, false));
    }
    assert_int_equal(vtc_filter_live(f), 5000);
    for (uint64_t i = 1; i <= 5000; i += 2) {
        vt_event fr = free_ev(i << 12);
        assert_true(vtc_filter_keep(f, &fr, 0, false));
    }
    assert_int_equal(vtc_filter_live(f), 2500);
    for (uint64_t i = 2; i <= 5000; i += 2) {
        vt_event fr = free_ev(i << 12);
        assert_true(vtc_filter_keep(f, &fr, 0, false));
    }
    assert_int_equal(vtc_filter_live(f), 0);
    vtc_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_allocation),
        cmocka_unit_test(test_async_and_host_memory),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_not_counted),
        cmocka_unit_test(test_pool_notes),
        cmocka_unit_test(test_pool_edges),
        cmocka_unit_test(test_filter_hooked_calls_dropped),
        cmocka_unit_test(test_filter_unhooked_pair_kept),
        cmocka_unit_test(test_filter_late_records),
        cmocka_unit_test(test_filter_many_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
