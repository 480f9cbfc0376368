/* nvtx_inject.c: the NVTX injection inside libvramtrace.so (interpose/NVTX.md).
 *
 * NVTX (header-only, embedded in every module that uses it) loads the library
 * named by NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2 once per
 * embedding module, and InitializeInjectionNvtxExtension once per module and
 * extension (NVIDIA/NVTX c/include/nvtx3/nvtxDetail/nvtxInit.h, nvtxExtInit.h).
 * The preload's constructor points NVTX_INJECTION64_PATH at this very library,
 * so dlopen() returns the already loaded object: no second session.
 *
 * What is recorded (through vti.h only, on the calling thread):
 *   push/pop, mark, start/end (default domain = 0, others: the interned domain
 *   name), wide names as UTF-8; Mem extension heaps and regions of type
 *   NVTX_MEM_TYPE_VIRTUAL_ADDRESS (others are ignored with one NOTE).
 * Handles (domains, strings, ranges, heaps, regions, resources) are valid and
 * unique whether or not tracing is on; events are written only while
 * vti_enabled(); a beginning (push, mark, start, heap registration, thread
 * name) starts the session when it has not started (vti_recording). A pop, end or unregister whose
 * beginning was not recorded is not recorded either, so the trace stays balanced across a late
 * session start.
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "regionmap.h"
#include "vti.h"

#define VTN_EXPORT __attribute__((visibility("default")))
#define VTN_TEXT_MAX 1024    /* bytes of one converted wide name, NUL included */
#define VTN_NAME_BUCKETS 256 /* domain / registered-string pool */
#define VTN_NAME_MAX 65536   /* distinct names kept at most (memory bound) */
#define VTN_TLS_DOMAINS 16   /* per-thread push/pop stacks (one per domain) */

/* ---- UTF-32 (wchar_t on Linux) to UTF-8 ----------------------------------- */

/* Encode code point c into out (4 bytes room); returns the byte count.
 * Surrogates and values above U+10FFFF become U+FFFD. */
static size_t utf8_encode(uint32_t c, char *out)
{
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        c = 0xFFFD;
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Convert the wide string w into UTF-8 in out (cap bytes, NUL included);
 * truncates at a character boundary. Returns out. */
static char *wide_to_utf8(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    char tmp[4];
    for (; *w; w++) {
        size_t k = utf8_encode((uint32_t)*w, tmp);
        if (n + k + 1 > cap)
            break;
        memcpy(out + n, tmp, k);
        n += k;
    }
    out[n] = '\0';
    return out;
}

/* ---- Name pool: domain handles and registered-string handles --------------
 * A handle is a pointer to an immutable, never-freed entry: lookups need no
 * lock. Entries are deduplicated by text, so memory grows with distinct
 * names only; nvtxDomainDestroy keeps the entry (a re-created domain gets the
 * same handle). */

struct vtn_name {
    struct vtn_name *next;
    uint64_t hash;
    char text[];
};

static struct vtn_name *name_buckets[VTN_NAME_BUCKETS];
static size_t name_count;
static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct vtn_name *name_new(const char *text, uint64_t hash, struct vtn_name *next)
{
    size_t len = strlen(text);
    struct vtn_name *n = malloc(sizeof *n + len + 1);
    if (!n)
        return NULL;
    n->next = next;
    n->hash = hash;
    memcpy(n->text, text, len + 1);
    return n;
}

/* The pool entry for text (created on first use); NULL when text is NULL or
 * the pool is full / out of memory. */
static struct vtn_name *name_get(const char *text)
{
    if (!text)
        return NULL;
    uint64_t h = fnv1a(text);
    struct vtn_name **bucket = &name_buckets[h % VTN_NAME_BUCKETS];
    pthread_mutex_lock(&name_lock);
    struct vtn_name *n = *bucket;
    while (n && (n->hash != h || strcmp(n->text, text) != 0))
        n = n->next;
    if (!n && name_count < VTN_NAME_MAX && (n = name_new(text, h, *bucket)) != NULL) {
        *bucket = n;
        name_count++;
    }
    pthread_mutex_unlock(&name_lock);
    return n;
}

static struct vtn_name *name_get_wide(const wchar_t *w)
{
    char buf[VTN_TEXT_MAX];
    return w ? name_get(wide_to_utf8(w, buf, sizeof buf)) : NULL;
}

static const char *name_text(const void *handle)
{
    return handle ? ((const struct vtn_name *)handle)->text : NULL;
}

/* ---- Message text and string ids ------------------------------------------ */

/* The UTF-8 text of an NVTX message (buf holds converted wide text); NULL if
 * absent or of an unknown type. */
static const char *message_text(int32_t type, nvtxMessageValue_t v, char *buf, size_t cap)
{
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return v.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE:
        return v.unicode ? wide_to_utf8(v.unicode, buf, cap) : NULL;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return name_text(v.registered);
    default:
        return NULL;
    }
}

