/* SPDX-License-Identifier: Apache-2.0 */
/* Fragmentation Gradient Descent (ATC'23) as its artifact scores it, and the decision rule it
 * shares with gpushare's policy. */
#include "placement_internal.h"

#include <math.h>
#include <string.h>

/* GPU capacity of node that task shape m cannot use: everything when m cannot run there at all
 * (model, CPU, too few GPUs with room; the artifact also counts everything for shapes that take
 * no GPU), otherwise the GPUs too small for it. */
static uint32_t shape_frag(const gs__node_t *node, const gs_place_request_t *m)
{
    if (m->num_gpu == 0 || node->cpu_left < m->cpu_milli || node->ngpu < m->num_gpu ||
        (m->model_mask != 0 && (m->model_mask & node->model_bit) == 0))
        return node->milli_left;
    uint32_t fit = 0, small = 0;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        if (node->gpu_left[g] >= m->gpu_milli)
            fit++;
        else
            small += node->gpu_left[g];
    }
    return fit >= m->num_gpu ? small : node->milli_left;
}

/* F_n(M) = sum over shapes m of p_m * (capacity of n that m cannot use), in milli-GPU. */
static double fgd_frag(const gs_place_engine_t *e, const gs__node_t *node)
{
    if (node->milli_left == 0)
        return 0;
    double f = 0;
    for (size_t i = 0; i < e->nshapes; i++)
        f += e->shapes[i].weight * shape_frag(node, &e->shapes[i].req);
    return f;
}

double gs__frag_cached(gs_place_engine_t *e, const gs__node_t *node)
{
    size_t i = (size_t)(node - e->cluster->nodes);
    if (e->frag[i].version != node->version) {
        e->frag[i].frag = e->ops->frag(e, node);
        e->frag[i].version = node->version;
    }
    return e->frag[i].frag;
}

/* The artifact maps the fragmentation decrease onto the scheduler's integer scale 0..100. Equal
 * scores then go to the first node in the engine's order, which consolidates placements. */
static int64_t points(double before, double after)
{
    double x = (before - after) / 1000.0;
    double sigmoid = 1.0 / (1.0 + exp(-x));
    return (int64_t)(sigmoid * 100.0);
}

/* Above any difference of points: a policy's regret (milli-GPU) ranks first. */
#define REGRET_SCALE 128

/* The score of placing req on node (after is the node afterwards): the points of the
 * fragmentation decrease, less the policy's regret when it has one. */
static int64_t score_of(gs_place_engine_t *e, const gs__node_t *node, const gs__node_t *after,
                        const gs_place_request_t *req, double before)
{
    int64_t s = points(before, e->ops->frag(e, after));
    if (e->ops->regret != NULL)
        s -= REGRET_SCALE * llround(e->ops->regret(e, node, after, req));
    return s;
}

/* Scores node for req and picks the GPUs: a share goes to the GPU with the best score (lowest
 * index on ties; GPUs with equal room give equal states, so only the first of each is tried);
 * whole GPUs are the first free ones. */
static int64_t eval(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req,
                    gs_place_decision_t *d)
{
    double before = gs__frag_cached(e, node);
    gs_place_decision_t pick = {.node = -1, .num_gpu = 0};
    gs__node_t after;
    int64_t best = GS__INFEASIBLE;
    if (req->num_gpu == 1 && req->gpu_milli < GS_PLACE_MILLI) {
        uint8_t tried[GS_PLACE_MILLI + 1];
        memset(tried, 0, sizeof(tried));
        for (uint32_t g = 0; g < node->ngpu; g++) {
            if (!gs__gpu_fits(node, g, req) || tried[node->gpu_left[g]])
                continue;
            tried[node->gpu_left[g]] = node->gpu_mem_cap == 0;
            gs_place_decision_t one = {.node = -1, .num_gpu = 1, .gpus = {(uint8_t)g}};
            after = *node;
            gs__node_apply(&after, req, &one);
            int64_t s = score_of(e, node, &after, req, before);
            if (s > best) {
                best = s;
                pick = one;
            }
        }
    } else {
        gs__pick_first_free(node, req, &pick);
        after = *node;
        gs__node_apply(&after, req, &pick);
        best = score_of(e, node, &after, req, before);
    }
    if (d != NULL)
        *d = pick;
    return best;
}

int64_t gs__frag_score(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req)
{
    return eval(e, node, req, NULL);
}

int64_t gs__frag_score_decision(gs_place_engine_t *e, const gs__node_t *node,
                                const gs_place_request_t *req, const gs_place_decision_t *d)
{
    gs__node_t after = *node;
    gs__node_apply(&after, req, d);
    return score_of(e, node, &after, req, gs__frag_cached(e, node));
}

void gs__frag_choose(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req,
                     gs_place_decision_t *d)
{
    int node_index = d->node;
    eval(e, node, req, d);
    d->node = node_index;
}

const gs__policy_ops_t gs__policy_fgd = {
    .name = "fgd",
    .label = "06-FGD",
    .score = gs__frag_score,
    .choose = gs__frag_choose,
    .frag = fgd_frag,
    .cacheable = 1,
    .uses_workload = 1,
};
