/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: device enumeration, identity, memory and compute mode. */
#include "nvml_internal.h"

#include <stdio.h>
#include <string.h>

GS_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && deviceCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *deviceCount = t.node->n_devices; /* every GPU: NVML ignores CUDA_VISIBLE_DEVICES */
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlDeviceGetCount_v2(deviceCount);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && (device == NULL || index >= t.node->n_devices))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *device = gsim_nvml_device_handle((int)index);
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* Finds a GPU or MIG device by its full UUID (lock held). */
static nvmlReturn_t find_uuid(const gsim_node_t *node, const char *uuid, nvmlDevice_t *device)
{
    for (uint32_t d = 0; d < node->n_devices; d++) {
        if (strcmp(node->dev[d].uuid, uuid) == 0) {
            *device = gsim_nvml_device_handle((int)d);
            return NVML_SUCCESS;
        }
    }
    int dev, gi, ci;
    char found[GSIM_UUID_MAX];
    if (strncmp(uuid, "MIG-", 4) == 0 &&
        gsim_mig_find_uuid_locked(node, uuid, &dev, &gi, &ci) == 0) {
        gsim_mig_uuid(&node->dev[dev].gi[gi], ci, found);
        if (strcmp(found, uuid) == 0) {
            *device = gsim_nvml_mig_handle(dev, gi, ci);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && (uuid == NULL || device == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        result = find_uuid(t.node, uuid, device);
    return gsim_nvml_end(&t, result);
}

/* Parses "DDDDDDDD:BB:DD.F" or the legacy "DDDD:BB:DD.F" into domain, bus, device. */
static int parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *device)
{
    unsigned fn;
    char tail;
    return sscanf(text, "%x:%x:%x.%x%c", domain, bus, device, &fn, &tail) == 4 ? 0 : -1;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                                          nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    unsigned want[3], have[3];
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && (pciBusId == NULL || device == NULL ||
                                   parse_bus_id(pciBusId, &want[0], &want[1], &want[2]) != 0))
        result = NVML_ERROR_INVALID_ARGUMENT;
    for (uint32_t d = 0; result == NVML_SUCCESS && d < t.node->n_devices; d++) {
        if (parse_bus_id(t.node->dev[d].pci_bus_id, &have[0], &have[1], &have[2]) == 0 &&
            memcmp(want, have, sizeof(want)) == 0) {
            *device = gsim_nvml_device_handle((int)d);
            return gsim_nvml_end(&t, NVML_SUCCESS);
        }
    }
    return gsim_nvml_end(&t, result == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    char text[GSIM_NAME_MAX + 48], profile[40];
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS) {
        if (t.g != NULL) {
            gsim_nvml_mig_profile_name(t.model, t.g, t.ci, profile, sizeof(profile));
            snprintf(text, sizeof(text), "%s MIG %s", t.d->name, profile);
        } else {
            snprintf(text, sizeof(text), "%s", t.d->name);
        }
        result = gsim_nvml_copy_string(name, length, text);
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    char text[GSIM_UUID_MAX];
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS) {
        if (t.g != NULL)
            gsim_mig_uuid(t.g, t.ci, text);
        else
            snprintf(text, sizeof(text), "%s", t.d->uuid);
        result = gsim_nvml_copy_string(uuid, length, text);
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && index == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    /* A MIG device's index is the one nvmlDeviceGetMigDeviceHandleByIndex takes. */
    if (result == NVML_SUCCESS)
        *index = (unsigned)(t.g != NULL ? gsim_nvml_mig_index(&t) : t.dev);
    return gsim_nvml_end(&t, result);
}

/* The GPU's /dev/nvidiaN: its index, as the driver numbers a node's GPUs in PCI order. A MIG
 * device has none (NVIDIA's answers NVML_ERROR_NOT_SUPPORTED for one). */
GS_NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && minorNumber == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && t.g != NULL)
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result == NVML_SUCCESS)
        *minorNumber = (unsigned)t.dev;
    return gsim_nvml_end(&t, result);
}

