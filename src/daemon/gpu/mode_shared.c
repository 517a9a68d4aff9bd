/* SPDX-License-Identifier: Apache-2.0 */
/* Mode shared: leases take memory and compute from the GPU's pool (model.h), enforced by the
 * shim. */
#include "mode.h"

#include "gpushare/error.h"

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

const gs__mode_ops_t gs__mode_shared_ops = {
    .name = "shared",
    .flags = GS__MODE_POOL | GS__MODE_SHIM_COMPUTE,
    .admit = shared_admit,
    .free_slots = gs__pool_free_slots,
};
