/* vti_internal.h: private plumbing of the preload library (interpose/).
 * vti.h is the interface the NVTX injection uses; this header is shared by
 * every other file of interpose/.
 *
 * Layers: each file calls only files listed before it, never after (no
 * circles: the file call-graph check of issue 19); the one list of the
 * layers and their files is docs/architecture.md, "interpose/ in layers".
 */
#ifndef VRAMTRACE_VTI_INTERNAL_H
#define VRAMTRACE_VTI_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vti.h"

#define VTI_EXPORT __attribute__((visibility("default")))
#define VTI_HIDDEN __attribute__((visibility("hidden")))
/* Thread-locals of the hot path: initial-exec (no __tls_get_addr call). The
 * library is preloaded, so its few bytes come from the static TLS block; a
 * later dlopen (NVTX injection) finds it already loaded. */
#define VTI_TLS __thread __attribute__((tls_model("initial-exec")))
#define VTI_MAX_STACK_DEPTH 256
#define VTI_DEFAULT_STACK_DEPTH 64

/* ---- settings (settings.c) ---------------------------------------------- */

typedef struct vti_settings {
    char output[4096];      /* VRAMTRACE_OUTPUT, %p and %h expanded (unused when default) */
    bool output_is_default; /* no VRAMTRACE_OUTPUT: vramtrace.<program>.<pid>.vtrace */
    int stack_depth;        /* frames kept, 1..VTI_MAX_STACK_DEPTH */
    bool quiet;
    bool python_frames; /* VRAMTRACE_PYTHON_FRAMES: Python frames in Python processes */
    bool cupti;         /* VRAMTRACE_CUPTI=1: start CUPTI (off: cupti/README.md, "Status") */
    int unwind;         /* VRAMTRACE_UNWIND: one of VTI_UNWIND_* */
} vti_settings;

/* VRAMTRACE_UNWIND: cached CFI rules with libunwind behind them (fast), only
 * libunwind (the reference), or both, stopping on any difference (check). */
enum { VTI_UNWIND_FAST, VTI_UNWIND_LIBUNWIND, VTI_UNWIND_CHECK };

/* Read VRAMTRACE_QUIET, VRAMTRACE_OUTPUT, VRAMTRACE_STACK_DEPTH,
 * VRAMTRACE_PYTHON_FRAMES, VRAMTRACE_CUPTI and VRAMTRACE_UNWIND into the settings in force (once,
 * at session start). A bad value prints one line on stderr (unless quiet) and keeps the default.
 * pid is the process id. */
void vti_settings_read(int pid);
/* The settings in force (defaults until the session starts). */
const vti_settings *vti_settings_get(void);

/* ---- messages (msg.c) ----------------------------------------------------- */

/* Remember which file descriptor 2 is (first thing in the constructor). */
void vti_msg_init(void);
/* printf-style message on the stderr the program started with, and only
 * while descriptor 2 is still that file (else dropped: never into a file the
 * program opened on 2). One write(2) of at most 2 KiB. */
void vti_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- re-entry depth and recording state (state.c) ---------------------- */

/* Depth of vramtrace's own frames on this thread: hooked calls (outermost =
 * 1) and vramtrace's own calls into CUDA. A hooked call made at depth > 0 is
 * forwarded without recording. */
extern VTI_TLS int vti_tl_depth;
/* Current device of this thread as set through cudaSetDevice (runtime). */
extern VTI_TLS int vti_tl_device;
/* Set when the program changed this thread's current context through the
 * driver (cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent, cuCtxCreate),
 * cleared by its next cudaSetDevice: while set, vti_tl_device need not be
 * the runtime's device (hooks_runtime.c, runtime_device). */
extern VTI_TLS bool vti_tl_context_switched;

/* The one re-entry guard: between vti_enter() and vti_leave() the calling
 * thread's hooked CUDA calls are vramtrace's own and are not recorded.
 * Always paired in the same function. */
static inline void vti_enter(void)
{
    vti_tl_depth++;
}
static inline void vti_leave(void)
{
    vti_tl_depth--;
}
/* Inside a hooked call or vramtrace's own call into CUDA. */
static inline bool vti_inside(void)
{
    return vti_tl_depth > 0;
}
/* After vti_enter(): this is the thread's outermost vramtrace frame. */
static inline bool vti_outermost(void)
{
    return vti_tl_depth == 1;
}

/* The session's state: off until the first hooked call, starting, on,
 * stopped for good (an internal failure or the trace could not be made),
 * or a fork child whose own session has not started (it starts as OFF
 * does, after the parent's state is let go: README.md "Fork"). */
enum { VTI_S_OFF, VTI_S_STARTING, VTI_S_ON, VTI_S_STOPPED, VTI_S_CHILD };
/* The state word (state.c): the state, and VTI_STOPPING once the exit is in
 * progress. Read by vti_on() on every hooked call; moved only by state.c. */
#define VTI_STOPPING 0x100
extern VTI_HIDDEN _Atomic int vti_state_word;
/* Recording, and the exit not begun. The library's own files call this;
 * vti_enabled() (vti.h) is the same answer out of line for the NVTX
 * injection, which sees only vti.h. */
static inline bool vti_on(void)
{
    return atomic_load_explicit(&vti_state_word, memory_order_acquire) == VTI_S_ON;
}
/* The state without the stopping bit. */
int vti_state(void);
/* In a fork child (pthread_atfork): the state becomes VTI_S_CHILD, the
 * stopping bit cleared; its session starts afresh (lifecycle.c). */
void vti_state_fork_child(void);
/* Move from `from` to `to` atomically; false when the state was not `from`. */
bool vti_state_move(int from, int to);
void vti_state_set(int s);
/* The exit is in progress: vti_on() answers false from now on. */
void vti_state_stopping(void);
/* The next event stamp of the process (state.c). The library's own files
 * call this; vti_now_ns() (vti.h) is the same out of line for the NVTX
 * injection. */
extern VTI_HIDDEN vt_stamp_clock vti_stamps;
static inline uint64_t vti_stamp(void)
{
    return vt_clock_stamp(&vti_stamps);
}
/* The same for a caller that holds the order lock (vti_order_lock): no
 * read-modify-write (vt_clock_stamp_locked; the hooks' allocations and
 * frees). */
static inline uint64_t vti_stamp_ordered(void)
{
    return vt_clock_stamp_locked(&vti_stamps);
}
/* Stop tracing for good (from any layer): print "vramtrace: tracing stopped:
 * <why>" once unless quiet; the session core and life cycle read the state. */
void vti_stop(const char *why);

/* ---- runs and trace names (naming.c) ------------------------------------ */

/* In the constructor: inherit the run id (VT_ENV_RUN_ID) or start a run by
 * setting a new one in the environment, so the process tree shares it. */
void vti_run_init(void);
/* The header's run fields: run id ("" if none), parent pid, launcher rank. */
void vti_run_header(vt_header *h);
/* Create this process's trace by the run's naming rule (vtrace.h, "Run
 * naming"): the name in path (len bytes). NULL with a message in err that
 * names the file (vt_writer_open's) or says why there is none. */
vt_writer *vti_trace_open(const vti_settings *s, const vt_header *h, char *path, size_t len,
                          char *err, size_t errlen);
/* After vti_trace_open: add path to the run's list (VT_ENV_RUN_LIST) and,
 * unless quiet, say so when the run's name was held by an earlier run. */
void vti_trace_announce(const vti_settings *s, const vt_header *h, const char *path);

/* ---- fast stack walk (unwind.c) ------------------------------------------ */

/* How to step out of the frame of one return address: CFA = (kind 0: rsp,
 * 1: rbp) + n; return address at CFA-8; rbp saved at CFA-lim, or unchanged
 * when lim is 8. kind 2: outermost frame; 3: libunwind's to walk. */
