/* SPDX-License-Identifier: Apache-2.0 */
/* The compute scheduler of one GPU: the policy by which the leases on a GPU take turns on it, so
 * that each gets its share of the GPU's time. Only gpushared runs it (sched_server.h): the
 * decisions (shares, caps, virtual times, the holder, slot ends) live in the daemon's memory,
 * and a lease's processes take part over a channel of their own (sched_member.h), so that no
 * process can write another lease's scheduling, whatever namespaces it runs in.
 *
 * Every process that launches work on the GPU under a lease is a member of that lease here. One
 * lease at a time holds the GPU for a slot, and its members with work run in it together (the
 * GPU time-slices a lease's own processes); the others hold back their launches. The holder's
 * work drains before the next lease gets the GPU, and the time it held the GPU (to the end of its
 * last member's drain) is charged to the lease, so a kernel longer than its slot is paid back
 * later. Slots follow the leases' weights (stride scheduling on a virtual time per lease, slot
 * lengths proportional to the weights within a round of GS_SCHED_PERIOD_NS), so shares hold
 * whatever the kernels' lengths:
 * - a guarantee G (per mille) is the lease's weight: it gets at least G whenever it has work, and
 *   time others leave idle;
 * - a lease without a guarantee (best effort) shares what the guarantees of the leases with work
 *   leave;
 * - a cap C (per mille) bounds the lease's time to C of the GPU's over any period (a token
 *   bucket of GS_SCHED_PERIOD_NS), even when the GPU is otherwise idle.
 * Slots are sized among every lease with members (busy or not; a lease alone renews its slot
 * without a hand-over). Leases without work are skipped; a lease coming back after more than a
 * round starts at the GPU's virtual time (no credit for its idle time), one that paused less
 * keeps what it is owed (up to a round), and one that used less than its share and paused a
 * while makes the holder end its slot early (a lightly loaded lease waits little). A holder
 * lease whose members all left is passed over at once, one that keeps the GPU past its slot by
 * GS_SCHED_OVERDUE_NS is passed over and charged for it, and for what it keeps the GPU after (the
 * next holder is not charged for that time).
 *
 * Times are CLOCK_MONOTONIC nanoseconds of the caller (the daemon), passed in. A gs_sched_gpu_t
 * and the member handles made on it are not thread-safe: one thread uses them at a time (the
 * server holds its lock). Every operation does bounded work (fixed tables). */
#ifndef GPUSHARE_SCHED_H
#define GPUSHARE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#define GS_SCHED_MAX_LEASES  64
#define GS_SCHED_MAX_PROCS   256
#define GS_SCHED_KEY_MAX     64
#define GS_SCHED_PERIOD_NS   INT64_C(100000000) /* a round: every lease with work runs once */
#define GS_SCHED_MIN_SLOT_NS INT64_C(2000000)
#define GS_SCHED_OVERDUE_NS  INT64_C(80000000) /* a live holder's grace beyond its slot */

typedef struct gs_sched_gpu gs_sched_gpu_t; /* one GPU's scheduling state */
typedef struct gs_sched gs_sched_t;         /* one member process's handle on it */

/* A lease's share of the GPU's time, in per mille (0 = none). */
typedef struct gs_sched_share {
    uint32_t guarantee; /* at least this whenever the lease has work; 0 = best effort */
    uint32_t cap;       /* never more than this; 0 = no cap */
} gs_sched_share_t;

/* What a member may do now (gs_sched_want, gs_sched_yield, gs_sched_renew). */
typedef struct gs_sched_grant {
    int held;         /* nonzero: this process runs in its lease's slot until end_ns */
    uint64_t epoch;   /* the slot's number (pass it back to renew and yield) */
    int64_t start_ns; /* when the slot began (what its lease is charged from) */
    int64_t end_ns;   /* when the slot ends */
    int64_t wait_ns;  /* not held: look again after at most this long */
} gs_sched_grant_t;

/* One lease as the scheduler sees it (gs_sched_leases). */
typedef struct gs_sched_lease_info {
    char key[GS_SCHED_KEY_MAX];
    gs_sched_share_t share;
    uint64_t used_ns; /* device time granted to the lease so far (slots, drains included) */
    uint32_t procs;   /* member processes */
    uint32_t waiting; /* of which waiting for the GPU or running in its slot */
} gs_sched_lease_info_t;

