/* SPDX-License-Identifier: Apache-2.0 */
/* Leases after a start: rebuilt from the ledger, with the regions their processes still hold;
 * and the ledger's file, written again if it was removed or replaced meanwhile. */
#include "daemon.h"
#include "mode_ops.h"
#include "regions.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Maps a stored lease's GPUs (by UUID) to today's indexes. Returns 0 or GS_ENOENT. */
static int map_parts(const gs__daemon_t *d, const gs__lease_record_t *rec, gs__alloc_t *alloc)
{
    alloc->n = 0;
    for (unsigned i = 0; i < rec->n_parts; i++) {
        unsigned g = 0;
        while (g < d->n_gpus && strcmp(d->gpus[g].uuid, rec->parts[i].uuid) != 0)
            g++;
        if (g == d->n_gpus) {
            gs_warn("lease %llu: its GPU %s is not on this node any more: ending it",
                    (unsigned long long)rec->id, rec->parts[i].uuid);
            return GS_ENOENT;
        }
        gs__part_t *part = &alloc->part[alloc->n++];
        part->gpu = g;
        part->slots = rec->parts[i].slots;
        part->memory = rec->parts[i].memory;
        part->compute = rec->parts[i].compute;
        snprintf(part->instance, sizeof(part->instance), "%s", rec->parts[i].instance);
        part->plan.profile = -1;
        part->plan.reuse = -1;
    }
    return 0;
}

/* Per restored lease: whether its row's region was its own (gs__regions_spec_is). A row naming
 * anything else (a path: an older version's file region, or a row someone edited) is refused:
 * nothing at that path is opened, created or removed; the lease keeps its capacity, without a
 * region, until its holder is gone. */
static int check_region(gs__lease_t *lease)
{
    if (gs__regions_spec_is(lease->rec.region, lease->rec.id))
        return 0;
    gs_error("ledger: lease %llu: region \"%.200s\" is not this lease's (refused: nothing there is "
             "touched); the lease keeps its capacity without a region until its holder is gone",
             (unsigned long long)lease->rec.id, lease->rec.region);
    return -1;
}

/* Marks a restored lease damaged (its row could not be trusted): it keeps what it holds, never
 * ends by itself and is shown so; root releases it. */
static void set_damaged(gs__lease_t *lease, const char *why)
{
    if (lease->rec.damaged[0] == '\0')
        snprintf(lease->rec.damaged, sizeof(lease->rec.damaged), "%s", why);
}

/* A part must fit beside the leases restored before it: a row that promises more (edited, or
 * from a configuration that gave more) is held to what is left, and reported, so that the GPU
 * is never promised twice. Parts of MIG instances are the instances themselves. */
static void check_capacity(gs__daemon_t *d, gs__lease_t *lease)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        gs__part_t *part = &lease->alloc.part[i];
        const gs__gpu_t *gpu = &d->gpus[part->gpu];
        if ((gs_gpu_mode_flags(gpu->mode) & GS_MODE_MIG_INSTANCES) ||
            gs__gpu_fits(gpu, lease->rec.request.kind, part))
            continue;
        uint64_t mem_free =
            gs__gpu_leasable(gpu) > gpu->mem_leased ? gs__gpu_leasable(gpu) - gpu->mem_leased : 0;
        unsigned k = gpu->overprovision >= 1 ? gpu->overprovision : 1;
        char why[160];
        snprintf(why, sizeof(why),
                 "its row promises more than GPU %u can give beside the leases restored before "
                 "it: held to what was left",
                 gpu->index);
        gs_error("ledger: lease %llu: %s", (unsigned long long)lease->rec.id, why);
        set_damaged(lease, why);
        part->memory = part->memory < mem_free ? part->memory : mem_free;
        part->compute = gpu->compute_leased + part->compute <= 1000
                            ? part->compute
                            : (gpu->compute_leased < 1000 ? 1000 - gpu->compute_leased : 0);
        part->slots = gpu->slots_leased + part->slots <= k
                          ? part->slots
                          : (gpu->slots_leased < k ? k - gpu->slots_leased : 0);
    }
}

/* A damaged row whose parts cannot be read holds whatever is free on every GPU once the other
 * leases are back: nothing it may have held is promised to another lease until root decides. */
