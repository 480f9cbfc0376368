/* test_nvtx_inject.c: unit tests of interpose/nvtx_inject.c through the real
 * NVTX header implementation (static injection, see static_inject.c) and a
 * fake session (fake_vti.c). Also drives the entry points directly with
 * hand-made export tables, as a second NVTX-embedding module would. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include "nvtx_test_helpers.h"

#include "fake_vti.h"

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);

static char arena[65536];

static void start(bool enabled)
{
    fake_enabled = enabled;
    fake_reset();
}

static const vt_event *ev_at(size_t i)
{
    assert_true(i < fake_nevents);
    return &fake_events[i].ev;
}

static void check_range(size_t i, enum vt_rec type, const char *domain, const char *name)
{
    const vt_event *ev = ev_at(i);
    assert_int_equal(ev->type, type);
    if (domain)
        assert_string_equal(fake_string(ev->u.range.domain), domain);
    else
        assert_int_equal(ev->u.range.domain, 0);
    if (name)
        assert_string_equal(fake_string(ev->u.range.name), name);
}

static void test_disabled_records_nothing(void **state)
{
    (void)state;
    start(false);
    assert_int_equal(nvtxRangePushA("off"), 0);
    assert_int_equal(nvtxRangePop(), 0);
    nvtxMarkA("off");
    nvtxRangeId_t id = nvtxRangeStartA("off");
    assert_true(id != 0);
    nvtxRangeEnd(id);
    nvtxMemVirtualRangeDesc_t va = {sizeof arena, arena};
    nvtxMemHeapDesc_t hd = {NVTX_EXT_COMPATID_MEM,
                            sizeof hd,
                            0,
                            NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
                            NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                            sizeof va,
                            &va,
                            0,
                            0,
                            {0}};
    nvtxMemHeapHandle_t h = nvtxMemHeapRegister(NULL, &hd);
    assert_non_null(h);
    assert_ptr_not_equal(h, NVTX_MEM_HEAP_HANDLE_NO_TOOL);
    nvtxMemVirtualRangeDesc_t r[2] = {{64, arena}, {64, arena + 64}};
    nvtxMemRegionHandle_t out[2] = {0};
    nvtxMemRegionsRegisterBatch_t rb = {
        NVTX_EXT_COMPATID_MEM, sizeof rb, NVTX_MEM_TYPE_VIRTUAL_ADDRESS, h, 2, sizeof r[0], r, out};
    nvtxMemRegionsRegister(NULL, &rb);
    assert_non_null(out[0]);
    assert_non_null(out[1]);
    assert_ptr_not_equal(out[0], out[1]);
    nvtxMemHeapUnregister(NULL, h);
    assert_int_equal(fake_nevents, 0);
    assert_int_equal(fake_stack_calls, 0);
}

static void test_ranges_nested(void **state)
{
    (void)state;
    start(true);
    assert_int_equal(nvtxRangePushA("outer"), 0);
    nvtxDomainHandle_t d = nvtxDomainCreateA("vtdom");
    assert_non_null(d);
    nvtxEventAttributes_t a = attr_ascii("dpush");
    assert_int_equal(nvtxDomainRangePushEx(d, &a), 0);
    assert_int_equal(nvtxRangePushW(L"wide-\u00fc\u540d\U0001F600"), 1);
    nvtxMarkA("m1");
    assert_int_equal(nvtxRangePop(), 1);
    assert_int_equal(nvtxDomainRangePop(d), 0);
    assert_int_equal(nvtxRangePop(), 0);
    assert_int_equal(nvtxRangePop(), -1);
    assert_int_equal(fake_nevents, 7);
    check_range(0, VT_REC_RANGE_PUSH, NULL, "outer");
    check_range(1, VT_REC_RANGE_PUSH, "vtdom", "dpush");
    check_range(2, VT_REC_RANGE_PUSH, NULL, "wide-\xc3\xbc\xe5\x90\x8d\xf0\x9f\x98\x80");
    check_range(3, VT_REC_MARK, NULL, "m1");
    check_range(4, VT_REC_RANGE_POP, NULL, NULL);
    check_range(5, VT_REC_RANGE_POP, "vtdom", NULL);
    check_range(6, VT_REC_RANGE_POP, NULL, NULL);
}

static void test_start_end(void **state)
{
    (void)state;
    start(true);
    nvtxDomainHandle_t d = nvtxDomainCreateW(L"vtdom");
    assert_ptr_equal(d, nvtxDomainCreateA("vtdom"));
    nvtxRangeId_t id1 = nvtxRangeStartA("a");
    nvtxEventAttributes_t a = attr_ascii(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"b";
    nvtxRangeId_t id2 = nvtxDomainRangeStartEx(d, &a);
    assert_true(id1 != 0 && id2 != 0 && id1 != id2);
    nvtxDomainRangeEnd(d, id2);
    nvtxRangeEnd(id1);
    assert_int_equal(fake_nevents, 4);
    assert_int_equal(ev_at(0)->type, VT_REC_RANGE_START);
    assert_int_equal(ev_at(0)->u.range_se.id, id1);
    assert_int_equal(ev_at(0)->u.range_se.domain, 0);
    assert_string_equal(fake_string(ev_at(0)->u.range_se.name), "a");
    assert_int_equal(ev_at(1)->u.range_se.id, id2);
    assert_string_equal(fake_string(ev_at(1)->u.range_se.domain), "vtdom");
    assert_string_equal(fake_string(ev_at(1)->u.range_se.name), "b");
    assert_int_equal(ev_at(2)->type, VT_REC_RANGE_END);
    assert_int_equal(ev_at(2)->u.range_se.id, id2);
    assert_int_equal(ev_at(3)->u.range_se.id, id1);
    /* started before the session: its end is not recorded */
    fake_enabled = false;
    nvtxRangeId_t id3 = nvtxRangeStartA("early");
    fake_enabled = true;
    nvtxRangeEnd(id3);
    assert_int_equal(fake_nevents, 4);
}

