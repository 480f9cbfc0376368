/* graphmem.c: graph memory nodes (CUDA Programming Guide, "Graph memory
 * nodes"; the driver API reference of cuGraphAddMemAllocNode). A
 * stream-ordered allocation on a capturing stream, or cuGraphAddMemAllocNode,
 * only makes an allocation node: an address, no memory (the stream-ordered
 * hooks record nothing then: vti_graph_capturing). Each launch of an
 * executable graph takes the memory of its allocation nodes and frees that
 * of its free nodes, with no API call of its own; so at instantiation the
 * graph's memory nodes are read back from the driver (cuGraphGetNodes,
 * cuGraphNodeGetType, cuGraph{MemAlloc,MemFree}NodeGetParams) in an order
 * their dependencies allow, and each successful launch records them as
 * allocations of the api cuGraphLaunch and frees, in that order, with the
 * call stack that made the node. interpose/README.md, "Graph memory nodes". */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

#include "regionmap.h"
#include "vti_internal.h"

/* The old ABIs (cuda.h maps cuGraphInstantiate to cuGraphInstantiateWithFlags
 * and cuGraphAddNode to cuGraphAddNode_v2). */
#undef cuGraphInstantiate
#undef cuGraphAddNode
VTI_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           CUgraphNodeParams *nodeParams);
VTI_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               CUgraphNode *phErrorNode, char *logBuffer,
                                               size_t bufferSize);
VTI_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUgraphNode *phErrorNode, char *logBuffer,
                                                  size_t bufferSize);
VTI_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
                                                              CUgraph hGraph,
                                                              CUDA_GRAPH_INSTANTIATE_PARAMS *p);
VTI_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

/* One memory node of an executable graph. */
typedef struct mem_op {
    bool alloc; /* else a free */
    int device;
    uint64_t addr, size; /* size: an allocation's */
    uint32_t stack;      /* the allocation node's maker's */
} mem_op;

typedef struct plan {
    bool auto_free; /* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */
    size_t n;
    mem_op ops[]; /* in launch order */
} plan;

/* ---- reading a graph's memory nodes ------------------------------------ */

typedef struct graph_api {
    PFN_cuGraphGetNodes_v10000 nodes;
    PFN_cuGraphNodeGetType_v10000 type;
    PFN_cuGraphNodeGetDependencies_v12030 deps; /* with edge data */
    PFN_cuGraphMemAllocNodeGetParams_v11040 alloc;
    PFN_cuGraphMemFreeNodeGetParams_v11040 free;
} graph_api;

static bool graph_api_get(graph_api *a)
{
    a->nodes = VTI_REAL_DRIVER(cuGraphGetNodes, 10000, "cuGraphGetNodes");
    a->type = VTI_REAL_DRIVER(cuGraphNodeGetType, 10000, "cuGraphNodeGetType");
    a->deps = VTI_REAL_DRIVER(cuGraphNodeGetDependencies, 12030, "cuGraphNodeGetDependencies_v2");
    a->alloc = VTI_REAL_DRIVER(cuGraphMemAllocNodeGetParams, 11040, "cuGraphMemAllocNodeGetParams");
    a->free = VTI_REAL_DRIVER(cuGraphMemFreeNodeGetParams, 11040, "cuGraphMemFreeNodeGetParams");
    return a->nodes && a->type && a->deps && a->alloc && a->free;
}

/* g's nodes into *out (malloc'd), their number in *n; false on failure. */
static bool graph_nodes(const graph_api *a, CUgraph g, CUgraphNode **out, size_t *n)
{
    *out = NULL;
    if (a->nodes(g, NULL, n) != CUDA_SUCCESS || *n == 0)
        return false;
    size_t got = *n;
    if (!(*out = malloc(got * sizeof **out)) || a->nodes(g, *out, &got) != CUDA_SUCCESS ||
        got != *n) {
        free(*out);
        *out = NULL;
        return false;
    }
    return true;
}

/* A binary min-heap of node indices (the ready nodes of dependency_order). */
typedef struct heap {
    size_t *v, n;
} heap;

