/* SPDX-License-Identifier: Apache-2.0 */
/* Online placement: first-fit GPU choice in a device order, scores of such placements, and the
 * device orders a driver may publish (include/gpushare/placement_online.h). */
#include "placement_internal.h"

#include "gpushare/error.h"
#include "gpushare/placement_online.h"

#include <string.h>

static const char *const order_names[GS_PLACE_ORDER_COUNT] = {"index", "tightest", "policy"};

/* Above this many distinct GPU rooms on a node, the policy order is built greedily rather than
 * by trying every order of the rooms (7! = 5040 orders). */
#define EXACT_CLASSES 7

int gs_place_order_parse(const char *name, gs_place_order_t *how)
{
    for (int i = 0; i < GS_PLACE_ORDER_COUNT; i++) {
        if (strcmp(name, order_names[i]) == 0) {
            *how = (gs_place_order_t)i;
            return 0;
        }
    }
    return GS_EINVAL;
}

const char *gs_place_order_name(gs_place_order_t how)
{
    return (int)how >= 0 && how < GS_PLACE_ORDER_COUNT ? order_names[how] : "?";
}

/* A GPU's rank in the tightest order: full GPUs last, then least room first. */
static uint32_t tight_key(uint32_t left)
{
    return left == 0 ? GS_PLACE_MILLI + 1 : left;
}

static void order_tightest(const gs__node_t *n, uint8_t *order)
{
    for (uint32_t i = 0; i < n->ngpu; i++) { /* insertion sort, stable: index on ties */
        uint8_t g = (uint8_t)i;
        uint32_t j = i;
        for (; j > 0 && tight_key(n->gpu_left[order[j - 1]]) > tight_key(n->gpu_left[g]); j--)
            order[j] = order[j - 1];
        order[j] = g;
    }
}

/* The policy's preferences on a node: for each GPU share shape of the target workload that the
 * node can take, its size, frequency and the room of the GPU the policy would give it. */
typedef struct prefs {
    uint32_t size[GS__PACK_SIZES * 4];
    uint32_t room[GS__PACK_SIZES * 4];
    double weight[GS__PACK_SIZES * 4];
    size_t n;
} prefs_t;

static void policy_prefs(gs_place_engine_t *e, const gs__node_t *node, prefs_t *p)
{
    p->n = 0;
    for (size_t i = 0; i < e->nshapes && p->n < sizeof(p->size) / sizeof(p->size[0]); i++) {
        const gs_place_request_t *m = &e->shapes[i].req;
        if (m->num_gpu != 1 || m->gpu_milli >= GS_PLACE_MILLI || !gs__node_feasible(node, m))
            continue;
        gs_place_decision_t d = {.node = -1};
        gs__frag_choose(e, node, m, &d);
        p->size[p->n] = m->gpu_milli;
        p->room[p->n] = node->gpu_left[d.gpus[0]];
        p->weight[p->n] = e->shapes[i].weight;
        p->n++;
    }
}

/* Weight of the shapes whose first fit over rooms in class order cls[0..k) is the policy's. */
static double agreement(const prefs_t *p, const uint32_t *room, const int *cls, int k)
{
    double sum = 0;
    for (size_t s = 0; s < p->n; s++) {
        for (int c = 0; c < k; c++) {
            if (room[cls[c]] >= p->size[s]) {
                sum += room[cls[c]] == p->room[s] ? p->weight[s] : 0;
                break;
            }
        }
    }
    return sum;
}

/* Tries every order of the k room classes (Heap's algorithm); keeps the first best, so the
 * starting order (tightest) wins ties. */
static void best_exact(const prefs_t *p, const uint32_t *room, int k, int *best)
{
    int perm[GS_PLACE_MAX_GPUS] = {0}, c[GS_PLACE_MAX_GPUS] = {0};
    for (int i = 0; i < k; i++)
        perm[i] = best[i] = i;
    double top = agreement(p, room, perm, k);
    for (int i = 1; i < k;) {
        if (c[i] >= i) {
            c[i++] = 0;
            continue;
        }
        int a = i % 2 == 0 ? 0 : c[i], t = perm[a];
        perm[a] = perm[i];
        perm[i] = t;
        c[i]++;
        i = 1;
        double v = agreement(p, room, perm, k);
        if (v > top + 1e-12) {
            top = v;
            memcpy(best, perm, (size_t)k * sizeof(*perm));
        }
    }
}

/* Greedy for many classes: each next class is the one that adds the most agreement. */
static void best_greedy(const prefs_t *p, const uint32_t *room, int k, int *best)
{
    int used[GS_PLACE_MAX_GPUS] = {0};
    for (int pos = 0; pos < k; pos++) {
        int pick = -1;
        double top = -1;
        for (int c = 0; c < k; c++) {
            if (used[c])
                continue;
            best[pos] = c;
            double v = agreement(p, room, best, pos + 1);
            if (v > top + 1e-12) {
                top = v;
                pick = c;
            }
        }
        best[pos] = pick;
        used[pick] = 1;
    }
}

