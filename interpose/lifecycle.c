/* lifecycle.c: the top of the preload library: the constructor, the
 * session's start at the first hooked call or recorded event, the hooks'
 * prologue, and every end of the process (exit, _exit, _Exit, quick_exit)
 * and fork. It calls down in order (session core, stacks, signal guard,
 * CUPTI, exit summary); nothing below calls it back except through the
 * state (state.c). See interpose/README.md for the behaviour. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vti_internal.h"

static VTI_TLS bool tl_starting;
static _Atomic bool opened; /* the trace was created: there is an end to write */
static _Atomic bool early_done;
_Atomic bool vti_cupti_settled;
_Atomic unsigned vti_exit_armed;

static void on_exit_handler(int status, void *arg);
static void on_exit_early(int status, void *arg);
static void on_quick_exit(void);

/* The session core opened, stacks ready, then recording: the exit and
 * signal handlers installed, the module map written. */
static bool session_start(bool forked)
{
    vti_thread *t;
    if (!vti_session_open(forked))
        return false;
    atomic_store(&opened, true);
    vti_stacks_init();
    vti_state_set(VTI_S_ON);
    on_exit(on_exit_handler, NULL); /* glibc passes exit()'s status, atexit would not */
    vti_guard_start();
    at_quick_exit(on_quick_exit); /* runs after the program's own handlers */
    if ((t = vti_thread_get())) {
        vti_modules_sync(t, true);
        vti_thread_put(t);
    }
    return true;
}

/* Another thread is starting the session: wait for it (not when this
 * thread is the one starting: its own calls are not recorded). */
static bool wait_started(void)
{
    if (tl_starting)
        return false;
    while (vti_state() == VTI_S_STARTING)
        sched_yield();
    return vti_on();
}

/* A fork child's session starts with nothing of its parent's: each part
 * lets go of the parent's state (vti_internal.h, "A fork child's own
 * session"), and the exit is armed anew. */
static void fork_reset(void)
{
    vti_order_fork_reset();
    vti_live_fork_reset();
    vti_stacks_fork_reset();
    vti_strings_fork_reset();
    vti_py_fork_reset();
    vti_unwind_fork_reset();
    vti_record_fork_reset();
    vti_iter_fork_reset();
    vti_diag_fork_reset();
    vti_graph_fork_reset();
    vti_cupti_fork_reset();
    vti_pool_fork_reset();
    atomic_store(&vti_exit_armed, 0);
    atomic_store(&early_done, false);
    atomic_store(&opened, false);
}

bool vti_session_ensure_slow(void)
{
    int s = vti_state();
    if (s == VTI_S_ON)
        return vti_on();
    if (s == VTI_S_STARTING)
        return wait_started();
    if (s != VTI_S_OFF && s != VTI_S_CHILD)
        return vti_on();
    if (!vti_state_move(s, VTI_S_STARTING)) /* another thread won the start */
        return vti_state() == VTI_S_STARTING ? wait_started() : vti_on();
    tl_starting = true;
    vti_enter();
    if (s == VTI_S_CHILD)
        fork_reset();
    if (!session_start(s == VTI_S_CHILD))
        vti_state_set(VTI_S_STOPPED);
    vti_leave();
    tl_starting = false;
    if (vti_on())
        vti_cupti_load();
    return vti_on();
}

bool vti_hook_enter_outer(void)
{
    if (!vti_session_ensure())
        return false;
    if (!atomic_load_explicit(&vti_cupti_settled, memory_order_relaxed) && vti_cupti_load())
        atomic_store_explicit(&vti_cupti_settled, true, memory_order_relaxed);
    return true;
}

