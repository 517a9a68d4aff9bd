/* SPDX-License-Identifier: Apache-2.0 */
/* MIG through NVML for one GPU: its mode, its profile catalog, its instances; create and destroy.
 *
 * A gpushared MIG instance is one GPU instance with one compute instance spanning all of its
 * compute slices (as `nvidia-smi mig -cgi PROFILE -C` makes), and a CUDA program reaches it by
 * the compute instance's MIG device UUID. Instances made by someone else are taken as they are:
 * a GPU instance without a compute instance gets one when it is first leased; one with several
 * is reached through its first. Every NVML failure comes back as one line naming the call. */
#ifndef GS_DAEMON_MIG_NVML_H
#define GS_DAEMON_MIG_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gpushare/mig.h"
#include "gpushare/nvml_abi.h"
#include "inventory.h"

/* The MIG entry points of the loaded NVML, checked against the ABI header's prototypes. */
#define GS__MIG_NVML_FUNCTIONS(X)                                                                  \
    X(nvmlErrorString)                                                                             \
    X(nvmlDeviceGetMigMode)                                                                        \
    X(nvmlDeviceGetGpuInstanceProfileInfoV)                                                        \
    X(nvmlDeviceGetGpuInstancePossiblePlacements_v2)                                               \
    X(nvmlDeviceCreateGpuInstanceWithPlacement)                                                    \
    X(nvmlGpuInstanceDestroy)                                                                      \
    X(nvmlDeviceGetGpuInstances)                                                                   \
    X(nvmlDeviceGetGpuInstanceById)                                                                \
    X(nvmlGpuInstanceGetInfo)                                                                      \
    X(nvmlGpuInstanceGetComputeInstanceProfileInfo)                                                \
    X(nvmlGpuInstanceCreateComputeInstance)                                                        \
    X(nvmlComputeInstanceDestroy)                                                                  \
    X(nvmlGpuInstanceGetComputeInstances)                                                          \
    X(nvmlComputeInstanceGetInfo_v2)                                                               \
    X(nvmlDeviceGetMaxMigDeviceCount)                                                              \
    X(nvmlDeviceGetMigDeviceHandleByIndex)                                                         \
    X(nvmlDeviceGetGpuInstanceId)                                                                  \
    X(nvmlDeviceGetComputeInstanceId)                                                              \
    X(nvmlDeviceGetUUID)

/* NVML's MIG functions for one GPU. */
typedef struct gs__mig_nvml {
#define X(name) __typeof__(&name) name;
    GS__MIG_NVML_FUNCTIONS(X)
#undef X
    nvmlDevice_t dev;
    unsigned index; /* the GPU's NVML index, for messages */
} gs__mig_nvml_t;

/* A GPU instance as NVML lists it. */
typedef struct gs__mig_found {
    uint32_t gi;             /* GPU instance id */
    uint32_t ci;             /* its first compute instance's id (when has_ci) */
    int has_ci;              /* it has a compute instance */
    int profile;             /* index into the catalog */
    uint32_t start;          /* first memory slot */
    char uuid[GS__UUID_MAX]; /* the MIG device's UUID ("MIG-..."), "" without a CI */
} gs__mig_found_t;

/* Resolves the functions for GPU i of the inventory. Returns 0, or GS_ENOSYS with one line in
 * err (an NVML without MIG). */
int gs__mig_nvml_open(const gs__inventory_t *inv, unsigned i, gs__mig_nvml_t *nv, char *err,
                      size_t errlen);

/* Whether MIG mode is on now. Returns 0 and *enabled, or GS_EIO / GS_ENOSYS (no MIG on this
 * GPU) with one line in err. */
int gs__mig_nvml_enabled(const gs__mig_nvml_t *nv, int *enabled, char *err, size_t errlen);

/* Reads the GPU's profiles and placements (MIG must be on). model names the catalog. */
int gs__mig_nvml_catalog(const gs__mig_nvml_t *nv, const char *model, gs_mig_catalog_t *cat,
                         char *err, size_t errlen);

/* Lists the GPU's instances (at most max). Returns the count, or GS_EIO with one line in err. */
int gs__mig_nvml_list(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, gs__mig_found_t *found,
                      unsigned max, char *err, size_t errlen);

/* Creates an instance of profile p at start, with a full compute instance. Returns 0 and *out,
 * or GS_EIO with one line in err (nothing is left behind). */
int gs__mig_nvml_create(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, int p,
                        uint32_t start, gs__mig_found_t *out, char *err, size_t errlen);

/* Gives GPU instance gi a full compute instance when it has none (fills f's ci and uuid).
 * Returns 0 or GS_EIO with one line in err. */
int gs__mig_nvml_complete(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, gs__mig_found_t *f,
                          char *err, size_t errlen);

/* Destroys GPU instance gi and its compute instances. Returns 0 or GS_EIO with one line. */
int gs__mig_nvml_destroy(const gs__mig_nvml_t *nv, uint32_t gi, char *err, size_t errlen);

#endif
