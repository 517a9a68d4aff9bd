/* The lease lifecycle: grant, let go, revoke, reap, restore; the live use of a lease. */
#include "daemon.h"
#include "regions.h"
#include "server.h"
#include "views.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t gs__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gs__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* After the grace period, the holder gets this long to report before the daemon acts. */
#define STOP_SLACK_MS 1000

static void link_lease(gs__daemon_t *d, gs__lease_t *lease)
{
    lease->next = NULL;
    lease->prev = d->leases_tail;
    if (d->leases_tail != NULL)
        d->leases_tail->next = lease;
    else
        d->leases = lease;
    d->leases_tail = lease;
    d->n_leases++;
}

static void unlink_lease(gs__daemon_t *d, gs__lease_t *lease)
{
    if (lease->prev != NULL)
        lease->prev->next = lease->next;
    else
        d->leases = lease->next;
    if (lease->next != NULL)
        lease->next->prev = lease->prev;
    else
        d->leases_tail = lease->prev;
    d->n_leases--;
}

/* Ties the lease to its holder's connection (NULL: none), keeping the connection's count. */
static void set_conn(gs__lease_t *lease, struct gs__conn *conn)
{
    if (lease->conn != NULL)
        gs__conn_count_lease(lease->conn, -1);
    lease->conn = conn;
    if (conn != NULL)
        gs__conn_count_lease(conn, +1);
}

static void take(gs__daemon_t *d, const gs__alloc_t *alloc)
{
    for (unsigned i = 0; i < alloc->n; i++)
        gs__gpu_take(&d->gpus[alloc->part[i].gpu], &alloc->part[i]);
}

static void give(gs__daemon_t *d, const gs__alloc_t *alloc)
{
    for (unsigned i = 0; i < alloc->n; i++)
        gs__gpu_give(&d->gpus[alloc->part[i].gpu], &alloc->part[i]);
}

/* The region's view of a lease: one limit per CUDA ordinal (the parts' order). */
static void region_config(const gs__lease_t *lease, gs_region_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (unsigned i = 0; i < lease->alloc.n; i++)
        cfg->limit[i] = lease->alloc.part[i].memory;
    cfg->compute_share = lease->rec.compute_share;
    snprintf(cfg->lease_id, sizeof(cfg->lease_id), "%llu", (unsigned long long)lease->rec.id);
}

static void fill_record(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *cred,
                        const gs_lease_request_t *req)
{
    gs__lease_record_t *rec = &lease->rec;
    rec->id = gs__ledger_next_id(d->ledger);
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
}

int gs__lease_grant(gs__daemon_t *d, struct gs__conn *conn, const gs__cred_t *cred,
                    const gs_lease_request_t *req, const gs__alloc_t *alloc, gs__lease_t **out,
                    char *err, size_t errlen)
{
    gs__lease_t *lease = calloc(1, sizeof(*lease));
    if (lease == NULL) {
        snprintf(err, errlen, "out of memory");
        return GS_ENOMEM;
    }
    lease->alloc = *alloc;
    set_conn(lease, conn);
    fill_record(d, lease, cred, req);
    gs_region_config_t rcfg;
    region_config(lease, &rcfg);
    int result = gs__regions_take(&d->region_pool, &d->cfg, lease->rec.id, &rcfg, cred->uid,
                                  cred->gid, d->self, lease->rec.region, sizeof(lease->rec.region),
                                  &lease->region, err, errlen);
    if (result == 0 && gs__ledger_put(d->ledger, &lease->rec) != 0) {
        snprintf(err, errlen, "cannot record the lease in the ledger");
        result = GS_EIO;
        gs__regions_remove(lease->rec.region, lease->region);
    }
    if (result != 0) {
        free(lease);
        return result;
    }
    take(d, alloc);
    link_lease(d, lease);
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

/* Writes the ended lease into the history, with its peak use from its region. */
static void record_history(gs__daemon_t *d, const gs__lease_t *lease, const char *why)
{
    gs__history_entry_t e;
    memset(&e, 0, sizeof(e));
    e.rec = &lease->rec;
    e.ended_at_ms = gs__wall_ms();
    gs_region_stats_t stats;
    if (lease->region != NULL && gs_region_snapshot(lease->region, &stats) == 0) {
        for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++)
            e.peak[i] = stats.peak[i];
        e.oom_events = stats.oom_events;
    }
    for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++)
        e.index[i] = d->gpus[lease->alloc.part[i].gpu].index;
    e.job_end = lease->job_end;
    e.reason = lease->end_reason[0] != '\0' ? lease->end_reason : why;
    gs__ledger_history_add(d->ledger, &e);
}

