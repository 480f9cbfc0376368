/* Stream capture and CUDA graphs of the simulated driver (internal; README.md,
 * "Stream capture and graphs"). Layers, each using only those before it:
 * driver_graph.c keeps the graphs, their nodes and executable graphs (and
 * the one mutex, sim_graph_lock, that guards them and the captures);
 * driver_capture.c keeps the capture sequences and the rules the entry
 * points of driver_misc.c, driver_copy2d.c, driver_mem.c, driver_pool.c,
 * driver_stream_extra.c and driver_torch.c ask about; driver_graph_mem.c
 * makes graph memory nodes; driver_graph_launch.c runs executable graphs
 * with those files' eager helpers. */
#ifndef SIM_DRIVER_CAPTURE_H
#define SIM_DRIVER_CAPTURE_H
#include <stdbool.h>

#include "driver_common.h"

/* What a graph node does when its graph is launched. */
enum sim_node_kind {
    SIM_NODE_MEMSET,       /* u.memset */
    SIM_NODE_MEMCPY,       /* u.memcpy: bytes, any direction */
    SIM_NODE_MEMCPY2D,     /* u.copy2d */
    SIM_NODE_KERNEL,       /* u.kernel: recorded, never run */
    SIM_NODE_EVENT_RECORD, /* u.event: cuEventRecordWithFlags(..., CU_EVENT_RECORD_EXTERNAL) */
    SIM_NODE_EVENT_WAIT,   /* u.event: cuStreamWaitEvent(..., CU_EVENT_WAIT_EXTERNAL) */
    SIM_NODE_HOST,         /* u.host: cuLaunchHostFunc */
    SIM_NODE_WRITE32,      /* u.write32: cuStreamWriteValue32 */
    SIM_NODE_MEM_ALLOC,    /* u.gmem: a graph allocation made live */
    SIM_NODE_MEM_FREE,     /* u.gmem: a graph allocation freed */
};

struct sim_node_op {
    enum sim_node_kind kind;
    union {
        struct {
            CUdeviceptr dst;
            unsigned value, elem; /* elem: bytes per element, 1, 2 or 4 */
            size_t count;         /* elements */
        } memset;
        struct {
            CUdeviceptr dst, src;
            size_t bytes;
        } memcpy;
        CUDA_MEMCPY2D copy2d;
        struct {
            CUfunction f;
            unsigned grid[3], block[3], shared_bytes;
        } kernel;
        CUevent event;
        struct {
            CUhostFn fn;
            void *data;
        } host;
        struct {
            CUdeviceptr addr;
            cuuint32_t value;
        } write32;
        struct sim_gmem *gmem; /* held (sim_gmem_ref) by the node and each executable copy */
    } u;
};

/* Guards every graph, node and capture sequence (driver_graph.c). */
extern pthread_mutex_t sim_graph_lock;

/* --- graphs (driver_graph.c); the caller holds sim_graph_lock --- */
/* A new empty graph, or NULL when out of host memory. capturing: a
 * capture's graph, which cuGraphDestroy refuses until sim_graph_captured. */
CUgraph sim_graph_new(bool capturing);
/* The capture of g ended: g is the program's. */
void sim_graph_captured(CUgraph g);
/* Appends a node doing op after the ndeps nodes deps; NULL when out of host
 * memory. The node takes over op's hold of a graph allocation (u.gmem). */
CUgraphNode sim_graph_add(CUgraph g, const struct sim_node_op *op, const CUgraphNode *deps,
                          size_t ndeps);
/* Frees g and its nodes. */
void sim_graph_free(CUgraph g);
/* The *n operations *ops of the executable graph x (*has_kernel: one is a
 * kernel node); false when x is none. Executable graphs never change: no
 * lock. */
bool sim_graph_exec_ops(CUgraphExec x, const struct sim_node_op **ops, size_t *n, bool *has_kernel);
/* Whether x was instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH. */
bool sim_graph_exec_auto_free(CUgraphExec x);

/* --- nodes added by the program (driver_graph.c) --- */
/* cuGraphAdd*Node: a node doing op after the ndeps nodes deps (each a node
 * of g) in *out; takes over op's hold of u.gmem only on CUDA_SUCCESS.
 * CUDA_ERROR_INVALID_VALUE for a bad graph, node or argument, and for a
 * graph still being captured into. */
CUresult sim_graph_add_node(CUgraph g, const struct sim_node_op *op, const CUgraphNode *deps,
                            size_t ndeps, CUgraphNode *out);
/* The operation of node n into *op; false when n is no node. */
bool sim_graph_node_op(CUgraphNode n, struct sim_node_op *op);
/* Whether g has a node freeing gm (CUDA_ERROR_INVALID_VALUE for a second
 * one); the caller holds sim_graph_lock. */
bool sim_graph_frees(CUgraph g, const struct sim_gmem *gm);

/* --- operations enqueued on a stream (driver_capture.c) --- */
/* Whether any stream capture is under way (one atomic load). */
bool sim_capture_any(void);
/* Called by every capturable operation on stream s after its arguments were
 * checked. false: s is not capturing, the caller runs op now. true: the
 * caller returns *err: CUDA_SUCCESS when op became a node of the capture's
 * graph; CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when the capture was
 * invalidated before; CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy
 * stream while a blocking stream of its device captures (that capture is
 * invalidated); CUDA_ERROR_OUT_OF_MEMORY. */
