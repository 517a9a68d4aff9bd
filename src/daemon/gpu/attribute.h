/* SPDX-License-Identifier: Apache-2.0 */
/* Which lease each process on the GPUs belongs to (the watchdog's rules, watchdog.h), with work
 * bounded whatever users write into their regions or however many processes they start.
 *
 *   - By cgroup: a keyed lease whose cgroup (named by root or lease_admin_group) the process
 *     is in or below, whatever its user.
 *   - By ancestry: the lease whose holder (pid, start time, from SO_PEERCRED; never a row
 *     without a start time) is the process's nearest ancestor, itself included, provided the
 *     process is the lease's user's. One pass over the parent links per scan: an ancestor read
 *     once serves every process below it.
 *   - Else by the lease's region: a record (pid and start time) in a region of a lease of the
 *     process's own user. A region is its user's to write, so it can claim only that user's
 *     processes. Each lease's region is read at most once per scan, and the records one user's
 *     leases cost a scan are capped (GS__ATTRIBUTE_RECORDS_PER_USER): a user whose regions are
 *     full of forged records spends their own budget, never another user's. A process left
 *     unresolved because its user's budget ran out is marked unsure (not killed for it); the
 *     next scan goes on from the lease where the budget ran out. (The watchdog judges a process
 *     that stays unsure for as many scans as reading all its user's regions takes as one of no
 *     lease: watchdog.c, settle_unsure.)
 *
 * Not thread-safe: the event loop's. */
#ifndef GS_DAEMON_ATTRIBUTE_H
#define GS_DAEMON_ATTRIBUTE_H

#include <stdint.h>
#include <sys/types.h>

#include "nvml_procs.h"
#include "core/core.h"

/* Region records one user's leases may cost one scan, and records of one region read. */
#define GS__ATTRIBUTE_RECORDS_PER_USER   16384
#define GS__ATTRIBUTE_RECORDS_PER_REGION 256

/* What a scan decided about one process. */
typedef struct gs__verdict {
    uint64_t lease;     /* its lease's id, 0 = none */
    int part;           /* the lease's part on the process's GPU, -1 = unmanaged there */
    uint64_t accounted; /* what the lease's region says the shim charged it there */
    int unsure;         /* its user's record budget ran out before it was found: not yet judged */
} gs__verdict_t;

/* Fills verdicts[i] for each process of procs (verdicts has room for procs->n). *cursor is where
 * the region reads go on (0 at first; kept between scans). Returns 0 or GS_ENOMEM (verdicts
 * then say "none, unsure" for every process). */
int gs__attribute(const gs__daemon_t *d, const gs__nvml_procs_t *procs, gs__verdict_t *verdicts,
                  uint64_t *cursor);

/* The lease of one process by cgroup and ancestry alone (per-process views between scans),
 * NULL when none. */
const gs__lease_t *gs__attribute_by_ancestry(const gs__daemon_t *d, pid_t pid);

#endif
