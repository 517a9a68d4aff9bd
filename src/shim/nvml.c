/* SPDX-License-Identifier: Apache-2.0 */
/* NVML as a lease sees it: nvmlDeviceGetMemoryInfo(_v2) report the lease's slice for the GPUs
 * the process's CUDA devices are (matched through CUDA_VISIBLE_DEVICES: UUIDs or indices), and
 * with CUDA_VISIBLE_DEVICES set the device count, indexes and handle lookups show only those
 * GPUs, in CUDA's order, as CUDA does (and as NVML does in a container given those GPUs).
 * NVML is loaded only when the application uses it, or when the shim measures a context of a
 * lease (gs__nvml). */
#define GS_NVML_API GS_EXPORT
/* The legacy entry points are hooked too: the unversioned names must not map to _v2. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/log.h"
#include "gpushare/nvml_abi.h"
#include "gpushare/nvml_load.h"

typedef struct nvml_real {
#define GS_NVML_HOOK(fn) __typeof__(&fn) fn;
#include "nvml.def"
#undef GS_NVML_HOOK
    __typeof__(&nvmlDeviceGetUUID) nvmlDeviceGetUUID;
    __typeof__(&nvmlDeviceIsMigDeviceHandle) nvmlDeviceIsMigDeviceHandle;
    __typeof__(&nvmlDeviceGetDeviceHandleFromMigDeviceHandle) parent_of_mig;
} nvml_real_t;

static nvml_real_t real;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

/* What the shim itself calls (footprint.c), initialised once per process (again in a child). */
static gs__nvml_t own;
static pid_t own_pid;
static int own_ready;
static pthread_mutex_t own_mutex = PTHREAD_MUTEX_INITIALIZER;

static void load_nvml(void)
{
    char err[256];
    /* Each slot is found through the shim's own dlsym, never through its dlsym hook. */
    const gs_nvml_fn_t fns[] = {
#define GS_NVML_HOOK(fn) {#fn, (void **)&real.fn, 0},
#include "nvml.def"
#undef GS_NVML_HOOK
        {"nvmlDeviceGetUUID", (void **)&real.nvmlDeviceGetUUID, 0},
        {"nvmlDeviceIsMigDeviceHandle", (void **)&real.nvmlDeviceIsMigDeviceHandle, 0},
        {"nvmlDeviceGetDeviceHandleFromMigDeviceHandle", (void **)&real.parent_of_mig, 0},
        {"nvmlInit_v2", (void **)&own.init, 0},
        {"nvmlDeviceGetComputeRunningProcesses_v3", (void **)&own.processes, 0},
    };
    void *lib = gs_nvml_dlopen("libnvidia-ml.so.1", RTLD_LAZY, err, sizeof(err));
    if (lib == NULL) {
        gs_error("cannot load NVML: %s", err);
        return;
    }
    gs_nvml_resolve(lib, gs__real_dlsym, fns, sizeof(fns) / sizeof(fns[0]), "libnvidia-ml.so.1", "",
                    err, sizeof(err));
    own.by_uuid = real.nvmlDeviceGetHandleByUUID;
    own.memory = real.nvmlDeviceGetMemoryInfo;
}

const gs__nvml_t *gs__nvml(void)
{
    pthread_once(&nvml_once, load_nvml);
    if (own.init == NULL || own.by_uuid == NULL || own.processes == NULL || own.memory == NULL)
        return NULL;
    pthread_mutex_lock(&own_mutex);
    if (!own_ready || own_pid != getpid()) {
        own_ready = own.init() == NVML_SUCCESS;
        own_pid = getpid();
        if (!own_ready)
            gs_error("cannot initialise NVML (libnvidia-ml.so.1)");
    }
    int ready = own_ready;
    pthread_mutex_unlock(&own_mutex);
    return ready ? &own : NULL;
}

/* Returns the CUDA ordinal that device is for this process, or -1 when it is not one of its
 * devices. CUDA_VISIBLE_DEVICES lists UUIDs (what gpushare sets) or indices; unset, CUDA ordinal
 * k is NVML index k. */
static int cuda_ordinal(nvmlDevice_t device)
{
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    unsigned int index = 0;
    int have_uuid = real.nvmlDeviceGetUUID != NULL &&
                    real.nvmlDeviceGetUUID(device, uuid, sizeof(uuid)) == NVML_SUCCESS;
    int have_index =
        real.nvmlDeviceGetIndex != NULL && real.nvmlDeviceGetIndex(device, &index) == NVML_SUCCESS;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible == NULL)
        return have_index && index < GS_MAX_DEVICES ? (int)index : -1;
    int ordinal = 0;
    for (const char *p = visible; *p != '\0' && ordinal < GS_MAX_DEVICES; ordinal++) {
        size_t len = strcspn(p, ",");
        if (len > 0 && p[0] >= '0' && p[0] <= '9') {
            if (have_index && strtoul(p, NULL, 10) == index)
                return ordinal;
        } else if (len > 0 && have_uuid && strncmp(uuid, p, len) == 0) {
            return ordinal;
        }
        p += len + (p[len] == ',');
    }
    return -1;
}

