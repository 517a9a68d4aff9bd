/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's state: the node's GPUs, its leases (lease.h) and queue, its counters, and the
 * callbacks through which core tells the layers above about a lease's holder.
 *
 * One thread (the event loop) owns everything here; the metrics thread only reads the snapshot
 * the loop publishes (serve/metrics.h). Core tells the layers above about a lease's holder
 * through the callbacks they set (gs__lease_events_t), never by calling them (docs/daemon.md). */
#ifndef GS_DAEMON_DAEMON_H
#define GS_DAEMON_DAEMON_H

#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "lease.h"
#include "ledger.h"
#include "model.h"
#include "queue.h"
#include "regions.h"
#include "users.h"

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

/* What core tells the layer that holds the clients' connections (serve/) about a lease's holder,
 * set by that layer before the loop runs. A NULL member does nothing. */
typedef struct gs__lease_events {
    /* The lease is held through conn from now on (delta +1), or no longer (delta -1). */
    void (*held)(struct gs__conn *conn, int delta);
    /* Tells the lease's connected holder (lease->conn) to stop its job: event "revoked" or
     * "expired", by whom, with the grace period (kill_grace). */
    void (*stop_job)(const struct gs__daemon *d, const gs__lease_t *lease, const char *event,
                     const char *by);
    /* The watchdog is about to kill the lease's process pid (command) for why (enforce = kill):
     * its connected holder (lease->conn) is told before the signal is sent, so that the job's
     * owner reads why before seeing it die. */
    void (*killing)(const struct gs__daemon *d, const gs__lease_t *lease, pid_t pid,
                    const char *command, const char *why);
    /* The lease ends (before it is freed): what the upper layers keep for it goes (its processes'
     * places in the GPUs' compute schedulers). */
    void (*ending)(struct gs__daemon *d, gs__lease_t *lease);
} gs__lease_events_t;

typedef struct gs__daemon {
    gs__config_t cfg;
    unsigned n_gpus;
    gs__gpu_t gpus[GS_MAX_DEVICES];
    gs__policy_t policy;
    gs__ledger_t *ledger;
    gs__lease_t *leases; /* doubly-linked, in grant order */
    gs__lease_t *leases_tail;
    gs__lease_t *reap_next; /* where bounded reaping of records goes on */
    unsigned n_leases;
    gs__queue_t queue;
    int need_schedule;      /* capacity came back: try the queue at the end of the iteration */
    int64_t next_expiry_ms; /* CLOCK_REALTIME ms of the earliest time limit, INT64_MAX none */
    gs__counters_t counters;
    int64_t started_ms;
    gs__regions_owner_t self; /* the daemon's uid and gid */
    gs__region_pool_t region_pool;
    gs__users_t users; /* per-user counters of the limits */
    int fatal;         /* the loop stops: the ledger cannot be kept (logged) */
    char hostname[64];
    gs__lease_events_t events; /* serve/'s callbacks */
    /* The gpu layer's state, kept here for it (gpu/gpu.h): core never looks inside. */
    struct gs__inventory *inv;             /* the GPUs through NVML */
    gs__gpu_usage_t usage[GS_MAX_DEVICES]; /* each GPU's last NVML reading */
    struct gs__watchdog *watchdog;         /* what really runs on the GPUs */
    struct gs_sched_server *sched;         /* the GPUs' compute schedulers */
    struct gs__cuda_ckpt *cuda;            /* CUDA's checkpoint API, loaded at the first suspend */
} gs__daemon_t;

/* Sets up d empty: no GPU, no lease, an empty queue, the daemon's identity and host name. */
void gs__daemon_init(gs__daemon_t *d);

/* Frees what core holds (leases in memory, the placement engine, the ledger, the per-user
 * counters) at shutdown: the ledger and the regions stay for the next start. */
void gs__daemon_close(gs__daemon_t *d);

#endif
