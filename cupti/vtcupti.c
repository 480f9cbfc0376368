/* vtcupti.c: CUPTI subscription and activity buffers (see vtcupti.h and
 * README.md). One process-wide CUPTI session, started by the preload through
 * vtc_start(); without a driver every CUPTI call fails and vtc_start()
 * returns -1 with the reason. */
#define _GNU_SOURCE
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vtcupti.h"

#define VTC_EXPORT __attribute__((visibility("default")))
#define VTC_BUFFER_BYTES (1u << 20) /* one activity buffer */
#define VTC_FLUSH_MS 100u           /* CUPTI flush period, as the trace writer */

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static vtc_host host;      /* copy of the host given to vtc_start */
static vtc_filter *filter; /* dedupe against the hooks */
static CUpti_SubscriberHandle subscriber;
static bool started, subscribed, mono_clock;

/* Memory APIs whose calls are watched (runtime and driver), cupti_*_cbid.h:
 * every allocating or freeing hook of interpose/vti_internal.h's lists, so
 * that CUPTI's records of a hooked call are dropped as the hooks' own
 * (tests/cupti/check_cbids.py holds the two lists together). */
static const CUpti_CallbackId runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000,
};

static const CUpti_CallbackId driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
    CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy,
    CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Callbacks ------------------------------------------------------------- */

/* API enter: a call made inside a hook is recorded by the hooks. */
static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *data)
{
    (void)userdata, (void)cbid;
    const CUpti_CallbackData *cb = data;
    if ((domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) || !cb ||
        cb->callbackSite != CUPTI_API_ENTER)
        return;
    if (host.in_hook && host.in_hook())
        vtc_filter_mark_hooked(filter, cb->correlationId);
}

static uint64_t CUPTIAPI mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit(vt_event *ev)
{
    if (!mono_clock)
        ev->ts_ns = 0; /* CUPTI's own clock: use the time of arrival */
    host.emit(ev);
}

static void process_memory(const CUpti_ActivityMemory4 *rec)
{
    vt_event ev;
    if (vtc_translate_memory(rec, &ev) != 1)
        return;
    bool have = ev.type == VT_REC_ALLOC && host.hooks_have && host.hooks_have(ev.u.alloc.addr);
    if (vtc_filter_keep(filter, &ev, rec->correlationId, have))
        emit(&ev);
}

static void process_pool(const CUpti_ActivityMemoryPool3 *rec)
{
    char text[256];
    vt_event ev;
    if (vtc_translate_pool(rec, &ev, text, sizeof text) == 1)
        emit(&ev);
}

static void process(const CUpti_Activity *rec)
{
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2)
        process_memory((const CUpti_ActivityMemory4 *)rec);
    else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL)
        process_pool((const CUpti_ActivityMemoryPool3 *)rec);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, VTC_BUFFER_BYTES);
    *size = *buffer ? VTC_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void note_dropped(CUcontext ctx, uint32_t stream)
{
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS || !dropped)
        return;
    char text[128];
    snprintf(text, sizeof text, "CUPTI dropped %zu activity records", dropped);
    vt_event ev = {.type = VT_REC_NOTE};
    ev.u.note.text = text;
    host.emit(&ev);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    if (buffer && host.emit) {
        while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
            process(rec);
        note_dropped(ctx, stream);
    }
    free(buffer);
}

/* ---- Start / stop ------------------------------------------------------------ */

static int unavailable(CUptiResult res, const char *what, char *why, size_t whylen)
{
    const char *s = NULL;
    if (cuptiGetResultString(res, &s) != CUPTI_SUCCESS || !s)
        s = "unknown CUPTI error";
    if (why && whylen)
        snprintf(why, whylen, "CUPTI unavailable: %s (%s, code %d)", s, what, (int)res);
    return -1;
}

static CUptiResult enable_callbacks(void)
{
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; i < COUNT(runtime_cbids) && r == CUPTI_SUCCESS; i++)
        r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids[i]);
    for (size_t i = 0; i < COUNT(driver_cbids) && r == CUPTI_SUCCESS; i++)
        r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids[i]);
    return r;
}

static void teardown(void)
{
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    if (subscribed)
        cuptiUnsubscribe(subscriber);
    subscribed = false;
}

/* Subscribe and enable activity; the failing step's name in *what. */
static CUptiResult start_cupti(const char **what)
{
    CUptiResult r;
    *what = "cuptiSubscribe";
    if ((r = cuptiSubscribe(&subscriber, on_api, NULL)) != CUPTI_SUCCESS)
        return r;
    subscribed = true;
    *what = "cuptiEnableCallback";
    if ((r = enable_callbacks()) != CUPTI_SUCCESS)
        return r;
    mono_clock = cuptiActivityRegisterTimestampCallback(mono_ns) == CUPTI_SUCCESS;
    *what = "cuptiActivityRegisterCallbacks";
    if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        return r;
    *what = "cuptiActivityEnable(MEMORY2)";
    if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2)) != CUPTI_SUCCESS)
        return r;
    *what = "cuptiActivityEnable(MEMORY_POOL)";
    if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL)) != CUPTI_SUCCESS)
        return r;
    cuptiActivityFlushPeriod(VTC_FLUSH_MS);
    return CUPTI_SUCCESS;
}

static bool host_ok(const vtc_host *h)
{
    return h && h->abi_version == VTC_ABI_VERSION && h->emit && h->hooks_have;
}

VTC_EXPORT int vtc_start(const vtc_host *h, char *why, size_t whylen)
{
    if (!host_ok(h)) {
        if (why && whylen)
            snprintf(why, whylen, "CUPTI unavailable: host interface mismatch");
        return -1;
    }
    pthread_mutex_lock(&start_lock);
    int rc = 0;
    if (!started) {
        host = *h;
        if (!filter && !(filter = vtc_filter_new())) {
            if (why && whylen)
                snprintf(why, whylen, "CUPTI unavailable: out of memory");
            rc = -1;
        } else {
            const char *what = "";
            CUptiResult r = start_cupti(&what);
            if (r != CUPTI_SUCCESS) {
                teardown();
                rc = unavailable(r, what, why, whylen);
            }
            started = rc == 0;
        }
    }
    pthread_mutex_unlock(&start_lock);
    return rc;
}

VTC_EXPORT void vtc_stop(void)
{
    pthread_mutex_lock(&start_lock);
    if (started) {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        teardown();
        started = false;
    }
    pthread_mutex_unlock(&start_lock);
}

/* CUDA_INJECTION64_PATH entry point (called by the driver at cuInit). Alone,
 * this library has no session to write to: it says so on stderr, once, and
 * lets the application run (returns 1). With the preload present, the
 * preload starts CUPTI itself through vtc_start(). */
VTC_EXPORT int InitializeInjection(void)
{
    pthread_mutex_lock(&start_lock);
    bool quiet = started;
    pthread_mutex_unlock(&start_lock);
    if (!quiet)
        fprintf(stderr, "vramtrace: libvramtrace_cupti.so records only when started by the "
                        "preload (LD_PRELOAD=libvramtrace.so); nothing recorded by it alone\n");
    return 1;
}