typedef struct vti_uw_rule {
    int32_t n;
    uint16_t lim;
    uint8_t kind;
} vti_uw_rule;
/* One thread's cache of rules by return address (direct-mapped). */
#define VTI_UW_SLOTS 512
typedef struct vti_uw_slot {
    uint64_t pc; /* 0: empty */
    vti_uw_rule rule;
} vti_uw_slot;
/* One frame of a walk: its pc, rsp and rbp; where rbp was read (0: it was
 * unchanged); whether stepping out of it takes rbp (rbp_cfa) and whether the
 * rest of the walk depends on its rbp (live). */
typedef struct vti_uw_frame {
    uintptr_t pc, sp, bp, bp_at;
    bool rbp_cfa, live;
} vti_uw_frame;
#define VTI_UW_LOG (VTI_MAX_STACK_DEPTH + 16)
/* One read of a remembered walk (unwind.c, "Remembered walks"): a node of
 * the thread's trie of complete walks, keyed by their first frame and then by
 * the words they read, innermost first. A root is a walk's first frame (the
 * capture's own rsp in at, pc in val, rbp in bp, checked when kind says so);
 * every other node is one word the walk read and depends on: the word at at
 * is val, a return address (a frame of the walk) or a saved rbp. depth: the
 * walk's frames through this node; tag: an end node's (a complete walk's
 * last read), the caller's tag for that walk (0: none yet). */
typedef struct vti_uw_node {
    uintptr_t at, val, bp;
    uint64_t tag;
    struct vti_uw_node *child, *next;
    uint16_t depth;
    uint8_t kind, end;
} vti_uw_node;
#define VTI_UW_NODES 1024
/* Buckets of the roots, by first frame (rsp, pc); a power of two. */
#define VTI_UW_ROOT_BUCKETS 64
/* A remembered walk: its end node (node index + 1, 0: none) in the trie of
 * this epoch (the trie emptied since: stale). */
typedef struct vti_uw_ref {
    uint32_t node, epoch;
    uint64_t tag; /* the tag it had when found (vti_unwind_set_tag), 0: none */
} vti_uw_ref;
typedef struct vti_uw_thread {
    uintptr_t stack_lo, stack_hi; /* this thread's stack; hi 0: not read yet */
    bool busy;                    /* walking (a signal handler must not) */
    bool complete;                /* the last walk ended at the outermost frame */
    bool missed;                  /* a walk met a return address of no known rule, */
    uintptr_t miss_pc;            /* this one: vti_unwind_learn's to learn */
    int n;                        /* frames in last[]; 0: none */
    vti_uw_slot slot[VTI_UW_SLOTS];
    /* The last walk's frames: the next walk checks that the words it read
     * are unchanged instead of walking those frames again. */
    vti_uw_frame last[VTI_UW_LOG];
    vti_uw_frame tmp[VTI_UW_LOG];            /* the frames of a walk in progress */
    uint32_t epoch;                          /* the trie below was emptied this many times */
    uint32_t nnodes;                         /* nodes used */
    vti_uw_node *roots[VTI_UW_ROOT_BUCKETS]; /* each bucket's first root */
    vti_uw_node nodes[VTI_UW_NODES];
} vti_uw_thread;

/* Return addresses of the calling thread, innermost first, like libunwind's
 * unw_backtrace(buf, max) called at the same place (buf[0]: the return
 * address into the caller): up to max entries, their count returned. -1 when
 * a frame needs libunwind (signal frame, CFI beyond "CFA = rsp|rbp + N",
 * no CFI, an address outside the thread's stack): the caller then takes
 * unw_backtrace. u: zero-initialised per-thread state, used only by its
 * thread. *same: the frames are exactly those of this thread's last
 * successful walk (checked word by word, not assumed). *ref: the remembered
 * walk these frames are (an earlier one found equal, word by word, or this
 * one remembered now) and its tag; {0} when none. lazy: nonzero when the
 * caller needs no frames for a remembered walk whose tag has the same upper
 * 32 bits: buf is then left alone (the count is still returned). Reads
 * nothing outside the thread's live stack. */
int vti_unwind_fast(vti_uw_thread *u, void **buf, int max, bool *same, vti_uw_ref *ref,
                    uint64_t lazy);
/* After vti_unwind_fast gave -1 with u->missed: the frames from libunwind's
 * unw_step loop, as vti_unwind_fast would give them (-1: none), and, unless a
 * signal frame is on the stack, the rules of all of them learnt (libdw reads
 * and allocates: never in a signal handler). Called from the same frame as
 * vti_unwind_fast. */
int vti_unwind_learn(vti_uw_thread *u, void **buf, int max);
/* Give remembered walk ref a tag (nothing when ref is stale). A tag must be
 * a function of the walk's frames alone (stacks.c: (skip + 1) << 32 | the
 * stack id of those frames). */
void vti_unwind_set_tag(vti_uw_thread *u, vti_uw_ref ref, uint64_t tag);

/* ---- the session core (session.c) ---------------------------------------- */

typedef struct vti_thread {
    vt_tbuf *tb;
    uint32_t tid;
    unsigned gen; /* session generation this state belongs to */
    void *frames[VTI_MAX_STACK_DEPTH + 8];
    uint64_t cache_ips[VTI_MAX_STACK_DEPTH]; /* last stack, outermost first */
    uint32_t cache_ids[VTI_MAX_STACK_DEPTH];
    int cache_n;
    bool cache_native; /* the cache holds native frames only (no Python) */
    _Atomic int busy;  /* between vti_thread_get and put (own thread writes) */
    vti_uw_thread uw;  /* unwind.c's rule cache and last walk */
} vti_thread;

/* The calling thread's state once made (session.c; cleared in a fork child,
 * so it is always of the current session generation). */
extern VTI_HIDDEN VTI_TLS vti_thread *vti_tl_thread;

/* busy += d. Written only by its own thread (a plain increment, no atomic
 * read-modify-write); the exit reads it after its barrier (session.c,
 * barrier_all). */
static inline void vti_busy_add(vti_thread *t, int d)
{
    atomic_store_explicit(&t->busy, atomic_load_explicit(&t->busy, memory_order_relaxed) + d,
                          d > 0 ? memory_order_relaxed : memory_order_release);
    atomic_signal_fence(memory_order_seq_cst); /* the hardware side is barrier_all's */
}

/* Read the settings, create the trace (naming.c) and the signal buffer;
 * forked: this is a fork child's own session (the header's
 * VT_HDR_CHILD_AFTER_FORK). false with the reason on stderr (unless quiet)
 * when no trace could be made. Once per process, by the life cycle; the
 * state is not changed here. */
bool vti_session_open(bool forked);
/* true in the process that opened the session (not a vfork child). */
bool vti_session_is_ours(void);
/* The END record (status, reason), then the writer closed (or only flushed
 * when another thread is stuck in a hook; about 2 s bound) and "trace
 * written to" said unless quiet. Nothing in a forked child. */
void vti_session_close(int status, const char *reason);
/* In a forked child (pthread_atfork): the parent's writer is abandoned,
 * the state becomes VTI_S_CHILD. Only what is safe between fork and exec. */
void vti_session_fork_child(void);

/* A fork child's own session (README.md "Fork"): before it starts, each
 * part lets go of what it held of the parent's (the parent's allocations,
 * stacks, strings, regions and counters are not the child's trace's) and
 * makes its locks anew (a thread of the parent may have held one: it does
 * not exist in the child). The parent's tables are left allocated, not
 * freed: they may have been mid-update. Called once per fork child, by the
 * thread that starts its session (lifecycle.c), in this order. */
