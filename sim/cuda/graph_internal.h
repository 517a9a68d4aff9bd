/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's CUDA driver: the graph objects shared by graph.c, graph_exec.c and graph_params.c. */
#ifndef GSIM_CUDA_GRAPH_INTERNAL_H
#define GSIM_CUDA_GRAPH_INTERNAL_H

#include "cuda_internal.h"

#define INSTANTIATE_FLAGS                                                                          \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |        \
     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/* What a node does: the part copied into an executable graph. */
typedef struct node_op {
    CUgraphNodeType type;
    CUcontext ctx;
    union {
        CUDA_KERNEL_NODE_PARAMS_v2 kernel;
        CUDA_MEMCPY3D copy;
        CUDA_MEMSET_NODE_PARAMS memset;
        CUDA_HOST_NODE_PARAMS host;
        CUevent event;
        CUdeviceptr free_ptr;
    } u;
    gsim_cu_graph_alloc_t *alloc; /* MEM_ALLOC nodes */
    CUDA_MEM_ALLOC_NODE_PARAMS alloc_params;
} node_op_t;

struct CUgraphNode_st {
    gsim_cu_obj_t obj;
    CUgraph graph;
    CUgraphNode *deps;
    size_t n_deps;
    node_op_t op;
};

struct CUgraph_st {
    gsim_cu_obj_t obj;
    pthread_mutex_t mu;
    CUgraphNode *nodes;
    size_t n_nodes, cap_nodes;
};

struct CUgraphExec_st {
    gsim_cu_obj_t obj;
    cuuint64_t flags;
    node_op_t *ops;
    size_t n_ops;
};

_Static_assert(sizeof(struct CUgraphNode_st) <= GSIM_CU_OBJ_SLOT, "graph node fits a slot");

/* Returns CUDA_SUCCESS for a live graph / node (CUDA_ERROR_INVALID_VALUE otherwise), checking
 * that the driver is initialised. */
CUresult gsim_cu_graph_arg(CUgraph g);
CUresult gsim_cu_graph_node_arg(CUgraphNode n);

/* Validates kernel node parameters (function or kernel, context, dimensions) into op. */
CUresult gsim_cu_graph_kernel_op(const CUDA_KERNEL_NODE_PARAMS_v2 *p, node_op_t *op);

/* Widens CUDA 10's kernel node parameters to the current layout. */
CUDA_KERNEL_NODE_PARAMS_v2 gsim_cu_graph_kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p);

/* Returns the node if it is live and of the given type (CUDA_ERROR_INVALID_VALUE otherwise). */
CUresult gsim_cu_graph_node_of_type(CUgraphNode n, CUgraphNodeType type);

#endif
