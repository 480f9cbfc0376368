/* session.c: the preload library's session: start (first hooked call or
 * recorded event), per-thread writer buffers, stop on internal failure, exit, fatal
 * signals and fork. See interpose/README.md for the behaviour. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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

#include "../cupti/vtcupti.h"
#include "vti_internal.h"

#ifndef VRAMTRACE_VERSION
#define VRAMTRACE_VERSION "0.0.0"
#endif

enum { S_OFF, S_STARTING, S_ON, S_STOPPED, S_CHILD };

VTI_TLS int vti_tl_depth;
VTI_TLS int vti_tl_device;

static _Atomic int state = S_OFF;
static _Atomic int stopping; /* exit in progress: no new writes */
static _Atomic unsigned generation = 1;
static vt_writer *writer;
static vt_tbuf *signal_tb; /* reserved for the END record of a fatal signal */
static vti_settings settings = {.stack_depth = VTI_DEFAULT_STACK_DEPTH};
static char trace_path[4096];
static int session_pid; /* a vfork child shares the session but not this pid */
static VTI_TLS vti_thread *tl_thread;
static VTI_TLS bool tl_starting;
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
    _Atomic int busy;
    tnode node;
} vti_thread_ext;
static tnode *threads;

static uint32_t gettid_u32(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

uint64_t vti_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool vti_enabled(void)
{
    return atomic_load_explicit(&state, memory_order_acquire) == S_ON &&
           !atomic_load_explicit(&stopping, memory_order_relaxed);
}

const vti_settings *vti_settings_get(void)
{
    return &settings;
}

void vti_stop(const char *why)
{
    int expected = S_ON;
    const char *err = writer ? vt_writer_error(writer) : NULL;
    if (atomic_compare_exchange_strong(&state, &expected, S_STOPPED) && !settings.quiet)
        vti_msg("vramtrace: tracing stopped: %s%s%s\n", why, err ? ": " : "", err ? err : "");
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
    if (tl_thread == &x->t)
        tl_thread = NULL;
    atomic_fetch_add(&x->busy, 1);
    if (x->t.gen == atomic_load(&generation) && atomic_load(&state) != S_CHILD &&
        !atomic_load(&stopping) && writer)
        vt_writer_detach(writer, x->t.tb);
    atomic_fetch_sub(&x->busy, 1);
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
    vt_write(t->tb, &ev);
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
    x->node.busy = &x->busy;
    pthread_mutex_lock(&threads_lock);
    x->node.next = threads;
    threads = &x->node;
    pthread_mutex_unlock(&threads_lock);
    pthread_setspecific(thread_key, x);
    tl_thread = &x->t;
    emit_thread_record(&x->t);
    return &x->t;
}

/* Mark the thread busy with the writer, or NULL when tracing is off. The
 * seq_cst store/load pair with session_close() (Dekker) guarantees the
 * writer is not closed while a thread is between begin and end. */
static vti_thread *thread_begin(void)
{
    vti_thread *t = tl_thread;
    vti_thread_ext *x;
    if (!vti_enabled())
        return NULL;
    if (!t || t->gen != atomic_load_explicit(&generation, memory_order_relaxed)) {
        t = thread_create();
        if (!t)
            return NULL;
    }
    x = (vti_thread_ext *)t;
    atomic_fetch_add(&x->busy, 1);
    if (!vti_enabled()) {
        atomic_fetch_sub(&x->busy, 1);
        return NULL;
    }
    return t;
}

static void thread_end(vti_thread *t)
{
    atomic_fetch_sub(&((vti_thread_ext *)t)->busy, 1);
}

vti_thread *vti_thread_get(void)
{
    return thread_begin();
}

void vti_thread_put(vti_thread *t)
{
    if (t)
        thread_end(t);
}

int vti_emit(const vt_event *ev)
{
    vti_thread *t;
    vt_event copy;
    int rc;
    if (!vti_session_ensure() || !(t = thread_begin()))
        return -1;
    copy = *ev;
    if (!copy.ts_ns && copy.type != VT_REC_STRING && copy.type != VT_REC_STACK_NODE)
        copy.ts_ns = vti_now_ns();
    rc = vt_write(t->tb, &copy);
    thread_end(t);
    if (rc != 0)
        vti_stop("the trace writer failed");
    return rc;
}

uint32_t vti_capture_stack(int skip)
{
    vti_thread *t;
    uint32_t id;
    if (!vti_session_ensure() || !(t = thread_begin()))
        return 0;
    id = vti_stack_capture(t, skip);
    thread_end(t);
    return id;
}

/* Interned strings: a small chained hash under one lock; ids from 1. */
typedef struct istr {
    struct istr *next;
    uint32_t id;
    char text[];
} istr;
#define ISTR_BUCKETS 1024
#define ISTR_MAX 100000
static istr *istr_table[ISTR_BUCKETS];
static uint32_t istr_count;
static pthread_mutex_t istr_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t istr_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static uint32_t istr_add(vti_thread *t, const char *s, uint32_t h)
{
    size_t len = strlen(s);
    istr *e;
    vt_event ev = {.type = VT_REC_STRING};
    if (istr_count >= ISTR_MAX || !(e = malloc(sizeof *e + len + 1)))
        return 0;
    memcpy(e->text, s, len + 1);
    e->id = ++istr_count;
    e->next = istr_table[h % ISTR_BUCKETS];
    istr_table[h % ISTR_BUCKETS] = e;
    ev.u.string.id = e->id;
    ev.u.string.text = s;
    vt_write(t->tb, &ev);
    return e->id;
}

uint32_t vti_intern_string(const char *s)
{
    uint32_t h, id = 0;
    vti_thread *t;
    if (!s || !vti_session_ensure() || !(t = thread_begin()))
        return 0;
    h = istr_hash(s);
    pthread_mutex_lock(&istr_lock);
    for (istr *e = istr_table[h % ISTR_BUCKETS]; e; e = e->next)
        if (strcmp(e->text, s) == 0) {
            id = e->id;
            break;
        }
    if (!id)
        id = istr_add(t, s, h);
    pthread_mutex_unlock(&istr_lock);
    thread_end(t);
    return id;
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
    h->start_mono_ns = vti_now_ns();
    h->vramtrace_version = VRAMTRACE_VERSION;
    h->stack_depth = (uint32_t)settings.stack_depth;
    vti_run_header(h);
}

static void on_exit_handler(int status, void *arg);
static void on_fork_child(void);

static bool session_start(void)
{
    vt_header h;
    header_data d;
    char err[512] = "";
    vti_thread *t;
    header_fill(&h, &d);
    vti_settings_read(&settings, (int)h.pid);
    h.stack_depth = (uint32_t)settings.stack_depth;
    writer = vti_trace_open(&settings, &h, trace_path, sizeof trace_path, err, sizeof err);
    if (writer)
        vti_trace_announce(&settings, &h, trace_path);
    free(d.cmdline);
    if (!writer) {
        if (!settings.quiet)
            vti_msg("vramtrace: tracing stopped: cannot create the trace %s: %s\n", trace_path,
                    err);
        return false;
    }
    vti_stacks_init();
    signal_tb = vt_writer_attach(writer, h.pid);
    pthread_key_create(&thread_key, thread_destroy);
    atomic_store(&state, S_ON);
    on_exit(on_exit_handler, NULL); /* glibc passes exit()'s status, atexit would not */
    session_pid = (int)h.pid;
    vti_guard_start();
    if ((t = thread_begin())) {
        vti_modules_sync(t, true);
        thread_end(t);
    }
    return true;
}

bool vti_session_ensure(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    int expected = S_OFF;
    if (s == S_ON)
        return !atomic_load_explicit(&stopping, memory_order_relaxed);
    if (s == S_STARTING) {
        if (tl_starting)
            return false;
        while (atomic_load(&state) == S_STARTING)
            sched_yield();
        return vti_enabled();
    }
    if (s != S_OFF || !atomic_compare_exchange_strong(&state, &expected, S_STARTING))
        return vti_enabled();
    tl_starting = true;
    vti_tl_depth++;
    if (!session_start())
        atomic_store(&state, S_STOPPED);
    vti_tl_depth--;
    tl_starting = false;
    if (vti_enabled())
        vti_cupti_load();
    return vti_enabled();
}

/* ---- exit ----------------------------------------------------------------- */

/* Wait (bounded: about 2 s) until no other thread is between begin/end. */
static bool threads_quiesce(void)
{
    vti_thread *self = tl_thread;
    for (int i = 0; i < 2000; i++) {
        bool busy = false;
        pthread_mutex_lock(&threads_lock);
        for (tnode *n = threads; n; n = n->next)
            if (n->t != self && atomic_load(n->busy) > 0)
                busy = true;
        pthread_mutex_unlock(&threads_lock);
        if (!busy)
            return true;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return false;
}

static void emit_end(int status, int sig, const char *reason)
{
    vti_thread *t = thread_begin();
    vt_event ev = {.type = VT_REC_END};
    if (!t)
        return;
    ev.ts_ns = vti_now_ns();
    ev.u.end.status = status;
    ev.u.end.signal = sig;
    ev.u.end.reason = reason;
    vt_write(t->tb, &ev);
    thread_end(t);
}

/* The end of the process: the END record, then the writer closed (or
 * flushed when another thread is stuck in a hook). Once. */
static void session_end(int status, const char *reason)
{
    static _Atomic int done;
    int s = atomic_load(&state);
    if (s == S_CHILD || !writer || atomic_exchange(&done, 1))
        return;
    vti_tl_depth++;
    vti_cupti_unload();
    vti_rec_end_summary(NULL);
    emit_end(status, 0, reason);
    atomic_store(&stopping, 1);
    if (threads_quiesce()) {
        char err[256];
        vt_writer_flush(writer);
        snprintf(err, sizeof err, "%s", vt_writer_error(writer) ? vt_writer_error(writer) : "");
        if (vt_writer_close(writer) != 0) {
            if (!settings.quiet)
                vti_msg("vramtrace: writing %s failed%s%s\n", trace_path, *err ? ": " : "", err);
            s = S_STOPPED;
        }
        writer = NULL;
    } else {
        vt_writer_flush(writer);
    }
    if (!settings.quiet && s == S_ON)
        vti_msg("vramtrace: trace written to %s\n", trace_path);
    vti_tl_depth--;
}

static void on_exit_handler(int status, void *arg)
{
    (void)arg;
    session_end(status, "exit");
}

void vti_session_end(int status, const char *reason)
{
    if (getpid() != session_pid) /* a vfork child: the parent's session */
        return;
    if (vti_tl_depth > 0) { /* inside a hook (a signal handler's _exit): no locks */
        vti_signal_flush(0);
        return;
    }
    session_end(status, reason);
}

/* ---- fork ----------------------------------------------------------------- */

/* The child stops tracing and writes nothing (README.md, "fork"). */
static void on_fork_child(void)
{
    if (writer)
        vt_writer_abandon_after_fork(writer);
    atomic_store(&state, S_CHILD);
    atomic_fetch_add(&generation, 1);
    tl_thread = NULL;
    threads = NULL;
    pthread_mutex_init(&threads_lock, NULL);
}

/* ---- fatal signals -------------------------------------------------------- */

void vti_signal_flush(int sig)
{
    static _Atomic int in_signal;
    vt_event ev = {.type = VT_REC_END};
    if (atomic_load(&state) != S_ON || !writer || getpid() != session_pid ||
        atomic_exchange(&in_signal, 1))
        return;
    if (sig && signal_tb) {
        ev.ts_ns = vti_now_ns();
        ev.u.end.status = -1;
        ev.u.end.signal = sig;
        ev.u.end.reason = "signal";
        vt_write(signal_tb, &ev);
    }
    vt_writer_flush_from_signal(writer);
    atomic_store(&in_signal, 0);
}

/* ---- constructor ----------------------------------------------------------- */

/* The session itself starts at the first hooked call or recorded event
 * (vti_session_ensure): a process that never calls CUDA writes nothing. A
 * forked child never records, whether or not its parent had started. */
__attribute__((constructor)) static void vti_constructor(void)
{
    const char *self = vti_self_path(), *nvtx = getenv("NVTX_INJECTION64_PATH");
    vti_guard_init();
    if (self && (!nvtx || !*nvtx)) /* NVTX treats an empty value as unset */
        setenv("NVTX_INJECTION64_PATH", self, 1);
    vti_run_init();
    pthread_atfork(NULL, NULL, on_fork_child);
}