static void hold_unknown(gs__daemon_t *d)
{
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (lease->rec.damaged[0] == '\0' || lease->rec.n_parts != 0)
            continue;
        lease->alloc.n = 0;
        for (unsigned g = 0; g < d->n_gpus && g < GS_MAX_DEVICES; g++) {
            const gs__gpu_t *gpu = &d->gpus[g];
            unsigned k = gpu->overprovision >= 1 ? gpu->overprovision : 1;
            gs__part_t *part = &lease->alloc.part[lease->alloc.n++];
            memset(part, 0, sizeof(*part));
            part->gpu = g;
            part->memory = gs__gpu_mem_free(gpu);
            part->compute = gpu->compute_leased < 1000 ? 1000 - gpu->compute_leased : 0;
            part->slots = gpu->slots_leased < k ? k - gpu->slots_leased : 0;
            part->plan.profile = part->plan.reuse = -1;
        }
        gs__lease_take(d, &lease->alloc);
        gs_error("ledger: lease %llu (user %s): its parts cannot be read: it holds what is free on "
                 "every GPU until root releases it (gpushare release %llu)",
                 (unsigned long long)lease->rec.id, lease->rec.user,
                 (unsigned long long)lease->rec.id);
    }
}

/* Deletes the row of a lease that cannot come back (its GPU or its MIG instance is gone). */
static void drop_row(gs__daemon_t *d, const gs__lease_record_t *rec)
{
    char why[160];
    if (gs__ledger_delete(d->ledger, rec->id, why, sizeof(why)) != 0)
        gs_error("ledger: lease %llu: cannot delete its row: %s", (unsigned long long)rec->id, why);
}

static int restore_one(void *arg, const gs__lease_record_t *rec)
{
    gs__daemon_t *d = arg;
    gs__lease_t *lease = calloc(1, sizeof(*lease));
    if (lease == NULL)
        return GS_ENOMEM;
    lease->rec = *rec;
    int damaged = rec->damaged[0] != '\0';
    if (damaged)
        gs_error("ledger: lease %llu (user %s): %s: it keeps its capacity until root releases it",
                 (unsigned long long)rec->id, rec->user, rec->damaged);
    int mapped = rec->n_parts > 0 && map_parts(d, rec, &lease->alloc) == 0;
    if (rec->n_parts > 0 && (!mapped || gs__lease_modes_restore(d, lease) != 0) && !damaged) {
        drop_row(d, rec);
        free(lease);
        return 0;
    }
    if (!mapped)
        lease->alloc.n = 0;
    if (check_region(lease) != 0)
        lease->rec.region[0] = '\0';
    if (!lease->rec.suspended) { /* a suspended lease's capacity stays in the pool */
        check_capacity(d, lease);
        gs__lease_take(d, &lease->alloc);
    }
    gs__lease_link(d, lease);
    int64_t expiry = gs__lease_expiry(lease);
    if (expiry != 0 && expiry < d->next_expiry_ms && !damaged)
        d->next_expiry_ms = expiry;
    return 0;
}

/* A region a process still holds goes to the restored lease whose row names its inode: what
 * the region says about itself (its lease id) was written where the lease's processes write,
 * and is not believed. */
static void adopt_region(void *arg, gs_region_t *region)
{
    gs__daemon_t *d = arg;
    uint64_t ino = gs__regions_ino(region);
    for (gs__lease_t *lease = d->leases; ino != 0 && lease != NULL; lease = lease->next) {
        if (lease->rec.region_ino == ino && lease->region == NULL && lease->rec.region[0] != '\0') {
            lease->region = region;
            return;
        }
    }
    gs_region_close(region); /* another daemon's, or of a lease that ended */
}

/* Gives a restored lease whose region no process holds a new, empty one: no process maps it, so
 * none holds memory charged to it. */
static void give_region(gs__daemon_t *d, gs__lease_t *lease)
{
    gs_region_config_t rcfg;
    gs__lease_region_config(d, lease, &rcfg);
    char err[256];
    if (gs__regions_take(&d->region_pool, &rcfg, lease->rec.uid, lease->rec.gid, &lease->region,
                         err, sizeof(err)) != 0)
        gs_error("lease %llu: %s", (unsigned long long)lease->rec.id, err);
    else
        gs_info("lease %llu: no process holds its region: it gets a new one",
                (unsigned long long)lease->rec.id);
}