/* After an outermost allocation hook's real call returned, with CUPTI settled
 * (started or given up): on_exit_early registered, once per API level
 * (a program may initialise the runtime only after using the driver alone;
 * on_exit_early makes its calls once, in the handler that runs first). Exit
 * handlers run last registered first, so it runs before CUPTI's own static
 * destructors (registered when it was dlopened), after which a CUPTI call
 * crashed (first H200 run, driver 580.159.04: cuptiActivityDisable). It was
 * meant to run before the CUDA runtime's teardown too, but on the second
 * H200 run a driver call from it (cuCtxGetDevice, for an end sample) still
 * crashed in 4 of 22 programs: the runtime's teardown had run first. So the
 * end makes no driver call at all; only CUPTI's flush and stop remain
 * (VRAMTRACE_CUPTI=1, opt-in). tests/interpose t_exit holds the preload to
 * that on the simulated device (sim/README.md, "Exit"). */
/* The end's one CUDA part is CUPTI's flush and stop (vti_cupti_unload); it
 * takes no memory sample: a driver call in exit() can crash after the
 * runtime's teardown, whose place among the exit handlers is not known.
 * Without CUPTI running, nothing is registered. */
void vti_exit_arm_slow(unsigned level)
{
    if (!atomic_load(&vti_cupti_settled) || (atomic_fetch_or(&vti_exit_armed, level) & level) ||
        !vti_cupti_running())
        return;
    on_exit(on_exit_early, NULL);
}

/* ---- ends ------------------------------------------------------------------ */

/* This process has an end to write: it opened the trace, and it is not a
 * fork child that let go of its parent's trace and has not opened its own. */
static bool has_end(void)
{
    return atomic_load(&opened) && vti_state() != VTI_S_CHILD;
}

static void on_exit_early(int status, void *arg)
{
    (void)status, (void)arg;
    if (!has_end() || atomic_exchange(&early_done, true))
        return;
    vti_enter();
    vti_cupti_unload();
    vti_leave();
}

/* The end of the process: CUPTI stopped (unless in exit()'s handlers, where
 * only on_exit_early may call CUPTI: without it the last CUPTI buffers are
 * left out rather than risk a crash), the summary, then the session core
 * closes the trace. Once. */
static void session_end(int status, const char *reason, bool in_exit)
{
    static _Atomic int done;
    if (!has_end() || atomic_exchange(&done, 1))
        return;
    vti_enter();
    if (!in_exit && !atomic_load(&early_done))
        vti_cupti_unload();
    vti_rec_end_summary();
    vti_session_close(status, reason);
    vti_leave();
}

static void on_exit_handler(int status, void *arg)
{
    (void)arg;
    session_end(status, "exit", true);
}

/* An end without exit handlers: nothing in a vfork child (the parent's
 * session); inside a hook (a signal handler's _exit) only the signal-safe
 * flush. */
static void session_end_now(int status, const char *reason)
{
    if (!atomic_load(&opened) || !vti_session_is_ours())
        return;
    if (vti_inside()) {
        vti_signal_flush(0);
        return;
    }
    session_end(status, reason, false);
}

static void on_quick_exit(void)
{
    session_end_now(0, "quick_exit"); /* the status is not passed to handlers */
}

typedef void (*exit_fn)(int);

static _Noreturn void real_exit(const char *name, int status)
{
    exit_fn f = (exit_fn)vti_real_dlsym(RTLD_NEXT, name);
    if (f)
        f(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

VTI_EXPORT void _exit(int status)
{
    session_end_now(status, "_exit");
    real_exit("_exit", status);
}

VTI_EXPORT void _Exit(int status)
{
    session_end_now(status, "_exit");
    real_exit("_Exit", status);
}

/* ---- constructor ----------------------------------------------------------- */

/* The session itself starts at the first hooked call or recorded event
 * (vti_session_ensure): a process that never calls CUDA writes nothing. A
 * fork child lets go of its parent's trace and starts its own session by
 * the same rule, whether or not its parent had started (README.md, "Fork"). */
__attribute__((constructor)) static void vti_constructor(void)
{
    const char *self = vti_self_path(), *nvtx = getenv("NVTX_INJECTION64_PATH");
    vti_msg_init();
    if (self && (!nvtx || !*nvtx)) /* NVTX treats an empty value as unset */
        setenv("NVTX_INJECTION64_PATH", self, 1);
    vti_run_init();
    pthread_atfork(NULL, NULL, vti_session_fork_child);
}
