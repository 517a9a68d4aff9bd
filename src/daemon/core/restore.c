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

static int restore_one(void *arg, const gs__lease_record_t *rec)
{
    gs__daemon_t *d = arg;
    gs__lease_t *lease = calloc(1, sizeof(*lease));
    if (lease == NULL)
        return GS_ENOMEM;
    lease->rec = *rec;
    if (map_parts(d, rec, &lease->alloc) != 0 || gs__lease_modes_restore(d, lease) != 0) {
        char why[160];
        if (gs__ledger_delete(d->ledger, rec->id, why, sizeof(why)) != 0)
            gs_error("ledger: lease %llu: cannot delete its row: %s", (unsigned long long)rec->id,
                     why);
        free(lease);
        return 0;
    }
    if (check_region(lease) != 0)
        lease->rec.region[0] = '\0';
    gs__lease_take(d, &lease->alloc);
    gs__lease_link(d, lease);
    int64_t expiry = gs__lease_expiry(lease);
    if (expiry != 0 && expiry < d->next_expiry_ms)
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
    if (lease->rec.region_ino != ino &&
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
    int result = gs__ledger_load(d->ledger, restore_one, d);
    if (result != 0)
        return result;
    gs__gpus_restored(d);
    if (d->n_leases > 0) {
        int found = gs__lease_procs_find_regions(d->self.uid, adopt_region, d);
        gs_info("%d regions of %u leases found in their processes", found, d->n_leases);
    }
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next)
        finish_one(d, lease);
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
    free(recs);
    return result;
}

void gs__leases_check_ledger(gs__daemon_t *d)
{
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
