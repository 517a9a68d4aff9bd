/* SPDX-License-Identifier: Apache-2.0 */
/* The lease model: what a GPU can give, what a request takes from it, and the fit rules of its
 * memory and compute pool (the shared, exclusive and mps modes use it; the mode seam, mode_ops.h,
 * decides which requests a GPU serves and how).
 *
 * A GPU's leasable capacity is its memory minus what the driver reserves and the configured
 * reserve, and its compute (1000 thousandths). Memory held outside any lease (measured by the
 * watchdog) is not offered until it is freed. With overprovision = K it is also K logical GPUs,
 * each a slice of (total - reserve) / K memory and 1000 / K compute. Every lease takes memory and
 * compute from the same pool, so the rules compose:
 *   - --gpu-memory SIZE [--compute PCT] takes SIZE and PCT (0 when not given: time-sliced,
 *     unguaranteed compute);
 *   - --gpu F takes F of the leasable memory and F of the compute;
 *   - --gpus N takes N logical slots, each a slice as above; with K = 1 a slot is the whole GPU,
 *     so it fits only on a GPU nobody else holds anything of.
 * On a GPU the sums never exceed the leasable memory, 1000 compute and K slots. An exclusive GPU
 * serves only whole-GPU leases, one at a time. Pure module: no I/O, no globals. */
#ifndef GS_DAEMON_MODEL_H
#define GS_DAEMON_MODEL_H

#include <stdint.h>

#include "config.h"
#include "gpushare/client.h"

#define GS__NAME_MAX 96

/* Live figures of one GPU, as the gpu layer last read them (NVML). */
typedef struct gs__gpu_usage {
    uint64_t used;        /* bytes in use on the device, by anyone */
    uint64_t total;       /* bytes */
    unsigned utilization; /* percent of the last sample period a kernel ran */
} gs__gpu_usage_t;

/* A physical GPU: identity, capacity, settings, and what leases hold of it. */
typedef struct gs__gpu {
    unsigned index; /* NVML index */
    char uuid[GS__UUID_MAX];
    char name[GS__NAME_MAX];
    uint64_t total;           /* device memory in bytes (NVML's total) */
    uint64_t driver_reserved; /* what the driver keeps for itself (NVML's reserved memory) */
    uint64_t reserve;         /* the config's reserve, never leased */
    uint64_t outside;   /* held now beyond what leases account for: processes of no lease, leases
                         * over their limits, memory NVML gives to no process (gpu/watchdog.c) */
    gs_gpu_mode_t mode; /* never GS_GPU_MODE_ANY */
    const struct gs__mode_ops *ops; /* its mode's operations (mode_ops.h): gpu/ sets mode and
                                       ops together (gs__gpu_set_mode) */
    unsigned overprovision;         /* K >= 1 */
    uint64_t mem_leased;
    uint32_t compute_leased; /* thousandths */
    unsigned slots_leased;
    unsigned n_leases;
    void *mode_state; /* the mode's own state (MPS server, MIG instances): gpu/ */
} gs__gpu_t;

/* What a GPU's mode decided for a part at admission, carried to the grant (mode_ops.h). */
typedef struct gs__mode_plan {
    int32_t profile; /* mig: the profile's index in the GPU's catalog, -1 = none */
    int32_t reuse;   /* mig: the idle instance to take, -1 = create one */
    uint32_t start;  /* mig: the first memory slot of the instance to create */
    uint32_t evict;  /* mig: idle instances to destroy first (bits of instance indexes) */
} gs__mode_plan_t;

/* What one lease holds of one GPU. */
typedef struct gs__part {
    unsigned gpu;     /* index into the node's GPU array */
    unsigned slots;   /* logical GPUs (--gpus leases), else 0 */
    uint64_t memory;  /* bytes: the lease's limit on this device */
    uint32_t compute; /* thousandths of the GPU's compute, 0 = not guaranteed */
    gs__mode_plan_t plan;
    char instance[GS__UUID_MAX]; /* the mode's unit the part holds ("MIG-..."), "" = none */
} gs__part_t;

/* Where a lease sits: one part per GPU, in the order CUDA will number them. */
typedef struct gs__alloc {
    unsigned n;
    gs__part_t part[GS_MAX_DEVICES];
} gs__alloc_t;

/* Memory that leases may take on gpu: total - driver_reserved - reserve (0 when they are
 * larger). Fixed while the daemon runs, so slices keep their size. */
uint64_t gs__gpu_leasable(const gs__gpu_t *gpu);

/* Leasable memory that is taken now: promised to leases (mem_leased) or held outside them. */
uint64_t gs__gpu_taken(const gs__gpu_t *gpu);

/* Leasable memory free for a new lease now: leasable - taken, never negative. */
uint64_t gs__gpu_mem_free(const gs__gpu_t *gpu);

/* Memory and compute of one logical slot of gpu. */
uint64_t gs__slot_memory(const gs__gpu_t *gpu);
uint32_t gs__slot_compute(const gs__gpu_t *gpu);

/* Fills *part with what req takes of gpu; slots is the number of logical GPUs (--gpus leases,
 * ignored otherwise). */
void gs__part_for(const gs__gpu_t *gpu, const gs_lease_request_t *req, unsigned slots,
                  gs__part_t *part);

/* Returns nonzero when part (of a request of kind) fits in gpu's memory and compute pool now
 * (the pool's rules only: which requests a GPU serves is its mode's business). */
int gs__gpu_fits(const gs__gpu_t *gpu, gs_lease_kind_t kind, const gs__part_t *part);

/* Returns nonzero when part fits in gpu's pool with nothing leased and nothing held outside the
 * leases (it could ever fit there). */
int gs__gpu_fits_idle(const gs__gpu_t *gpu, gs_lease_kind_t kind, const gs__part_t *part);

/* Adds part to (take) or removes it from (give) gpu's accounting. give never underflows. */
void gs__gpu_take(gs__gpu_t *gpu, const gs__part_t *part);
void gs__gpu_give(gs__gpu_t *gpu, const gs__part_t *part);

/* How many more logical GPUs gpu could give to --gpus leases now (asks its mode). */
unsigned gs__gpu_free_slots(const gs__gpu_t *gpu);

/* The same for the pool alone: the largest s such that s slots fit. */
unsigned gs__pool_free_slots(const gs__gpu_t *gpu);

/* The GPU's model for messages: its NVML name without NVIDIA's prefix ("A100-40GB"). */
const char *gs__gpu_model(const gs__gpu_t *gpu);

/* The compute share to enforce for part, in whole percent (rounded to nearest, at least 1 for a
 * nonzero share); 0 when the part is not limited (no guarantee, or the whole GPU). */
uint32_t gs__part_compute_percent(const gs__part_t *part);

#endif
