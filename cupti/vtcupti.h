/* vtcupti.h: CUPTI side of vramtrace (cupti/README.md, docs/architecture.md).
 *
 * Built as build/lib/libvramtrace_cupti.so when CUPTI is found. The preload
 * library (interpose/) never links it: it dlopen()s it next to itself and
 * calls vtc_start() through dlsym, so a machine without CUPTI or without a
 * driver still records with the hooks alone. The same library is usable as a
 * CUDA_INJECTION64_PATH library (InitializeInjection).
 *
 * Data flow: CUPTI callbacks/activity -> vtc_translate_*() -> vt_event ->
 * host->emit(). Nothing here writes files.
 */
#ifndef VRAMTRACE_VTCUPTI_H
#define VRAMTRACE_VTCUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../trace/vtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the host (the preload session) offers CUPTI. All function pointers are
 * thread-safe and may be called from CUPTI's threads. */
typedef struct vtc_host {
    uint32_t abi_version; /* VTC_ABI_VERSION */
    /* Record one event (ts_ns 0 = now). Returns 0, or -1 if tracing stopped. */
    int (*emit)(const vt_event *ev);
    /* true when the hooks already recorded a live allocation at addr
     * (so an activity record for it must not be counted twice). */
    bool (*hooks_have)(uint64_t addr);
    /* Optional (may be NULL; a host built against an older header leaves it
     * NULL): true while the calling thread is inside a hooked CUDA call that
     * the hooks will record (their thread-local depth counter > 0). CUPTI's
     * API callbacks run inside the real call, so the correlation ids seen
     * while this is true belong to calls the hooks record: their activity
     * records are dropped (see cupti/README.md). */
    bool (*in_hook)(void);
} vtc_host;

#define VTC_ABI_VERSION 1u

/* Start CUPTI: subscribe to runtime/driver memory callbacks and enable
 * CUPTI_ACTIVITY_KIND_MEMORY2 and MEMORY_POOL. Returns 0 when started; -1
 * when CUPTI cannot start here (no driver, CUPTI missing, subscriber taken),
 * with the reason in why (whylen bytes), e.g. "CUPTI unavailable:
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES". */
typedef int (*vtc_start_fn)(const vtc_host *host, char *why, size_t whylen);
int vtc_start(const vtc_host *host, char *why, size_t whylen);

/* Flush CUPTI's activity buffers (delivering pending records) and
 * unsubscribe. Safe to call when vtc_start() failed. */
typedef void (*vtc_stop_fn)(void);
void vtc_stop(void);

/* ---- Double-counting filter (pure, no CUPTI needed) ----------------------
 * Decides which translated activity events reach the trace: an allocation
 * whose correlation id was marked hooked, or whose address the hooks hold
 * live, is dropped; any other allocation is kept and its address remembered,
 * so that its release is kept too; other releases are dropped. Thread-safe.
 * Memory: a correlation table of the last 4 M ids (16 MiB reserved, the
 * pages of ids in use touched) plus one entry per live CUPTI-only
 * allocation. */
typedef struct vtc_filter vtc_filter;
/* NULL when out of memory. */
vtc_filter *vtc_filter_new(void);
void vtc_filter_free(vtc_filter *f);
/* A memory API call with this correlation id ran inside a hook. */
void vtc_filter_mark_hooked(vtc_filter *f, uint32_t correlation_id);
/* ev: a VT_REC_ALLOC or VT_REC_FREE from vtc_translate_memory(); hooks_have:
 * the host's answer for ev's address. Returns true when ev is to be emitted. */
bool vtc_filter_keep(vtc_filter *f, const vt_event *ev, uint32_t correlation_id, bool hooks_have);
/* Live CUPTI-only allocations remembered (tests, diagnostics). */
size_t vtc_filter_live(const vtc_filter *f);

/* ---- Record translation (pure) ---------------------------------------------
 * Declared only where the CUPTI activity header was included first: the
 * record structs are anonymous typedefs and cannot be forward-declared. */
#if defined(_CUPTI_ACTIVITY_H_)
/* CUPTI_ACTIVITY_KIND_MEMORY2 record -> VT_REC_ALLOC (ALLOCATION) or
 * VT_REC_FREE (RELEASE), api VT_API_CUPTI, stack 0, ts_ns = rec->timestamp
 * (ns; CLOCK_MONOTONIC once vtc_start registered its timestamp callback).
 * device: rec->deviceId, or -1 for pinned/pageable host memory. alloc.stream:
 * CUPTI's stream id (not a handle) for async operations, else 0. The context
 * id has no field in the trace format and is dropped. Returns 1 when out is
 * filled, 0 when the record is not one to count (invalid operation, null
 * address, zero-byte allocation), -1 for NULL arguments. Source:
 * cupti_activity.h (CUDA 13), CUpti_ActivityMemory4. */
int vtc_translate_memory(const CUpti_ActivityMemory4 *rec, vt_event *out);
/* CUPTI_ACTIVITY_KIND_MEMORY_POOL record -> VT_REC_NOTE whose text (written
 * into buf, buflen bytes, truncated) is one line:
 *   "CUPTI memory pool <created|destroyed|trimmed>: device D address 0x.. size N
 *    release_threshold N utilized N type <local|imported> [min_bytes_to_keep N]"
 * Pools are notes, not heap events: a pool's allocations already appear as
 * allocations (hooked cudaMallocAsync or CUPTI), so a heap would count them
 * twice in "reserved". Returns 1, 0 for an invalid operation, -1 for NULL
 * arguments. Source: cupti_activity.h, CUpti_ActivityMemoryPool3. */
int vtc_translate_pool(const CUpti_ActivityMemoryPool3 *rec, vt_event *out, char *buf,
                       size_t buflen);
#endif

#ifdef __cplusplus
}
#endif
#endif
