/* SPDX-License-Identifier: Apache-2.0 */
/* The mode seam's dispatch: which operations a GPU has, and fan-outs over GPUs and lease parts. */
#include "mode.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>

static const gs__mode_ops_t *const table[GS_GPU_MODE_END] = {
#define GS_GPU_MODE(id, name, flags, summary) [GS_GPU_MODE_##id] = &gs__mode_##name##_ops,
#include "gpushare/gpu_modes.def"
#undef GS_GPU_MODE
};

const gs__mode_ops_t *gs__mode_ops(gs_gpu_mode_t mode)
{
    if ((unsigned)mode >= GS_GPU_MODE_END || table[mode] == NULL)
        return table[GS_GPU_MODE_DEFAULT];
    return table[mode];
}

const gs__mode_ops_t *gs__mode_of(const gs__gpu_t *gpu)
{
    return gpu->ops;
}

void gs__gpu_set_mode(gs__gpu_t *gpu, gs_gpu_mode_t mode)
{
    gpu->mode = mode;
    gpu->ops = gs__mode_ops(mode);
}

/* The operations of the modes the node's GPUs have, each once; returns how many. */
static unsigned modes_present(const gs__daemon_t *d, const gs__mode_ops_t **out)
{
    unsigned n = 0;
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__mode_ops_t *ops = gs__mode_of(&d->gpus[g]);
        int seen = 0;
        for (unsigned k = 0; k < n; k++)
            seen |= out[k] == ops;
        if (!seen)
            out[n++] = ops;
    }
    return n;
}

/* What the other modes left on GPU g (their clean operations). */
static void clean_others(gs__daemon_t *d, unsigned g)
{
    for (unsigned m = 0; m < GS_GPU_MODE_END; m++) {
        const gs__mode_ops_t *ops = table[m];
        if (ops != NULL && ops != gs__mode_of(&d->gpus[g]) && ops->clean != NULL)
            ops->clean(d, g);
    }
}

int gs__modes_start(gs__daemon_t *d, char *err, size_t errlen)
{
    for (unsigned g = 0; g < d->n_gpus; g++)
        clean_others(d, g);
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__mode_ops_t *ops = gs__mode_of(&d->gpus[g]);
        int result = ops->start != NULL ? ops->start(d, g, err, errlen) : 0;
        if (result != 0) {
            for (unsigned k = g; k-- > 0;)
                if (gs__mode_of(&d->gpus[k])->stop != NULL)
                    gs__mode_of(&d->gpus[k])->stop(d, k);
            return result;
        }
    }
    return 0;
}

void gs__modes_stop(gs__daemon_t *d)
{
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__mode_ops_t *ops = gs__mode_of(&d->gpus[g]);
        if (ops->stop != NULL)
            ops->stop(d, g);
    }
}

void gs__modes_leave(const gs__daemon_t *d)
{
    const gs__mode_ops_t *present[GS_MAX_DEVICES];
    unsigned n = modes_present(d, present);
    for (unsigned k = 0; k < n; k++) {
        if (present[k]->leave != NULL)
            present[k]->leave(d);
    }
}

void gs__modes_tick(gs__daemon_t *d, int64_t now_ms)
{
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__mode_ops_t *ops = gs__mode_of(&d->gpus[g]);
        if (ops->tick != NULL)
            ops->tick(d, g, now_ms);
    }
}

void gs__modes_metrics(const gs__daemon_t *d, FILE *f)
{
    /* Once per mode, so that each metric family is written once. */
    const gs__mode_ops_t *present[GS_MAX_DEVICES];
    unsigned n = modes_present(d, present);
    for (unsigned k = 0; k < n; k++) {
        if (present[k]->metrics != NULL)
            present[k]->metrics(d, f);
    }
}

static const gs__mode_ops_t *part_ops(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i)
{
    return d->gpus[lease->alloc.part[i].gpu].ops;
}

void gs__modes_env(const gs__daemon_t *d, const gs__lease_t *lease, json_t *env)
{
    const gs__mode_ops_t *first = lease->alloc.n > 0 ? part_ops(d, lease, 0) : NULL;
    json_object_set_new(env, "GPUSHARE_GPU_MODE", json_string(first != NULL ? first->name : ""));
    if (first != NULL && first->gate != NULL)
        json_object_set_new(env, "GPUSHARE_GATE", json_string(first->gate));
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__mode_ops_t *ops = part_ops(d, lease, i);
        if (ops->env != NULL)
            ops->env(d, lease, i, env);
    }
}

void gs__modes_describe(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view)
{
    const gs__mode_ops_t *ops = gs__mode_of(&d->gpus[g]);
    if (ops->describe != NULL)
        ops->describe(d, g, cred, view);
}
