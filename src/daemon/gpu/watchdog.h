/* SPDX-License-Identifier: Apache-2.0 */
/* The watchdog: what really runs on the GPUs, held against the leases.
 *
 * Every watch_interval (default 1 s) it reads NVML's per-process memory on each GPU (nvml_procs.h)
 * and gives each process to a lease (attribute.h, with work bounded per user):
 *   - a descendant of the lease's holder (the gpushare run or slurmstepd process that asked for
 *     it: pid and start time, from SO_PEERCRED) by the parent links in /proc, when its real uid
 *     is the lease's. gpushare run is a child subreaper, so a job's orphans stay below it;
 *   - else a process listed in the lease's region (a shim process that joined it) whose real uid
 *     is the lease's: the region is its user's to write, so it can claim only that user's
 *     processes, and a process it claims is held to that lease's limit.
 * A process of no lease on a GPU (or of a lease on a GPU the lease does not have) is unmanaged;
 * a lease whose processes hold more than its limit plus watch_tolerance on a GPU is over its
 * limit. Both show in `gpushare status`, in metrics and in the log (pid, user, command); with
 * enforce = kill the offenders get SIGKILL (through a pidfd, after checking the start time, so a
 * reused pid is never hit): an unmanaged process, or the lease's processes that the shim does not
 * account for, largest first, until the lease is back within its limit (root's processes of no
 * lease and NVIDIA's MPS server are reported, never killed). Memory held outside the leases
 * (unmanaged, and leases' use over their limits) is taken from what the GPU offers new leases
 * (gs__gpu_t.outside). One owner: the event loop. */
#ifndef GS_DAEMON_WATCHDOG_H
#define GS_DAEMON_WATCHDOG_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/core.h"

typedef struct gs__watchdog gs__watchdog_t;

/* Creates d->watchdog (even with watch_interval 0: it then never scans). Returns 0 or
 * GS_ENOMEM. */
int gs__watchdog_start(gs__daemon_t *d);

/* Frees d->watchdog (NULL is fine). */
void gs__watchdog_stop(gs__daemon_t *d);

/* Scans when one is due (every watch_interval). Returns 1 when it scanned (the metrics should
 * show what it found at once), else 0. */
int gs__watchdog_tick(gs__daemon_t *d, int64_t now_ms);

/* Scans now: reads the GPUs' processes, attributes them, updates each GPU's outside memory,
 * logs what changed and, with enforce = kill, kills the offenders. */
void gs__watchdog_scan(gs__daemon_t *d);

/* The lease process pid belongs to: the latest scan's verdict, or, for a process the scan did
 * not see, its ancestry read now from /proc (no region is read); 0 when none (or it is gone).
 * For every per-process view. */
uint64_t gs__watchdog_lease_of(const gs__daemon_t *d, pid_t pid);

/* The latest scan's figures of lease part i: the real memory of the lease's processes on its
 * GPU, and how far it is over the limit beyond the tolerance (0 when not). Returns 0, or
 * GS_ENOENT before the first scan that saw the lease. */
int gs__watchdog_lease_real(const gs__daemon_t *d, const gs__lease_t *lease, unsigned part,
                            uint64_t *real, uint64_t *over);

/* The unmanaged processes of GPU g for a status reply: a new array of {pid, user, uid, command,
 * memory_used, lease} that viewer may see (root, uid 0: all; others: their own), and through
 * *others_n and *others_bytes how many other users' there are and what they hold. */
json_t *gs__watchdog_unmanaged_view(const gs__daemon_t *d, unsigned g, uid_t viewer,
                                    unsigned *others_n, uint64_t *others_bytes);

/* The latest scan's processes of no lease on GPU g: how many, and the memory they hold. */
void gs__watchdog_unmanaged(const gs__daemon_t *d, unsigned g, unsigned *n, uint64_t *bytes);

/* Why the watchdog killed a process (the label reason of gpushare_watchdog_kills_total). */
typedef enum gs__kill_reason {
    GS__KILL_OVER_LIMIT,    /* a lease's process while the lease was over its memory limit */
    GS__KILL_OUTSIDE_LEASE, /* a process holding GPU memory outside any lease */
    GS__KILL_REASONS
} gs__kill_reason_t;

/* The processes the watchdog killed since start for reason (enforce = kill). */
uint64_t gs__watchdog_kills(const gs__daemon_t *d, gs__kill_reason_t reason);

/* The scans the watchdog completed since start (every GPU's processes listed and judged). */
uint64_t gs__watchdog_scans(const gs__daemon_t *d);

#endif
