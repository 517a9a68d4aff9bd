/* SPDX-License-Identifier: Apache-2.0 */
/* GPU inventory over NVML (dlopen'ed; types from the project's one NVML ABI header). */
#include "inventory.h"

#include "gpushare/error.h"
#include "gpushare/nvml_abi.h"
#include "gpushare/nvml_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gs__inventory {
    gs_nvml_t nv; /* the library and its functions (gpushare/nvml_load.h) */
    int simulated;
    char sim_state[GS__PATH_MAX]; /* gpusim's node (GPUSIM_STATE), "" when not simulated */
    char sim_dir[GS__PATH_MAX];   /* where gpusim's libraries and programs are, "" when not */
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char cuda[16]; /* the CUDA driver API's version, "13.0"; "" when NVML cannot tell */
    unsigned count;
    nvmlDevice_t handles[GS_MAX_DEVICES];
    gs__gpu_info_t gpus[GS_MAX_DEVICES];
};

/* The memory the driver keeps for itself on a device (nvmlMemory_v2_t.reserved, which NVML
 * counts as used and CUDA's total leaves out); 0 when this NVML cannot tell. */
static uint64_t driver_reserved(gs__inventory_t *inv, nvmlDevice_t device)
{
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    if (inv->nv.nvmlDeviceGetMemoryInfo_v2 == NULL ||
        inv->nv.nvmlDeviceGetMemoryInfo_v2(device, &m) != NVML_SUCCESS)
        return 0;
    return m.reserved < m.total ? m.reserved : 0;
}

/* Where the GPU is: its device file's number and PCI bus id, for the metrics' labels (as
 * dcgm-exporter's: device="nvidiaN", pci_bus_id). Unknown ones stay -1 and "". */
static void locate(gs__inventory_t *inv, unsigned i)
{
    gs__gpu_info_t *gpu = &inv->gpus[i];
    unsigned minor = 0;
    nvmlPciInfo_t pci;
    gpu->minor = -1;
    gpu->pci_bus_id[0] = '\0';
    if (inv->nv.nvmlDeviceGetMinorNumber != NULL &&
        inv->nv.nvmlDeviceGetMinorNumber(inv->handles[i], &minor) == NVML_SUCCESS)
        gpu->minor = (int)minor;
    if (inv->nv.nvmlDeviceGetPciInfo_v3 != NULL &&
        inv->nv.nvmlDeviceGetPciInfo_v3(inv->handles[i], &pci) == NVML_SUCCESS)
        snprintf(gpu->pci_bus_id, sizeof(gpu->pci_bus_id), "%s", pci.busId);
}

static int discover(gs__inventory_t *inv, char *err, size_t errlen)
{
    unsigned count = 0;
    nvmlReturn_t rc = inv->nv.nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        return gs_nvml_fail(&inv->nv, rc, "nvmlDeviceGetCount", err, errlen);
    if (count > GS_MAX_DEVICES)
        count = GS_MAX_DEVICES;
    for (unsigned i = 0; i < count; i++) {
        gs__gpu_info_t *gpu = &inv->gpus[i];
        nvmlMemory_t memory;
        gpu->index = i;
        if ((rc = inv->nv.nvmlDeviceGetHandleByIndex_v2(i, &inv->handles[i])) != NVML_SUCCESS ||
            (rc = inv->nv.nvmlDeviceGetUUID(inv->handles[i], gpu->uuid, sizeof(gpu->uuid))) !=
                NVML_SUCCESS ||
            (rc = inv->nv.nvmlDeviceGetName(inv->handles[i], gpu->name, sizeof(gpu->name))) !=
                NVML_SUCCESS ||
            (rc = inv->nv.nvmlDeviceGetMemoryInfo(inv->handles[i], &memory)) != NVML_SUCCESS)
            return gs_nvml_fail(&inv->nv, rc, "device query", err, errlen);
        gpu->total = memory.total;
        gpu->reserved = driver_reserved(inv, inv->handles[i]);
        locate(inv, i);
    }
    inv->count = count;
    return 0;
}

/* Without NVIDIA's kernel driver the library can only be gpusim's: its node is sim_node unless
 * GPUSIM_STATE says otherwise (set here before the library reads it, so that the daemon's node
 * is one its jobs can reach: gpusim's own default is under a private /tmp in the unit). */
static int nvidia_driver(void)
{
    return access("/proc/driver/nvidia/version", F_OK) == 0;
}

int gs__inventory_host_node(const char *sim_node)
{
    const char *state = getenv("GPUSIM_STATE");
    return !nvidia_driver() && (state == NULL || state[0] == '\0') && sim_node != NULL &&
           sim_node[0] != '\0';
}

