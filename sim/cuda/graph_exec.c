/* SPDX-License-Identifier: Apache-2.0 */
/* Executable graphs: instantiation (a snapshot of the graph's nodes), launch in stream order on
 * the simulated device, upload, and the executable graph's lifetime. */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, cuuint64_t flags)
{
    CUresult result = gsim_cu_graph_arg(hGraph);
    if (result != CUDA_SUCCESS)
        return result;
    if (phGraphExec == NULL || (flags & ~(cuuint64_t)INSTANTIATE_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExec exec = gsim_cu_obj_new(GSIM_CU_GRAPH_EXEC);
    if (exec == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    exec->flags = flags;
    pthread_mutex_lock(&hGraph->mu);
    exec->ops = hGraph->n_nodes > 0 ? calloc(hGraph->n_nodes, sizeof(*exec->ops)) : NULL;
    if (hGraph->n_nodes > 0 && exec->ops == NULL) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        for (size_t i = 0; i < hGraph->n_nodes; i++) {
            exec->ops[i] = hGraph->nodes[i]->op;
            if (exec->ops[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                gsim_cu_graph_alloc_ref(exec->ops[i].alloc);
        }
        exec->n_ops = hGraph->n_nodes;
    }
    pthread_mutex_unlock(&hGraph->mu);
    if (result != CUDA_SUCCESS) {
        gsim_cu_obj_free(exec);
        return result;
    }
    *phGraphExec = exec;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUgraphNode *phErrorNode, char *logBuffer,
                                        size_t bufferSize)
{
    (void)phErrorNode;
    if (logBuffer != NULL && bufferSize > 0)
        logBuffer[0] = '\0';
    return instantiate(phGraphExec, hGraph, 0);
}

GSIM_CU_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUgraphNode *phErrorNode, char *logBuffer,
                                           size_t bufferSize)
{
    return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

GSIM_CU_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                 unsigned long long flags)
{
    return instantiate(phGraphExec, hGraph, flags);
}

static CUresult instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (p == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUresult result = instantiate(phGraphExec, hGraph, p->flags);
    p->hErrNode_out = NULL;
    p->result_out =
        result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}

GSIM_CU_API CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

GSIM_CU_API CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

static CUresult exec_arg(CUgraphExec e)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(e, GSIM_CU_GRAPH_EXEC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSIM_CU_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CUresult result = exec_arg(hGraphExec);
    if (result != CUDA_SUCCESS)
        return result;
    for (size_t i = 0; i < hGraphExec->n_ops; i++) {
        if (hGraphExec->ops[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            gsim_cu_graph_alloc_unref(hGraphExec->ops[i].alloc);
    }
    free(hGraphExec->ops);
    gsim_cu_obj_free(hGraphExec);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
    CUresult result = exec_arg(hGraphExec);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(flags);
    *flags = hGraphExec->flags;
    return CUDA_SUCCESS;
}

/* Before anything runs: every allocation node must be free (or freed now with auto-free). */
static CUresult prepare_allocs(CUgraphExec e)
{
    for (size_t i = 0; i < e->n_ops; i++) {
        const node_op_t *op = &e->ops[i];
        if (op->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || !gsim_cu_graph_alloc_allocated(op->alloc))
            continue;
        if (!(e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
            return CUDA_ERROR_INVALID_VALUE;
        gsim_cu_graph_mem_free((uintptr_t)gsim_cu_graph_alloc_ptr(op->alloc));
    }
    return CUDA_SUCCESS;
}

static CUresult run_op(const node_op_t *op, gsim_cu_stream_t *s)
{
    switch (op->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        const CUDA_KERNEL_NODE_PARAMS_v2 *p = &op->u.kernel;
        gsim_cu_launch_t l = {.f = p->func,
                              .grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                              .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                              .shared_mem = p->sharedMemBytes,
                              .params = p->kernelParams,
                              .extra = p->extra};
        return gsim_cu_launch_on(&l, s);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return gsim_cu_copy3d_plain(&op->u.copy);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        const CUDA_MEMSET_NODE_PARAMS *m = &op->u.memset;
        return gsim_cu_memset2d(m->dst, m->pitch, m->value, m->elementSize, m->width, m->height);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        gsim_cu_host_call_t call = {.host_fn = op->u.host.fn, .user = op->u.host.userData};
        return gsim_cu_stream_host_call(s, &call);
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return gsim_cu_event_record_on(op->u.event, s);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
        int64_t t;
        CUresult result = gsim_cu_event_time(op->u.event, &t);
        if (result == CUDA_SUCCESS)
            gsim_cu_stream_wait_until(s, t);
        return result;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        return gsim_cu_graph_alloc_allocate(op->alloc);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return gsim_cu_graph_mem_free((uintptr_t)op->u.free_ptr);
    default:
        return CUDA_SUCCESS;
    }
}

static CUresult graph_launch(CUgraphExec hGraphExec, CUstream hStream, int per_thread)
{
    CUresult result = exec_arg(hGraphExec);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_stream_t *s;
    result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    result = prepare_allocs(hGraphExec);
    for (size_t i = 0; result == CUDA_SUCCESS && i < hGraphExec->n_ops; i++)
        result = run_op(&hGraphExec->ops[i], s);
    return result;
}

GSIM_CU_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(hGraphExec, hStream, 0);
}

GSIM_CU_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(hGraphExec, hStream, 1);
}

static CUresult graph_upload(CUgraphExec hGraphExec, CUstream hStream, int per_thread)
{
    CUresult result = exec_arg(hGraphExec);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_stream_t *s;
    return gsim_cu_stream_resolve(hStream, per_thread, &s);
}

GSIM_CU_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, 0);
}

GSIM_CU_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_upload(hGraphExec, hStream, 1);
}
