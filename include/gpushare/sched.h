/* SPDX-License-Identifier: Apache-2.0 */
/* The compute scheduler of one GPU: a shared file through which every lease on the GPU takes
 * turns on it, so that each gets its share of the GPU's time.
 *
 * Every process that launches work on the GPU under gpushare joins the GPU's scheduler region
 * (made by gpushared at start, or without a daemon by the first process) as a member of its
 * lease. One lease at a time holds the GPU for a slot, and its members with work run in it
 * together (the GPU time-slices a lease's own processes); the others hold back their launches.
 * The holder's work drains before the next lease gets the GPU, and the time it held the GPU (to
 * the end of its last member's drain) is charged to the lease, so a kernel longer than its slot
 * is paid back later. Slots follow the leases' weights (stride scheduling on a virtual time per
 * lease, slot lengths proportional to the weights within a round of GS_SCHED_PERIOD_NS), so shares
 * hold whatever the kernels' lengths:
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
 * while makes the holder end its slot early (a lightly loaded lease waits little).
 *
 * The region is written by processes of different users: everything read from it is untrusted.
 * Every operation does bounded work whatever the file holds, never crashes on garbage, and a
 * member that died (its OFD lock on its byte of the key file is gone) or stops taking part is
 * passed over: a dead holder at once, a live holder that keeps the GPU past its slot by at most
 * GS_SCHED_OVERDUE_NS. The file's lock is taken from a holder that kept it GS_SCHED_LOCK_STALE_NS.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, passed in by the caller (members must share a time
 * namespace). All functions are thread-safe for distinct handles; one handle is used by one
 * thread at a time. */
#ifndef GPUSHARE_SCHED_H
#define GPUSHARE_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GS_SCHED_MAX_LEASES    64
#define GS_SCHED_MAX_PROCS     256
#define GS_SCHED_KEY_MAX       64
#define GS_SCHED_PERIOD_NS     INT64_C(100000000) /* a round: every lease with work runs once */
#define GS_SCHED_MIN_SLOT_NS   INT64_C(2000000)
#define GS_SCHED_OVERDUE_NS    INT64_C(1000000000) /* a live holder's grace beyond its slot */
#define GS_SCHED_LOCK_STALE_NS INT64_C(25000000)

typedef struct gs_sched gs_sched_t;

/* A lease's share of the GPU's time, in per mille (0 = none). */
typedef struct gs_sched_share {
    uint32_t guarantee; /* at least this whenever the lease has work; 0 = best effort */
    uint32_t cap;       /* never more than this; 0 = no cap */
} gs_sched_share_t;

/* What a member may do now (gs_sched_want, gs_sched_yield, gs_sched_renew). */
typedef struct gs_sched_grant {
    int held;         /* nonzero: this process runs in its lease's slot until end_ns */
    uint64_t epoch;   /* the slot's number (pass it back to renew and yield) */
    int64_t start_ns; /* when the slot began */
    int64_t end_ns;   /* when the slot ends */
    int64_t wait_ns;  /* not held: wait at most this long (or for gs_sched_wait) and ask again */
} gs_sched_grant_t;

/* One lease as the scheduler sees it (gs_sched_leases). */
typedef struct gs_sched_lease_info {
    char key[GS_SCHED_KEY_MAX];
    gs_sched_share_t share;
    uint64_t used_ns; /* device time granted to the lease so far (slots, drains included) */
    uint32_t procs;   /* member processes */
    uint32_t waiting; /* of which waiting for the GPU or holding it */
} gs_sched_lease_info_t;

/* Writes the region path of the GPU with UUID uuid ("GPU-..." or "MIG-...") in dir:
 * dir/gpushare-sched-UUID (the key file; the state is a SysV segment it names). Returns 0,
 * or GS_EINVAL for a UUID that is not a plain name (no '/', not empty, not "." or ".."),
 * GS_ERANGE when buf is too small. */
