/* SPDX-License-Identifier: Apache-2.0 */
/* The ATC'23 baselines as its artifact scores them (Random, DotProd, GpuClustering, GpuPacking,
 * BestFit), and Spread. Scores are the scheduler's integers 0..100 (larger is better); the engine
 * gives equal scores to the node first in its fixed order. */
#include "placement_internal.h"

/* The artifact normalises CPU and GPU by the largest node spec it knows. */
#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000.0
#define MAX_SCORE    100

/* ---- Random: every feasible node scores the same; GPUs are drawn at random too ---- */

static int64_t random_score(gs_place_engine_t *e, const gs__node_t *node,
                            const gs_place_request_t *req)
{
    (void)e;
    (void)node;
    (void)req;
    return 0;
}

static void random_choose(gs_place_engine_t *e, const gs__node_t *node,
                          const gs_place_request_t *req, gs_place_decision_t *d)
{
    if (req->gpu_milli == GS_PLACE_MILLI) {
        gs__pick_first_free(node, req, d);
        return;
    }
    uint64_t seen = 0;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        if (gs__gpu_fits(node, g, req) && gs__rng_below(&e->rng, ++seen) == 0)
            d->gpus[0] = (uint8_t)g;
    }
    d->num_gpu = 1;
}

const gs__policy_ops_t gs__policy_random = {
    .name = "random",
    .label = "01-Random",
    .score = random_score,
    .choose = random_choose,
    .cacheable = 1,
    .random_ties = 1,
};

/* ---- DotProd: free (CPU, total GPU) . requested (CPU, total GPU), both normalised; the
 * smallest product wins ---- */

static int64_t dotprod_score(gs_place_engine_t *e, const gs__node_t *node,
                             const gs_place_request_t *req)
{
    (void)e;
    double node_vec[2] = {node->cpu_left / MAX_SPEC_CPU, node->milli_left / MAX_SPEC_GPU};
    double req_vec[2] = {req->cpu_milli / MAX_SPEC_CPU,
                         (double)gs_place_request_milli(req) / MAX_SPEC_GPU};
    double dot = 0;
    for (int i = 0; i < 2; i++)
        dot += node_vec[i] * req_vec[i];
    double score = 1 - dot / 2;
    return (int64_t)(MAX_SCORE * score);
}

const gs__policy_ops_t gs__policy_dotprod = {
    .name = "dotprod",
    .label = "02-DotProd",
    .score = dotprod_score,
    .cacheable = 1,
};

/* ---- GpuClustering: nodes already running only this kind of GPU task first, then nodes running
 * it among others, then idle nodes, then the rest; fuller nodes first within each band ---- */

static int64_t clustering_score(gs_place_engine_t *e, const gs__node_t *node,
                                const gs_place_request_t *req)
{
    (void)e;
    if (req->num_gpu == 0)
        return 0;
    unsigned tag = req->gpu_milli < GS_PLACE_MILLI ? GS__TAG_SHARE : req->num_gpu;
    unsigned kinds = 0;
    for (unsigned t = 0; t < GS__TAGS; t++)
        kinds += node->tags[t] > 0;
    int64_t fullness =
        MAX_SCORE / 4 * ((int64_t)MAX_SPEC_GPU - node->milli_left) / (int64_t)MAX_SPEC_GPU;
    if (node->tags[tag] > 0)
        return fullness + (kinds == 1 ? MAX_SCORE * 3 / 4 : MAX_SCORE * 2 / 4);
    return fullness + (kinds == 0 ? MAX_SCORE / 4 : 0);
}

const gs__policy_ops_t gs__policy_clustering = {
    .name = "clustering",
    .label = "03-GpuClustering",
    .score = clustering_score,
    .cacheable = 1,
};

/* ---- GpuPacking: shared GPUs first (fuller first), then free GPUs on used nodes, then empty
 * nodes (fewer GPUs first) ---- */

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t packing_score(gs_place_engine_t *e, const gs__node_t *node,
                             const gs_place_request_t *req)
{
    (void)e;
    if (req->num_gpu == 0)
        return 0;
    if (node->free_gpus == node->ngpu)
        return max64(MAX_SCORE / 3 - node->free_gpus, node->free_gpus);
    /* The GPUs the tightest-first allocation would use. */
    uint32_t order[GS_PLACE_MAX_GPUS], n = node->ngpu;
    for (uint32_t g = 0; g < n; g++)
        order[g] = g;
    for (uint32_t i = 1; i < n; i++) { /* stable insertion sort by milli left */
        uint32_t g = order[i], j = i;
        for (; j > 0 && node->gpu_left[order[j - 1]] > node->gpu_left[g]; j--)
            order[j] = order[j - 1];
        order[j] = g;
    }
    uint32_t want = req->num_gpu, free_used = 0;
    int64_t free_ratio = 0;
    for (uint32_t i = 0; i < n && want > 0; i++) {
        uint32_t g = order[i];
        if (!gs__gpu_fits(node, g, req))
            continue;
        want--;
        free_used += node->gpu_left[g] == GS_PLACE_MILLI;
        free_ratio += (int64_t)node->gpu_left[g] * 100 / GS_PLACE_MILLI;
    }
    if (free_used > 0)
        return max64(MAX_SCORE / 2 - free_used, MAX_SCORE / 3);
    return max64(MAX_SCORE - free_ratio / 10, MAX_SCORE / 2);
}

const gs__policy_ops_t gs__policy_packing = {
    .name = "packing",
    .label = "04-GpuPacking",
    .score = packing_score,
    .cacheable = 1,
};

/* ---- BestFit: the least CPU and GPU left over after placing, equally weighted ---- */

static int64_t bestfit_score(gs_place_engine_t *e, const gs__node_t *node,
                             const gs_place_request_t *req)
{
    (void)e;
    double free_vec[2] = {node->cpu_left, node->milli_left};
    double req_vec[2] = {req->cpu_milli, (double)gs_place_request_milli(req)};
    double max_vec[2] = {MAX_SPEC_CPU, MAX_SPEC_GPU};
    double left = 0;
    for (int i = 0; i < 2; i++)
        left += (free_vec[i] - req_vec[i]) / max_vec[i] * 0.5;
    double score = (1.0 - left) * MAX_SCORE;
    return (int64_t)score;
}

const gs__policy_ops_t gs__policy_bestfit = {
    .name = "bestfit",
    .label = "05-BestFit",
    .score = bestfit_score,
    .cacheable = 1,
};

/* ---- Spread: the node with the most GPU room left after placing, and its roomiest GPU ---- */

static int64_t spread_score(gs_place_engine_t *e, const gs__node_t *node,
                            const gs_place_request_t *req)
{
    (void)e;
    return (int64_t)node->milli_left - (int64_t)gs_place_request_milli(req);
}

static void spread_choose(gs_place_engine_t *e, const gs__node_t *node,
                          const gs_place_request_t *req, gs_place_decision_t *d)
{
    (void)e;
    if (req->gpu_milli == GS_PLACE_MILLI) {
        gs__pick_first_free(node, req, d);
        return;
    }
    int best = -1;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        if (gs__gpu_fits(node, g, req) && (best < 0 || node->gpu_left[g] > node->gpu_left[best]))
            best = (int)g;
    }
    d->gpus[0] = (uint8_t)best;
    d->num_gpu = 1;
}

const gs__policy_ops_t gs__policy_spread = {
    .name = "spread",
    .label = "08-Spread",
    .score = spread_score,
    .choose = spread_choose,
    .cacheable = 1,
};
