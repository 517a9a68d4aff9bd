/* Compute shares: a lease with GPUSHARE_COMPUTE_SHARE below 100 gets that share of its GPU.
 *
 * One process of the lease (the controller, elected in the region) measures the lease's SM
 * utilization through NVML (nvmlDeviceGetProcessUtilization, summed over the lease's processes)
 * and sets a pause that every process of the lease makes before each kernel launch. The pause is
 * derived from a model of the launch loop: at pause d the lease keeps the GPU busy
 * U = k / (k + d) of the time for kernels of length k, so k = U d / (1 - U) and the pause for
 * share S is d' = k (1 - S) / S. It is recomputed once per NVML sample window, so it settles in
 * a few seconds and follows changes of the workload. Works with NVIDIA's NVML and gpusim's. */
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/log.h"
#include "gpushare/nvml_abi.h"

#define PERIOD_MS    1200             /* longer than NVML's (and gpusim's) 1 s window */
#define PROBE_NS     INT64_C(1000000) /* first pause when the share is exceeded */
#define MAX_PAUSE_NS INT64_C(2000000000)
#define MAX_SAMPLES  256

typedef struct nvml_api {
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlDeviceGetHandleByUUID) by_uuid;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetProcessUtilization) process_utilization;
} nvml_api_t;

static int compute_active; /* set once at start-up, read on every launch */
static uint32_t compute_share;
static pid_t controller_pid; /* the process whose controller thread runs (0 = none yet) */

static void pause_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
        ;
}

static int load_nvml(nvml_api_t *api)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
    if (lib == NULL)
        return -1;
    api->init = (__typeof__(api->init))gs__real_dlsym(lib, "nvmlInit_v2");
    api->by_uuid = (__typeof__(api->by_uuid))gs__real_dlsym(lib, "nvmlDeviceGetHandleByUUID");
    api->by_index = (__typeof__(api->by_index))gs__real_dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    api->process_utilization = (__typeof__(api->process_utilization))gs__real_dlsym(
        lib, "nvmlDeviceGetProcessUtilization");
    if (api->init == NULL || api->by_uuid == NULL || api->by_index == NULL ||
        api->process_utilization == NULL || api->init() != NVML_SUCCESS)
        return -1;
    return 0;
}

/* The NVML handle of the lease's first GPU (CUDA ordinal 0): the first CUDA_VISIBLE_DEVICES
 * entry (a UUID, as gpushare sets, or an index), else GPU 0. */
static int lease_device(const nvml_api_t *api, nvmlDevice_t *device)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char first[128] = "0";
    if (visible != NULL && *visible != '\0') {
        size_t len = strcspn(visible, ",");
        snprintf(first, sizeof(first), "%.*s", (int)(len < 127 ? len : 127), visible);
    }
    if (first[0] >= '0' && first[0] <= '9')
        return api->by_index((unsigned)strtoul(first, NULL, 10), device) == NVML_SUCCESS ? 0 : -1;
    return api->by_uuid(first, device) == NVML_SUCCESS ? 0 : -1;
}

/* The lease's SM utilization in percent: the latest sample of each of its processes. */
static unsigned lease_utilization(const nvml_api_t *api, nvmlDevice_t device,
                                  unsigned long long *last_seen)
{
    static nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
    static gs_region_process_t procs[GS_REGION_MAX_PROCS];
    unsigned n = MAX_SAMPLES;
    nvmlReturn_t result = api->process_utilization(device, samples, &n, *last_seen);
    if (result != NVML_SUCCESS)
        return 0;
    int n_procs = gs_region_processes(gs__region(), procs, GS_REGION_MAX_PROCS);
    unsigned total = 0;
    for (unsigned i = 0; i < n; i++) {
        if (samples[i].timeStamp > *last_seen)
            *last_seen = samples[i].timeStamp;
        for (int p = 0; p < n_procs; p++) {
            if ((unsigned)procs[p].pid == samples[i].pid) {
                total += samples[i].smUtil;
                break;
            }
        }
    }
    return total > 100 ? 100 : total;
}

/* The next pause from the pause in force and the utilization it produced. */
static uint64_t next_pause(uint64_t pause, unsigned used, unsigned share)
{
    if (used <= share + 1 && (pause == 0 || used + 5 >= share))
        return pause; /* within the share, and not far below it */
    if (pause == 0)
        return PROBE_NS;
    double u = (used > 99 ? 99 : (used < 1 ? 1 : used)) / 100.0;
    double s = share / 100.0;
    double kernel = u * (double)pause / (1.0 - u);
    double wanted = kernel * (1.0 - s) / s;
    if (used < 2 || wanted < 1000.0)
        return 0; /* the lease went idle or barely needs pausing */
    return wanted > (double)MAX_PAUSE_NS ? (uint64_t)MAX_PAUSE_NS : (uint64_t)wanted;
}

static void *controller(void *arg)
{
    (void)arg;
    nvml_api_t api;
    nvmlDevice_t device;
    if (load_nvml(&api) != 0 || lease_device(&api, &device) != 0) {
        gs_warn("compute share %u%% cannot be enforced: NVML or the lease's GPU is unavailable",
                compute_share);
        return NULL;
    }
    unsigned long long last_seen = 0;
    for (;;) {
        pause_ns((uint64_t)PERIOD_MS * 1000000);
        if (!gs_region_claim_controller(gs__region()))
            continue; /* another process of the lease controls it */
        unsigned used = lease_utilization(&api, device, &last_seen);
        uint64_t pause = gs_region_throttle(gs__region());
        gs_debug("compute share %u%%: lease at %u%%", compute_share, used);
        uint64_t next = next_pause(pause, used, compute_share);
        if (next != pause) {
            gs_info("compute share %u%%: lease at %u%%, launch pause %llu us", compute_share, used,
                    (unsigned long long)(next / 1000));
            gs_region_set_throttle(gs__region(), next);
        }
    }
    return NULL;
}

/* Starts this process's controller thread (once per process, also in a forked child). */
static void start_controller(void)
{
    pid_t self = getpid();
    if (__atomic_load_n(&controller_pid, __ATOMIC_ACQUIRE) == self)
        return;
    pid_t seen = __atomic_load_n(&controller_pid, __ATOMIC_ACQUIRE);
    if (!__atomic_compare_exchange_n(&controller_pid, &seen, self, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, controller, NULL) != 0)
        gs_warn("compute share %u%%: cannot start its controller thread", compute_share);
    pthread_attr_destroy(&attr);
}

void gs__compute_init(uint32_t share)
{
    compute_share = share;
    compute_active = share > 0 && share < 100 && gs__region() != NULL;
}

void gs__compute_before_launch(void)
{
    if (__builtin_expect(!compute_active, 1))
        return;
    start_controller();
    uint64_t pause = gs_region_throttle(gs__region());
    if (pause != 0)
        pause_ns(pause);
}
