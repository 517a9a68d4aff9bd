/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare doctor's NVML reader: loaded by the one loader (gpushare/nvml_load.h) as the daemon's
 * inventory is, read once, unloaded. */
#include "doctor_nvml.h"

#include "gpushare/error.h"
#include "gpushare/nvml_load.h"

#include <stdio.h>
#include <string.h>

static void read_gpu(const gs_nvml_t *n, unsigned i, gs__doctor_gpu_t *gpu)
{
    nvmlDevice_t dev;
    gpu->index = i;
    gpu->compute_mode = -1;
    if (n->nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
        return;
    if (n->nvmlDeviceGetUUID(dev, gpu->uuid, sizeof(gpu->uuid)) != NVML_SUCCESS)
        gpu->uuid[0] = '\0';
    nvmlComputeMode_t mode;
    if (n->nvmlDeviceGetComputeMode != NULL &&
        n->nvmlDeviceGetComputeMode(dev, &mode) == NVML_SUCCESS)
        gpu->compute_mode = (int)mode;
    gpu->mig_supported =
        n->nvmlDeviceGetMigMode != NULL &&
        n->nvmlDeviceGetMigMode(dev, &gpu->mig_current, &gpu->mig_pending) == NVML_SUCCESS;
}

static int read_all(const gs_nvml_t *n, gs__doctor_nvml_t *out, char *err, size_t errlen)
{
    unsigned count = 0;
    nvmlReturn_t rc = n->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        return gs_nvml_fail(n, rc, "nvmlDeviceGetCount", err, errlen);
    if (n->nvmlSystemGetCudaDriverVersion_v2 == NULL ||
        n->nvmlSystemGetCudaDriverVersion_v2(&out->cuda_version) != NVML_SUCCESS)
        out->cuda_version = 0;
    out->count = count < GS_MAX_DEVICES ? count : GS_MAX_DEVICES;
    for (unsigned i = 0; i < out->count; i++)
        read_gpu(n, i, &out->gpus[i]);
    return 0;
}

int gs__doctor_read_nvml(const char *library, gs__doctor_nvml_t *out, char *err, size_t errlen)
{
    gs_nvml_t n;
    memset(out, 0, sizeof(*out));
    int result = gs_nvml_open(&n, library, err, errlen);
    snprintf(out->library, sizeof(out->library), "%s", n.library);
    if (result != 0)
        return result;
    result = read_all(&n, out, err, errlen);
    gs_nvml_close(&n);
    return result;
}
