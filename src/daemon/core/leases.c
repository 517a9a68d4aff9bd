/* SPDX-License-Identifier: Apache-2.0 */
/* The lease lifecycle: grant, end, let go, revoke, force; the live use of a lease. */
#include "daemon.h"
#include "mode_ops.h"
#include "regions.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gs__lease_link(gs__daemon_t *d, gs__lease_t *lease)
{
    lease->next = NULL;
    lease->prev = d->leases_tail;
    if (d->leases_tail != NULL)
        d->leases_tail->next = lease;
    else
        d->leases = lease;
    d->leases_tail = lease;
    d->n_leases++;
    gs__user_t *u = gs__users_get(&d->users, lease->rec.uid);
    if (u != NULL)
        u->leases++;
}

static void unlink_lease(gs__daemon_t *d, gs__lease_t *lease)
{
    if (d->reap_next == lease)
        d->reap_next = lease->next;
    if (lease->prev != NULL)
        lease->prev->next = lease->next;
    else
        d->leases = lease->next;
    if (lease->next != NULL)
        lease->next->prev = lease->prev;
    else
        d->leases_tail = lease->prev;
    d->n_leases--;
    gs__user_t *u = gs__users_get(&d->users, lease->rec.uid);
    if (u != NULL && u->leases > 0)
        u->leases--;
}

/* Ties the lease to its holder's connection (NULL: none); the connection's layer is told. */
static void set_conn(const gs__daemon_t *d, gs__lease_t *lease, struct gs__conn *conn)
{
    if (lease->conn != NULL && d->events.held != NULL)
        d->events.held(lease->conn, -1);
    lease->conn = conn;
    if (conn != NULL && d->events.held != NULL)
        d->events.held(conn, +1);
}

void gs__lease_take(gs__daemon_t *d, const gs__alloc_t *alloc)
{
    for (unsigned i = 0; i < alloc->n; i++)
        gs__gpu_take(&d->gpus[alloc->part[i].gpu], &alloc->part[i]);
}

static void give(gs__daemon_t *d, const gs__alloc_t *alloc)
{
    for (unsigned i = 0; i < alloc->n; i++)
        gs__gpu_give(&d->gpus[alloc->part[i].gpu], &alloc->part[i]);
}

/* The region's view of a lease: one limit per CUDA ordinal (the parts' order); the compute
 * share only when the shim enforces it (not where the GPU's mode does: mps, mig). */
void gs__lease_region_config(const gs__daemon_t *d, const gs__lease_t *lease,
                             gs_region_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (unsigned i = 0; i < lease->alloc.n; i++)
        cfg->limit[i] = lease->alloc.part[i].memory;
    cfg->compute_share = gs__lease_shim_compute(d, lease) ? lease->rec.compute_share : 0;
    snprintf(cfg->lease_id, sizeof(cfg->lease_id), "%llu", (unsigned long long)lease->rec.id);
}

static void fill_record(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *cred,
                        const gs_lease_request_t *req)
{
    gs__lease_record_t *rec = &lease->rec;
    rec->uid = cred->uid;
    rec->gid = cred->gid;
    snprintf(rec->user, sizeof(rec->user), "%s", cred->user);
    rec->client_pid = cred->pid;
    rec->client_start = cred->start;
    rec->request = *req;
    rec->n_parts = lease->alloc.n;
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        gs__record_part_t *rp = &rec->parts[i];
        snprintf(rp->uuid, sizeof(rp->uuid), "%s", d->gpus[part->gpu].uuid);
        rp->slots = part->slots;
        rp->memory = part->memory;
        rp->compute = part->compute;
    }
    rec->compute_share = lease->alloc.n > 0 ? gs__part_compute_percent(&lease->alloc.part[0]) : 0;
    rec->state = GS__LEASE_ACTIVE;
    rec->granted_at_ms = gs__wall_ms();
    gs__regions_spec(d->cfg.socket, rec->id, rec->region, sizeof(rec->region));
}

