/* cupti_loader.c: start the optional CUPTI side (cupti/vtcupti.h) from
 * libvramtrace_cupti.so next to this library, never linked. Where it cannot
 * start, one VT_REC_NOTE says why and the hooks carry on alone. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../cupti/vtcupti.h"
#include "vti_internal.h"

enum { C_NONE, C_PENDING, C_LOADING, C_DONE };
static _Atomic int cupti_state = C_NONE;
static vtc_stop_fn stop_fn;

static bool hooks_have(uint64_t addr)
{
    return vti_live_has(addr);
}

/* Inside a hooked call (the depth counter of the hooks). */
static bool in_hook(void)
{
    return vti_inside();
}

static const vtc_host host = {.abi_version = VTC_ABI_VERSION,
                              .emit = vti_session_emit,
                              .hooks_have = hooks_have,
                              .in_hook = in_hook};

static void note(const char *why)
{
    char text[600];
    vt_event ev = {.type = VT_REC_NOTE};
    if (strncmp(why, "CUPTI unavailable", 17) == 0)
        snprintf(text, sizeof text, "%s", why);
    else
        snprintf(text, sizeof text, "CUPTI unavailable: %s", why);
    ev.u.note.text = text;
    vti_session_emit(&ev);
}

static bool cuda_loaded(void)
{
    static const char *const libs[] = {"libcudart.so.13", "libcuda.so.1"};
    for (size_t i = 0; i < 2; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return true;
        }
    }
    return false;
}

/* CUPTI is expected to work only over a real driver: not where no
 * libcuda.so.1 loads (no driver), nor over the simulated device
 * (sim/README.md, "Identity"), which has no driver for CUPTI to attach to.
 * Where it is not expected, it is not started and no note is written. */
static bool cupti_expected(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    bool real = h && !vti_real_dlsym(h, "vtsim_identity");
    if (h)
        dlclose(h);
    return real;
}

static void cupti_start(void)
{
    char path[4200], why[4600] = "vtc_start failed";
    const char *self = vti_self_path();
    const char *slash = self ? strrchr(self, '/') : NULL;
    void *h;
    vtc_start_fn start;
    if (!vti_settings_get()->cupti || !cupti_expected())
        return;
    snprintf(path, sizeof path, "%.*s/libvramtrace_cupti.so", slash ? (int)(slash - self) : 1,
             slash ? self : ".");
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load %s: %s", path, e ? e : "unknown error");
        note(why);
        return;
    }
    start = (vtc_start_fn)vti_real_dlsym(h, "vtc_start");
    stop_fn = (vtc_stop_fn)vti_real_dlsym(h, "vtc_stop");
    if (!start) {
        note("libvramtrace_cupti.so has no vtc_start");
        stop_fn = NULL;
        return;
    }
    if (start(&host, why, sizeof why) != 0) {
        why[sizeof why - 1] = '\0';
        note(why);
    }
}

bool vti_cupti_load(void)
{
    int s = atomic_load(&cupti_state);
    if (s != C_NONE && s != C_PENDING)
        return s == C_DONE; /* C_LOADING: another thread is at it */
    if (s == C_NONE && !cuda_loaded()) {
        atomic_store(&cupti_state, C_PENDING); /* started at the first hook */
        return false;
    }
    if (!atomic_compare_exchange_strong(&cupti_state, &s, C_LOADING))
        return s == C_DONE;
    vti_enter();
    cupti_start();
    vti_leave();
    atomic_store(&cupti_state, C_DONE);
    return true;
}

bool vti_cupti_running(void)
{
    return atomic_load(&cupti_state) == C_DONE && stop_fn;
}

void vti_cupti_unload(void)
{
    if (atomic_load(&cupti_state) == C_DONE && stop_fn)
        stop_fn(); /* vtc_stop stops once */
}

void vti_cupti_fork_reset(void)
{
    int s = atomic_load(&cupti_state);
    /* the parent's CUPTI is not the child's: not running here, nor started
     * again; a parent that had not reached it leaves the child to try */
    if (s == C_LOADING || s == C_DONE)
        atomic_store(&cupti_state, C_DONE);
    stop_fn = NULL;
}
