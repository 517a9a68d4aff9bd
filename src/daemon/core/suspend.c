/* SPDX-License-Identifier: Apache-2.0 */
/* The pool's side of a suspended lease (issue 40): which processes a suspend looks at, and the
 * capacity a suspended lease gives back and takes again, and its region's limits (none while
 * suspended). The checkpoint itself (CUDA's API) is
 * the gpu layer's (gpu/checkpoint.c); serve/ asks for both. Runs on the event loop. */
#include "daemon.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>

int gs__lease_suspend_candidates(const gs__lease_t *lease, gs__proc_refs_t *list)
{
    int keyed = gs__lease_keyed(lease);
    gs__lease_procs_query_t q = {
        .region = lease->region,
        .holder = !keyed && lease->rec.client_start != 0 ? lease->rec.client_pid : 0,
        .holder_start = lease->rec.client_start,
        .members = &lease->members,
        .uid = lease->rec.uid,
        .cgroup = lease->rec.request.cgroup,
        .scope = lease->rec.uid == 0 ? (uid_t)-1 : (uid_t)lease->rec.uid,
    };
    return gs__lease_procs_find(&q, list);
}

/* Writes the lease's row (its suspension survives a restart of the daemon). */
static void record(gs__daemon_t *d, gs__lease_t *lease)
{
    char why[160];
    if (gs__ledger_put(d->ledger, &lease->rec, why, sizeof(why)) != 0)
        gs_error("lease %llu: cannot record that it is %s: %s (a restart would not know)",
                 (unsigned long long)lease->rec.id, lease->rec.suspended ? "suspended" : "resumed",
                 why);
}

/* The region's limits: none left while suspended (a new process of the job is refused every
 * allocation: the lease's memory went back to the pool), the lease's own again at resume. Its
 * devices are its parts, in order (gs__lease_grant). */
static void set_limits(gs__lease_t *lease, int suspended)
{
    for (unsigned i = 0; lease->region != NULL && i < lease->alloc.n; i++)
        gs_region_set_limit(lease->region, i,
                            suspended ? GS_REGION_LIMIT_SUSPENDED : lease->alloc.part[i].memory);
}

void gs__lease_mark_suspended(gs__daemon_t *d, gs__lease_t *lease)
{
    set_limits(lease, 1);
    for (unsigned i = 0; i < lease->alloc.n; i++)
        gs__gpu_give(&d->gpus[lease->alloc.part[i].gpu], &lease->alloc.part[i]);
    lease->rec.suspended = 1;
    d->need_schedule = 1;
    record(d, lease);
}

int gs__lease_fits_back(const gs__daemon_t *d, const gs__lease_t *lease, char *why, size_t whylen)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        const gs__gpu_t *gpu = &d->gpus[part->gpu];
        if (!gs__gpu_fits(gpu, lease->rec.request.kind, part)) {
            snprintf(why, whylen,
                     "lease %llu does not fit on GPU %u again now: it needs %llu MiB, %llu MiB "
                     "are free",
                     (unsigned long long)lease->rec.id, part->gpu,
                     (unsigned long long)(part->memory >> 20),
                     (unsigned long long)(gs__gpu_mem_free(gpu) >> 20));
            return GS_EAGAIN;
        }
    }
    return 0;
}

void gs__lease_mark_resumed(gs__daemon_t *d, gs__lease_t *lease)
{
    gs__lease_take(d, &lease->alloc);
    set_limits(lease, 0);
    lease->rec.suspended = 0;
    lease->resume_wanted = 0;
    record(d, lease);
}

void gs__leases_restore_suspended(gs__daemon_t *d)
{
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (!lease->rec.suspended)
            continue;
        set_limits(lease, 1); /* adopted, or made again when none of its processes held it */
        int found = gs__lease_suspend_candidates(lease, &lease->sleepers);
        gs_info("lease %llu is suspended: %d of its processes found, its capacity stays in the "
                "pool until it resumes",
                (unsigned long long)lease->rec.id, found);
    }
}
