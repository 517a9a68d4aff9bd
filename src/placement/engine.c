/* SPDX-License-Identifier: Apache-2.0 */
/* The placement engine: filters nodes, scores them with a policy (cached per request shape and
 * node version), breaks ties at random and picks the GPUs. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const gs__policy_ops_t *const gs__policies[GS_PLACE_POLICY_COUNT] = {
    [GS_PLACE_RANDOM] = &gs__policy_random,         [GS_PLACE_DOTPROD] = &gs__policy_dotprod,
    [GS_PLACE_CLUSTERING] = &gs__policy_clustering, [GS_PLACE_PACKING] = &gs__policy_packing,
    [GS_PLACE_BESTFIT] = &gs__policy_bestfit,       [GS_PLACE_FGD] = &gs__policy_fgd,
    [GS_PLACE_GPUSHARE] = &gs__policy_gpushare,     [GS_PLACE_SPREAD] = &gs__policy_spread,
};

int gs_place_policy_parse(const char *name, gs_place_policy_t *policy)
{
    static const struct {
        const char *name;
        gs_place_policy_t policy;
    } aliases[] = {{"gpuclustering", GS_PLACE_CLUSTERING}, {"gpupacking", GS_PLACE_PACKING}};
    for (int i = 0; i < GS_PLACE_POLICY_COUNT; i++) {
        if (strcasecmp(name, gs__policies[i]->name) == 0) {
            *policy = (gs_place_policy_t)i;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (strcasecmp(name, aliases[i].name) == 0) {
            *policy = aliases[i].policy;
            return 0;
        }
    }
    return GS_EINVAL;
}

const char *gs_place_policy_name(gs_place_policy_t policy)
{
    if ((int)policy < 0 || policy >= GS_PLACE_POLICY_COUNT)
        return "?";
    return gs__policies[policy]->name;
}

const char *gs_place_policy_label(gs_place_policy_t policy)
{
    if ((int)policy < 0 || policy >= GS_PLACE_POLICY_COUNT)
        return "?";
    return gs__policies[policy]->label;
}

double gs__default_coverage(gs_place_policy_t policy)
{
    return policy == GS_PLACE_GPUSHARE ? 1.0 : 0.95;
}

/* Copies a finished workload's shapes into the engine. */
static int set_shapes(gs_place_engine_t *e, const gs__shape_t *shapes, size_t count)
{
    gs__shape_t *copy = NULL;
    if (count > 0) {
        copy = malloc(count * sizeof(*copy));
        if (copy == NULL)
            return GS_ENOMEM;
        memcpy(copy, shapes, count * sizeof(*copy));
    }
    free(e->shapes);
    e->shapes = copy;
    e->nshapes = count;
    return 0;
}

/* Forgets every cached score and fragmentation (the target workload changed). */
static void clear_caches(gs_place_engine_t *e)
{
    for (size_t i = 0; i < e->ncaches; i++)
        memset(e->caches[i].version, 0, e->nodes_seen * sizeof(uint64_t));
    if (e->frag != NULL)
        memset(e->frag, 0, e->nodes_seen * sizeof(e->frag[0]));
}

/* Lets the policy recompute its tables for the current shapes and nodes; cached scores go. */
static int replan(gs_place_engine_t *e)
{
    clear_caches(e);
    return e->ops->prepare != NULL ? e->ops->prepare(e) : 0;
}

/* Grows the per-node arrays to the cluster's size (nodes may be added at any time). */
static int track_nodes(gs_place_engine_t *e)
{
    size_t n = e->cluster->count, old = e->nodes_seen;
    if (n <= old)
        return 0;
    int *ties = realloc(e->ties, n * sizeof(*ties));
    if (ties == NULL)
        return GS_ENOMEM;
    e->ties = ties;
    uint64_t *rank = realloc(e->rank, n * sizeof(*rank));
    if (rank == NULL)
        return GS_ENOMEM;
    e->rank = rank;
    for (size_t i = old; i < n; i++)
        rank[i] = gs__rng_next(&e->rng);
    if (e->ops->uses_workload) {
        gs__frag_cache_t *frag = realloc(e->frag, n * sizeof(*frag));
        if (frag == NULL)
            return GS_ENOMEM;
        memset(frag + old, 0, (n - old) * sizeof(*frag));
        e->frag = frag;
    }
    for (size_t i = 0; i < e->ncaches; i++) {
        gs__score_cache_t *c = &e->caches[i];
        uint64_t *version = realloc(c->version, n * sizeof(*version));
        if (version == NULL)
            return GS_ENOMEM;
        c->version = version;
        int64_t *score = realloc(c->score, n * sizeof(*score));
        if (score == NULL)
            return GS_ENOMEM;
        c->score = score;
        memset(c->version + old, 0, (n - old) * sizeof(*version));
    }
    e->nodes_seen = n;
    /* A policy's tables may depend on the whole cluster (gpushare weighs shapes by the capacity
     * of the nodes they fit). */
    return replan(e);
}

