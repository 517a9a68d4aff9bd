/* SPDX-License-Identifier: Apache-2.0 */
/* The node's processes as the kernel sees them (/proc), never as a region says: which processes
 * hold a lease's region (open or mapped), the descendants of a lease's holder, signals to them,
 * and the regions of gpushared that processes still hold after a restart of the daemon.
 *
 * These walk every process of the node (a few ms on a busy node): they run when a lease is
 * released by someone else or forced, a few times per lease, and once at start. */
#ifndef GS_DAEMON_PROCTAB_H
#define GS_DAEMON_PROCTAB_H

#include <stdint.h>
#include <sys/types.h>

#include "gpushare/region.h"

/* A process, named so that a reused pid is never mistaken for it. */
typedef struct gs__proc_ref {
    pid_t pid;
    uint64_t start; /* /proc/PID/stat start time */
} gs__proc_ref_t;

/* A growing list of processes (gs__lease_procs_clear frees it). */
typedef struct gs__proc_refs {
    gs__proc_ref_t *v;
    unsigned n, cap;
} gs__proc_refs_t;

/* Whom gs__lease_procs_find looks for. */
typedef struct gs__lease_procs_query {
    const gs_region_t *region; /* its holders (open or mapped), whatever their user but root; NULL:
                                  none */
    pid_t holder;              /* the descendants of this process (0: none) ... */
    uint64_t holder_start;     /* ... if it is still this one ... */
    uid_t uid;                 /* ... whose real uid is this */
    int with_holder;           /* the holder itself too (it is the lease's user's own client) */
    const char *cgroup;        /* every process in this cgroup or below (any hierarchy), root's
                                  too: a keyed lease's container (NULL: none) */
} gs__lease_procs_query_t;

/* Nonzero when process pid is in cgroup path (absolute, as /proc/PID/cgroup writes it) or a
 * cgroup below it, in any hierarchy (cgroup v2's "0::", or a v1 controller's). */
int gs__proc_in_cgroup(pid_t pid, const char *path);

/* Adds to list the processes q names that are not in it yet, never the daemon itself nor
 * pid 1. Returns how many were added, or -errno. */
int gs__lease_procs_find(const gs__lease_procs_query_t *q, gs__proc_refs_t *list);

/* Sends sig to every process of list that is still the one listed, and drops the others from
 * the list. Returns how many remain. */
unsigned gs__lease_procs_signal(gs__proc_refs_t *list, int sig);

/* Drops the processes of list that are gone. Returns how many remain. */
unsigned gs__lease_procs_alive(gs__proc_refs_t *list);

/* Frees the list's memory. */
void gs__lease_procs_clear(gs__proc_refs_t *list);

/* Calls found(arg, region) once for every region of gpushared that a process of the node holds
 * open or mapped: a memfd named GS_REGION_MEMFD_NAME, owned by owner (the daemon's uid: no user
 * can make one), sealed, with a valid layout. found takes the handle (the daemon's, not a
 * member). Returns how many were found. */
int gs__lease_procs_find_regions(uid_t owner, void (*found)(void *arg, gs_region_t *region),
                                 void *arg);

#endif
