/* record.c: turning hooked calls into trace records (allocation, free,
 * failed allocation, memory-info samples, devices) and the exit summary
 * (the OOM diagnosis on stderr: diagnose.c). Called by the hooks and the
 * life cycle; calls the live map, stacks, diagnosis and session core. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vsize.h"
#include "vti_internal.h"

static _Atomic uint64_t devices_seen; /* bit d for device d < VTI_MAX_DEVICES */
/* Devices whose first allocation took a memory sample (bit d: device d):
 * each device's use outside the recording (its context, other processes)
 * is known from its own first sample, not only the first device's. */
static _Atomic uint64_t first_sampled;

/* ---- real queries (never recorded as application calls) ---------------- */

/* The current context's device into *d; false without one (or a driver). */
static bool context_device(CUdevice *d)
{
    static _Atomic(PFN_cuCtxGetDevice_v2000) fn; /* looked up once it is found */
    PFN_cuCtxGetDevice_v2000 f = atomic_load(&fn);
    bool ok;
    if (!f && (f = VTI_REAL_DRIVER(cuCtxGetDevice, 2000, "cuCtxGetDevice")))
        atomic_store(&fn, f);
    vti_enter();
    ok = f && f(d) == CUDA_SUCCESS;
    vti_leave();
    return ok;
}

int vti_context_device_or(int fallback)
{
    CUdevice d;
    return context_device(&d) ? d : fallback;
}

int vti_driver_device(void)
{
    return vti_context_device_or(0);
}

static bool driver_meminfo(uint64_t *free_b, uint64_t *total_b)
{
    CUresult (*f)(size_t *, size_t *) = vti_real(F_cuMemGetInfo_v2);
    size_t fr = 0, to = 0;
    if (!f || f(&fr, &to) != CUDA_SUCCESS)
        return false;
    *free_b = fr;
    *total_b = to;
    return true;
}

/* The runtime's sticky last error must look untouched to the application:
 * when our query fails where nothing had failed before, clear it again. */
static bool runtime_meminfo(uint64_t *free_b, uint64_t *total_b)
{
    cudaError_t (*get)(size_t *, size_t *) = vti_real(F_cudaMemGetInfo);
    cudaError_t (*peek)(void) = vti_real_runtime("cudaPeekAtLastError");
    cudaError_t (*clear)(void) = vti_real_runtime("cudaGetLastError");
    size_t fr = 0, to = 0;
    cudaError_t before, rc;
    if (!get || !peek || !clear)
        return false;
    before = peek();
    rc = get(&fr, &to);
    if (rc != cudaSuccess && before == cudaSuccess)
        clear();
    if (rc != cudaSuccess)
        return false;
    *free_b = fr;
    *total_b = to;
    return true;
}

bool vti_sample_meminfo(enum vt_level level, uint64_t *free_b, uint64_t *total_b)
{
    bool ok;
    vti_enter();
    ok = driver_meminfo(free_b, total_b);
    if (!ok && level == VT_LEVEL_RUNTIME)
        ok = runtime_meminfo(free_b, total_b);
    vti_leave();
    if (!ok)
        *free_b = *total_b = 0;
    return ok;
}

static bool device_info(int device, char *name, int len, uint64_t *total)
{
    PFN_cuDeviceGet_v2000 get = VTI_REAL_DRIVER(cuDeviceGet, 2000, "cuDeviceGet");
    PFN_cuDeviceGetName_v2000 gname = VTI_REAL_DRIVER(cuDeviceGetName, 2000, "cuDeviceGetName");
    PFN_cuDeviceTotalMem_v3020 gmem =
        VTI_REAL_DRIVER(cuDeviceTotalMem, 3020, "cuDeviceTotalMem_v2");
    CUdevice d;
    size_t bytes = 0;
    bool ok;
    vti_enter();
    ok = get && gname && gmem && get(&d, device) == CUDA_SUCCESS &&
         gname(name, len, d) == CUDA_SUCCESS && gmem(&bytes, d) == CUDA_SUCCESS;
    vti_leave();
    *total = bytes;
    return ok;
}

/* Emit VT_REC_DEVICE for device (bit: its bit in devices_seen), claimed
 * by this thread. */
