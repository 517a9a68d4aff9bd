/* SPDX-License-Identifier: Apache-2.0 */
/* Context footprints: the device memory a CUDA context takes for itself counts in the lease.
 *
 * A context's own memory (local memory for every thread the GPU can hold, heaps, the driver's
 * queues: 518 MiB on an H100, measured) is asked for by no allocation the shim sees, so it is
 * measured around the creation, on the real driver, through NVML:
 *   - per process, when NVML lists this process on the device: its used memory
 *     (nvmlDeviceGetComputeRunningProcesses) after the creation less before it. Other processes
 *     cannot move this figure, and it is the one gpushared's watchdog holds against the limit.
 *   - per device otherwise (a PID namespace NVML does not see, no per-process accounting): the
 *     device's used memory (nvmlDeviceGetMemoryInfo) after less before. Allocations and frees of
 *     other processes during the creation move it; the README states the bound.
 * The measured bytes are reserved like an allocation (a context that does not fit is destroyed
 * again and fails with CUDA_ERROR_OUT_OF_MEMORY) and returned when the context is destroyed or a
 * primary context released for the last time. A lease with a limit refuses contexts it cannot
 * measure (no NVML): they would escape the limit. */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpushare/log.h"
#include "gpushare/quantity.h"

#define PROCESS_LIST_MAX 4096

/* Finds the NVML handle of CUDA ordinal dev from its UUID (a whole GPU or a MIG device). */
static int nvml_handle(const gs__nvml_t *nvml, CUdevice dev, nvmlDevice_t *out)
{
    const gs__real_t *real = gs__real();
    CUuuid u;
    if (real->cuDeviceGetUuid_v2 == NULL || real->cuDeviceGetUuid_v2(&u, dev) != CUDA_SUCCESS)
        return -1;
    const unsigned char *b = (const unsigned char *)u.bytes;
    static const char *const prefixes[] = {"GPU", "MIG"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        char text[64];
        snprintf(text, sizeof(text),
                 "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 prefixes[i], b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
                 b[11], b[12], b[13], b[14], b[15]);
        if (nvml->by_uuid(text, out) == NVML_SUCCESS)
            return 0;
    }
    return -1;
}

/* This process's NVML used memory on device: sets *bytes (0 when not listed) and returns 1 when
 * NVML lists it with a value, 0 when not, -1 when the list cannot be read. */
static int own_usage(const gs__nvml_t *nvml, nvmlDevice_t device, uint64_t *bytes)
{
    unsigned count = 64;
    nvmlProcessInfo_t stack[64], *infos = stack;
    nvmlReturn_t rc = nvml->processes(device, &count, infos);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && count <= PROCESS_LIST_MAX) {
        count += 16; /* room for processes that start meanwhile */
        infos = malloc(count * sizeof(*infos));
        rc = infos != NULL ? nvml->processes(device, &count, infos) : NVML_ERROR_MEMORY;
    }
    int result = rc == NVML_SUCCESS ? 0 : -1;
    *bytes = 0;
    for (unsigned i = 0; result == 0 && i < count; i++) {
        if (infos[i].pid == (unsigned)getpid() && infos[i].usedGpuMemory != ~0ULL) {
            *bytes = infos[i].usedGpuMemory;
            result = 1;
        }
    }
    if (infos != stack)
        free(infos);
    return result;
}

static int device_usage(const gs__nvml_t *nvml, nvmlDevice_t device, uint64_t *bytes)
{
    nvmlMemory_t m;
    if (nvml->memory(device, &m) != NVML_SUCCESS)
        return -1;
    *bytes = m.used;
    return 0;
}

/* Fills probe from NVML; returns 0, or -1 when dev cannot be measured. */
static int sample(CUdevice dev, gs__footprint_probe_t *probe)
{
    const gs__nvml_t *nvml = gs__nvml();
    if (nvml == NULL || nvml_handle(nvml, dev, &probe->nvml) != 0 ||
        device_usage(nvml, probe->nvml, &probe->device) != 0)
        return -1;
    probe->own_listed = own_usage(nvml, probe->nvml, &probe->own) == 1;
    probe->dev = dev;
    return 0;
}

CUresult gs__footprint_begin(CUdevice dev, gs__footprint_probe_t *probe)
{
    probe->dev = -1;
    if (!gs__accounting() || dev < 0 || dev >= GS_MAX_DEVICES || sample(dev, probe) == 0)
        return CUDA_SUCCESS;
    if (gs__limit((unsigned)dev) == 0) {
        gs_warn("cannot measure the memory of a CUDA context on device %d through NVML: the "
                "lease's use does not include it",
                (int)dev);
        return CUDA_SUCCESS;
    }
    gs_error("cannot measure the memory of a CUDA context on device %d through NVML "
             "(libnvidia-ml.so.1): refusing the context, which would escape the lease's limit",
             (int)dev);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The bytes the creation took: this process's NVML use when NVML lists it (before and after, or
 * after only: a process is listed once it has a context), else the device's. Never negative. */
static uint64_t measure(const gs__footprint_probe_t *probe, const char **method)
{
    const gs__nvml_t *nvml = gs__nvml();
    uint64_t own = 0, device = 0;
    if (nvml != NULL && own_usage(nvml, probe->nvml, &own) == 1) {
        *method = "this process's memory";
        return own > probe->own ? own - probe->own : 0;
    }
    *method = "the device's memory";
    if (nvml == NULL || device_usage(nvml, probe->nvml, &device) != 0)
        return 0;
    return device > probe->device ? device - probe->device : 0;
}

/* Merges a second measurement of the same context into its entry: the entry keeps the larger,
 * and *bytes becomes the charge to give back (the smaller). */
static int keep_larger(gs__alloc_t *entry, void *arg)
{
    uint64_t *bytes = arg;
    if (*bytes > entry->bytes) {
        uint64_t old = entry->bytes;
        entry->bytes = *bytes;
        *bytes = old;
    }
    return 0;
}

CUresult gs__footprint_commit(const gs__footprint_probe_t *probe, CUcontext ctx)
{
    if (probe->dev < 0)
        return CUDA_SUCCESS;
    const char *method = "";
    uint64_t bytes = measure(probe, &method);
    if (gs_log_enabled(GS_LOG_INFO)) {
        char size[32];
        gs_qty_format_human(bytes, size, sizeof(size));
        gs_info("a CUDA context on device %d took %s (NVML, %s)", probe->dev, size, method);
    }
    if (bytes == 0)
        return CUDA_SUCCESS;
    gs__charge_t charge;
    if (gs__charge_begin(probe->dev, bytes, "a CUDA context's own memory", &charge) != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t back = bytes;
    if (charge.active && gs__track_update(GS_KIND_CONTEXT, (uint64_t)(uintptr_t)ctx, keep_larger,
                                          &back, NULL) == 0) {
        /* Another thread measured this context's creation too (a primary context retained
         * by two at once): one charge stays, the larger. */
        charge.bytes = back;
        gs__charge_abort(&charge);
        return CUDA_SUCCESS;
    }
    gs__charge_commit(&charge, GS_KIND_CONTEXT, (uint64_t)(uintptr_t)ctx);
    return CUDA_SUCCESS;
}

void gs__footprint_end(CUcontext ctx)
{
    gs__alloc_t alloc;
    if (gs__accounting() && ctx != NULL &&
        gs__track_remove(GS_KIND_CONTEXT, (uint64_t)(uintptr_t)ctx, &alloc) == 0)
        gs__uncharge(&alloc);
}
