/* Graph launches of the simulated driver: an executable graph's nodes
 * (driver_graph.c) run in capture order on the calling thread before the
 * launch returns, each exactly as its eager call would (device memory is
 * host memory; work completes at once). README.md, "Stream capture and
 * graphs". */
#include "driver_capture.h"
#include "ledger.h"

#include <stdio.h>

/* One node's operation, as its eager call does it. */
static CUresult run_op(const struct sim_node_op *op)
{
    switch (op->kind) {
    case SIM_NODE_MEMSET: {
        struct sim_device *d = sim_device_of((uintptr_t)op->u.memset.dst);
        if (d) /* the 2 MiB an H200 took at the first such launch */
            sim_graph_memset_ran(d);
        sim_memset_now(op->u.memset.dst, op->u.memset.value, op->u.memset.elem, op->u.memset.count);
        return CUDA_SUCCESS;
    }
    case SIM_NODE_MEMCPY:
        sim_memcpy_now(op->u.memcpy.dst, op->u.memcpy.src, op->u.memcpy.bytes);
        return CUDA_SUCCESS;
    case SIM_NODE_MEMCPY2D:
        return sim_copy2d(&op->u.copy2d);
    case SIM_NODE_EVENT_RECORD:
        return sim_event_record_now(op->u.event);
    case SIM_NODE_HOST:
        op->u.host.fn(op->u.host.data);
        return CUDA_SUCCESS;
    case SIM_NODE_WRITE32:
        *(volatile cuuint32_t *)(uintptr_t)op->u.write32.addr = op->u.write32.value;
        return CUDA_SUCCESS;
    case SIM_NODE_MEM_ALLOC:
        return sim_gmem_map(op->u.gmem);
    case SIM_NODE_MEM_FREE:
        sim_gmem_unmap(op->u.gmem);
        return CUDA_SUCCESS;
    case SIM_NODE_EVENT_WAIT: /* every earlier operation is complete */
    case SIM_NODE_KERNEL:     /* refused before any node runs */
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Checks of a launch or upload of x into s: the executable graph, the
 * stream, and no capture on it (a graph launched into a capturing stream
 * would become a child-graph node, which the sim does not model:
 * CUDA_ERROR_NOT_SUPPORTED, and the capture is invalidated). */
static CUresult launch_check(CUgraphExec x, CUstream s, const struct sim_node_op **ops, size_t *n,
                             bool *has_kernel)
{
    CUresult err = sim_check_init();
    if (err || !sim_stream_device(s, &err))
        return err;
    if (!sim_graph_exec_ops(x, ops, n, has_kernel))
        return CUDA_ERROR_INVALID_VALUE;
    return sim_capture_refuse(s, CUDA_ERROR_NOT_SUPPORTED, NULL);
}

/* ---- graph memory of a launch ---- */

/* Whether op is an allocation node of ops[0..n) whose allocation a launch
 * with auto_free frees first (it is live from an earlier launch). */
static bool freed_first(const struct sim_node_op *op, bool auto_free)
{
    return auto_free && op->kind == SIM_NODE_MEM_ALLOC && sim_gmem_live(op->u.gmem);
}

/* Whether the allocation of memory node ops[i] is live just before it
 * runs, by the earlier nodes of the launch (live_before: live when the
 * launch began, after the frees of AUTO_FREE_ON_LAUNCH). */
static bool live_at(const struct sim_node_op *ops, size_t i, bool live_before)
{
    bool live = live_before;
    for (size_t k = 0; k < i; k++)
        if ((ops[k].kind == SIM_NODE_MEM_ALLOC || ops[k].kind == SIM_NODE_MEM_FREE) &&
            ops[k].u.gmem == ops[i].u.gmem)
            live = ops[k].kind == SIM_NODE_MEM_ALLOC;
    return live;
}

/* The launch's memory nodes in order: an allocation already live (freed
 * neither by AUTO_FREE_ON_LAUNCH nor before) or a free of an allocation not
 * live is CUDA_ERROR_INVALID_VALUE ("If the allocation is not freed in the
 * same graph ... the graph cannot be relaunched until it is freed": the
 * CUDA Programming Guide, "Graph memory nodes"). */
static CUresult mem_valid(const struct sim_node_op *ops, size_t n, bool auto_free)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind != SIM_NODE_MEM_ALLOC && ops[i].kind != SIM_NODE_MEM_FREE)
            continue;
        bool before = sim_gmem_live(ops[i].u.gmem);
        for (size_t k = 0; k < n && before; k++)
            if (freed_first(&ops[k], auto_free) && ops[k].u.gmem == ops[i].u.gmem)
                before = false;
        if (live_at(ops, i, before) != (ops[i].kind == SIM_NODE_MEM_FREE))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Whether device d has the room for the launch, reserving it in d's graph
 * pool (sim_gmem_launch_reserve): the charges of all its allocation nodes
 * on d, less those of the allocations AUTO_FREE_ON_LAUNCH frees first. */
static bool mem_fits(const struct sim_node_op *ops, size_t n, bool auto_free, struct sim_device *d)
{
    size_t demand = 0, credit = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind != SIM_NODE_MEM_ALLOC || ops[i].u.gmem->d != d)
            continue;
        size_t charge = sim_gpool_charge(ops[i].u.gmem->rounded);
        demand += charge;
        credit += freed_first(&ops[i], auto_free) ? charge : 0;
    }
    return sim_gmem_launch_reserve(d, demand, credit);
}