void vti_order_fork_reset(void);   /* orderlock.c: the order lock, free */
void vti_live_fork_reset(void);    /* livemap.c: live map, counters */
void vti_stacks_fork_reset(void);  /* stacks.c: the stack trie, the module map */
void vti_strings_fork_reset(void); /* strings.c */
void vti_py_fork_reset(void);      /* pyframes.c: Python frame ids */
void vti_unwind_fork_reset(void);  /* unwind.c: the cached unwinding rules */
void vti_record_fork_reset(void);  /* record.c: devices described, sampled */
void vti_iter_fork_reset(void);    /* iterfit.c: the exit line's iteration fits */
void vti_diag_fork_reset(void);    /* diagnose.c: the pending OOM diagnosis */
void vti_graph_fork_reset(void);   /* graphnodes.c: the graph tables' lock */
void vti_cupti_fork_reset(void);   /* cupti_loader.c: the parent's CUPTI is not run */
void vti_pool_fork_reset(void);    /* poolstat.c: the pool table and its lock */
/* (nvtx_inject.c lets go of the parent's ranges, heaps and regions in its own
 * pthread_atfork child handler.) */
/* The calling thread's state, attaching it to the writer on first use, and
 * marked busy until vti_thread_put (the writer is not closed meanwhile);
 * NULL when tracing is off. Inline for the hooks; the first call of a thread
 * takes vti_thread_get_slow (session.c). */
vti_thread *vti_thread_get_slow(void);
static inline vti_thread *vti_thread_get(void)
{
    vti_thread *t = vti_tl_thread;
    if (!t)
        return vti_thread_get_slow();
    if (!vti_on())
        return NULL;
    vti_busy_add(t, 1);
    if (!vti_on()) { /* the exit began meanwhile: its barrier saw busy, or this sees it */
        vti_busy_add(t, -1);
        return NULL;
    }
    return t;
}
static inline void vti_thread_put(vti_thread *t)
{
    if (t)
        vti_busy_add(t, -1);
}
/* Write ev through t's buffer; a failure goes to vti_write_failed, the one
 * handling of a write failure (tracing stops, "the trace writer failed:
 * <writer's error>"). */
void vti_write_failed(void);
static inline void vti_write(vti_thread *t, const vt_event *ev)
{
    if (vt_write(t->tb, ev) != 0)
        vti_write_failed();
}
/* vti_emit without starting the session: 0, or -1 when not recording. */
int vti_session_emit(const vt_event *ev);
/* From a fatal-signal handler: END record for signal sig (0: none) and a
 * best-effort, lock-free flush (vt_writer_flush_from_signal); with a signal,
 * which kills the process next, the spill file goes when all was written. */
void vti_signal_flush(int sig);

/* ---- the life cycle (lifecycle.c) ------------------------------------------ */

/* vti_session_ensure past its common answer (lifecycle.c). */
bool vti_session_ensure_slow(void);
/* Start the session if not started (thread-safe, idempotent; a call made
 * while this thread starts it returns false). true when recording. Started
 * and recording, the common answer, is one load and no call. */
static inline bool vti_session_ensure(void)
{
    return vti_on() || vti_session_ensure_slow();
}
/* The hook prologue: vti_enter(), then true when this call is the outermost
 * hooked call of the thread and tracing is on (the session started, CUPTI
 * loaded once CUDA is: vti_hook_enter_outer). Every hook ends with
 * vti_leave(). Inline: a nested call costs an increment and a compare. */
bool vti_hook_enter_outer(void);
/* vti_cupti_load has nothing left to do (lifecycle.c). */
extern VTI_HIDDEN _Atomic bool vti_cupti_settled;
/* The end's CUDA calls (CUPTI's flush, the last memory sample) registered
 * with on_exit after a real allocation call returned (lifecycle.c), once
 * after the first runtime-level and once after the first driver-level one:
 * vti_exit_arm, inline, in every outermost allocation hook after its call.
 * level: 1 runtime, 2 driver (a bit of vti_exit_armed). */
extern VTI_HIDDEN _Atomic unsigned vti_exit_armed;
void vti_exit_arm_slow(unsigned level);
static inline void vti_exit_arm(unsigned level)
{
    if (!(atomic_load_explicit(&vti_exit_armed, memory_order_relaxed) & level))
        vti_exit_arm_slow(level);
}

static inline bool vti_hook_enter(void)
{
    vti_enter();
    if (!vti_outermost())
        return false;
    if (atomic_load_explicit(&vti_cupti_settled, memory_order_relaxed) && vti_on())
        return true; /* started, recording, CUPTI settled: no call */
    return vti_hook_enter_outer();
}

/* ---- interned strings (strings.c) ----------------------------------------- */

/* The id (> 0) of string s, emitting VT_REC_STRING through t the first time;
 * 0 when the table is full (100 000 strings) or out of memory. */
uint32_t vti_intern(vti_thread *t, const char *s);

/* ---- signals (guard.c) ------------------------------------------------------ */

/* At session start: the flush handler on fatal signals the program leaves
 * at SIG_DFL and an alternate signal stack for this thread when it has none. */
void vti_guard_start(void);

/* ---- CUPTI (cupti_loader.c) ---------------------------------------------- */

/* Load libvramtrace_cupti.so next to this library and start it, or record
 * why not (once); deferred until CUDA is loaded. true once nothing is left
 * to do (started or given up for good; not while another thread loads it),
 * so that the hooks stop calling it (vti_cupti_settled): CUPTI's libraries
 * have registered their exit handlers by then. vti_cupti_unload: flush and
 * stop it (at the end; vtc_stop stops once). */
bool vti_cupti_load(void);
void vti_cupti_unload(void);
/* CUPTI was started and has a stop to call (VRAMTRACE_CUPTI=1). */
bool vti_cupti_running(void);

/* ---- real functions (real.c) -------------------------------------------- */

/* Every hooked entry point, once: X(name). The runtime's (found in
 * libcudart when not next in the lookup order) and the driver's (libcuda)
 * lists generate enum vti_fn here, the name table in real.c and the hook
 * table in redirect.c; hooks_runtime.c, hooks_driver.c and redirect.c check
 * at compile time that each name of their list is a hook they define with
 * its CUDA prototype. */
#define VTI_RUNTIME_HOOKS(X)                                                                       \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMallocManaged)                                                                           \
    X(cudaMallocPitch)                                                                             \
    X(cudaMalloc3D)                                                                                \
    X(cudaMallocArray)                                                                             \
    X(cudaMalloc3DArray)                                                                           \
    X(cudaFreeArray)                                                                               \
    X(cudaMallocMipmappedArray)                                                                    \
    X(cudaFreeMipmappedArray)                                                                      \
    X(cudaMallocHost)                                                                              \
    X(cudaHostAlloc)                                                                               \
    X(cudaFreeHost)                                                                                \
    X(cudaHostRegister)                                                                            \
    X(cudaHostUnregister)                                                                          \
    X(cudaMallocAsync)                                                                             \
    X(cudaMallocAsync_ptsz)                                                                        \
    X(cudaFreeAsync)                                                                               \
    X(cudaFreeAsync_ptsz)                                                                          \
    X(cudaMallocFromPoolAsync)                                                                     \
    X(cudaMallocFromPoolAsync_ptsz)                                                                \
    X(cudaMemGetInfo)                                                                              \
    X(cudaSetDevice)                                                                               \
    X(cudaDeviceReset)