int gs__lease_grant(gs__daemon_t *d, struct gs__conn *conn, const gs__cred_t *cred,
                    const gs_lease_request_t *req, int64_t submitted_at_ms,
                    const gs__alloc_t *alloc, gs__lease_t **out, char *err, size_t errlen)
{
    /* Finding another user's regions after a restart and stopping their processes both need
     * root: a daemon of an ordinary user serves that user only. */
    if (d->self.uid != 0 && cred->uid != d->self.uid)
        return gs_fail(err, errlen, GS_EPERM,
                       "gpushared runs as uid %u and cannot serve uid %u (run it as root)",
                       (unsigned)d->self.uid, (unsigned)cred->uid);
    gs__lease_t *lease = calloc(1, sizeof(*lease));
    if (lease == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    lease->alloc = *alloc;
    lease->rec.id = gs__ledger_next_id(d->ledger);
    fill_record(d, lease, cred, req);
    lease->rec.submitted_at_ms = submitted_at_ms > 0 && submitted_at_ms <= lease->rec.granted_at_ms
                                     ? submitted_at_ms
                                     : lease->rec.granted_at_ms;
    /* The GPUs' modes first (a MIG instance, ...): what they set up goes into the record. */
    if (gs__lease_modes_grant(d, lease, err, errlen) != 0) {
        free(lease);
        return GS_EGPU;
    }
    for (unsigned i = 0; i < lease->alloc.n; i++)
        memcpy(lease->rec.parts[i].instance, lease->alloc.part[i].instance,
               sizeof(lease->rec.parts[i].instance));
    set_conn(d, lease, gs__lease_keyed(lease) ? NULL : conn);
    gs_region_config_t rcfg;
    gs__lease_region_config(d, lease, &rcfg);
    int result =
        gs__regions_take(&d->region_pool, &rcfg, cred->uid, cred->gid, &lease->region, err, errlen);
    lease->rec.region_ino = gs__regions_ino(lease->region);
    char why[160];
    if (result == 0 && (result = gs__ledger_put(d->ledger, &lease->rec, why, sizeof(why))) != 0) {
        result = gs_fail(err, errlen, result, "cannot record the lease in the ledger: %s", why);
        gs__regions_give_back(&d->region_pool, lease->region, cred->uid, cred->gid);
    }
    /* The first live lease: the marker once its row is committed (ledger.h). */
    if (result == 0 && d->n_leases == 0)
        gs__ledger_mark(d->ledger, 1, lease->rec.id);
    if (result != 0) {
        gs__lease_modes_end(d, lease);
        set_conn(d, lease, NULL);
        free(lease);
        return result;
    }
    set_conn(d, lease, gs__lease_keyed(lease) ? NULL : conn);
    gs__lease_take(d, alloc);
    gs__lease_link(d, lease);
    d->counters.granted++;
    int64_t expiry = gs__lease_expiry(lease);
    if (expiry != 0 && expiry < d->next_expiry_ms)
        d->next_expiry_ms = expiry;
    *out = lease;
    return 0;
}

int64_t gs__lease_expiry(const gs__lease_t *lease)
{
    uint64_t limit = lease->rec.request.time_limit_ms;
    return limit != 0 ? lease->rec.granted_at_ms + (int64_t)limit : 0;
}

/* Writes the ended lease into the history, with its peak use from its region. The history is
 * kept for people: a failure is logged by the ledger and ends the lease all the same. */
static void record_history(gs__daemon_t *d, const gs__lease_t *lease, const char *why)
{
    gs__history_entry_t e;
    memset(&e, 0, sizeof(e));
    e.rec = &lease->rec;
    e.ended_at_ms = gs__wall_ms();
    gs_region_stats_t stats;
    if (lease->region != NULL && gs_region_snapshot(lease->region, &stats) == 0) {
        for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++)
            e.peak[i] = stats.peak[i] > (uint64_t)INT64_MAX ? 0 : stats.peak[i];
        e.oom_events = stats.oom_events > (uint64_t)INT64_MAX ? 0 : stats.oom_events;
    }
    for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++)
        e.index[i] = d->gpus[lease->alloc.part[i].gpu].index;
    e.job_end = lease->job_end;
    e.reason = lease->end_reason[0] != '\0' ? lease->end_reason : why;
    gs__ledger_history_add(d->ledger, &e);
}

