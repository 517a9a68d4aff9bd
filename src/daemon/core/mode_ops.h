/* SPDX-License-Identifier: Apache-2.0 */
/* The mode seam as core sees it: what a GPU's mode does (its operations table), and core's calls
 * through it.
 *
 * Core never names a mode. Every GPU carries its mode's operations (gs__gpu_t.ops, set by
 * gpu/mode.c from the table of modes, gpushare/gpu_modes.def), and core calls them through that
 * pointer: admission (pure, for placement and the queue) and a lease's parts (grant, end,
 * restore). The operations are implemented in gpu/ (one file per mode), which also fans the
 * others out over the GPUs for serve/ (start, tick, env, describe, metrics, stop). All run on the
 * event loop, the daemon's only thread that touches GPUs, leases and modes. */
#ifndef GS_DAEMON_MODE_OPS_H
#define GS_DAEMON_MODE_OPS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon.h"

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
    /* Nonzero when what keeps the GPU from serving (admit's GS_EAGAIN) is the administrator's to
     * fix (MIG mode off), not something that passes (a failing driver call): a request then
     * exits 78, not 75 ("retry"). NULL: never. */
    int (*needs_admin)(const gs__gpu_t *gpu);
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
    /* Adjusts the environment of lease part i (the defaults are built by serve/views.c). */
    void (*env)(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i, json_t *env);
    /* Adds the mode's view of the GPU to its status object ("mig", "mps"), as cred may see it. */
    void (*describe)(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view);
    /* Periodic work (health checks), every reaper period. */
    void (*tick)(gs__daemon_t *d, unsigned g, int64_t now_ms);
    /* Writes the mode's metric families for all its GPUs (called once per mode). */
    void (*metrics)(const gs__daemon_t *d, FILE *f);
    /* The device time lease part i used, ns, where the shim's compute scheduler does not count
     * it (no GS__MODE_SHIM_COMPUTE): mps measures it from NVML; NULL: not measured (0). */
    uint64_t (*device_ns)(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i);
    /* At shutdown. */
    void (*stop)(gs__daemon_t *d, unsigned g);
    /* At a stop after a failure, instead of stop: says what stays for the leases' jobs (called
     * once per mode). */
    void (*leave)(const gs__daemon_t *d);
    /* At start, on GPU g of another mode: removes what this mode leaves on a GPU (a GPU that was
     * of this mode before the configuration changed), so that it is as clean as a fresh one:
     * mig destroys the MIG instances no process uses. Logs what it did; never fails the start. */
    void (*clean)(gs__daemon_t *d, unsigned g);
} gs__mode_ops_t;

/* Admission on one GPU: the request's "mode" first, then the GPU's mode (as admit above). */
int gs__gpu_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part);

/* The reason gpu does not serve ask (mode mismatch, or the mode's why_not), "" when none. */
void gs__gpu_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len);

/* Whether what keeps gpu from serving is the administrator's to fix (the mode's needs_admin). */
int gs__gpu_needs_admin(const gs__gpu_t *gpu);

/* Grants every part of lease on its GPU's mode; on failure undoes the parts already granted.
 * Returns 0 or the failing part's code, with one line in err. */
int gs__lease_modes_grant(gs__daemon_t *d, gs__lease_t *lease, char *err, size_t errlen);

/* Ends every part of lease on its GPU's mode (the lease ended, or its grant is undone). */
void gs__lease_modes_end(gs__daemon_t *d, gs__lease_t *lease);

/* Takes back every part of a restored lease; on failure ends the parts already taken. Returns 0
 * or the failing part's code. */
int gs__lease_modes_restore(gs__daemon_t *d, gs__lease_t *lease);

/* Nonzero when the shim enforces lease's compute share (no part's mode does it itself). */
int gs__lease_shim_compute(const gs__daemon_t *d, const gs__lease_t *lease);

/* Every GPU's mode, once the leases are restored (its restored operation). */
void gs__gpus_restored(gs__daemon_t *d);

#endif