#define VTI_DRIVER_HOOKS(X)                                                                        \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemFree_v2)                                                                                \
    X(cuMemAllocPitch_v2)                                                                          \
    X(cuArrayCreate_v2)                                                                            \
    X(cuArray3DCreate_v2)                                                                          \
    X(cuArrayDestroy)                                                                              \
    X(cuMipmappedArrayCreate)                                                                      \
    X(cuMipmappedArrayDestroy)                                                                     \
    X(cuMemAllocManaged)                                                                           \
    X(cuMemAllocHost_v2)                                                                           \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemHostRegister)                                                                           \
    X(cuMemHostRegister_v2)                                                                        \
    X(cuMemHostUnregister)                                                                         \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemAllocAsync_ptsz)                                                                        \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemFreeAsync_ptsz)                                                                         \
    X(cuMemAllocFromPoolAsync)                                                                     \
    X(cuMemAllocFromPoolAsync_ptsz)                                                                \
    X(cuMemCreate)                                                                                 \
    X(cuMemPoolCreate)                                                                             \
    X(cuMemPoolDestroy)                                                                            \
    X(cuMemRelease)                                                                                \
    X(cuMemRetainAllocationHandle)                                                                 \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemGetInfo_v2)                                                                             \
    X(cuDevicePrimaryCtxReset)                                                                     \
    X(cuDevicePrimaryCtxReset_v2)                                                                  \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuDevicePrimaryCtxRelease_v2)                                                                \
    X(cuCtxDestroy)                                                                                \
    X(cuCtxDestroy_v2)                                                                             \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxPushCurrent)                                                                            \
    X(cuCtxPushCurrent_v2)                                                                         \
    X(cuCtxPopCurrent)                                                                             \
    X(cuCtxPopCurrent_v2)                                                                          \
    X(cuCtxCreate)                                                                                 \
    X(cuCtxCreate_v2)                                                                              \
    X(cuCtxCreate_v3)                                                                              \
    X(cuCtxCreate_v4)                                                                              \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamBeginCapture_ptsz)                                                                   \
    X(cuStreamBeginCapture_v2)                                                                     \
    X(cuStreamBeginCapture_v2_ptsz)                                                                \
    X(cuStreamBeginCaptureToGraph)                                                                 \
    X(cuStreamBeginCaptureToGraph_ptsz)                                                            \
    X(cuStreamEndCapture)                                                                          \
    X(cuStreamEndCapture_ptsz)
/* Graph memory nodes (graphmem.c, which checks this list). */
#define VTI_GRAPH_HOOKS(X)                                                                         \
    X(cuGraphAddMemAllocNode)                                                                      \
    X(cuGraphAddNode)                                                                              \
    X(cuGraphAddNode_v2)                                                                           \
    X(cuGraphInstantiate)                                                                          \
    X(cuGraphInstantiate_v2)                                                                       \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphInstantiateWithParams)                                                                \
    X(cuGraphInstantiateWithParams_ptsz)                                                           \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphLaunch_ptsz)                                                                          \
    X(cuGraphExecDestroy)
/* The driver's entry-point table (redirect.c). */
#define VTI_PROC_HOOKS(X)                                                                          \
    X(cuGetProcAddress)                                                                            \
    X(cuGetProcAddress_v2)
#define VTI_HOOKS(X) VTI_RUNTIME_HOOKS(X) VTI_DRIVER_HOOKS(X) VTI_GRAPH_HOOKS(X) VTI_PROC_HOOKS(X)

#define VTI_FN_ENUM(n) F_##n,
enum vti_fn {
    VTI_RUNTIME_HOOKS(VTI_FN_ENUM) F_RUNTIME_END_,
    F_DRIVER_START_ = F_RUNTIME_END_ - 1,
    VTI_DRIVER_HOOKS(VTI_FN_ENUM) VTI_GRAPH_HOOKS(VTI_FN_ENUM) VTI_PROC_HOOKS(VTI_FN_ENUM) F_COUNT_
};
#undef VTI_FN_ENUM

/* In a hooks_*.c file: fails to compile unless every name of LIST is a
 * function declared there (its hook, with the CUDA prototype). */
#define VTI_HOOK_CHECK(n) (void)(n),
#define VTI_CHECK_HOOKS(LIST)                                                                      \
    __attribute__((unused)) static void vti_check_hooks(void)                                      \
    {                                                                                              \
        LIST(VTI_HOOK_CHECK)(void) 0;                                                              \
    }

/* The real (next) definition of a hooked function, or NULL when no CUDA
 * library provides it (yet). Never returns vramtrace's own hook. Inline:
 * the pointer found (real.c's table), else vti_real_find looks it up. */
extern VTI_HIDDEN _Atomic(void *) vti_fn_real[F_COUNT_];
void *vti_real_find(enum vti_fn f);
static inline void *vti_real(enum vti_fn f)
{
    void *p = atomic_load_explicit(&vti_fn_real[f], memory_order_acquire);
    return p ? p : vti_real_find(f);
}
/* The real definition p of f, handed out by dlsym or cuGetProcAddress
 * (redirect.c; p is never a hook); the first one found is kept. */
void vti_real_remember(enum vti_fn f, void *p);
/* The enum vti_fn of a hooked name, -1 when name is not hooked. */
int vti_fn_lookup(const char *name);
/* Whether hook f is a per-thread-default-stream variant (its name ends in
 * _ptsz, cuda.h's __CUDA_API_PTSZ): its NULL stream is the thread's own. */
bool vti_fn_per_thread(enum vti_fn f);
/* Hook f's function name ("cudaFreeAsync"). */
const char *vti_fn_name(enum vti_fn f);
/* A driver function that vramtrace does not hook (cuCtxGetDevice, ...) in
 * the variant cudaTypedefs.h's PFN_<base>_v<version> describes: asked of the
 * real cuGetProcAddress at that version, which hands out the newest variant
 * at or before it, else looked up by `exported`, that variant's name in
 * libcuda.so.1; NULL if none. Never at the toolkit's own version: there a
 * base name may be a newer variant with other parameters (CUDA 13.0's
 * "cuCtxGetDevice" is cuCtxGetDevice_v2(CUdevice *, CUcontext), which an
 * H200's driver 580 crashed in when called with one argument). Call it
 * through VTI_REAL_DRIVER, which types the result from the same version. */
void *vti_real_driver(const char *base, int version, const char *exported);
/* vti_real_driver typed as PFN_<base>_v<version> (the caller includes
 * <cudaTypedefs.h>), e.g. VTI_REAL_DRIVER(cuCtxGetDevice, 2000,
 * "cuCtxGetDevice"). */
