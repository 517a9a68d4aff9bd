/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: utilization and per-process utilization samples (procs.c: the lists).
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
    GSIM_NVML_FAULT_POINT();
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

void gsim_nvml_each_interval(const gsim_timeline_t *tl, void (*fn)(const gsim_interval_t *, void *),
                             void *arg)
{
    for (uint32_t i = 0; i < tl->history_count && i < GSIM_HISTORY; i++)
        fn(&tl->history[i], arg);
    for (uint32_t i = 0; i < tl->n_reserved && i < GSIM_MAX_RESERVATIONS; i++)
        fn(&tl->reserved[i], arg);
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
static unsigned collect_samples(const gsim_node_t *node, gsim_timeline_t *tl,
                                unsigned long long last_seen,
                                nvmlProcessUtilizationSample_t *samples, unsigned max)
{
    activity_scan_t scan;
    scan.now = gsim_now_ns();
    scan.n = 0;
    gsim_nvml_each_interval(tl, note_activity, &scan);
    unsigned n = 0;
    for (size_t i = 0; i < scan.n; i++) {
        unsigned long long stamp = realtime_us(scan.pids[i].last_ns);
        int slot = gsim_nvml_slot_of_key(node, scan.pids[i].pid);
        uint32_t pid = slot >= 0 ? gsim_nvml_visible_pid(node, slot) : 0;
        if (stamp <= last_seen || pid == 0)
            continue; /* gone, or in a PID namespace the caller cannot see */
        if (n < max && samples != NULL) {
            int64_t pending = gsim_timeline_pending_ns(
                tl, scan.pids[i].pid, scan.pids[i].last_ns - SECOND_NS, scan.pids[i].last_ns);
            memset(&samples[n], 0, sizeof(samples[n]));
            samples[n].pid = pid;
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
    GSIM_NVML_FAULT_POINT();
    nvml_target_t t;
    gsim_node_t *node = gsim_nvml_node();
    if (node != NULL)
        gsim_nvml_pidns_refresh(node);
    nvmlReturn_t result = gsim_nvml_begin_device(device, &t);
    if (result == NVML_SUCCESS && processSamplesCount == NULL)
        result = NVML_ERROR_INVALID_ARGUMENT;
    if (result == NVML_SUCCESS && (t.g != NULL || t.d->mig_mode))
        result = NVML_ERROR_NOT_SUPPORTED;
    if (result != NVML_SUCCESS)
        return gsim_nvml_end(&t, result);
    unsigned max = utilization != NULL ? *processSamplesCount : 0;
    unsigned n = collect_samples(t.node, &t.d->timeline, lastSeenTimeStamp, utilization, max);
    if (n == 0)
        result = NVML_ERROR_NOT_FOUND;
    else if (n > max)
        result = NVML_ERROR_INSUFFICIENT_SIZE;
    *processSamplesCount = n;
    return gsim_nvml_end(&t, result);
}
