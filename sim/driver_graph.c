/* CUDA graphs of the simulated driver (CUDA Driver API, "Graph Management"):
 * a graph is its nodes in the order they were added (a valid topological
 * order: a node is added after its dependencies); an executable graph is a
 * copy of their operations, which a launch (driver_graph_launch.c) runs in
 * that order. Nodes come from stream capture (driver_capture.c, above this
 * file). README.md, "Stream capture and graphs". */
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
    CUgraphNode *nodes; /* in the order they were added */
    size_t n, cap;
};

struct CUgraphExec_st {
    unsigned magic;
    struct sim_node_op *ops; /* the graph's nodes' operations at instantiation */
    size_t n;
    bool has_kernel;
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

static void free_node(CUgraphNode n)
{
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

static CUgraphExec instantiate(CUgraph g)
{
    CUgraphExec x = calloc(1, sizeof *x);
    if (!x || (g->n && !(x->ops = malloc(g->n * sizeof *x->ops)))) {
        free(x);
        return NULL;
    }
    for (size_t i = 0; i < g->n; i++) {
        x->ops[i] = g->nodes[i]->op;
        x->has_kernel |= x->ops[i].kind == SIM_NODE_KERNEL;
    }
    x->n = g->n;
    x->magic = EXEC_MAGIC;
    return x;
}

/* An executable copy of hGraph's nodes. flags: CUgraphInstantiate_flags but
 * UPLOAD (cuGraphInstantiateWithParams only); DEVICE_LAUNCH not with
 * AUTO_FREE_ON_LAUNCH; else CUDA_ERROR_INVALID_VALUE. The sim has no graph
 * memory nodes, so AUTO_FREE_ON_LAUNCH has nothing to free. */
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
    bool ok = is_graph(hGraph);
    CUgraphExec x = ok ? instantiate(hGraph) : NULL;
    pthread_mutex_unlock(&sim_graph_lock);
    if (!x)
        return ok ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
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

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    if (sim_check_init())
        return sim_check_init();
    if (!is_exec(hGraphExec))
        return CUDA_ERROR_INVALID_VALUE;
    hGraphExec->magic = 0;
    free(hGraphExec->ops);
    free(hGraphExec);
    return CUDA_SUCCESS;
}
