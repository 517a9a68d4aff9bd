/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: compute instances and MIG device handles. */
#include "nvml_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Compute slices of a compute instance profile constant (0 = no such profile here). */
static uint32_t ci_profile_size(unsigned profile)
{
    /* NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7,8,6}_SLICE; 1_SLICE_REV1 has no simulated GI. */
    static const uint32_t size[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7, 8, 6, 0};
    return profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? size[profile] : 0;
}

/* Resolves a CI profile (constant = id) for the GI target into its size. */
static nvmlReturn_t ci_size_for(const nvml_target_t *t, unsigned profile, uint32_t *size)
{
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    *size = ci_profile_size(profile);
    return gsim_ci_size_allowed(t->g->compute, *size) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t from_errno(int err)
{
    switch (err) {
    case 0:
        return NVML_SUCCESS;
    case -EINVAL:
        return NVML_ERROR_INVALID_ARGUMENT;
    case -ENOSPC:
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    case -EBUSY:
        return NVML_ERROR_IN_USE;
    default:
        return NVML_ERROR_UNKNOWN;
    }
}

typedef struct ci_desc {
    unsigned id, slices, instances, sms, copy_engines, decoders;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} ci_desc_t;

static void describe_ci(const nvml_target_t *t, unsigned profile, uint32_t size, ci_desc_t *out)
{
    const gsim_mig_profile_t *p = &t->model->profiles[t->g->profile_index];
    memset(out, 0, sizeof(*out));
    out->id = profile;
    out->slices = size;
    out->instances = t->g->compute / size;
    out->sms = size * gsim_mig_slice_sms(t->model);
    out->copy_engines = t->g->compute; /* engines other than SMs are shared within the GI */
    out->decoders = p->memory * 5 / 8;
    if (size == t->g->compute)
        snprintf(out->name, sizeof(out->name), "MIG %s", p->name);
    else
        snprintf(out->name, sizeof(out->name), "MIG %uc.%s", size, p->name);
}

/* Common part of both profile info calls: resolves the GI and the CI profile. */
static nvmlReturn_t begin_ci_profile(nvmlGpuInstance_t gpuInstance, unsigned profile,
                                     unsigned engProfile, const void *info, nvml_target_t *t,
                                     ci_desc_t *desc)
{
    uint32_t size = 0;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, t);
    if (result == NVML_SUCCESS &&
        (info == NULL || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = ci_size_for(t, profile, &size);
    if (result == NVML_SUCCESS)
        describe_ci(t, profile, size, desc);
    return result;
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    ci_desc_t d;
    nvmlReturn_t result = begin_ci_profile(gpuInstance, profile, engProfile, info, &t, &d);
    if (result == NVML_SUCCESS)
        *info = (nvmlComputeInstanceProfileInfo_t){.id = d.id,
                                                   .sliceCount = d.slices,
                                                   .instanceCount = d.instances,
                                                   .multiprocessorCount = d.sms,
                                                   .sharedCopyEngineCount = d.copy_engines,
                                                   .sharedDecoderCount = d.decoders};
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    ci_desc_t d;
    if (gsim_nvml_node() != NULL && info != NULL &&
        info->version != nvmlComputeInstanceProfileInfo_v2 &&
        info->version != nvmlComputeInstanceProfileInfo_v3)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t result = begin_ci_profile(gpuInstance, profile, engProfile, info, &t, &d);
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    unsigned version = info->version;
    /* v2 and v3 share their layout up to name; v3 appends capabilities (none here). */
    nvmlComputeInstanceProfileInfo_v2_t v2 = {.version = version,
                                              .id = d.id,
                                              .sliceCount = d.slices,
                                              .instanceCount = d.instances,
                                              .multiprocessorCount = d.sms,
                                              .sharedCopyEngineCount = d.copy_engines,
                                              .sharedDecoderCount = d.decoders};
    memcpy(v2.name, d.name, sizeof(v2.name));
    *info = v2;
    if (version == nvmlComputeInstanceProfileInfo_v3)
        ((nvmlComputeInstanceProfileInfo_v3_t *)(void *)info)->capabilities = 0;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    uint32_t size = 0;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    if (result == NVML_SUCCESS && count == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = ci_size_for(&t, profileId, &size);
    if (result == NVML_SUCCESS)
        *count = gsim_ci_remaining_locked(t.node, t.dev, t.gi, size);
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    uint32_t size = 0;
    int ci = -1;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    if (result == NVML_SUCCESS && computeInstance == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = ci_size_for(&t, profileId, &size);
    int dev = t.dev, gi = t.gi;
    gsim_node_t *node = t.node;
    result = gsim_nvml_end(&t, result);
    if (result == NVML_SUCCESS)
        result = from_errno(gsim_ci_create(node, dev, gi, size, &ci));
    if (result == NVML_SUCCESS)
        *computeInstance = gsim_nvml_ci_handle(dev, gi, ci);
    return result;
}

GS_NVML_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_ci(computeInstance, &t);
    int dev = t.dev, gi = t.gi, ci = t.ci;
    gsim_node_t *node = t.node;
    result = gsim_nvml_end(&t, result);
    if (result == NVML_SUCCESS)
        result = from_errno(gsim_ci_destroy(node, dev, gi, ci));
    return result;
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                            unsigned int profileId,
                                                            nvmlComputeInstance_t *computeInstances,
                                                            unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    uint32_t size = 0;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    if (result == NVML_SUCCESS && (computeInstances == NULL || count == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = ci_size_for(&t, profileId, &size);
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    unsigned k = 0;
    for (int c = 0; c < GSIM_MAX_CI; c++) {
        if (t.g->ci[c].in_use && t.g->ci[c].size == size)
            computeInstances[k++] = gsim_nvml_ci_handle(t.dev, t.gi, c);
    }
    *count = k;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    if (result == NVML_SUCCESS && computeInstance == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    result = NVML_ERROR_NOT_FOUND;
    for (int c = 0; c < GSIM_MAX_CI; c++) {
        if (t.g->ci[c].in_use && t.g->ci[c].id == id) {
            *computeInstance = gsim_nvml_ci_handle(t.dev, t.gi, c);
            result = NVML_SUCCESS;
        }
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                       nvmlComputeInstanceInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_ci(computeInstance, &t);
    if (result == NVML_SUCCESS && info == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        const gsim_ci_t *ci = &t.g->ci[t.ci];
        memset(info, 0, sizeof(*info));
        info->device = gsim_nvml_device_handle(t.dev);
        info->gpuInstance = gsim_nvml_gi_handle(t.dev, t.gi);
        info->id = ci->id;
        info->profileId = ci->profile_id;
        info->placement = (nvmlComputeInstancePlacement_t){.start = ci->start, .size = ci->size};
    }
    return gsim_nvml_end(&t, result);
}

/* ---- MIG device handles ---- */

GS_NVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && isMigDevice == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *isMigDevice = t.g != NULL;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && id == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && t.g == NULL)
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result == NVML_SUCCESS)
        *id = t.g->id;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && id == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && t.g == NULL)
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result == NVML_SUCCESS)
        *id = t.g->ci[t.ci].id;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (count == NULL || t.g != NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    /* One MIG device per compute slice at most; zero when MIG is unsupported or disabled. */
    if (result == NVML_SUCCESS)
        *count = t.d->mig_mode ? t.model->mig_compute_slices : 0;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t *migDevice)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int gi, ci;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (migDevice == NULL || t.g != NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && !t.d->mig_mode)
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result == NVML_SUCCESS && index >= t.model->mig_compute_slices)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS &&
        gsim_mig_device_at_locked(t.node, t.dev, (int)index, &gi, &ci) != 0)
        result = NVML_ERROR_NOT_FOUND;
    if (result == NVML_SUCCESS)
        *migDevice = gsim_nvml_mig_handle(t.dev, gi, ci);
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                      nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(migDevice, &t);
    if (result == NVML_SUCCESS && (device == NULL || t.g == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *device = gsim_nvml_device_handle(t.dev);
    return gsim_nvml_end(&t, result);
}
