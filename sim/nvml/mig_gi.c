/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: MIG mode, GPU instance profiles, placements and GPU instances.
 *
 * Profiles come from the model's table (data/gpus/mig-profiles.csv). A profile's NVML profile
 * constant (NVML_GPU_INSTANCE_PROFILE_*) follows from its shape: "+me" variants are the _REV1
 * profiles, a 1-slice profile with 2 memory slices is 1_SLICE_REV2, the others are named by
 * their compute slices; its profile id is the CSV's id (as nvidia-smi mig -lgip prints it). */
#include "nvml_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Returns the NVML_GPU_INSTANCE_PROFILE_* constant of a model profile, or -1. */
static int profile_constant(const gsim_mig_profile_t *p)
{
    if (strstr(p->name, "+me") != NULL)
        return p->compute == 1   ? NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1
               : p->compute == 2 ? NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1
                                 : -1;
    if (p->compute == 1 && p->memory == 2)
        return NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
    switch (p->compute) {
    case 1:
        return NVML_GPU_INSTANCE_PROFILE_1_SLICE;
    case 2:
        return NVML_GPU_INSTANCE_PROFILE_2_SLICE;
    case 3:
        return NVML_GPU_INSTANCE_PROFILE_3_SLICE;
    case 4:
        return NVML_GPU_INSTANCE_PROFILE_4_SLICE;
    case 6:
        return NVML_GPU_INSTANCE_PROFILE_6_SLICE;
    case 7:
        return NVML_GPU_INSTANCE_PROFILE_7_SLICE;
    case 8:
        return NVML_GPU_INSTANCE_PROFILE_8_SLICE;
    default:
        return -1;
    }
}

/* Finds the model profile with NVML profile constant (by_id 0) or profile id (by_id 1). */
static int find_profile(const gsim_model_t *m, unsigned value, int by_id)
{
    for (uint32_t i = 0; i < m->n_profiles; i++) {
        unsigned v = by_id ? m->profiles[i].id : (unsigned)profile_constant(&m->profiles[i]);
        if (v == value)
            return (int)i;
    }
    return -1;
}

