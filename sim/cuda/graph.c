/* SPDX-License-Identifier: Apache-2.0 */
/* Graphs: building (kernel, memcpy, memset, host, empty, event and memory nodes), instantiation
 * and launch. Nodes are kept in creation order, which is a topological order since a node's
 * dependencies must exist when it is added; a launch runs them in that order on the stream. */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>

CUresult gsim_cu_graph_arg(CUgraph g)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(g, GSIM_CU_GRAPH) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult gsim_cu_graph_node_arg(CUgraphNode n)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(n, GSIM_CU_GRAPH_NODE) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSIM_CU_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (phGraph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph g = gsim_cu_obj_new(GSIM_CU_GRAPH);
    if (g == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_init(&g->mu, NULL);
    *phGraph = g;
    return CUDA_SUCCESS;
}

static void node_free(CUgraphNode n)
{
    if (n->op.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && n->op.alloc != NULL)
        gsim_cu_graph_alloc_unref(n->op.alloc);
    free(n->deps);
    gsim_cu_obj_free(n);
}

GSIM_CU_API CUresult cuGraphDestroy(CUgraph hGraph)
{
    CUresult result = gsim_cu_graph_arg(hGraph);
    if (result != CUDA_SUCCESS)
        return result;
    for (size_t i = 0; i < hGraph->n_nodes; i++)
        node_free(hGraph->nodes[i]);
    free(hGraph->nodes);
    pthread_mutex_destroy(&hGraph->mu);
    gsim_cu_obj_free(hGraph);
    return CUDA_SUCCESS;
}

/* Checks that every dependency is a distinct node of g. Call with g->mu held. */
static CUresult check_deps_locked(CUgraph g, const CUgraphNode *deps, size_t n)
{
    if (n > 0 && deps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if (!gsim_cu_obj_valid(deps[i], GSIM_CU_GRAPH_NODE) || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++) {
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

/* Adds a node doing op to g after deps. */
static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n_deps,
                         const node_op_t *op)
{
    CUresult result = gsim_cu_graph_arg(g);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(out);
    pthread_mutex_lock(&g->mu);
    result = check_deps_locked(g, deps, n_deps);
    CUgraphNode n = NULL;
    if (result == CUDA_SUCCESS && g->n_nodes == g->cap_nodes) {
        size_t cap = g->cap_nodes != 0 ? g->cap_nodes * 2 : 16;
        CUgraphNode *nodes = realloc(g->nodes, cap * sizeof(*nodes));
        if (nodes != NULL) {
            g->nodes = nodes;
            g->cap_nodes = cap;
        } else {
            result = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (result == CUDA_SUCCESS) {
        n = gsim_cu_obj_new(GSIM_CU_GRAPH_NODE);
        if (n == NULL || (n_deps > 0 && (n->deps = malloc(n_deps * sizeof(*deps))) == NULL))
            result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (result == CUDA_SUCCESS) {
        n->graph = g;
        n->op = *op;
        n->n_deps = n_deps;
        if (n_deps > 0)
            memcpy(n->deps, deps, n_deps * sizeof(*deps));
        g->nodes[g->n_nodes++] = n;
        *out = n;
    } else if (n != NULL) {
        gsim_cu_obj_free(n);
    }
    pthread_mutex_unlock(&g->mu);
    return result;
}

/* ---- kernel nodes ---- */

CUresult gsim_cu_graph_kernel_op(const CUDA_KERNEL_NODE_PARAMS_v2 *p, node_op_t *op)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_resolve(p->ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    CUfunction f = p->kern != NULL ? (CUfunction)(void *)p->kern : p->func;
    gsim_cu_launchable_t fn;
    result = gsim_cu_function_launchable(f, ctx, &fn);
    if (result != CUDA_SUCCESS)
        return result;
    if (p->gridDimX == 0 || p->gridDimY == 0 || p->gridDimZ == 0 || p->blockDimX == 0 ||
        p->blockDimY == 0 || p->blockDimZ == 0 || (p->kernelParams != NULL && p->extra != NULL))
        return CUDA_ERROR_INVALID_VALUE;
    memset(op, 0, sizeof(*op));
    op->type = CU_GRAPH_NODE_TYPE_KERNEL;
    op->ctx = ctx;
    op->u.kernel = *p;
    op->u.kernel.func = f;
    op->u.kernel.ctx = ctx;
    return CUDA_SUCCESS;
}

CUDA_KERNEL_NODE_PARAMS_v2 gsim_cu_graph_kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS_v2){.func = p->func,
                                        .gridDimX = p->gridDimX,
                                        .gridDimY = p->gridDimY,
                                        .gridDimZ = p->gridDimZ,
                                        .blockDimX = p->blockDimX,
                                        .blockDimY = p->blockDimY,
                                        .blockDimZ = p->blockDimZ,
                                        .sharedMemBytes = p->sharedMemBytes,
                                        .kernelParams = p->kernelParams,
                                        .extra = p->extra};
}

GSIM_CU_API CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             size_t numDependencies,
                                             const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_arg(hGraph);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    node_op_t op;
    result = gsim_cu_graph_kernel_op(nodeParams, &op);
    if (result != CUDA_SUCCESS)
        return result;
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

GSIM_CU_API CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_KERNEL_NODE_PARAMS_v2 p = gsim_cu_graph_kernel_v2(nodeParams);
    return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

/* ---- memcpy, memset, host, empty and event nodes ---- */

GSIM_CU_API CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (copyParams == NULL || copyParams->reserved0 != NULL || copyParams->reserved1 != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .ctx = ctx, .u.copy = *copyParams};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

GSIM_CU_API CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                          CUcontext ctx)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (memsetParams == NULL ||
        (memsetParams->elementSize != 1 && memsetParams->elementSize != 2 &&
         memsetParams->elementSize != 4) ||
        memsetParams->width == 0 || memsetParams->height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_MEMSET, .ctx = ctx, .u.memset = *memsetParams};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

GSIM_CU_API CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    if (nodeParams == NULL || nodeParams->fn == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_HOST, .u.host = *nodeParams};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

GSIM_CU_API CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies)
{
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                               CUevent event, CUgraphNodeType type)
{
    int64_t t;
    if (gsim_cu_initialized() == CUDA_SUCCESS && gsim_cu_event_time(event, &t) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    node_op_t op = {.type = type, .u.event = event};
    return add_node(out, g, deps, n, &op);
}

GSIM_CU_API CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                               const CUgraphNode *dependencies,
                                               size_t numDependencies, CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

GSIM_CU_API CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             size_t numDependencies, CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* ---- memory nodes ---- */

GSIM_CU_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                            const CUgraphNode *dependencies, size_t numDependencies,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_arg(hGraph);
    if (result != CUDA_SUCCESS)
        return result;
    if (phGraphNode == NULL || nodeParams == NULL || nodeParams->bytesize == 0 ||
        nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_device(nodeParams->poolProps.location.id) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC, .alloc_params = *nodeParams};
    op.alloc_params.accessDescs = NULL;
    op.alloc_params.accessDescCount = 0;
    CUdeviceptr dptr;
    result = gsim_cu_graph_alloc_create(nodeParams->poolProps.location.id, nodeParams->bytesize,
                                        &op.alloc, &dptr);
    if (result != CUDA_SUCCESS)
        return result;
    op.alloc_params.dptr = dptr;
    result = add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
    if (result != CUDA_SUCCESS) {
        gsim_cu_graph_alloc_unref(op.alloc);
        return result;
    }
    nodeParams->dptr = dptr;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           CUdeviceptr dptr)
{
    CUresult result = gsim_cu_graph_arg(hGraph);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)dptr, &a) != 0 || a.kind != GSIM_CU_MEM_GRAPH ||
        a.base != (uintptr_t)dptr)
        return CUDA_ERROR_INVALID_VALUE;
    node_op_t op = {.type = CU_GRAPH_NODE_TYPE_MEM_FREE, .u.free_ptr = dptr};
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, &op);
}

