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

#include "core/core.h"

/* The modes' operation tables: one per line of gpushare/gpu_modes.def, gs__mode_<name>_ops
 * defined in mode_<name>.c. */
#define GS_GPU_MODE(id, name, flags, summary) extern const gs__mode_ops_t gs__mode_##name##_ops;
#include "gpushare/gpu_modes.def"
#undef GS_GPU_MODE

/* The operations of a mode (GS_GPU_MODE_ANY and unknown values: the default mode's). Never
 * NULL. */
const gs__mode_ops_t *gs__mode_ops(gs_gpu_mode_t mode);

/* The operations of gpu's mode (gpu->ops). */
const gs__mode_ops_t *gs__mode_of(const gs__gpu_t *gpu);

/* Sets gpu's mode and its operations (gs__gpu_t.ops): every GPU gets them before core looks
 * at it. */
void gs__gpu_set_mode(gs__gpu_t *gpu, gs_gpu_mode_t mode);

/* Fan-outs over the daemon's GPUs, skipping what a mode does not have. */
int gs__modes_start(gs__daemon_t *d, char *err, size_t errlen);
void gs__modes_stop(gs__daemon_t *d);
void gs__modes_leave(const gs__daemon_t *d);
void gs__modes_tick(gs__daemon_t *d, int64_t now_ms);
void gs__modes_metrics(const gs__daemon_t *d, FILE *f);
void gs__modes_describe(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view);
/* The lease's environment as its GPUs' modes make it: GPUSHARE_GPU_MODE, GPUSHARE_GATE and each
 * part's own (the defaults are built by serve/views.c). */
void gs__modes_env(const gs__daemon_t *d, const gs__lease_t *lease, json_t *env);

#endif