#define VTI_REAL_DRIVER(base, version, exported)                                                   \
    ((PFN_##base##_v##version)vti_real_driver(#base, version, exported))
/* A runtime function that vramtrace does not hook; NULL if none. */
void *vti_real_runtime(const char *name);
/* After the real cuGetProcAddress handed out cuGetExportTable to `caller`:
 * swap *pfn for a forwarder that notes in the trace when the program's CUDA
 * runtime cannot reach the device (export_table.c). */
void vti_watch_export_table(const char *symbol, void **pfn, const void *caller);
/* The real dlsym of glibc (never the hook). */
void *vti_real_dlsym(void *handle, const char *name);
/* Path of libvramtrace.so itself (filled at first use), NULL if unknown. */
const char *vti_self_path(void);

/* ---- stacks and modules (stacks.c) -------------------------------------- */

/* Capture the stack of the calling thread into the trie (skip innermost
 * frames), writing new nodes through the thread's buffer (taken and given
 * back here). Returns the leaf id (0 = none, or tracing off). A caller that
 * tail-calls it adds no frame of this library to the walk. */
uint32_t vti_stack_capture(int skip);
/* Walk stack id towards the root: fills ips (innermost first), returns the
 * count (at most max). */
int vti_stack_ips(uint32_t id, uint64_t *ips, int max);
/* Emit VT_REC_MODULE_RESET (unless first) and the module map when the set
 * of loaded objects changed since the last emission (or force). */
void vti_modules_sync(vti_thread *t, bool force);
/* Find this library's code range and set up libunwind (per-thread
 * caching); once, at session start, before any capture. */
void vti_stacks_init(void);

/* ---- Python frames (pyframes.c) ----------------------------------------- */

/* Tag of a stack entry that is a Python frame: VTI_PY_NODE | py frame id
 * (frame 0: the thread's Python frames are unknown). Never a user address. */
#define VTI_PY_NODE (1ull << 63)
/* Merge the calling thread's Python frames into its native stack. native:
 * n return addresses, innermost first; native_cut: the walk had more native
 * frames than the n kept (VRAMTRACE_STACK_DEPTH), so the marker "[outer
 * native frames not recorded: more than N]" goes after them, before the
 * Python frames whose eval frames were cut (kept at the root). out (max
 * entries): the merged stack, outermost first, native entries as ip (return
 * address - 1), Python ones tagged VTI_PY_NODE; emits VT_REC_PY_FRAME
 * records for new frames through t. Returns the count, or -1 when the
 * process runs no CPython (one cached check; out is untouched). */
int vti_py_merge(vti_thread *t, void *const *native, int n, bool native_cut, uint64_t *out,
                 int max);
/* true when vti_py_merge gives -1 (the process runs no CPython): a stack is
 * then its native frames alone. */
bool vti_py_none(void);
/* A native stack (no Python) that had more frames than the n kept (the
 * VRAMTRACE_STACK_DEPTH setting): out (n entries, outermost first) is its
 * innermost n - 1 frames as ips (return address - 1) with the marker frame
 * "[outer frames not recorded: more than N]" (VTI_PY_NODE, VT_REC_PY_FRAME
 * written through t when new; trace/vtrace.h VT_CUT_FRAME_PREFIX) as its
 * outermost. Returns n, or -1 when the marker cannot be made (out then
 * untouched: the frames are kept without it). */
int vti_native_cut(vti_thread *t, void *const *native, int n, uint64_t *out);
/* For an entry tagged VTI_PY_NODE: "function (file.py:line)" (or the
 * unknown-frames note) into out; true when named. false for native ips. */
bool vti_py_label(uint64_t node, char *out, size_t len);
/* For an entry tagged VTI_PY_NODE: whether its frame is the program's own
 * code (trace/vtrace.h, vt_py_library_file); false for native ips and for
 * frames without a label. */
bool vti_py_own(uint64_t node);

/* ---- live map and counters (livemap.c) ---------------------------------- */

#define VTI_MAX_DEVICES 64

/* A live allocation as the live map's callers see it (livemap.c stores it
 * packed in a 16-byte slot, or whole in an overflow record when it does not
 * fit: size >= 2^40, a VMM handle or mapping). */
typedef struct vti_live {
    uint64_t addr, size;
    union {
        struct {
            uint32_t stack;
            uint32_t maps; /* VMM handle: live mappings */
        };
        uint64_t handle; /* mapping: its handle */
    };
    int16_t device; /* -1: host; INT16_MIN: a mapping; host made in a context
                     * of device d: -2 - d (vti_live_device, vti_live_host_owner) */
    uint8_t api;
    uint8_t space;    /* enum vt_space, or VTI_SPACE_MAPPING */
    uint8_t released; /* VMM handle: cuMemRelease seen, alive while mapped */
    uint8_t used;     /* the live map's own: an overflow record in use */
    uint16_t retains; /* VMM handle: cuMemRetainAllocationHandle references not yet released */
} vti_live;
_Static_assert(sizeof(vti_live) == 32, "a live map overflow record is 32 bytes");

/* The device field of host memory made while a context of device d was
 * current: the end of that device's contexts frees it (CUDA's
 * cudaDeviceReset and cuCtxDestroy documentation; an H200 did,
 * tests/gpu/README.md), so the entry keeps d. */
#define VTI_LIVE_HOST_OF(d) ((int16_t)(-2 - (d)))
/* The device e's allocation is on: -1 for host memory. */
static inline int vti_live_device(const vti_live *e)
{
    return e->device < -1 && e->device != INT16_MIN ? -1 : e->device;
}
/* For host memory, the device whose context was current when it was made;
 * else -1. */
static inline int vti_live_host_owner(const vti_live *e)
{
    return e->device < -1 && e->device != INT16_MIN ? -2 - e->device : -1;
}

/* A VMM mapping's entry (addr = mapped address): not an allocation, never
 * counted; it keeps its handle's memory alive. */
#define VTI_SPACE_MAPPING 3
_Static_assert(VTI_SPACE_MAPPING > VT_SPACE_ARRAY, "a mapping's space is none of vt_space's");

/* Insert a live allocation; updates per-device live and peak bytes.
 * Returns 0, -1 when the map is full (bounded memory). */
int vti_live_insert(const vti_live *e);
/* Remove addr (space); fills *out. Returns true when it was live. */
bool vti_live_remove(uint64_t addr, uint8_t space, vti_live *out);
/* A VMM handle is released: like vti_live_remove, but a release that drops
 * a retained reference (vti_live_retain) leaves it as it was
 * (VTI_RELEASE_RETAINED), and a handle that is still mapped stays live
 * (uncounted as freed) until its last mapping goes (VTI_RELEASE_PENDING: it
 * dies with its last unmap, vti_live_vmm_unmap's died, unless a retain makes
 * it live again first). VTI_RELEASE_DIED: it died now (*out filled). */
enum { VTI_RELEASE_NOT_LIVE, VTI_RELEASE_DIED, VTI_RELEASE_PENDING, VTI_RELEASE_RETAINED };
int vti_live_release(uint64_t handle, vti_live *out);
/* cuMemRetainAllocationHandle returned handle: a released handle still
 * mapped is live again (the driver allowed it on an H200), another one has
 * one more reference to release (up to 65535 at once; more are not
 * counted, and their releases are taken for the handle's). Nothing for a
 * handle not live. */
void vti_live_retain(uint64_t handle);
/* cuMemMap of handle at [addr, addr + size): returns the handle's device, -1
 * when it is not live (created before the recording). */
int vti_live_vmm_map(uint64_t handle, uint64_t addr, uint64_t size);
/* cuMemUnmap of [addr, addr + size): the mappings starting inside it go; a
 * released handle dies with its last one, and died(its entry, arg) is
 * called for it. */
void vti_live_vmm_unmap(uint64_t addr, uint64_t size, void (*died)(const vti_live *, void *),
                        void *arg);
/* true when addr is a live allocation (address space). */
bool vti_live_has(uint64_t addr);
/* Remove every live allocation of device (for cudaDeviceReset), calling fn
 * for each before it goes. */
void vti_live_drain_device(int device, void (*fn)(const vti_live *e, void *arg), void *arg);
/* Call fn(entry, arg) for every live entry (allocations, VMM handles and
 * mappings), the order lock held (taken here unless this thread holds it);
 * fn must not change the map. */
void vti_live_each(void (*fn)(const vti_live *e, void *arg), void *arg);
/* Per-device counters; device -1 is pinned host memory. */
typedef struct vti_counters {
    uint64_t live_bytes, peak_bytes, live_count, allocs, frees, failures;
    uint64_t slack_bytes;      /* vt_driver_slack of the live allocations (vt_api_rounded) */
    uint64_t slack_pool_bytes; /* the part of slack_bytes of stream-ordered allocations */
    uint64_t graph_bytes;      /* live bytes of graph allocations (VT_API_CU_GRAPH_LAUNCH) */
} vti_counters;
void vti_counters_get(int device, vti_counters *out);
/* The most allocations (all devices and host) live at once so far: the
 * trace's vt_summary.peak_live. */
uint64_t vti_live_peak_count(void);
void vti_count_failure(int device);
/* Top call sites by live bytes on device: up to n (stack, bytes, count). */
typedef struct vti_site {
    uint32_t stack;
    uint64_t bytes, count;
} vti_site;
int vti_live_top_sites(int device, vti_site *out, int n);
/* Where (addr, space) lies in the live map, for its unit tests
 * (tests/interpose/test_livemap.c): its stripe, the stripe's capacity in
 * slots, the home slot of addr in it, the slot holding the entry (-1: not
 * live), whether its entry is an overflow record, the number of distinct
 * sites interned so far and of overflow records ever made (in use or free). */
typedef struct vti_live_place {
    int stripe;
    uint32_t cap, home;
    int64_t slot;
    bool overflow;
    uint32_t sites, records;
} vti_live_place;
void vti_live_where(uint64_t addr, uint8_t space, vti_live_place *out);

/* ---- CUDA arrays (arrays.c) -------------------------------------------- */

/* The extent of an array: width x height x depth elements (0 counts as 1),
 * levels mipmap levels (1: a plain array), layered: its depth is layers or
 * cubemap faces, which the levels do not halve (vti_array_layered). */
typedef struct vti_array_shape {
    uint64_t width, height, depth;
    unsigned levels;
    bool layered;
} vti_array_shape;
/* The bytes recorded for a runtime array of channel bits x, y, z, w and
 * cudaChannelFormatKind kind; saturated. arrays.c states the rule and its
 * limits. */
uint64_t vti_array_bytes_runtime(int x, int y, int z, int w, int kind, const vti_array_shape *sh);
/* The same for a driver array of CUarray_format format with channels. */
uint64_t vti_array_bytes_driver(unsigned format, unsigned channels, const vti_array_shape *sh);
/* Flags (CUDA_ARRAY3D_*, cudaArray*: the same bits) of a layered or cubemap
 * array. */
bool vti_array_layered(unsigned flags);
/* An array created with these flags has no memory of its own yet (sparse,
 * deferred mapping: cuMemCreate handles mapped later): not an allocation. */
bool vti_array_unbacked(unsigned flags);

/* ---- recording (record.c) ----------------------------------------------- */

/* The calling thread's call stack as a stack id (0: none, or not recording).
 * Hooks take it before the order lock: the unwind is the costliest part of
 * a record and needs no order. */
uint32_t vti_hook_stack(void);
/* Record a successful allocation made at call stack `stack`; its handle
 * space and runtime/driver level come from api's row in the trace's api
 * table (vt_api_get). */
void vti_rec_alloc(uint64_t addr, uint64_t size, int device, enum vt_api api, uint64_t stream,
                   uint32_t stack);
/* Record a successful cuMemMap of handle at [addr, addr + size) (bytes) and
 * a successful cuMemUnmap of [addr, addr + size): a VMM handle's memory
 * stays live until released and unmapped everywhere. */
void vti_rec_vmm_map(uint64_t handle, uint64_t addr, uint64_t size);
void vti_rec_vmm_unmap(uint64_t addr, uint64_t size);
/* Record a free with the device and api the allocation was recorded with,
 * at ts (vti_stamp just after the real free returned). No-op when addr
 * (space) is not live. */
void vti_rec_free(uint64_t addr, uint8_t space, uint64_t ts);
/* Record free call f that failed with error (not a free: what addr holds
 * stays live): a VT_REC_FREE_FAILED at ts with the call stack stack, flagged
 * VT_FREE_FAILED_GRAPH_NODE when addr is a graph allocation node's
 * (vti_graph_node_known). */
void vti_rec_free_failed(uint64_t addr, int error, enum vti_fn f, uint32_t stack, uint64_t ts);
/* The outcome of an outermost allocation call of api: ok with the new
 * pointer p (0: nothing recorded, as for a zero-byte request), or a failure
 * with error. The device is -1 for host kinds, else device() (called only
 * then: the thread's current device). ts: vti_stamp taken just after the
 * real call returned, the allocation's time (the work of recording it, a
 * process's first allocation's most of all, comes after: stamped later, it
 * read as up to 4 ms after the driver's, and another process's allocation
 * in between as not overlapping it). Returns the device (-1: host). */
int vti_alloc_done(bool ok, int error, uint64_t p, uint64_t size, enum vt_api api, uint64_t stream,
                   int (*device)(void), uint32_t stack, uint64_t ts);

/* Outermost allocation and free calls of all threads run one at a time,
 * with their records written inside: the trace's order of allocations and
 * frees is then the order in which the driver performed them (an allocation
 * stamped after its call returns and a free stamped before its call would
 * otherwise be reordered against another thread's calls, shrinking the live
 * set the report sees: the sim's ledger counts the peak in the driver's
 * order, interpose.threads checks it exactly). Timestamps (vti_stamp) are
 * also strictly increasing across threads. Nested hooked calls (depth > 0)
 * never take it. It also guards the live map and its counters
 * (livemap.c). orderlock.c: one compare-and-swap to take, a plain store to
 * release where membarrier works. Not reentrant: vti_order_held tells a
 * caller that may already hold it. */
void vti_order_lock(void);
void vti_order_unlock(void);
bool vti_order_held(void);

/* The one shape of an allocation hook, for hooks_runtime.c and
 * hooks_driver.c: resolve F, call, record the outcome of the outermost call,
 * return the real result untouched. RC_T is the API's error type, OK its
 * success value, NONE what to return when no real function exists. */
#define VTI_ALLOC_HOOK(F, PTYPE, RC_T, OK, NONE, DEVICE, CALL, PTR, SIZE, API, STREAM)             \
    VTI_ALLOC_HOOK_WHEN(true, F, PTYPE, RC_T, OK, NONE, DEVICE, CALL, PTR, SIZE, API, STREAM,      \
                        (void)0, (void)0)
/* The general form: nothing is recorded when WHEN is false (a call that
 * allocates nothing: a sparse CUDA array), yet it is a hooked call, so the
 * calls made inside it are not recorded either. ON_DONE runs after the
 * outermost call (inside the order lock, before its outcome is recorded;
 * `rc` holds its result) and ON_OK when it succeeded (after it is recorded;
 * `done_device` holds the device it was recorded on): the stream-ordered
 * hooks pass vti_pool_done and vti_pool_used. */
#define VTI_ALLOC_HOOK_WHEN(WHEN, F, PTYPE, RC_T, OK, NONE, DEVICE, CALL, PTR, SIZE, API, STREAM,  \
                            ON_DONE, ON_OK)                                                        \
    VTI_ALLOC_HOOK_NODE(false, WHEN, F, PTYPE, RC_T, OK, NONE, DEVICE, CALL, PTR, SIZE, API,       \
                        STREAM, ON_DONE, ON_OK)
/* The same, where a success while NODE (asked before the call) made a
 * graph allocation node, not memory: its address and call stack go to
 * vti_graph_node_made and nothing else is recorded (a failure is recorded
 * as any). */
#define VTI_ALLOC_HOOK_NODE(NODE, WHEN, F, PTYPE, RC_T, OK, NONE, DEVICE, CALL, PTR, SIZE, API,    \
                            STREAM, ON_DONE, ON_OK)                                                \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter() && real && (WHEN);                                               \
    bool node = outer && (NODE);                                                                   \
    uint32_t stack = outer ? vti_hook_stack() : 0;                                                 \
    if (outer)                                                                                     \
        vti_order_lock();                                                                          \
    RC_T rc = real ? CALL : NONE;                                                                  \
    if (outer && node && rc == OK) {                                                               \
        vti_graph_node_made((uint64_t)(uintptr_t)(PTR), stack);                                    \
    } else if (outer) {                                                                            \
        uint64_t ts = vti_stamp_ordered();                                                         \
        vti_exit_arm((F) < F_RUNTIME_END_ ? 1u : 2u);                                              \
        ON_DONE;                                                                                   \
        int done_device =                                                                          \
            vti_alloc_done(rc == OK, (int)rc, rc == OK ? (uint64_t)(uintptr_t)(PTR) : 0, (SIZE),   \
                           (API), (uint64_t)(uintptr_t)(STREAM), DEVICE, stack, ts);               \
        if (rc == OK)                                                                              \
            ON_OK;                                                                                 \
        (void)done_device;                                                                         \
    }                                                                                              \
    if (outer)                                                                                     \
        vti_order_unlock();                                                                        \
    vti_leave();                                                                                   \
    return rc

