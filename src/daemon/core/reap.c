/* SPDX-License-Identifier: Apache-2.0 */
/* The reaper (every 250 ms): ends leases whose holder and processes are gone, stops leases
 * being released, retries ends the ledger refused, reclaims the charge of dead processes
 * within each lease with a bounded amount of work per pass, and closes idle regions unused for
 * a minute. */
#include "daemon.h"

#include "gpushare/log.h"

/* Record liveness checks per pass, over all leases: a lease whose processes filled its region
 * with records costs the daemon no more than this, whatever they wrote. */
#define REAP_BUDGET 1024

/* Reclaims dead processes' charges, going on where the last pass stopped. */
static void reap_records(gs__daemon_t *d)
{
    unsigned budget = REAP_BUDGET;
    gs__lease_t *lease = d->reap_next != NULL ? d->reap_next : d->leases;
    for (unsigned visited = 0; lease != NULL && visited < d->n_leases && budget > 0; visited++) {
        if (lease->region != NULL && gs_region_attached(lease->region) != 0)
            gs_region_reap_some(lease->region, &lease->reap_cursor, &budget);
        if (lease->reap_cursor != 0)
            break; /* the budget ran out within this lease's records: go on here next pass */
        lease = lease->next != NULL ? lease->next : d->leases;
    }
    d->reap_next = lease;
}

/* A lease being stopped: its signals, its holder's grace, and its end once nothing is left. */
static void reap_stopping(gs__daemon_t *d, gs__lease_t *lease, int64_t now)
{
    gs__lease_stop_step(d, lease, now);
    int64_t holder_ms = (int64_t)d->cfg.kill_grace_ms + GS__HOLDER_REPORT_MS;
    if (lease->conn != NULL && lease->revoked_ms != 0 && now - lease->revoked_ms > holder_ms) {
        gs__user_t *u = gs__users_get(&d->users, lease->rec.uid);
        if (gs__users_warn_due(u, GS__WARN_STUCK, now))
            gs_warn("lease %llu: its holder did not stop within %.1f s of the release%s",
                    (unsigned long long)lease->rec.id, holder_ms / 1000.0,
                    gs__users_suppressed(u, GS__WARN_STUCK));
        gs__lease_let_go(d, lease, lease->forced ? "released by force" : "released");
        return;
    }
    gs__lease_end_when_idle(d, lease, lease->forced ? "released by force" : "released");
}

void gs__leases_reap(gs__daemon_t *d)
{
    int64_t now = gs__now_ms();
    gs__lease_t *next;
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = next) {
        next = lease->next;
        if (lease->end_failed) {
            if (gs__lease_end(d, lease, "its ledger row could be deleted at last") == 0)
                continue;
        }
        if (lease->kill_at_ms != 0) {
            reap_stopping(d, lease, now);
            continue;
        }
        if (lease->conn != NULL || lease->end_failed || lease->rec.damaged[0] != '\0')
            continue; /* a damaged lease waits for root */
        int active = lease->rec.state == GS__LEASE_ACTIVE;
        if (active && gs__lease_holder_alive(lease))
            continue;
        if (active)
            d->counters.reaped++;
        gs__lease_end_when_idle(d, lease, active ? "its holder is gone" : "its processes exited");
    }
    reap_records(d);
    gs__regions_pool_trim(&d->region_pool, now);
}
