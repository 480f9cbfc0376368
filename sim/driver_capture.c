/* Stream capture of the simulated driver (CUDA Driver API, "Stream
 * Management": cuStreamBeginCapture ... cuThreadExchangeStreamCaptureMode;
 * CUDA Programming Guide, "CUDA Graphs", "Creating a Graph Using Stream
 * Capture"). While a stream captures, the operations enqueued on it are not
 * run but appended to the capture's graph (driver_graph.c), in the order
 * they were issued; a graph launch runs them in that order. Rules and
 * simplifications: README.md, "Stream capture and graphs". */
#include "driver_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A stream in a capture sequence: the one that began it, or one that joined
 * it by waiting on an event recorded in it. */
struct member {
    CUstream s;
    pthread_t owner;        /* CU_STREAM_PER_THREAD: the thread whose stream it is */
    int ordinal;            /* its device */
    bool blocking;          /* not CU_STREAM_NON_BLOCKING: the legacy stream depends on it */
    CUgraphNode *deps;      /* what the next node captured on it depends on */
    CUgraphEdgeData *edges; /* zeroed, parallel to deps (cuStreamGetCaptureInfo_v3) */
    size_t ndeps, cap;
    struct member *next;
};

/* An event last recorded in a capture: the dependencies it stands for. */
struct cap_event {
    CUevent e;
    CUgraphNode *deps;
    size_t ndeps;
    struct cap_event *next;
};

struct capture {
    uint64_t id; /* unique over the process's lifetime, from 1 */
    CUstreamCaptureMode mode;
    pthread_t thread; /* the thread that began it */
    bool invalid;
    CUgraph graph;
    struct member *members; /* the first began the capture */
    struct cap_event *events;
    struct capture *next;
};

static struct capture *captures; /* active: begun, not yet ended */
static int ncaptures;            /* their number; read without the lock (fast path) */
static uint64_t next_id = 1;
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* A child forked while another thread held the lock must not hang on it; it
 * cannot use CUDA anyway (driver.c), and the parent's captures are not its. */
static void capture_child(void)
{
    pthread_mutex_init(&sim_graph_lock, NULL);
    captures = NULL;
    ncaptures = 0;
}

static void capture_register_fork(void)
{
    pthread_atfork(NULL, NULL, capture_child);
}

static bool any_capture(void)
{
    return __atomic_load_n(&ncaptures, __ATOMIC_ACQUIRE) != 0;
}

bool sim_capture_any(void)
{
    return any_capture();
}

static bool is_legacy(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY;
}

static bool same_stream(const struct member *m, CUstream s)
{
    return m->s == s && (s != CU_STREAM_PER_THREAD || pthread_equal(m->owner, pthread_self()));
}

/* The member for s and its capture (*cap), or NULL. Locked. */
static struct member *find_member(CUstream s, struct capture **cap)
{
    for (struct capture *c = captures; c; c = c->next)
        for (struct member *m = c->members; m; m = m->next)
            if (same_stream(m, s)) {
                *cap = c;
                return m;
            }
    return NULL;
}

/* The entry of e in an active capture (its capture in *cap), or NULL. Locked. */
static struct cap_event *find_event(CUevent e, struct capture **cap)
{
    for (struct capture *c = captures; c; c = c->next)
        for (struct cap_event *ce = c->events; ce; ce = ce->next)
            if (ce->e == e) {
                *cap = c;
                return ce;
            }
    return NULL;
}

/* Whether c has a blocking stream on device ordinal. */
static bool blocks_legacy(const struct capture *c, int ordinal)
{
    for (const struct member *m = c->members; m; m = m->next)
        if (m->blocking && m->ordinal == ordinal)
            return true;
    return false;
}

/* The legacy stream s while blocking streams of the current device capture:
 * every such capture is invalidated when invalidate (the Programming Guide:
 * "any attempted use of the legacy stream is invalid"), and
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT. Else CUDA_SUCCESS. Locked. */
static CUresult implicit(CUstream s, bool invalidate)
{
    bool hit = false;
    if (!is_legacy(s))
        return CUDA_SUCCESS;
    int ordinal = sim_current_ordinal();
    for (struct capture *c = captures; c; c = c->next)
        if (blocks_legacy(c, ordinal)) {
            c->invalid |= invalidate;
            hit = true;
        }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

/* Makes room for n dependencies in m. 0, or -1 when out of host memory. */
static int reserve_deps(struct member *m, size_t n)
{
    if (n <= m->cap)
        return 0;
    size_t cap = n < 4 ? 4 : n * 2;
    CUgraphNode *deps = realloc(m->deps, cap * sizeof *deps);
    if (!deps)
        return -1;
    m->deps = deps;
    CUgraphEdgeData *edges = calloc(cap, sizeof *edges);
    if (!edges)
        return -1;
    free(m->edges);
    m->edges = edges;
    m->cap = cap;
    return 0;
}

/* m's next node depends on deps (replacing what it depended on). */
static int set_deps(struct member *m, const CUgraphNode *deps, size_t n)
{
    if (reserve_deps(m, n) != 0)
        return -1;
    if (n)
        memcpy(m->deps, deps, n * sizeof *deps);
    m->ndeps = n;
    return 0;
}

/* m's next node also depends on deps (an event wait: a union). */
static int add_deps(struct member *m, const CUgraphNode *deps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool have = false;
        for (size_t j = 0; j < m->ndeps && !have; j++)
            have = m->deps[j] == deps[i];
        if (have)
            continue;
        if (reserve_deps(m, m->ndeps + 1) != 0)
            return -1;
        m->deps[m->ndeps++] = deps[i];
    }
    return 0;
}

