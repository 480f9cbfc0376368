/* session.c: the session core: the trace writer, its per-thread buffers,
 * writing a record (vti_write, the one handling of a write failure), the
 * trace opened and closed, the flush from a fatal signal and the fork
 * child's detachment. It knows nothing of CUPTI, the exit summary or stack
 * capture: the life cycle (lifecycle.c) calls it in order. See
 * interpose/README.md for the behaviour. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vti_internal.h"

#ifndef VRAMTRACE_VERSION
#define VRAMTRACE_VERSION "0.0.0"
#endif

static _Atomic unsigned generation = 1;
static vt_writer *writer;
static vt_tbuf *signal_tb; /* reserved for the END record of a fatal signal */
static char trace_path[4096];
static int session_pid; /* a vfork child shares the session but not this pid */
VTI_TLS vti_thread *vti_tl_thread;
static pthread_key_t thread_key;

/* Registered thread states (for the exit handshake), under threads_lock. */
typedef struct tnode {
    vti_thread *t;
    _Atomic int *busy;
    struct tnode *next;
} tnode;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct vti_thread_ext {
    vti_thread t;
    tnode node;
} vti_thread_ext;
static tnode *threads;

/* Every thread of the process passes a full memory barrier (Linux
 * membarrier; the writer registered the private expedited kind), so a
 * thread that marked itself busy before it could see `stopping` is seen
 * busy. Exit path only. */
static void barrier_all(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ||
        syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
        return;
    nanosleep(&(struct timespec){0, 10000000}, NULL); /* stores drain long before */
}

