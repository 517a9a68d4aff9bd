/* SPDX-License-Identifier: Apache-2.0 */
/* Placement glue: which GPUs a lease goes to (built-in best fit and spread; the placement
 * engine for gpushare and fgd one-GPU leases). */
#include "place.h"
#include "mode_ops.h"
#include "place_engine.h"
#include "reasons.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>

/* What placement asks of every GPU: the request, for whom, judged now or on an idle node. */
typedef struct query {
    const gs_lease_request_t *req;
    uint32_t uid;
    int idle;
    uint32_t allowed; /* the GPUs (bits by position) it may use */
} query_t;

/* Admission of q on gpu with slots logical GPUs; fills *part (its gpu set to i). Returns the
 * mode's answer (0 = fits). */
static int admit(const gs__gpu_t *gpus, unsigned i, const query_t *q, unsigned slots,
                 gs__part_t *part)
{
    gs__ask_t ask = {.req = q->req, .uid = q->uid, .slots = slots, .idle = q->idle};
    int result = gs__gpu_admit(&gpus[i], &ask, part);
    part->gpu = i;
    return result;
}

static uint64_t left_after(uint64_t total, uint64_t a, uint64_t b)
{
    return total > a && total - a > b ? total - a - b : 0;
}

/* Orders candidates: negative when a is the better choice. */
static int compare_one(const gs__gpu_t *a, const gs__part_t *pa, const gs__gpu_t *b,
                       const gs__part_t *pb, gs__policy_t policy)
{
    uint64_t left_a = left_after(gs__gpu_mem_free(a), 0, pa->memory);
    uint64_t left_b = left_after(gs__gpu_mem_free(b), 0, pb->memory);
    uint64_t cpu_a = left_after(1000, a->compute_leased, pa->compute);
    uint64_t cpu_b = left_after(1000, b->compute_leased, pb->compute);
    int sign = policy == GS__POLICY_SPREAD ? -1 : 1;
    if (left_a != left_b)
        return sign * (left_a < left_b ? -1 : 1);
    if (cpu_a != cpu_b)
        return sign * (cpu_a < cpu_b ? -1 : 1);
    return a->index < b->index ? -1 : 1;
}

static int allowed_gpu(uint32_t allowed, unsigned i)
{
    return i < GS_MAX_DEVICES && (allowed & (UINT32_C(1) << i)) != 0;
}

/* gpushare and fgd: the fragmentation-aware engine decides among the pool GPUs (shared, mps)
 * that fit; GPUs of other modes are chosen by the built-in rule when no pool GPU fits. */
static int engine_pick(const gs__gpu_t *gpus, unsigned n, const gs__part_t *parts, const int *fits,
                       gs__policy_t policy)
{
    int pool[GS_MAX_DEVICES], any = 0;
    for (unsigned i = 0; i < n; i++) {
        pool[i] = fits[i] && (gpus[i].ops->flags & GS__MODE_POOL);
        any |= pool[i];
    }
    return any ? gs__place_engine_pick(gpus, n, parts, pool, policy) : -1;
}

static int place_one(const gs__gpu_t *gpus, unsigned n, const query_t *q, gs__policy_t policy,
                     gs__alloc_t *out)
{
    int best = -1, best_pool = -1;
    gs__part_t parts[GS_MAX_DEVICES];
    int fits[GS_MAX_DEVICES];
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        fits[i] = allowed_gpu(q->allowed, i) && admit(gpus, i, q, 0, &parts[i]) == 0;
        if (!fits[i])
            continue;
        if (best < 0 || compare_one(&gpus[i], &parts[i], &gpus[best], &parts[best], policy) < 0)
            best = (int)i;
        if ((gpus[i].ops->flags & GS__MODE_POOL) &&
            (best_pool < 0 ||
             compare_one(&gpus[i], &parts[i], &gpus[best_pool], &parts[best_pool], policy) < 0))
            best_pool = (int)i;
    }
    if (best < 0)
        return GS_ENOFIT;
    if (policy == GS__POLICY_GPUSHARE || policy == GS__POLICY_FGD) {
        int pick = engine_pick(gpus, n, parts, fits, policy);
        best = pick >= 0 ? pick : best_pool >= 0 ? best_pool : best;
    }
    out->n = 1;
    out->part[0] = parts[best];
    return 0;
}