int gs_sched_path(const char *dir, const char *uuid, char *buf, size_t len);

/* Creates the region at path: a new segment (mode 0666, so that every user's jobs can join) and
 * its key file with file mode (fchmod'ed), atomically. The segment lives while a handle (of any
 * process) has it open and goes with the last: its key file is then stale (gs_sched_open says
 * GS_EVERSION; a restarted gpushared whose jobs still run finds their segment). Returns 0 and
 * *out, GS_EEXIST, or -errno. Caller owns *out. */
int gs_sched_create(const char *path, mode_t mode, gs_sched_t **out);

/* Opens an existing region (never following a symbolic link). Returns 0 and *out, GS_ENOENT,
 * GS_EVERSION (not a region of this version), or -errno. */
int gs_sched_open(const char *path, gs_sched_t **out);

/* Opens path, creating the region (key file 0644) when it is missing, or when its key file is
 * the caller's own and stale (the first process without a daemon). Returns 0 or a code of
 * gs_sched_create / gs_sched_open. */
int gs_sched_open_or_create(const char *path, gs_sched_t **out);

/* Leaves (if joined) and unmaps the region; NULL is ignored. */
void gs_sched_close(gs_sched_t *s);

/* Makes the calling process a member of lease key (created with share when new; a live lease's
 * share is updated to share). A member whose record was taken from it (the region was
 * overwritten) joins again. Returns 0, GS_EINVAL (empty key), GS_EBUSY (already joined), or
 * GS_ENOSPC when the region has no free lease or process record (after reclaiming the dead). */
int gs_sched_join(gs_sched_t *s, const char *key, gs_sched_share_t share);

/* Leaves the scheduler: a slot the caller was the last to run in is handed to the next lease. */
void gs_sched_leave(gs_sched_t *s);

/* The member has work at now: it waits for the GPU from now on, and is granted it when its lease
 * gets a slot, or runs in its lease's slot at once when that has time left; the GPU is taken
 * from a holder lease whose members are dead, or that is GS_SCHED_OVERDUE_NS past its slot. Call
 * again (with a fresh now) after each wait. Fills *grant. Returns 0, or GS_EINVAL when not
 * joined. */
int gs_sched_want(gs_sched_t *s, int64_t now, gs_sched_grant_t *grant);

/* The member leaves slot epoch: its work drained at drained_ns; still_wants says whether it has
 * more work (it then waits for its next turn). When it was the slot's last running member, the
 * lease is charged the slot's time (to its members' latest drain) and the GPU goes to the next
 * lease in line (which may be the caller's: *grant tells). A slot already taken from the lease
 * is not charged again. Returns 0 or GS_EINVAL. */
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

/* The end of slot epoch as the scheduler has it now (a lease that came back from idle shortens
 * the holder's slot to its part of the round), or 0 when the caller no longer runs in it. Read
 * without the lock. */
int64_t gs_sched_slot_end(const gs_sched_t *s, uint64_t epoch);

/* Hints for the holder, read without the lock: nonzero when another member waits for the GPU,
 * and when a member that came back from idle asked the holder of slot epoch to end its slot
 * early. */
int gs_sched_others_waiting(const gs_sched_t *s);
int gs_sched_preempted(const gs_sched_t *s, uint64_t epoch);

/* Returns the counter that changes whenever the GPU changes hands; gs_sched_wait sleeps until
 * it differs from seen or timeout_ns passes (a futex on the shared file). */
uint32_t gs_sched_turn(const gs_sched_t *s);
void gs_sched_wait(const gs_sched_t *s, uint32_t seen, int64_t timeout_ns);

/* Copies up to max leases with live members into out; returns how many. */
int gs_sched_leases(gs_sched_t *s, gs_sched_lease_info_t *out, int max);

/* In a forked child: forgets the parent's membership without touching the region (the child
 * must join for itself). */
void gs_sched_after_fork(gs_sched_t *s);

#endif
