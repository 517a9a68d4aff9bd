/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: what every entry point gpusim does not model answers, and the S-class
 * unit and excluded-GPU queries of a node that has neither.
 *
 * sim/nvml/entry_points.tsv lists every entry point of NVIDIA's R580 libnvidia-ml.so.1; the rows
 * marked stub become functions (gen_stubs.cmake) that call gsim_nvml_stub with their first
 * argument: NVML_ERROR_UNINITIALIZED before nvmlInit, NVML_ERROR_INVALID_ARGUMENT for a handle
 * that is not one of ours, then NVML_ERROR_NOT_SUPPORTED, as NVIDIA's library answers a feature
 * the GPU does not have. */
#include "nvml_internal.h"

#include <string.h>

nvmlReturn_t gsim_nvml_stub(gsim_nvml_kind_t kind, void *handle)
{
    nvml_target_t t;
    nvmlReturn_t result;
    switch (kind) {
    case GSIM_NVML_DEVICE:
        result = gsim_nvml_begin_device(handle, &t);
        break;
    case GSIM_NVML_GPU_INSTANCE:
        result = gsim_nvml_begin_gi(handle, &t);
        break;
    case GSIM_NVML_COMPUTE_INSTANCE:
        result = gsim_nvml_begin_ci(handle, &t);
        break;
    default:
        result = gsim_nvml_begin_node(&t);
        break;
    }
    /* No unit exists (S-class systems only): every unit handle or index is invalid. */
    if (result == NVML_SUCCESS && kind == GSIM_NVML_UNIT)
        result = NVML_ERROR_INVALID_ARGUMENT;
    return gsim_nvml_end(&t, result == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : result);
}

/* Non-S-class systems have no units: the count is 0 (NVML documents unit queries for S-class
 * products only). */
GS_NVML_API nvmlReturn_t nvmlUnitGetCount(unsigned int *unitCount)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && unitCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *unitCount = 0;
    return gsim_nvml_end(&t, result);
}

/* No GPU of the simulated node is excluded from use. */
GS_NVML_API nvmlReturn_t nvmlGetExcludedDeviceCount(unsigned int *deviceCount)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && deviceCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS)
        *deviceCount = 0;
    return gsim_nvml_end(&t, result);
}

/* Every index is beyond the count of 0: NVML_ERROR_INVALID_ARGUMENT. */
GS_NVML_API nvmlReturn_t nvmlGetExcludedDeviceInfoByIndex(unsigned int index,
                                                          nvmlExcludedDeviceInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    (void)index;
    (void)info;
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    return gsim_nvml_end(&t, result == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : result);
}

/* The pre-R460 names of the two above (nvml.h maps them with #define). */
GS_NVML_API nvmlReturn_t nvmlGetBlacklistDeviceCount(unsigned int *deviceCount)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlGetExcludedDeviceCount(deviceCount);
}

GS_NVML_API nvmlReturn_t nvmlGetBlacklistDeviceInfoByIndex(unsigned int index,
                                                           nvmlExcludedDeviceInfo_t *info)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlGetExcludedDeviceInfoByIndex(index, info);
}