void gs__lease_end(gs__daemon_t *d, gs__lease_t *lease, const char *why)
{
    char what[256] = "";
    if (gs_log_enabled(GS_LOG_INFO))
        gs__view_describe(d, lease, what, sizeof(what));
    record_history(d, lease, why);
    give(d, &lease->alloc);
    gs__regions_give_back(&d->region_pool, lease->rec.region, lease->region, lease->rec.uid,
                          lease->rec.gid);
    gs__ledger_delete(d->ledger, lease->rec.id);
    unlink_lease(d, lease);
    gs_info("lease %llu ended (%s): user %s, %s, held %.1f s", (unsigned long long)lease->rec.id,
            why, lease->rec.user, what, (double)(gs__wall_ms() - lease->rec.granted_at_ms) / 1e3);
    d->counters.ended++;
    d->need_schedule = 1;
    free(lease);
}

/* Live processes of the lease's region, after reclaiming the charge of dead ones. */
static unsigned live_processes(gs__lease_t *lease)
{
    if (lease->region == NULL)
        return 0;
    gs_region_reap(lease->region);
    gs_region_stats_t stats;
    gs_region_snapshot(lease->region, &stats);
    return stats.n_procs;
}

static void set_state(gs__daemon_t *d, gs__lease_t *lease, gs__lease_state_t state)
{
    if (lease->rec.state == state)
        return;
    lease->rec.state = state;
    gs__ledger_set_state(d->ledger, lease->rec.id, state);
}

/* Remembers the first reason the lease started to end, for the history. */
static void set_reason(gs__lease_t *lease, const char *why)
{
    if (lease->end_reason[0] == '\0')
        snprintf(lease->end_reason, sizeof(lease->end_reason), "%.*s",
                 (int)sizeof(lease->end_reason) - 1, why);
}

int gs__lease_let_go(gs__daemon_t *d, gs__lease_t *lease, const char *why)
{
    set_reason(lease, why);
    set_conn(lease, NULL);
    unsigned procs = live_processes(lease);
    if (procs == 0) {
        gs__lease_end(d, lease, why);
        return 1;
    }
    if (lease->rec.state != GS__LEASE_ENDING)
        gs_info("lease %llu ending (%s): waiting for its %u processes to exit",
                (unsigned long long)lease->rec.id, why, procs);
    set_state(d, lease, GS__LEASE_ENDING);
    return 0;
}

static int holder_alive(const gs__lease_t *lease)
{
    uint64_t start = 0;
    if (lease->rec.client_pid <= 0 || !gs_proc_alive(lease->rec.client_pid, &start))
        return 0;
    return lease->rec.client_start == 0 || start == 0 || start == lease->rec.client_start;
}

/* Asks the lease's holder to stop its job: an event (type "revoked" or "expired") with the grace
 * period when it is connected, else SIGTERM to its process (gpushare run forwards it to its
 * job). Returns 1 when the lease ended at once. */