/* The lease's view: total is the limit (at most the GPU's), used is the lease's use, free the
 * rest (never negative, at most the GPU's free). Returns 0 when device is not limited. */
static int lease_view(nvmlDevice_t device, unsigned long long *total, unsigned long long *used,
                      unsigned long long *free_bytes)
{
    if (gs__ensure_init() != CUDA_SUCCESS || !gs__accounting())
        return 0;
    int ordinal = cuda_ordinal(device);
    uint64_t limit = ordinal >= 0 ? gs__limit((unsigned)ordinal) : 0;
    if (limit == 0)
        return 0;
    uint64_t t = *total < limit ? *total : limit;
    uint64_t u = gs_region_used(gs__region(), (unsigned)ordinal);
    uint64_t f = u < t ? t - u : 0;
    *total = t;
    *used = u < t ? u : t;
    *free_bytes = f < *free_bytes ? f : *free_bytes;
    return 1;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    pthread_once(&nvml_once, load_nvml);
    if (real.nvmlDeviceGetMemoryInfo == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t result = real.nvmlDeviceGetMemoryInfo(device, memory);
    if (result == NVML_SUCCESS && memory != NULL)
        lease_view(device, &memory->total, &memory->used, &memory->free);
    return result;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    pthread_once(&nvml_once, load_nvml);
    if (real.nvmlDeviceGetMemoryInfo_v2 == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t result = real.nvmlDeviceGetMemoryInfo_v2(device, memory);
    if (result == NVML_SUCCESS && memory != NULL &&
        lease_view(device, &memory->total, &memory->used, &memory->free))
        memory->reserved = 0; /* the slice has no driver reservation of its own */
    return result;
}

/* ---- the GPUs of CUDA_VISIBLE_DEVICES ---- */

typedef struct visible {
    unsigned n;
    nvmlDevice_t dev[GS_MAX_DEVICES];
} visible_t;

/* The GPU a MIG device handle belongs to (the handle itself for a GPU). */
static nvmlDevice_t gpu_of(nvmlDevice_t dev)
{
    unsigned is_mig = 0;
    nvmlDevice_t parent;
    if (real.nvmlDeviceIsMigDeviceHandle != NULL && real.parent_of_mig != NULL &&
        real.nvmlDeviceIsMigDeviceHandle(dev, &is_mig) == NVML_SUCCESS && is_mig &&
        real.parent_of_mig(dev, &parent) == NVML_SUCCESS)
        return parent;
    return dev;
}

/* The GPU whose UUID starts with prefix (NVIDIA accepts any unique prefix). */
static int by_uuid_prefix(const char *prefix, size_t len, unsigned count, nvmlDevice_t *out)
{
    int found = 0;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        if (real.nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
            real.nvmlDeviceGetUUID == NULL ||
            real.nvmlDeviceGetUUID(dev, uuid, sizeof(uuid)) != NVML_SUCCESS ||
            strncmp(uuid, prefix, len) != 0)
            continue;
        if (found++ > 0)
            return -1;
        *out = dev;
    }
    return found == 1 ? 0 : -1;
}

/* Resolves one entry of CUDA_VISIBLE_DEVICES (an index, a GPU UUID or prefix, a MIG device's
 * UUID) to its GPU. Returns 0, or -1 when it names no device. */
static int resolve_entry(const char *entry, size_t len, unsigned count, nvmlDevice_t *out)
{
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE + 32];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, entry, len);
    buf[len] = '\0';
    if (buf[0] >= '0' && buf[0] <= '9') {
        char *end;
        unsigned long index = strtoul(buf, &end, 10);
        return *end == '\0' && index < count &&
                       real.nvmlDeviceGetHandleByIndex_v2((unsigned)index, out) == NVML_SUCCESS
                   ? 0
                   : -1;
    }
    if (strncmp(buf, "GPU-", 4) == 0)
        return by_uuid_prefix(buf, len, count, out);
    if (strncmp(buf, "MIG-GPU-", 8) == 0) /* MIG-GPU-<uuid>/<gi>/<ci>, before R470 */
        return by_uuid_prefix(buf + 4, strcspn(buf + 4, "/"), count, out);
    nvmlDevice_t dev;
    if (strncmp(buf, "MIG-", 4) == 0 && real.nvmlDeviceGetHandleByUUID != NULL &&
        real.nvmlDeviceGetHandleByUUID(buf, &dev) == NVML_SUCCESS) {
        *out = gpu_of(dev);
        return 0;
    }
    return -1;
}

