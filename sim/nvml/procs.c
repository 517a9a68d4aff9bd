/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: the running-process lists (compute, MPS, graphics; every version) and
 * process names.
 *
 * Versions differ only in the record the caller's array holds (nvml.h, NVML 13.0):
 *   v1  nvmlProcessInfo_v1_t {pid, usedGpuMemory}                                16 bytes
 *   v2  nvmlProcessInfo_v2_t {pid, usedGpuMemory, gpuInstanceId, computeInstanceId} 24 bytes
 *   v3  nvmlProcessInfo_t, the same 24-byte record as v2
 * A record is written in the caller's size, never more. Pids are as the caller's PID namespace
 * sees them, and processes it cannot see are left out (pidns.c), as NVIDIA's driver does.
 * The compute lists show every process with memory or kernels on the device; the MPS list the
 * MPS clients among them; no simulated process has a graphics context. */
#include "nvml_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#define NO_INSTANCE 0xFFFFFFFFu

typedef enum list_kind { LIST_COMPUTE, LIST_MPS, LIST_GRAPHICS } list_kind_t;

typedef struct pid_search {
    int32_t key;
    int found;
} pid_search_t;

static void match_key(const gsim_interval_t *iv, void *arg)
{
    pid_search_t *s = arg;
    s->found |= iv->pid == s->key;
}

static int ran_on(const gsim_timeline_t *tl, int32_t key)
{
    pid_search_t s = {.key = key, .found = 0};
    gsim_nvml_each_interval(tl, match_key, &s);
    return s.found;
}

/* Does slot i's process belong in the target's list of this kind (lock held)? */
static int process_listed(const nvml_target_t *t, int i, list_kind_t kind)
{
    const gsim_proc_t *proc = &t->node->procs[i];
    if (proc->pid == 0 || kind == LIST_GRAPHICS || (kind == LIST_MPS && proc->mps_pct == 0))
        return 0;
    int on;
    if (t->g != NULL)
        on = (proc->mem[t->dev] > 0 && proc->gi[t->dev] == t->gi) ||
             ran_on(&t->g->timeline, proc->pid);
    else
        on = proc->mem[t->dev] > 0 || proc->busy_ns[t->dev] > 0 ||
             ran_on(&t->d->timeline, proc->pid);
    return on && gsim_nvml_visible_pid(t->node, i) != 0;
}

/* The GPU and compute instance ids of a process on a MIG-enabled GPU. gpusim does not record a
 * process's CI: it reports the first CI of the GI. */
static void instance_ids(const nvml_target_t *t, const gsim_proc_t *proc, nvmlProcessInfo_t *info)
{
    info->gpuInstanceId = NO_INSTANCE;
    info->computeInstanceId = NO_INSTANCE;
    int g = t->g != NULL ? t->gi : proc->gi[t->dev];
    if (!t->d->mig_mode || g < 0 || g >= GSIM_MAX_GI || !t->d->gi[g].in_use)
        return;
    info->gpuInstanceId = t->d->gi[g].id;
    for (int c = 0; c < GSIM_MAX_CI; c++) {
        if (t->d->gi[g].ci[c].in_use) {
            info->computeInstanceId = t->d->gi[g].ci[c].id;
            break;
        }
    }
}

/* A test hook (issue 25): GPUSIM_NVML_NA_PIDS names a file of pids (one per line) whose memory
 * the process lists report as NVML_VALUE_NOT_AVAILABLE, as NVIDIA's driver does where it cannot
 * tell (WDDM, or a process it may not look at). Read at each list. */
typedef struct na_pids {
    unsigned n;
    pid_t pid[64];
} na_pids_t;

static void read_na_pids(na_pids_t *na)
{
    na->n = 0;
    const char *path = getenv("GPUSIM_NVML_NA_PIDS");
    FILE *f = path != NULL && path[0] != '\0' ? fopen(path, "re") : NULL;
    if (f == NULL)
        return;
    long pid;
    while (na->n < 64 && fscanf(f, "%ld", &pid) == 1)
        na->pid[na->n++] = (pid_t)pid;
    fclose(f);
}