static int ask_to_stop(gs__daemon_t *d, gs__lease_t *lease, const char *event, const char *by)
{
    set_state(d, lease, GS__LEASE_ENDING);
    if (lease->conn != NULL) {
        lease->revoked_ms = gs__now_ms();
        json_t *msg =
            json_pack("{s:s, s:I, s:s, s:I}", "event", event, "lease", (json_int_t)lease->rec.id,
                      "by", by, "grace_ms", (json_int_t)d->cfg.kill_grace_ms);
        if (msg != NULL && lease->expired)
            json_object_set_new(msg, "time_limit_ms",
                                json_integer((json_int_t)lease->rec.request.time_limit_ms));
        gs__conn_send(lease->conn, msg);
        return 0;
    }
    /* No connection (the daemon restarted meanwhile): gpushare run forwards SIGTERM to its job. */
    if (holder_alive(lease))
        kill(lease->rec.client_pid, SIGTERM);
    lease->revoked_ms = gs__now_ms();
    return gs__lease_let_go(d, lease, lease->end_reason);
}

int gs__lease_revoke(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by)
{
    d->counters.revoked++;
    gs_info("lease %llu released by %s (uid %u)", (unsigned long long)lease->rec.id, by->user,
            (unsigned)by->uid);
    char why[GS__USER_MAX + 16];
    snprintf(why, sizeof(why), "released by %s", by->user);
    set_reason(lease, why);
    return ask_to_stop(d, lease, "revoked", by->user);
}

/* The lease's time is up: its job is asked to stop, and stopped after the grace period. */
static void expire(gs__daemon_t *d, gs__lease_t *lease)
{
    char limit[32];
    gs_format_duration(lease->rec.request.time_limit_ms, limit, sizeof(limit));
    gs_info("lease %llu of user %s reached its time limit (%s): stopping its job",
            (unsigned long long)lease->rec.id, lease->rec.user, limit);
    d->counters.expired++;
    lease->expired = 1;
    set_reason(lease, "time limit");
    ask_to_stop(d, lease, "expired", "time limit");
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
        if (expiry == 0 || lease->expired)
            continue;
        if (expiry <= wall_ms)
            expire(d, lease); /* may end and free it */
        else if (expiry < d->next_expiry_ms)
            d->next_expiry_ms = expiry;
    }
}

/* SIGKILL to every process still attached to the lease's region (after the grace period). */
static void kill_processes(gs__lease_t *lease)
{
    gs_region_process_t procs[64];
    int n = lease->region != NULL ? gs_region_processes(lease->region, procs, 64) : 0;
    for (int i = 0; i < n; i++) {
        uint64_t start = 0;
        if (gs_proc_alive(procs[i].pid, &start) && start == procs[i].start_time)
            kill(procs[i].pid, SIGKILL);
    }
}

int gs__lease_is_holder(const gs__lease_t *lease, const gs__cred_t *cred)
{
    return cred->pid == lease->rec.client_pid &&
           (cred->start == 0 || cred->start == lease->rec.client_start);
}

gs__lease_t *gs__lease_find(gs__daemon_t *d, uint64_t id)
{
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (lease->rec.id == id)
            return lease;
    }
    return NULL;
}

/* A lease asked to stop whose holder still holds it after the grace period: its processes that
 * are left are killed and the holder is cut off, so the lease ends. */
static void stop_overdue(gs__daemon_t *d, gs__lease_t *lease)
{
    if (lease->revoked_ms == 0 ||
        gs__now_ms() - lease->revoked_ms <= (int64_t)d->cfg.kill_grace_ms + STOP_SLACK_MS)
        return;
    if (lease->conn != NULL)
        gs_warn("lease %llu: its holder did not stop within %.1f s of the %s",
                (unsigned long long)lease->rec.id, d->cfg.kill_grace_ms / 1000.0,
                lease->expired ? "time limit" : "release");
    kill_processes(lease);
    set_conn(lease, NULL);
}

void gs__leases_reap(gs__daemon_t *d)
{
    gs__lease_t *next;
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = next) {
        next = lease->next;
        stop_overdue(d, lease);
        if (lease->conn != NULL) {
            if (lease->region != NULL)
                gs_region_reap_if_due(lease->region, 200);
            continue;
        }
        if (lease->rec.state == GS__LEASE_ACTIVE && holder_alive(lease))
            continue;
        if (lease->rec.state == GS__LEASE_ACTIVE)
            d->counters.reaped++;
        gs__lease_let_go(d, lease,
                         lease->rec.state == GS__LEASE_ACTIVE ? "its holder is gone"
                                                              : "its processes exited");
    }
}

