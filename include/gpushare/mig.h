/* SPDX-License-Identifier: Apache-2.0 */
/* MIG layouts: a GPU model's instance profiles and the planner that sizes and places instances.
 *
 * A MIG-capable GPU has `compute_slices` compute slices (7 on an A100 or H100) and
 * `memory_slots` memory slots (8). A GPU instance of a profile occupies `size` consecutive memory
 * slots from one of the profile's valid starts, and `compute` compute slices; at most
 * `max_instances` instances of a profile exist at once. The planner works on a layout (the
 * instances a GPU holds, each idle or held by a lease) and answers two questions:
 *   - which profile does a request get: the smallest that holds its memory and compute (by
 *     memory, then compute slices; media-extension "+me" profiles only when asked by name);
 *   - where does one more instance of a profile go: an idle instance of that profile is reused
 *     as it is; else a free placement is taken, the one that keeps the largest profiles possible
 *     afterwards; else idle instances of other profiles are destroyed, as few as possible, to
 *     make room. Instances held by leases are never touched.
 * The same planner serves gpushared's dynamic MIG (profiles read from NVML) and `gpushare mig
 * plan` (the built-in table, data/gpus/mig-profiles.csv). Pure: no I/O, thread-safe. */
#ifndef GPUSHARE_MIG_H
#define GPUSHARE_MIG_H

#include <stddef.h>
#include <stdint.h>

#define GS_MIG_PROFILES_MAX  16 /* profiles of one GPU model */
#define GS_MIG_INSTANCES_MAX 16 /* GPU instances on one GPU (7 on today's GPUs) */
#define GS_MIG_SLOTS_MAX     16 /* memory slots of one GPU (8 on today's GPUs) */
#define GS_MIG_NAME_MAX      32 /* "3g.20gb", "1g.10gb+me", NUL included */

/* One GPU-instance profile. */
typedef struct gs_mig_profile {
    char name[GS_MIG_NAME_MAX]; /* as nvidia-smi prints it, without "MIG " */
    uint32_t id;                /* NVML profile id (nvidia-smi mig -lgip) */
    uint32_t compute;           /* compute slices */
    uint32_t size;              /* memory slots an instance occupies */
    uint32_t max_instances;
    uint32_t starts;       /* bit s set: s is a valid first memory slot */
    uint64_t memory_bytes; /* the instance's memory */
    int media;             /* a media-extension (+me) profile: only when asked by name */
} gs_mig_profile_t;

/* The profiles of one GPU. */
typedef struct gs_mig_catalog {
    char model[32];
    uint32_t compute_slices;
    uint32_t memory_slots;
    unsigned n_profiles;
    gs_mig_profile_t profiles[GS_MIG_PROFILES_MAX];
} gs_mig_catalog_t;

/* A GPU instance in a layout. */
typedef struct gs_mig_instance {
    int profile;    /* index into the catalog's profiles */
    uint32_t start; /* first memory slot */
    int busy;       /* held by a lease: never reused or destroyed by the planner */
} gs_mig_instance_t;

/* The GPU instances of one GPU. */
typedef struct gs_mig_layout {
    unsigned n;
    gs_mig_instance_t inst[GS_MIG_INSTANCES_MAX];
} gs_mig_layout_t;

/* Where one more instance goes. */
typedef struct gs_mig_plan {
    int reuse;      /* >= 0: the idle instance (layout index) of the profile to take as it is */
    uint32_t start; /* otherwise: the first memory slot of the instance to create */
    uint32_t evict; /* ... after destroying these idle instances (bit i = layout index i) */
} gs_mig_plan_t;

/* Fills *out with the built-in profile table of model ("A100-40GB", exact). Returns 0,
 * GS_ENOENT (unknown model) or GS_ENOSYS (the model has no MIG). */
int gs_mig_catalog_builtin(const char *model, gs_mig_catalog_t *out);

/* Writes the names of the built-in models with MIG, separated by ", ", into buf. */
void gs_mig_builtin_models(char *buf, size_t len);

/* Index of the profile called name (case-insensitive, an optional "MIG " prefix), or -1. */
int gs_mig_profile_find(const gs_mig_catalog_t *cat, const char *name);

/* Index of the smallest non-media profile with at least memory bytes and at least
 * compute_pct percent of the GPU's compute slices (0: any), or -1 when none is large enough. */
int gs_mig_profile_for(const gs_mig_catalog_t *cat, uint64_t memory, uint32_t compute_pct);

/* Percent of the GPU's compute that profile p has (compute slices / compute_slices, rounded). */
uint32_t gs_mig_compute_percent(const gs_mig_catalog_t *cat, int p);

/* Nonzero when an instance of profile p could be created at start on layout now (slots free,
 * compute slices and the profile's instance limit left; start valid for p). */
int gs_mig_fits_at(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                   uint32_t start);

/* Plans one more instance of profile p on layout (see the top of this file). Returns 0 and
 * *out, or GS_ENOFIT when even destroying every idle instance leaves no room, or GS_EINVAL for a
 * bad profile index or layout. */
int gs_mig_plan(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                gs_mig_plan_t *out);

/* Plans one more instance of profile p at memory slot start exactly (a placement chosen
 * elsewhere: the Kubernetes scheduler's): an idle instance of p there is taken as it is, else
 * idle instances in its way (and, for compute slices, others, smallest first) are destroyed.
 * Returns 0 and *out, GS_ENOFIT (an instance held by a lease is in the way, or no room even
 * then), or GS_EINVAL (a bad profile index or layout, a start not valid for the profile). */
int gs_mig_plan_at(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                   uint32_t start, gs_mig_plan_t *out);

/* Applies a plan to layout: removes the evicted instances (later ones move down; layout indexes
 * change) and adds or reuses the instance, busy. Returns its new layout index, or GS_ENOSPC. */
int gs_mig_apply(gs_mig_layout_t *layout, int p, const gs_mig_plan_t *plan);

/* How many more instances of profile p could be created on layout, placing each at its lowest
 * free start (idle instances stay). */
unsigned gs_mig_room(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p);

/* Draws the layout's memory slots, e.g. "[3g.20gb:0-3][1g.5gb:4][ . ][1g.5gb:6][ . ]", idle
 * instances marked with '*'. */
void gs_mig_draw(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, char *buf, size_t len);

#endif