static __attribute__((noinline)) void emit_device(vti_thread *t, int device, uint64_t bit)
{
    char name[256] = "";
    uint64_t total = 0;
    vt_event ev = {.type = VT_REC_DEVICE};
    if ((atomic_fetch_or(&devices_seen, bit) & bit) ||
        !device_info(device, name, sizeof name, &total))
        return;
    ev.u.device.id = device;
    ev.u.device.name = name;
    ev.u.device.total_bytes = total;
    vti_write(t, &ev);
}

/* Emit VT_REC_DEVICE the first time device is seen (one load after). */
static inline void note_device(vti_thread *t, int device)
{
    uint64_t bit = device >= 0 && device < VTI_MAX_DEVICES ? 1ull << device : 0;
    if (bit && !(atomic_load_explicit(&devices_seen, memory_order_relaxed) & bit))
        emit_device(t, device, bit);
}

static void emit_meminfo(vti_thread *t, int device, uint64_t free_b, uint64_t total_b)
{
    vt_event ev = {.type = VT_REC_MEMINFO};
    vti_write_pool_sample(t, device, false);
    uint64_t graph = vti_write_graph_pool(t, device); /* its kept memory is the process's too */
    ev.ts_ns = vti_stamp();
    ev.u.meminfo.device = device;
    ev.u.meminfo.free_bytes = free_b;
    ev.u.meminfo.total_bytes = total_b;
    vti_write(t, &ev);
    vti_iter_meminfo(device, free_b, graph);
}

/* device's memory through its primary context, pushed for the query when
 * the driver says it is active (retained and released around it: its
 * reference count is as before); false when it is not (a sample never
 * creates a context, which would take device memory) or a call failed. */