/* Message text of event attributes (size-checked: older/smaller structs). */
static const char *attr_text(const nvtxEventAttributes_t *a, char *buf, size_t cap)
{
    size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof a->message;
    if (!a || a->size < need)
        return NULL;
    return message_text(a->messageType, a->message, buf, cap);
}

static uint32_t intern(const char *s)
{
    return s ? vti_intern_string(s) : 0;
}

/* Trace id of a domain: 0 for the default domain, else its interned name. */
static uint32_t domain_id(nvtxDomainHandle_t d)
{
    return intern(name_text(d));
}

static uint64_t next_id(uint64_t *counter)
{
    return __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static int emit(vt_event *ev)
{
    ev->ts_ns = 0;
    return vti_emit(ev);
}

/* One NOTE per process for Mem API calls vramtrace cannot represent. */
static void note_once(int *flag, const char *text)
{
    if (!vti_enabled() || __atomic_exchange_n(flag, 1, __ATOMIC_RELAXED))
        return;
    vt_event ev = {.type = VT_REC_NOTE};
    ev.u.note.text = text;
    emit(&ev);
}

/* ---- Push/pop: per-thread, per-domain stacks ------------------------------
 * recorded bit i: the push at level i was written, so its pop is written. */

struct vtn_stack {
    nvtxDomainHandle_t domain;
    uint32_t depth;
    uint64_t recorded;
    char open[2][48]; /* the open level 0 and 1 ranges' names (iterations: iterfit.c) */
};

static __thread struct vtn_stack tls_stacks[VTN_TLS_DOMAINS];
static __thread unsigned tls_nstacks;

static struct vtn_stack *stack_of(nvtxDomainHandle_t d)
{
    for (unsigned i = 0; i < tls_nstacks; i++)
        if (tls_stacks[i].domain == d)
            return &tls_stacks[i];
    if (tls_nstacks == VTN_TLS_DOMAINS)
        return NULL;
    struct vtn_stack *s = &tls_stacks[tls_nstacks++];
    s->domain = d;
    s->depth = 0;
    s->recorded = 0;
    return s;
}

static bool emit_range(enum vt_rec type, nvtxDomainHandle_t d, const char *name)
{
    if (type == VT_REC_RANGE_POP ? !vti_enabled() : !vti_recording())
        return false;
    vt_event ev = {.type = type};
    ev.u.range.domain = domain_id(d);
    ev.u.range.name = type == VT_REC_RANGE_POP ? 0 : intern(name);
    return emit(&ev) == 0;
}

/* Returns the 0-based level of the pushed range (NVTX: nvtxRangePushA). */
static int range_push(nvtxDomainHandle_t d, const char *name)
{
    bool rec = emit_range(VT_REC_RANGE_PUSH, d, name);
    struct vtn_stack *s = stack_of(d);
    if (!s)
        return 0;
    uint32_t level = s->depth++;
    if (level < 2) { /* a bounded copy: snprintf cost the GAN 17 k instructions a step */
        size_t n = name ? strnlen(name, sizeof s->open[level] - 1) : 0;
        memcpy(s->open[level], name ? name : "", n);
        s->open[level][n] = '\0';
    }
    if (level == 0 && vti_enabled())
        vti_iter_begin(s->open[0]);
    if (level < 64)
        s->recorded = rec ? s->recorded | (1ull << level) : s->recorded & ~(1ull << level);
    return (int)level;
}

/* Returns the level of the ended range, -1 when none is open. */
static int range_pop(nvtxDomainHandle_t d)
{
    struct vtn_stack *s = stack_of(d);
    if (!s) {
        emit_range(VT_REC_RANGE_POP, d, NULL);
        return 0;
    }
    if (s->depth == 0)
        return -1;
    uint32_t level = --s->depth;
    if (level < 2 && (s->recorded >> level & 1)) /* before the pop: the report's order */
        vti_pool_iteration_end(s->open[level]);
    if (level >= 64 || (s->recorded >> level & 1))
        emit_range(VT_REC_RANGE_POP, d, NULL);
    if (level < 2 && vti_enabled())
        vti_iter_end(s->open[level], (int)level, level ? s->open[0] : NULL);
    return (int)level;
}

/* ---- Start/end ranges: ids are (counter << 1) | recorded -------------------- */

static uint64_t range_counter;
/* Range ids up to this counter value are a fork parent's (set in the fork
 * child): their ends are not the child's to record. */
static uint64_t range_floor;

static nvtxRangeId_t range_start(nvtxDomainHandle_t d, const char *name)
{
    uint64_t id = next_id(&range_counter) << 1;
    if (!vti_recording())
        return id;
    vt_event ev = {.type = VT_REC_RANGE_START};
    ev.u.range_se.id = id | 1;
    ev.u.range_se.domain = domain_id(d);
    ev.u.range_se.name = intern(name);
    emit(&ev);
    return id | 1;
}

static void range_end(nvtxRangeId_t id)
{
    if (!(id & 1) || (id >> 1) <= range_floor || !vti_enabled())
        return;
    vt_event ev = {.type = VT_REC_RANGE_END};
    ev.u.range_se.id = id;
    emit(&ev);
}

static void mark(nvtxDomainHandle_t d, const char *name)
{
    emit_range(VT_REC_MARK, d, name);
}

/* ---- CORE callbacks (nvToolsExt.h signatures) ------------------------------ */

static void core_mark_ex(const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    mark(NULL, attr_text(a, buf, sizeof buf));
}

static void core_mark_a(const char *m)
{
    mark(NULL, m);
}

static void core_mark_w(const wchar_t *m)
{
    char buf[VTN_TEXT_MAX];
    mark(NULL, m ? wide_to_utf8(m, buf, sizeof buf) : NULL);
}

static nvtxRangeId_t core_start_ex(const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    return range_start(NULL, attr_text(a, buf, sizeof buf));
}

static nvtxRangeId_t core_start_a(const char *m)
{
    return range_start(NULL, m);
}

static nvtxRangeId_t core_start_w(const wchar_t *m)
{
    char buf[VTN_TEXT_MAX];
    return range_start(NULL, m ? wide_to_utf8(m, buf, sizeof buf) : NULL);
}

static void core_end(nvtxRangeId_t id)
{
    range_end(id);
}

static int core_push_ex(const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    return range_push(NULL, attr_text(a, buf, sizeof buf));
}

static int core_push_a(const char *m)
{
    return range_push(NULL, m);
}

static int core_push_w(const wchar_t *m)
{
    char buf[VTN_TEXT_MAX];
    return range_push(NULL, m ? wide_to_utf8(m, buf, sizeof buf) : NULL);
}

static int core_pop(void)
{
    return range_pop(NULL);
}

static void core_name_category_a(uint32_t category, const char *name)
{
    (void)category, (void)name;
}

static void core_name_category_w(uint32_t category, const wchar_t *name)
{
    (void)category, (void)name;
}

/* nvtxNameOsThread: a VT_REC_THREAD definition for that OS thread id (a
 * name, start 0: not a thread's start). */
static void name_thread(uint32_t tid, const char *name)
{
    if (!name || !vti_recording())
        return;
    vt_event ev = {.type = VT_REC_THREAD};
    ev.u.thread.id = tid;
    ev.u.thread.name = name;
    emit(&ev);
}

static void core_name_thread_a(uint32_t tid, const char *name)
{
    name_thread(tid, name);
}

static void core_name_thread_w(uint32_t tid, const wchar_t *name)
{
    char buf[VTN_TEXT_MAX];
    name_thread(tid, name ? wide_to_utf8(name, buf, sizeof buf) : NULL);
}

/* ---- CORE2 callbacks (domains) --------------------------------------------- */

static void core2_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    mark(d, attr_text(a, buf, sizeof buf));
}

