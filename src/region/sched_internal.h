/* SPDX-License-Identifier: Apache-2.0 */
/* The compute scheduler's private header: one GPU's state and the helpers the policy
 * (sched_policy.c) and the membership (sched.c) share.
 *
 * The state lives in the daemon's memory and is only ever touched by one thread at a time (the
 * scheduler server's lock), so it needs no atomics. What members say reaches it only as the
 * arguments of the policy's calls (times are the daemon's own), and every value used as an index
 * is still clamped: the policy stays bounded whatever it is fed. */
#ifndef GS_SCHED_INTERNAL_H
#define GS_SCHED_INTERNAL_H

#include <stdint.h>

#include "gpushare/sched.h"

enum sched_state {
    PROC_IDLE = 0,    /* a member without work */
    PROC_WAITING = 1, /* has work, waits for the GPU */
    PROC_RUNNING = 2, /* runs in its lease's slot */
};

typedef struct sched_lease {
    char key[GS_SCHED_KEY_MAX]; /* "" = free */
    uint32_t guarantee;         /* per mille */
    uint32_t cap;               /* per mille, 0 = none */
    uint64_t vtime;             /* virtual time: device ns * 1000 / weight */
    int64_t cap_tat;            /* token bucket: when the lease's use so far is paid off */
    uint64_t used_ns;           /* device time charged in total */
    int64_t last_run_ns;        /* end of its last slot (round robin between leases) */
} sched_lease_t;

typedef struct sched_proc {
    uint32_t id; /* the member's handle id, 0 = free */
    uint32_t lease;
    uint32_t state;
} sched_proc_t;

struct gs_sched_gpu {
    uint32_t next_id;      /* ids of handles, never 0 */
    uint32_t holder;       /* lease + 1 holding the GPU (its running members), 0 = none */
    uint32_t slot_started; /* a member told when the slot's first launch went */
    uint64_t epoch;        /* the current slot's number */
    uint64_t preempt;      /* epoch of the slot asked to end early, 0 = none */
    int64_t slot_start;
    int64_t slot_end;
    int64_t slot_drained; /* the latest drain its members that left the slot reported */
    int64_t slot_granted; /* when the lease was granted the GPU (renewals keep it) */
    int64_t slot_charged; /* what the lease was charged since then */
    uint64_t taken_epoch; /* the last slot taken from a stuck holder lease (0 = none), */
    uint32_t taken_lease; /* that lease + 1, charged for what it keeps the GPU after, */
    int64_t taken_at;     /* from then */
    uint64_t slot_weight; /* the holder's lease's weight when the slot began */
    uint64_t vclock;      /* the virtual time of the lease last granted the GPU */
    sched_lease_t leases[GS_SCHED_MAX_LEASES];
    sched_proc_t procs[GS_SCHED_MAX_PROCS];
};

struct gs_sched {
    gs_sched_gpu_t *gpu;
    uint32_t id; /* this handle's member id */
    int self;    /* this member's process record, -1 when not joined */
};

/* Frees process record i. */
void gs__sched_free_proc(gs_sched_gpu_t *g, int i);

/* Moves process record p to state. */
void gs__sched_set_state(gs_sched_gpu_t *g, sched_proc_t *p, uint32_t state);

/* The GPU's virtual time at now: the holder's lease's, counting its slot so far. New leases
 * start there (sched_policy.c). */
uint64_t gs__sched_vclock(const gs_sched_gpu_t *g, int64_t now);

/* The caller's member leaves its lease's slot (it leaves the scheduler): when it was the slot's
 * last running member the slot ends at now, its lease is charged and the GPU goes to the next
 * lease in line (sched_policy.c). */
void gs__sched_leave_slot(gs_sched_t *s, int64_t now);

#endif
