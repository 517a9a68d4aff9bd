/* SPDX-License-Identifier: Apache-2.0 */
/* What gpushare doctor reads from NVML itself: the CUDA version the driver supports and each
 * GPU's compute mode and MIG mode (works without gpushared, as nvidia-smi does). */
#ifndef GS_CLI_DOCTOR_NVML_H
#define GS_CLI_DOCTOR_NVML_H

#include <stddef.h>

#include "gpushare/quantity.h" /* GS_MAX_DEVICES */

#define GS__DOCTOR_UUID_MAX 96

typedef struct gs__doctor_gpu {
    unsigned index;
    char uuid[GS__DOCTOR_UUID_MAX];
    int compute_mode; /* nvmlComputeMode_t, -1 when NVML could not say */
    int mig_supported;
    unsigned mig_current, mig_pending; /* NVML_DEVICE_MIG_DISABLE/ENABLE */
} gs__doctor_gpu_t;

typedef struct gs__doctor_nvml {
    char library[4096]; /* the library loaded (dladdr), else the name asked for */
    int cuda_version;   /* 1000 * major + 10 * minor, 0 when NVML could not say */
    unsigned count;
    gs__doctor_gpu_t gpus[GS_MAX_DEVICES];
} gs__doctor_nvml_t;

/* Loads NVML from `library` (a path or a name for the dynamic linker), reads the above and
 * unloads it. Returns 0, or a GS_ error code with one line in err (library missing, not NVML,
 * NVML failing). Not thread-safe (NVML's own init/shutdown). */
int gs__doctor_read_nvml(const char *library, gs__doctor_nvml_t *out, char *err, size_t errlen);

#endif