int gs_place_engine_new(gs_place_cluster_t *cluster, gs_place_policy_t policy,
                        const gs_place_workload_t *workload, uint64_t seed, gs_place_engine_t **out)
{
    if ((int)policy < 0 || policy >= GS_PLACE_POLICY_COUNT ||
        (workload != NULL && !workload->finished))
        return GS_EINVAL;
    gs_place_engine_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return GS_ENOMEM;
    e->cluster = cluster;
    e->policy = policy;
    e->ops = gs__policies[policy];
    gs__rng_seed(&e->rng, seed ^ UINT64_C(0x5eed0f9a3c1b2d47));
    int result = GS_ENOMEM;
    e->slots = malloc(GS__CACHE_SLOTS * sizeof(e->slots[0]));
    if (e->slots == NULL)
        goto out;
    memset(e->slots, 0xff, GS__CACHE_SLOTS * sizeof(e->slots[0]));
    if (e->ops->uses_workload) {
        if (workload != NULL)
            result = set_shapes(e, workload->shapes, workload->count);
        else
            result = gs_place_workload_new(&e->observed);
        if (result != 0)
            goto out;
    }
    if ((result = track_nodes(e)) != 0)
        goto out;
    *out = e;
    return 0;
out:
    gs_place_engine_free(e);
    return result;
}

