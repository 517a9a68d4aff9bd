/* SPDX-License-Identifier: Apache-2.0 */
/* What really runs on the node's GPUs: NVML's per-process memory on each GPU, with each
 * process's owner, command and parent from /proc. One module, so that the watchdog and the
 * per-process views (gpushare status) read the same thing.
 *
 * NVML names processes by pid in the host's PID namespace: gpushared must run there (as it must
 * for the regions' liveness checks). Not thread-safe: the event loop's. */
#ifndef GS_DAEMON_GPUPROCS_H
#define GS_DAEMON_GPUPROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inventory.h"
#include "core/core.h"

#define GS__COMMAND_MAX 128

/* A process's facts from /proc. */
typedef struct gs__proc_info {
    pid_t ppid;
    uint64_t start; /* starttime, clock ticks since boot */
    uid_t uid;      /* real uid */
    char user[GS__USER_MAX];
    char command[GS__COMMAND_MAX]; /* its command line, arguments joined by spaces (or comm) */
} gs__proc_info_t;

/* One process on one GPU. */
typedef struct gs__nvml_proc {
    unsigned gpu; /* index into the daemon's GPUs (NVML index order) */
    pid_t pid;
    uint64_t used; /* NVML's usedGpuMemory on that GPU, bytes (0 when NVML does not say) */
    int unknown;   /* NVML said N/A: its memory is unknown, not 0 (watchdog.h counts it) */
    int alive;     /* /proc knows the process (info is valid) */
    gs__proc_info_t info;
} gs__nvml_proc_t;

/* Every GPU's processes at one moment. */
typedef struct gs__nvml_procs {
    unsigned n, cap;
    gs__nvml_proc_t *procs;          /* owned */
    uint64_t listed[GS_MAX_DEVICES]; /* per GPU: the sum of its processes' used */
    int complete[GS_MAX_DEVICES];    /* per GPU: NVML answered */
} gs__nvml_procs_t;

/* Reads NVML's compute processes of GPUs 0..n_gpus-1 and /proc's facts about each into *out
 * (emptied first; reuse it between calls, gs__nvml_procs_free at the end). A GPU whose list NVML
 * cannot give has complete 0 and no entries. Returns 0 or GS_ENOMEM. */
int gs__nvml_procs_collect(gs__inventory_t *inv, unsigned n_gpus, gs__nvml_procs_t *out);

/* Frees the entries (the struct itself is the caller's). */
void gs__nvml_procs_free(gs__nvml_procs_t *procs);

/* Reads pid's facts from /proc. Returns 0, or GS_ENOENT when it is gone (or a zombie). */
int gs__proc_read(pid_t pid, gs__proc_info_t *info);

/* Reads pid's parent and start time from /proc/PID/stat. Returns 0, or GS_ENOENT when it is gone
 * (or a zombie). */
int gs__proc_parent(pid_t pid, pid_t *ppid, uint64_t *start);

/* A process and its ancestors by the parent links in /proc, nearest first. */
#define GS__CHAIN_MAX 256
typedef struct gs__proc_chain {
    unsigned n;
    pid_t pid[GS__CHAIN_MAX];
    uint64_t start[GS__CHAIN_MAX];
} gs__proc_chain_t;

/* Fills *chain with pid and its ancestors up to init (or GS__CHAIN_MAX of them); empty when pid
 * is gone. */
void gs__proc_ancestors(pid_t pid, gs__proc_chain_t *chain);

#endif