static unsigned overprovision_of(const gs__gpu_t *gpu)
{
    return gpu->overprovision >= 1 ? gpu->overprovision : 1;
}

/* Picks g GPUs with overprovision k that can each give s slots; fills out in index order.
 * Returns 0 or GS_ENOFIT. */
static int pick_group(const gs__gpu_t *gpus, unsigned n, const query_t *q, unsigned k, unsigned g,
                      unsigned s, gs__policy_t policy, gs__alloc_t *out)
{
    unsigned chosen[GS_MAX_DEVICES], count = 0;
    unsigned free_slots[GS_MAX_DEVICES];
    gs__part_t parts[GS_MAX_DEVICES];
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        int ok = overprovision_of(&gpus[i]) == k && allowed_gpu(q->allowed, i) &&
                 admit(gpus, i, q, s, &parts[i]) == 0 &&
                 (g == 1 || !(gpus[i].ops->flags & GS__MODE_ONE_GPU));
        free_slots[i] = ok ? (q->idle ? k : gs__gpu_free_slots(&gpus[i])) : 0;
    }
    /* Select g candidates one by one: fewest free slots (bestfit) or most (spread). */
    while (count < g) {
        int best = -1;
        for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
            if (free_slots[i] < s)
                continue;
            if (best < 0 || (policy == GS__POLICY_SPREAD ? free_slots[i] > free_slots[best]
                                                         : free_slots[i] < free_slots[best]))
                best = (int)i;
        }
        if (best < 0)
            return GS_ENOFIT;
        chosen[count++] = (unsigned)best;
        free_slots[best] = 0;
    }
    out->n = 0;
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        for (unsigned c = 0; c < count; c++) {
            if (chosen[c] == i)
                out->part[out->n++] = parts[i];
        }
    }
    return 0;
}

/* The memory an allocation gives, to compare candidates: less is a better fit. */
static uint64_t alloc_memory(const gs__alloc_t *a)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < a->n; i++)
        sum += a->part[i].memory;
    return sum;
}

/* --gpus N: the fewest GPUs that can give it; among the groups of GPUs of one overprovision
 * factor that can, the one whose slots give the least (a logical GPU is the smallest that fits:
 * a quarter of an A100 before a whole H100, which larger requests may need), or with spread the
 * most. */
static int place_slots(const gs__gpu_t *gpus, unsigned n, const query_t *q, gs__policy_t policy,
                       gs__alloc_t *out)
{
    unsigned total = q->req->gpus;
    for (unsigned g = 1; g <= total && g <= n; g++) {
        if (total % g != 0)
            continue;
        unsigned s = total / g;
        int found = 0;
        /* Each distinct overprovision factor is a group; parts of one lease share one. */
        for (unsigned i = 0; i < n; i++) {
            unsigned k = overprovision_of(&gpus[i]);
            int first = 1;
            for (unsigned j = 0; j < i; j++)
                first &= overprovision_of(&gpus[j]) != k;
            gs__alloc_t candidate;
            if (!first || s > k || pick_group(gpus, n, q, k, g, s, policy, &candidate) != 0)
                continue;
            uint64_t mine = alloc_memory(&candidate), best = found ? alloc_memory(out) : 0;
            if (!found || (policy == GS__POLICY_SPREAD ? mine > best : mine < best))
                *out = candidate;
            found = 1;
        }
        if (found)
            return 0;
    }
    return GS_ENOFIT;
}

/* The position in gpus of the GPU with NVML index index, or -1. */
static int find_index(const gs__gpu_t *gpus, unsigned n, unsigned index)
{
    for (unsigned i = 0; i < n; i++) {
        if (gpus[i].index == index)
            return (int)i;
    }
    return -1;
}

