/* vtcupti.h: CUPTI side of vramtrace (DESIGN.md: "CUPTI").
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

#ifdef __cplusplus
}
#endif
#endif
