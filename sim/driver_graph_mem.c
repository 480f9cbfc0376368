/* Graph memory nodes of the simulated driver (CUDA Programming Guide, "Graph
 * memory nodes"; CUDA Driver API, cuGraphAddMemAllocNode): allocation and
 * free nodes made by the program or by stream capture of cuMemAllocAsync /
 * cuMemFreeAsync, their parameters, and the devices' graph memory
 * attributes. An allocation node's address is fixed when it is made (struct
 * sim_gmem, device.c); its memory is taken only when a launch runs the node
 * (driver_graph_launch.c). Above driver_graph.c and driver_capture.c.
 * README.md, "Graph memory nodes". */
#include "driver_capture.h"

#include <string.h>

/* A new allocation node's allocation of size bytes on device ordinal, held
 * once by the op it is put in; CUDA_ERROR_OUT_OF_MEMORY when no address is
 * left. */
static CUresult gmem_op(int ordinal, size_t size, struct sim_node_op *op)
{
    struct sim_gmem *g = sim_gmem_new(&sim_devices[ordinal], size);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *op = (struct sim_node_op){.kind = SIM_NODE_MEM_ALLOC, .u.gmem = g};
    return CUDA_SUCCESS;
}

bool sim_gmem_capture_alloc(CUstream s, int ordinal, size_t size, CUdeviceptr *dptr, CUresult *err)
{
    struct sim_node_op op;
    if (!sim_capture_any())
        return false;
    if ((*err = gmem_op(ordinal, size, &op)))
        return true;
    bool captured = sim_capture_enqueue(s, &op, err);
    if (captured && !*err)
        *dptr = (CUdeviceptr)op.u.gmem->va;
    else
        sim_gmem_unref(op.u.gmem); /* not captured: the node did not take it */
    return captured;
}

bool sim_gmem_capture_free(CUstream s, CUdeviceptr dptr, CUresult *err)
{
    if (!sim_capture_any())
        return false;
    struct sim_gmem *g = sim_gmem_find((uintptr_t)dptr);
    if (!g) /* not a graph allocation: no free node can free it (the capture goes on) */
        return (*err = sim_capture_reject(s, CUDA_ERROR_INVALID_VALUE)) != CUDA_SUCCESS;
    struct sim_node_op op = {.kind = SIM_NODE_MEM_FREE, .u.gmem = g};
    sim_gmem_ref(g);
    bool captured = sim_capture_enqueue(s, &op, err);
    if (!captured || *err)
        sim_gmem_unref(g);
    return captured;
}

/* poolProps as cuGraphAddMemAllocNode accepts them: pinned memory on a
 * device, no IPC handle type; the device's ordinal, -1 otherwise. */
static int alloc_device(const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    const CUmemPoolProps *pp = &p->poolProps;
    if (pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
        sim_check_device(pp->location.id) != CUDA_SUCCESS)
        return -1;
    return pp->location.id;
}

/* The node's address in nodeParams->dptr; bytesize 0, a bad location or
 * access descriptors without a count: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    struct sim_node_op op;
    CUresult err = sim_check_init();
    if (err)
        return err;
    int dev = nodeParams ? alloc_device(nodeParams) : -1;
    if (dev < 0 || nodeParams->bytesize == 0 ||
        (nodeParams->accessDescCount && !nodeParams->accessDescs))
        return CUDA_ERROR_INVALID_VALUE;
    if ((err = gmem_op(dev, nodeParams->bytesize, &op)))
        return err;
    pthread_mutex_lock(&sim_graph_lock);
    err = sim_graph_add_node(hGraph, &op, dependencies, numDependencies, phGraphNode);
    pthread_mutex_unlock(&sim_graph_lock);
    if (err) {
        sim_gmem_unref(op.u.gmem);
        return err;
    }
    nodeParams->dptr = (CUdeviceptr)op.u.gmem->va;
    return CUDA_SUCCESS;
}

/* dptr must be the address of an allocation node's allocation that hGraph
 * does not free yet (cuGraphAddMemFreeNode: CUDA_ERROR_INVALID_VALUE for an
 * allocation freed twice in the same graph, an address no allocation node
 * returned, an invalid address). */
CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUdeviceptr dptr)
{
    CUresult err = sim_check_init();
    if (err)
        return err;
    struct sim_gmem *g = sim_gmem_find((uintptr_t)dptr);
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_node_op op = {.kind = SIM_NODE_MEM_FREE, .u.gmem = g};
    sim_gmem_ref(g);
    pthread_mutex_lock(&sim_graph_lock);
    err = sim_graph_frees(hGraph, g)
              ? CUDA_ERROR_INVALID_VALUE
              : sim_graph_add_node(hGraph, &op, dependencies, numDependencies, phGraphNode);
    pthread_mutex_unlock(&sim_graph_lock);
    if (err)
        sim_gmem_unref(g);
    return err;
}

/* The generic form (CUDA 12.3's cuGraphAddNode, cuda.h's cuGraphAddNode_v2)
 * for memory nodes only: nodeParams->alloc as cuGraphAddMemAllocNode (its
 * address in nodeParams->alloc.dptr), ->free as cuGraphAddMemFreeNode.
 * Edge data must be the default (zeroed) or NULL. Other node types are not
 * simulated: CUDA_ERROR_NOT_SUPPORTED, as the driver's fallback. */
CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies,
                                   const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                   CUgraphNodeParams *nodeParams)
{
    static const CUgraphEdgeData none;
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (memcmp(&dependencyData[i], &none, sizeof none) != 0)
            return CUDA_ERROR_INVALID_VALUE;
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
        return cuGraphAddMemAllocNode(phGraphNode, hGraph, dependencies, numDependencies,
                                      (CUDA_MEM_ALLOC_NODE_PARAMS *)&nodeParams->alloc);
    if (nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
        return cuGraphAddMemFreeNode(phGraphNode, hGraph, dependencies, numDependencies,
                                     nodeParams->free.dptr);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* CUDA 12.2's form, without edge data. */
#undef cuGraphAddNode
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUgraphNodeParams *nodeParams);
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUgraphNodeParams *nodeParams)
{
    return cuGraphAddNode_v2(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

/* The node's device, size and address; no access descriptors (the sim
 * keeps none: every device reaches every allocation). */
CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    struct sim_node_op op;
    if (sim_check_init())
        return sim_check_init();
    if (!params_out || !sim_graph_node_op(hNode, &op) || op.kind != SIM_NODE_MEM_ALLOC)
        return CUDA_ERROR_INVALID_VALUE;
    *params_out = (CUDA_MEM_ALLOC_NODE_PARAMS){0};
    params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params_out->poolProps.location.id = op.u.gmem->d->ordinal;
    params_out->bytesize = op.u.gmem->size;
    params_out->dptr = (CUdeviceptr)op.u.gmem->va;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    struct sim_node_op op;
    if (sim_check_init())
        return sim_check_init();
    if (!dptr_out || !sim_graph_node_op(hNode, &op) || op.kind != SIM_NODE_MEM_FREE)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = (CUdeviceptr)op.u.gmem->va;
    return CUDA_SUCCESS;
}

/* The device's graph pool releases what no live graph allocation uses
 * (README.md "Graph memory nodes": not what a launch that ran out of memory
 * took, as on an H200). */
CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_check_device(device)))
        return err;
    sim_graph_mem_trim(&sim_devices[device]);
    return CUDA_SUCCESS;
}

/* The device's graph pool (sim_graph_mem_usage): reserved, the bytes of its
 * reserve; used, that less what a launch that ran out of memory took; and
 * their high watermarks since the last reset. */
CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_check_device(device)))
        return err;
    if (!value || attr < CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT ||
        attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    size_t v[4];
    sim_graph_mem_usage(&sim_devices[device], &v[0], &v[2], &v[1], &v[3]);
    /* cuda.h's order: USED_MEM_CURRENT, USED_MEM_HIGH, RESERVED_MEM_CURRENT,
     * RESERVED_MEM_HIGH */
    *(cuuint64_t *)value = v[attr - CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT];
    return CUDA_SUCCESS;
}

/* Only a high watermark can be set, and only to 0 (cuda.h): it becomes the
 * current value. */
CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_check_device(device)))
        return err;
    if ((attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) ||
        !value || *(cuuint64_t *)value != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_graph_mem_reset_high(&sim_devices[device], attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH);
    return CUDA_SUCCESS;
}
