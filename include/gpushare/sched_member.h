/* SPDX-License-Identifier: Apache-2.0 */
/* A process's side of a GPU's compute scheduler: its channel to gpushared (gpushare/sched_wire.h)
 * and what it was told over it. libc only: the shim links it.
 *
 * A lease's process asks gpushared to take part on one GPU (gs_smember_join) and gets its own
 * channel; from then on it says when it has work, when it leaves a slot and whether it goes on
 * at a slot's end, and reads its grants. Times here are the process's own CLOCK_MONOTONIC (the
 * wire carries durations). A handle is used by one thread (the shim's agent of that GPU). */
#ifndef GPUSHARE_SCHED_MEMBER_H
#define GPUSHARE_SCHED_MEMBER_H

#include <stddef.h>
#include <stdint.h>

#include "gpushare/sched.h"

typedef struct gs_smember gs_smember_t;

/* gpushared's answer to a request to take part (gs_smember_join). */
typedef struct gs_smember_terms {
    int gate;               /* nonzero: launches on this GPU are scheduled (its mode is shared) */
    gs_sched_share_t share; /* the lease's share as gpushared has it, per mille */
} gs_smember_terms_t;

/* Asks gpushared (spec: "gpushared:LEASE_ID:SOCKET", as in GPUSHARE_REGION) to make the calling
 * process a member of its lease on the GPU with UUID uuid, capped at cap_pct percent (0: the
 * lease's own cap only). Waits up to a few seconds for a daemon that is restarting. Returns 0
 * with *terms and, when terms->gate, *out (the caller owns it); GS_EINVAL for a bad spec;
 * GS_EAGAIN when gpushared cannot be reached; GS_ENOENT when it does not know the lease;
 * another code with one line in err. */
int gs_smember_join(const char *spec, const char *uuid, uint32_t cap_pct, gs_smember_t **out,
                    gs_smember_terms_t *terms, char *err, size_t errlen);

/* Takes over fd, a member's end of a channel. Returns 0 and *out, or GS_ENOMEM (fd is closed). */
int gs_smember_new(int fd, gs_smember_t **out);

/* Closes the channel (gpushared then takes the process out at once) and frees the handle. NULL
 * is ignored. */
void gs_smember_free(gs_smember_t *m);

/* In a forked child: closes the parent's channel without telling anything (the parent's stays
 * open in the parent) and frees nothing (another thread of the parent may have held it). */
void gs_smember_forget(gs_smember_t *m);

/* The channel's descriptor, for poll(2). */
int gs_smember_fd(const gs_smember_t *m);

/* Reads every message waiting (never blocks). Returns 0, or GS_ECONNRESET when the channel is
 * closed (gpushared stopped or dropped the process). */
int gs_smember_read(gs_smember_t *m);

/* Waits up to timeout_ns for a message from gpushared, or for extra_fd (when >= 0) to become
 * readable, and reads what came. Returns 1 when extra_fd is readable, 0 otherwise, or
 * GS_ECONNRESET. */
int gs_smember_wait(gs_smember_t *m, int extra_fd, int64_t timeout_ns);

/* The process has work: tells gpushared unless it knows already, and fills *grant with what the
 * process holds (grant->held: it runs in its lease's slot until end_ns). Returns 0 or
 * GS_ECONNRESET. */
int gs_smember_want(gs_smember_t *m, gs_sched_grant_t *grant);

/* The process leaves slot epoch, its work drained; wants: it has more. Returns 0 or
 * GS_ECONNRESET. */
int gs_smember_yield(gs_smember_t *m, uint64_t epoch, int wants);

/* At the end of slot epoch: asks whether the lease goes on without a hand-over and waits for the
 * answer (at most about 100 ms; no answer counts as no). Returns 1 (renewed: *grant has the new
 * end), 0 (it must yield), or GS_ECONNRESET. */
int gs_smember_renew(gs_smember_t *m, uint64_t epoch, gs_sched_grant_t *grant);

/* The first launch of slot epoch went at at (CLOCK_MONOTONIC ns). */
void gs_smember_started(gs_smember_t *m, uint64_t epoch, int64_t at);

/* What the process was told: the end of slot epoch (0 when it does not run in it), whether slot
 * epoch was asked to end early, whether another lease waits. */
int64_t gs_smember_slot_end(const gs_smember_t *m, uint64_t epoch);
int gs_smember_preempted(const gs_smember_t *m, uint64_t epoch);
int gs_smember_others_waiting(const gs_smember_t *m);

#endif