static nvtxRangeId_t core2_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    return range_start(d, attr_text(a, buf, sizeof buf));
}

static void core2_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    range_end(id);
}

static int core2_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char buf[VTN_TEXT_MAX];
    return range_push(d, attr_text(a, buf, sizeof buf));
}

static int core2_pop(nvtxDomainHandle_t d)
{
    return range_pop(d);
}

static uint64_t resource_counter;

static nvtxResourceHandle_t core2_resource_create(nvtxDomainHandle_t d,
                                                  nvtxResourceAttributes_t *attribs)
{
    (void)d, (void)attribs;
    return (nvtxResourceHandle_t)(uintptr_t)next_id(&resource_counter);
}

static void core2_resource_destroy(nvtxResourceHandle_t r)
{
    (void)r;
}

static void core2_name_category_a(nvtxDomainHandle_t d, uint32_t category, const char *name)
{
    (void)d, (void)category, (void)name;
}

static void core2_name_category_w(nvtxDomainHandle_t d, uint32_t category, const wchar_t *name)
{
    (void)d, (void)category, (void)name;
}

static nvtxStringHandle_t core2_register_string_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)name_get(s);
}

static nvtxStringHandle_t core2_register_string_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)name_get_wide(s);
}

static nvtxDomainHandle_t core2_domain_create_a(const char *name)
{
    return (nvtxDomainHandle_t)(void *)name_get(name);
}

