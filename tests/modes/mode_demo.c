/* SPDX-License-Identifier: Apache-2.0 */
/* Mode demo, the one new file of a test-only mode (docs/modes.md, "A new mode"): memory leases
 * (--gpu-memory) from the GPU's pool, enforced by the shim, on a GPU that is not overprovisioned.
 * Built into a test build of the daemon only (tests/mode_added.cmake), with its line of the table
 * of modes (tests/modes/demo.def). */
#include "gpu/mode.h"

#include "gpushare/error.h"

#include <stdio.h>

static int demo_check_config(const gs__gpu_t *gpu, char *err, size_t errlen)
{
    if (gpu->overprovision > 1)
        return gs_fail(err, errlen, GS_EINVAL,
                       "GPU %u: mode demo gives memory leases: overprovision must be 1, not %u",
                       gpu->index, gpu->overprovision);
    return 0;
}

static int demo_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    if (ask->req->kind != GS_LEASE_MEMORY)
        return GS_ENOTSUP;
    gs__part_for(gpu, ask->req, ask->slots, part);
    int fits = ask->idle ? gs__gpu_fits_idle(gpu, ask->req->kind, part)
                         : gs__gpu_fits(gpu, ask->req->kind, part);
    return fits ? 0 : GS_ENOFIT;
}

static void demo_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len)
{
    if (ask->req->kind != GS_LEASE_MEMORY)
        snprintf(buf, len, "GPU %u is mode demo: it gives memory leases (--gpu-memory) only",
                 gpu->index);
}

const gs__mode_ops_t gs__mode_demo_ops = {
    .name = "demo",
    .flags = GS__MODE_POOL | GS__MODE_SHIM_COMPUTE,
    .check_config = demo_check_config,
    .admit = demo_admit,
    .free_slots = gs__pool_free_slots,
    .why_not = demo_why_not,
};