/* ---- graph queries ---- */

GSIM_CU_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    CUresult result = gsim_cu_graph_node_arg(hNode);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(type);
    *type = hNode->op.type;
    return CUDA_SUCCESS;
}

/* Lists nodes (all, or roots only) as cuGraphGetNodes documents: NULL nodes → count only. */
static CUresult list_nodes(CUgraph g, CUgraphNode *nodes, size_t *num, int roots_only)
{
    CUresult result = gsim_cu_graph_arg(g);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(num);
    pthread_mutex_lock(&g->mu);
    size_t count = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (roots_only && g->nodes[i]->n_deps > 0)
            continue;
        if (nodes != NULL && count < *num)
            nodes[count] = g->nodes[i];
        count++;
    }
    for (size_t i = count; nodes != NULL && i < *num; i++)
        nodes[i] = NULL;
    pthread_mutex_unlock(&g->mu);
    if (nodes == NULL || count < *num)
        *num = count;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    return list_nodes(hGraph, nodes, numNodes, 0);
}

GSIM_CU_API CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
                                         size_t *numRootNodes)
{
    return list_nodes(hGraph, rootNodes, numRootNodes, 1);
}

/* Removes node from the dependency list of every other node of its graph. g->mu held. */
static void forget_edges_locked(CUgraph g, CUgraphNode node)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        CUgraphNode n = g->nodes[i];
        for (size_t j = 0; j < n->n_deps;) {
            if (n->deps[j] == node)
                n->deps[j] = n->deps[--n->n_deps];
            else
                j++;
        }
    }
}

GSIM_CU_API CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
    CUresult result = gsim_cu_graph_node_arg(hNode);
    if (result != CUDA_SUCCESS)
        return result;
    CUgraph g = hNode->graph;
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i] == hNode) {
            memmove(&g->nodes[i], &g->nodes[i + 1], (g->n_nodes - i - 1) * sizeof(*g->nodes));
            g->n_nodes--;
            break;
        }
    }
    forget_edges_locked(g, hNode);
    pthread_mutex_unlock(&g->mu);
    node_free(hNode);
    return CUDA_SUCCESS;
}

CUresult gsim_cu_graph_node_of_type(CUgraphNode n, CUgraphNodeType type)
{
    CUresult result = gsim_cu_graph_node_arg(n);
    if (result == CUDA_SUCCESS && n->op.type != type)
        result = CUDA_ERROR_INVALID_VALUE;
    return result;
}