/* A pinned request: exactly its GPUs, in its order (CUDA ordinal k is gpus_at[k]). */
static int place_pinned(const gs__gpu_t *gpus, unsigned n, const query_t *q, gs__alloc_t *out)
{
    const gs_lease_request_t *req = q->req;
    unsigned slots = req->kind == GS_LEASE_GPUS ? req->gpus / req->n_pinned : 0;
    out->n = 0;
    for (unsigned k = 0; k < req->n_pinned && k < GS_MAX_DEVICES; k++) {
        int g = find_index(gpus, n, req->pinned[k]);
        if (g < 0 || !allowed_gpu(q->allowed, (unsigned)g))
            return GS_ENOFIT;
        if (req->n_pinned > 1 && (gpus[g].ops->flags & GS__MODE_ONE_GPU))
            return GS_ENOFIT;
        if (admit(gpus, (unsigned)g, q, slots, &out->part[out->n++]) != 0)
            return GS_ENOFIT;
    }
    return out->n > 0 ? 0 : GS_ENOFIT;
}

uint32_t gs__place_eligible(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req)
{
    uint32_t mask = 0;
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    for (unsigned i = 0; i < n; i++) {
        int ok = req->n_gpu_types == 0;
        for (unsigned t = 0; t < req->n_gpu_types && !ok; t++)
            ok = gs_gpu_type_matches(req->gpu_types[t], gpus[i].name);
        for (unsigned k = 0; ok && req->n_pinned > 0; k++) {
            if (k == req->n_pinned) {
                ok = 0;
                break;
            }
            if (req->pinned[k] == gpus[i].index)
                break;
        }
        mask |= ok ? UINT32_C(1) << i : 0;
    }
    return mask;
}

static int place_query(const gs__gpu_t *gpus, unsigned n, const query_t *q, gs__policy_t policy,
                       gs__alloc_t *out)
{
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    if (q->req->kind == GS_LEASE_NONE)
        return GS_ENOFIT;
    if (q->req->n_pinned > 0)
        return place_pinned(gpus, n, q, out);
    if (q->req->kind == GS_LEASE_GPUS)
        return place_slots(gpus, n, q, policy, out);
    return place_one(gpus, n, q, policy, out);
}

int gs__place_within(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, uint32_t uid,
                     gs__policy_t policy, uint32_t allowed, gs__alloc_t *out)
{
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    query_t q = {
        .req = req, .uid = uid, .idle = 0, .allowed = allowed & gs__place_eligible(gpus, n, req)};
    return place_query(gpus, n, &q, policy, out);
}

int gs__place_ever(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                   uint32_t allowed, gs__alloc_t *out)
{
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    query_t q = {.req = req,
                 .uid = GS__UID_ANY,
                 .idle = 1,
                 .allowed = allowed & gs__place_eligible(gpus, n, req)};
    return place_query(gpus, n, &q, GS__POLICY_BESTFIT, out);
}

int gs__place_for(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, uint32_t uid,
                  gs__policy_t policy, gs__alloc_t *out)
{
    return gs__place_within(gpus, n, req, uid, policy, UINT32_MAX, out);
}

int gs__place(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, gs__policy_t policy,
              gs__alloc_t *out)
{
    return gs__place_for(gpus, n, req, GS__UID_ANY, policy, out);
}

int gs__place_possible(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, char *why,
                       size_t whylen)
{
    gs__gpu_t empty[GS_MAX_DEVICES];
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    uint32_t eligible = gs__place_eligible(gpus, n, req);
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        if (req->n_gpu_types > 0 && !allowed_gpu(eligible, i))
            continue; /* the messages below speak of the GPUs of its models only */
        empty[m] = gpus[i];
        empty[m].mem_leased = 0;
        empty[m].outside = 0;
        empty[m].compute_leased = 0;
        empty[m].slots_leased = 0;
        empty[m].n_leases = 0;
        m++;
    }
    query_t q = {.req = req, .uid = GS__UID_ANY, .idle = 1, .allowed = UINT32_MAX};
    gs__alloc_t alloc;
    if (m > 0 && place_query(empty, m, &q, GS__POLICY_BESTFIT, &alloc) == 0)
        return 0;
    return gs__reason_never(gpus, n, empty, m, req, why, whylen);
}