void gs__leases_free(gs__daemon_t *d)
{
    gs__regions_pool_clear(&d->region_pool);
    while (d->leases != NULL) {
        gs__lease_t *lease = d->leases;
        unlink_lease(d, lease);
        gs_region_close(lease->region);
        free(lease);
    }
}

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
    }
    return 0;
}

/* Reopens a restored lease's region; recreates it when it vanished. */
static int reopen_region(gs__daemon_t *d, gs__lease_t *lease)
{
    int result = gs_region_open(lease->rec.region, &lease->region);
    if (result == 0)
        return 0;
    gs_warn("lease %llu: region %s: %s: creating it again", (unsigned long long)lease->rec.id,
            lease->rec.region, gs_strerror(result));
    gs_region_config_t rcfg;
    region_config(lease, &rcfg);
    char err[256];
    result = gs__regions_create(lease->rec.region, &rcfg, lease->rec.uid, lease->rec.gid, d->self,
                                &lease->region, err, sizeof(err));
    if (result != 0)
        gs_error("lease %llu: %s", (unsigned long long)lease->rec.id, err);
    (void)d;
    return result;
}

static int restore_one(void *arg, const gs__lease_record_t *rec)
{
    gs__daemon_t *d = arg;
    gs__lease_t *lease = calloc(1, sizeof(*lease));
    if (lease == NULL)
        return GS_ENOMEM;
    lease->rec = *rec;
    if (map_parts(d, rec, &lease->alloc) != 0 || reopen_region(d, lease) != 0) {
        gs__regions_remove(rec->region, lease->region);
        gs__ledger_delete(d->ledger, rec->id);
        free(lease);
        return 0;
    }
    take(d, &lease->alloc);
    link_lease(d, lease);
    int64_t expiry = gs__lease_expiry(lease);
    if (expiry != 0 && expiry < d->next_expiry_ms)
        d->next_expiry_ms = expiry;
    char what[256] = "";
    gs__view_describe(d, lease, what, sizeof(what));
    gs_info("lease %llu restored: user %s, %s, holder pid %d%s", (unsigned long long)rec->id,
            rec->user, what, (int)rec->client_pid,
            rec->state == GS__LEASE_ENDING ? " (ending)" : "");
    return 0;
}

/* Whether path is the region of a live lease. */
static int region_in_use(void *arg, const char *path)
{
    const gs__daemon_t *d = arg;
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (strcmp(lease->rec.region, path) == 0)
            return 1;
    }
    return 0;
}

int gs__leases_restore(gs__daemon_t *d)
{
    int result = gs__ledger_load(d->ledger, restore_one, d);
    /* Idle regions of a daemon that was killed are nobody's: remove them. */
    int stale = gs__regions_sweep(&d->cfg, region_in_use, d);
    if (stale > 0)
        gs_info("removed %d region files no lease uses", stale);
    for (unsigned g = 0; g < d->n_gpus; g++) {
        if (d->gpus[g].mem_leased > gs__gpu_leasable(&d->gpus[g]))
            gs_warn("GPU %u: restored leases hold more memory than it can lease now (was the "
                    "configuration changed?); new leases wait until they end",
                    d->gpus[g].index);
    }
    gs__ledger_commit(d->ledger);
    return result;
}

void gs__lease_use(const gs__lease_t *lease, gs__lease_use_t *use)
{
    memset(use, 0, sizeof(*use));
    gs_region_stats_t stats;
    if (lease->region == NULL || gs_region_snapshot(lease->region, &stats) != 0)
        return;
    for (unsigned i = 0; i < lease->alloc.n && i < GS_MAX_DEVICES; i++) {
        use->used[i] = stats.used[i];
        use->used_total += stats.used[i];
    }
    use->oom_events = stats.oom_events;
    use->processes = stats.n_procs;
}