/* Checks that the target is a whole GPU with MIG (and, with need_enabled, MIG enabled). */
static nvmlReturn_t check_mig_gpu(const nvml_target_t *t, int need_enabled)
{
    if (t->g != NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (t->model->mig_compute_slices == 0 || (need_enabled && !t->d->mig_mode))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* Resolves a profile id to a model profile index, for a MIG-enabled GPU target. */
static nvmlReturn_t profile_by_id(const nvml_target_t *t, unsigned profileId, int need_enabled,
                                  int *pi)
{
    nvmlReturn_t result = check_mig_gpu(t, need_enabled);
    if (result != NVML_SUCCESS)
        return result;
    *pi = find_profile(t->model, profileId, 1);
    return *pi < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

static nvmlReturn_t from_errno(int err)
{
    switch (err) {
    case 0:
        return NVML_SUCCESS;
    case -EINVAL:
        return NVML_ERROR_INVALID_ARGUMENT;
    case -ENOTSUP:
        return NVML_ERROR_NOT_SUPPORTED;
    case -ENOSPC:
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    case -EBUSY:
        return NVML_ERROR_IN_USE;
    case -ENOENT:
        return NVML_ERROR_NOT_FOUND;
    default:
        return NVML_ERROR_UNKNOWN;
    }
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (currentMode == NULL || pendingMode == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = check_mig_gpu(&t, 0);
    if (result == NVML_SUCCESS) {
        /* Mode changes take effect at once: the simulated GPU needs no reset. */
        *currentMode = t.d->mig_mode ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
        *pendingMode = *currentMode;
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                              nvmlReturn_t *activationStatus)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (activationStatus == NULL || mode > NVML_DEVICE_MIG_ENABLE))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = check_mig_gpu(&t, 0);
    int dev = t.dev;
    gsim_node_t *node = t.node;
    result = gsim_nvml_end(&t, result);
    if (result != NVML_SUCCESS)
        return result;
    /* The GPU "resets" only when idle: a process on it makes the mode change fail. */
    result = from_errno(gsim_mig_set_mode(node, dev, mode == NVML_DEVICE_MIG_ENABLE));
    *activationStatus = result;
    return result;
}

/* A profile's description, from which every nvmlGpuInstanceProfileInfo version is filled. */
typedef struct profile_desc {
    unsigned id, slices, instances, sms, copy_engines, decoders, jpegs, ofas;
    unsigned long long memory_mib;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} profile_desc_t;

static void describe_profile(const gsim_model_t *m, int pi, profile_desc_t *out)
{
    const gsim_mig_profile_t *p = &m->profiles[pi];
    int media = strstr(p->name, "+me") != NULL || p->compute == m->mig_compute_slices;
    memset(out, 0, sizeof(*out));
    out->id = p->id;
    out->slices = p->compute;
    out->instances = p->max_instances;
    out->sms = p->compute * gsim_mig_slice_sms(m);
    out->copy_engines = p->compute;
    /* NVDECs follow the memory slices (A100: 0, 1, 2, 2, 5); "+me" adds the media engines. */
    out->decoders = media && p->compute == 1 ? 1 : p->memory * 5 / 8;
    out->jpegs = media ? 1 : 0;
    out->ofas = media ? 1 : 0;
    out->memory_mib = gsim_mig_profile_bytes(m, p) >> 20;
    snprintf(out->name, sizeof(out->name), "MIG %s", p->name);
}

/* Resolves profile (an NVML_GPU_INSTANCE_PROFILE_* constant) for a MIG-enabled GPU. */
static nvmlReturn_t profile_by_constant(const nvml_target_t *t, unsigned profile, int *pi)
{
    nvmlReturn_t result = check_mig_gpu(t, 1);
    if (result == NVML_SUCCESS && profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && (*pi = find_profile(t->model, profile, 0)) < 0)
        result = NVML_ERROR_NOT_SUPPORTED;
    return result;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int pi = -1;
    profile_desc_t desc;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && info == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_constant(&t, profile, &pi);
    if (result == NVML_SUCCESS) {
        describe_profile(t.model, pi, &desc);
        *info = (nvmlGpuInstanceProfileInfo_t){.id = desc.id,
                                               .sliceCount = desc.slices,
                                               .instanceCount = desc.instances,
                                               .multiprocessorCount = desc.sms,
                                               .copyEngineCount = desc.copy_engines,
                                               .decoderCount = desc.decoders,
                                               .jpegCount = desc.jpegs,
                                               .ofaCount = desc.ofas,
                                               .memorySizeMB = desc.memory_mib};
    }
    return gsim_nvml_end(&t, result);
}

static void fill_profile_v2(const profile_desc_t *desc, nvmlGpuInstanceProfileInfo_v2_t *info)
{
    *info = (nvmlGpuInstanceProfileInfo_v2_t){.version = nvmlGpuInstanceProfileInfo_v2,
                                              .id = desc->id,
                                              .sliceCount = desc->slices,
                                              .instanceCount = desc->instances,
                                              .multiprocessorCount = desc->sms,
                                              .copyEngineCount = desc->copy_engines,
                                              .decoderCount = desc->decoders,
                                              .jpegCount = desc->jpegs,
                                              .ofaCount = desc->ofas,
                                              .memorySizeMB = desc->memory_mib};
    memcpy(info->name, desc->name, sizeof(info->name));
}

static void fill_profile_v3(const profile_desc_t *desc, nvmlGpuInstanceProfileInfo_v3_t *info)
{
    *info = (nvmlGpuInstanceProfileInfo_v3_t){.version = nvmlGpuInstanceProfileInfo_v3,
                                              .id = desc->id,
                                              .sliceCount = desc->slices,
                                              .instanceCount = desc->instances,
                                              .multiprocessorCount = desc->sms,
                                              .copyEngineCount = desc->copy_engines,
                                              .decoderCount = desc->decoders,
                                              .jpegCount = desc->jpegs,
                                              .ofaCount = desc->ofas,
                                              .memorySizeMB = desc->memory_mib};
    memcpy(info->name, desc->name, sizeof(info->name));
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device,
                                                              unsigned int profile,
                                                              nvmlGpuInstanceProfileInfo_v2_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int pi = -1;
    profile_desc_t desc;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS &&
        (info == NULL || (info->version != nvmlGpuInstanceProfileInfo_v2 &&
                          info->version != nvmlGpuInstanceProfileInfo_v3)))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_constant(&t, profile, &pi);
    if (result == NVML_SUCCESS) {
        describe_profile(t.model, pi, &desc);
        if (info->version == nvmlGpuInstanceProfileInfo_v3)
            fill_profile_v3(&desc, (nvmlGpuInstanceProfileInfo_v3_t *)(void *)info);
        else
            fill_profile_v2(&desc, info);
    }
    return gsim_nvml_end(&t, result);
}

/* Placements are the profile's table: every valid start, whatever is already created (NVIDIA:
 * "only returns all the possible placements for the given profile"). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,
    unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int pi = -1;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && count == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_id(&t, profileId, 0, &pi);
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    const gsim_mig_profile_t *p = &t.model->profiles[pi];
    unsigned n = 0;
    for (uint32_t s = 0; s < 32; s++) {
        if ((p->starts_mask & (1u << s)) == 0 || s + p->size > t.model->mig_memory_slices)
            continue;
        if (placements != NULL)
            placements[n] = (nvmlGpuInstancePlacement_t){.start = s, .size = p->size};
        n++;
    }
    *count = n;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                   unsigned int profileId,
                                                                   unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int pi = -1;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && count == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_id(&t, profileId, 1, &pi);
    if (result == NVML_SUCCESS)
        *count = gsim_gi_remaining_locked(t.node, t.dev, (uint32_t)pi);
    return gsim_nvml_end(&t, result);
}

/* Creates a GPU instance of profileId at start (< 0: gpusim's choice, see gsim_gi_create). */
static nvmlReturn_t create_gi(nvmlDevice_t device, unsigned profileId, int start,
                              unsigned want_size, nvmlGpuInstance_t *gpuInstance)
{
    nvml_target_t t;
    int pi = -1, slot = -1;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && gpuInstance == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_id(&t, profileId, 1, &pi);
    if (result == NVML_SUCCESS && start >= 0 && want_size != t.model->profiles[pi].size)
        result = NVML_ERROR_INVALID_ARGUMENT;
    int dev = t.dev;
    gsim_node_t *node = t.node;
    result = gsim_nvml_end(&t, result);
    if (result == NVML_SUCCESS)
        result = from_errno(gsim_gi_create(node, dev, (uint32_t)pi, start, &slot));
    if (result == NVML_SUCCESS)
        *gpuInstance = gsim_nvml_gi_handle(dev, slot);
    return result;
}

GS_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                     nvmlGpuInstance_t *gpuInstance)
{
    GSIM_NVML_FAULT_POINT();
    return create_gi(device, profileId, -1, 0, gpuInstance);
}

GS_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
    nvmlGpuInstance_t *gpuInstance)
{
    GSIM_NVML_FAULT_POINT();
    if (gsim_nvml_node() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (placement == NULL || placement->start >= 32)
        return NVML_ERROR_INVALID_ARGUMENT;
    return create_gi(device, profileId, (int)placement->start, placement->size, gpuInstance);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    int dev = t.dev, gi = t.gi;
    gsim_node_t *node = t.node;
    result = gsim_nvml_end(&t, result);
    if (result == NVML_SUCCESS)
        result = from_errno(gsim_gi_destroy(node, dev, gi));
    return result;
}

/* GI slots of the device in GI id order. */
static int sorted_gis(const gsim_device_t *d, int *slots)
{
    int n = 0;
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (!d->gi[g].in_use)
            continue;
        int k = n++;
        while (k > 0 && d->gi[slots[k - 1]].id > d->gi[g].id) {
            slots[k] = slots[k - 1];
            k--;
        }
        slots[k] = g;
    }
    return n;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                   nvmlGpuInstance_t *gpuInstances,
                                                   unsigned int *count)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    int pi = -1, slots[GSIM_MAX_GI];
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (gpuInstances == NULL || count == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = profile_by_id(&t, profileId, 1, &pi);
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    int n = sorted_gis(t.d, slots);
    unsigned k = 0;
    for (int i = 0; i < n; i++) {
        if (t.d->gi[slots[i]].profile_index == (uint32_t)pi)
            gpuInstances[k++] = gsim_nvml_gi_handle(t.dev, slots[i]);
    }
    *count = k;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t *gpuInstance)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && gpuInstance == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = check_mig_gpu(&t, 1);
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    result = NVML_ERROR_NOT_FOUND;
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (t.d->gi[g].in_use && t.d->gi[g].id == id) {
            *gpuInstance = gsim_nvml_gi_handle(t.dev, g);
            result = NVML_SUCCESS;
        }
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                nvmlGpuInstanceInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_gi(gpuInstance, &t);
    if (result == NVML_SUCCESS && info == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        memset(info, 0, sizeof(*info));
        info->device = gsim_nvml_device_handle(t.dev);
        info->id = t.g->id;
        info->profileId = t.model->profiles[t.g->profile_index].id;
        info->placement = (nvmlGpuInstancePlacement_t){.start = t.g->start, .size = t.g->size};
    }
    return gsim_nvml_end(&t, result);
}