/* Whether an allocation node before ops[i] is on ops[i]'s device. */
static bool seen_before(const struct sim_node_op *ops, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (ops[k].kind == SIM_NODE_MEM_ALLOC && ops[k].u.gmem->d == ops[i].u.gmem->d)
            return true;
    return false;
}

/* A launch without the room records one failed allocation in the sim's
 * ledger: on the device of its first allocation node, of the bytes all its
 * allocation nodes on that device ask for (the rule the preload records it
 * by: interpose/graphmem.c). CUDA_ERROR_OUT_OF_MEMORY, or CUDA_SUCCESS
 * when every device has the room. */
static CUresult mem_room(const struct sim_node_op *ops, size_t n, bool auto_free)
{
    struct sim_device *first = NULL;
    bool fits = true;
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == SIM_NODE_MEM_ALLOC && !seen_before(ops, i)) {
            struct sim_device *d = ops[i].u.gmem->d;
            first = first ? first : d;
            if (!mem_fits(ops, n, auto_free, d)) {
                fits = false;
                sim_gmem_launch_failed(d);
            }
        }
    if (fits)
        return CUDA_SUCCESS;
    size_t asked = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == SIM_NODE_MEM_ALLOC && ops[i].u.gmem->d == first)
            asked += ops[i].u.gmem->size;
    return (CUresult)vtsim_ledger_fail(SIM_LK_DEVICE, first->ordinal, asked,
                                       CUDA_ERROR_OUT_OF_MEMORY);
}

/* Runs hGraphExec's nodes in capture order on the calling thread. A graph
 * with a kernel node runs nothing: CUDA_ERROR_NOT_SUPPORTED, said once on
 * stderr (the simulated device runs no kernels). Graph memory: see
 * mem_valid and mem_room; with AUTO_FREE_ON_LAUNCH the allocations an
 * earlier launch left live are freed first. */
CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    static int said;
    const struct sim_node_op *ops;
    size_t n;
    bool has_kernel;
    CUresult err = launch_check(hGraphExec, hStream, &ops, &n, &has_kernel);
    if (err)
        return err;
    if (has_kernel) {
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
            fprintf(stderr, "vramtrace-sim: the simulated device runs no kernels (cuGraphLaunch "
                            "of a graph with a kernel node)\n");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    bool auto_free = sim_graph_exec_auto_free(hGraphExec);
    SIM_LEDGER_SCOPE("cuGraphLaunch");
    if ((err = mem_valid(ops, n, auto_free)) || (err = mem_room(ops, n, auto_free)))
        return err;
    for (size_t i = 0; i < n; i++)
        if (freed_first(&ops[i], auto_free))
            sim_gmem_unmap(ops[i].u.gmem);
    for (size_t i = 0; i < n && !err; i++)
        err = run_op(&ops[i]);
    return err;
}

/* Nothing to upload: the graph lives in host memory. */
CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    const struct sim_node_op *ops;
    size_t n;
    bool has_kernel;
    return launch_check(hGraphExec, hStream, &ops, &n, &has_kernel);
}
