/* graphnodes.c: the tables of graph memory nodes (graphmem.c has the hooks):
 * the captures open, each allocation node's call stack by its address, and
 * each executable graph's plan of memory nodes. One mutex; a fork child
 * makes it anew (vti_graph_fork_reset). interpose/README.md, "Graph memory
 * nodes". */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>

#include "regionmap.h"
#include "vti_internal.h"

/* Guards the two maps. node_stacks: an allocation node's address -> the
 * stack of the call that made it (a); plans: an executable graph -> its
 * plan (a: the pointer, graphmem.c's). */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static vti_rmap node_stacks, plans;
/* Captures begun and not yet ended, all threads (vti_graph_capture_count). */
static atomic_long open_captures;

void vti_graph_capture_count(bool began)
{
    if (began)
        atomic_fetch_add(&open_captures, 1);
    else if (atomic_fetch_sub(&open_captures, 1) <= 0)
        atomic_fetch_add(&open_captures, 1); /* an end of a capture begun unseen */
}

bool vti_graph_capturing(uint64_t stream, enum vti_fn f)
{
    if (atomic_load_explicit(&open_captures, memory_order_acquire) <= 0)
        return false;
    if (!stream && vti_fn_per_thread(f))
        stream = (uintptr_t)CU_STREAM_PER_THREAD; /* cudaStreamPerThread too */
    typedef PFN_cuStreamIsCapturing_v10000 is_fn;
    static _Atomic(is_fn) found; /* the driver's, asked once */
    is_fn is = atomic_load_explicit(&found, memory_order_acquire);
    if (!is) {
        is = VTI_REAL_DRIVER(cuStreamIsCapturing, 10000, "cuStreamIsCapturing");
        atomic_store_explicit(&found, is, memory_order_release);
    }
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return is && is((CUstream)(uintptr_t)stream, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

void vti_graph_node_made(uint64_t addr, uint32_t stack)
{
    if (!addr)
        return;
    pthread_mutex_lock(&graph_lock);
    vti_rmap_slot *s = vti_rmap_find(&node_stacks, addr);
    if (s)
        s->a = stack;
    else
        vti_rmap_insert(&node_stacks, addr, stack, 0, 0); /* none: no stack, not wrong */
    pthread_mutex_unlock(&graph_lock);
}

uint32_t vti_graph_node_stack(uint64_t addr)
{
    pthread_mutex_lock(&graph_lock);
    vti_rmap_slot *s = vti_rmap_find(&node_stacks, addr);
    uint32_t stack = s ? (uint32_t)s->a : 0;
    pthread_mutex_unlock(&graph_lock);
    return stack;
}

bool vti_graph_node_known(uint64_t addr)
{
    pthread_mutex_lock(&graph_lock);
    bool known = vti_rmap_find(&node_stacks, addr) != NULL;
    pthread_mutex_unlock(&graph_lock);
    return known;
}

void *vti_graph_plan_swap(uint64_t exec, void *plan)
{
    void *old = NULL;
    pthread_mutex_lock(&graph_lock);
    vti_rmap_slot *s = vti_rmap_find(&plans, exec);
    if (s) {
        old = (void *)(uintptr_t)s->a;
        vti_rmap_del(&plans, s);
    }
    bool full = plan && vti_rmap_insert(&plans, exec, (uintptr_t)plan, 0, 0) != 0;
    pthread_mutex_unlock(&graph_lock);
    if (full)
        vti_stop("out of memory for the plans of graph launches");
    return old;
}

void *vti_graph_plan_find(uint64_t exec)
{
    pthread_mutex_lock(&graph_lock);
    vti_rmap_slot *s = vti_rmap_find(&plans, exec);
    void *plan = s ? (void *)(uintptr_t)s->a : NULL;
    pthread_mutex_unlock(&graph_lock);
    return plan;
}

void vti_graph_fork_reset(void)
{
    pthread_mutex_init(&graph_lock, NULL);
}
