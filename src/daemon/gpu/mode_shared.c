/* SPDX-License-Identifier: Apache-2.0 */
/* Modes shared and exclusive: leases take memory and compute from the GPU's pool (model.h),
 * enforced by the shim; an exclusive GPU gives whole GPUs, one lease at a time. */
#include "mode.h"

#include "gpushare/error.h"

#include <stdio.h>

static int pool_kind(gs_lease_kind_t kind)
{
    return kind == GS_LEASE_GPUS || kind == GS_LEASE_FRACTION || kind == GS_LEASE_MEMORY;
}

static int shared_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    if (!pool_kind(ask->req->kind))
        return GS_ENOTSUP;
    gs__part_for(gpu, ask->req, ask->slots, part);
    int fits = ask->idle ? gs__gpu_fits_idle(gpu, ask->req->kind, part)
                         : gs__gpu_fits(gpu, ask->req->kind, part);
    return fits ? 0 : GS_ENOFIT;
}

static int exclusive_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    if (ask->req->kind != GS_LEASE_GPUS)
        return GS_ENOTSUP;
    gs__part_for(gpu, ask->req, ask->slots, part);
    if (part->slots != 1)
        return GS_ENOFIT;
    return ask->idle || (gpu->n_leases == 0 && gpu->outside == 0) ? 0 : GS_ENOFIT;
}

static void exclusive_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len)
{
    if (ask->req->kind != GS_LEASE_GPUS)
        snprintf(buf, len, "GPU %u is mode exclusive: it gives whole GPUs (--gpus) only",
                 gpu->index);
}

static unsigned exclusive_free_slots(const gs__gpu_t *gpu)
{
    return gpu->n_leases == 0 ? 1 : 0;
}

static const gs__mode_ops_t shared = {
    .name = "shared",
    .flags = GS__MODE_POOL | GS__MODE_SHIM_COMPUTE,
    .admit = shared_admit,
    .free_slots = gs__pool_free_slots,
};

static const gs__mode_ops_t exclusive = {
    .name = "exclusive",
    .flags = GS__MODE_SHIM_COMPUTE,
    .admit = exclusive_admit,
    .free_slots = exclusive_free_slots,
    .why_not = exclusive_why_not,
};

const gs__mode_ops_t *gs__mode_shared_ops(void)
{
    return &shared;
}

const gs__mode_ops_t *gs__mode_exclusive_ops(void)
{
    return &exclusive;
}
