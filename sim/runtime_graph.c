/* Stream capture and CUDA graphs of the simulated runtime: each forwards to
 * the driver (driver_capture.c, driver_graph.c), where the capture state,
 * the thread's capture mode and the graphs live, as the real runtime keeps
 * them in the driver. The runtime's types are the driver's (cudaGraph_t is
 * CUgraph, cudaGraphEdgeData has CUgraphEdgeData's layout) and its enums
 * and errors have the driver's numbers. README.md, "Stream capture and
 * graphs". */
#include "runtime_internal.h"

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    FORWARD(rt_drv.cuStreamBeginCapture(stream, (CUstreamCaptureMode)mode));
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    FORWARD(rt_drv.cuStreamEndCapture(stream, pGraph));
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *pCaptureStatus)
{
    FORWARD(rt_drv.cuStreamIsCapturing(stream, (CUstreamCaptureStatus *)pCaptureStatus));
}

/* CUDA 13's signature (the driver's cuStreamGetCaptureInfo_v3). */
cudaError_t CUDARTAPI cudaStreamGetCaptureInfo(cudaStream_t stream,
                                               enum cudaStreamCaptureStatus *captureStatus_out,
                                               unsigned long long *id_out, cudaGraph_t *graph_out,
                                               const cudaGraphNode_t **dependencies_out,
                                               const cudaGraphEdgeData **edgeData_out,
                                               size_t *numDependencies_out)
{
    FORWARD(rt_drv.cuStreamGetCaptureInfo(
        stream, (CUstreamCaptureStatus *)captureStatus_out, (cuuint64_t *)id_out, graph_out,
        dependencies_out, (const CUgraphEdgeData **)edgeData_out, numDependencies_out));
}

/* The calling thread's mode lives in the driver (one place for both APIs). */
cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    FORWARD(rt_drv.cuThreadExchangeStreamCaptureMode((CUstreamCaptureMode *)mode));
}

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    FORWARD(rt_drv.cuGraphCreate(pGraph, flags));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph)
{
    FORWARD(rt_drv.cuGraphDestroy(graph));
}

cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    FORWARD(rt_drv.cuGraphGetNodes(graph, nodes, numNodes));
}

cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                   cudaGraphNode_t *pDependencies,
                                                   cudaGraphEdgeData *edgeData,
                                                   size_t *pNumDependencies)
{
    FORWARD(rt_drv.cuGraphNodeGetDependencies(node, pDependencies, (CUgraphEdgeData *)edgeData,
                                              pNumDependencies));
}

/* CUDA 12+: cudaGraphInstantiate takes flags, as cudaGraphInstantiateWithFlags. */
cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags)
{
    FORWARD(rt_drv.cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags)
{
    FORWARD(rt_drv.cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    FORWARD(rt_drv.cuGraphLaunch(graphExec, stream));
}

cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    FORWARD(rt_drv.cuGraphUpload(graphExec, stream));
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    FORWARD(rt_drv.cuGraphExecDestroy(graphExec));
}

/* ---- graph memory nodes (the driver's: driver_graph_mem.c). The runtime's
 * parameter structs have the driver's layout (cudaMemAllocNodeParams is
 * CUDA_MEM_ALLOC_NODE_PARAMS with a void * address; cudaMemPoolProps is
 * CUmemPoolProps) and its enums the driver's numbers. ---- */

cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t *pDependencies,
                                               size_t numDependencies,
                                               struct cudaMemAllocNodeParams *nodeParams)
{
    _Static_assert(sizeof(struct cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS),
                   "the runtime's allocation node parameters are the driver's");
    FORWARD(rt_drv.cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies,
                                          (CUDA_MEM_ALLOC_NODE_PARAMS *)nodeParams));
}

cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t *pDependencies,
                                              size_t numDependencies, void *dptr)
{
    FORWARD(rt_drv.cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
                                         (CUdeviceptr)(uintptr_t)dptr));
}

cudaError_t CUDARTAPI cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node,
                                                     struct cudaMemAllocNodeParams *params_out)
{
    FORWARD(rt_drv.cuGraphMemAllocNodeGetParams(node, (CUDA_MEM_ALLOC_NODE_PARAMS *)params_out));
}

/* dptr_out: where the address is written (a void ** passed as void *). */
cudaError_t CUDARTAPI cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
    FORWARD(rt_drv.cuGraphMemFreeNodeGetParams(node, (CUdeviceptr *)dptr_out));
}

cudaError_t CUDARTAPI cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
    FORWARD(rt_drv.cuGraphNodeGetType(node, (CUgraphNodeType *)pType));
}

cudaError_t CUDARTAPI cudaDeviceGraphMemTrim(int device)
{
    FORWARD(rt_drv.cuDeviceGraphMemTrim(device));
}

cudaError_t CUDARTAPI cudaDeviceGetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void *value)
{
    FORWARD(rt_drv.cuDeviceGetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaDeviceSetGraphMemAttribute(int device,
                                                     enum cudaGraphMemAttributeType attr,
                                                     void *value)
{
    FORWARD(rt_drv.cuDeviceSetGraphMemAttribute(device, (CUgraphMem_attribute)attr, value));
}

/* Memory nodes only (the driver's cuGraphAddNode_v2); cudaGraphNodeParams
 * is CUgraphNodeParams. */
cudaError_t CUDARTAPI cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t *pDependencies,
                                       const cudaGraphEdgeData *dependencyData,
                                       size_t numDependencies,
                                       struct cudaGraphNodeParams *nodeParams)
{
    _Static_assert(sizeof(struct cudaGraphNodeParams) == sizeof(CUgraphNodeParams),
                   "the runtime's node parameters are the driver's");
    FORWARD(rt_drv.cuGraphAddNode(pGraphNode, graph, pDependencies,
                                  (const CUgraphEdgeData *)dependencyData, numDependencies,
                                  (CUgraphNodeParams *)nodeParams));
}