static void heap_push(heap *h, size_t x)
{
    size_t i = h->n++;
    for (; i && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

static size_t heap_pop(heap *h)
{
    size_t top = h->v[0], last = h->v[--h->n], i = 0;
    for (size_t c; (c = 2 * i + 1) < h->n; i = c) {
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= last)
            break;
        h->v[i] = h->v[c];
    }
    h->v[i] = last;
    return top;
}

/* The edges of nodes[0..n) as indices: edge k runs from[k] -> to[k] (to
 * depends on from); *ne of them, in malloc'd arrays. false when a
 * dependency cannot be read or is not one of the nodes. */
static bool graph_edges(const graph_api *a, CUgraphNode *nodes, size_t n, size_t **from,
                        size_t **to, size_t *ne)
{
    vti_rmap index = {0};
    size_t cap = 0;
    bool ok = true;
    *from = *to = NULL;
    *ne = 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = vti_rmap_insert(&index, (uintptr_t)nodes[i], i, 0, 0) == 0;
    for (size_t j = 0; ok && j < n; j++) {
        size_t nd = 0;
        ok = a->deps(nodes[j], NULL, NULL, &nd) == CUDA_SUCCESS;
        CUgraphNode *d = ok && nd ? malloc(nd * sizeof *d) : NULL;
        ok = ok && (!nd || (d && a->deps(nodes[j], d, NULL, &nd) == CUDA_SUCCESS));
        for (size_t e = 0; ok && e < nd; e++) {
            vti_rmap_slot *s = vti_rmap_find(&index, (uintptr_t)d[e]);
            if (*ne == cap) {
                cap = cap ? 2 * cap : 64;
                size_t *f = realloc(*from, cap * sizeof *f),
                       *t = f ? realloc(*to, cap * sizeof *t) : NULL;
                *from = f ? f : *from;
                *to = t ? t : *to;
                ok = f && t;
            }
            if (ok && (ok = s != NULL)) {
                (*from)[*ne] = s->a;
                (*to)[(*ne)++] = j;
            }
        }
        free(d);
    }
    vti_rmap_free(&index);
    return ok;
}

/* nodes[0..n) reordered so that each comes after the nodes it depends on
 * (Kahn's algorithm, the lowest index first among those ready: a graph
 * whose nodes were added in dependency order keeps its order). false when
 * a dependency cannot be read or there is a cycle. */
static bool dependency_order(const graph_api *a, CUgraphNode *nodes, size_t n)
{
    size_t *from, *to, ne, *waiting = calloc(n, sizeof *waiting),
                           *first = calloc(n + 1, sizeof *first);
    CUgraphNode *done = malloc(n * sizeof *done);
    heap h = {malloc(n * sizeof(size_t)), 0};
    bool ok = graph_edges(a, nodes, n, &from, &to, &ne) && waiting && first && done && h.v;
    size_t *out = ok ? malloc((ne ? ne : 1) * sizeof *out) : NULL; /* dependents, by from */
    ok = ok && out;
    for (size_t k = 0; ok && k < ne; k++) {
        waiting[to[k]]++;
        first[from[k] + 1]++;
    }
    for (size_t i = 0; ok && i < n; i++)
        first[i + 1] += first[i];
    size_t *fill = ok ? calloc(n, sizeof *fill) : NULL;
    ok = ok && fill;
    for (size_t k = 0; ok && k < ne; k++)
        out[first[from[k]] + fill[from[k]]++] = to[k];
    free(fill);
    for (size_t i = 0; ok && i < n; i++)
        if (!waiting[i])
            heap_push(&h, i);
    size_t placed = 0;
    while (ok && h.n) {
        size_t i = heap_pop(&h);
        done[placed++] = nodes[i];
        for (size_t k = first[i]; k < first[i + 1]; k++)
            if (--waiting[out[k]] == 0)
                heap_push(&h, out[k]);
    }
    ok = ok && placed == n; /* else a cycle: not a graph the driver accepts */
    if (ok)
        memcpy(nodes, done, n * sizeof *nodes);
    free(from);
    free(to);
    free(out);
    free(waiting);
    free(first);
    free(done);
    free(h.v);
    return ok;
}

/* Node x as a mem_op into *op; false for any other kind of node. */
static bool node_op(const graph_api *a, CUgraphNode x, mem_op *op)
{
    CUgraphNodeType t;
    if (a->type(x, &t) != CUDA_SUCCESS)
        return false;
    if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
        if (a->alloc(x, &p) != CUDA_SUCCESS)
            return false;
        *op = (mem_op){true, p.poolProps.location.id, p.dptr, p.bytesize,
                       vti_graph_node_stack(p.dptr)};
        return true;
    }
    CUdeviceptr addr = 0;
    if (t != CU_GRAPH_NODE_TYPE_MEM_FREE || a->free(x, &addr) != CUDA_SUCCESS)
        return false;
    *op = (mem_op){false, 0, addr, 0, 0};
    return true;
}

