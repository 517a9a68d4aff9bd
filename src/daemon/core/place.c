/* SPDX-License-Identifier: Apache-2.0 */
/* Placement glue: which GPUs a lease goes to (built-in best fit and spread; the placement
 * engine for gpushare and fgd one-GPU leases). */
#include "place.h"
#include "mode_ops.h"
#include "place_engine.h"

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

static int place_slots(const gs__gpu_t *gpus, unsigned n, const query_t *q, gs__policy_t policy,
                       gs__alloc_t *out)
{
    unsigned total = q->req->gpus;
    for (unsigned g = 1; g <= total && g <= n; g++) {
        if (total % g != 0)
            continue;
        unsigned s = total / g;
        /* Each distinct overprovision factor is a group; parts of one lease share one. */
        for (unsigned i = 0; i < n; i++) {
            unsigned k = overprovision_of(&gpus[i]);
            int first = 1;
            for (unsigned j = 0; j < i; j++)
                first &= overprovision_of(&gpus[j]) != k;
            if (!first || s > k)
                continue;
            if (pick_group(gpus, n, q, k, g, s, policy, out) == 0)
                return 0;
        }
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

/* The reason the first GPU that would serve q but cannot now gives (GS_EAGAIN), in why.
 * Returns 1 when there is one. */
static int unavailable(const gs__gpu_t *gpus, unsigned n, const query_t *q, char *why,
                       size_t whylen)
{
    const gs_lease_request_t *req = q->req;
    for (unsigned i = 0; i < n; i++) {
        gs__part_t part;
        int pinned = req->n_pinned == 0;
        for (unsigned k = 0; k < req->n_pinned; k++)
            pinned |= req->pinned[k] == gpus[i].index;
        if (!pinned || (req->n_pinned > 1 && (gpus[i].ops->flags & GS__MODE_ONE_GPU)))
            continue; /* it could not serve this request even when it is ready */
        if (admit(gpus, i, q, req->kind == GS_LEASE_GPUS ? 1 : 0, &part) != GS_EAGAIN)
            continue;
        gs__ask_t ask = {.req = q->req, .uid = q->uid, .slots = 0, .idle = 1};
        gs__gpu_why_not(&gpus[i], &ask, why, whylen);
        return 1;
    }
    return 0;
}

/* Why no GPU serves q at all (modes that do not take such requests). */
static void describe_unserved(const gs__gpu_t *gpus, unsigned n, const query_t *q, char *why,
                              size_t whylen)
{
    const gs_lease_request_t *req = q->req;
    gs_gpu_mode_t mode =
        req->kind == GS_LEASE_MIG ? gs_gpu_mode_with(GS_MODE_MIG_INSTANCES) : req->mode;
    int has_mode = mode == GS_GPU_MODE_ANY;
    for (unsigned i = 0; i < n && !has_mode; i++)
        has_mode = gpus[i].mode == mode;
    if (!has_mode) {
        snprintf(why, whylen, "no GPU on this node is mode %s%s", gs_gpu_mode_name(mode),
                 req->kind == GS_LEASE_MIG ? " (--mig-profile needs one)" : "");
        return;
    }
    if ((req->kind == GS_LEASE_FRACTION || req->kind == GS_LEASE_MEMORY) &&
        req->mode == GS_GPU_MODE_ANY) {
        char modes[128];
        snprintf(why, whylen,
                 "no GPU on this node serves fractional leases (they need mode = %s; use --gpus "
                 "for whole GPUs)",
                 gs_gpu_mode_list(GS_MODE_SHARES_GPU, 0, 0, NULL, modes, sizeof(modes)));
        return;
    }
    /* The reason of a GPU of the asked mode first, then any GPU's. */
    why[0] = '\0';
    for (int pass = 0; pass < 2 && why[0] == '\0'; pass++) {
        for (unsigned i = 0; i < n && why[0] == '\0'; i++) {
            int same = gpus[i].mode == mode;
            gs__ask_t ask = {.req = req, .uid = q->uid, .slots = 0, .idle = 1};
            if (pass == 1 || same)
                gs__gpu_why_not(&gpus[i], &ask, why, whylen);
        }
    }
    if (why[0] == '\0')
        snprintf(why, whylen, "no GPU on this node can serve this request");
}

static void describe_largest(const gs__gpu_t *empty, unsigned n, const query_t *q, char *why,
                             size_t whylen)
{
    const gs_lease_request_t *req = q->req;
    uint64_t largest = 0;
    int serving = 0;
    for (unsigned i = 0; i < n; i++) {
        gs__part_t part;
        int result = admit(empty, i, q, req->kind == GS_LEASE_GPUS ? 1 : 0, &part);
        if (result == GS_ENOTSUP || result == GS_EAGAIN)
            continue;
        serving = 1;
        uint64_t l = gs__gpu_leasable(&empty[i]);
        largest = l > largest ? l : largest;
    }
    if (!serving) {
        describe_unserved(empty, n, q, why, whylen);
        return;
    }
    if (req->kind == GS_LEASE_GPUS) {
        /* GPUs of one factor k together, or one GPU of a one-GPU mode alone. */
        unsigned most = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned k = overprovision_of(&empty[i]);
            unsigned sum = 0;
            for (unsigned j = 0; j < n; j++)
                sum += overprovision_of(&empty[j]) == k && gs__gpu_free_slots(&empty[j]) > 0 &&
                       !(empty[j].ops->flags & GS__MODE_ONE_GPU);
            sum *= k;
            if (gs__gpu_free_slots(&empty[i]) > 0 && k > sum)
                sum = k;
            most = sum > most ? sum : most;
        }
        snprintf(why, whylen,
                 "%u logical GPUs can never be given on this node (its GPUs offer at most %u "
                 "in one lease)",
                 req->gpus, most);
        return;
    }
    char want[32], have[32];
    gs_qty_format_human(req->memory, want, sizeof(want));
    gs_qty_format_human(largest, have, sizeof(have));
    if (req->kind == GS_LEASE_MEMORY && req->memory > largest)
        snprintf(why, whylen,
                 "%s of GPU memory can never fit on this node (the largest GPU has %s leasable "
                 "after its reserve)",
                 want, have);
    else
        snprintf(why, whylen, "this request can never fit on this node's GPUs");
}

/* Why a pinned request can never fit: a GPU it names is missing, or too small for it. */
static void describe_pinned(const gs__gpu_t *empty, unsigned n, const query_t *q, char *why,
                            size_t whylen)
{
    const gs_lease_request_t *req = q->req;
    for (unsigned k = 0; k < req->n_pinned; k++) {
        int g = find_index(empty, n, req->pinned[k]);
        if (g < 0) {
            snprintf(why, whylen, "this node has no GPU %u (\"gpus_at\")", req->pinned[k]);
            return;
        }
        if (req->n_pinned > 1 && (empty[g].ops->flags & GS__MODE_ONE_GPU)) {
            snprintf(why, whylen, "GPU %u is mode %s: a lease holding it holds no other GPU",
                     req->pinned[k], gs_gpu_mode_name(empty[g].mode));
            return;
        }
        gs__part_t part;
        unsigned slots = req->kind == GS_LEASE_GPUS ? req->gpus / req->n_pinned : 0;
        int result = admit(empty, (unsigned)g, q, slots, &part);
        if (result == 0)
            continue;
        gs__ask_t ask = {.req = req, .uid = q->uid, .slots = slots, .idle = 1};
        if (result == GS_ENOTSUP || result == GS_EAGAIN) {
            gs__gpu_why_not(&empty[g], &ask, why, whylen);
            return;
        }
        if (req->kind == GS_LEASE_GPUS) {
            snprintf(why, whylen,
                     "GPU %u can never give %u logical GPUs to one lease (%s mode, "
                     "overprovision %u)",
                     req->pinned[k], slots, gs_gpu_mode_name(empty[g].mode),
                     overprovision_of(&empty[g]));
            return;
        }
        char want[32], have[32];
        gs__part_for(&empty[g], req, 0, &part);
        gs_qty_format_human(part.memory, want, sizeof(want));
        gs_qty_format_human(gs__gpu_leasable(&empty[g]), have, sizeof(have));
        snprintf(why, whylen,
                 "this request can never fit on GPU %u (%s mode, %s leasable; the request takes "
                 "%s of it)",
                 req->pinned[k], gs_gpu_mode_name(empty[g].mode), have, want);
        return;
    }
    snprintf(why, whylen, "this request can never fit on the GPUs of \"gpus_at\"");
}

/* Why no GPU is of the models req names: "no GPU of this node is a V100 (it has A100-40GB,
 * T4)". */
static void describe_types(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                           char *why, size_t whylen)
{
    size_t off = (size_t)snprintf(why, whylen, "no GPU of this node is ");
    for (unsigned t = 0; t < req->n_gpu_types && off < whylen; t++)
        off += (size_t)snprintf(why + off, whylen - off, "%s%s", t == 0 ? "a " : " or ",
                                req->gpu_types[t]);
    for (unsigned i = 0; i < n && off < whylen; i++) {
        int seen = 0;
        for (unsigned j = 0; j < i && !seen; j++)
            seen = strcmp(gpus[j].name, gpus[i].name) == 0;
        if (!seen)
            off += (size_t)snprintf(why + off, whylen - off, "%s%s", i == 0 ? " (it has " : ", ",
                                    gpus[i].name);
    }
    if (off < whylen && n > 0)
        snprintf(why + off, whylen - off, ")");
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
    if (n == 0)
        snprintf(why, whylen, "this node has no GPU");
    else if (m == 0)
        describe_types(gpus, n, req, why, whylen);
    else if (unavailable(empty, m, &q, why, whylen))
        return GS_EAGAIN;
    else if (req->n_pinned > 0)
        describe_pinned(empty, m, &q, why, whylen);
    else
        describe_largest(empty, m, &q, why, whylen);
    return GS_ENOFIT;
}
