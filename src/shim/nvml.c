/* NVML memory queries: nvmlDeviceGetMemoryInfo(_v2) report the lease's slice for the GPUs the
 * process's CUDA devices are (matched through CUDA_VISIBLE_DEVICES: UUIDs or indices), and the
 * driver's figures for every other GPU. NVML is loaded only when the application uses it, or
 * when the shim measures a context of a lease (gs__nvml). */
#define GS_NVML_API GS_EXPORT
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/log.h"
#include "gpushare/nvml_abi.h"

typedef struct nvml_real {
#define GS_NVML_HOOK(fn) __typeof__(&fn) fn;
#include "nvml.def"
#undef GS_NVML_HOOK
    __typeof__(&nvmlDeviceGetUUID) nvmlDeviceGetUUID;
    __typeof__(&nvmlDeviceGetIndex) nvmlDeviceGetIndex;
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
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == NULL)
        lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
    if (lib == NULL) {
        gs_error("cannot load NVML libnvidia-ml.so.1: %s", dlerror());
        return;
    }
#define GS_NVML_HOOK(fn) real.fn = (__typeof__(real.fn))gs__real_dlsym(lib, #fn);
#include "nvml.def"
#undef GS_NVML_HOOK
    real.nvmlDeviceGetUUID =
        (__typeof__(real.nvmlDeviceGetUUID))gs__real_dlsym(lib, "nvmlDeviceGetUUID");
    real.nvmlDeviceGetIndex =
        (__typeof__(real.nvmlDeviceGetIndex))gs__real_dlsym(lib, "nvmlDeviceGetIndex");
    own.init = (__typeof__(own.init))gs__real_dlsym(lib, "nvmlInit_v2");
    own.by_uuid = (__typeof__(own.by_uuid))gs__real_dlsym(lib, "nvmlDeviceGetHandleByUUID");
    own.processes =
        (__typeof__(own.processes))gs__real_dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    own.memory = real.nvmlDeviceGetMemoryInfo;
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

void *gs__nvml_hook_by_name(const char *name)
{
#define GS_NVML_HOOK(fn)                                                                           \
    if (strcmp(name, #fn) == 0)                                                                    \
        return (void *)&fn;
#include "nvml.def"
#undef GS_NVML_HOOK
    return NULL;
}