int gs__lease_end(gs__daemon_t *d, gs__lease_t *lease, const char *why)
{
    char reason[160];
    if (!lease->end_failed)
        record_history(d, lease, why);
    if (gs__ledger_delete(d->ledger, lease->rec.id, reason, sizeof(reason)) != 0) {
        if (!lease->end_failed)
            gs_error("lease %llu cannot end (%s): its ledger row cannot be deleted: %s; its "
                     "capacity stays taken until it can",
                     (unsigned long long)lease->rec.id, why, reason);
        lease->end_failed = 1;
        return GS_EIO;
    }
    char what[256] = "";
    if (gs_log_enabled(GS_LOG_INFO))
        gs__lease_describe(d, lease, what, sizeof(what));
    gs__lease_modes_end(d, lease);
    if (d->events.ending != NULL)
        d->events.ending(d, lease);
    set_conn(d, lease, NULL);
    if (!lease->rec.suspended) /* a suspended lease gave its capacity back already */
        give(d, &lease->alloc);
    gs__lease_procs_clear(&lease->sleepers);
    gs__regions_give_back(&d->region_pool, lease->region, lease->rec.uid, lease->rec.gid);
    unlink_lease(d, lease);
    if (d->n_leases == 0)
        gs__ledger_mark(d->ledger, 0, 0);
    gs_info("lease %llu ended (%s): user %s, %s, held %.1f s", (unsigned long long)lease->rec.id,
            why, lease->rec.user, what, (double)(gs__wall_ms() - lease->rec.granted_at_ms) / 1e3);
    d->counters.ended++;
    d->need_schedule = 1;
    gs__lease_procs_clear(&lease->victims);
    gs__lease_procs_clear(&lease->members);
    free(lease);
    return 0;
}

int gs__lease_busy(gs__lease_t *lease)
{
    /* Stopped by someone else while its holder is connected: the holder says how its job ended
     * (release with the exit status or signal, for the history) and then lets go. */
    if (lease->conn != NULL && lease->revoked_ms != 0)
        return 1;
    int mapped = lease->region != NULL ? gs_region_in_use(lease->region) : 0;
    if (mapped != 0)
        return 1; /* an error answering counts as in use: never free capacity on a doubt */
    return lease->victims.n > 0 && gs__lease_procs_alive(&lease->victims) > 0;
}

static void set_state(gs__daemon_t *d, gs__lease_t *lease, gs__lease_state_t state)
{
    if (lease->rec.state == state)
        return;
    lease->rec.state = state;
    /* The state in the ledger only says how a restored lease is listed; a failure is logged by
     * the ledger and costs nothing else (an "active" lease whose holder is gone ends anyway). */
    char why[160];
    gs__ledger_set_state(d->ledger, lease->rec.id, state, why, sizeof(why));
}

int gs__lease_end_when_idle(gs__daemon_t *d, gs__lease_t *lease, const char *why)
{
    if (!gs__lease_busy(lease))
        return gs__lease_end(d, lease, why) == 0;
    if (lease->rec.state != GS__LEASE_ENDING)
        gs_info("lease %llu ending (%s): waiting for its processes to exit",
                (unsigned long long)lease->rec.id, why);
    set_state(d, lease, GS__LEASE_ENDING);
    return 0;
}

void gs__lease_set_reason(gs__lease_t *lease, const char *why)
{
    if (lease->end_reason[0] == '\0')
        snprintf(lease->end_reason, sizeof(lease->end_reason), "%.*s",
                 (int)sizeof(lease->end_reason) - 1, why);
}

int gs__lease_let_go(gs__daemon_t *d, gs__lease_t *lease, const char *why)
{
    gs__lease_set_reason(lease, why);
    set_conn(d, lease, NULL);
    return gs__lease_end_when_idle(d, lease, why);
}

/* The holder's user: root's when root asked for the lease on behalf of another user (only root
 * may), else the lease's. */
static uid_t holder_uid(const gs__lease_t *lease)
{
    return lease->rec.request.owner.set ? 0 : (uid_t)lease->rec.uid;
}