static bool primary_meminfo(int device, uint64_t *free_b, uint64_t *total_b)
{
    PFN_cuDeviceGet_v2000 get = VTI_REAL_DRIVER(cuDeviceGet, 2000, "cuDeviceGet");
    PFN_cuDevicePrimaryCtxGetState_v7000 state =
        VTI_REAL_DRIVER(cuDevicePrimaryCtxGetState, 7000, "cuDevicePrimaryCtxGetState");
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        VTI_REAL_DRIVER(cuDevicePrimaryCtxRetain, 7000, "cuDevicePrimaryCtxRetain");
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        VTI_REAL_DRIVER(cuDevicePrimaryCtxRelease, 11000, "cuDevicePrimaryCtxRelease_v2");
    PFN_cuCtxPushCurrent_v4000 push =
        VTI_REAL_DRIVER(cuCtxPushCurrent, 4000, "cuCtxPushCurrent_v2");
    PFN_cuCtxPopCurrent_v4000 pop = VTI_REAL_DRIVER(cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2");
    CUdevice dev;
    CUcontext ctx, popped;
    unsigned int flags;
    int active = 0;
    bool ok = false;
    if (!get || !state || !retain || !release || !push || !pop)
        return false;
    vti_enter();
    if (get(&dev, device) == CUDA_SUCCESS && state(dev, &flags, &active) == CUDA_SUCCESS &&
        active && retain(&ctx, dev) == CUDA_SUCCESS) {
        if (push(ctx) == CUDA_SUCCESS) {
            ok = driver_meminfo(free_b, total_b);
            pop(&popped);
        }
        release(dev);
    }
    vti_leave();
    return ok;
}

/* A memory sample of device (cuMemGetInfo answers for the current context's
 * device only): vti_sample_meminfo when device is the current one (or no
 * context is current: the runtime's query then makes the runtime's), else
 * primary_meminfo. A cuMemCreate or a graph launch on another device than
 * the current one was given the current device's numbers (session 32: "free
 * 3.70 GiB" of device 0 for a failure on device 1 with 3.20 GiB free). */
static bool device_meminfo(int device, enum vt_level level, uint64_t *free_b, uint64_t *total_b)
{
    CUdevice cur;
    if (device < 0 || !context_device(&cur) || (int)cur == device)
        return vti_sample_meminfo(level, free_b, total_b);
    if (primary_meminfo(device, free_b, total_b))
        return true;
    *free_b = *total_b = 0;
    return false;
}

/* The first allocation on device: a memory sample. */
static void first_call(vti_thread *t, int device, enum vt_level level)
{
    uint64_t fr, to, bit = device < VTI_MAX_DEVICES ? 1ull << device : 0;
    if (!bit || (atomic_load_explicit(&first_sampled, memory_order_relaxed) & bit) ||
        (atomic_fetch_or(&first_sampled, bit) & bit))
        return;
    if (device_meminfo(device, level, &fr, &to))
        emit_meminfo(t, device, fr, to);
}

/* ---- allocation and free ------------------------------------------------- */

uint32_t vti_hook_stack(void)
{
    if (vti_settings_get()->stack_depth <= 0) /* stacks off (as vti_stack_capture says) */
        return 0;
    return vti_stack_capture(0); /* a tail call: no frame of its own to walk */
}

/* vti_rec_alloc with api's row (info) looked up by the caller; inlined into
 * its two callers (one call less on every allocation). */
static inline __attribute__((always_inline)) void
rec_alloc(uint64_t addr, uint64_t size, int device, int owner, enum vt_api api,
          const vt_api_info *info, uint64_t stream, uint32_t stack, uint64_t ts)
{
    vti_thread *t = vti_thread_get();
    vt_event ev = {.type = VT_REC_ALLOC};
    vti_live e;
    if (!t)
        return;
    e = (vti_live){.addr = addr,
                   .size = size,
                   .stack = stack,
                   .device = device < 0 && owner >= 0 ? VTI_LIVE_HOST_OF(owner) : device,
                   .api = (uint8_t)api,
                   .space = (uint8_t)info->space};
    note_device(t, device);
    ev.ts_ns = ts;
    if (vti_live_insert(&e) != 0) {
        vti_thread_put(t);
        vti_stop("too many live allocations");
        return;
    }
    ev.u.alloc.addr = addr;
    ev.u.alloc.size = size;
    ev.u.alloc.stack = e.stack;
    ev.u.alloc.device = device;
    ev.u.alloc.api = api;
    ev.u.alloc.stream = stream;
    vti_write(t, &ev);
    first_call(t, device < 0 ? 0 : device, info->level);
    vti_thread_put(t);
    vti_diag_alloc(size, device);
}

void vti_rec_alloc(uint64_t addr, uint64_t size, int device, enum vt_api api, uint64_t stream,
                   uint32_t stack)
{
    rec_alloc(addr, size, device, -1, api, vt_api_get(api), stream, stack, vti_stamp());
}

int vti_alloc_done(bool ok, int error, uint64_t p, uint64_t size, enum vt_api api, uint64_t stream,
                   int (*device)(void), uint32_t stack, uint64_t ts)
{
    const vt_api_info *info = vt_api_get(api);
    bool host = vt_kind_is_host(info->kind);
    int dev = host ? -1 : device();
    if (ok && p) /* host memory keeps the device of its context (VTI_LIVE_HOST_OF) */
        rec_alloc(p, size, dev, host ? device() : -1, api, info, stream, stack, ts);
    else if (!ok)
        vti_rec_failed(size, error, dev, api, stack);
    return dev;
}

static void emit_vmm(enum vt_rec type, uint64_t handle, uint64_t addr, uint64_t size, int device)
{
    vti_thread *t = vti_thread_get();
    vt_event ev = {.type = type};
    if (!t)
        return;
    ev.ts_ns = vti_stamp();
    ev.u.vmm.handle = handle;
    ev.u.vmm.addr = addr;
    ev.u.vmm.size = size;
    ev.u.vmm.device = device;
    vti_write(t, &ev);
    vti_thread_put(t);
}

void vti_rec_vmm_map(uint64_t handle, uint64_t addr, uint64_t size)
{
    emit_vmm(VT_REC_VMM_MAP, handle, addr, size, vti_live_vmm_map(handle, addr, size));
}

/* ts: the free's time (vti_stamp). The free of an allocation that keeps a
 * destroyed pool is followed by what the pool holds now (vti_pool_freed). */
static inline __attribute__((always_inline)) void emit_free(vti_thread *t, const vti_live *e,
                                                            uint64_t ts)
{
    vt_event ev = {.type = VT_REC_FREE};
    ev.ts_ns = ts;
    ev.u.free.addr = e->addr;
    ev.u.free.device = vti_live_device(e);
    ev.u.free.api = (enum vt_api)e->api;
    vti_write(t, &ev);
    if (e->space == VT_SPACE_ADDR &&
        atomic_load_explicit(&vti_pools_draining, memory_order_relaxed))
        vti_pool_freed(t, e->addr);
}

/* A released handle that dies with this unmap: its release, written now,
 * just before the unmap (vti_rec_free leaves it pending while mapped). */
static void emit_release(const vti_live *e, void *arg)
{
    vti_thread *t = vti_thread_get();
    (void)arg;
    if (t)
        emit_free(t, e, vti_stamp());
    vti_thread_put(t);
}

void vti_rec_vmm_unmap(uint64_t addr, uint64_t size)
{
    vti_live_vmm_unmap(addr, size, emit_release, NULL);
    emit_vmm(VT_REC_VMM_UNMAP, 0, addr, size, 0);
}

void vti_rec_free(uint64_t addr, uint8_t space, uint64_t ts)
{
    vti_thread *t;
    vti_live e;
    if (!addr && space != VT_SPACE_VMM_HANDLE) /* cudaFree(NULL), cudaFreeArray(NULL) ... */
        return;
    if (!(t = vti_thread_get()))
        return;
    /* a VMM handle: a release that drops a retained reference is not its
     * own; one still mapped is written when its last mapping goes
     * (emit_release), unless a retain makes it live again */
    if (space == VT_SPACE_VMM_HANDLE ? vti_live_release(addr, &e) == VTI_RELEASE_DIED
                                     : vti_live_remove(addr, space, &e))
        emit_free(t, &e, ts);
    vti_thread_put(t);
}

void vti_rec_free_failed(uint64_t addr, int error, enum vti_fn f, uint32_t stack, uint64_t ts)
{
    vti_thread *t = vti_thread_get();
    vt_event ev = {.type = VT_REC_FREE_FAILED};
    if (!t)
        return;
    ev.ts_ns = ts;
    ev.u.free_failed.addr = addr;
    ev.u.free_failed.error = error;
    ev.u.free_failed.stack = stack;
    ev.u.free_failed.call = vti_intern(t, vti_fn_name(f));
    ev.u.free_failed.flags = vti_graph_node_known(addr) ? VT_FREE_FAILED_GRAPH_NODE : 0;
    vti_write(t, &ev);
    vti_thread_put(t);
}

static void reset_one(const vti_live *e, void *arg)
{
    emit_free(arg, e, vti_stamp());
}

void vti_rec_device_reset(int device)
{
    vti_thread *t = vti_thread_get();
    if (!t)
        return;
    vti_live_drain_device(device, reset_one, t);
    vti_thread_put(t);
}

/* Whether device's primary context is inactive, asked of the real driver;
 * false when it cannot answer (nothing is then recorded as freed). */
static bool primary_inactive(int device)
{
    static _Atomic(PFN_cuDevicePrimaryCtxGetState_v7000) fn; /* once found */
    PFN_cuDevicePrimaryCtxGetState_v7000 f = atomic_load(&fn);
    unsigned flags = 0;
    int active = 1;
    if (!f && (f = VTI_REAL_DRIVER(cuDevicePrimaryCtxGetState, 7000, "cuDevicePrimaryCtxGetState")))
        atomic_store(&fn, f);
    vti_enter();
    CUresult rc = f ? f(device, &flags, &active) : CUDA_ERROR_NOT_INITIALIZED;
    vti_leave();
    return rc == CUDA_SUCCESS && !active;
}

void vti_rec_context_end(int device)
{
    vti_counters c, h;
    vti_counters_get(device, &c);
    vti_counters_get(-1, &h);
    if ((c.live_count || h.live_count) && primary_inactive(device))
        vti_rec_device_reset(device);
}

void vti_rec_meminfo(int device, uint64_t free_b, uint64_t total_b)
{
    vti_thread *t = vti_thread_get();
    if (!t)
        return;
    note_device(t, device);
    emit_meminfo(t, device, free_b, total_b);
    vti_thread_put(t);
}

void vti_rec_capture(uint64_t stream, bool began)
{
    vt_event ev = {.type = VT_REC_CAPTURE}; /* ts 0: stamped as it is written */
    ev.u.capture.stream = stream;
    ev.u.capture.began = began;
    vti_session_emit(&ev);
}

/* ---- failures (the OOM diagnosis: diagnose.c) ------------------------------ */

void vti_rec_failed(uint64_t size, int error, int device, enum vt_api api, uint32_t stack)
{
    enum vt_level level = vt_api_get(api)->level;
    vti_thread *t = vti_thread_get();
    vt_event ev = {.type = VT_REC_ALLOC_FAILED};
    vti_failure f = {.size = size, .error = error, .device = device, .api = api, .stack = stack};
    if (!t)
        return;
    if (error == VT_ERROR_OUT_OF_MEMORY && device >= 0) {
        /* the pools as they are at the failure, not at their last sample
         * (an iteration's end, an earlier failure): corpus.random_* held
         * against the ledger counted up to 50 MB of a pool's old reserve as
         * use outside the recording */
        vti_write_pool_sample(t, device, true);
        f.graph_pool = vti_write_graph_pool(t, device);
    }
    ev.ts_ns = vti_stamp();
    ev.u.failed.stack = stack;
    note_device(t, device);
    f.have_info = device_meminfo(device, level, &f.fr, &f.to);
    ev.u.failed.size = size;
    ev.u.failed.error = error;
    ev.u.failed.device = device;
    ev.u.failed.api = api;
    ev.u.failed.free_bytes = f.fr;
    ev.u.failed.total_bytes = f.to;
    vti_write(t, &ev);
    if (f.have_info)
        emit_meminfo(t, device, f.fr, f.to);
    vti_count_failure(device);
    vti_thread_put(t);
    if (error == VT_ERROR_OUT_OF_MEMORY) /* an invalid argument is no OOM to diagnose */
        vti_diag_failed(&f);
}

/* ---- end ------------------------------------------------------------------ */

static void summary_device(int device)
{
    vti_counters c;
    char peak[32], leak[32];
    vti_counters_get(device, &c);
    if (!c.allocs && !c.failures)
        return;
    vti_fmt_bytes(c.peak_bytes, peak, sizeof peak);
    vti_fmt_bytes(c.live_bytes, leak, sizeof leak);
    /* The preload sees allocation calls only: its peak is what the report
     * calls reserved (a caching allocator's segments count whole); the
     * report splits allocated from reserved. */
    uint64_t pools = vti_pool_reserved_peak(device);
    if (device < 0)
        vti_msg("vramtrace: host memory (pinned, registered): peak %s", peak);
    else
        vti_msg("vramtrace: device %d: peak reserved %s", device, peak);
    if (pools) { /* what backend:cudaMallocAsync's memory_reserved() is */
        char pool[32];
        vti_fmt_bytes(pools, pool, sizeof pool);
        vti_msg(" (stream-ordered pools reserved %s where sampled)", pool);
    }
    /* "live at exit", not "leaked": without symbols the preload cannot tell
     * a caching allocator's cache from a leak (the report can). */
    vti_msg(", %" PRIu64 " allocation%s, live at exit %s in %" PRIu64 " allocation%s, %" PRIu64
            " failed allocation%s\n",
            c.allocs, vsize_plural(c.allocs), leak, c.live_count, vsize_plural(c.live_count),
            c.failures, vsize_plural(c.failures));
}

void vti_rec_end_summary(void)
{
    uint64_t seen = atomic_load(&devices_seen);
    vti_diag_flush(); /* a failure not followed by a successful retry */
    if (vti_settings_get()->quiet)
        return;
    for (int d = -1; d < VTI_MAX_DEVICES; d++) /* host and device 0 always */
        if (d <= 0 || (seen & (1ull << d)))
            summary_device(d);
    char line[256];
    if (vti_iter_headline(line, sizeof line)) /* the report's headline, when it grows */
        vti_msg("vramtrace: %s\n", line);
}

void vti_record_fork_reset(void)
{
    atomic_store(&devices_seen, 0); /* the child's trace describes its devices again */
    atomic_store(&first_sampled, 0);
}
