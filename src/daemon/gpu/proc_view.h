/* SPDX-License-Identifier: Apache-2.0 */
/* The processes on the node's GPUs, from NVML, each tied to its lease and its user.
 *
 * The per-process view (status --processes, top): NVML says which processes hold memory on which
 * GPU, the watchdog's rules say which lease each belongs to (gs__watchdog_lease_of: a descendant
 * of the lease's holder, else a process of the lease's user that its region lists; the region is
 * the user's to write and is never trusted beyond that user), /proc says whose it is. */
#ifndef GS_DAEMON_PROCS_H
#define GS_DAEMON_PROCS_H

#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"
#include "inventory.h"

/* One process on one GPU. */
typedef struct gs__proc_row {
    unsigned gpu;   /* index into the daemon's gpus[] */
    pid_t pid;      /* as NVML reports it (the daemon's pid namespace) */
    uint64_t used;  /* bytes of device memory from NVML; UINT64_MAX when it cannot tell */
    uint64_t lease; /* its lease (gs__watchdog_lease_of), 0 when none */
    uid_t uid;      /* its owner (/proc), (uid_t)-1 when it is gone */
    char name[32];  /* its command name (/proc/PID/comm), "" when it is gone */
} gs__proc_row_t;

/* A list of processes (gs__proc_view_collect). */
typedef struct gs__proc_rows {
    unsigned n, cap;
    gs__proc_row_t *items;
} gs__proc_rows_t;

/* Lists the processes on every GPU into procs (emptied first; grown as needed). Returns 0, or
 * GS_ENOMEM (procs keeps what it got). GPUs whose driver cannot list processes are skipped. Not
 * thread-safe (the event loop's). */
int gs__proc_view_collect(gs__daemon_t *d, gs__proc_rows_t *procs);

/* Frees the list's memory. */
void gs__proc_view_free(gs__proc_rows_t *procs);

#endif