/* The plan of graph g (NULL when it has no memory node or cannot be read). */
static plan *plan_of(CUgraph g, bool auto_free)
{
    graph_api a;
    CUgraphNode *nodes = NULL;
    size_t n = 0, k = 0;
    plan *p = NULL;
    if (!graph_api_get(&a) || !graph_nodes(&a, g, &nodes, &n))
        return NULL;
    mem_op op;
    for (size_t i = 0; i < n && !k; i++)
        k = node_op(&a, nodes[i], &op);
    if (k && dependency_order(&a, nodes, n) && (p = malloc(sizeof *p + n * sizeof p->ops[0]))) {
        p->auto_free = auto_free;
        p->n = 0;
        for (size_t i = 0; i < n; i++)
            if (node_op(&a, nodes[i], &p->ops[p->n]))
                p->n++;
    }
    free(nodes);
    return p;
}

/* ---- instantiation, launch, destruction ---------------------------------- */

/* After a successful instantiation of g as x: x's plan, replacing any an
 * executable graph at the same address had. */
static void instantiated(CUgraphExec x, CUgraph g, bool auto_free)
{
    free(vti_graph_plan_swap((uintptr_t)x, plan_of(g, auto_free)));
}

#define INSTANTIATE_HOOK(F, PTYPE, CALL, EXEC, GRAPH, AUTO_FREE)                                   \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter() && real;                                                         \
    CUresult rc = real ? (CALL) : NO_DRIVER;                                                       \
    if (outer && rc == CUDA_SUCCESS)                                                               \
        instantiated(*(EXEC), (GRAPH), (AUTO_FREE));                                               \
    vti_leave();                                                                                   \
    return rc

typedef CUresult (*inst_log_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*inst_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*inst_params_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);

/* Both ABIs with an error node and a log (CUDA 10.0, 11.0). */
static CUresult instantiate_log(enum vti_fn f, CUgraphExec *x, CUgraph g, CUgraphNode *err_node,
                                char *log, size_t log_size)
{
    INSTANTIATE_HOOK(f, inst_log_fn, real(x, g, err_node, log, log_size), x, g, false);
}

VTI_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               CUgraphNode *phErrorNode, char *logBuffer,
                                               size_t bufferSize)
{
    return instantiate_log(F_cuGraphInstantiate, phGraphExec, hGraph, phErrorNode, logBuffer,
                           bufferSize);
}

VTI_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUgraphNode *phErrorNode, char *logBuffer,
                                                  size_t bufferSize)
{
    return instantiate_log(F_cuGraphInstantiate_v2, phGraphExec, hGraph, phErrorNode, logBuffer,
                           bufferSize);
}

VTI_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                        unsigned long long flags)
{
    INSTANTIATE_HOOK(F_cuGraphInstantiateWithFlags, inst_flags_fn, real(phGraphExec, hGraph, flags),
                     phGraphExec, hGraph, flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
}

/* Both cuGraphInstantiateWithParams hooks. */
static CUresult instantiate_params(enum vti_fn f, CUgraphExec *x, CUgraph g,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    INSTANTIATE_HOOK(f, inst_params_fn, real(x, g, p), x, g,
                     p && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
}

VTI_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                         CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(F_cuGraphInstantiateWithParams, phGraphExec, hGraph, p);
}

VTI_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
                                                              CUgraph hGraph,
                                                              CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(F_cuGraphInstantiateWithParams_ptsz, phGraphExec, hGraph, p);
}

/* A launch of p on stream returned rc (order lock held): on success, with
 * AUTO_FREE_ON_LAUNCH the allocations an earlier launch left live are freed
 * first, then each memory node is recorded in order; a launch without the
 * memory is one failed allocation, on the device of its first allocation
 * node, of the bytes all its allocation nodes there ask for (the rule of
 * the sim's ledger, sim/README.md "Graph memory nodes"), at the launch's
 * call stack. */
