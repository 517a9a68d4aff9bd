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
 * measure (no NVML): they would escape the limit.
 *
 * Measured once per process and device: the process's first context on a device, made while
 * no other creation of the process is in progress there, is measured exactly by the per-process
 * method (the process had no memory on the device before it, so its own use before needs no
 * sample, and nothing of it could be freed there meanwhile; memory of a context made around the
 * shim would be charged too: over, never under). Contexts of one kind (a primary context with
 * its flags, or cuCtxCreate with its flags and no parameters) on one GPU take the same memory,
 * so that figure is remembered and later contexts of its kind in the process are charged from
 * it without NVML; other kinds are measured each time. The figure is also left in the lease's
 * region (gs_region_set_footprint), keyed by the GPU's UUID, the kind, the driver's version and
 * the process's CUDA_* environment, where the lease's later processes find it and charge their
 * first context from it too. NVML is loaded and initialised only when something must be
 * measured. State: memo, below, behind memo_mutex (never held around a driver
 * or NVML call); a forked child keeps its parent's figures (the same devices and driver). */
#include "shim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/log.h"
#include "gpushare/quantity.h"
#include "gpushare/region.h"

extern char **environ;

#define PROCESS_LIST_MAX 4096
#define MEMO_KINDS       4 /* kinds of context remembered per device */

typedef struct memo_dev {
    uint64_t kind[MEMO_KINDS];
    uint64_t bytes[MEMO_KINDS]; /* 0 = the entry is free */
    uint64_t begun;             /* creations begun on the device in this process */
    unsigned active;            /* creations begun and not yet committed or aborted */
    int seen;                   /* a creation was begun on the device before */
} memo_dev_t;

static memo_dev_t memo[GS_MAX_DEVICES];
static pthread_mutex_t memo_mutex = PTHREAD_MUTEX_INITIALIZER;

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
    probe->own = 0;
    probe->own_listed = probe->first ? 0 : own_usage(nvml, probe->nvml, &probe->own) == 1;
    probe->dev = dev;
    return 0;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}

/* The key of a context of kind on dev among the lease's processes: the GPU (its UUID), the
 * kind, the driver's version and the CUDA_* environment (in any order). 0 when unknown. */
static uint64_t lease_key(CUdevice dev, uint64_t kind)
{
    const gs__real_t *real = gs__real();
    CUuuid u;
    int version = 0;
    if (real->cuDeviceGetUuid_v2 == NULL || real->cuDeviceGetUuid_v2(&u, dev) != CUDA_SUCCESS ||
        real->cuDriverGetVersion == NULL || real->cuDriverGetVersion(&version) != CUDA_SUCCESS)
        return 0;
    const uint64_t basis = UINT64_C(14695981039346656037);
    uint64_t h = fnv(fnv(fnv(basis, u.bytes, sizeof(u.bytes)), &kind, sizeof(kind)), &version,
                     sizeof(version));
    uint64_t env = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "CUDA_", 5) == 0)
            env += fnv(basis, *e, strlen(*e));
    }
    h = fnv(h, &env, sizeof(env));
    return h != 0 ? h : 1;
}

/* Registers a creation on dev in memo: whether it is the first and alone, and the figure of
 * its kind when this process has one (probe->known). */
static void memo_begin(CUdevice dev, gs__footprint_probe_t *probe)
{
    memo_dev_t *m = &memo[dev];
    pthread_mutex_lock(&memo_mutex);
    probe->first = m->active == 0 && !m->seen;
    probe->known = 0;
    for (int i = 0; i < MEMO_KINDS && probe->kind != GS_FOOTPRINT_OWN; i++) {
        if (m->bytes[i] != 0 && m->kind[i] == probe->kind) {
            probe->known = 1;
            probe->bytes = m->bytes[i];
        }
    }
    m->seen = 1;
    m->active++;
    probe->epoch = ++m->begun;
    pthread_mutex_unlock(&memo_mutex);
    probe->key = probe->kind != GS_FOOTPRINT_OWN ? lease_key(dev, probe->kind) : 0;
    if (!probe->known && probe->key != 0 && gs__region() != NULL) {
        probe->bytes = gs_region_footprint(gs__region(), probe->key);
        probe->known = probe->bytes != 0 ? 2 : 0;
    }
}

/* Ends a creation registered by memo_begin; remember nonzero keeps bytes as its kind's figure
 * when it was the device's first creation and no other began meanwhile. */
static void memo_end(const gs__footprint_probe_t *probe, int remember, uint64_t bytes)
{
    memo_dev_t *m = &memo[probe->dev];
    pthread_mutex_lock(&memo_mutex);
    m->active--;
    int free_entry = -1;
    for (int i = 0; i < MEMO_KINDS && free_entry < 0; i++)
        free_entry = m->bytes[i] == 0 || m->kind[i] == probe->kind ? i : -1;
    if (remember && bytes != 0 && probe->first && m->begun == probe->epoch && free_entry >= 0 &&
        probe->kind != GS_FOOTPRINT_OWN) {
        m->kind[free_entry] = probe->kind;
        m->bytes[free_entry] = bytes;
        remember = 2; /* and the lease's later processes */
    }
    pthread_mutex_unlock(&memo_mutex);
    if (remember == 2 && probe->key != 0 && gs__region() != NULL)
        gs_region_set_footprint(gs__region(), probe->key, bytes);
}

CUresult gs__footprint_begin(CUdevice dev, uint64_t kind, gs__footprint_probe_t *probe)
{
    probe->dev = -1;
    if (!gs__accounting() || dev < 0 || dev >= GS_MAX_DEVICES)
        return CUDA_SUCCESS;
    probe->kind = kind;
    memo_begin(dev, probe);
    probe->dev = dev;
    if (probe->known || sample(dev, probe) == 0)
        return CUDA_SUCCESS;
    gs__footprint_abort(probe);
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

void gs__footprint_abort(gs__footprint_probe_t *probe)
{
    if (probe->dev >= 0)
        memo_end(probe, 0, 0);
    probe->dev = -1;
}

/* The bytes the creation took: this process's NVML use when NVML lists it (before and after, or
 * after only: a process is listed once it has a context), else the device's. Never negative.
 * *own_method is set when the figure is this process's own. */
static uint64_t measure(const gs__footprint_probe_t *probe, const char **method, int *own_method)
{
    *own_method = 0;
    if (probe->known) {
        *method = probe->known == 1 ? "measured for an earlier context of this process"
                                    : "measured by an earlier process of the lease";
        return probe->bytes;
    }
    const gs__nvml_t *nvml = gs__nvml();
    uint64_t own = 0, device = 0;
    if (nvml != NULL && own_usage(nvml, probe->nvml, &own) == 1) {
        *method = "this process's memory";
        *own_method = 1;
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

CUresult gs__footprint_commit(gs__footprint_probe_t *probe, CUcontext ctx)
{
    if (probe->dev < 0)
        return CUDA_SUCCESS;
    const char *method = "";
    int own_method = 0;
    uint64_t bytes = measure(probe, &method, &own_method);
    memo_end(probe, own_method, bytes);
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