static void test_late_session_keeps_balance(void **state)
{
    (void)state;
    start(false);
    assert_int_equal(nvtxRangePushA("early"), 0);
    fake_enabled = true;
    assert_int_equal(nvtxRangePushA("late"), 1);
    assert_int_equal(nvtxRangePop(), 1);
    assert_int_equal(nvtxRangePop(), 0);
    assert_int_equal(fake_nevents, 2);
    check_range(0, VT_REC_RANGE_PUSH, NULL, "late");
    check_range(1, VT_REC_RANGE_POP, NULL, NULL);
}

static void test_registered_strings(void **state)
{
    (void)state;
    start(true);
    nvtxDomainHandle_t d = nvtxDomainCreateA("vtdom");
    nvtxStringHandle_t s1 = nvtxDomainRegisterStringA(d, "reg");
    nvtxStringHandle_t s2 = nvtxDomainRegisterStringW(d, L"reg");
    assert_non_null(s1);
    assert_ptr_equal(s1, s2);
    nvtxEventAttributes_t a = attr_ascii(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s1;
    nvtxDomainMarkEx(d, &a);
    nvtxMarkEx(&a);
    assert_int_equal(fake_nevents, 2);
    check_range(0, VT_REC_MARK, "vtdom", "reg");
    check_range(1, VT_REC_MARK, NULL, "reg");
}

static nvtxMemHeapHandle_t arena_heap(nvtxDomainHandle_t d)
{
    nvtxMemVirtualRangeDesc_t va = {sizeof arena, arena};
    nvtxMemHeapDesc_t hd = {NVTX_EXT_COMPATID_MEM,
                            sizeof hd,
                            0,
                            NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
                            NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                            sizeof va,
                            &va,
                            0,
                            0,
                            {0}};
    return nvtxMemHeapRegister(d, &hd);
}

static void name_two(nvtxDomainHandle_t d, nvtxMemRegionHandle_t by_handle, const void *by_ptr)
{
    nvtxMemRegionNameDesc_t n[2] = {0};
    n[0].regionRefType = NVTX_MEM_REGION_REF_TYPE_HANDLE;
    n[0].nameType = NVTX_MESSAGE_TYPE_ASCII;
    n[0].region.handle = by_handle;
    n[0].name.ascii = "tensor-b";
    n[1].regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    n[1].nameType = NVTX_MESSAGE_TYPE_UNICODE;
    n[1].region.pointer = by_ptr;
    n[1].name.unicode = L"t0";
    nvtxMemRegionsNameBatch_t b = {NVTX_EXT_COMPATID_MEM, sizeof b, 0, 2, sizeof n[0], n, 0};
    nvtxMemRegionsName(d, &b);
}

static void check_region(size_t i, enum vt_rec type, nvtxMemHeapHandle_t h, const void *addr,
                         uint64_t size)
{
    const vt_event *ev = ev_at(i);
    assert_int_equal(ev->type, type);
    assert_int_equal(ev->u.region.heap, (uintptr_t)h);
    assert_int_equal(ev->u.region.addr, (uintptr_t)addr);
    if (type == VT_REC_REGION_REGISTER) {
        assert_int_equal(ev->u.region.size, size);
        assert_int_equal(ev->u.region.stack, FAKE_STACK_ID);
    }
    if (type == VT_REC_REGION_RESIZE)
        assert_int_equal(ev->u.region.size, size);
}

static void test_mem_heap_and_regions(void **state)
{
    (void)state;
    start(true);
    nvtxDomainHandle_t d = nvtxDomainCreateA("alloc");
    nvtxMemHeapHandle_t h = arena_heap(d);
    assert_non_null(h);
    nvtxMemVirtualRangeDesc_t r[3] = {{4096, arena}, {4096, arena + 4096}, {16384, arena + 8192}};
    nvtxMemRegionHandle_t out[3] = {0};
    regions_register(d, h, r, 3, out);
    nvtxMemVirtualRangeDesc_t rs = {8192, arena + 8192};
    nvtxMemRegionsResizeBatch_t rb = {
        NVTX_EXT_COMPATID_MEM, sizeof rb, NVTX_MEM_TYPE_VIRTUAL_ADDRESS, 1, sizeof rs, &rs};
    nvtxMemRegionsResize(d, &rb);
    name_two(d, out[1], arena);
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){.pointer = arena});
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){.handle = out[1]});
    nvtxMemHeapReset(d, h);
    /* dropped by the reset: no second unregister */
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_POINTER,
                   (nvtxMemRegionRef_t){.pointer = arena + 8192});
    nvtxMemVirtualRangeDesc_t again = {100, arena};
    regions_register(d, h, &again, 1, NULL);
    nvtxMemHeapUnregister(d, h);

    assert_int_equal(fake_nevents, 12);
    const vt_event *hr = ev_at(0);
    assert_int_equal(hr->type, VT_REC_HEAP_REGISTER);
    assert_int_equal(hr->u.heap.heap, (uintptr_t)h);
    assert_int_equal(hr->u.heap.addr, (uintptr_t)arena);
    assert_int_equal(hr->u.heap.size, sizeof arena);
    assert_int_equal(hr->u.heap.usage, NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR);
    for (int i = 0; i < 3; i++)
        check_region(1 + i, VT_REC_REGION_REGISTER, h, r[i].ptr, r[i].size);
    check_region(4, VT_REC_REGION_RESIZE, h, arena + 8192, 8192);
    check_region(5, VT_REC_REGION_NAME, h, arena + 4096, 0);
    assert_string_equal(fake_string(ev_at(5)->u.region.name), "tensor-b");
    check_region(6, VT_REC_REGION_NAME, h, arena, 0);
    assert_string_equal(fake_string(ev_at(6)->u.region.name), "t0");
    check_region(7, VT_REC_REGION_UNREGISTER, h, arena, 0);
    check_region(8, VT_REC_REGION_UNREGISTER, h, arena + 4096, 0);
    assert_int_equal(ev_at(9)->type, VT_REC_HEAP_RESET);
    assert_int_equal(ev_at(9)->u.heap.heap, (uintptr_t)h);
    check_region(10, VT_REC_REGION_REGISTER, h, arena, 100);
    assert_int_equal(ev_at(11)->type, VT_REC_HEAP_UNREGISTER);
    assert_int_equal(ev_at(11)->u.heap.heap, (uintptr_t)h);
    assert_int_equal(fake_stack_calls, 2); /* one stack per batch */
}

