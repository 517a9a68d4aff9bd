/* SPDX-License-Identifier: Apache-2.0 */
/* One gpushared per node: the daemon's claim on its state directory and on each of its GPUs.
 *
 * A claim is a POSIX write lock (fcntl F_SETLK) on a small file holding the claimant's pid: the
 * kernel drops it when the process dies, however it dies, and F_GETLK names the process that
 * holds it. gpushared claims its state directory (<state_dir>/gpushared.pid) before it opens
 * anything, and each GPU (/run/gpushare/gpus/<UUID>.pid, whatever the configuration says: a
 * GPU's UUID is unique, so a second daemon with another socket, state directory, runtime
 * directory and configuration still meets the first on its GPUs) before any GPU's mode starts. A
 * daemon that finds a claim taken stops at once and touches nothing of the first: no MPS control
 * daemon, MIG instance, region or ledger row.
 *
 * Ownership: the claim keeps its descriptors open until gs__claim_release (POSIX locks go when
 * any descriptor of the file closes: nothing else in the process opens these files). The event
 * loop's thread only. */
#ifndef GS_DAEMON_CLAIM_H
#define GS_DAEMON_CLAIM_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "model.h"

#define GS__CLAIM_PATH_MAX (GS__PATH_MAX + GS__UUID_MAX + 16)

/* Where GPUs are claimed: one directory per node, root's (never the configuration's). */
#define GS__CLAIM_GPU_DIR GS__DEFAULT_RUNTIME "/gpus"

typedef struct gs__claim {
    int state_fd; /* <state_dir>/gpushared.pid, -1 = not held */
    char state_path[GS__CLAIM_PATH_MAX];
    int gpu_fd[GS_MAX_DEVICES]; /* GS__CLAIM_GPU_DIR/<UUID>.pid, -1 = not held */
    char gpu_path[GS_MAX_DEVICES][GS__CLAIM_PATH_MAX];
    unsigned n_gpus;
    int sim_fd; /* GS__CLAIM_GPU_DIR/gpusim.pid, -1 = not held */
    char sim_path[GS__CLAIM_PATH_MAX];
} gs__claim_t;

/* Empty: nothing held. */
void gs__claim_init(gs__claim_t *claim);

/* Claims the state directory of cfg (created with its parents, 0755, when missing). Returns 0,
 * GS_EBUSY with "gpushared already running (pid N, ...)" in err when another process holds it,
 * or -errno with one line in err. */
int gs__claim_state(gs__claim_t *claim, const gs__config_t *cfg, char *err, size_t errlen);

/* Claims gpus[0..n) in GS__CLAIM_GPU_DIR. Returns 0, GS_EBUSY with "gpushared already running
 * (pid N): it holds GPU i (UUID)" in err, or -errno with one line in err; on failure nothing is
 * held of the GPUs. An ordinary user's daemon that cannot create the directory claims no GPU
 * (logged): only root's daemon owns a node's GPUs. */
int gs__claim_gpus(gs__claim_t *claim, const gs__gpu_t *gpus, unsigned n, char *err, size_t errlen);

/* Claims the host's simulated node (gpusim with GPUSIM_STATE unset: the node lives in the
 * runtime directory, so a second daemon with another runtime_dir would simulate a second node
 * of the same host): GS__CLAIM_GPU_DIR/gpusim.pid, holding the pid and the node's path. Returns 0,
 * GS_EBUSY with "gpushared already running (pid N): it simulates this host's GPUs (gpusim node
 * PATH)" in err, or -errno with one line in err. An ordinary user's daemon that cannot create
 * the directory claims nothing (logged), as for the GPUs. */
int gs__claim_sim(gs__claim_t *claim, const char *node, char *err, size_t errlen);

/* Lets go of everything held (at exit): the files are removed, the locks go. */
void gs__claim_release(gs__claim_t *claim);

/* The process holding the claim file at path, 0 when none (or it cannot be read). */
pid_t gs__claim_holder(const char *path);

#endif
