/* SPDX-License-Identifier: Apache-2.0 */
/* Mode exclusive: whole GPUs, one lease at a time; its compute share (if any) is enforced by the
 * shim as in mode shared. */
#include "mode.h"

#include "gpushare/error.h"

#include <stdio.h>

static int exclusive_check_config(const gs__gpu_t *gpu, char *err, size_t errlen)
{
    if (gpu->overprovision > 1)
        return gs_fail(err, errlen, GS_EINVAL,
                       "GPU %u: mode exclusive gives whole GPUs: overprovision must be 1, "
                       "not %u",
                       gpu->index, gpu->overprovision);
    return 0;
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

const gs__mode_ops_t gs__mode_exclusive_ops = {
    .name = "exclusive",
    .flags = GS__MODE_SHIM_COMPUTE,
    .check_config = exclusive_check_config,
    .admit = exclusive_admit,
    .free_slots = exclusive_free_slots,
    .why_not = exclusive_why_not,
};
