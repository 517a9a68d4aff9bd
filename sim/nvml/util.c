/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: utilization, running processes and per-process utilization samples.
 *
 * Utilization comes from the device timeline (the kernel intervals every CUDA process reserves):
 * gpu is the fraction of the sample period during which some kernel ran. The sample period is
 * the time since this process's previous call for the device, clamped to [1/6 s, 1 s] (NVIDIA's
 * documented range), and 1 s on the first call. memory utilization is not modelled by the
 * simulator and is reported as half the gpu figure. MIG-enabled GPUs report
 * NVML_ERROR_NOT_SUPPORTED for both calls, as NVIDIA's driver does. */
#include "nvml_internal.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define SECOND_NS     INT64_C(1000000000)
#define MIN_PERIOD_NS (SECOND_NS / 6)
#define NO_INSTANCE   0xFFFFFFFFu

typedef struct sample_clock {
    pthread_mutex_t mutex;
    int64_t last_ns[GSIM_MAX_DEVICES]; /* previous nvmlDeviceGetUtilizationRates per device */
} sample_clock_t;

static sample_clock_t sample_clock = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static int64_t clock_offset_us; /* CLOCK_REALTIME - CLOCK_MONOTONIC, set once */

static void take_clock_offset(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t real_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    clock_offset_us = real_us - gsim_now_ns() / 1000;
}

/* Returns the sample period ending at now for dev and starts the next one. */
static int64_t sample_period(int dev, int64_t now)
{
    pthread_mutex_lock(&sample_clock.mutex);
    int64_t last = sample_clock.last_ns[dev];
    int64_t period = last == 0 ? SECOND_NS : now - last;
    if (period > SECOND_NS)
        period = SECOND_NS;
    if (period < MIN_PERIOD_NS)
        period = MIN_PERIOD_NS;
    sample_clock.last_ns[dev] = now;
    pthread_mutex_unlock(&sample_clock.mutex);
    return period;
}

static unsigned percent(int64_t part, int64_t whole)
{
    if (whole <= 0 || part <= 0)
        return 0;
    int64_t pct = (part * 100 + whole / 2) / whole;
    return pct > 100 ? 100u : (unsigned)pct;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                       nvmlUtilization_t *utilization)
{
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && utilization == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && (t.g != NULL || t.d->mig_mode))
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result == NVML_SUCCESS) {
        int64_t now = gsim_now_ns();
        int64_t period = sample_period(t.dev, now);
        int64_t busy = gsim_timeline_busy_ns(&t.d->timeline, 0, now - period, now);
        utilization->gpu = percent(busy, period);
        utilization->memory = utilization->gpu / 2;
    }
    return gsim_nvml_end(&t, result);
}

/* Calls fn(interval, arg) for every interval (past and reserved) of a timeline. */
static void each_interval(const gsim_timeline_t *tl, void (*fn)(const gsim_interval_t *, void *),
                          void *arg)
{
    for (uint32_t i = 0; i < tl->history_count && i < GSIM_HISTORY; i++)
        fn(&tl->history[i], arg);
    for (uint32_t i = 0; i < tl->n_reserved && i < GSIM_MAX_RESERVATIONS; i++)
        fn(&tl->reserved[i], arg);
}

typedef struct pid_search {
    int32_t pid;
    int found;
} pid_search_t;

static void match_pid(const gsim_interval_t *iv, void *arg)
{
    pid_search_t *s = arg;
    s->found |= iv->pid == s->pid;
}

static int ran_on(const gsim_timeline_t *tl, int32_t pid)
{
    pid_search_t s = {.pid = pid, .found = 0};
    each_interval(tl, match_pid, &s);
    return s.found;
}

