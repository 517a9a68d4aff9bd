/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler region's private header: its shared layout, the file lock and the helpers the
 * policy (sched_policy.c) and the file handling (sched.c) share.
 *
 * Every field of the layout may hold anything (other users write the file): readers clamp what
 * they use (indices, shares, times) and loop only over the fixed tables. Scheduling state
 * changes under the file's lock (held for a scan of the tables, never across a system call that
 * can block); a few counters are also read without it as hints. */
#ifndef GS_SCHED_INTERNAL_H
#define GS_SCHED_INTERNAL_H

#include <stdint.h>

#include "gpushare/sched.h"

#define SCHED_MAGIC   "GSSCHED2"
#define SCHED_VERSION 2u

/* Liveness locks: one byte per process record, far beyond the end of the file. */
#define SCHED_LOCK_BASE (INT64_C(1) << 40)

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
    int32_t pid; /* 0 = free */
    uint32_t lease;
    uint32_t state;
    uint32_t pad;
} sched_proc_t;

typedef struct sched_layout {
    char magic[8];
    uint32_t version;
    uint32_t size;
    char name[GS_SCHED_KEY_MAX]; /* its key file's name: a segment id reused after a reboot for
                                  * another GPU's segment is not taken for this one */
    uint64_t lock;         /* 0 = free, else owner pid << 32 | low bits of the time it was taken */
    uint32_t turn;         /* futex word: bumped whenever the GPU changes hands */
    uint32_t holder;       /* lease + 1 holding the GPU (its running members), 0 = none */
    uint32_t n_waiting;    /* members waiting (a hint for the holder) */
    uint32_t slot_started; /* a member told when the slot's first launch went */
    uint64_t epoch;        /* the current slot's number */
    uint64_t preempt;      /* epoch of the slot asked to end early, 0 = none */
    int64_t slot_start;
    int64_t slot_end;
    uint64_t slot_weight; /* the holder's lease's weight when the slot began */
    uint64_t vclock;      /* the virtual time of the lease last granted the GPU */
    int64_t slot_drained; /* the latest drain its members that left the slot reported */
    sched_lease_t leases[GS_SCHED_MAX_LEASES];
    sched_proc_t procs[GS_SCHED_MAX_PROCS];
} sched_layout_t;

struct gs_sched {
    sched_layout_t *map;
    int fd;   /* the key file: liveness locks */
    int self; /* this process's record, -1 when not joined */
    pid_t pid;
    uint64_t lock_token; /* the value this handle wrote into the lock */
    uint64_t watched;    /* the holder lease (+ 1, and its epoch) seen since watch_since */
    int64_t watch_since;
};

#define SLOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SSTORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Takes / drops the file's lock (sched.c). Taking never waits more than about twice
 * GS_SCHED_LOCK_STALE_NS: a lock held longer is taken over. */
void gs__sched_lock(gs_sched_t *s);
void gs__sched_unlock(gs_sched_t *s);

/* Returns nonzero when process record i's owner is alive (holds its liveness lock). */
int gs__sched_alive(const gs_sched_t *s, int i);

/* Frees process record i (lock held). */
void gs__sched_free_proc(sched_layout_t *map, int i);

/* Moves process record p to state, keeping the waiting count (lock held). */
void gs__sched_set_state(sched_layout_t *map, sched_proc_t *p, uint32_t state);

/* Bumps the turn counter and wakes every waiter. */
void gs__sched_wake(sched_layout_t *map);

/* The GPU's virtual time at now: the holder's lease's, counting its slot so far (lock held). New
 * leases start there (sched_policy.c). */
uint64_t gs__sched_vclock(const sched_layout_t *map, int64_t now);

/* The caller's member leaves its lease's slot (it leaves the scheduler): when it was the slot's
 * last running member the slot ends at now, its lease is charged and the GPU goes to the next
 * lease in line (lock held; sched_policy.c). */
void gs__sched_leave_slot(gs_sched_t *s, int64_t now);

#endif