/* One churn step: the records since the last step are exactly `want` (0 or 1
 * region record of type, addr, size). */
static void churn_expect(size_t want, enum vt_rec type, nvtxMemHeapHandle_t h, const void *addr,
                         uint64_t size)
{
    assert_int_equal(fake_nevents, want);
    if (want)
        check_region(0, type, h, addr, size);
    fake_reset();
}

/* Many registers (with and without handles handed out) and unregisters (by
 * pointer and by handle, of live and of gone regions) and heap resets
 * against a model of which regions are live:
 * each unregister of a live region is one record with its address, any other
 * none. Deletions from the region maps (tombstones turned back into empty
 * slots) must keep every live region findable and no gone one. */
static void test_mem_region_churn(void **state)
{
    (void)state;
    enum { SLOTS = 512, STEPS = 20000 };
    static nvtxMemRegionHandle_t handle[SLOTS];
    static bool live[SLOTS];
    uint32_t x = 12345;
    start(true);
    memset(live, 0, sizeof live);
    nvtxMemHeapHandle_t h = arena_heap(NULL);
    fake_reset();
    for (int step = 0; step < STEPS; step++) {
        x = x * 1103515245u + 12345u;
        unsigned i = (x >> 8) % SLOTS, op = (x >> 20) % 16;
        char *addr = arena + i * (sizeof arena / SLOTS);
        nvtxMemVirtualRangeDesc_t r = {16 + i, addr};
        if (op == 0 && step % 997 == 0) {
            nvtxMemHeapReset(NULL, h);
            assert_int_equal(fake_nevents, 1);
            fake_reset();
            memset(live, 0, sizeof live);
        } else if (op < 8 && !live[i]) { /* half without handles: by pointer only */
            handle[i] = NULL;
            regions_register(NULL, h, &r, 1, op & 1 ? &handle[i] : NULL);
            churn_expect(1, VT_REC_REGION_REGISTER, h, addr, r.size);
            live[i] = true;
        } else if (op < 12) {
            unregister_one(NULL, NVTX_MEM_REGION_REF_TYPE_POINTER,
                           (nvtxMemRegionRef_t){.pointer = addr});
            churn_expect(live[i], VT_REC_REGION_UNREGISTER, h, addr, 0);
            live[i] = false;
        } else {
            unregister_one(NULL, NVTX_MEM_REGION_REF_TYPE_HANDLE,
                           (nvtxMemRegionRef_t){.handle = handle[i]});
            churn_expect(live[i] && handle[i], VT_REC_REGION_UNREGISTER, h, addr, 0);
            live[i] = live[i] && !handle[i];
        }
    }
    nvtxMemHeapUnregister(NULL, h);
}

