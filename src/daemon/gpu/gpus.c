/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's GPUs: built from the NVML inventory and the config; live figures from NVML. */
#include "gpu.h"
#include "mps_ctl.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The GPU's settings as its mode sees them, then what every mode needs: memory to lease. */
static int check_settings(const gs__gpu_t *gpu, char *err, size_t errlen)
{
    const gs__mode_ops_t *ops = gs__mode_of(gpu);
    int result = ops->check_config != NULL ? ops->check_config(gpu, err, errlen) : 0;
    if (result != 0)
        return result;
    if (gs__gpu_leasable(gpu) == 0) {
        char reserve[32], total[32];
        gs_qty_format_human(gpu->reserve, reserve, sizeof(reserve));
        gs_qty_format_human(gpu->total - gpu->driver_reserved, total, sizeof(total));
        return gs_fail(err, errlen, GS_EINVAL,
                       "GPU %u: reserve %s leaves nothing of its %s to lease", gpu->index, reserve,
                       total);
    }
    return 0;
}

/* Placement chooses among GPUs, so one policy serves the node. */
static int check_policy(gs__daemon_t *d, const gs__policy_t *policies, char *err, size_t errlen)
{
    d->policy = d->n_gpus > 0 ? policies[0] : GS__POLICY_GPUSHARE;
    for (unsigned i = 1; i < d->n_gpus; i++) {
        if (policies[i] != d->policy)
            return gs_fail(
                err, errlen, GS_EINVAL,
                "placement differs between GPU %u (%s) and GPU %u (%s): placement chooses "
                "among GPUs, so set it once in [gpu:all]",
                d->gpus[0].index, gs__policy_name(d->policy), d->gpus[i].index,
                gs__policy_name(policies[i]));
    }
    return 0;
}

/* A [gpu:N] or [gpu:UUID] section that names no GPU is most likely a typo. */
static void warn_unmatched(const gs__daemon_t *d)
{
    for (unsigned s = 0; s < d->cfg.n_sections; s++) {
        const gs__gpu_section_t *sec = &d->cfg.sections[s];
        int found = sec->match == GS__GPU_ALL;
        for (unsigned g = 0; g < d->n_gpus && !found; g++) {
            found = (sec->match == GS__GPU_INDEX && sec->index == d->gpus[g].index) ||
                    (sec->match == GS__GPU_UUID && strcasecmp(sec->uuid, d->gpus[g].uuid) == 0);
        }
        if (found)
            continue;
        if (sec->match == GS__GPU_INDEX)
            gs_warn("configuration section [gpu:%u] matches no GPU of this node", sec->index);
        else
            gs_warn("configuration section [gpu:%s] matches no GPU of this node", sec->uuid);
    }
}

/* On gpusim, mps_control left at its default names gpusim's own control program, beside the
 * library loaded: the packaged simulator keeps it off every search path
 * (/usr/libexec/gpushare/sim), and NVIDIA's, were it on PATH, could not serve a simulated node.
 * An mps GPU then works with the README's gpusim steps as written; a value set is kept. */
static void sim_mps_control(gs__daemon_t *d)
{
    const char *dir = gs__inventory_sim_dir(d->inv);
    char path[GS__PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s", dir, GS__DEFAULT_MPS_CTL);
    if (dir[0] != '\0' && strcmp(d->cfg.mps_control, GS__DEFAULT_MPS_CTL) == 0 && n > 0 &&
        (size_t)n < sizeof(path) && access(path, X_OK) == 0)
        snprintf(d->cfg.mps_control, sizeof(d->cfg.mps_control), "%s", path);
}

int gs__gpus_setup(gs__daemon_t *d, char *err, size_t errlen)
{
    gs__policy_t policies[GS_MAX_DEVICES];
    sim_mps_control(d);
    d->n_gpus = gs__inventory_count(d->inv);
    for (unsigned i = 0; i < d->n_gpus; i++) {
        const gs__gpu_info_t *info = gs__inventory_gpu(d->inv, i);
        gs__gpu_t *gpu = &d->gpus[i];
        memset(gpu, 0, sizeof(*gpu));
        gpu->index = info->index;
        snprintf(gpu->uuid, sizeof(gpu->uuid), "%s", info->uuid);
        snprintf(gpu->name, sizeof(gpu->name), "%s", info->name);
        gpu->total = info->total;
        gpu->driver_reserved = info->reserved;
        gs__gpu_settings_t s = gs__config_gpu(&d->cfg, info->index, info->uuid);
        gs__gpu_set_mode(gpu, s.mode);
        gpu->overprovision = s.overprovision;
        gpu->reserve = s.reserve;
        policies[i] = s.placement;
        int result = check_settings(gpu, err, errlen);
        if (result != 0)
            return result;
    }
    warn_unmatched(d);
    return check_policy(d, policies, err, errlen);
}

void gs__gpus_refresh_usage(gs__daemon_t *d)
{
    for (unsigned i = 0; i < d->n_gpus; i++) {
        if (gs__inventory_usage(d->inv, i, &d->usage[i]) != 0)
            memset(&d->usage[i], 0, sizeof(d->usage[i]));
    }
}

void gs__gpus_mps_control(const gs__daemon_t *d, char *buf, size_t len)
{
    gs__mps_ctl_resolve(d->cfg.mps_control, buf, len);
}
