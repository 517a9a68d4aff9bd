/* SPDX-License-Identifier: Apache-2.0 */
/* The node's processes as the kernel sees them (/proc), never as a region says: which processes
 * hold a lease's region (open or mapped), the descendants of a lease's holder, signals to them,
 * and the regions of gpushared that processes still hold after a restart of the daemon.
 *
 * A lease's processes are found from the processes the kernel named to the daemon (its holder,
 * from SO_PEERCRED at accept; the processes that joined it, at join) and their descendants, by
 * the kernel's children lists: work in proportion to the lease's own processes, whatever else
 * runs on the node. Only a forced stop (root) and the search for regions at start walk every
 * process of the node (a few ms on a busy node), once each.
 *
 * A process is named by pid, start time and owner; every signal goes through a pidfd opened
 * before the start time and owner are checked, so a pid reused by another process, of any user,
 * is never signalled. */
#ifndef GS_DAEMON_PROCTAB_H
#define GS_DAEMON_PROCTAB_H

#include <stdint.h>
#include <sys/types.h>

#include "gpushare/region.h"

/* A process, named so that a reused pid is never mistaken for it. */
typedef struct gs__proc_ref {
    pid_t pid;
    uint64_t start; /* /proc/PID/stat start time, never 0 */
    uid_t uid;      /* its real or effective uid when found */
} gs__proc_ref_t;

/* The most processes one lease's stop looks at, and the most members it remembers. */
#define GS__LEASE_PROCS_MAX   4096
#define GS__LEASE_MEMBERS_MAX 256

/* What /proc says of a live process (not a zombie). */
typedef struct gs__proc_id {
    uint64_t start; /* start time, clock ticks since boot */
    pid_t ppid;
    uid_t ruid, euid; /* real and effective uid */
} gs__proc_id_t;

/* Reads pid's identity. Returns 0, or GS_ENOENT when it is gone or a zombie. */
int gs__proc_identity(pid_t pid, gs__proc_id_t *id);

/* A pidfd of the process pid if it is the one started at start (never 0) and owned by uid (its
 * real or effective uid; (uid_t)-1: anyone but checked nothing else): returns the descriptor
 * (the caller closes it), GS_ENOENT when that process is gone (its pid free or someone else's),
 * GS_EPERM for pid 0, 1 or the daemon itself, or -errno. */
int gs__proc_open_exact(pid_t pid, uint64_t start, uid_t uid);

/* Sends sig to that process through such a pidfd. Returns 0 or as gs__proc_open_exact. */
int gs__proc_signal(pid_t pid, uint64_t start, uid_t uid, int sig);

/* The process that connected on sock (pid and uid from SO_PEERCRED): checks through a pidfd
 * (SO_PEERPIDFD where the kernel has it) that it is still there, not a zombie, and owned by uid,
 * and reads its start time. Returns 0, GS_ENOENT (refuse the connection: a pid of a process
 * that is gone names nothing the daemon may ever signal), or -EMFILE / -ENFILE when the daemon
 * is out of descriptors to look (refuse it too, for that reason). */
int gs__proc_peer(int sock, pid_t pid, uid_t uid, uint64_t *start);

/* Whether the process that connected on sock (pid from SO_PEERCRED) is in cgroup path or below
 * (as gs__proc_in_cgroup), read while a pidfd holds it (SO_PEERPIDFD where the kernel has it:
 * exactly the process that connected, whose pid no one can take while it is read). Returns 1,
 * 0 (not in it, or gone), or -EMFILE / -ENFILE when the daemon is out of descriptors to look. */
int gs__proc_peer_in_cgroup(int sock, pid_t pid, const char *path);

/* A growing list of processes (gs__lease_procs_clear frees it). */
typedef struct gs__proc_refs {
    gs__proc_ref_t *v;
    unsigned n, cap;
} gs__proc_refs_t;

/* Adds the process to list unless it is there already (or pid 0 / 1, the daemon, start 0).
 * Returns 1 when added, 0 when not, GS_ENOMEM. */
int gs__proc_refs_add(gs__proc_refs_t *list, pid_t pid, uint64_t start, uid_t uid);

/* Whom gs__lease_procs_find looks for. */
typedef struct gs__lease_procs_query {
    const gs_region_t *region;      /* forced or keyed: its holders (open or mapped), any user
                                       but root, by a pass over every process; NULL: none */
    pid_t holder;                   /* the descendants of this process (0: none) ... */
    uint64_t holder_start;          /* ... if it is still this one ... */
    const gs__proc_refs_t *members; /* ... and of these (those still the ones listed) ... */
    uid_t uid;                      /* ... whose real uid is this (the members too) */
    int with_holder;                /* the holder itself too (it is the lease's user's own
                                       client) */
    const char *cgroup;             /* every process in this cgroup or below (any hierarchy),
                                       from the cgroups' process lists: a keyed lease's
                                       container, named by root (NULL: none) */
    uid_t scope;                    /* the region's holders and the cgroup's processes only of
                                       this uid (real or effective); (uid_t)-1: anyone's (root's
                                       in the cgroup too, never among the holders) */
} gs__lease_procs_query_t;

/* Nonzero when process pid is in cgroup path (absolute, as /proc/PID/cgroup writes it) or a
 * cgroup below it, in any hierarchy (cgroup v2's "0::", or a v1 controller's). */
int gs__proc_in_cgroup(pid_t pid, const char *path);

/* Adds to list the processes q names that are not in it yet, never the daemon itself nor
 * pid 1. Returns how many were added, or -errno. */
int gs__lease_procs_find(const gs__lease_procs_query_t *q, gs__proc_refs_t *list);

/* Sends sig to every process of list that is still the one listed (gs__proc_signal), and drops
 * the others from the list. Returns how many remain. */
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