static void test_mem_before_session(void **state)
{
    (void)state;
    start(false);
    nvtxMemHeapHandle_t h = arena_heap(NULL);
    nvtxMemVirtualRangeDesc_t r = {4096, arena};
    nvtxMemRegionHandle_t out = NULL;
    regions_register(NULL, h, &r, 1, &out);
    assert_non_null(out);
    fake_enabled = true;
    unregister_one(NULL, NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){.handle = out});
    nvtxMemHeapReset(NULL, h);
    nvtxMemHeapUnregister(NULL, h);
    /* regions of an unrecorded heap are not recorded either */
    regions_register(NULL, h, &r, 1, NULL);
    assert_int_equal(fake_nevents, 0);
}

static void test_mem_process_wide_and_other_types(void **state)
{
    (void)state;
    start(true);
    nvtxMemVirtualRangeDesc_t r = {256, arena + 256};
    regions_register(NULL, NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE, &r, 1, NULL);
    unregister_one(NULL, NVTX_MEM_REGION_REF_TYPE_POINTER,
                   (nvtxMemRegionRef_t){.pointer = arena + 256});
    assert_int_equal(fake_nevents, 2);
    check_region(0, VT_REC_REGION_REGISTER, NULL, arena + 256, 256);
    check_region(1, VT_REC_REGION_UNREGISTER, NULL, arena + 256, 0);
    nvtxMemRegionHandle_t out = NULL;
    nvtxMemRegionsRegisterBatch_t b = {
        NVTX_EXT_COMPATID_MEM, sizeof b, 0x99, NULL, 1, sizeof r, &r, &out};
    nvtxMemRegionsRegister(NULL, &b);
    nvtxMemRegionsRegister(NULL, &b);
    assert_non_null(out);
    assert_int_equal(fake_count(VT_REC_REGION_REGISTER), 1);
    assert_int_equal(fake_count(VT_REC_NOTE), 1);
    nvtxMemRegionsRegister(NULL, NULL); /* never crash */
    nvtxMemHeapRegister(NULL, NULL);
}

