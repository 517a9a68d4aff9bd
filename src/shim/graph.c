/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory nodes: an instantiated graph's allocation nodes are charged when it is launched
 * (refused with CUDA_ERROR_OUT_OF_MEMORY, launching nothing, when they do not fit). Allocations
 * freed by a free node of the same graph are returned after the launch; the others stay charged
 * until cuMemFree/cuMemFreeAsync. A node whose previous allocation is still live keeps that
 * charge (a graph instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH reallocates
 * it in place; any other graph cannot be launched again before it is freed). Child graphs are
 * not searched. */
#include "shim.h"

#include <stdlib.h>

typedef struct graph_alloc {
    CUdeviceptr dptr;
    uint64_t bytes;
    int dev;          /* -1: the launching context's device */
    int freed_inside; /* a free node of the same graph frees it */
} graph_alloc_t;

typedef struct graph_plan {
    unsigned long long flags;
    size_t n;
    graph_alloc_t allocs[];
} graph_plan_t;

static void mark_freed(graph_plan_t *plan, CUdeviceptr dptr)
{
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->allocs[i].dptr == dptr)
            plan->allocs[i].freed_inside = 1;
    }
}

/* Adds the graph's allocation and free nodes to plan; returns how many frees were seen. */
static size_t read_nodes(graph_plan_t *plan, const CUgraphNode *nodes, size_t count,
                         CUdeviceptr *freed)
{
    const gs__real_t *real = gs__real();
    size_t n_freed = 0;
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type;
        if (real->cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
            continue;
        CUDA_MEM_ALLOC_NODE_PARAMS params;
        if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && real->cuGraphMemAllocNodeGetParams &&
            real->cuGraphMemAllocNodeGetParams(nodes[i], &params) == CUDA_SUCCESS) {
            int on_device = params.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE;
            plan->allocs[plan->n++] =
                (graph_alloc_t){.dptr = params.dptr,
                                .bytes = params.bytesize,
                                .dev = on_device ? params.poolProps.location.id : GS_MAX_DEVICES};
        } else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE && real->cuGraphMemFreeNodeGetParams &&
                   real->cuGraphMemFreeNodeGetParams(nodes[i], &freed[n_freed]) == 0) {
            n_freed++;
        }
    }
    return n_freed;
}

/* Reads the graph's memory nodes into a new plan; NULL when it has none (or on failure). */
static graph_plan_t *make_plan(CUgraph graph, unsigned long long flags)
{
    const gs__real_t *real = gs__real();
    size_t count = 0;
    if (real->cuGraphGetNodes == NULL || real->cuGraphNodeGetType == NULL ||
        real->cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS || count == 0)
        return NULL;
    CUgraphNode *nodes = calloc(count, sizeof(*nodes));
    CUdeviceptr *freed = calloc(count, sizeof(*freed));
    graph_plan_t *plan = calloc(1, sizeof(*plan) + count * sizeof(graph_alloc_t));
    if (nodes == NULL || freed == NULL || plan == NULL ||
        real->cuGraphGetNodes(graph, nodes, &count) != CUDA_SUCCESS)
        goto fail;
    plan->flags = flags;
    size_t n_freed = read_nodes(plan, nodes, count, freed);
    for (size_t i = 0; i < n_freed; i++)
        mark_freed(plan, freed[i]);
    free(nodes);
    free(freed);
    if (plan->n > 0)
        return plan;
    free(plan);
    return NULL;
fail:
    free(nodes);
    free(freed);
    free(plan);
    return NULL;
}

static CUresult after_instantiate(CUresult result, CUgraphExec *exec, CUgraph graph,
                                  unsigned long long flags)
{
    if (result != CUDA_SUCCESS || !gs__accounting() || exec == NULL)
        return result;
    graph_plan_t *plan = make_plan(graph, flags);
    if (plan != NULL) {
        gs__alloc_t entry = {.kind = GS_KIND_GRAPH,
                             .key = (uint64_t)(uintptr_t)*exec,
                             .parent = (uint64_t)(uintptr_t)plan};
        gs__alloc_t replaced;
        int inserted = gs__track_insert(&entry, &replaced);
        if (inserted < 0)
            free(plan);
        else if (inserted == 1)
            free((void *)(uintptr_t)replaced.parent); /* the driver reused a destroyed exec */
    }
    return result;
}

GS_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUgraphNode *phErrorNode, char *logBuffer,
                                              size_t bufferSize)
{
    REAL_OR_FAIL(cuGraphInstantiate);
    CUresult result =
        gs__real()->cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    return after_instantiate(result, phGraphExec, hGraph, 0);
}