static nvtxDomainHandle_t core2_domain_create_w(const wchar_t *name)
{
    return (nvtxDomainHandle_t)(void *)name_get_wide(name);
}

static void core2_domain_destroy(nvtxDomainHandle_t d)
{
    (void)d; /* the name stays in the pool: handles stay valid */
}

static void core2_initialize(const void *reserved)
{
    (void)reserved;
}

/* ---- Mem extension: live region maps (regionmap.h) -------------------------
 * by_addr: key = region address, a = size, b = heap id, c = region handle.
 * by_handle: key = region handle, a = region address.
 * Hold only regions registered while recording; guarded by region_lock. */

static vti_rmap by_addr, by_handle;
/* vti_lock, not a pthread mutex: a sub-allocator registers and
 * unregisters a region per block (the GAN's pool: 175 of each per step),
 * and the mutex pair took 57 instructions of each, the lock 29
 * (bench/README.md, "Session 39"). */
static vti_lock region_lock = VTI_LOCK_INIT;

/* Forget the region in slot s (of by_addr) in both maps. */
static void region_forget(vti_rmap_slot *s)
{
    vti_rmap_slot *h = s->c ? vti_rmap_find(&by_handle, s->c) : NULL;
    if (h)
        vti_rmap_del(&by_handle, h);
    vti_rmap_del(&by_addr, s);
}

/* handle 0: none was handed out (the batch had no regionHandleElementsOut),
 * so the program can name the region by pointer only: not in by_handle. */
static int region_track(uint64_t addr, uint64_t size, uint64_t heap, uint64_t handle)
{
    vti_rmap_slot *old = vti_rmap_find(&by_addr, addr);
    if (old)
        region_forget(old); /* re-registered without unregister */
    if (vti_rmap_insert(&by_addr, addr, size, heap, handle) != 0)
        return -1;
    /* handles are new counter values: never in by_handle yet */
    if (handle && vti_rmap_insert(&by_handle, handle, addr, 0, 0) != 0) {
        vti_rmap_del(&by_addr, vti_rmap_find(&by_addr, addr));
        return -1;
    }
    return 0;
}

/* The by_addr slot of a region referenced by pointer or handle, or NULL. */
static vti_rmap_slot *region_lookup(uint32_t ref_type, nvtxMemRegionRef_t ref)
{
    if (ref_type == NVTX_MEM_REGION_REF_TYPE_POINTER)
        return vti_rmap_find(&by_addr, (uintptr_t)ref.pointer);
    if (ref_type != NVTX_MEM_REGION_REF_TYPE_HANDLE)
        return NULL;
    vti_rmap_slot *h = vti_rmap_find(&by_handle, (uintptr_t)ref.handle);
    return h ? vti_rmap_find(&by_addr, h->a) : NULL;
}