static void *thread_body(void *arg)
{
    int *levels = arg;
    levels[0] = nvtxRangePushA("worker");
    levels[1] = nvtxRangePushA("inner");
    nvtxRangePop();
    nvtxRangePop();
    nvtxNameOsThreadA((uint32_t)gettid(), "worker-thread");
    return NULL;
}

static void test_per_thread(void **state)
{
    (void)state;
    start(true);
    assert_int_equal(nvtxRangePushA("main"), 0);
    int levels[2] = {-2, -2};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_body, levels), 0);
    pthread_join(t, NULL);
    assert_int_equal(nvtxRangePop(), 0);
    assert_int_equal(levels[0], 0);
    assert_int_equal(levels[1], 1);
    assert_int_equal(fake_nevents, 7);
    uint32_t me = (uint32_t)gettid();
    assert_int_equal(fake_events[0].tid, me);
    assert_true(fake_events[1].tid != me);
    assert_int_equal(fake_events[5].ev.type, VT_REC_THREAD);
    assert_string_equal(fake_events[5].text, "worker-thread");
    assert_int_equal(fake_events[5].ev.u.thread.id, fake_events[1].tid);
    assert_int_equal(fake_events[6].tid, me);
}

/* ---- A second embedding module, driven by hand -------------------------- */

#define SENTINEL ((NvtxFunctionPointer)(uintptr_t)0x5e)