int gs__lease_holder_alive(const gs__lease_t *lease)
{
    if (gs__lease_keyed(lease))
        return 1; /* no holder: it lives until released */
    /* Only the process that asked: same pid, same start time, same owner. A row without a start
     * time (an older version's, or one edited) names no process the daemon can tell from
     * another's that took its pid: its holder counts as gone. */
    gs__proc_id_t id;
    uid_t uid = holder_uid(lease);
    return lease->rec.client_pid > 1 && lease->rec.client_start != 0 &&
           gs__proc_identity(lease->rec.client_pid, &id) == 0 &&
           id.start == lease->rec.client_start && (id.ruid == uid || id.euid == uid);
}

/* Whom stopping the lease signals: its job (the descendants of the holder and of the processes
 * that joined it, of the lease's user); by force also every process holding its region and, at
 * the SIGKILL, the holder itself when it is the user's own client (a gpushare run that was
 * stopped). A keyed lease has no holder: its processes are those holding its region (a pass over
 * /proc at the SIGTERM and one at the SIGKILL, never more) and those of its cgroup. Never a
 * process of another uid than the lease's user's unless the lease is root's or stop_any_uid: a
 * user cannot have the daemon signal what the user could not (issue 34, key squatting). */
static gs__lease_procs_query_t victims_of(const gs__lease_t *lease, int killing)
{
    int keyed = gs__lease_keyed(lease);
    gs__lease_procs_query_t q = {
        .region = lease->forced || keyed ? lease->region : NULL,
        .holder = !keyed && lease->rec.client_start != 0 ? lease->rec.client_pid : 0,
        .holder_start = lease->rec.client_start,
        .members = &lease->members,
        .uid = lease->rec.uid,
        .with_holder = killing && lease->forced && !lease->rec.request.owner.set && !keyed,
        .cgroup = lease->rec.request.cgroup,
        .scope = lease->rec.uid == 0 || lease->stop_any_uid ? (uid_t)-1 : (uid_t)lease->rec.uid,
    };
    return q;
}

/* Finds the lease's processes and sends them SIGTERM (the holder was told already); SIGKILL
 * follows after kill_grace (the reaper, gs__lease_stop_step). */
static void stop_processes(gs__daemon_t *d, gs__lease_t *lease, int force)
{
    int64_t now = gs__now_ms();
    lease->forced |= force;
    gs__lease_procs_query_t q = victims_of(lease, 0);
    int found = gs__lease_procs_find(&q, &lease->victims);
    unsigned left = gs__lease_procs_signal(&lease->victims, SIGTERM);
    if (lease->kill_at_ms == 0 || force) {
        lease->kill_at_ms = now + (int64_t)d->cfg.kill_grace_ms;
        lease->killed = 0;
        lease->stop_reported = 0;
    }
    gs_info("lease %llu: SIGTERM to %u of its processes (%d found); SIGKILL in %.1f s to those "
            "left",
            (unsigned long long)lease->rec.id, left, found, d->cfg.kill_grace_ms / 1000.0);
}

int64_t gs__stop_report_ms(const gs__daemon_t *d)
{
    return d->cfg.kill_grace_ms > 1000 ? (int64_t)d->cfg.kill_grace_ms : 1000;
}

/* Said once of a lease that is still in use well after its processes got SIGKILL: what keeps it
 * is not its job (a process that joined it from elsewhere), or root's, or beyond a signal. */
static void report_stuck(gs__daemon_t *d, gs__lease_t *lease)
{
    lease->stop_reported = 1;
    gs__user_t *u = gs__users_get(&d->users, lease->rec.uid);
    if (u != NULL && !gs__users_warn_due(u, GS__WARN_STUCK, gs__now_ms()))
        return;
    gs_warn("lease %llu (user %s) cannot end: processes still use its region %.1f s after its "
            "job was killed (processes that are not its job's%s); it stays ending, its capacity "
            "taken, until they exit or root stops them (gpushare release --force %llu)%s",
            (unsigned long long)lease->rec.id, lease->rec.user, gs__stop_report_ms(d) / 1000.0,
            lease->forced ? ", root's, or ones no signal stops" : "",
            (unsigned long long)lease->rec.id, gs__users_suppressed(u, GS__WARN_STUCK));
}

