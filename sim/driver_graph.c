/* CUDA graphs of the simulated driver (CUDA Driver API, "Graph Management"):
 * a graph is its nodes in the order they were added (a valid topological
 * order: a node is added after its dependencies); an executable graph is a
 * copy of their operations, which a launch (driver_graph_launch.c) runs in
 * that order. Nodes come from stream capture (driver_capture.c, above this
 * file) and, for graph memory nodes, from cuGraphAddMemAllocNode /
 * cuGraphAddMemFreeNode (driver_graph_mem.c). README.md, "Stream capture
 * and graphs", "Graph memory nodes". */
#include "driver_capture.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_MAGIC 0x47525048u /* "GRPH" */
#define NODE_MAGIC 0x4e4f4445u  /* "NODE" */
#define EXEC_MAGIC 0x47455845u  /* "GEXE" */

struct CUgraphNode_st {
    unsigned magic;
    struct sim_node_op op;
    CUgraphNode *deps; /* the nodes it depends on */
    size_t ndeps;
};

struct CUgraph_st {
    unsigned magic;
    bool capturing;     /* a capture's, until it ends: not the program's to destroy */
    bool has_mem;       /* a graph memory node is one of its nodes */
    CUgraphExec exec;   /* with has_mem: its one executable graph, or NULL */
    CUgraphNode *nodes; /* in the order they were added */
    size_t n, cap;
};

struct CUgraphExec_st {
    unsigned magic;
    struct sim_node_op *ops; /* the graph's nodes' operations at instantiation */
    size_t n;
    bool has_kernel;
    bool auto_free; /* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */
    CUgraph graph;  /* the graph with memory nodes it was made of, while it exists */
};

#define FLAGS_KNOWN                                                                                \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | \
     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

static bool is_graph(CUgraph g)
{
    return g && g->magic == GRAPH_MAGIC;
}

static bool is_node(CUgraphNode n)
{
    return n && n->magic == NODE_MAGIC;
}

static bool is_exec(CUgraphExec x)
{
    return x && x->magic == EXEC_MAGIC;
}

pthread_mutex_t sim_graph_lock = PTHREAD_MUTEX_INITIALIZER;

CUgraph sim_graph_new(bool capturing)
{
    CUgraph g = calloc(1, sizeof *g);
    if (g) {
        g->magic = GRAPH_MAGIC;
        g->capturing = capturing;
    }
    return g;
}

void sim_graph_captured(CUgraph g)
{
    g->capturing = false;
}

static bool is_mem_op(const struct sim_node_op *op)
{
    return op->kind == SIM_NODE_MEM_ALLOC || op->kind == SIM_NODE_MEM_FREE;
}

static void free_node(CUgraphNode n)
{
    if (is_mem_op(&n->op))
        sim_gmem_unref(n->op.u.gmem);
    n->magic = 0;
    free(n->deps);
    free(n);
}

CUgraphNode sim_graph_add(CUgraph g, const struct sim_node_op *op, const CUgraphNode *deps,
                          size_t ndeps)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        CUgraphNode *nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return NULL;
        g->nodes = nodes;
        g->cap = cap;
    }
    CUgraphNode n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    if (ndeps && !(n->deps = malloc(ndeps * sizeof *deps))) {
        free(n);
        return NULL;
    }
    n->magic = NODE_MAGIC;
    n->op = *op;
    if (ndeps)
        memcpy(n->deps, deps, ndeps * sizeof *deps);
    n->ndeps = ndeps;
    g->nodes[g->n++] = n;
    g->has_mem |= is_mem_op(op);
    return n;
}

void sim_graph_free(CUgraph g)
{
    for (size_t i = 0; i < g->n; i++)
        free_node(g->nodes[i]);
    free(g->nodes);
    g->magic = 0;
    free(g);
}

/* An empty graph; flags must be 0 (CUDA_ERROR_INVALID_VALUE otherwise). */
CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    if (sim_check_init())
        return sim_check_init();
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    CUgraph g = sim_graph_new(false);
    pthread_mutex_unlock(&sim_graph_lock);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = g;
    return CUDA_SUCCESS;
}