static NvtxFunctionPointer core_slots[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer *core_table[NVTX_CBID_CORE_SIZE + 1];
static NvtxFunctionPointer small_slots[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer *small_table[NVTX_CBID_CORE_SIZE + 1];
static unsigned small_size;
static NvtxFunctionPointer core2_slots[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *core2_table[NVTX_CBID_CORE2_SIZE + 1];
static bool use_small, has_core2;

static int fake_module_table(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size)
{
    if (m == NVTX_CB_MODULE_CORE) {
        *out = use_small ? small_table : core_table;
        *size = use_small ? small_size : NVTX_CBID_CORE_SIZE;
        return 1;
    }
    if (m == NVTX_CB_MODULE_CORE2 && has_core2) {
        *out = core2_table;
        *size = NVTX_CBID_CORE2_SIZE;
        return 1;
    }
    return 0;
}

static const NvtxExportTableCallbacks fake_callbacks = {sizeof fake_callbacks, fake_module_table};

static const void *fake_get(uint32_t id)
{
    return id == NVTX_ETID_CALLBACKS ? &fake_callbacks : NULL;
}

static const void *broken_get(uint32_t id)
{
    (void)id;
    return NULL;
}

static void setup_tables(void)
{
    for (unsigned i = 1; i < NVTX_CBID_CORE_SIZE; i++) {
        core_table[i] = &core_slots[i];
        small_table[i] = &small_slots[i];
        small_slots[i] = SENTINEL;
    }
    for (unsigned i = 1; i < NVTX_CBID_CORE2_SIZE; i++)
        core2_table[i] = &core2_slots[i];
}

static void test_init_tables_idempotent(void **state)
{
    (void)state;
    setup_tables();
    has_core2 = true;
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 1);
    NvtxFunctionPointer first[NVTX_CBID_CORE_SIZE];
    memcpy(first, core_slots, sizeof first);
    for (unsigned i = 1; i < NVTX_CBID_CORE_SIZE; i++)
        assert_non_null(core_slots[i]);
    for (unsigned i = 1; i < NVTX_CBID_CORE2_SIZE; i++)
        assert_non_null(core2_slots[i]);
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 1);
    assert_memory_equal(first, core_slots, sizeof first);
    /* calls through this module's table are recorded */
    start(true);
    int (*push)(const char *) = (int (*)(const char *))core_slots[NVTX_CBID_CORE_RangePushA];
    int (*pop)(void) = (int (*)(void))core_slots[NVTX_CBID_CORE_RangePop];
    assert_int_equal(push("module2"), 0);
    assert_int_equal(pop(), 0);
    assert_int_equal(fake_nevents, 2);
    check_range(0, VT_REC_RANGE_PUSH, NULL, "module2");
}

static void test_init_small_table_and_errors(void **state)
{
    (void)state;
    setup_tables();
    use_small = true;
    has_core2 = false; /* an NVTX without CORE2: still attaches */
    small_size = 4;
    assert_int_equal(InitializeInjectionNvtx2(fake_get), 1);
    use_small = false;
    for (unsigned i = 1; i < 4; i++)
        assert_true(small_slots[i] != SENTINEL && small_slots[i] != NULL);
    for (unsigned i = 4; i < NVTX_CBID_CORE_SIZE; i++)
        assert_true(small_slots[i] == SENTINEL);
    assert_int_equal(InitializeInjectionNvtx2(broken_get), 0);
    assert_int_equal(InitializeInjectionNvtx2(NULL), 0);
}

static void test_ext_init(void **state)
{
    (void)state;
    intptr_t slots[6] = {0, 0, 0, 0, 12345, 12345};
    nvtxExtModuleSegment_t seg = {1, 4, slots};
    nvtxExtModuleInfo_t info = {
        NVTX_VERSION, sizeof info, NVTX_EXT_MODULEID_MEM, NVTX_EXT_COMPATID_MEM, 1, &seg,
        NULL,         NULL};
    assert_int_equal(InitializeInjectionNvtxExtension(&info), 1);
    intptr_t first[6];
    memcpy(first, slots, sizeof first);
    for (int i = 0; i < 4; i++)
        assert_true(slots[i] > NVTX_EXTENSION_INIT_FN_FAILED);
    assert_int_equal(slots[4], 12345);
    assert_int_equal(InitializeInjectionNvtxExtension(&info), 1);
    assert_memory_equal(first, slots, sizeof first);
    intptr_t other[4] = {0};
    seg.functionSlots = other;
    info.moduleId = 2; /* not Mem: left alone */
    assert_int_equal(InitializeInjectionNvtxExtension(&info), 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(other[i], 0);
    assert_int_equal(InitializeInjectionNvtxExtension(NULL), 0);
}

int main(void)
{
    unsetenv("NVTX_INJECTION64_PATH"); /* static injection only */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disabled_records_nothing),
        cmocka_unit_test(test_ranges_nested),
        cmocka_unit_test(test_start_end),
        cmocka_unit_test(test_late_session_keeps_balance),
        cmocka_unit_test(test_registered_strings),
        cmocka_unit_test(test_mem_heap_and_regions),
        cmocka_unit_test(test_mem_region_churn),
        cmocka_unit_test(test_mem_before_session),
        cmocka_unit_test(test_mem_process_wide_and_other_types),
        cmocka_unit_test(test_per_thread),
        cmocka_unit_test(test_init_tables_idempotent),
        cmocka_unit_test(test_init_small_table_and_errors),
        cmocka_unit_test(test_ext_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