static void regions_drop_heap(uint64_t heap)
{
    for (size_t i = 0; i < by_addr.cap;) {
        vti_rmap_slot *s = &by_addr.slots[i];
        if (s->full && s->b == heap)
            region_forget(s); /* a later region may move into slot i: look again */
        else
            i++;
    }
}

/* ---- Mem extension: heaps ---------------------------------------------------
 * Heap handles are (counter << 1) | recorded; NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE
 * (0) is trace heap 0 and always recorded. */

static uint64_t heap_counter, region_counter;
static int noted_type, noted_heap0;

/* Heap handles up to this counter value are a fork parent's: the child's
 * trace has not seen them registered (set in the fork child). */
static uint64_t heap_floor;

static bool heap_recorded(nvtxMemHeapHandle_t h)
{
    uintptr_t v = (uintptr_t)h;
    return v == 0 || ((v & 1) && h != NVTX_MEM_HEAP_HANDLE_NO_TOOL && (v >> 1) > heap_floor);
}

/* Address and size of a VIRTUAL_ADDRESS descriptor; false for other types. */
static bool va_range(uint32_t type, const void *desc, size_t desc_size, uint64_t *addr,
                     uint64_t *size)
{
    if (type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !desc ||
        desc_size < sizeof(nvtxMemVirtualRangeDesc_t)) {
        note_once(&noted_type, "NVTX Mem: heaps/regions not of NVTX_MEM_TYPE_VIRTUAL_ADDRESS "
                               "are recorded without address (heaps) or ignored (regions)");
        return false;
    }
    const nvtxMemVirtualRangeDesc_t *va = desc;
    *addr = (uintptr_t)va->ptr;
    *size = va->size;
    return true;
}

static void emit_heap_register(uint64_t id, const nvtxMemHeapDesc_t *desc)
{
    vt_event ev = {.type = VT_REC_HEAP_REGISTER};
    ev.u.heap.heap = id;
    if (desc && desc->structSize >=
                    offsetof(nvtxMemHeapDesc_t, typeSpecificDesc) + sizeof desc->typeSpecificDesc) {
        ev.u.heap.usage = desc->usage;
        va_range(desc->type, desc->typeSpecificDesc, desc->typeSpecificDescSize, &ev.u.heap.addr,
                 &ev.u.heap.size);
    }
    emit(&ev);
}

static nvtxMemHeapHandle_t mem_heap_register(nvtxDomainHandle_t d, const nvtxMemHeapDesc_t *desc)
{
    (void)d;
    uint64_t id = next_id(&heap_counter) << 1;
    if (vti_recording()) {
        id |= 1;
        emit_heap_register(id, desc);
    }
    return (nvtxMemHeapHandle_t)(uintptr_t)id;
}

/* Heap unregister (type VT_REC_HEAP_UNREGISTER) or reset (VT_REC_HEAP_RESET):
 * the heap's regions are gone in both cases. */
static void heap_drop(nvtxMemHeapHandle_t heap, enum vt_rec type)
{
    uint64_t id = (uintptr_t)heap;
    vti_lock_take(&region_lock);
    regions_drop_heap(id);
    if (heap_recorded(heap) && vti_enabled()) {
        vt_event ev = {.type = type};
        ev.u.heap.heap = id;
        emit(&ev);
    }
    vti_lock_give(&region_lock);
}

static void mem_heap_unregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap)
{
    (void)d;
    if (heap == NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE) {
        note_once(&noted_heap0, "NVTX Mem: unregister of the process-wide heap ignored");
        return;
    }
    heap_drop(heap, VT_REC_HEAP_UNREGISTER);
}

static void mem_heap_reset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap)
{
    (void)d;
    heap_drop(heap, VT_REC_HEAP_RESET);
}

/* ---- Mem extension: regions ------------------------------------------------ */

