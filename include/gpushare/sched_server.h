/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's compute scheduler: the state of every GPU's scheduler (gpushare/sched.h), which
 * only this process writes, and a thread that serves the member processes over one channel each
 * (gpushare/sched_wire.h).
 *
 * The daemon's event loop adds a member when a lease's process asks to take part (after checking
 * that it may) and gets back the process's end of a new channel to send it; the thread reads
 * what members say (want, yield, renew, started) with its own clock, runs the policy, and tells
 * each member what concerns it (grants, slot ends, preemption). A member whose channel closes
 * (the process exited, even by SIGKILL) leaves at once; one that breaks the protocol, floods or
 * does not read its channel is dropped (logged). Nothing a member sends can change another
 * lease's scheduling beyond what the policy's rules allow any lease.
 *
 * Thread-safety: every function may be called from any thread; they serialize on the server's
 * lock, which the thread holds only while it handles what woke it (no system call that can
 * block is made under it: channels are non-blocking). */
#ifndef GPUSHARE_SCHED_SERVER_H
#define GPUSHARE_SCHED_SERVER_H

#include "gpushare/sched.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gs_sched_server gs_sched_server_t;

/* What a member was admitted as (gs_sched_server_add). */
typedef struct gs_sched_member_info {
    unsigned gpu;               /* the server's index of its GPU */
    char key[GS_SCHED_KEY_MAX]; /* its lease */
    gs_sched_share_t share;
    uint32_t uid; /* the lease's user, whom the per-user bounds count (root: none apply) */
} gs_sched_member_info_t;

/* What one lease and one user (root excepted) may hold in one GPU's scheduler, so that no user
 * can fill its tables (GS_SCHED_MAX_PROCS members, GS_SCHED_MAX_LEASES leases) against the
 * others; 0 = no bound. */
typedef struct gs_sched_limits {
    unsigned members_per_lease; /* a lease's member processes */
    unsigned members_per_user;  /* the member processes of a user's leases */
    unsigned leases_per_user;   /* a user's leases with members */
} gs_sched_limits_t;

/* A server for n_gpus GPUs (at most 64), its thread started. Returns 0 and *out (the caller owns
 * it: gs_sched_server_free), GS_EINVAL, or -errno. */
int gs_sched_server_new(unsigned n_gpus, gs_sched_server_t **out);

/* Stops the thread, closes every channel (members then see the daemon gone) and frees the
 * server. NULL is ignored. */
void gs_sched_server_free(gs_sched_server_t *s);

/* Sets the bounds that later admissions are held to (members already in are kept). */
void gs_sched_server_set_limits(gs_sched_server_t *s, const gs_sched_limits_t *limits);

/* Admits a member process of lease info->key on GPU info->gpu with the lease's share (updated
 * for every member of the lease): makes its channel and returns the member's end in *member_fd
 * (close-on-exec; the caller sends it to the process and closes it). Returns 0, GS_EINVAL (a GPU
 * out of range, a bad key), GS_ELIMIT (the lease or its user holds what the bounds allow: why, of
 * whylen bytes, when not NULL, says which, e.g. "lease/7 has 32 members on the GPU, the most a
 * lease may have"), GS_ENOSPC (the GPU's tables are full), or -errno. Check and admission are one
 * step under the server's lock. */
int gs_sched_server_add(gs_sched_server_t *s, const gs_sched_member_info_t *info, int *member_fd,
                        char *why, size_t whylen);

/* Ends lease key's membership on every GPU: its channels are closed (its processes then run
 * unscheduled, and are the lease's to stop). */
void gs_sched_server_drop(gs_sched_server_t *s, const char *key);

/* Copies up to max leases with members on GPU gpu into out (gs_sched_leases); returns how many,
 * 0 for a GPU out of range. */
int gs_sched_server_leases(gs_sched_server_t *s, unsigned gpu, gs_sched_lease_info_t *out, int max);

/* Members of lease key on every GPU (live channels). */
unsigned gs_sched_server_members(gs_sched_server_t *s, const char *key);

#endif