static void choose_sim_node(gs__inventory_t *inv, const char *sim_node)
{
    inv->simulated = !nvidia_driver();
    const char *state = getenv("GPUSIM_STATE");
    if (!inv->simulated)
        return;
    if (gs__inventory_host_node(sim_node)) {
        char parent[GS__PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", sim_node);
        char *slash = strrchr(parent, '/');
        if (slash != NULL && slash != parent) {
            *slash = '\0';
            mkdir(parent, 0755);
        }
        setenv("GPUSIM_STATE", sim_node, 1);
        state = sim_node;
    }
    snprintf(inv->sim_state, sizeof(inv->sim_state), "%s", state != NULL ? state : "");
}

/* gpusim's directory: the loaded library's. */
static void find_sim_dir(gs__inventory_t *inv)
{
    char path[GS__PATH_MAX];
    if (!inv->simulated || realpath(inv->nv.library, path) == NULL)
        return;
    char *slash = strrchr(path, '/');
    if (slash != NULL && slash != path)
        *slash = '\0';
    snprintf(inv->sim_dir, sizeof(inv->sim_dir), "%s", path);
}

/* The CUDA driver API's version as NVML reports it ("13.0"), "" when it cannot tell. */
static void cuda_version(gs__inventory_t *inv)
{
    int cuda = 0;
    if (inv->nv.nvmlSystemGetCudaDriverVersion_v2 != NULL &&
        inv->nv.nvmlSystemGetCudaDriverVersion_v2(&cuda) == NVML_SUCCESS && cuda > 0)
        snprintf(inv->cuda, sizeof(inv->cuda), "%d.%d", cuda / 1000, cuda % 1000 / 10);
}

int gs__inventory_open(const char *library, const char *sim_node, gs__inventory_t **out, char *err,
                       size_t errlen)
{
    gs__inventory_t *inv = calloc(1, sizeof(*inv));
    if (inv == NULL)
        return GS_ENOMEM;
    choose_sim_node(inv, sim_node);
    int result = gs_nvml_open(&inv->nv, library, err, errlen);
    if (result != 0) {
        free(inv);
        return result;
    }
    if (inv->nv.nvmlSystemGetDriverVersion(inv->driver, sizeof(inv->driver)) != NVML_SUCCESS)
        snprintf(inv->driver, sizeof(inv->driver), "unknown");
    cuda_version(inv);
    find_sim_dir(inv);
    result = discover(inv, err, errlen);
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
    gs_nvml_close(&inv->nv);
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
    if (inv->nv.nvmlDeviceGetMemoryInfo(inv->handles[i], &memory) != NVML_SUCCESS)
        return GS_EIO;
    usage->used = memory.used;
    usage->total = memory.total;
    usage->utilization = 0;
    if (inv->nv.nvmlDeviceGetUtilizationRates(inv->handles[i], &util) == NVML_SUCCESS)
        usage->utilization = util.gpu;
    return 0;
}

nvmlDevice_t gs__inventory_handle(const gs__inventory_t *inv, unsigned i)
{
    return i < inv->count ? inv->handles[i] : NULL;
}

int gs__inventory_resolve(const gs__inventory_t *inv, const gs_nvml_fn_t *fns, size_t n,
                          const char *missing, char *err, size_t errlen)
{
    return gs_nvml_more(&inv->nv, fns, n, missing, err, errlen);
}

int gs__inventory_simulated(const gs__inventory_t *inv)
{
    return inv->simulated;
}

const char *gs__inventory_sim_state(const gs__inventory_t *inv)
{
    return inv != NULL ? inv->sim_state : "";
}

const char *gs__inventory_sim_dir(const gs__inventory_t *inv)
{
    return inv != NULL ? inv->sim_dir : "";
}

const char *gs__inventory_library(const gs__inventory_t *inv)
{
    return inv->nv.library;
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
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) list =
        inv->nv.nvmlDeviceGetComputeRunningProcesses_v3;
    if (list == NULL)
        return GS_ENOSYS;
    nvmlReturn_t rc = list(inv->handles[i], &n, infos);
    for (int tries = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && tries < 3; tries++) {
        if (infos != local)
            free(infos);
        n += 16; /* room for processes that start meanwhile */
        infos = malloc(n * sizeof(*infos));
        if (infos == NULL)
            return GS_ENOMEM;
        rc = list(inv->handles[i], &n, infos);
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

const char *gs__inventory_cuda_version(const gs__inventory_t *inv)
{
    return inv->cuda;
}
