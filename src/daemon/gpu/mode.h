/* SPDX-License-Identifier: Apache-2.0 */
/* A GPU's mode: the one seam between gpushared and how a GPU is shared.
 *
 * Every GPU has a mode (gpushare.conf's mode =), and the daemon never looks at it itself: it
 * calls the mode's operations, the way redis's ae.c calls ae_epoll.c or ae_kqueue.c. The modes
 * are the lines of gpushare/gpu_modes.def; each has one file behind this header that defines
 * gs__mode_<name>_ops (docs/modes.md, "A new mode"):
 *   mode_shared.c  shared: the memory and compute pool of model.h, enforced by the shim;
 *   mode_exclusive.c  exclusive: whole GPUs, one lease at a time;
 *   mode_mps.c     mps: the pool as in shared, served by an MPS control daemon per GPU that
 *                  gpushared runs, restarts and stops (mps_ctl.c runs the control program);
 *   mode_mig.c     mig: dynamic MIG; a lease holds one GPU instance, created when needed and
 *                  destroyed only when its slots are needed by another profile (mig_nvml.c
 *                  calls NVML; the planner is include/gpushare/mig.h).
 * Admission is pure (placement asks every GPU); everything else runs on the event loop, the
 * daemon's only thread that touches GPUs, leases and modes. */
#ifndef GS_DAEMON_MODE_H
#define GS_DAEMON_MODE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "core/daemon.h"

/* Whom a lease is for, when any user would do (judging an idle GPU). */
#define GS__UID_ANY UINT32_MAX

/* A request as admission sees it on one GPU. */
typedef struct gs__ask {
    const gs_lease_request_t *req;
    uint32_t uid;   /* the lease's user, or GS__UID_ANY */
    unsigned slots; /* logical GPUs on this GPU (--gpus leases), else 0 */
    int idle;       /* judge against the GPU with nothing leased: could it ever fit? */
} gs__ask_t;

enum {
    GS__MODE_ONE_GPU = 1,      /* a lease holding this GPU holds no other (mps, mig) */
    GS__MODE_POOL = 2,         /* the memory and compute pool of model.h (placement engine) */
    GS__MODE_SHIM_COMPUTE = 4, /* the shim enforces compute shares (else the mode does) */
};

typedef struct gs__mode_ops {
    const char *name; /* its name in gpushare/gpu_modes.def */
    unsigned flags;
    /* What the shim does about compute shares on the mode's GPUs, as GPUSHARE_GATE tells it:
     * NULL for its launch gate and the GPU's compute scheduler (GS__MODE_SHIM_COMPUTE), "mps"
     * where MPS's active thread percentage is the share, "none" where the hardware partitions
     * the SMs (README, "Compute shares"). */
    const char *gate;
    /* Checks the GPU's settings from the configuration (overprovision, reserve) for this mode.
     * Returns 0, or GS_EINVAL with one line in err (gpushared then refuses to start). */
    int (*check_config)(const gs__gpu_t *gpu, char *err, size_t errlen);
    /* Fills *part with what ask takes of the GPU (pure). Returns 0 when it fits now (with
     * ask->idle: when it fits an idle GPU), GS_ENOFIT when not, GS_ENOTSUP when this mode never
     * serves such a request, GS_EAGAIN when the GPU cannot serve anything now (why: describe). */
    int (*admit)(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part);
    /* How many more logical GPUs the GPU could give to --gpus leases now. */
    unsigned (*free_slots)(const gs__gpu_t *gpu);
    /* The reason admit says GS_EAGAIN or GS_ENOTSUP for ask, one line ("" when none). */
    void (*why_not)(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len);
    /* At start, before the leases are restored: sets up gpu->mode_state. Returns 0 or -errno
     * with one line in err (gpushared then refuses to start). */
    int (*start)(gs__daemon_t *d, unsigned g, char *err, size_t errlen);
    /* A restored lease's part i (alloc.part[i].instance from the ledger): takes it back.
     * Returns 0, or -errno when it cannot be had any more (the lease then ends). */
    int (*restore)(gs__daemon_t *d, gs__lease_t *lease, unsigned i);
    /* After every lease was restored (adopts what no lease holds). */
    void (*restored)(gs__daemon_t *d, unsigned g);
    /* Sets up lease part i on its GPU before the lease is recorded (fills part.instance).
     * Returns 0 or -errno with one line in err, having undone what it did. */
    int (*grant)(gs__daemon_t *d, gs__lease_t *lease, unsigned i, char *err, size_t errlen);
    /* Lease part i ended (or its grant is undone). */
    void (*end)(gs__daemon_t *d, gs__lease_t *lease, unsigned i);
    /* Adjusts the environment of lease part i (the defaults are built by views.c). */
    void (*env)(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i, json_t *env);
    /* Adds the mode's view of the GPU to its status object ("mig", "mps"), as cred may see it. */
    void (*describe)(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view);
    /* Periodic work (health checks), every reaper period. */
    void (*tick)(gs__daemon_t *d, unsigned g, int64_t now_ms);
    /* Writes the mode's metric families for all its GPUs (called once per mode). */
    void (*metrics)(const gs__daemon_t *d, FILE *f);
    /* At shutdown. */
    void (*stop)(gs__daemon_t *d, unsigned g);
    /* At a stop after a failure, instead of stop: says what stays for the leases' jobs (called
     * once per mode). */
    void (*leave)(const gs__daemon_t *d);
} gs__mode_ops_t;

/* The modes' operation tables: one per line of gpushare/gpu_modes.def, gs__mode_<name>_ops
 * defined in mode_<name>.c. */
#define GS_GPU_MODE(id, name, flags, summary) extern const gs__mode_ops_t gs__mode_##name##_ops;
#include "gpushare/gpu_modes.def"
#undef GS_GPU_MODE

/* The operations of a mode (GS_GPU_MODE_ANY and unknown values: the default mode's). Never
 * NULL. */
const gs__mode_ops_t *gs__mode_ops(gs_gpu_mode_t mode);

/* The operations of gpu's mode. Never NULL. */
const gs__mode_ops_t *gs__mode_of(const gs__gpu_t *gpu);

/* Admission on one GPU: the request's "mode" first, then the GPU's mode (as admit above). */
int gs__gpu_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part);

/* The reason gpu does not serve ask (mode mismatch, or the mode's why_not), "" when none. */
void gs__gpu_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len);

/* Fan-outs over the daemon's GPUs or a lease's parts, skipping what a mode does not have. */
int gs__modes_start(gs__daemon_t *d, char *err, size_t errlen);
void gs__modes_restored(gs__daemon_t *d);
void gs__modes_stop(gs__daemon_t *d);
void gs__modes_leave(const gs__daemon_t *d);
void gs__modes_tick(gs__daemon_t *d, int64_t now_ms);
void gs__modes_metrics(const gs__daemon_t *d, FILE *f);
/* Grants every part of lease; on failure undoes the parts already granted. */
int gs__modes_grant(gs__daemon_t *d, gs__lease_t *lease, char *err, size_t errlen);
void gs__modes_end(gs__daemon_t *d, gs__lease_t *lease);
int gs__modes_restore(gs__daemon_t *d, gs__lease_t *lease);
void gs__modes_env(const gs__daemon_t *d, const gs__lease_t *lease, json_t *env);
void gs__modes_describe(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view);
/* Nonzero when the shim enforces lease's compute share (no part's mode does it itself). */
int gs__modes_shim_compute(const gs__daemon_t *d, const gs__lease_t *lease);

#endif
