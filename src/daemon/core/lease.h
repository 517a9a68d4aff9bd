/* SPDX-License-Identifier: Apache-2.0 */
/* A lease and its lifecycle (leases.c, reap.c, restore.c).
 *
 * One thread (the event loop) owns every lease. Core tells the layers above about a lease's
 * holder through the callbacks they set (gs__lease_events_t, daemon.h), never by calling them
 * (docs/daemon.md).
 *
 * Lifecycle of a lease: granted (ACTIVE, held by a client connection) -> the holder releases it,
 * its connection closes, or it is revoked by `gpushare release` -> ENDING while processes still
 * use its region -> ended (row deleted, capacity back in the pool). After a restart the leases
 * come back from the ledger without a connection; such a lease stays while its holder process
 * (pid + start time) lives, and ends when the holder is gone and no process uses its region
 * (the reaper, every 250 ms).
 *
 * "Uses its region" is the kernel's answer (gs_region_in_use: a process maps it), never what the
 * region's records say: a lease's processes may write anything there. A lease released by
 * someone else, or forced (root), is stopped by the daemon itself: its processes (the
 * descendants of its holder and of the processes that joined it, lease_procs.h) get SIGTERM,
 * then SIGKILL after kill_grace, and its capacity comes back only once they are gone; one still
 * in use gs__stop_report_ms later is reported once and left to root. A lease whose ledger row
 * cannot be deleted keeps its capacity until it can. */
#ifndef GS_DAEMON_LEASE_H
#define GS_DAEMON_LEASE_H

#include <stdint.h>
#include <sys/types.h>

#include "gpushare/client.h"
#include "gpushare/region.h"
#include "lease_procs.h"
#include "ledger.h"
#include "model.h"

/* The holder's connection: serve/'s, opaque here. */
struct gs__conn;

/* The daemon's state (daemon.h). */
typedef struct gs__daemon gs__daemon_t;

/* Who is calling, from SO_PEERCRED (never from the request). */
typedef struct gs__cred {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    uint64_t start; /* the process's start time (never 0: a connection whose process is gone is
                       refused) */
    char user[GS__USER_MAX];
} gs__cred_t;

typedef struct gs__lease {
    struct gs__lease *prev, *next;
    gs__lease_record_t rec;
    gs__alloc_t alloc; /* the parts, with indexes into the daemon's gpus[] */
    gs_region_t *region;
    struct gs__conn *conn;    /* the holder's connection (serve/'s, opaque), NULL when none */
    int64_t revoked_ms;       /* when it was asked to stop: released by another caller or its
                                 time limit passed (monotonic), 0 = not */
    int expired;              /* its time limit passed */
    gs_job_end_t job_end;     /* how its job ended, as the holder said when releasing it */
    char end_reason[96];      /* why it is ending, for the history ("" while active) */
    int64_t kill_at_ms;       /* being stopped: when SIGKILL follows the SIGTERM, 0 = not */
    int killed;               /* the SIGKILL was sent (its processes looked for a last time) */
    int stop_reported;        /* still in use gs__stop_report_ms after the SIGKILL: said once,
                                 left to root */
    int forced;               /* stopped by force: every process holding its region, not only its
                                 job */
    int stop_any_uid;         /* root asked it to stop (release, --force), or its time limit
                                 passed on a lease root or lease_admin_group made for its user:
                                 its processes of any uid, not only its user's (scope in
                                 gs__lease_procs_query_t) */
    gs__proc_refs_t victims;  /* the processes it signalled, until they are gone */
    gs__proc_refs_t members;  /* the processes that joined it (SO_PEERCRED at join), at most
                                 GS__LEASE_MEMBERS_MAX: with the holder, where its job is found */
    unsigned reap_cursor;     /* where bounded reaping of its records goes on */
    int end_failed;           /* its row could not be deleted: ended again by the reaper */
    void *serve_data;         /* what serve/ keeps for it (a keyed lease's socket), opaque here */
    gs__proc_refs_t sleepers; /* rec.suspended: the processes checkpointed, restored at resume
                                 (after a restart: the lease's processes found again) */
    int resume_wanted;        /* a resume waits for room: it resumes at the first schedule that
                                 finds its capacity free (gs__api_schedule) */
} gs__lease_t;