/* Element i of a batch array with stride elem (0 = natural size min). */
static const void *batch_elem(const void *base, size_t elem, size_t min, size_t i)
{
    if (elem == 0)
        elem = min;
    if (!base || elem < min)
        return NULL;
    return (const char *)base + i * elem;
}

static void region_register_one(uint64_t heap, uint64_t handle, const void *desc, uint32_t stack)
{
    uint64_t addr, size;
    if (!va_range(NVTX_MEM_TYPE_VIRTUAL_ADDRESS, desc, sizeof(nvtxMemVirtualRangeDesc_t), &addr,
                  &size))
        return;
    if (region_track(addr, size, heap, handle) != 0)
        return; /* untracked: its unregister could not be attributed */
    vt_event ev = {.type = VT_REC_REGION_REGISTER};
    ev.u.region.heap = heap;
    ev.u.region.addr = addr;
    ev.u.region.size = size;
    ev.u.region.stack = stack;
    emit(&ev);
}

/* noinline: vti_capture_stack(1) skips exactly this frame. */
__attribute__((noinline)) static void mem_regions_register(nvtxDomainHandle_t d,
                                                           const nvtxMemRegionsRegisterBatch_t *b)
{
    (void)d;
    if (!b)
        return;
    bool rec = vti_enabled() && heap_recorded(b->heap);
    if (rec && b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS) {
        va_range(b->regionType, NULL, 0, NULL, NULL); /* the note */
        rec = false;
    }
    uint32_t stack = rec ? vti_capture_stack(1) : 0;
    if (rec)
        vti_lock_take(&region_lock);
    for (size_t i = 0; i < b->regionCount; i++) {
        uint64_t handle = next_id(&region_counter);
        if (b->regionHandleElementsOut)
            b->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)(uintptr_t)handle;
        const void *e = batch_elem(b->regionDescElements, b->regionDescElementSize,
                                   sizeof(nvtxMemVirtualRangeDesc_t), i);
        if (rec && e)
            region_register_one((uintptr_t)b->heap, b->regionHandleElementsOut ? handle : 0, e,
                                stack);
    }
    if (rec)
        vti_lock_give(&region_lock);
}

static void emit_region(enum vt_rec type, const vti_rmap_slot *s, uint32_t name)
{
    if (!vti_enabled())
        return;
    vt_event ev = {.type = type};
    ev.u.region.heap = s->b;
    ev.u.region.addr = s->key;
    ev.u.region.size = s->a;
    ev.u.region.name = name;
    emit(&ev);
}

static void mem_regions_resize(nvtxDomainHandle_t d, const nvtxMemRegionsResizeBatch_t *b)
{
    (void)d;
    if (!b || b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS)
        return;
    vti_lock_take(&region_lock);
    for (size_t i = 0; i < b->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *va =
            batch_elem(b->regionDescElements, b->regionDescElementSize, sizeof *va, i);
        vti_rmap_slot *s = va ? vti_rmap_find(&by_addr, (uintptr_t)va->ptr) : NULL;
        if (!s)
            continue;
        s->a = va->size;
        emit_region(VT_REC_REGION_RESIZE, s, 0);
    }
    vti_lock_give(&region_lock);
}

static void mem_regions_unregister(nvtxDomainHandle_t d, const nvtxMemRegionsUnregisterBatch_t *b)
{
    (void)d;
    if (!b)
        return;
    vti_lock_take(&region_lock);
    for (size_t i = 0; i < b->refCount; i++) {
        const nvtxMemRegionRef_t *ref =
            batch_elem(b->refElements, b->refElementSize, sizeof *ref, i);
        vti_rmap_slot *s = ref ? region_lookup(b->refType, *ref) : NULL;
        if (!s)
            continue;
        emit_region(VT_REC_REGION_UNREGISTER, s, 0);
        region_forget(s);
    }
    vti_lock_give(&region_lock);
}

static void region_name_one(const nvtxMemRegionNameDesc_t *e)
{
    char buf[VTN_TEXT_MAX];
    vti_rmap_slot *s = region_lookup(e->regionRefType, e->region);
    if (!s || !vti_enabled())
        return;
    const char *text = message_text((int32_t)e->nameType, e->name, buf, sizeof buf);
    emit_region(VT_REC_REGION_NAME, s, intern(text));
}