static void order_policy(gs_place_engine_t *e, const gs__node_t *n, uint8_t *order)
{
    uint8_t tight[GS_PLACE_MAX_GPUS];
    order_tightest(n, tight);
    uint32_t room[GS_PLACE_MAX_GPUS] = {0};
    int k = 0, best[GS_PLACE_MAX_GPUS] = {0};
    for (uint32_t i = 0; i < n->ngpu; i++) { /* distinct rooms, in the tightest order */
        uint32_t r = n->gpu_left[tight[i]];
        if (k == 0 || room[k - 1] != r)
            room[k++] = r;
    }
    prefs_t p;
    policy_prefs(e, n, &p);
    if (k <= EXACT_CLASSES)
        best_exact(&p, room, k, best);
    else
        best_greedy(&p, room, k, best);
    uint32_t out = 0;
    for (int c = 0; c < k; c++) {
        for (uint32_t i = 0; i < n->ngpu; i++) {
            if (n->gpu_left[tight[i]] == room[best[c]])
                order[out++] = tight[i];
        }
    }
}

int gs_place_device_order(gs_place_engine_t *engine, int node, gs_place_order_t how,
                          uint8_t order[GS_PLACE_MAX_GPUS])
{
    const gs_place_cluster_t *c = engine->cluster;
    if (node < 0 || (size_t)node >= c->count || (int)how < 0 || how >= GS_PLACE_ORDER_COUNT)
        return GS_EINVAL;
    const gs__node_t *n = &c->nodes[node];
    if (how == GS_PLACE_ORDER_POLICY) {
        if (engine->ops->frag == NULL || (size_t)node >= engine->nodes_seen)
            return GS_EINVAL;
        order_policy(engine, n, order);
    } else if (how == GS_PLACE_ORDER_TIGHTEST) {
        order_tightest(n, order);
    } else {
        for (uint32_t g = 0; g < n->ngpu; g++)
            order[g] = (uint8_t)g;
    }
    return 0;
}

int gs_place_first_fit(const gs_place_cluster_t *cluster, int node, const uint8_t *order, size_t n,
                       const gs_place_request_t *req, gs_place_decision_t *d)
{
    if (node < 0 || (size_t)node >= cluster->count || gs_place_request_check(req, NULL, 0) != 0)
        return GS_EINVAL;
    const gs__node_t *nd = &cluster->nodes[node];
    memset(d, 0, sizeof(*d));
    d->node = node;
    uint32_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (order[i] >= nd->ngpu || (seen & (UINT32_C(1) << order[i])))
            return GS_EINVAL;
        seen |= UINT32_C(1) << order[i];
    }
    if (!gs__node_feasible(nd, req) || nd->mem_left < req->mem_mib)
        return GS_ENOFIT;
    for (size_t i = 0; i < n && d->num_gpu < req->num_gpu; i++) {
        if (gs__gpu_fits(nd, order[i], req))
            d->gpus[d->num_gpu++] = order[i];
    }
    if (d->num_gpu < req->num_gpu)
        return GS_ENOFIT;
    for (uint32_t i = 1; i < d->num_gpu; i++) { /* ascending, as decisions are */
        uint8_t g = d->gpus[i];
        uint32_t j = i;
        for (; j > 0 && d->gpus[j - 1] > g; j--)
            d->gpus[j] = d->gpus[j - 1];
        d->gpus[j] = g;
    }
    return 0;
}

int gs_place_score_decision(gs_place_engine_t *engine, const gs_place_request_t *req,
                            const gs_place_decision_t *d, int64_t *score)
{
    const gs_place_cluster_t *c = engine->cluster;
    if (engine->ops->frag == NULL || d->node < 0 || (size_t)d->node >= c->count ||
        (size_t)d->node >= engine->nodes_seen || gs_place_request_check(req, NULL, 0) != 0 ||
        d->num_gpu != req->num_gpu)
        return GS_EINVAL;
    const gs__node_t *n = &c->nodes[d->node];
    for (uint32_t i = 0; i < d->num_gpu; i++) {
        if (d->gpus[i] >= n->ngpu || (i > 0 && d->gpus[i] <= d->gpus[i - 1]))
            return GS_EINVAL;
        if (!gs__gpu_fits(n, d->gpus[i], req))
            return GS_ENOFIT;
    }
    if (!gs__node_feasible(n, req) || n->mem_left < req->mem_mib)
        return GS_ENOFIT;
    *score = gs__frag_score_decision(engine, n, req, d);
    return 0;
}

int gs_place_score_node(gs_place_engine_t *engine, const gs_place_request_t *req, int node,
                        int64_t *score, gs_place_decision_t *d)
{
    const gs_place_cluster_t *c = engine->cluster;
    if (engine->ops->frag == NULL || node < 0 || (size_t)node >= c->count ||
        (size_t)node >= engine->nodes_seen || gs_place_request_check(req, NULL, 0) != 0)
        return GS_EINVAL;
    const gs__node_t *n = &c->nodes[node];
    if (!gs__node_feasible(n, req) || n->mem_left < req->mem_mib)
        return GS_ENOFIT;
    memset(d, 0, sizeof(*d));
    d->node = node;
    *score = gs__frag_score(engine, n, req);
    if (req->num_gpu > 0)
        gs__frag_choose(engine, n, req, d);
    return 0;
}

int gs_place_node_rank(const gs_place_engine_t *engine, int node, uint64_t *rank)
{
    if (node < 0 || (size_t)node >= engine->nodes_seen)
        return GS_EINVAL;
    *rank = engine->rank[node];
    return 0;
}