/* Frees hGraph and its nodes; a graph still being captured into cannot be
 * destroyed (CUDA_ERROR_INVALID_VALUE, as for a bad handle). */
CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    if (sim_check_init())
        return sim_check_init();
    pthread_mutex_lock(&sim_graph_lock);
    bool ok = is_graph(hGraph) && !hGraph->capturing;
    if (ok && hGraph->exec)
        hGraph->exec->graph = NULL;
    if (ok)
        sim_graph_free(hGraph);
    pthread_mutex_unlock(&sim_graph_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Copies up to *count of n handles from src into dst (NULL: *count = n,
 * the number there is); unused slots of dst are set to NULL and *count to
 * the number copied, as cuGraphGetNodes documents. */
static void list_out(CUgraphNode *const src, size_t n, CUgraphNode *dst, CUgraphEdgeData *edges,
                     size_t *count)
{
    if (!dst) {
        *count = n;
        return;
    }
    for (size_t i = 0; i < *count; i++) {
        dst[i] = i < n ? src[i] : NULL;
        if (edges)
            memset(&edges[i], 0, sizeof edges[i]);
    }
    if (*count > n)
        *count = n;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    if (sim_check_init())
        return sim_check_init();
    pthread_mutex_lock(&sim_graph_lock);
    bool ok = is_graph(hGraph) && numNodes;
    if (ok)
        list_out(hGraph->nodes, hGraph->n, nodes, NULL, numNodes);
    pthread_mutex_unlock(&sim_graph_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The nodes hNode depends on; edgeData (every edge the default one, zeroed)
 * only with dependencies. */
CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
                                               CUgraphEdgeData *edgeData, size_t *numDependencies)
{
    if (sim_check_init())
        return sim_check_init();
    pthread_mutex_lock(&sim_graph_lock);
    bool ok = is_node(hNode) && numDependencies && (!edgeData || dependencies);
    if (ok)
        list_out(hNode->deps, hNode->ndeps, dependencies, edgeData, numDependencies);
    pthread_mutex_unlock(&sim_graph_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                            size_t *numDependencies)
{
    return cuGraphNodeGetDependencies_v2(hNode, dependencies, NULL, numDependencies);
}

static CUgraphExec instantiate(CUgraph g, bool auto_free)
{
    CUgraphExec x = calloc(1, sizeof *x);
    if (!x || (g->n && !(x->ops = malloc(g->n * sizeof *x->ops)))) {
        free(x);
        return NULL;
    }
    for (size_t i = 0; i < g->n; i++) {
        x->ops[i] = g->nodes[i]->op;
        x->has_kernel |= x->ops[i].kind == SIM_NODE_KERNEL;
        if (is_mem_op(&x->ops[i]))
            sim_gmem_ref(x->ops[i].u.gmem);
    }
    x->n = g->n;
    x->auto_free = auto_free;
    if (g->has_mem) {
        x->graph = g;
        g->exec = x;
    }
    x->magic = EXEC_MAGIC;
    return x;
}

/* An executable copy of hGraph's nodes. flags: CUgraphInstantiate_flags but
 * UPLOAD (cuGraphInstantiateWithParams only); DEVICE_LAUNCH not with
 * AUTO_FREE_ON_LAUNCH; else CUDA_ERROR_INVALID_VALUE. A graph with memory
 * nodes has one executable graph at a time (cuGraphAddMemAllocNode: "Only
 * one instantiation of the graph may exist at any point in time"): a
 * second is CUDA_ERROR_NOT_SUPPORTED while the first exists (what an H200's
 * driver 580.159.04 answered, tests/gpu/probe_graphmem.c). */
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    const unsigned long long both =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    if (sim_check_init())
        return sim_check_init();
    if (!phGraphExec || (flags & ~(unsigned long long)FLAGS_KNOWN) || (flags & both) == both)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    bool known = is_graph(hGraph), ok = known && !(hGraph->has_mem && hGraph->exec);
    CUgraphExec x =
        ok ? instantiate(hGraph, flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) : NULL;
    pthread_mutex_unlock(&sim_graph_lock);
    if (!x)
        return ok      ? CUDA_ERROR_OUT_OF_MEMORY
               : known ? CUDA_ERROR_NOT_SUPPORTED
                       : CUDA_ERROR_INVALID_VALUE;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

/* The CUDA 10 and 11.0 forms: no error node and an empty log on success. */
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    CUresult err = cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
    if (phErrorNode)
        *phErrorNode = NULL;
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return err;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

bool sim_graph_exec_ops(CUgraphExec x, const struct sim_node_op **ops, size_t *n, bool *has_kernel)
{
    if (!is_exec(x))
        return false;
    *ops = x->ops;
    *n = x->n;
    *has_kernel = x->has_kernel;
    return true;
}

bool sim_graph_exec_auto_free(CUgraphExec x)
{
    return is_exec(x) && x->auto_free;
}

/* Its graph allocations stay as they are (live ones until freed). */
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    if (sim_check_init())
        return sim_check_init();
    pthread_mutex_lock(&sim_graph_lock);
    bool ok = is_exec(hGraphExec);
    if (ok) {
        hGraphExec->magic = 0;
        if (hGraphExec->graph)
            hGraphExec->graph->exec = NULL;
    }
    pthread_mutex_unlock(&sim_graph_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < hGraphExec->n; i++)
        if (is_mem_op(&hGraphExec->ops[i]))
            sim_gmem_unref(hGraphExec->ops[i].u.gmem);
    free(hGraphExec->ops);
    free(hGraphExec);
    return CUDA_SUCCESS;
}

/* ---- nodes added by the program ---- */

CUresult sim_graph_add_node(CUgraph g, const struct sim_node_op *op, const CUgraphNode *deps,
                            size_t ndeps, CUgraphNode *out)
{
    if (!is_graph(g) || g->capturing || !out || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < ndeps; i++) {
        bool mine = false;
        for (size_t k = 0; k < g->n && !mine; k++)
            mine = g->nodes[k] == deps[i];
        for (size_t k = 0; k < i && mine; k++)
            mine = deps[k] != deps[i]; /* no duplicate entries */
        if (!mine)
            return CUDA_ERROR_INVALID_VALUE;
    }
    CUgraphNode n = sim_graph_add(g, op, deps, ndeps);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = n;
    return CUDA_SUCCESS;
}

bool sim_graph_node_op(CUgraphNode n, struct sim_node_op *op)
{
    pthread_mutex_lock(&sim_graph_lock);
    bool ok = is_node(n);
    if (ok)
        *op = n->op;
    pthread_mutex_unlock(&sim_graph_lock);
    return ok;
}

bool sim_graph_frees(CUgraph g, const struct sim_gmem *gm)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->op.kind == SIM_NODE_MEM_FREE && g->nodes[i]->op.u.gmem == gm)
            return true;
    return false;
}

