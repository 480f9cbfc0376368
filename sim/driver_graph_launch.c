/* Graph launches of the simulated driver: an executable graph's nodes
 * (driver_graph.c) run in capture order on the calling thread before the
 * launch returns, each exactly as its eager call would (device memory is
 * host memory; work completes at once). README.md, "Stream capture and
 * graphs". */
#include "driver_capture.h"

#include <stdio.h>

/* One node's operation, as its eager call does it. */
static CUresult run_op(const struct sim_node_op *op)
{
    switch (op->kind) {
    case SIM_NODE_MEMSET:
        sim_memset_now(op->u.memset.dst, op->u.memset.value, op->u.memset.elem, op->u.memset.count);
        return CUDA_SUCCESS;
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

/* Runs hGraphExec's nodes in capture order on the calling thread. A graph
 * with a kernel node runs nothing: CUDA_ERROR_NOT_SUPPORTED, said once on
 * stderr (the simulated device runs no kernels). */
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