/* Appends op to c's graph after m's dependencies; m then depends on it. */
static CUresult add_node(struct capture *c, struct member *m, const struct sim_node_op *op)
{
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUgraphNode n = sim_graph_add(c->graph, op, m->deps, m->ndeps);
    if (!n || set_deps(m, &n, 1) != 0) {
        c->invalid = true; /* the graph would lack the operation */
        if (n && (op->kind == SIM_NODE_MEM_ALLOC || op->kind == SIM_NODE_MEM_FREE))
            sim_gmem_ref(op->u.gmem); /* the node's hold; the caller drops its own */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static struct member *new_member(CUstream s, int ordinal)
{
    struct member *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->s = s;
    m->owner = pthread_self();
    m->ordinal = ordinal;
    m->blocking = !(sim_stream_flags(s) & CU_STREAM_NON_BLOCKING);
    return m;
}

static void free_member(struct member *m)
{
    free(m->deps);
    free(m->edges);
    free(m);
}

static void free_event(struct cap_event *ce)
{
    free(ce->deps);
    free(ce);
}

/* Removes c from the active captures and frees it (its graph when
 * with_graph). Locked. */
static void end_capture(struct capture *c, bool with_graph)
{
    for (struct capture **pp = &captures; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    __atomic_store_n(&ncaptures, ncaptures - 1, __ATOMIC_RELEASE);
    while (c->members) {
        struct member *m = c->members;
        c->members = m->next;
        free_member(m);
    }
    while (c->events) {
        struct cap_event *ce = c->events;
        c->events = ce->next;
        free_event(ce);
    }
    if (with_graph)
        sim_graph_free(c->graph);
    free(c);
}

/* --- capture sequences --- */

static CUresult begin_locked(CUstream s, CUstreamCaptureMode mode, int ordinal)
{
    struct capture *c;
    if (find_member(s, &c))
        return CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
    c = calloc(1, sizeof *c);
    struct member *m = new_member(s, ordinal);
    CUgraph g = sim_graph_new(true);
    if (!c || !m || !g) {
        free(c);
        free(m);
        if (g)
            sim_graph_free(g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *c = (struct capture){next_id++, mode, pthread_self(), false, g, m, NULL, captures};
    captures = c;
    __atomic_store_n(&ncaptures, ncaptures + 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

/* Capture on hStream (CU_STREAM_LEGACY or NULL: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
 * already capturing: CUDA_ERROR_ILLEGAL_STATE; mode not a CUstreamCaptureMode:
 * CUDA_ERROR_INVALID_VALUE). */
CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
    CUresult err = sim_check_init();
    struct sim_device *d = err ? NULL : sim_stream_device(hStream, &err);
    if (!d)
        return err;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (is_legacy(hStream))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_once(&fork_once, capture_register_fork);
    pthread_mutex_lock(&sim_graph_lock);
    err = begin_locked(hStream, mode, d->ordinal);
    pthread_mutex_unlock(&sim_graph_lock);
    return err;
}

/* CUDA 10.0's form, before capture modes: a global-mode capture. */
CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static CUresult end_locked(CUstream s, CUgraph *phGraph)
{
    struct capture *c;
    struct member *m = find_member(s, &c);
    if (!m)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (m != c->members)
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; /* joined, not begun here */
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    bool invalid = c->invalid;
    *phGraph = invalid ? NULL : c->graph;
    if (!invalid)
        sim_graph_captured(c->graph); /* the program's now */
    end_capture(c, invalid);
    return invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

/* Ends the capture begun on hStream; it and every stream that joined stop
 * capturing. *phGraph: the graph, or NULL (and
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) when the capture was invalidated. */
CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    CUresult err = sim_check_init();
    if (err || !sim_stream_device(hStream, &err))
        return err;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    err = end_locked(hStream, phGraph);
    pthread_mutex_unlock(&sim_graph_lock);
    return err;
}

/* The capture status of s into *st, and its member (NULL when none);
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream while a blocking
 * stream captures (nothing invalidated). Locked. */
static CUresult status_locked(CUstream s, CUstreamCaptureStatus *st, struct member **m,
                              struct capture **c)
{
    CUresult err = implicit(s, false);
    if (err)
        return err;
    *m = find_member(s, c);
    *st = !*m             ? CU_STREAM_CAPTURE_STATUS_NONE
          : (*c)->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                          : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

/* Every output but the status is written only for an active capture (the
 * documented valid data). deps/edges: the member's arrays, valid until the
 * next call on the stream. */
static CUresult capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{
    struct member *m;
    struct capture *c;
    CUresult err = sim_check_init();
    if (err || !sim_stream_device(s, &err))
        return err;
    if (!st || (edges && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    err = status_locked(s, st, &m, &c);
    if (!err && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        if (id)
            *id = c->id;
        if (g)
            *g = c->graph;
        if (deps)
            *deps = m->deps;
        if (edges)
            *edges = m->edges;
        if (n)
            *n = m->ndeps;
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return err;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

/* CUDA 10.1's form: status and id. */
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out)
{
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

/* CUDA 11.3's form: no edge data (every edge is the default one, so no
 * query is lossy). */
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

/* The calling thread's mode swaps with *mode (default GLOBAL). */
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (sim_check_init())
        return sim_check_init();
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* --- what the other entry points ask --- */

bool sim_capture_enqueue(CUstream s, const struct sim_node_op *op, CUresult *err)
{
    struct capture *c;
    if (!any_capture())
        return false;
    pthread_mutex_lock(&sim_graph_lock);
    struct member *m = find_member(s, &c);
    *err = m ? add_node(c, m, op) : implicit(s, true);
    pthread_mutex_unlock(&sim_graph_lock);
    return m || *err;
}

static CUresult refuse(CUstream s, CUresult why, const char *note, bool invalidate)
{
    static int said;
    struct capture *c;
    if (!any_capture())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    struct member *m = find_member(s, &c);
    CUresult err = m ? why : implicit(s, true);
    if (m && invalidate)
        c->invalid = true;
    pthread_mutex_unlock(&sim_graph_lock);
    if (m && note && !__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        fprintf(stderr, "vramtrace-sim: %s\n", note);
    return err;
}

CUresult sim_capture_refuse(CUstream s, CUresult why, const char *note)
{
    return refuse(s, why, note, true);
}

CUresult sim_capture_reject(CUstream s, CUresult why)
{
    return refuse(s, why, NULL, false);
}

CUresult sim_capture_stream_sync(CUstream s)
{
    return sim_capture_refuse(s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, NULL);
}

CUresult sim_capture_ctx_sync(const struct sim_device *d)
{
    bool hit = false;
    if (!any_capture())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    for (struct capture *c = captures; c; c = c->next)
        for (struct member *m = c->members; m; m = m->next)
            if (m->ordinal == d->ordinal)
                hit = c->invalid = true;
    pthread_mutex_unlock(&sim_graph_lock);
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

void sim_capture_stream_gone(CUstream s)
{
    struct capture *c;
    if (!any_capture())
        return;
    pthread_mutex_lock(&sim_graph_lock);
    struct member *m = find_member(s, &c);
    if (m && m == c->members) {
        end_capture(c, true); /* nothing can end it any more */
    } else if (m) {
        c->invalid = true;
        for (struct member **pp = &c->members; *pp; pp = &(*pp)->next)
            if (*pp == m) {
                *pp = m->next;
                break;
            }
        free_member(m);
    }
    pthread_mutex_unlock(&sim_graph_lock);
}

/* The captures that prohibit the calling thread's potentially unsafe calls
 * are invalidated; CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when any does.
 * Locked. */
static CUresult prohibited(void)
{
    bool hit = false;
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    for (struct capture *c = captures; c; c = c->next) {
        if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
            continue;
        bool own = pthread_equal(c->thread, pthread_self());
        if (own || (thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                    c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL))
            hit = c->invalid = true;
    }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

_Thread_local int sim_per_thread_call;

/* A synchronous call on the thread's per-thread stream while that stream
 * captures: the capture is invalidated, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
 * Locked. */
static CUresult own_stream_sync(void)
{
    struct capture *c;
    if (!find_member(CU_STREAM_PER_THREAD, &c))
        return CUDA_SUCCESS;
    c->invalid = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult sim_capture_unsafe(bool sync)
{
    if (!any_capture())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    CUresult err = prohibited();
    if (!err && sync) /* a per-thread variant's implicit stream is the thread's own */
        err = sim_per_thread_call ? own_stream_sync() : implicit(CU_STREAM_LEGACY, true);
    pthread_mutex_unlock(&sim_graph_lock);
    return err;
}

/* --- events --- */

/* e no longer stands for work of any capture. Locked. */
static void forget_event(CUevent e)
{
    for (struct capture *c = captures; c; c = c->next)
        for (struct cap_event **pp = &c->events; *pp; pp = &(*pp)->next)
            if ((*pp)->e == e) {
                struct cap_event *ce = *pp;
                *pp = ce->next;
                free_event(ce);
                return; /* an event is in one capture at most */
            }
}

/* e now stands for m's current dependencies in c. Locked. */
static CUresult remember_event(struct capture *c, struct member *m, CUevent e)
{
    struct cap_event *ce = calloc(1, sizeof *ce);
    if (ce && m->ndeps && !(ce->deps = malloc(m->ndeps * sizeof *ce->deps))) {
        free(ce);
        ce = NULL;
    }
    if (!ce) {
        c->invalid = true;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (m->ndeps)
        memcpy(ce->deps, m->deps, m->ndeps * sizeof *ce->deps);
    ce->ndeps = m->ndeps;
    ce->e = e;
    ce->next = c->events;
    c->events = ce;
    return CUDA_SUCCESS;
}

static bool record_locked(CUevent e, CUstream s, bool external, CUresult *err)
{
    struct capture *c;
    forget_event(e);
    struct member *m = find_member(s, &c);
    if (!m) {
        *err = external ? CUDA_ERROR_INVALID_VALUE : implicit(s, true);
        return *err != CUDA_SUCCESS;
    }
    *err = CUDA_SUCCESS;
    if (external) {
        struct sim_node_op op = {.kind = SIM_NODE_EVENT_RECORD, .u.event = e};
        *err = add_node(c, m, &op);
    } else if (c->invalid) {
        *err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (!*err)
        *err = remember_event(c, m, e);
    return true;
}

bool sim_capture_event_record(CUevent e, CUstream s, unsigned flags, CUresult *err)
{
    bool external = flags & CU_EVENT_RECORD_EXTERNAL;
    if (!any_capture()) {
        *err = external ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        return external;
    }
    pthread_mutex_lock(&sim_graph_lock);
    bool handled = record_locked(e, s, external, err);
    pthread_mutex_unlock(&sim_graph_lock);
    return handled;
}

/* s (not capturing) joins the capture of ce: its next node depends on what
 * the event stands for. Locked. */
static CUresult join(struct capture *c, const struct cap_event *ce, CUstream s)
{
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (is_legacy(s)) { /* the legacy stream cannot capture */
        c->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    CUresult err;
    struct sim_device *d = sim_stream_device(s, &err);
    struct member *m = d ? new_member(s, d->ordinal) : NULL;
    if (!m || set_deps(m, ce->deps, ce->ndeps) != 0) {
        if (m)
            free_member(m);
        return d ? CUDA_ERROR_OUT_OF_MEMORY : err;
    }
    m->next = c->members->next; /* the first member stays the one that began it */
    c->members->next = m;
    return CUDA_SUCCESS;
}

/* A wait by m, capturing in c, on e (ce: its entry, ec: its capture). Locked. */
static CUresult wait_captured(struct capture *c, struct member *m, const struct cap_event *ce,
                              struct capture *ec, bool external, CUevent e, bool recorded)
{
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (ce && ec != c) { /* would merge two capture sequences */
        c->invalid = ec->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    if (ce && add_deps(m, ce->deps, ce->ndeps) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (external) {
        struct sim_node_op op = {.kind = SIM_NODE_EVENT_WAIT, .u.event = e};
        return add_node(c, m, &op);
    }
    if (!ce && recorded) { /* a dependency on work outside the capture */
        c->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    return CUDA_SUCCESS; /* same capture, or an event never recorded (no work) */
}

CUresult sim_capture_event_wait(CUstream s, CUevent e, unsigned flags, bool recorded)
{
    struct capture *c = NULL, *ec = NULL;
    bool external = flags & CU_EVENT_WAIT_EXTERNAL;
    if (!any_capture())
        return external ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    struct cap_event *ce = find_event(e, &ec);
    struct member *m = find_member(s, &c);
    CUresult err;
    if (m)
        err = wait_captured(c, m, ce, ec, external, e, recorded);
    else if (external)
        err = CUDA_ERROR_INVALID_VALUE;
    else
        err = ce ? join(ec, ce, s) : implicit(s, true);
    pthread_mutex_unlock(&sim_graph_lock);
    return err;
}

CUresult sim_capture_event_use(CUevent e)
{
    struct capture *c;
    if (!any_capture())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    struct cap_event *ce = find_event(e, &c);
    if (ce)
        c->invalid = true;
    pthread_mutex_unlock(&sim_graph_lock);
    return ce ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

void sim_capture_event_gone(CUevent e)
{
    if (!any_capture())
        return;
    pthread_mutex_lock(&sim_graph_lock);
    forget_event(e);
    pthread_mutex_unlock(&sim_graph_lock);
}
