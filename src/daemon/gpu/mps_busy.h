/* SPDX-License-Identifier: Apache-2.0 */
/* The device time of the leases on an mps GPU, where the shim's compute scheduler does not count
 * it (MPS partitions the SMs): NVML's per-process utilization, sampled once a second, each
 * process's busy part of the second given to its lease (the watchdog's attribution) at the
 * lease's share of the SMs (its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; all of them without one).
 * What gpushare_lease_compute_seconds_total and status's compute_used_ms show for such a lease.
 * Private to gpu/ (mode_mps.c); the event loop's. */
#ifndef GS_DAEMON_MPS_BUSY_H
#define GS_DAEMON_MPS_BUSY_H

#include <stdint.h>

#include "core/core.h"
#include "gpushare/nvml_abi.h"

#define GS__MPS_BUSY_LEASES 64

typedef struct gs__mps_busy {
    __typeof__(&nvmlDeviceGetProcessUtilization) get; /* NULL: the driver cannot say */
    nvmlDevice_t dev;
    unsigned long long last_seen; /* NVML's stamp of the newest sample read */
    int64_t next_ms;              /* when to sample next */
    unsigned n;
    struct {
        uint64_t lease;
        uint64_t ns;
    } leases[GS__MPS_BUSY_LEASES];
} gs__mps_busy_t;

/* Sets b up for GPU g (d->gpus[g]): NVML's function when the library has it. */
void gs__mps_busy_init(gs__mps_busy_t *b, const gs__daemon_t *d, unsigned g);

/* Samples once a second (the mode's tick): adds each lease's busy time since the last sample. */
void gs__mps_busy_tick(gs__mps_busy_t *b, gs__daemon_t *d, int64_t now_ms);

/* The device time counted for lease, ns (0 when none). */
uint64_t gs__mps_busy_ns(const gs__mps_busy_t *b, uint64_t lease);

#endif