/* A keyed lease (rec.request.key set) belongs to no connection and no holder process: it lives
 * until it is released (by its key or id) or its time limit, across restarts. Its processes are
 * those holding its region and those in its cgroup (rec.request.cgroup): its user's only, or
 * anyone's when the lease is root's or stop_any_uid — its user's release never stops a process
 * that is not that user's, whoever tied it to the lease. */
static inline int gs__lease_keyed(const gs__lease_t *lease)
{
    return lease->rec.request.key[0] != '\0';
}

/* Grants a lease for req (asked for at submitted_at_ms, CLOCK_REALTIME: its history shows how
 * long it waited) on alloc to cred, held by conn: sets it up on its GPUs (their modes: a MIG
 * instance, ...), gives it a region, writes its ledger row (committed before this returns) and
 * takes the capacity. Returns 0 and *out, GS_EGPU when a GPU's mode could not set it up, or
 * -errno, with one line in err; nothing is granted (and nothing left behind) when the row cannot
 * be written. */
int gs__lease_grant(gs__daemon_t *d, struct gs__conn *conn, const gs__cred_t *cred,
                    const gs_lease_request_t *req, int64_t submitted_at_ms,
                    const gs__alloc_t *alloc, gs__lease_t **out, char *err, size_t errlen);

/* Ends the lease now: deletes its row, then gives the capacity and the region back, frees it
 * and asks for a schedule; why is logged. Returns 0, or GS_EIO when the row cannot be deleted:
 * the lease then stays (its capacity taken) and the reaper tries again. */
int gs__lease_end(gs__daemon_t *d, gs__lease_t *lease, const char *why);

/* Remembers why the lease's job ended, for the history, unless a reason is kept already (the
 * first one wins: a watchdog kill stays the end reason of a lease its holder then releases). */
void gs__lease_set_reason(gs__lease_t *lease, const char *why);

/* The holder let go of the lease (release or disconnect): ends it when no process uses its
 * region any more, otherwise marks it ENDING for the reaper. Returns 1 when it ended. */
int gs__lease_let_go(gs__daemon_t *d, gs__lease_t *lease, const char *why);

/* Someone else (root, or the owner from another connection) releases the lease: the holder is
 * told (a "revoked" event with the grace period, or SIGTERM to its process when it has no
 * connection), the daemon stops its job (the holder's descendants of the lease's user: SIGTERM,
 * SIGKILL after kill_grace) and the lease ends as in gs__lease_let_go once they are gone.
 * Returns 1 when it ended at once. */
int gs__lease_revoke(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by);

/* Root ends the lease whatever its processes do: as gs__lease_revoke, and every process that
 * holds its region (but root's) is stopped too. Its capacity comes back once they are gone.
 * Returns 1 when it ended at once. */
int gs__lease_force(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by);

/* Ends the time of the leases whose time limit passed at wall_ms (CLOCK_REALTIME): each is
 * stopped as in gs__lease_revoke (by "time limit"). Costs nothing until the earliest limit is
 * due. */
void gs__leases_expire(gs__daemon_t *d, int64_t wall_ms);

/* The CLOCK_REALTIME ms at which the lease's time limit passes, 0 when it has none. */
int64_t gs__lease_expiry(const gs__lease_t *lease);

/* ---- suspend and resume (suspend.c) ---- */

/* Adds to list the lease's processes that may use CUDA: those holding its region (the shim's
 * jobs), its holder's descendants and its members', of the lease's user (any user's for root's
 * lease). Returns how many were added, or -errno. */
int gs__lease_suspend_candidates(const gs__lease_t *lease, gs__proc_refs_t *list);

/* The lease's processes are checkpointed: its capacity goes back to the pool (the queue is
 * tried), its region refuses every allocation (GS_REGION_LIMIT_SUSPENDED on each of its devices:
 * a new process of its job gets none of the memory given back) and it shows "suspended". */
void gs__lease_mark_suspended(gs__daemon_t *d, gs__lease_t *lease);

/* Whether a suspended lease's parts fit on its GPUs again now: 0, or GS_EAGAIN with one line
 * in why. */
int gs__lease_fits_back(const gs__daemon_t *d, const gs__lease_t *lease, char *why, size_t whylen);

/* Takes the suspended lease's capacity again (after gs__lease_fits_back said it fits), its
 * region's limits the lease's own again. Both marks write the lease's row (an error is logged
 * when they cannot). */
void gs__lease_mark_resumed(gs__daemon_t *d, gs__lease_t *lease);

/* After a restart (gs__leases_restore, once the regions are adopted): each suspended lease's
 * processes, to restore at resume, and its region's limits refusing every allocation. Its
 * capacity was not taken back. */
