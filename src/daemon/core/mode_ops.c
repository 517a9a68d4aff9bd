/* SPDX-License-Identifier: Apache-2.0 */
/* Core's calls through the mode seam: admission on a GPU and a lease's parts, each through its
 * GPU's operations (gs__gpu_t.ops; see mode_ops.h). */
#include "mode_ops.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>

static void init_part(gs__part_t *part)
{
    memset(part, 0, sizeof(*part));
    part->plan.profile = -1;
    part->plan.reuse = -1;
}

int gs__gpu_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    init_part(part);
    if (ask->req->mode != GS_GPU_MODE_ANY && ask->req->mode != gpu->mode)
        return GS_ENOTSUP;
    return gpu->ops->admit(gpu, ask, part);
}

void gs__gpu_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len)
{
    const gs__mode_ops_t *ops = gpu->ops;
    buf[0] = '\0';
    if (ask->req->mode != GS_GPU_MODE_ANY && ask->req->mode != gpu->mode)
        snprintf(buf, len, "GPU %u is mode %s, not %s", gpu->index, ops->name,
                 gs_gpu_mode_name(ask->req->mode));
    else if (ops->why_not != NULL)
        ops->why_not(gpu, ask, buf, len);
}

int gs__gpu_needs_admin(const gs__gpu_t *gpu)
{
    return gpu->ops->needs_admin != NULL && gpu->ops->needs_admin(gpu);
}

unsigned gs__gpu_free_slots(const gs__gpu_t *gpu)
{
    const gs__mode_ops_t *ops = gpu->ops;
    return ops->free_slots != NULL ? ops->free_slots(gpu) : 0;
}

static const gs__mode_ops_t *part_ops(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i)
{
    return d->gpus[lease->alloc.part[i].gpu].ops;
}

/* Ends parts [0, n) of lease (undoing a grant or restore that failed at part n). */
static void end_parts(gs__daemon_t *d, gs__lease_t *lease, unsigned n)
{
    for (unsigned k = n; k-- > 0;) {
        const gs__mode_ops_t *ops = part_ops(d, lease, k);
        if (ops->end != NULL)
            ops->end(d, lease, k);
    }
}

int gs__lease_modes_grant(gs__daemon_t *d, gs__lease_t *lease, char *err, size_t errlen)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__mode_ops_t *ops = part_ops(d, lease, i);
        int result = ops->grant != NULL ? ops->grant(d, lease, i, err, errlen) : 0;
        if (result != 0) {
            end_parts(d, lease, i);
            return result;
        }
    }
    return 0;
}

void gs__lease_modes_end(gs__daemon_t *d, gs__lease_t *lease)
{
    end_parts(d, lease, lease->alloc.n);
}

int gs__lease_modes_restore(gs__daemon_t *d, gs__lease_t *lease)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__mode_ops_t *ops = part_ops(d, lease, i);
        int result = ops->restore != NULL ? ops->restore(d, lease, i) : 0;
        if (result != 0) {
            end_parts(d, lease, i);
            return result;
        }
    }
    return 0;
}

void gs__gpus_restored(gs__daemon_t *d)
{
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__mode_ops_t *ops = d->gpus[g].ops;
        if (ops->restored != NULL)
            ops->restored(d, g);
    }
}

int gs__lease_shim_compute(const gs__daemon_t *d, const gs__lease_t *lease)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        if (!(part_ops(d, lease, i)->flags & GS__MODE_SHIM_COMPUTE))
            return 0;
    }
    return 1;
}