/* Did a free that returned rc (a CUresult or cudaError_t) end the
 * allocation? Success, and the two errors after which the memory is gone
 * anyway: the driver or runtime shutting down (4: CUDA_ERROR_DEINITIALIZED,
 * cudaErrorCudartUnloading) and a destroyed context (709:
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, cudaErrorContextIsDestroyed), the same
 * numbers in both APIs. Any other failure (a free by the wrong API, during
 * stream capture, after a sticky error) leaves the allocation live. */
static inline bool vti_free_took_effect(int rc)
{
    return rc == 0 || rc == 4 || rc == 709;
}

/* The one shape of a free hook: recorded after the real free, when it took
 * effect (vti_free_took_effect), and before the order lock is released, so
 * that no allocation reusing the address is recorded first (the allocation
 * hooks take the order lock before they allocate). */
#define VTI_FREE_HOOK(F, PTYPE, RC_T, NONE, CALL, PTR, SPACE)                                      \
    VTI_FREE_HOOK_NODE(false, F, PTYPE, RC_T, NONE, CALL, PTR, SPACE)
/* The same, where a free while NODE (asked before the call) made a graph
 * free node, which frees nothing until a launch runs it: not recorded. A
 * call that failed (not vti_free_took_effect) of a non-NULL pointer is
 * recorded as failed, with its stack (vti_rec_free_failed). */