void gs__leases_restore_suspended(gs__daemon_t *d);

/* Finds a lease by id, or NULL. */
gs__lease_t *gs__lease_find(gs__daemon_t *d, uint64_t id);

/* Finds the live keyed lease with key, or NULL. */
gs__lease_t *gs__lease_find_key(gs__daemon_t *d, const char *key);

/* The keyed lease's processes are cgroup's from now on (recorded in the ledger). Returns 0, or
 * GS_EIO with one line in err (the lease keeps its old cgroup). */
int gs__lease_set_cgroup(gs__daemon_t *d, gs__lease_t *lease, const char *cgroup, char *err,
                         size_t errlen);

/* Ends the lease when gs__lease_busy says nothing uses it any more, else marks it ENDING (the
 * reaper ends it later). Returns 1 when it ended. */
int gs__lease_end_when_idle(gs__daemon_t *d, gs__lease_t *lease, const char *why);

/* How long after the SIGKILL a lease still in use is reported (once) and left to root:
 * kill_grace, at least 1 s. */
int64_t gs__stop_report_ms(const gs__daemon_t *d);

/* One step of stopping a lease's processes (the reaper, every pass): once kill_grace has passed,
 * looks for them a last time and sends SIGKILL (again at each pass to those still there); a
 * lease still in use gs__stop_report_ms later is reported once and looked at no further than
 * its region's lock. Costs the lease's own processes, never a pass over the node's. */
void gs__lease_stop_step(gs__daemon_t *d, gs__lease_t *lease, int64_t now);

/* Nonzero while the lease's holder process (pid + start time) lives. */
int gs__lease_holder_alive(const gs__lease_t *lease);

/* The region configuration of a lease: its limits, share (where the shim enforces it, not in
 * the modes that do: mps, mig) and id. */
void gs__lease_region_config(const gs__daemon_t *d, const gs__lease_t *lease,
                             gs_region_config_t *cfg);

/* Nonzero when cred is the lease's holder process (same pid and start time). */
int gs__lease_is_holder(const gs__lease_t *lease, const gs__cred_t *cred);

/* Remembers cred's process as one of the lease's (it joined it): where its job is looked for
 * when it is stopped. Root's processes and those of other users are not remembered. */
void gs__lease_add_member(gs__lease_t *lease, const gs__cred_t *cred);

/* The reaper: reclaims dead processes' charges and ends leases whose holder and processes are
 * gone. Called every 250 ms. */
void gs__leases_reap(gs__daemon_t *d);

/* Rebuilds leases from the ledger after a start, with the regions their processes still hold.
 * Returns 0 or GS_EIO (the ledger cannot be read). */
int gs__leases_restore(gs__daemon_t *d);

/* Checks that the ledger's file is still there: one removed or replaced (the state directory
 * deleted, ...) is written again from the live leases. Sets d->fatal when it cannot be. */
void gs__leases_check_ledger(gs__daemon_t *d);

/* Nonzero while a process maps the lease's region or a process it signalled lives, or, once it
 * was asked to stop by someone else, while its holder is connected (the holder reports how the
 * job ended, then lets go: the reaper lets go for it after kill_grace and GS__HOLDER_REPORT_MS). */
int gs__lease_busy(gs__lease_t *lease);

/* How long past kill_grace a connected holder has to report its stopped job's end. */
#define GS__HOLDER_REPORT_MS 5000

/* Links a lease into d's list / unlinks it; takes / gives back its capacity. */
void gs__lease_link(gs__daemon_t *d, gs__lease_t *lease);
void gs__lease_take(gs__daemon_t *d, const gs__alloc_t *alloc);

/* Frees every lease in memory (shutdown: the ledger and regions stay for the next start). */
void gs__leases_free(gs__daemon_t *d);

/* "4 GiB on GPU 0, 4 GiB on GPU 1": the lease's parts, for logs. */
void gs__lease_describe(const gs__daemon_t *d, const gs__lease_t *lease, char *buf, size_t len);

/* Live use of a lease from its region: bytes on each part, OOM events, live processes. */
typedef struct gs__lease_use {
    uint64_t used[GS_MAX_DEVICES];
    uint64_t used_total;
    uint64_t oom_events;
    unsigned processes;
} gs__lease_use_t;
void gs__lease_use(const gs__lease_t *lease, gs__lease_use_t *use);

#endif