static int memory_hidden(const na_pids_t *na, pid_t pid)
{
    for (unsigned i = 0; i < na->n; i++) {
        if (na->pid[i] == pid)
            return 1;
    }
    return 0;
}

/* Writes slot i's record into out, record bytes of it (lock held). */
static void fill_record(const nvml_target_t *t, int i, void *out, size_t record,
                        const na_pids_t *na)
{
    const gsim_proc_t *proc = &t->node->procs[i];
    nvmlProcessInfo_t info;
    memset(&info, 0, sizeof(info));
    info.pid = gsim_nvml_visible_pid(t->node, i);
    info.usedGpuMemory = proc->mem[t->dev];
    if (t->g != NULL && proc->gi[t->dev] != t->gi)
        info.usedGpuMemory = 0;
    if (memory_hidden(na, (pid_t)info.pid))
        info.usedGpuMemory = (unsigned long long)NVML_VALUE_NOT_AVAILABLE;
    instance_ids(t, proc, &info);
    if (record == sizeof(nvmlProcessInfo_v1_t)) {
        nvmlProcessInfo_v1_t v1 = {.pid = info.pid, .usedGpuMemory = info.usedGpuMemory};
        memcpy(out, &v1, sizeof(v1));
    } else {
        memcpy(out, &info, sizeof(info));
    }
}

/* The common body of every list: NVML's count-in/count-out convention. */
static nvmlReturn_t list_processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
                                   size_t record, list_kind_t kind)
{
    nvml_target_t t;
    gsim_node_t *node = gsim_nvml_node();
    if (node != NULL)
        gsim_nvml_pidns_refresh(node);
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && infoCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    gsim_node_reap_locked(t.node);
    unsigned n = 0;
    for (int i = 0; i < GSIM_MAX_PROCS; i++)
        n += (unsigned)process_listed(&t, i, kind);
    if (*infoCount < n) {
        *infoCount = n;
        return gsim_nvml_end(&t, NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (n > 0 && infos == NULL)
        return gsim_nvml_end(&t, NVML_ERROR_INVALID_ARGUMENT);
    unsigned k = 0;
    na_pids_t na;
    read_na_pids(&na);
    for (int i = 0; i < GSIM_MAX_PROCS && k < n; i++) {
        if (process_listed(&t, i, kind))
            fill_record(&t, i, (char *)infos + (size_t)k++ * record, record, &na);
    }
    *infoCount = n;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_COMPUTE);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_COMPUTE);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                              unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_COMPUTE);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_MPS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                    unsigned int *infoCount,
                                                                    nvmlProcessInfo_v2_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_MPS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_v1_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_MPS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_GRAPHICS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                  unsigned int *infoCount,
                                                                  nvmlProcessInfo_v2_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_GRAPHICS);
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                               unsigned int *infoCount,
                                                               nvmlProcessInfo_v1_t *infos)
{
    GSIM_NVML_FAULT_POINT();
    return list_processes(device, infoCount, infos, sizeof(*infos), LIST_GRAPHICS);
}

GS_NVML_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    gsim_node_t *node = gsim_nvml_node();
    if (node != NULL)
        gsim_nvml_pidns_refresh(node);
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && (name == NULL || length == 0))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    /* The name a CUDA process registered with (its comm), as the driver knows its clients; the
     * pid is the caller's view of it. */
    gsim_node_reap_locked(t.node);
    result = NVML_ERROR_NOT_FOUND;
    for (int i = 0; i < GSIM_MAX_PROCS && result == NVML_ERROR_NOT_FOUND; i++) {
        const gsim_proc_t *proc = &t.node->procs[i];
        if (proc->pid != 0 && gsim_nvml_visible_pid(t.node, i) == pid) {
            size_t n = strnlen(proc->name, sizeof(proc->name));
            if (n >= length)
                n = length - 1; /* NVIDIA truncates to the buffer */
            memcpy(name, proc->name, n);
            name[n] = '\0';
            result = NVML_SUCCESS;
        }
    }
    return gsim_nvml_end(&t, result);
}