static void finish_one(gs__daemon_t *d, gs__lease_t *lease)
{
    uint64_t ino = lease->rec.region_ino;
    if (lease->region == NULL && lease->rec.region[0] != '\0')
        give_region(d, lease);
    if (lease->rec.region[0] == '\0')
        lease->rec.region_ino = 0;
    else /* its spec names today's socket, its inode today's region */
        gs__regions_spec(d->cfg.socket, lease->rec.id, lease->rec.region,
                         sizeof(lease->rec.region));
    lease->rec.region_ino = gs__regions_ino(lease->region);
    char why[160];
    /* A damaged row is never written again: what could not be read of it stays for root. */
    if (lease->rec.region_ino != ino && lease->rec.damaged[0] == '\0' &&
        gs__ledger_put(d->ledger, &lease->rec, why, sizeof(why)) != 0)
        gs_error("lease %llu: cannot record its new region: %s", (unsigned long long)lease->rec.id,
                 why);
    char what[256] = "";
    gs__lease_describe(d, lease, what, sizeof(what));
    gs_info("lease %llu restored: user %s, %s, holder pid %d%s%s",
            (unsigned long long)lease->rec.id, lease->rec.user, what, (int)lease->rec.client_pid,
            lease->rec.state == GS__LEASE_ENDING ? " (ending)" : "",
            lease->region == NULL ? " (no region)" : "");
}

int gs__leases_restore(gs__daemon_t *d)
{
    gs__history_retention_t keep = {.rows = d->cfg.history_max_rows,
                                    .rows_per_user = d->cfg.history_max_rows_per_user,
                                    .days = d->cfg.history_max_days};
    gs__ledger_set_retention(d->ledger, &keep);
    int result = gs__ledger_load(d->ledger, restore_one, d);
    if (result != 0)
        return result;
    hold_unknown(d);
    /* The marker says whether leases are live from now on. */
    gs__ledger_mark(d->ledger, d->n_leases > 0, d->leases != NULL ? d->leases->rec.id : 0);
    gs__gpus_restored(d);
    if (d->n_leases > 0) {
        int found = gs__lease_procs_find_regions(d->self.uid, adopt_region, d);
        gs_info("%d regions of %u leases found in their processes", found, d->n_leases);
    }
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next)
        finish_one(d, lease);
    gs__leases_restore_suspended(d);
    for (unsigned g = 0; g < d->n_gpus; g++) {
        if (d->gpus[g].mem_leased > gs__gpu_leasable(&d->gpus[g]))
            gs_warn("GPU %u: restored leases hold more memory than it can lease now (was the "
                    "configuration changed?); new leases wait until they end",
                    d->gpus[g].index);
    }
    return 0;
}

/* Writes the ledger again from the live leases. Returns 0 or -errno with one line in err. */
static int rewrite_ledger(gs__daemon_t *d, char *err, size_t errlen)
{
    const gs__lease_record_t **recs = calloc(d->n_leases + 1, sizeof(*recs));
    if (recs == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    unsigned n = 0;
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next)
        recs[n++] = &lease->rec;
    int result = gs__regions_init(&d->cfg, err, errlen);
    if (result == 0)
        result = gs__ledger_rewrite(d->ledger, recs, n, err, errlen);
    if (result == 0 && n > 0)
        gs__ledger_mark(d->ledger, 1, recs[0]->id);
    free(recs);
    return result;
}

void gs__leases_check_ledger(gs__daemon_t *d)
{
    gs__ledger_tick(d->ledger, gs__wall_ms());
    int intact = gs__ledger_intact(d->ledger);
    if (intact == 1)
        return;
    char err[GS__PATH_MAX + 256];
    int result = GS_EEXIST;
    if (intact == 0) {
        gs_warn("the ledger %s was removed: writing it again from the %u live leases",
                gs__ledger_path(d->ledger), d->n_leases);
        result = rewrite_ledger(d, err, sizeof(err));
    } else {
        snprintf(err, sizeof(err), "another file took its place");
    }
    if (result != 0) {
        gs_error("the ledger %s cannot be kept: %s: stopping (the leases' jobs go on and are "
                 "found again at the next start)",
                 gs__ledger_path(d->ledger), err);
        d->fatal = 1;
    }
}
