/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: initialisation (reference counted), error strings, system queries. */
#include "nvml_internal.h"

#include <pthread.h>
#include <stdio.h>

typedef struct nvml_state {
    pthread_mutex_t mutex;
    unsigned int refs; /* nvmlInit calls not yet matched by nvmlShutdown */
    gsim_node_t *node; /* set while refs > 0 */
} nvml_state_t;

static nvml_state_t state = {.mutex = PTHREAD_MUTEX_INITIALIZER};

gsim_node_t *gsim_nvml_node(void)
{
    pthread_mutex_lock(&state.mutex);
    gsim_node_t *node = state.refs > 0 ? state.node : NULL;
    pthread_mutex_unlock(&state.mutex);
    return node;
}

GS_NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    GSIM_NVML_FAULT_POINT();
    (void)flags; /* the simulated node always has GPUs and attaches nothing */
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&state.mutex);
    if (state.refs == 0) {
        /* Tools do not take a process slot: only CUDA processes use GPU memory. */
        if (gsim_node_open(0, &state.node) != 0)
            result = NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (result == NVML_SUCCESS)
        state.refs++;
    pthread_mutex_unlock(&state.mutex);
    return result;
}

GS_NVML_API nvmlReturn_t nvmlInit_v2(void)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlInitWithFlags(0);
}

GS_NVML_API nvmlReturn_t nvmlInit(void)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlInitWithFlags(0);
}

GS_NVML_API nvmlReturn_t nvmlShutdown(void)
{
    GSIM_NVML_FAULT_POINT();
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&state.mutex);
    if (state.refs == 0)
        result = NVML_ERROR_UNINITIALIZED;
    else
        state.refs--;
    pthread_mutex_unlock(&state.mutex);
    return result;
}

GS_NVML_API const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
        return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
        return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
        return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
        return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
        return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
        return "The requested vgpu operation is not available on target device, because ECC is "
               "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Insufficient Resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
        return "Requested frequency is not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "The provided version is invalid/unsupported";
    case NVML_ERROR_DEPRECATED:
        return "The requested functionality has been deprecated";
    case NVML_ERROR_NOT_READY:
        return "The system is not ready for the request";
    case NVML_ERROR_GPU_NOT_FOUND:
        return "No GPUs were found";
    case NVML_ERROR_INVALID_STATE:
        return "Resource not in correct state to perform requested operation";
    default:
        return "Unknown Error";
    }
}

GS_NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    GSIM_NVML_FAULT_POINT();
    if (gsim_nvml_node() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    return gsim_nvml_copy_string(version, length, GSIM_DRIVER_VERSION);
}

GS_NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    GSIM_NVML_FAULT_POINT();
    if (gsim_nvml_node() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    /* NVML's version is the driver's with a leading API major, e.g. "12.580.65.06". */
    char text[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
    snprintf(text, sizeof(text), "%d.%s", gsim_cuda_version() / 1000, GSIM_DRIVER_VERSION);
    return gsim_nvml_copy_string(version, length, text);
}

GS_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    GSIM_NVML_FAULT_POINT();
    if (gsim_nvml_node() == NULL)
        return NVML_ERROR_UNINITIALIZED;
    if (cudaDriverVersion == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = gsim_cuda_version();
    return NVML_SUCCESS;
}

GS_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    GSIM_NVML_FAULT_POINT();
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}