void gs__lease_stop_step(gs__daemon_t *d, gs__lease_t *lease, int64_t now)
{
    if (now < lease->kill_at_ms || lease->stop_reported) {
        gs__lease_procs_alive(&lease->victims);
        return;
    }
    if (!lease->killed) {
        /* Once, at the end of the grace: processes started since (or missed) are stopped too. */
        gs__lease_procs_query_t q = victims_of(lease, 1);
        gs__lease_procs_find(&q, &lease->victims);
        lease->killed = 1;
    }
    unsigned left = gs__lease_procs_signal(&lease->victims, SIGKILL);
    if (left > 0)
        gs_debug("lease %llu: SIGKILL to %u processes", (unsigned long long)lease->rec.id, left);
    if (now >= lease->kill_at_ms + gs__stop_report_ms(d) && gs__lease_busy(lease))
        report_stuck(d, lease);
}

/* Tells the lease's holder to stop its job: an event (type "revoked" or "expired") with the
 * grace period when it is connected (through its connection's layer), else SIGTERM to its process
 * (gpushare run forwards it to its job). */
static void tell_holder(gs__daemon_t *d, gs__lease_t *lease, const char *event, const char *by)
{
    if (lease->conn != NULL) {
        if (d->events.stop_job != NULL)
            d->events.stop_job(d, lease, event, by);
    } else if (!gs__lease_keyed(lease) && !lease->rec.request.owner.set &&
               lease->rec.client_start != 0) {
        /* Through a pidfd, once the start time and owner show it is still the holder. */
        gs__proc_signal(lease->rec.client_pid, lease->rec.client_start, holder_uid(lease), SIGTERM);
    }
}

/* A lease asked to stop by someone else than its holder (or its time limit): tell the holder,
 * stop the job. */
static void ask_to_stop(gs__daemon_t *d, gs__lease_t *lease, const char *event, const char *by,
                        int force)
{
    set_state(d, lease, GS__LEASE_ENDING);
    if (lease->revoked_ms == 0)
        lease->revoked_ms = gs__now_ms();
    tell_holder(d, lease, event, by);
    stop_processes(d, lease, force);
}

int gs__lease_revoke(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by)
{
    d->counters.revoked++;
    gs_info("lease %llu released by %s (uid %u)", (unsigned long long)lease->rec.id, by->user,
            (unsigned)by->uid);
    char why[GS__USER_MAX + 16];
    snprintf(why, sizeof(why), "released by %s", by->user);
    gs__lease_set_reason(lease, why);
    lease->stop_any_uid |= by->uid == 0;
    ask_to_stop(d, lease, "revoked", by->user, 0);
    return gs__lease_end_when_idle(d, lease, lease->end_reason);
}

int gs__lease_force(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by)
{
    d->counters.revoked++;
    gs_info("lease %llu released by force by %s (uid %u)", (unsigned long long)lease->rec.id,
            by->user, (unsigned)by->uid);
    char why[GS__USER_MAX + 32];
    snprintf(why, sizeof(why), "released by force by %s", by->user);
    gs__lease_set_reason(lease, why);
    lease->stop_any_uid = 1; /* only root may force */
    ask_to_stop(d, lease, "revoked", by->user, 1);
    return gs__lease_end_when_idle(d, lease, lease->end_reason);
}

/* The lease's time is up: its job is stopped as after a release by someone else. */
static void expire(gs__daemon_t *d, gs__lease_t *lease)
{
    char limit[32];
    gs_format_duration(lease->rec.request.time_limit_ms, limit, sizeof(limit));
    gs_info("lease %llu of user %s reached its time limit (%s): stopping its job",
            (unsigned long long)lease->rec.id, lease->rec.user, limit);
    d->counters.expired++;
    lease->expired = 1;
    lease->stop_any_uid |= lease->rec.request.owner.set; /* its terms were root's (or an admin's) */
    gs__lease_set_reason(lease, "time limit");
    ask_to_stop(d, lease, "expired", "time limit", 0);
    gs__lease_end_when_idle(d, lease, lease->end_reason); /* may end and free it */
}