GS_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                 CUgraphNode *phErrorNode, char *logBuffer,
                                                 size_t bufferSize)
{
    REAL_OR_FAIL(cuGraphInstantiate_v2);
    CUresult result =
        gs__real()->cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    return after_instantiate(result, phGraphExec, hGraph, 0);
}

GS_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                       unsigned long long flags)
{
    REAL_OR_FAIL(cuGraphInstantiateWithFlags);
    CUresult result = gs__real()->cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags);
    return after_instantiate(result, phGraphExec, hGraph, flags);
}

GS_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    REAL_OR_FAIL(cuGraphInstantiateWithParams);
    CUresult result = gs__real()->cuGraphInstantiateWithParams(phGraphExec, hGraph, params);
    return after_instantiate(result, phGraphExec, hGraph, params ? params->flags : 0);
}

GS_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
                                                             CUgraph hGraph,
                                                             CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    REAL_OR_FAIL(cuGraphInstantiateWithParams_ptsz);
    CUresult result = gs__real()->cuGraphInstantiateWithParams_ptsz(phGraphExec, hGraph, params);
    return after_instantiate(result, phGraphExec, hGraph, params ? params->flags : 0);
}

static int read_plan(gs__alloc_t *entry, void *arg)
{
    *(graph_plan_t **)arg = (graph_plan_t *)(uintptr_t)entry->parent;
    return 0;
}

static graph_plan_t *plan_of(CUgraphExec exec)
{
    graph_plan_t *plan = NULL;
    gs__alloc_t unused;
    if (!gs__accounting() ||
        gs__track_update(GS_KIND_GRAPH, (uint64_t)(uintptr_t)exec, read_plan, &plan, &unused) != 0)
        return NULL;
    return plan;
}

static int still_charged(gs__alloc_t *entry, void *arg)
{
    (void)entry;
    (void)arg;
    return 0;
}

/* Whether a previous launch's allocation at dptr is still live (and charged). */
static int live_allocation(CUdeviceptr dptr)
{
    gs__alloc_t unused;
    return gs__track_update(GS_KIND_LINEAR, (uint64_t)dptr, still_charged, NULL, &unused) == 0;
}

static CUresult launch_charged(graph_plan_t *plan, CUgraphExec exec, CUstream stream,
                               __typeof__(&cuGraphLaunch) launch)
{
    gs__charge_t *held = calloc(plan->n, sizeof(*held));
    if (held == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = CUDA_SUCCESS;
    size_t taken = 0;
    for (; taken < plan->n && result == CUDA_SUCCESS; taken++) {
        if (!live_allocation(plan->allocs[taken].dptr))
            result = gs__charge_begin(plan->allocs[taken].dev, plan->allocs[taken].bytes,
                                      "graph memory node", &held[taken]);
    }
    if (result == CUDA_SUCCESS)
        result = launch(exec, stream);
    for (size_t i = 0; i < taken; i++) {
        if (result != CUDA_SUCCESS || plan->allocs[i].freed_inside)
            gs__charge_abort(&held[i]);
        else
            gs__charge_commit(&held[i], GS_KIND_LINEAR, (uint64_t)plan->allocs[i].dptr);
    }
    free(held);
    return result;
}

static CUresult launch_with_plan(CUgraphExec exec, CUstream stream,
                                 __typeof__(&cuGraphLaunch) launch)
{
    struct gs__gate *gate = gs__compute_enter(); /* a graph is a batch of kernels */
    graph_plan_t *plan = plan_of(exec);
    CUresult result =
        plan == NULL ? launch(exec, stream) : launch_charged(plan, exec, stream, launch);
    gs__compute_leave(gate);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    REAL_OR_FAIL(cuGraphLaunch);
    return launch_with_plan(hGraphExec, hStream, gs__real()->cuGraphLaunch);
}

GS_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    REAL_OR_FAIL(cuGraphLaunch_ptsz);
    return launch_with_plan(hGraphExec, hStream, gs__real()->cuGraphLaunch_ptsz);
}

GS_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    REAL_OR_FAIL(cuGraphExecDestroy);
    CUresult result = gs__real()->cuGraphExecDestroy(hGraphExec);
    gs__alloc_t entry;
    if (result == CUDA_SUCCESS && gs__accounting() &&
        gs__track_remove(GS_KIND_GRAPH, (uint64_t)(uintptr_t)hGraphExec, &entry) == 0)
        free((void *)(uintptr_t)entry.parent);
    return result;
}