bool sim_capture_enqueue(CUstream s, const struct sim_node_op *op, CUresult *err);
/* An operation on s the simulated device cannot capture (what): when s is
 * capturing, its capture is invalidated, `note` (if not NULL) is said once
 * per process on stderr and `why` is returned; the legacy stream while a
 * blocking stream captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; otherwise
 * CUDA_SUCCESS (run it). */
CUresult sim_capture_refuse(CUstream s, CUresult why, const char *note);
/* The same without invalidating the capture: an argument error the driver
 * returns while the capture goes on (an H200, driver 580.159.04:
 * cuMemFreeAsync of cudaMalloc memory in a capture, tests/gpu/README.md). */
CUresult sim_capture_reject(CUstream s, CUresult why);
/* cuStreamSynchronize / cuStreamQuery of s: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * when s is capturing (the capture is invalidated), ..._IMPLICIT for the
 * legacy stream while a blocking stream captures, else CUDA_SUCCESS. */
CUresult sim_capture_stream_sync(CUstream s);
/* cuCtxSynchronize on device d: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when a
 * stream of d is capturing (every such capture is invalidated). */
CUresult sim_capture_ctx_sync(const struct sim_device *d);
/* cuStreamDestroy of s: s leaves its capture, which is invalidated; when s
 * began it, the capture ends and its graph is destroyed. */
void sim_capture_stream_gone(CUstream s);
/* A potentially unsafe call (cuThreadExchangeStreamCaptureMode): allocation
 * and free calls (sync = false) and synchronous copies and sets (sync =
 * true, which also use the legacy stream). CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * when the calling thread is prohibited from it, invalidating the captures
 * that prohibit it; CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for a synchronous call
 * while a blocking stream of the current device captures; for one through a
 * per-thread variant (sim_per_thread_call: cuMemcpy_ptds ...), whose stream
 * is the thread's own, UNSUPPORTED (the capture invalidated) while that
 * stream captures, nothing for other streams' captures; else CUDA_SUCCESS.
 * One atomic load when no capture is under way. */
CUresult sim_capture_unsafe(bool sync);

/* --- graph memory nodes made by capture (driver_graph_mem.c) --- */
/* cuMemAllocAsync / cuMemAllocFromPoolAsync of size bytes for device
 * ordinal on s: false when no capture is under way or s is not capturing
 * (the caller allocates now); true: the caller returns *err, CUDA_SUCCESS
 * when an allocation node was added to the capture's graph (its address in
 * *dptr), or sim_capture_enqueue's errors. */
bool sim_gmem_capture_alloc(CUstream s, int ordinal, size_t size, CUdeviceptr *dptr, CUresult *err);
/* cuMemFreeAsync of dptr on s, as sim_gmem_capture_alloc: a free node when
 * dptr is an allocation node's allocation; any other address on a capturing
 * stream is CUDA_ERROR_INVALID_VALUE and invalidates the capture (no free
 * node can free it: cuGraphAddMemFreeNode). */
bool sim_gmem_capture_free(CUstream s, CUdeviceptr dptr, CUresult *err);

/* --- events --- */
/* cuEventRecord(WithFlags) of e on s: as sim_capture_enqueue (true: return
 * *err). In a capture the event remembers the capture and the stream's
 * current dependencies; CU_EVENT_RECORD_EXTERNAL also adds an event-record
 * node (outside capture: CUDA_ERROR_INVALID_VALUE). A record outside
 * capture makes e forget any capture. */
bool sim_capture_event_record(CUevent e, CUstream s, unsigned flags, CUresult *err);
/* cuStreamWaitEvent(s, e, flags) (recorded: e was ever recorded outside
 * capture): joins, dependencies and errors of stream capture; CUDA_SUCCESS
 * when the wait is done. */
CUresult sim_capture_event_wait(CUstream s, CUevent e, unsigned flags, bool recorded);
/* cuEventQuery / cuEventSynchronize of e: CUDA_ERROR_CAPTURED_EVENT when e
 * was last recorded in an active capture (which is invalidated). */
CUresult sim_capture_event_use(CUevent e);
/* cuEventDestroy of e: no capture remembers it any more. */
void sim_capture_event_gone(CUevent e);

/* --- helpers of the eager paths, used by graph launches (driver_graph_launch.c) --- */
/* Sets count elements of elem bytes (1, 2, 4) at dst to value (driver_misc.c). */
void sim_memset_now(CUdeviceptr dst, unsigned value, unsigned elem, size_t count);
/* Copies bytes from src to dst (memmove; driver_misc.c). */
void sim_memcpy_now(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
/* A 2D copy, with cuMemcpy2D's checks and errors (driver_copy2d.c). */
CUresult sim_copy2d(const CUDA_MEMCPY2D *c);
/* cuMemsetD8/16/32 (elem 1, 2, 4 bytes) and their Async forms on s, with
 * their checks and the capture rules (driver_misc.c). */
CUresult sim_memset_sync(CUdeviceptr dst, unsigned value, unsigned elem, size_t count);
CUresult sim_memset_async(CUdeviceptr dst, unsigned value, unsigned elem, size_t count, CUstream s);
/* Records e now (driver_misc.c); CUDA_ERROR_INVALID_HANDLE when e is no event. */
CUresult sim_event_record_now(CUevent e);
/* Whether e is an event recorded outside capture at least once (driver_misc.c). */
bool sim_event_recorded(CUevent e);
#endif
