/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare's placement policy: FGD's decision rule, ranked first by the packing value a placement
 * loses (LP dual prices of the workload's GPU shares, CPU-aware), then by a fragmentation measure
 * that counts the GPU capacity tasks cannot reach for lack of CPU, memory or free GPUs, each task
 * shape weighed by how scarce the capacity it can use is (docs/placement.md explains all three). */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <stdlib.h>

/* The capacity of a node's GPUs in decreasing order and its prefix sums: top[i] is the room on
 * the i GPUs with the most room. */
typedef struct profile {
    uint32_t left[GS_PLACE_MAX_GPUS];
    uint32_t top[GS_PLACE_MAX_GPUS + 1];
    uint32_t n;
} profile_t;

static void make_profile(const gs__node_t *node, profile_t *p)
{
    p->n = node->ngpu;
    for (uint32_t i = 0; i < p->n; i++) { /* insertion sort: at most 16 GPUs */
        uint32_t v = node->gpu_left[i], j = i;
        for (; j > 0 && p->left[j - 1] < v; j--)
            p->left[j] = p->left[j - 1];
        p->left[j] = v;
    }
    p->top[0] = 0;
    for (uint32_t i = 0; i < p->n; i++)
        p->top[i + 1] = p->top[i] + p->left[i];
}

/* GPU capacity of the node that tasks of shape m can actually reach: the room on the GPUs they
 * can occupy. A GPU is eligible when it has room for one task (as in FGD); of the eligible GPUs,
 * only as many as the tasks that fit the node's free CPU and memory can take are reachable (the
 * roomiest ones). Zero when m cannot run there at all. */
static uint32_t reachable(const gs__node_t *node, const gs_place_request_t *m, const profile_t *p)
{
    if (m->model_mask != 0 && (m->model_mask & node->model_bit) == 0)
        return 0;
    uint32_t fit = 0;
    while (fit < p->n && p->left[fit] >= m->gpu_milli)
        fit++;
    if (fit < m->num_gpu)
        return 0;
    uint64_t copies = UINT64_MAX;
    if (m->cpu_milli > 0)
        copies = node->cpu_left / m->cpu_milli;
    if (m->mem_mib > 0 && node->mem_left / m->mem_mib < copies)
        copies = node->mem_left / m->mem_mib;
    uint64_t gpus = copies >= fit ? fit : copies * m->num_gpu;
    return p->top[gpus < fit ? gpus : fit];
}

/* The GPU capacity of the nodes where a task of shape m fits when the node is empty (model, GPU
 * count, CPU, memory). */
static double eligible_capacity(const gs_place_cluster_t *c, const gs_place_request_t *m)
{
    double sum = 0;
    for (size_t i = 0; i < c->count; i++) {
        gs__node_t empty = c->nodes[i];
        empty.cpu_left = empty.cpu_cap;
        empty.mem_left = empty.mem_cap;
        for (uint32_t g = 0; g < empty.ngpu; g++)
            empty.gpu_left[g] = GS_PLACE_MILLI;
        profile_t p;
        make_profile(&empty, &p);
        if (reachable(&empty, m, &p) > 0)
            sum += (double)empty.ngpu * GS_PLACE_MILLI;
    }
    return sum;
}

/* A shape's weight is its frequency times the cluster's GPU capacity over the capacity of the
 * nodes it can run on: the density of its demand on them. Tasks confined to few nodes (a GPU
 * model, many cores or much memory, many GPUs) weigh more; shapes without GPUs, or that fit no
 * node, weigh nothing. */
static int make_weights(gs_place_engine_t *e)
{
    double *w = malloc((e->nshapes ? e->nshapes : 1) * sizeof(*w));
    free(e->weight);
    e->weight = w; /* NULL (no weights, no fragmentation) when memory is short */
    if (w == NULL)
        return GS_ENOMEM;
    for (size_t i = 0; i < e->nshapes; i++) {
        const gs_place_request_t *m = &e->shapes[i].req;
        double eligible = m->num_gpu > 0 ? eligible_capacity(e->cluster, m) : 0;
        w[i] = eligible > 0 ? e->shapes[i].weight * (double)e->cluster->total_milli / eligible : 0;
    }
    return 0;
}

/* Weights and packing values for the current shapes and nodes. Without packing values (the LP
 * failed) the policy still works, ranking by fragmentation alone. */
static int gpushare_prepare(gs_place_engine_t *e)
{
    int result = make_weights(e);
    if (result != 0)
        return result;
    gs__pack_free(e->pack);
    e->pack = NULL;
    result = gs__pack_build(e->shapes, e->nshapes, &e->pack);
    return result == GS_ENOMEM ? result : 0;
}

/* F_n(M) = sum over GPU shapes m of w_m * (capacity left on n that m cannot reach). */
static double gpushare_frag(const gs_place_engine_t *e, const gs__node_t *node)
{
    if (node->milli_left == 0 || e->weight == NULL)
        return 0;
    profile_t p;
    make_profile(node, &p);
    double f = 0;
    for (size_t i = 0; i < e->nshapes; i++) {
        if (e->weight[i] > 0)
            f += e->weight[i] * (node->milli_left - reachable(node, &e->shapes[i].req, &p));
    }
    return f;
}

/* The packing value the node loses beyond what the request is worth, in milli-GPU: zero when
 * the room left can still be filled as an optimal packing would, positive when the placement
 * strands room (a share that breaks a better pairing, CPU taken from tasks the room needs). */
static double gpushare_regret(const gs_place_engine_t *e, const gs__node_t *node,
                              const gs__node_t *after, const gs_place_request_t *req)
{
    if (e->pack == NULL)
        return 0;
    double lost = gs__pack_node_value(e->pack, node) - gs__pack_request_price(e->pack, req) -
                  gs__pack_node_value(e->pack, after);
    return lost > 0 ? lost * GS_PLACE_MILLI : 0;
}

const gs__policy_ops_t gs__policy_gpushare = {
    .name = "gpushare",
    .label = "07-gpushare",
    .score = gs__frag_score,
    .choose = gs__frag_choose,
    .frag = gpushare_frag,
    .regret = gpushare_regret,
    .prepare = gpushare_prepare,
    .cacheable = 1,
    .uses_workload = 1,
};