static void launched(const plan *p, CUresult rc, uint64_t stream, uint32_t stack)
{
    const mem_op *first = NULL;
    for (size_t i = 0; i < p->n && !first; i++)
        first = p->ops[i].alloc ? &p->ops[i] : NULL;
    if (rc == CUDA_ERROR_OUT_OF_MEMORY && first) {
        uint64_t asked = 0;
        for (size_t i = 0; i < p->n; i++)
            asked += p->ops[i].alloc && p->ops[i].device == first->device ? p->ops[i].size : 0;
        vti_rec_failed(asked, (int)rc, first->device, VT_API_CU_GRAPH_LAUNCH, stack);
    }
    if (rc != CUDA_SUCCESS)
        return;
    for (size_t i = 0; i < p->n && p->auto_free; i++)
        if (p->ops[i].alloc)
            vti_rec_free(p->ops[i].addr, VT_SPACE_ADDR, vti_stamp());
    for (size_t i = 0; i < p->n; i++) {
        const mem_op *o = &p->ops[i];
        if (o->alloc)
            vti_rec_alloc(o->addr, o->size, o->device, VT_API_CU_GRAPH_LAUNCH, stream, o->stack);
        else
            vti_rec_free(o->addr, VT_SPACE_ADDR, vti_stamp());
    }
}

typedef CUresult (*launch_fn)(CUgraphExec, CUstream);

/* Both cuGraphLaunch hooks: a graph without memory nodes costs one lookup. */
static CUresult launch(enum vti_fn f, CUgraphExec x, CUstream s, uint64_t stream)
{
    launch_fn real = (launch_fn)vti_real(f);
    bool outer = vti_hook_enter() && real;
    const plan *p = outer ? vti_graph_plan_find((uintptr_t)x) : NULL;
    uint32_t stack = p ? vti_hook_stack() : 0;
    if (p)
        vti_order_lock();
    CUresult rc = real ? real(x, s) : NO_DRIVER;
    if (p) {
        launched(p, rc, stream, stack);
        vti_order_unlock();
    }
    vti_leave();
    return rc;
}

VTI_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return launch(F_cuGraphLaunch, hGraphExec, hStream, (uint64_t)(uintptr_t)hStream);
}

VTI_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return launch(F_cuGraphLaunch_ptsz, hGraphExec, hStream,
                  (uint64_t)(uintptr_t)(hStream ? hStream : CU_STREAM_PER_THREAD));
}

typedef CUresult (*exec_destroy_fn)(CUgraphExec);

/* The plan goes with the executable graph; its allocations stay live. */
VTI_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    exec_destroy_fn real = (exec_destroy_fn)vti_real(F_cuGraphExecDestroy);
    vti_enter();
    CUresult rc = real ? real(hGraphExec) : NO_DRIVER;
    if (rc == CUDA_SUCCESS)
        free(vti_graph_plan_swap((uintptr_t)hGraphExec, NULL));
    vti_leave();
    return rc;
}

typedef CUresult (*add_alloc_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 CUDA_MEM_ALLOC_NODE_PARAMS *);

/* The node's address and the call stack that made it (its launches'). */
VTI_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode *dependencies,
                                                   size_t numDependencies,
                                                   CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    add_alloc_fn real = (add_alloc_fn)vti_real(F_cuGraphAddMemAllocNode);
    bool outer = vti_hook_enter() && real;
    uint32_t stack = outer ? vti_hook_stack() : 0;
    CUresult rc =
        real ? real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams) : NO_DRIVER;
    if (outer && rc == CUDA_SUCCESS && nodeParams)
        vti_graph_node_made(nodeParams->dptr, stack);
    vti_leave();
    return rc;
}

typedef CUresult (*add_node_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                CUgraphNodeParams *);
typedef CUresult (*add_node2_fn)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                 const CUgraphEdgeData *, size_t, CUgraphNodeParams *);

/* The generic form: an allocation node's address and maker, as above. */
#define ADD_NODE_HOOK(F, PTYPE, CALL, PARAMS)                                                      \
    PTYPE real = (PTYPE)vti_real(F);                                                               \
    bool outer = vti_hook_enter() && real;                                                         \
    uint32_t stack = outer ? vti_hook_stack() : 0;                                                 \
    CUresult rc = real ? (CALL) : NO_DRIVER;                                                       \
    if (outer && rc == CUDA_SUCCESS && (PARAMS) && (PARAMS)->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) \
        vti_graph_node_made((PARAMS)->alloc.dptr, stack);                                          \
    vti_leave();                                                                                   \
    return rc

VTI_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           CUgraphNodeParams *nodeParams)
{
    ADD_NODE_HOOK(F_cuGraphAddNode, add_node_fn,
                  real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams), nodeParams);
}

VTI_EXPORT CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies,
                                              const CUgraphEdgeData *dependencyData,
                                              size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    ADD_NODE_HOOK(
        F_cuGraphAddNode_v2, add_node2_fn,
        real(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams),
        nodeParams);
}

VTI_CHECK_HOOKS(VTI_GRAPH_HOOKS)