/* Does the process belong in the process list of the target (a GPU or a MIG device)? */
static int process_listed(const nvml_target_t *t, const gsim_proc_t *proc)
{
    if (proc->pid == 0)
        return 0;
    if (t->g != NULL)
        return (proc->mem[t->dev] > 0 && proc->gi[t->dev] == t->gi) ||
               ran_on(&t->g->timeline, proc->pid);
    return proc->mem[t->dev] > 0 || proc->busy_ns[t->dev] > 0 || ran_on(&t->d->timeline, proc->pid);
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

GS_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos)
{
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && infoCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    gsim_node_reap_locked(t.node);
    unsigned n = 0;
    for (int i = 0; i < GSIM_MAX_PROCS; i++)
        n += (unsigned)process_listed(&t, &t.node->procs[i]);
    if (*infoCount < n) {
        *infoCount = n;
        return gsim_nvml_end(&t, NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (n > 0 && infos == NULL)
        return gsim_nvml_end(&t, NVML_ERROR_INVALID_ARGUMENT);
    unsigned k = 0;
    for (int i = 0; i < GSIM_MAX_PROCS && k < n; i++) {
        const gsim_proc_t *proc = &t.node->procs[i];
        if (!process_listed(&t, proc))
            continue;
        memset(&infos[k], 0, sizeof(infos[k]));
        infos[k].pid = (unsigned)proc->pid;
        infos[k].usedGpuMemory = proc->mem[t.dev];
        if (t.g != NULL && proc->gi[t.dev] != t.gi)
            infos[k].usedGpuMemory = 0;
        instance_ids(&t, proc, &infos[k]);
        k++;
    }
    *infoCount = n;
    return gsim_nvml_end(&t, NVML_SUCCESS);
}

/* ---- per-process utilization samples ---- */

#define MAX_SAMPLE_PIDS (GSIM_HISTORY + GSIM_MAX_RESERVATIONS)

typedef struct pid_activity {
    int32_t pid;
    int64_t last_ns; /* end of its last interval that has started, clipped to now */
} pid_activity_t;

typedef struct activity_scan {
    int64_t now;
    size_t n;
    pid_activity_t pids[MAX_SAMPLE_PIDS];
} activity_scan_t;

static void note_activity(const gsim_interval_t *iv, void *arg)
{
    activity_scan_t *scan = arg;
    if (iv->start_ns > scan->now || iv->end_ns <= iv->start_ns)
        return;
    int64_t end = iv->end_ns < scan->now ? iv->end_ns : scan->now;
    for (size_t i = 0; i < scan->n; i++) {
        if (scan->pids[i].pid == iv->pid) {
            if (end > scan->pids[i].last_ns)
                scan->pids[i].last_ns = end;
            return;
        }
    }
    if (scan->n < MAX_SAMPLE_PIDS)
        scan->pids[scan->n++] = (pid_activity_t){.pid = iv->pid, .last_ns = end};
}

/* CLOCK_REALTIME microseconds of the monotonic instant t, as NVML's CPU timestamps. The offset
 * between the clocks is taken once per process, so the same instant always gets the same stamp
 * (callers compare stamps with lastSeenTimeStamp). */
static unsigned long long realtime_us(int64_t t)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, take_clock_offset);
    return (unsigned long long)(t / 1000 + clock_offset_us);
}

/* Fills samples (up to max; all are counted) of the processes whose latest activity is newer
 * than last_seen, one per process. Its smUtil is, as NVIDIA's driver reports it on an H100, the
 * part of the second before the sample during which the process had work on the GPU (launched
 * and not complete, whether running or waiting for its time slice): 90-100 for a saturating
 * process whatever else runs, not its share of the GPU's time. */
static unsigned collect_samples(gsim_timeline_t *tl, unsigned long long last_seen,
                                nvmlProcessUtilizationSample_t *samples, unsigned max)
{
    activity_scan_t scan;
    scan.now = gsim_now_ns();
    scan.n = 0;
    each_interval(tl, note_activity, &scan);
    unsigned n = 0;
    for (size_t i = 0; i < scan.n; i++) {
        unsigned long long stamp = realtime_us(scan.pids[i].last_ns);
        if (stamp <= last_seen)
            continue;
        if (n < max && samples != NULL) {
            int64_t pending = gsim_timeline_pending_ns(
                tl, scan.pids[i].pid, scan.pids[i].last_ns - SECOND_NS, scan.pids[i].last_ns);
            memset(&samples[n], 0, sizeof(samples[n]));
            samples[n].pid = (unsigned)scan.pids[i].pid;
            samples[n].timeStamp = stamp;
            samples[n].smUtil = percent(pending, SECOND_NS);
            samples[n].memUtil = samples[n].smUtil / 2;
        }
        n++;
    }
    return n;
}

GS_NVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
    unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && processSamplesCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && (t.g != NULL || t.d->mig_mode))
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    unsigned max = utilization != NULL ? *processSamplesCount : 0;
    unsigned n = collect_samples(&t.d->timeline, lastSeenTimeStamp, utilization, max);
    if (n == 0)
        result = NVML_ERROR_NOT_FOUND;
    else if (n > max)
        result = NVML_ERROR_INSUFFICIENT_SIZE;
    *processSamplesCount = n;
    return gsim_nvml_end(&t, result);
}

GS_NVML_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    nvml_target_t t;
    nvmlReturn_t result = gsim_nvml_begin_node(&t);
    if (result == NVML_SUCCESS && (name == NULL || length == 0))
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    /* The name a CUDA process registered with (its comm), as the driver knows its clients. */
    gsim_node_reap_locked(t.node);
    result = NVML_ERROR_NOT_FOUND;
    for (int i = 0; i < GSIM_MAX_PROCS && result == NVML_ERROR_NOT_FOUND; i++) {
        const gsim_proc_t *proc = &t.node->procs[i];
        if (proc->pid != 0 && (unsigned)proc->pid == pid) {
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