static void mem_regions_name(nvtxDomainHandle_t d, const nvtxMemRegionsNameBatch_t *b)
{
    (void)d;
    if (!b)
        return;
    vti_lock_take(&region_lock);
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemRegionNameDesc_t *e =
            batch_elem(b->regionElements, b->regionElementSize, sizeof *e, i);
        if (e)
            region_name_one(e);
    }
    vti_lock_give(&region_lock);
}

/* ---- Fork safety: no lock is held across fork() ---------------------------- */

static void locks_acquire(void)
{
    pthread_mutex_lock(&name_lock);
    vti_lock_take(&region_lock);
}

static void locks_release(void)
{
    vti_lock_give(&region_lock);
    pthread_mutex_unlock(&name_lock);
}

/* In the child no thread sleeps on the region lock: reset, not released
 * (a count of the parent's sleepers, copied, would make every later release
 * call futex to wake nobody). */
static void child_locks_release(void)
{
    vti_lock_reset(&region_lock);
    pthread_mutex_unlock(&name_lock);
}

/* The child (one thread: the one that forked) starts its own trace: the
 * ranges, heaps and regions so far are the parent's. Its open push/pop
 * ranges stay open (their pops must match) but are not written as
 * recorded, so their pops are not either; ids and handles handed out so
 * far are never written; the region maps are emptied (left allocated, not
 * freed: only stores here, between fork and exec). */
static void child_release(void)
{
    for (unsigned i = 0; i < tls_nstacks; i++)
        tls_stacks[i].recorded = 0;
    range_floor = __atomic_load_n(&range_counter, __ATOMIC_RELAXED);
    heap_floor = __atomic_load_n(&heap_counter, __ATOMIC_RELAXED);
    by_addr = (vti_rmap){0};
    by_handle = (vti_rmap){0};
    child_locks_release();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_install(void)
{
    pthread_atfork(locks_acquire, locks_release, child_release);
}

/* ---- Injection entry points ------------------------------------------------- */

struct vtn_fill {
    unsigned id;
    NvtxFunctionPointer fn;
};

#define FILL(id, fn)                                                                               \
    {                                                                                              \
        id, (NvtxFunctionPointer)fn                                                                \
    }

static const struct vtn_fill core_fills[] = {
    FILL(NVTX_CBID_CORE_MarkEx, core_mark_ex),
    FILL(NVTX_CBID_CORE_MarkA, core_mark_a),
    FILL(NVTX_CBID_CORE_MarkW, core_mark_w),
    FILL(NVTX_CBID_CORE_RangeStartEx, core_start_ex),
    FILL(NVTX_CBID_CORE_RangeStartA, core_start_a),
    FILL(NVTX_CBID_CORE_RangeStartW, core_start_w),
    FILL(NVTX_CBID_CORE_RangeEnd, core_end),
    FILL(NVTX_CBID_CORE_RangePushEx, core_push_ex),
    FILL(NVTX_CBID_CORE_RangePushA, core_push_a),
    FILL(NVTX_CBID_CORE_RangePushW, core_push_w),
    FILL(NVTX_CBID_CORE_RangePop, core_pop),
    FILL(NVTX_CBID_CORE_NameCategoryA, core_name_category_a),
    FILL(NVTX_CBID_CORE_NameCategoryW, core_name_category_w),
    FILL(NVTX_CBID_CORE_NameOsThreadA, core_name_thread_a),
    FILL(NVTX_CBID_CORE_NameOsThreadW, core_name_thread_w),
};

static const struct vtn_fill core2_fills[] = {
    FILL(NVTX_CBID_CORE2_DomainMarkEx, core2_mark_ex),
    FILL(NVTX_CBID_CORE2_DomainRangeStartEx, core2_start_ex),
    FILL(NVTX_CBID_CORE2_DomainRangeEnd, core2_end),
    FILL(NVTX_CBID_CORE2_DomainRangePushEx, core2_push_ex),
    FILL(NVTX_CBID_CORE2_DomainRangePop, core2_pop),
    FILL(NVTX_CBID_CORE2_DomainResourceCreate, core2_resource_create),
    FILL(NVTX_CBID_CORE2_DomainResourceDestroy, core2_resource_destroy),
    FILL(NVTX_CBID_CORE2_DomainNameCategoryA, core2_name_category_a),
    FILL(NVTX_CBID_CORE2_DomainNameCategoryW, core2_name_category_w),
    FILL(NVTX_CBID_CORE2_DomainRegisterStringA, core2_register_string_a),
    FILL(NVTX_CBID_CORE2_DomainRegisterStringW, core2_register_string_w),
    FILL(NVTX_CBID_CORE2_DomainCreateA, core2_domain_create_a),
    FILL(NVTX_CBID_CORE2_DomainCreateW, core2_domain_create_w),
    FILL(NVTX_CBID_CORE2_DomainDestroy, core2_domain_destroy),
    FILL(NVTX_CBID_CORE2_Initialize, core2_initialize),
};

static const struct vtn_fill mem_fills[] = {
    FILL(NVTX3EXT_CBID_nvtxMemHeapRegister, mem_heap_register),
    FILL(NVTX3EXT_CBID_nvtxMemHeapUnregister, mem_heap_unregister),
    FILL(NVTX3EXT_CBID_nvtxMemHeapReset, mem_heap_reset),
    FILL(NVTX3EXT_CBID_nvtxMemRegionsRegister, mem_regions_register),
    FILL(NVTX3EXT_CBID_nvtxMemRegionsResize, mem_regions_resize),
    FILL(NVTX3EXT_CBID_nvtxMemRegionsUnregister, mem_regions_unregister),
    FILL(NVTX3EXT_CBID_nvtxMemRegionsName, mem_regions_name),
};

#define NFILLS(a) (sizeof(a) / sizeof((a)[0]))

/* Fill one module's table: slots 1..size-1 are pointers to NVTX's function
 * pointers (nvtxImpl.h, nvtxEtiGetModuleFunctionTable). 0: no such module. */
static int fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                       const struct vtn_fill *fills, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (fills[i].id < size && table[fills[i].id])
            *table[fills[i].id] = fills[i].fn;
    return 1;
}

