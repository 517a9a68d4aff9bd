/* gpushared's state: the node's GPUs, its leases and queue, and the lease lifecycle.
 *
 * One thread (the event loop) owns everything here; the metrics thread only reads the snapshot
 * the loop publishes (metrics.h).
 *
 * Lifecycle of a lease: granted (ACTIVE, held by a client connection) -> the holder releases it,
 * its connection closes, or it is revoked by `gpushare release` -> ENDING while processes still
 * use its region -> ended (row deleted, region unlinked, capacity back in the pool). After a
 * restart the leases come back from the ledger without a connection; such a lease stays while
 * its holder process (pid + start time) lives, and ends when the holder is gone and no process
 * uses its region (the reaper, every 250 ms). */
#ifndef GS_DAEMON_DAEMON_H
#define GS_DAEMON_DAEMON_H

#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "gpushare/client.h"
#include "gpushare/region.h"
#include "inventory.h"
#include "ledger.h"
#include "model.h"
#include "queue.h"
#include "regions.h"

struct gs__conn;
struct gs__metrics;

/* Who is calling, from SO_PEERCRED (never from the request). */
typedef struct gs__cred {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    uint64_t start; /* the process's start time, 0 when unknown */
    char user[GS__USER_MAX];
} gs__cred_t;

typedef struct gs__lease {
    struct gs__lease *prev, *next;
    gs__lease_record_t rec;
    gs__alloc_t alloc; /* the parts, with indexes into the daemon's gpus[] */
    gs_region_t *region;
    struct gs__conn *conn; /* the holder's connection, NULL when it has none */
    int64_t revoked_ms;    /* when it was asked to stop: released by another caller or its
                              time limit passed (monotonic), 0 = not */
    int expired;           /* its time limit passed */
    gs_job_end_t job_end;  /* how its job ended, as the holder said when releasing it */
    char end_reason[96];   /* why it is ending, for the history ("" while active) */
} gs__lease_t;

/* Counters since start, for metrics. */
typedef struct gs__counters {
    uint64_t granted;
    uint64_t ended;
    uint64_t queued;
    uint64_t rejected_no_fit;
    uint64_t rejected_never;
    uint64_t timeouts;
    uint64_t revoked;
    uint64_t expired; /* reached their time limit */
    uint64_t reaped;  /* ended because the holder was gone */
    uint64_t bad_requests;
} gs__counters_t;

typedef struct gs__daemon {
    gs__config_t cfg;
    gs__inventory_t *inv;
    unsigned n_gpus;
    gs__gpu_t gpus[GS_MAX_DEVICES];
    gs__gpu_usage_t usage[GS_MAX_DEVICES]; /* last NVML reading */
    gs__policy_t policy;
    gs__ledger_t *ledger;
    gs__lease_t *leases; /* doubly-linked, in grant order */
    gs__lease_t *leases_tail;
    unsigned n_leases;
    gs__queue_t queue;
    int need_schedule;      /* capacity came back: try the queue at the end of the iteration */
    int64_t next_expiry_ms; /* CLOCK_REALTIME ms of the earliest time limit, INT64_MAX none */
    gs__counters_t counters;
    int64_t started_ms;
    gs__regions_owner_t self; /* the daemon's uid and gid */
    gs__region_pool_t region_pool;
    char hostname[64];
    struct gs__metrics *metrics;
    struct gs_sched *sched[GS_MAX_DEVICES]; /* each GPU's compute scheduler (gpu_sched.h) */
} gs__daemon_t;

/* Milliseconds of CLOCK_MONOTONIC and of CLOCK_REALTIME. */
int64_t gs__now_ms(void);
int64_t gs__wall_ms(void);

/* Sets up the GPUs from the inventory and the config: refuses modes this build does not
 * implement and placement policies it does not have. Returns 0 or GS_EINVAL / GS_ENOSYS with
 * one line in err. */
int gs__daemon_setup_gpus(gs__daemon_t *d, char *err, size_t errlen);

/* Grants a lease for req on alloc to cred, held by conn: creates its region (owned by the
 * caller, mode 0600), writes the ledger and takes the capacity. Returns 0 and *out, or -errno
 * with one line in err. */
int gs__lease_grant(gs__daemon_t *d, struct gs__conn *conn, const gs__cred_t *cred,
                    const gs_lease_request_t *req, const gs__alloc_t *alloc, gs__lease_t **out,
                    char *err, size_t errlen);

/* Ends the lease now: gives the capacity back, unlinks its region, deletes its row, frees it
 * and asks for a schedule. why is logged. */
void gs__lease_end(gs__daemon_t *d, gs__lease_t *lease, const char *why);

/* The holder let go of the lease (release or disconnect): ends it when no process uses its
 * region any more, otherwise marks it ENDING for the reaper. Returns 1 when it ended. */
int gs__lease_let_go(gs__daemon_t *d, gs__lease_t *lease, const char *why);

/* Someone else (root, or the owner from another connection) releases the lease: the holder is
 * told (a "revoked" event with the grace period, or SIGTERM to its process when it has no
 * connection) and the lease ends as in gs__lease_let_go. kill_grace after the event the holder
 * is detached and the lease's processes that are left get SIGKILL. Returns 1 when it ended at
 * once. */
int gs__lease_revoke(gs__daemon_t *d, gs__lease_t *lease, const gs__cred_t *by);

/* Ends the time of the leases whose time limit passed at wall_ms (CLOCK_REALTIME): each is
 * asked to stop as in gs__lease_revoke (by "time limit"). Costs nothing until the earliest limit
 * is due. */
void gs__leases_expire(gs__daemon_t *d, int64_t wall_ms);

/* The CLOCK_REALTIME ms at which the lease's time limit passes, 0 when it has none. */
int64_t gs__lease_expiry(const gs__lease_t *lease);

/* Finds a lease by id, or NULL. */
gs__lease_t *gs__lease_find(gs__daemon_t *d, uint64_t id);

/* Nonzero when cred is the lease's holder process (same pid and start time). */
int gs__lease_is_holder(const gs__lease_t *lease, const gs__cred_t *cred);

/* The reaper: reclaims dead processes' charges and ends leases whose holder and processes are
 * gone. Called every 250 ms. */
void gs__leases_reap(gs__daemon_t *d);

/* Rebuilds leases from the ledger after a start. Returns 0 or GS_EIO. */
int gs__leases_restore(gs__daemon_t *d);

/* Frees every lease in memory (shutdown: the ledger and regions stay for the next start). */
void gs__leases_free(gs__daemon_t *d);

/* Live use of a lease from its region: bytes on each part, OOM events, live processes. */
typedef struct gs__lease_use {
    uint64_t used[GS_MAX_DEVICES];
    uint64_t used_total;
    uint64_t oom_events;
    unsigned processes;
} gs__lease_use_t;
void gs__lease_use(const gs__lease_t *lease, gs__lease_use_t *use);

/* Reads every GPU's memory use and utilization from NVML into d->usage. */
void gs__daemon_refresh_usage(gs__daemon_t *d);

#endif
