/* SPDX-License-Identifier: Apache-2.0 */
/* Graph node parameters: reading and changing what a node does (kernel, memcpy, memset, host,
 * event and memory nodes). Instantiated graphs keep the parameters they were made with. */
#include "graph_internal.h"

GSIM_CU_API CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                   CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUgraphNode n = hNode;
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    *nodeParams = n->op.u.kernel;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    CUgraphNode n = hNode;
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    const CUDA_KERNEL_NODE_PARAMS_v2 *p = &n->op.u.kernel;
    *nodeParams = (CUDA_KERNEL_NODE_PARAMS_v1){.func = p->func,
                                               .gridDimX = p->gridDimX,
                                               .gridDimY = p->gridDimY,
                                               .gridDimZ = p->gridDimZ,
                                               .blockDimX = p->blockDimX,
                                               .blockDimY = p->blockDimY,
                                               .blockDimZ = p->blockDimZ,
                                               .sharedMemBytes = p->sharedMemBytes,
                                               .kernelParams = p->kernelParams,
                                               .extra = p->extra};
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUgraphNode n = hNode;
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    node_op_t op;
    result = gsim_cu_graph_kernel_op(nodeParams, &op);
    if (result == CUDA_SUCCESS)
        n->op = op;
    return result;
}

GSIM_CU_API CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_KERNEL_NODE_PARAMS_v2 p = gsim_cu_graph_kernel_v2(nodeParams);
    return cuGraphKernelNodeSetParams_v2(hNode, &p);
}

GSIM_CU_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(params_out);
    *params_out = hNode->op.alloc_params;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(dptr_out);
    *dptr_out = hNode->op.u.free_ptr;
    return CUDA_SUCCESS;
}

/* ---- memcpy, memset and host nodes ---- */

GSIM_CU_API CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    *nodeParams = hNode->op.u.copy;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    if (result != CUDA_SUCCESS)
        return result;
    if (nodeParams == NULL || nodeParams->reserved0 != NULL || nodeParams->reserved1 != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    hNode->op.u.copy = *nodeParams;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode,
                                                CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    *nodeParams = hNode->op.u.memset;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                                const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    if (result != CUDA_SUCCESS)
        return result;
    if (nodeParams == NULL ||
        (nodeParams->elementSize != 1 && nodeParams->elementSize != 2 &&
         nodeParams->elementSize != 4) ||
        nodeParams->width == 0 || nodeParams->height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    hNode->op.u.memset = *nodeParams;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_HOST);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(nodeParams);
    *nodeParams = hNode->op.u.host;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphHostNodeSetParams(CUgraphNode hNode,
                                              const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, CU_GRAPH_NODE_TYPE_HOST);
    if (result != CUDA_SUCCESS)
        return result;
    if (nodeParams == NULL || nodeParams->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    hNode->op.u.host = *nodeParams;
    return CUDA_SUCCESS;
}

/* ---- event nodes ---- */

static CUresult get_event(CUgraphNode hNode, CUgraphNodeType type, CUevent *event_out)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, type);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(event_out);
    *event_out = hNode->op.u.event;
    return CUDA_SUCCESS;
}

static CUresult set_event(CUgraphNode hNode, CUgraphNodeType type, CUevent event)
{
    CUresult result = gsim_cu_graph_node_of_type(hNode, type);
    if (result != CUDA_SUCCESS)
        return result;
    int64_t t;
    if (gsim_cu_event_time(event, &t) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    hNode->op.u.event = event;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return get_event(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

GSIM_CU_API CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return set_event(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

GSIM_CU_API CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return get_event(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

GSIM_CU_API CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return set_event(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}