static void set_injection_version(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableVersionInfo *vi = get(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
}

/* NVTX core entry point (nvtxInit.h: NvtxInitializeInjectionNvtxFunc_t).
 * Called once per module embedding NVTX, possibly concurrently: fills that
 * module's CORE and CORE2 tables (every supported slot, others untouched).
 * Returns 1 on success, 0 when the export table is unusable (NVTX then
 * turns that module's calls into no-ops). */
VTN_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    pthread_once(&atfork_once, atfork_install);
    if (!get)
        return 0;
    const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    set_injection_version(get);
    if (!fill_module(cb, NVTX_CB_MODULE_CORE, core_fills, NFILLS(core_fills)))
        return 0;
    fill_module(cb, NVTX_CB_MODULE_CORE2, core2_fills, NFILLS(core2_fills));
    return 1;
}

/* NVTX extension entry point (nvtxExtInit.h: NvtxExtInitializeInjectionFunc_t).
 * For the Mem module (NVTX_EXT_MODULEID_MEM, compat NVTX_EXT_COMPATID_MEM)
 * fills the slots NVTX3EXT_CBID_nvtxMem{HeapRegister..RegionsName} of every
 * segment; other modules and versions are left alone (NVTX disables their
 * slots). Returns 1 (0 only for a NULL or too small moduleInfo). */
VTN_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    pthread_once(&atfork_once, atfork_install);
    if (!info || info->structSize < offsetof(nvtxExtModuleInfo_t, getExportFunction))
        return 0;
    if (info->moduleId != NVTX_EXT_MODULEID_MEM || info->compatId != NVTX_EXT_COMPATID_MEM)
        return 1;
    for (size_t s = 0; s < info->segmentsCount && info->segments; s++) {
        nvtxExtModuleSegment_t *seg = &info->segments[s];
        for (size_t i = 0; i < NFILLS(mem_fills) && seg->functionSlots; i++)
            if (mem_fills[i].id < seg->slotCount)
                __atomic_store_n(&seg->functionSlots[mem_fills[i].id], (intptr_t)mem_fills[i].fn,
                                 __ATOMIC_RELEASE);
    }
    return 1;
}