#define VTI_FREE_HOOK_NODE(NODE, F, PTYPE, RC_T, NONE, CALL, PTR, SPACE)                           \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter() && real;                                                         \
    bool node = outer && (NODE);                                                                   \
    if (outer)                                                                                     \
        vti_order_lock();                                                                          \
    RC_T rc = real ? CALL : NONE;                                                                  \
    if (outer) {                                                                                   \
        uint64_t ts = vti_stamp_ordered();                                                         \
        if (!vti_free_took_effect((int)rc)) {                                                      \
            if (PTR)                                                                               \
                vti_rec_free_failed((uint64_t)(uintptr_t)(PTR), (int)rc, (F), vti_hook_stack(),    \
                                    ts);                                                           \
        } else if (!node)                                                                          \
            vti_rec_free((uint64_t)(uintptr_t)(PTR), (SPACE), ts);                                 \
        vti_order_unlock();                                                                        \
    }                                                                                              \
    vti_leave();                                                                                   \
    return rc

/* After a failed stream-ordered allocation from pool (0: the non-pool
 * variants, which take from the current pool of device(), the thread's
 * device): a VT_REC_POOL_STAT with the pool's reserved and used bytes, asked
 * of the real driver (cuDeviceGetMemPool, cuMemPoolGetAttribute; poolstat.c).
 * Nothing when the driver cannot answer. Written before the failure's
 * alloc_failed record. */
void vti_rec_pool_stat(uint64_t pool, int (*device)(void));
/* Before a failed allocation's record on device (out of memory) on thread
 * t: a VT_REC_POOL_STAT of the device's CUDA graph memory pool (pool
 * VT_POOL_GRAPH; cuDeviceGetGraphMemAttribute's reserved and used bytes)
 * when it holds memory: freed graph memory the driver keeps, or what a
 * graph launch that ran out of memory left there (docs/trace.md).
 * Returns the reserved bytes written, 0 when none were. */
uint64_t vti_write_graph_pool(vti_thread *t, int device);
/* ---- stream-ordered allocations' device (asyncdev.c) ---------------------- */

/* Before a stream-ordered allocation's outcome is recorded: the device it
 * took memory on (or failed on), kept for this thread's vti_async_device.
 * stream: the call's; pool: the one it named (0: the stream's device's
 * current pool); p: the new pointer (0 for a failure); current: the
 * thread's current device, what stands where the driver cannot answer.
 * The device of the stream (cuStreamGetDevice) without a pool, else the
 * pool's (CUDA Driver API, cuMemAllocFromPoolAsync). */
void vti_async_target(uint64_t stream, uint64_t pool, uint64_t p, int (*current)(void));
/* The device vti_async_target found last on this thread: the device
 * function of the stream-ordered hooks (VTI_ASYNC_HOOK). */
int vti_async_device(void);
/* pool's device from now on (poolstat.c's one table of the program's
 * pools): after a successful cuMemPoolCreate of a pool its properties
 * locate on device, or once asyncdev.c found it. Nothing for pool 0 or
 * device < 0, or when the table is full (the pool is looked up each time). */
void vti_pool_know(uint64_t pool, int device);
/* A successful cuMemPoolCreate of pool, located on device (-1: not a
 * device; for a managed pool at no device location, the device current at
 * its creation), its allocations of kind: VT_KIND_DEVICE,
 * VT_KIND_HOST_PINNED (a host pool: pinned memory at location HOST or
 * HOST_NUMA) or VT_KIND_MANAGED (a managed pool, CUDA 13). */
void vti_pool_created(uint64_t pool, int device, enum vt_kind kind);
/* The kind of pool's allocations (vti_pool_created; VT_KIND_DEVICE for a
 * pool not seen made). Lock-free. */
enum vt_kind vti_pool_kind(uint64_t pool);
/* The api an allocation from pool by name records: api (a from-pool one),
 * or its twin for a host or managed pool (VT_API_..._HOST_POOL,
 * _MANAGED_POOL: docs/trace.md). pool 0: api. Lock-free. */
enum vt_api vti_pool_api(uint64_t pool, enum vt_api api);
/* The device vti_pool_know kept for pool, or -1 (unknown, or destroyed).
 * Lock-free. */
int vti_pool_known_device(uint64_t pool);
/* Around the real cuMemPoolDestroy of pool (poolstat.c): from begin on, pool
 * is no longer sampled and its device is forgotten, and no sample runs
 * until end (a sample of a destroyed pool is a use after free in the
 * driver: the sim's crashed in corpus.other_device, an OOM after its pool's
 * destroy). begin fills *last with the pool's last VT_REC_POOL_STAT (device
 * -1: none; a pool whose device is not known is not asked): reserved and
 * used 0 when no allocation of it is outstanding (its memory goes back to
 * the device, which the report must no longer count as the pool's free
 * reserve: docs/trace.md, "A destroyed pool"), else its state before the
 * destroy, and finds the allocations that keep the pool (vti_pool_freed);
 * end writes it when the real destroy succeeded. The order lock held. */
void vti_pool_destroy_begin(uint64_t pool, vt_event *last);
void vti_pool_destroy_end(vt_event *last, bool destroyed);
/* The allocations outstanding at a pool's destroy (vti_pool_destroy_begin
 * finds them: the live stream-ordered allocations of the pool's device whose
 * pool the driver names, cuPointerGetAttribute's
 * CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) keep the pool until their frees
 * (CUDA Driver API, cuMemPoolDestroy: "the resources associated with the
 * pool will be released automatically once there are no more outstanding
 * allocations"); nonzero while any is live. The order lock held around the
 * destroy orders it against their frees. */
extern VTI_HIDDEN _Atomic uint32_t vti_pools_draining;
/* addr (address space) was freed at ts on thread t (vti_rec_free, a device
 * reset), the order lock held: when it was the last outstanding allocation
 * of a destroyed pool, a VT_REC_POOL_STAT of reserved and used 0 follows
 * its free (the driver releases the pool then). Call only while
 * vti_pools_draining is nonzero. */
void vti_pool_freed(vti_thread *t, uint64_t addr);

/* The one shape of a stream-ordered allocation hook (both APIs): an
 * allocation node while STREAM captures (vti_graph_capturing), else
 * recorded on the device vti_async_target finds, with its pool's state
 * (vti_pool_done, vti_pool_used; POOL: the pool named, NULL for the
 * device's current one). CURRENT: the thread's current device. */
#define VTI_ASYNC_HOOK(F, PTYPE, RC_T, OK, NONE, CURRENT, CALL, PTR, SIZE, STREAM, POOL, API)      \
    VTI_ALLOC_HOOK_NODE(                                                                           \
        vti_graph_capturing((uint64_t)(uintptr_t)(STREAM), F), true, F, PTYPE, RC_T, OK, NONE,     \
        vti_async_device, CALL, PTR, SIZE, vti_pool_api((uint64_t)(uintptr_t)(POOL), API), STREAM, \
        (vti_async_target((uint64_t)(uintptr_t)(STREAM), (uint64_t)(uintptr_t)(POOL),              \
                          rc == OK ? (uint64_t)(uintptr_t)(PTR) : 0, CURRENT),                     \
         vti_pool_done(rc == OK, (uint64_t)(uintptr_t)(POOL), vti_async_device)),                  \
        vti_pool_used((uint64_t)(uintptr_t)(POOL), done_device))