/* A GPU's scheduling state, empty. Returns 0 and *out (the caller owns it) or GS_ENOMEM. */
int gs_sched_gpu_new(gs_sched_gpu_t **out);

/* Frees the state; every handle made on it must be closed first. NULL is ignored. */
void gs_sched_gpu_free(gs_sched_gpu_t *g);

/* A handle on g for one member process, not joined yet. Returns 0 and *out (the caller owns it;
 * gs_sched_close) or GS_ENOMEM. */
int gs_sched_open(gs_sched_gpu_t *g, gs_sched_t **out);

/* Leaves (if joined) and frees the handle; NULL is ignored. */
void gs_sched_close(gs_sched_t *s);

/* Makes the handle's process a member of lease key (created with share when new; a live lease's
 * share is updated to share). Returns 0, GS_EINVAL (empty or too long a key), GS_EBUSY (already
 * joined), or GS_ENOSPC when the GPU has no free lease or process record. */
int gs_sched_join(gs_sched_t *s, const char *key, gs_sched_share_t share);

/* Leaves the scheduler (the process is gone or stopped taking part): a slot it was the last to
 * run in is ended at now and handed to the next lease. */
void gs_sched_leave(gs_sched_t *s, int64_t now);

/* The member has work at now: it waits for the GPU from now on, and is granted it when its lease
 * gets a slot, or runs in its lease's slot at once when that has time left; the GPU is taken
 * from a holder lease that is GS_SCHED_OVERDUE_NS past its slot (looked at by each waiter: call
 * again at least every wait_ns while waiting). Fills *grant. Returns 0, or GS_EINVAL when not
 * joined. */
int gs_sched_want(gs_sched_t *s, int64_t now, gs_sched_grant_t *grant);

/* The member leaves slot epoch: its work drained at drained_ns; still_wants says whether it has
 * more work (it then waits for its next turn). When it was the slot's last running member, the
 * lease is charged the slot's time (to its members' latest drain) and the GPU goes to the next
 * lease in line (which may be the caller's: *grant tells). A slot already taken from the lease
 * is charged the time its member kept the GPU after that. Returns 0 or GS_EINVAL. */
int gs_sched_yield(gs_sched_t *s, uint64_t epoch, int64_t drained_ns, int still_wants,
                   gs_sched_grant_t *grant);

/* A member running in slot epoch at its end (now, with its work drained or still running):
 * charges the time so far and, when its lease would be next in line anyway (no waiting lease is
 * behind it) and its cap allows, starts a new slot for the lease without a hand-over (returns 1,
 * *grant updated; another member of the lease that renewed it already has the same answer).
 * Returns 0 when it must yield (the rest of the slot is charged when its last member yields),
 * GS_EINVAL when it does not run in the slot. */
int gs_sched_renew(gs_sched_t *s, uint64_t epoch, int64_t now, gs_sched_grant_t *grant);

/* A member of the holder lease started using slot epoch at from_ns (its first launch): the slot
 * is charged from then, not from the grant (the time its processes took to wake up is not the
 * lease's use); the first member to tell wins. Ignored unless the caller's lease holds slot epoch
 * and from_ns lies within it. */
void gs_sched_started(gs_sched_t *s, uint64_t epoch, int64_t from_ns);

/* What the member was told last, as the scheduler has it now: the end of slot epoch (a lease
 * that came back from idle shortens the holder's slot to its part of the round), or 0 when the
 * caller no longer runs in it; nonzero when a lease that came back from idle asked slot epoch to
 * end early; nonzero when a member of another lease waits for the GPU. */
int64_t gs_sched_slot_end(const gs_sched_t *s, uint64_t epoch);
int gs_sched_preempted(const gs_sched_t *s, uint64_t epoch);
int gs_sched_others_waiting(const gs_sched_t *s);

/* Nonzero while the handle's member waits for the GPU or runs in a slot. */
int gs_sched_wants(const gs_sched_t *s);

/* Nonzero when the member runs in its lease's current slot: *grant then has the slot (epoch,
 * start, end). */
int gs_sched_held(const gs_sched_t *s, gs_sched_grant_t *grant);

/* Copies up to max leases with members into out; returns how many. */
int gs_sched_leases(const gs_sched_gpu_t *g, gs_sched_lease_info_t *out, int max);

#endif
