/* Placement glue: which GPUs a lease goes to (built-in best fit and spread; the placement
 * engine for gpushare and fgd one-GPU leases). */
#include "place.h"
#include "place_engine.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>

/* Orders candidates: negative when a is the better choice. */
static int compare_one(const gs__gpu_t *a, const gs__part_t *pa, const gs__gpu_t *b,
                       const gs__part_t *pb, gs__policy_t policy)
{
    uint64_t left_a = gs__gpu_leasable(a) - a->mem_leased - pa->memory;
    uint64_t left_b = gs__gpu_leasable(b) - b->mem_leased - pb->memory;
    uint32_t cpu_a = 1000 - a->compute_leased - pa->compute;
    uint32_t cpu_b = 1000 - b->compute_leased - pb->compute;
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

static int place_one(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                     gs__policy_t policy, uint32_t allowed, gs__alloc_t *out)
{
    int best = -1;
    gs__part_t parts[GS_MAX_DEVICES];
    int fits[GS_MAX_DEVICES];
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        gs__part_for(&gpus[i], req, 0, &parts[i]);
        parts[i].gpu = i;
        fits[i] = allowed_gpu(allowed, i) && gs__gpu_fits(&gpus[i], req->kind, &parts[i]);
        if (fits[i] &&
            (best < 0 || compare_one(&gpus[i], &parts[i], &gpus[best], &parts[best], policy) < 0))
            best = (int)i;
    }
    if (best < 0)
        return GS_ENOFIT;
    /* gpushare and fgd: the fragmentation-aware engine decides among the GPUs that fit. */
    if (policy == GS__POLICY_GPUSHARE || policy == GS__POLICY_FGD) {
        int pick = gs__place_engine_pick(gpus, n, parts, fits, policy);
        if (pick >= 0)
            best = pick;
    }
    out->n = 1;
    out->part[0] = parts[best];
    return 0;
}

/* Picks g GPUs with overprovision k that can each give s slots; fills out in index order.
 * Returns 0 or GS_ENOFIT. */
static int pick_group(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, unsigned k,
                      unsigned g, unsigned s, gs__policy_t policy, uint32_t allowed,
                      gs__alloc_t *out)
{
    unsigned chosen[GS_MAX_DEVICES], count = 0;
    unsigned free_slots[GS_MAX_DEVICES];
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        unsigned gk = gpus[i].overprovision >= 1 ? gpus[i].overprovision : 1;
        free_slots[i] = gk == k && allowed_gpu(allowed, i) ? gs__gpu_free_slots(&gpus[i]) : 0;
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
            if (chosen[c] != i)
                continue;
            gs__part_t *part = &out->part[out->n++];
            gs__part_for(&gpus[i], req, s, part);
            part->gpu = i;
        }
    }
    return 0;
}

