/* SPDX-License-Identifier: Apache-2.0 */
/* A model of Kubernetes' DRA allocator on one node's gpushare slice: first fit in slice order,
 * consumable capacity with requestPolicy (dra.h). What the online replay allocates with, and
 * what the extender expects the allocator to do. */
#include "dra.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_dra_consume(const gs_dra_capacity_t *cap, int requested, uint64_t amount, uint64_t *out)
{
    if (!requested) {
        *out = cap->policy ? cap->dflt : cap->value;
        return 0;
    }
    if (!cap->policy) { /* unconstrained: exactly what is asked */
        *out = amount;
        return amount <= cap->value ? 0 : GS_ENOFIT;
    }
    uint64_t v = amount < cap->min ? cap->min : amount;
    if (cap->step > 0 && (v - cap->min) % cap->step != 0) {
        uint64_t steps = (v - cap->min) / cap->step + 1;
        if (steps > (UINT64_MAX - cap->min) / cap->step)
            return GS_ENOFIT;
        v = cap->min + steps * cap->step;
    }
    if ((cap->max > 0 && v > cap->max) || v > cap->value)
        return GS_ENOFIT;
    *out = v;
    return 0;
}

/* The device's product is among "A|B" (or models is empty). */
static int model_matches(const char *models, const char *product)
{
    if (models[0] == '\0')
        return 1;
    size_t n = strlen(product);
    for (const char *p = models; *p != '\0';) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, product, n) == 0)
            return 1;
        p += len + (p[len] == '|');
    }
    return 0;
}

/* Whether request r can take device d given usage u; fills what it would consume. */
static int device_fits(const gs_dra_device_t *d, const gs_dra_usage_t *u, const gs_dra_request_t *r,
                       gs_dra_result_t *res)
{
    if (d->mode == GS_DRA_MIG || !model_matches(r->models, d->product))
        return 0;
    if (!d->multiple) { /* a whole device: free, and the asked capacity is there */
        res->consumed = 0;
        return u->allocations == 0 && (!r->has_memory || r->memory <= d->memory.value) &&
               (!r->has_compute || r->compute <= d->compute.value);
    }
    uint64_t mem, compute;
    if (gs_dra_consume(&d->memory, r->has_memory, r->memory, &mem) != 0 ||
        gs_dra_consume(&d->compute, r->has_compute, r->compute, &compute) != 0 ||
        mem > d->memory.value - u->memory || compute > d->compute.value - u->compute)
        return 0;
    res->consumed = 1;
    res->memory = mem;
    res->compute = compute;
    return 1;
}

static void take_device(const gs_dra_device_t *d, gs_dra_usage_t *u, const gs_dra_result_t *res)
{
    u->allocations++;
    u->memory += res->consumed ? res->memory : d->memory.value;
    u->compute += res->consumed ? res->compute : d->compute.value;
}

/* First fit of one request; results appended at out[*n] (out NULL: a dry run that only
 * updates usage). */
static int allocate_request(const gs_dra_slice_t *s, gs_dra_usage_t *usage,
                            const gs_dra_request_t *r, gs_dra_result_t *out, size_t *n,
                            uint64_t *share_seq)
{
    int64_t taken = 0;
    uint8_t mine[GS_DRA_DEVICES] = {0}; /* devices this request took: never twice */
    for (size_t i = 0; i < s->count && taken < r->count; i++) {
        gs_dra_result_t res;
        res.consumed = 0;
        if (mine[i] || !device_fits(&s->devices[i], &usage[i], r, &res))
            continue;
        mine[i] = 1;
        take_device(&s->devices[i], &usage[i], &res);
        taken++;
        if (out == NULL)
            continue;
        snprintf(res.request, sizeof(res.request), "%s", r->name);
        snprintf(res.driver, sizeof(res.driver), "%s", s->driver);
        snprintf(res.pool, sizeof(res.pool), "%s", s->pool);
        snprintf(res.device, sizeof(res.device), "%s", s->devices[i].name);
        res.share_id[0] = '\0';
        if (res.consumed) { /* a k8s-uuid, unique per allocation of a shared device */
            uint64_t seq = ++*share_seq;
            snprintf(res.share_id, sizeof(res.share_id), "%08llx-0000-4000-8000-%012llx",
                     (unsigned long long)(seq >> 48),
                     (unsigned long long)(seq & 0xffffffffffffULL));
        }
        out[(*n)++] = res;
    }
    return taken == r->count ? 0 : GS_ENOFIT;
}