void gs__leases_expire(gs__daemon_t *d, int64_t wall_ms)
{
    if (wall_ms < d->next_expiry_ms)
        return;
    d->next_expiry_ms = INT64_MAX;
    gs__lease_t *next;
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = next) {
        next = lease->next;
        int64_t expiry = gs__lease_expiry(lease);
        if (expiry == 0 || lease->expired || lease->rec.damaged[0] != '\0')
            continue;
        if (expiry <= wall_ms)
            expire(d, lease);
        else if (expiry < d->next_expiry_ms)
            d->next_expiry_ms = expiry;
    }
}

int gs__lease_is_holder(const gs__lease_t *lease, const gs__cred_t *cred)
{
    return cred->pid == lease->rec.client_pid && cred->start != 0 &&
           cred->start == lease->rec.client_start;
}

void gs__lease_add_member(gs__lease_t *lease, const gs__cred_t *cred)
{
    if (cred->start == 0 || cred->uid != lease->rec.uid)
        return; /* root joining a lease to look at it is no process of its job */
    if (lease->members.n >= GS__LEASE_MEMBERS_MAX)
        gs__lease_procs_alive(&lease->members);
    if (lease->members.n < GS__LEASE_MEMBERS_MAX)
        gs__proc_refs_add(&lease->members, cred->pid, cred->start, cred->uid);
}

gs__lease_t *gs__lease_find(gs__daemon_t *d, uint64_t id)
{
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (lease->rec.id == id)
            return lease;
    }
    return NULL;
}

gs__lease_t *gs__lease_find_key(gs__daemon_t *d, const char *key)
{
    for (gs__lease_t *lease = d->leases; lease != NULL && key[0] != '\0'; lease = lease->next) {
        if (strcmp(lease->rec.request.key, key) == 0)
            return lease;
    }
    return NULL;
}

int gs__lease_set_cgroup(gs__daemon_t *d, gs__lease_t *lease, const char *cgroup, char *err,
                         size_t errlen)
{
    char old[GS_CGROUP_PATH_MAX], why[160];
    memcpy(old, lease->rec.request.cgroup, sizeof(old));
    snprintf(lease->rec.request.cgroup, sizeof(lease->rec.request.cgroup), "%s", cgroup);
    if (gs__ledger_put(d->ledger, &lease->rec, why, sizeof(why)) == 0)
        return 0;
    memcpy(lease->rec.request.cgroup, old, sizeof(old));
    return gs_fail(err, errlen, GS_EIO, "cannot record lease %llu's cgroup in the ledger: %s",
                   (unsigned long long)lease->rec.id, why);
}

void gs__leases_free(gs__daemon_t *d)
{
    gs__regions_pool_clear(&d->region_pool);
    while (d->leases != NULL) {
        gs__lease_t *lease = d->leases;
        unlink_lease(d, lease);
        gs_region_close(lease->region);
        gs__lease_procs_clear(&lease->victims);
        gs__lease_procs_clear(&lease->members);
        gs__lease_procs_clear(&lease->sleepers);
        free(lease);
    }
}

void gs__lease_describe(const gs__daemon_t *d, const gs__lease_t *lease, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < lease->alloc.n && off < len; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        char mem[32];
        gs_qty_format_human(part->memory, mem, sizeof(mem));
        int n = snprintf(buf + off, len - off, "%s%s on GPU %u", i > 0 ? ", " : "", mem,
                         d->gpus[part->gpu].index);
        off += n > 0 ? (size_t)n : 0;
    }
}

void gs__lease_use(const gs__lease_t *lease, gs__lease_use_t *use)
{
    memset(use, 0, sizeof(*use));
    gs_region_stats_t stats;
    if (lease->region == NULL || gs_region_snapshot(lease->region, &stats) != 0)
        return;
    for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++) {
        /* What the lease's processes wrote: shown, never more than a JSON integer holds. */
        use->used[i] = stats.used[i] > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : stats.used[i];
        use->used_total += use->used[i];
    }
    if (use->used_total > (uint64_t)INT64_MAX)
        use->used_total = (uint64_t)INT64_MAX;
    use->oom_events = stats.oom_events > (uint64_t)INT64_MAX ? 0 : stats.oom_events;
    use->processes = stats.n_procs;
}