static int place_slots(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                       gs__policy_t policy, uint32_t allowed, gs__alloc_t *out)
{
    unsigned total = req->gpus;
    for (unsigned g = 1; g <= total && g <= n; g++) {
        if (total % g != 0)
            continue;
        unsigned s = total / g;
        /* Each distinct overprovision factor is a group; parts of one lease share one. */
        for (unsigned i = 0; i < n; i++) {
            unsigned k = gpus[i].overprovision >= 1 ? gpus[i].overprovision : 1;
            int first = 1;
            for (unsigned j = 0; j < i; j++)
                first &= (gpus[j].overprovision >= 1 ? gpus[j].overprovision : 1) != k;
            if (!first || s > k)
                continue;
            if (pick_group(gpus, n, req, k, g, s, policy, allowed, out) == 0)
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
static int place_pinned(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                        uint32_t allowed, gs__alloc_t *out)
{
    unsigned slots = req->kind == GS_LEASE_GPUS ? req->gpus / req->n_pinned : 0;
    out->n = 0;
    for (unsigned k = 0; k < req->n_pinned && k < GS_MAX_DEVICES; k++) {
        int g = find_index(gpus, n, req->pinned[k]);
        if (g < 0 || !allowed_gpu(allowed, (unsigned)g))
            return GS_ENOFIT;
        gs__part_t *part = &out->part[out->n++];
        gs__part_for(&gpus[g], req, slots, part);
        part->gpu = (unsigned)g;
        if (!gs__gpu_fits(&gpus[g], req->kind, part))
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

int gs__place_within(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                     gs__policy_t policy, uint32_t allowed, gs__alloc_t *out)
{
    if (n > GS_MAX_DEVICES)
        n = GS_MAX_DEVICES;
    allowed &= gs__place_eligible(gpus, n, req);
    if (req->n_pinned > 0 && req->kind != GS_LEASE_NONE)
        return place_pinned(gpus, n, req, allowed, out);
    if (req->kind == GS_LEASE_GPUS)
        return place_slots(gpus, n, req, policy, allowed, out);
    if (req->kind == GS_LEASE_FRACTION || req->kind == GS_LEASE_MEMORY)
        return place_one(gpus, n, req, policy, allowed, out);
    return GS_ENOFIT;
}

int gs__place(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, gs__policy_t policy,
              gs__alloc_t *out)
{
    return gs__place_within(gpus, n, req, policy, UINT32_MAX, out);
}

static void describe_largest(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                             char *why, size_t whylen)
{
    if (req->kind == GS_LEASE_GPUS) {
        unsigned most = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned k = empty[i].overprovision >= 1 ? empty[i].overprovision : 1;
            unsigned sum = 0;
            for (unsigned j = 0; j < n; j++)
                sum += (empty[j].overprovision >= 1 ? empty[j].overprovision : 1) == k &&
                       gs__gpu_free_slots(&empty[j]) > 0;
            sum *= k;
            most = sum > most ? sum : most;
        }
        snprintf(why, whylen,
                 "%u logical GPUs can never be given on this node (its GPUs offer at most %u "
                 "in one lease)",
                 req->gpus, most);
        return;
    }
    uint64_t largest = 0;
    int shared = 0;
    for (unsigned i = 0; i < n; i++) {
        if (empty[i].mode != GS__MODE_SHARED)
            continue;
        shared = 1;
        uint64_t l = gs__gpu_leasable(&empty[i]);
        largest = l > largest ? l : largest;
    }
    if (!shared) {
        snprintf(why, whylen,
                 "no GPU on this node is shared (fractional leases need mode = "
                 "shared; use --gpus for whole GPUs)");
        return;
    }
    char want[32], have[32];
    gs__part_t part;
    gs__part_for(&empty[0], req, 0, &part);
    gs_qty_format_human(req->kind == GS_LEASE_MEMORY ? req->memory : part.memory, want,
                        sizeof(want));
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
static void describe_pinned(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                            char *why, size_t whylen)
{
    for (unsigned k = 0; k < req->n_pinned; k++) {
        int g = find_index(empty, n, req->pinned[k]);
        if (g < 0) {
            snprintf(why, whylen, "this node has no GPU %u (\"gpus_at\")", req->pinned[k]);
            return;
        }
        gs__part_t part;
        gs__part_for(&empty[g], req, req->kind == GS_LEASE_GPUS ? req->gpus / req->n_pinned : 0,
                     &part);
        if (gs__gpu_fits(&empty[g], req->kind, &part))
            continue;
        if (req->kind == GS_LEASE_GPUS) {
            snprintf(why, whylen,
                     "GPU %u can never give %u logical GPUs to one lease (%s mode, "
                     "overprovision %u)",
                     req->pinned[k], part.slots, gs__mode_name(empty[g].mode),
                     empty[g].overprovision >= 1 ? empty[g].overprovision : 1);
            return;
        }
        char want[32], have[32];
        gs_qty_format_human(part.memory, want, sizeof(want));
        gs_qty_format_human(gs__gpu_leasable(&empty[g]), have, sizeof(have));
        snprintf(why, whylen,
                 "this request can never fit on GPU %u (%s mode, %s leasable; the request takes "
                 "%s of it)",
                 req->pinned[k], gs__mode_name(empty[g].mode), have, want);
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
        empty[m].compute_leased = 0;
        empty[m].slots_leased = 0;
        empty[m].n_leases = 0;
        m++;
    }
    gs__alloc_t alloc;
    if (m > 0 && gs__place(empty, m, req, GS__POLICY_BESTFIT, &alloc) == 0)
        return 0;
    if (n == 0)
        snprintf(why, whylen, "this node has no GPU");
    else if (m == 0)
        describe_types(gpus, n, req, why, whylen);
    else if (req->n_pinned > 0)
        describe_pinned(empty, m, req, why, whylen);
    else
        describe_largest(empty, m, req, why, whylen);
    return GS_ENOFIT;
}
