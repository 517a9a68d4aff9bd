/* SPDX-License-Identifier: Apache-2.0 */
/* The GPUs' compute schedulers: gpushared's scheduler server, its members and the leases' use
 * (see compute_sched.h). */
#include "compute_sched.h"

#include "core/core.h"
#include "gpushare/error.h"
#include "gpushare/sched_server.h"

#include <stdio.h>
#include <string.h>

/* The scheduler's name of a lease: its id (whoever's processes present it were let in by the
 * API). */
static void key_of(const gs__lease_t *lease, char *key, size_t len)
{
    snprintf(key, len, "lease/%llu", (unsigned long long)lease->rec.id);
}

int gs__compute_sched_open(gs__daemon_t *d, char *err, size_t errlen)
{
    int result = gs_sched_server_new(d->n_gpus > 0 ? d->n_gpus : 1, &d->sched);
    if (result != 0) {
        snprintf(err, errlen, "cannot start the compute schedulers: %s", gs_strerror(result));
        return result;
    }
    gs_sched_limits_t limits = {.members_per_lease = d->cfg.compute_members_per_lease,
                                .members_per_user = d->cfg.compute_members_per_user,
                                .leases_per_user = d->cfg.compute_leases_per_user};
    gs_sched_server_set_limits(d->sched, &limits);
    return 0;
}

void gs__compute_sched_close(gs__daemon_t *d)
{
    gs_sched_server_free(d->sched);
    d->sched = NULL;
}

int gs__compute_sched_add(gs__daemon_t *d, const gs__lease_t *lease, unsigned part,
                          uint32_t cap_pct, int *fd, uint32_t *guarantee, uint32_t *cap, char *err,
                          size_t errlen)
{
    gs_sched_member_info_t info;
    memset(&info, 0, sizeof(info));
    info.gpu = lease->alloc.part[part].gpu;
    key_of(lease, info.key, sizeof(info.key));
    uint32_t lease_cap = lease->rec.request.compute_max;
    if (cap_pct != 0 && (lease_cap == 0 || cap_pct < lease_cap))
        lease_cap = cap_pct; /* a process may cap its lease further, never raise the cap */
    info.uid = (uint32_t)lease->rec.uid;
    info.share.guarantee = lease->alloc.part[part].compute;
    info.share.cap = lease_cap * 10;
    if (info.share.cap != 0 && info.share.cap < info.share.guarantee)
        info.share.cap = info.share.guarantee;
    char why[160] = "";
    int result = gs_sched_server_add(d->sched, &info, fd, why, sizeof(why));
    if (result != 0) {
        snprintf(err, errlen, "GPU %s's compute scheduler cannot take the process: %s",
                 d->gpus[info.gpu].uuid,
                 result == GS_ELIMIT   ? why
                 : result == GS_ENOSPC ? "it has the most members it can"
                                       : gs_strerror(result));
        return result;
    }
    *guarantee = info.share.guarantee;
    *cap = info.share.cap;
    return 0;
}

void gs__compute_sched_drop(gs__daemon_t *d, const gs__lease_t *lease)
{
    char key[GS_SCHED_KEY_MAX];
    key_of(lease, key, sizeof(key));
    if (d->sched != NULL)
        gs_sched_server_drop(d->sched, key);
}

uint64_t gs__compute_sched_lease_used(const gs__daemon_t *d, const gs__lease_t *lease,
                                      unsigned part)
{
    if (part >= lease->alloc.n)
        return 0;
    const gs__mode_ops_t *ops = d->gpus[lease->alloc.part[part].gpu].ops;
    if (!(ops->flags & GS__MODE_SHIM_COMPUTE))
        return ops->device_ns != NULL ? ops->device_ns(d, lease, part) : 0;
    if (d->sched == NULL)
        return 0;
    gs_sched_lease_info_t info[GS_SCHED_MAX_LEASES];
    char key[GS_SCHED_KEY_MAX];
    key_of(lease, key, sizeof(key));
    int n =
        gs_sched_server_leases(d->sched, lease->alloc.part[part].gpu, info, GS_SCHED_MAX_LEASES);
    for (int i = 0; i < n; i++) {
        if (strcmp(info[i].key, key) == 0)
            return info[i].used_ns;
    }
    return 0;
}