/* PCI device ids of the simulated models (NVIDIA's, vendor 0x10de). */
static unsigned pci_device_id(const char *model)
{
    static const struct {
        const char *model;
        unsigned id;
    } ids[] = {{"A100-40GB", 0x20b0},  {"A100-80GB", 0x20b2}, {"H100-80GB", 0x2330},
               {"H200-141GB", 0x2335}, {"A30-24GB", 0x20b7},  {"L4-24GB", 0x27b8},
               {"T4-16GB", 0x1eb8},    {"V100-32GB", 0x1db6}};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        if (strcmp(ids[i].model, model) == 0)
            return ids[i].id;
    }
    return 0x2330;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    unsigned domain, bus, dev;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && pci == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && parse_bus_id(t.d->pci_bus_id, &domain, &bus, &dev) != 0)
        result = NVML_ERROR_UNKNOWN;
    if (result == NVML_SUCCESS) {
        /* A MIG device reports its parent GPU's PCI location. */
        memset(pci, 0, sizeof(*pci));
        pci->domain = domain;
        pci->bus = bus;
        pci->device = dev;
        pci->pciDeviceId = pci_device_id(t.model->name) << 16 | 0x10de;
        pci->pciSubSystemId = 0x10de << 16 | pci_device_id(t.model->name);
        snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", domain, bus, dev);
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", domain & 0xffff,
                 bus, dev);
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                    nvmlDeviceAttributes_t *attributes)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && attributes == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        memset(attributes, 0, sizeof(*attributes));
        if (t.g != NULL) {
            const gsim_ci_t *ci = &t.g->ci[t.ci];
            attributes->multiprocessorCount = ci->size * gsim_mig_slice_sms(t.model);
            attributes->sharedCopyEngineCount = t.g->compute;
            attributes->gpuInstanceSliceCount = t.g->compute;
            attributes->computeInstanceSliceCount = ci->size;
            attributes->memorySizeMB = t.g->memory_bytes >> 20;
        } else {
            attributes->multiprocessorCount = t.d->sms;
            attributes->sharedCopyEngineCount = t.model->mig_compute_slices;
            attributes->memorySizeMB = t.d->total_bytes >> 20;
        }
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device,
                                                 nvmlDeviceAttributes_t *attributes)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlDeviceGetAttributes_v2(device, attributes);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                            int *minor)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && (major == NULL || minor == NULL))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        gsim_model_cc(t.model, major, minor); /* a MIG device's is its GPU's */
    return gsim_nvml_end(&t, result);
}

/* Reads the handle's total, reserved and used bytes, after reclaiming dead processes (lock held).
 * A whole GPU's used memory includes what the driver reserves, as NVML reports it (nvmlMemory_t:
 * "Sum of Reserved and Allocated device memory"); a MIG device has no reservation of its own. */
static void memory_of(nvml_target_t *t, uint64_t *total, uint64_t *reserved, uint64_t *used)
{
    gsim_node_reap_locked(t->node);
    *total = t->g != NULL ? t->g->memory_bytes : t->d->total_bytes;
    *reserved = t->g != NULL ? 0 : t->d->reserved_bytes;
    *used = *reserved + (t->g != NULL ? t->g->used_bytes : t->d->used_bytes);
    if (*used > *total)
        *used = *total;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    uint64_t total, reserved, used;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && memory == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS) {
        memory_of(&t, &total, &reserved, &used);
        memory->total = total;
        memory->used = used;
        memory->free = total - used;
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    uint64_t total, reserved, used;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && memory == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && memory->version != nvmlMemory_v2)
        result = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (result == NVML_SUCCESS) {
        memory_of(&t, &total, &reserved, &used);
        memory->total = total;
        memory->reserved = reserved; /* included in used, as NVIDIA documents */
        memory->used = used;
        memory->free = total - used;
    }
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && mode == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *mode = (nvmlComputeMode_t)t.d->compute_mode;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && t.g != NULL)
        result = NVML_ERROR_NOT_SUPPORTED; /* set on the parent GPU */
    if (result == NVML_SUCCESS && (unsigned)mode >= NVML_COMPUTEMODE_COUNT)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD)
        result = NVML_ERROR_NOT_SUPPORTED; /* support removed in CUDA 4.0+ drivers */
    if (result == NVML_SUCCESS)
        t.d->compute_mode = (uint32_t)mode;
    return gsim_nvml_end(&t, result);
}