/* Fills vis with the GPUs of CUDA_VISIBLE_DEVICES, in its order; as CUDA, the list ends at the
 * first entry that names no device or one already listed. Returns 0 when the variable is not set
 * (every GPU is visible), 1 with vis filled, or -1 with the NVML error in *err. */
static int visible_gpus(visible_t *vis, nvmlReturn_t *err)
{
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    unsigned count = 0;
    if (list == NULL || real.nvmlDeviceGetCount_v2 == NULL ||
        real.nvmlDeviceGetHandleByIndex_v2 == NULL)
        return 0;
    *err = real.nvmlDeviceGetCount_v2(&count);
    if (*err != NVML_SUCCESS)
        return -1;
    vis->n = 0;
    for (const char *p = list; *p != '\0' && vis->n < GS_MAX_DEVICES;) {
        size_t len = strcspn(p, ",");
        nvmlDevice_t dev;
        if (resolve_entry(p, len, count, &dev) != 0)
            break;
        int seen = 0;
        for (unsigned i = 0; i < vis->n && !seen; i++)
            seen = vis->dev[i] == dev;
        if (seen)
            break; /* CUDA stops at a repeated device too */
        vis->dev[vis->n++] = dev;
        p += len + (p[len] == ',');
    }
    return 1;
}

/* The position of dev (or of the GPU of a MIG device) among the visible GPUs, or -1. */
static int position(const visible_t *vis, nvmlDevice_t dev)
{
    nvmlDevice_t gpu = gpu_of(dev);
    for (unsigned i = 0; i < vis->n; i++) {
        if (vis->dev[i] == gpu)
            return (int)i;
    }
    return -1;
}

static nvmlReturn_t count_visible(nvmlReturn_t (*fn)(unsigned int *), unsigned int *deviceCount)
{
    pthread_once(&nvml_once, load_nvml);
    if (fn == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    visible_t vis;
    nvmlReturn_t err = NVML_SUCCESS;
    int v = deviceCount != NULL ? visible_gpus(&vis, &err) : 0;
    if (v == 0)
        return fn(deviceCount);
    if (v < 0)
        return err;
    *deviceCount = vis.n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    pthread_once(&nvml_once, load_nvml);
    return count_visible(real.nvmlDeviceGetCount_v2, deviceCount);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    pthread_once(&nvml_once, load_nvml);
    return count_visible(real.nvmlDeviceGetCount, deviceCount);
}

static nvmlReturn_t handle_visible(nvmlReturn_t (*fn)(unsigned int, nvmlDevice_t *),
                                   unsigned int index, nvmlDevice_t *device)
{
    if (fn == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    visible_t vis;
    nvmlReturn_t err = NVML_SUCCESS;
    int v = device != NULL ? visible_gpus(&vis, &err) : 0;
    if (v == 0)
        return fn(index, device);
    if (v < 0)
        return err;
    if (index >= vis.n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = vis.dev[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    pthread_once(&nvml_once, load_nvml);
    return handle_visible(real.nvmlDeviceGetHandleByIndex_v2, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    pthread_once(&nvml_once, load_nvml);
    return handle_visible(real.nvmlDeviceGetHandleByIndex, index, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    pthread_once(&nvml_once, load_nvml);
    if (real.nvmlDeviceGetIndex == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t result = real.nvmlDeviceGetIndex(device, index);
    visible_t vis;
    nvmlReturn_t err = NVML_SUCCESS;
    if (result != NVML_SUCCESS || visible_gpus(&vis, &err) == 0)
        return result;
    int pos = err == NVML_SUCCESS ? position(&vis, device) : -1;
    if (pos < 0)
        return err != NVML_SUCCESS ? err : NVML_ERROR_NOT_FOUND;
    *index = (unsigned)pos;
    return NVML_SUCCESS;
}

/* A handle found by another key is refused when its GPU is not visible. */
static nvmlReturn_t only_visible(nvmlReturn_t result, nvmlDevice_t *device)
{
    visible_t vis;
    nvmlReturn_t err = NVML_SUCCESS;
    if (result != NVML_SUCCESS || device == NULL)
        return result;
    int v = visible_gpus(&vis, &err);
    if (v < 0)
        return err;
    return v == 0 || position(&vis, *device) >= 0 ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    pthread_once(&nvml_once, load_nvml);
    if (real.nvmlDeviceGetHandleByUUID == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    return only_visible(real.nvmlDeviceGetHandleByUUID(uuid, device), device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    pthread_once(&nvml_once, load_nvml);
    if (real.nvmlDeviceGetHandleByPciBusId_v2 == NULL)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    return only_visible(real.nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device), device);
}

void *gs__nvml_hook_by_name(const char *name)
{
#define GS_NVML_HOOK(fn)                                                                           \
    if (strcmp(name, #fn) == 0)                                                                    \
        return (void *)&fn;
#include "nvml.def"
#undef GS_NVML_HOOK
    return NULL;
}