static uint32_t gettid_u32(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* ---- per-thread state ---------------------------------------------------- */

static void thread_unregister(vti_thread_ext *x)
{
    pthread_mutex_lock(&threads_lock);
    for (tnode **p = &threads; *p; p = &(*p)->next)
        if (*p == &x->node) {
            *p = x->node.next;
            break;
        }
    pthread_mutex_unlock(&threads_lock);
}

/* Thread exit: detach its buffer (marked busy meanwhile, so the exit
 * handler does not close the writer under it), then forget the state. */
static void thread_destroy(void *arg)
{
    vti_thread_ext *x = arg;
    if (!x)
        return;
    if (vti_tl_thread == &x->t)
        vti_tl_thread = NULL;
    vti_busy_add(&x->t, 1);
    if (x->t.gen == atomic_load(&generation) && vti_state() != VTI_S_CHILD && writer)
        vt_writer_detach(writer, x->t.tb);
    vti_busy_add(&x->t, -1);
    thread_unregister(x);
    free(x);
}

static void emit_thread_record(vti_thread *t)
{
    char name[64] = "";
    vt_event ev = {.type = VT_REC_THREAD};
    pthread_getname_np(pthread_self(), name, sizeof name);
    ev.u.thread.id = t->tid;
    ev.u.thread.name = name;
    ev.u.thread.start = 1;
    vti_write(t, &ev);
}

static vti_thread *thread_create(void)
{
    vti_thread_ext *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->t.tid = gettid_u32();
    x->t.gen = atomic_load(&generation);
    x->t.tb = vt_writer_attach(writer, x->t.tid);
    if (!x->t.tb) {
        free(x);
        vti_stop("the trace writer failed");
        return NULL;
    }
    x->node.t = &x->t;
    x->node.busy = &x->t.busy;
    pthread_mutex_lock(&threads_lock);
    x->node.next = threads;
    threads = &x->node;
    pthread_mutex_unlock(&threads_lock);
    pthread_setspecific(thread_key, x);
    vti_tl_thread = &x->t;
    emit_thread_record(&x->t);
    return &x->t;
}

/* vti_thread_get's first call on a thread (or after fork): create the
 * state, then as vti_thread_get. The busy store, then the state's load,
 * against vti_session_close's stopping store, barrier_all() and busy load
 * (an asymmetric Dekker) guarantee the writer is not closed while a thread
 * is between get and put. */
vti_thread *vti_thread_get_slow(void)
{
    vti_thread *t = vti_tl_thread;
    if (!vti_on())
        return NULL;
    if (!t || t->gen != atomic_load_explicit(&generation, memory_order_relaxed)) {
        t = thread_create();
        if (!t)
            return NULL;
    }
    vti_busy_add(t, 1);
    if (!vti_on()) {
        vti_busy_add(t, -1);
        return NULL;
    }
    return t;
}

void vti_write_failed(void)
{
    char why[320];
    const char *err;
    err = writer ? vt_writer_error(writer) : NULL;
    snprintf(why, sizeof why, "the trace writer failed%s%s", err ? ": " : "", err ? err : "");
    vti_stop(why);
}

int vti_session_emit(const vt_event *ev)
{
    vti_thread *t = vti_thread_get();
    vt_event copy;
    if (!t)
        return -1;
    copy = *ev;
    if (!copy.ts_ns && copy.type != VT_REC_STRING && copy.type != VT_REC_STACK_NODE)
        copy.ts_ns = vti_stamp();
    vti_write(t, &copy);
    vti_thread_put(t);
    return vti_on() ? 0 : -1;
}

/* ---- start ---------------------------------------------------------------- */

static char *read_file_small(const char *path, size_t *len)
{
    enum { MAX = 32768 };
    char *buf = malloc(MAX);
    int fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t n = fd >= 0 ? read(fd, buf, MAX - 1) : -1;
    *len = 0;
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

typedef struct header_data {
    char host[256], exe[4096];
    const char *argv[VT_MAX_ARGV];
    char *cmdline;
} header_data;

static void header_fill(vt_header *h, header_data *d)
{
    size_t len = 0;
    ssize_t n;
    struct timespec ts;
    memset(h, 0, sizeof *h);
    gethostname(d->host, sizeof d->host - 1);
    n = readlink("/proc/self/exe", d->exe, sizeof d->exe - 1);
    d->exe[n > 0 ? n : 0] = '\0';
    d->cmdline = read_file_small("/proc/self/cmdline", &len);
    for (size_t i = 0; d->cmdline && i < len && h->argc < VT_MAX_ARGV;
         i += strlen(d->cmdline + i) + 1)
        d->argv[h->argc++] = d->cmdline + i;
    h->format_version = VT_FORMAT_VERSION;
    h->pid = (uint32_t)getpid();
    h->host = d->host;
    h->program = d->exe;
    h->argv = d->argv;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    h->start_mono_ns = vt_clock_ns();
    h->vramtrace_version = VRAMTRACE_VERSION;
    vti_run_header(h);
}

static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void key_create(void)
{
    pthread_key_create(&thread_key, thread_destroy);
}

bool vti_session_open(bool forked)
{
    vt_header h;
    header_data d;
    char err[512] = "";
    const vti_settings *s = vti_settings_get();
    header_fill(&h, &d);
    h.flags = forked ? VT_HDR_CHILD_AFTER_FORK : 0;
    vti_settings_read((int)h.pid);
    h.stack_depth = (uint32_t)s->stack_depth;
    writer = vti_trace_open(s, &h, trace_path, sizeof trace_path, err, sizeof err);
    if (writer)
        vti_trace_announce(s, &h, trace_path);
    free(d.cmdline);
    if (!writer) {
        if (!s->quiet)
            vti_msg("vramtrace: tracing stopped: %s\n", err);
        return false;
    }
    signal_tb = vt_writer_attach(writer, h.pid);
    pthread_once(&key_once, key_create); /* a fork child's session keeps the key */
    session_pid = (int)h.pid;
    return true;
}

bool vti_session_is_ours(void)
{
    return getpid() == session_pid; /* a vfork child shares the session, not the pid */
}

/* ---- close ---------------------------------------------------------------- */

/* Wait (bounded: about 2 s) until no other thread is between begin/end. */
static bool threads_quiesce(void)
{
    vti_thread *self = vti_tl_thread;
    barrier_all();
    for (int i = 0; i < 2000; i++) {
        bool busy = false;
        pthread_mutex_lock(&threads_lock);
        for (tnode *n = threads; n; n = n->next)
            if (n->t != self && atomic_load_explicit(n->busy, memory_order_acquire) > 0)
                busy = true;
        pthread_mutex_unlock(&threads_lock);
        if (!busy)
            return true;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return false;
}

static void emit_end(int status, const char *reason)
{
    vti_thread *t = vti_thread_get();
    vt_event ev = {.type = VT_REC_END};
    if (!t)
        return;
    ev.ts_ns = vti_stamp();
    ev.u.end.status = status;
    ev.u.end.reason = reason;
    vti_write(t, &ev);
    vti_thread_put(t);
}

/* The writer closed, or only flushed when another thread is stuck in a
 * hook. false when writing failed (said on stderr unless quiet). */
static bool writer_finish(void)
{
    char err[256];
    if (!threads_quiesce()) {
        vt_writer_flush(writer);
        return true;
    }
    vt_writer_flush(writer);
    snprintf(err, sizeof err, "%s", vt_writer_error(writer) ? vt_writer_error(writer) : "");
    vt_writer_set_summary(writer, &(vt_summary){.peak_live = vti_live_peak_count()});
    if (vt_writer_close(writer) == 0) {
        writer = NULL;
        return true;
    }
    writer = NULL;
    if (!vti_settings_get()->quiet)
        vti_msg("vramtrace: writing %s failed%s%s\n", trace_path, *err ? ": " : "", err);
    return false;
}

void vti_session_close(int status, const char *reason)
{
    bool recording = vti_state() == VTI_S_ON;
    if (vti_state() == VTI_S_CHILD || !writer)
        return;
    emit_end(status, reason);
    vti_state_stopping();
    if (writer_finish() && recording && !vti_settings_get()->quiet)
        vti_msg("vramtrace: trace written to %s\n", trace_path);
}

/* ---- fork ----------------------------------------------------------------- */

void vti_session_fork_child(void)
{
    if (writer)
        vt_writer_abandon_after_fork(writer); /* left allocated: see its comment */
    writer = NULL;
    signal_tb = NULL;
    vti_state_fork_child();
    atomic_fetch_add(&generation, 1);
    vti_tl_thread = NULL;
    threads = NULL;
    pthread_mutex_init(&threads_lock, NULL);
}

/* ---- fatal signals -------------------------------------------------------- */

void vti_signal_flush(int sig)
{
    static _Atomic int in_signal;
    vt_event ev = {.type = VT_REC_END};
    if (vti_state() != VTI_S_ON || !writer || !vti_session_is_ours() ||
        atomic_exchange(&in_signal, 1))
        return;
    if (sig && signal_tb) {
        ev.ts_ns = vti_stamp();
        ev.u.end.status = -1;
        ev.u.end.signal = sig;
        ev.u.end.reason = "signal";
        vt_write(signal_tb, &ev); /* no vti_write: nothing but the flush in a handler */
    }
    vt_writer_flush_from_signal(writer);
    if (sig) /* the guard raises it again at SIG_DFL: the process dies now */
        vt_writer_drop_spill_from_signal(writer);
    atomic_store(&in_signal, 0);
}