/* The node types of cuda.h (CUgraphNodeType) of the sim's operations. */
CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    static const CUgraphNodeType types[] = {
        [SIM_NODE_MEMSET] = CU_GRAPH_NODE_TYPE_MEMSET,
        [SIM_NODE_MEMCPY] = CU_GRAPH_NODE_TYPE_MEMCPY,
        [SIM_NODE_MEMCPY2D] = CU_GRAPH_NODE_TYPE_MEMCPY,
        [SIM_NODE_KERNEL] = CU_GRAPH_NODE_TYPE_KERNEL,
        [SIM_NODE_EVENT_RECORD] = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
        [SIM_NODE_EVENT_WAIT] = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
        [SIM_NODE_HOST] = CU_GRAPH_NODE_TYPE_HOST,
        [SIM_NODE_WRITE32] = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
        [SIM_NODE_MEM_ALLOC] = CU_GRAPH_NODE_TYPE_MEM_ALLOC,
        [SIM_NODE_MEM_FREE] = CU_GRAPH_NODE_TYPE_MEM_FREE,
    };
    struct sim_node_op op;
    if (sim_check_init())
        return sim_check_init();
    if (!type || !sim_graph_node_op(hNode, &op))
        return CUDA_ERROR_INVALID_VALUE;
    *type = types[op.kind];
    return CUDA_SUCCESS;
}