/* After a stream-ordered allocation from pool (0: the device's current
 * one), before it is recorded: when it failed, vti_rec_pool_stat; when it
 * succeeded from a pool given by name not seen before, that pool is
 * sampled at iteration ends and memory samples from then on, the first
 * sample of its device included (device() is asked only then). */
void vti_pool_done(bool ok, uint64_t pool, int (*device)(void));
/* After a successful allocation from pool recorded on device (the hook's
 * done_device): from the device's current pool (pool 0), that pool is
 * sampled at iteration ends from then on (vti_pool_iteration_end), by name
 * (its handle asked of the driver, cuDeviceGetMemPool: one query per such
 * allocation) so that it still is once no longer current. */
void vti_pool_used(uint64_t pool, int device);
/* Before a memory sample (VT_REC_MEMINFO) of device on thread t: a
 * VT_REC_POOL_STAT of the device's current pool and of each pool of its own
 * that a stream-ordered allocation on it took from (vti_pool_used), each
 * when it holds memory (or with empty, also when it holds none: before a
 * failure, so that a pool emptied since its last sample is not counted at
 * its old reserve), so that the report does not count their free reserve
 * as use outside the recording (poolstat.c; docs/trace.md, pool_stat). */
void vti_write_pool_sample(vti_thread *t, int device, bool empty);
/* The free reserve (reserved - used bytes) of device's pools at their
 * latest samples, summed into *spare (the current pool's and those of the
 * program's own it took from, each once): what the exit line's fit counts
 * for the pools (iterfit.c, as the report's vr_device_overhead). false (and
 * 0) while none of device's was sampled: its allocations' rounding
 * (vti_counters.slack_pool_bytes) stands for them then. */
bool vti_pool_spare(int device, uint64_t *spare);
/* device's pools' reserved bytes (the current pool's and the program's own,
 * each once) at their latest samples, summed: the most of that sum so far,
 * bytes; 0 while none was sampled. The exit line's "stream-ordered pools
 * reserved" (the report's vr_device.pool_reserved_peak, report/pool.c). */
uint64_t vti_pool_reserved_peak(int device);
/* Record a failed allocation made at call stack `stack` with a memory-info
 * sample, and hold the OOM diagnosis (diagnose.c). */
void vti_rec_failed(uint64_t size, int error, int device, enum vt_api api, uint32_t stack);
/* Record a memory-info sample taken by the application (cudaMemGetInfo,
 * cuMemGetInfo). */
void vti_rec_meminfo(int device, uint64_t free_b, uint64_t total_b);
/* ---- graph memory nodes: the tables (graphnodes.c; the hooks: graphmem.c) - */

/* A stream capture began (began) or ended, on any thread:
 * vti_graph_capturing asks the driver only while one is open. */
void vti_graph_capture_count(bool began);
/* Whether stream (a CUstream or cudaStream_t, as hook f was given it: a
 * _ptsz hook's NULL is the per-thread stream, vti_fn_per_thread) is
 * capturing: a stream-ordered allocation or free on it then makes a graph
 * memory node, not memory or a free (the CUDA Programming Guide, "Graph
 * memory nodes"). One atomic load while no capture is open, else a call of
 * the real cuStreamIsCapturing. */
bool vti_graph_capturing(uint64_t stream, enum vti_fn f);
/* A graph allocation node with address addr was made at call stack stack:
 * each launch that takes its memory records it with that stack. */
void vti_graph_node_made(uint64_t addr, uint32_t stack);
/* The stack vti_graph_node_made gave the node at addr; 0 when none. */
uint32_t vti_graph_node_stack(uint64_t addr);
/* Whether addr is a graph allocation node's address vti_graph_node_made saw. */
bool vti_graph_node_known(uint64_t addr);
/* Executable graph exec's plan of memory nodes (graphmem.c's, opaque here)
 * becomes plan (NULL: none); returns the one it had, for the caller to
 * free. Out of memory for the table stops the recording (vti_stop). */
void *vti_graph_plan_swap(uint64_t exec, void *plan);
/* exec's plan; NULL when it has none (no memory nodes). */
void *vti_graph_plan_find(uint64_t exec);

/* Record that a CUDA stream capture began on stream (began: the calling
 * thread's cuStreamBeginCapture succeeded) or ended (the calling thread's
 * cuStreamEndCapture left the stream no longer capturing): a VT_REC_CAPTURE
 * (docs/trace.md, "CUDA graph captures"). */
void vti_rec_capture(uint64_t stream, bool began);
/* Free every live allocation of device (cudaDeviceReset). */
void vti_rec_device_reset(int device);
/* After a successful call that may have ended a context of device: frees,
 * as vti_rec_device_reset does, the device's live allocations when its
 * primary context is no longer active (cuDevicePrimaryCtxGetState). Called
 * under the order lock. */
void vti_rec_context_end(int device);
/* The current device for a driver-level call (cuCtxGetDevice), else 0. */
int vti_driver_device(void);
/* The device of the context current to the calling thread (cuCtxGetDevice),
 * else fallback: a runtime call's device is that context's ("CUDA Runtime
 * API calls operate on the CUDA Driver API CUcontext which is current to
 * the calling host thread", CUDA Runtime API, "Interactions with the CUDA
 * Driver API"), which need not be the thread's cudaSetDevice device when
 * the program set one with the driver. */
int vti_context_device_or(int fallback);
/* Sample free/total of the current device through the real functions;
 * returns false when no sample could be taken. */
bool vti_sample_meminfo(enum vt_level level, uint64_t *free_b, uint64_t *total_b);
/* The end of the session: the pending OOM diagnosis and the summary on
 * stderr (unless quiet). No CUDA call (lifecycle.c, "ends"). */
void vti_rec_end_summary(void);
/* diagnose.c: the OOM diagnosis (at most 10 lines per fatal failure; the
 * rule in diagnose.c and README.md). vti_diag_failed: a failed allocation
 * (snapshot of the live sites; printed later); vti_diag_alloc: a successful
 * allocation of size on device by the calling thread (a retry that recovers
 * drops the pending failure, anything else prints it); vti_diag_flush: print
 * the pending one (at exit). vti_fmt_bytes: "1.50 GiB" (size/vsize.h). */
typedef struct vti_failure {
    uint64_t size;       /* bytes requested */
    int error;           /* the call's error (VT_ERROR_OUT_OF_MEMORY) */
    int device;          /* -1: pinned host memory */
    enum vt_api api;     /* the failed call */
    bool have_info;      /* fr and to were sampled (vti_sample_meminfo) */
    uint64_t fr, to;     /* the device's free and total bytes just after the failure */
    uint64_t graph_pool; /* the CUDA graph memory pool's reserved bytes then, 0: none or unknown */
    uint32_t stack;      /* the request's call stack id */
} vti_failure;
void vti_diag_failed(const vti_failure *f);
void vti_diag_alloc(uint64_t size, int device);
void vti_diag_flush(void);
void vti_fmt_bytes(uint64_t b, char *out, size_t len);
/* iterfit.c: growth per iteration for the exit line. vti_iter_end (vti.h);
 * vti_iter_meminfo: a memory-info sample, free_b free bytes and graph_b the
 * CUDA graph memory pool's reserved bytes then (vti_write_graph_pool; the
 * first sample per device gives the room the recording may grow into:
 * what the pool keeps beyond the live graph allocations is the process's,
 * as in the report's baseline, report/oom.c); vti_iter_headline: one line
 * "GROWING: +44.54 MiB per train_step (R^2 1.000 over 20 train_steps): out of
 * memory projected at train_step 338" into out, false when nothing grows. */
void vti_iter_meminfo(int device, uint64_t free_b, uint64_t graph_b);
bool vti_iter_headline(char *out, size_t len);

#endif