void gs_place_engine_free(gs_place_engine_t *engine)
{
    if (engine == NULL)
        return;
    for (size_t i = 0; i < engine->ncaches; i++) {
        free(engine->caches[i].version);
        free(engine->caches[i].score);
    }
    free(engine->caches);
    free(engine->slots);
    free(engine->frag);
    free(engine->ties);
    free(engine->rank);
    free(engine->shapes);
    free(engine->weight);
    gs__pack_free(engine->pack);
    gs_place_workload_free(engine->observed);
    free(engine);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

static int same_request(const gs_place_request_t *a, const gs_place_request_t *b)
{
    return a->cpu_milli == b->cpu_milli && a->mem_mib == b->mem_mib && a->num_gpu == b->num_gpu &&
           a->gpu_milli == b->gpu_milli && a->gpu_mem_bytes == b->gpu_mem_bytes &&
           a->model_mask == b->model_mask;
}

/* Finds (or creates) the score cache of req's shape; NULL when the policy is not cacheable, the
 * table is full or memory is short (the caller then scores without a cache). */
static gs__score_cache_t *find_cache(gs_place_engine_t *e, const gs_place_request_t *req)
{
    if (!e->ops->cacheable)
        return NULL;
    uint64_t h = mix(mix(mix(req->cpu_milli, req->mem_mib), req->num_gpu * 4096 + req->gpu_milli),
                     mix(req->gpu_mem_bytes, req->model_mask));
    for (size_t probe = 0; probe < GS__CACHE_SLOTS; probe++) {
        size_t slot = (h + probe) & (GS__CACHE_SLOTS - 1);
        int32_t idx = e->slots[slot];
        if (idx >= 0 && same_request(&e->caches[idx].key, req))
            return &e->caches[idx];
        if (idx >= 0)
            continue;
        if (e->ncaches >= GS__CACHE_MAX)
            return NULL;
        gs__score_cache_t *grown = realloc(e->caches, (e->ncaches + 1) * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        e->caches = grown;
        gs__score_cache_t *c = &e->caches[e->ncaches];
        c->key = *req;
        c->version = calloc(e->nodes_seen ? e->nodes_seen : 1, sizeof(uint64_t));
        c->score = malloc((e->nodes_seen ? e->nodes_seen : 1) * sizeof(int64_t));
        if (c->version == NULL || c->score == NULL) {
            free(c->version);
            free(c->score);
            return NULL;
        }
        e->slots[slot] = (int32_t)e->ncaches++;
        return c;
    }
    return NULL;
}

/* Scores node i for req, through the cache when there is one. */
static int64_t node_score(gs_place_engine_t *e, gs__score_cache_t *cache, size_t i,
                          const gs_place_request_t *req)
{
    const gs__node_t *n = &e->cluster->nodes[i];
    if (cache != NULL && cache->version[i] == n->version)
        return cache->score[i];
    int64_t s = gs__node_feasible(n, req) ? e->ops->score(e, n, req) : GS__INFEASIBLE;
    if (cache != NULL) {
        cache->version[i] = n->version;
        cache->score[i] = s;
    }
    return s;
}

/* Returns the best node for req, or -1. Equal scores go to the node that comes first in the
 * engine's fixed random order of nodes (the artifact names nodes after a random permutation and
 * its scheduler takes the first best name): placements then pile onto the same nodes instead of
 * spreading. Policies with random_ties pick uniformly among them instead. */
static int best_node(gs_place_engine_t *e, const gs_place_request_t *req)
{
    gs__score_cache_t *cache = find_cache(e, req);
    const gs_place_cluster_t *c = e->cluster;
    int64_t best = GS__INFEASIBLE;
    size_t nties = 0;
    int chosen = -1;
    for (size_t i = 0; i < c->count; i++) {
        const gs__node_t *n = &c->nodes[i];
        /* Host memory is not part of a shape's cached score, so it is filtered here. */
        if (n->mem_left < req->mem_mib || n->cpu_left < req->cpu_milli)
            continue;
        int64_t s = node_score(e, cache, i, req);
        if (s == GS__INFEASIBLE || s < best)
            continue;
        if (s > best) {
            best = s;
            nties = 0;
            chosen = (int)i;
        } else if (e->rank[i] < e->rank[chosen]) {
            chosen = (int)i;
        }
        e->ties[nties++] = (int)i;
    }
    if (nties > 1 && e->ops->random_ties)
        chosen = e->ties[gs__rng_below(&e->rng, nties)];
    return chosen;
}

/* Without a given target workload, FGD and gpushare plan for the requests seen so far; the
 * estimate is rebuilt when the count doubles or a new shape appears. */
static int observe(gs_place_engine_t *e, const gs_place_request_t *req)
{
    size_t before = e->observed->count;
    int result = gs_place_workload_add(e->observed, req, 1.0);
    if (result != 0)
        return result;
    if (e->observed->count == before && e->observed->total < e->observed_next)
        return 0;
    e->observed_next = e->observed->total * 2;
    gs__shape_t *tmp = malloc(e->observed->count * sizeof(*tmp));
    if (tmp == NULL)
        return GS_ENOMEM;
    for (size_t i = 0; i < e->observed->count; i++) {
        tmp[i] = e->observed->shapes[i];
        tmp[i].weight /= e->observed->total;
    }
    result = set_shapes(e, tmp, e->observed->count);
    free(tmp);
    return result != 0 ? result : replan(e);
}

int gs_place_select(gs_place_engine_t *engine, const gs_place_request_t *req,
                    gs_place_decision_t *decision)
{
    memset(decision, 0, sizeof(*decision));
    decision->node = -1;
    int result = gs_place_request_check(req, NULL, 0);
    if (result != 0)
        return result;
    if ((result = track_nodes(engine)) != 0)
        return result;
    if (engine->observed != NULL && (result = observe(engine, req)) != 0)
        return result;
    int node = best_node(engine, req);
    if (node < 0)
        return GS_ENOFIT;
    decision->node = node;
    if (req->num_gpu == 0)
        return 0;
    const gs__node_t *n = &engine->cluster->nodes[node];
    if (engine->ops->choose != NULL) {
        engine->ops->choose(engine, n, req, decision);
    } else if (req->gpu_milli < GS_PLACE_MILLI) {
        decision->gpus[0] = (uint8_t)gs__pick_best_fit_gpu(n, req);
        decision->num_gpu = 1;
    } else {
        gs__pick_first_free(n, req, decision);
    }
    return 0;
}

int gs_place_place(gs_place_engine_t *engine, const gs_place_request_t *req,
                   gs_place_decision_t *decision)
{
    int result = gs_place_select(engine, req, decision);
    if (result != 0)
        return result;
    return gs_place_commit(engine->cluster, req, decision);
}
