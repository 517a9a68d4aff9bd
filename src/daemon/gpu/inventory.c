/* SPDX-License-Identifier: Apache-2.0 */
/* GPU inventory over NVML (dlopen'ed; types from the project's one NVML ABI header). */
#include "inventory.h"

#include "gpushare/error.h"
#include "gpushare/nvml_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The entry points the daemon uses, checked against the ABI header's prototypes. */
#define NVML_FUNCTIONS(X)                                                                          \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlShutdown)                                                                                \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetDriverVersion)                                                                  \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetUtilizationRates)

struct gs__inventory {
    void *lib;
#define X(name) __typeof__(&name) name;
    NVML_FUNCTIONS(X)
#undef X
    __typeof__(&nvmlDeviceGetMemoryInfo_v2) memory_v2; /* optional (NVML 11.5+) */
    /* Optional: a driver without it lists no processes. */
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) running_processes;
    int initialised;
    int simulated;
    char library[GS__PATH_MAX];
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    unsigned count;
    nvmlDevice_t handles[GS_MAX_DEVICES];
    gs__gpu_info_t gpus[GS_MAX_DEVICES];
};

static int resolve(gs__inventory_t *inv, char *err, size_t errlen)
{
#define X(name)                                                                                    \
    *(void **)&inv->name = dlsym(inv->lib, #name);                                                 \
    if (inv->name == NULL) {                                                                       \
        snprintf(err, errlen, "%s has no %s: not an NVML library", inv->library, #name);           \
        return GS_ENOSYS;                                                                          \
    }
    NVML_FUNCTIONS(X)
#undef X
    *(void **)&inv->memory_v2 = dlsym(inv->lib, "nvmlDeviceGetMemoryInfo_v2");
    *(void **)&inv->running_processes = dlsym(inv->lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    return 0;
}

/* The memory the driver keeps for itself on a device (nvmlMemory_v2_t.reserved, which NVML
 * counts as used and CUDA's total leaves out); 0 when this NVML cannot tell. */
static uint64_t driver_reserved(gs__inventory_t *inv, nvmlDevice_t device)
{
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    if (inv->memory_v2 == NULL || inv->memory_v2(device, &m) != NVML_SUCCESS)
        return 0;
    return m.reserved < m.total ? m.reserved : 0;
}

static int nvml_fail(gs__inventory_t *inv, nvmlReturn_t rc, const char *what, char *err,
                     size_t errlen)
{
    return gs_fail(err, errlen, GS_EIO, "NVML %s failed: %s (%d)", what, inv->nvmlErrorString(rc),
                   (int)rc);
}

static int discover(gs__inventory_t *inv, char *err, size_t errlen)
{
    unsigned count = 0;
    nvmlReturn_t rc = inv->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        return nvml_fail(inv, rc, "nvmlDeviceGetCount", err, errlen);
    if (count > GS_MAX_DEVICES)
        count = GS_MAX_DEVICES;
    for (unsigned i = 0; i < count; i++) {
        gs__gpu_info_t *gpu = &inv->gpus[i];
        nvmlMemory_t memory;
        gpu->index = i;
        if ((rc = inv->nvmlDeviceGetHandleByIndex_v2(i, &inv->handles[i])) != NVML_SUCCESS ||
            (rc = inv->nvmlDeviceGetUUID(inv->handles[i], gpu->uuid, sizeof(gpu->uuid))) !=
                NVML_SUCCESS ||
            (rc = inv->nvmlDeviceGetName(inv->handles[i], gpu->name, sizeof(gpu->name))) !=
                NVML_SUCCESS ||
            (rc = inv->nvmlDeviceGetMemoryInfo(inv->handles[i], &memory)) != NVML_SUCCESS)
            return nvml_fail(inv, rc, "device query", err, errlen);
        gpu->total = memory.total;
        gpu->reserved = driver_reserved(inv, inv->handles[i]);
    }
    inv->count = count;
    return 0;
}

int gs__inventory_open(const char *library, gs__inventory_t **out, char *err, size_t errlen)
{
    gs__inventory_t *inv = calloc(1, sizeof(*inv));
    if (inv == NULL)
        return GS_ENOMEM;
    int result = 0;
    inv->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (inv->lib == NULL) {
        result = gs_fail(err, errlen, GS_ENOENT, "cannot load NVML (%s): %s", library, dlerror());
        goto out;
    }
    snprintf(inv->library, sizeof(inv->library), "%s", library);
    result = resolve(inv, err, errlen);
    if (result != 0)
        goto out;
    Dl_info info;
    if (dladdr(*(void **)&inv->nvmlInit_v2, &info) != 0 && info.dli_fname != NULL)
        snprintf(inv->library, sizeof(inv->library), "%s", info.dli_fname);
    nvmlReturn_t rc = inv->nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        result = nvml_fail(inv, rc, "nvmlInit", err, errlen);
        goto out;
    }
    inv->initialised = 1;
    if (inv->nvmlSystemGetDriverVersion(inv->driver, sizeof(inv->driver)) != NVML_SUCCESS)
        snprintf(inv->driver, sizeof(inv->driver), "unknown");
    inv->simulated = access("/proc/driver/nvidia/version", F_OK) != 0;
    result = discover(inv, err, errlen);
out:
    if (result != 0) {
        gs__inventory_close(inv);
        return result;
    }
    *out = inv;
    return 0;
}

void gs__inventory_close(gs__inventory_t *inv)
{
    if (inv == NULL)
        return;
    if (inv->initialised)
        inv->nvmlShutdown();
    if (inv->lib != NULL)
        dlclose(inv->lib);
    free(inv);
}

unsigned gs__inventory_count(const gs__inventory_t *inv)
{
    return inv->count;
}

const gs__gpu_info_t *gs__inventory_gpu(const gs__inventory_t *inv, unsigned i)
{
    return i < inv->count ? &inv->gpus[i] : NULL;
}

int gs__inventory_usage(gs__inventory_t *inv, unsigned i, gs__gpu_usage_t *usage)
{
    if (i >= inv->count)
        return GS_EINVAL;
    nvmlMemory_t memory;
    nvmlUtilization_t util;
    if (inv->nvmlDeviceGetMemoryInfo(inv->handles[i], &memory) != NVML_SUCCESS)
        return GS_EIO;
    usage->used = memory.used;
    usage->total = memory.total;
    usage->utilization = 0;
    if (inv->nvmlDeviceGetUtilizationRates(inv->handles[i], &util) == NVML_SUCCESS)
        usage->utilization = util.gpu;
    return 0;
}

nvmlDevice_t gs__inventory_handle(const gs__inventory_t *inv, unsigned i)
{
    return i < inv->count ? inv->handles[i] : NULL;
}

void *gs__inventory_symbol(const gs__inventory_t *inv, const char *name)
{
    return dlsym(inv->lib, name);
}

int gs__inventory_simulated(const gs__inventory_t *inv)
{
    return inv->simulated;
}

const char *gs__inventory_library(const gs__inventory_t *inv)
{
    return inv->library;
}

const char *gs__inventory_driver(const gs__inventory_t *inv)
{
    return inv->driver;
}

int gs__inventory_processes(gs__inventory_t *inv, unsigned i, gs__gpu_process_t *out,
                            unsigned *count)
{
    nvmlProcessInfo_t local[64];
    nvmlProcessInfo_t *infos = local;
    unsigned n = 64;
    if (i >= inv->count)
        return GS_EINVAL;
    if (inv->running_processes == NULL)
        return GS_ENOSYS;
    nvmlReturn_t rc = inv->running_processes(inv->handles[i], &n, infos);
    for (int tries = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && tries < 3; tries++) {
        if (infos != local)
            free(infos);
        n += 16; /* room for processes that start meanwhile */
        infos = malloc(n * sizeof(*infos));
        if (infos == NULL)
            return GS_ENOMEM;
        rc = inv->running_processes(inv->handles[i], &n, infos);
    }
    unsigned listed = rc == NVML_SUCCESS ? (n < *count ? n : *count) : 0;
    for (unsigned k = 0; k < listed; k++) {
        out[k].pid = (pid_t)infos[k].pid;
        /* NVML_VALUE_NOT_AVAILABLE (all ones) where the driver cannot tell, e.g. under WDDM. */
        out[k].used = infos[k].usedGpuMemory;
    }
    if (infos != local)
        free(infos);
    *count = listed;
    return rc == NVML_SUCCESS ? 0 : GS_EIO;
}