/* Every request is one the model handles, for class; *total gets their device count. */
static int check_claim(const gs_dra_claim_t *claim, const char *class, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < claim->nrequests; i++) {
        const gs_dra_request_t *r = &claim->requests[i];
        if (r->unsupported || strcmp(r->device_class, class) != 0 || r->count < 1)
            return GS_EINVAL;
        *total += (size_t)r->count;
    }
    return 0;
}

int gs_dra_fits(const gs_dra_slice_t *slice, const gs_dra_usage_t *usage, const char *class,
                const gs_dra_claim_t *claim)
{
    gs_dra_usage_t trial[GS_DRA_DEVICES];
    size_t total;
    if (check_claim(claim, class, &total) != 0 || slice->count > GS_DRA_DEVICES)
        return 0;
    memcpy(trial, usage, slice->count * sizeof(*trial));
    for (size_t i = 0; i < claim->nrequests; i++) {
        if (allocate_request(slice, trial, &claim->requests[i], NULL, NULL, NULL) != 0)
            return 0;
    }
    return 1;
}

int gs_dra_allocate(const gs_dra_slice_t *slice, gs_dra_usage_t *usage, const char *class,
                    gs_dra_claim_t *claim, uint64_t *share_seq)
{
    size_t total;
    if (check_claim(claim, class, &total) != 0)
        return GS_EINVAL;
    gs_dra_usage_t *trial = malloc((slice->count ? slice->count : 1) * sizeof(*trial));
    gs_dra_result_t *results = calloc(total ? total : 1, sizeof(*results));
    int result = trial == NULL || results == NULL ? GS_ENOMEM : 0;
    size_t n = 0;
    uint64_t seq = *share_seq;
    if (result == 0)
        memcpy(trial, usage, slice->count * sizeof(*trial));
    for (size_t i = 0; i < claim->nrequests && result == 0; i++)
        result = allocate_request(slice, trial, &claim->requests[i], results, &n, &seq);
    if (result == 0) {
        memcpy(usage, trial, slice->count * sizeof(*trial));
        free(claim->results);
        claim->results = results;
        claim->nresults = n;
        claim->allocated = 1;
        snprintf(claim->node, sizeof(claim->node), "%s", slice->node);
        *share_seq = seq;
        results = NULL;
    }
    free(trial);
    free(results);
    return result;
}

uint32_t gs_dra_milli_left(const gs_dra_device_t *dev, const gs_dra_usage_t *use)
{
    if (dev->mode == GS_DRA_MIG || dev->compute.value == 0 || use->compute >= dev->compute.value ||
        (!dev->multiple && use->allocations > 0))
        return 0;
    return (uint32_t)((dev->compute.value - use->compute) * GS_PLACE_MILLI / dev->compute.value);
}

/* The sort key of a device in an order: smaller first. */
static uint64_t order_key(const gs_dra_device_t *dev, const gs_dra_usage_t *use,
                          gs_place_order_t how)
{
    uint64_t index = (uint64_t)(dev->index < 0 ? 0 : dev->index) & 0xffffffffu;
    uint64_t group = dev->mode == GS_DRA_MIG ? 2 : 0;
    if (how == GS_PLACE_ORDER_TIGHTEST && group == 0) {
        uint32_t left = gs_dra_milli_left(dev, use);
        group = left == 0 ? 1 : 0;
        return group << 62 | (uint64_t)left << 32 | index;
    }
    return group << 62 | index;
}

int gs_dra_order_devices(gs_dra_slice_t *slice, gs_dra_usage_t *usage, gs_place_order_t how)
{
    if ((how != GS_PLACE_ORDER_INDEX && how != GS_PLACE_ORDER_TIGHTEST) ||
        slice->count > GS_DRA_DEVICES)
        return GS_EINVAL;
    int changed = 0;
    for (size_t i = 1; i < slice->count; i++) { /* insertion sort: a node has few devices */
        gs_dra_device_t dev = slice->devices[i];
        gs_dra_usage_t use = usage[i];
        uint64_t key = order_key(&dev, &use, how);
        size_t j = i;
        for (; j > 0 && order_key(&slice->devices[j - 1], &usage[j - 1], how) > key; j--) {
            slice->devices[j] = slice->devices[j - 1];
            usage[j] = usage[j - 1];
        }
        changed |= j != i;
        slice->devices[j] = dev;
        usage[j] = use;
    }
    return changed;
}
