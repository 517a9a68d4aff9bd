/* SPDX-License-Identifier: Apache-2.0 */
/* gpu/: the GPUs themselves. NVML (inventory.h); the GPUs set up from the inventory and the
 * configuration (below); their modes (mode.h: the table of modes' dispatch, one file per mode,
 * MPS and MIG control); what really runs on them (watchdog.h, proc_view.h); each GPU's compute
 * scheduler, the daemon's side (compute_sched.h); CUDA's checkpoint API (checkpoint.h). It calls
 * core/ through core/core.h and never serve/ (scripts/check-layers.sh): the watchdog returns
 * figures, serve/metrics.c renders them. The interface of gpu/ for serve/ and tests; nvml_procs.h,
 * mps_ctl.h and mig_nvml.h are private. The event loop's, like core, but the checkpoint
 * worker's thread (checkpoint.h), which touches only its jobs. */
#ifndef GS_DAEMON_GPU_H
#define GS_DAEMON_GPU_H

#include <stddef.h>

#include "checkpoint.h"
#include "compute_sched.h"
#include "core/core.h"
#include "inventory.h"
#include "mode.h"
#include "proc_view.h"
#include "watchdog.h"

/* Sets up d's GPUs from the inventory (d->inv) and the configuration: each gets its mode (and
 * the mode's operations) and is checked by it; placement policies that differ between GPUs are
 * refused. Returns 0 or GS_EINVAL with one line in err. The modes start later
 * (gs__modes_start). */
int gs__gpus_setup(gs__daemon_t *d, char *err, size_t errlen);

/* Reads every GPU's memory use and utilization from NVML into d->usage. */
void gs__gpus_refresh_usage(gs__daemon_t *d);

/* Where the configured MPS control program is (a path, "" when not found), for the status. */
void gs__gpus_mps_control(const gs__daemon_t *d, char *buf, size_t len);

#endif
