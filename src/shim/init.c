/* SPDX-License-Identifier: Apache-2.0 */
/* Shim start-up: the lease configuration from GPUSHARE_* variables, the driver, the region. */
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/quantity.h"

typedef struct shim_state {
    CUresult init_result;
    int accounting; /* a limit or a region is in force */
    gs_region_t *region;
    int slot;                 /* this process's record in the region, -1 when none */
    int reattach;             /* set in a forked child: the parent's record is not ours */
    gs_device_bytes_t limits; /* from GPUSHARE_MEMORY_LIMIT */
    int has_limits;
    void *driver; /* libcuda.so.1, when its functions were resolved at load time */
} shim_state_t;

static shim_state_t state = {.init_result = CUDA_SUCCESS, .slot = -1};
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t attach_mutex = PTHREAD_MUTEX_INITIALIZER;

static CUresult fail_closed(const char *variable, const char *value, const char *why)
{
    gs_error("%s=\"%s\" is invalid: %s; refusing to run without the lease's limits", variable,
             value, why);
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult read_log_level(void)
{
    const char *text = getenv("GPUSHARE_LOG");
    enum gs_log_level level = GS_LOG_ERROR;
    int bad = text != NULL && *text != '\0' && gs_log_level_parse(text, &level) != 0;
    gs_log_init("gpushare", level);
    if (bad)
        return fail_closed("GPUSHARE_LOG", text, "expected error, warn, info or debug");
    return CUDA_SUCCESS;
}

static CUresult read_limits(void)
{
    char err[GS_QTY_ERR_MAX];
    const char *limit = getenv("GPUSHARE_MEMORY_LIMIT");
    if (limit != NULL && *limit != '\0') {
        if (gs_qty_parse_device_bytes(limit, 0, &state.limits, err, sizeof(err)) != 0)
            return fail_closed("GPUSHARE_MEMORY_LIMIT", limit, err);
        state.has_limits = 1;
    }
    return CUDA_SUCCESS;
}

static gs_region_config_t region_config(void)
{
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
        cfg.limit[d] = gs_device_bytes_get(&state.limits, d);
    return cfg;
}

/* Warns when the region (made by the daemon or the first process) disagrees with our limits:
 * the region is the lease's budget and wins. */
static void check_region_limits(void)
{
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        uint64_t mine = gs_device_bytes_get(&state.limits, d);
        uint64_t theirs = gs_region_limit(state.region, d);
        if (state.has_limits && mine != theirs) {
            gs_warn("GPUSHARE_MEMORY_LIMIT differs from the region's limit on device %u "
                    "(%llu vs %llu bytes); the region's applies",
                    d, (unsigned long long)mine, (unsigned long long)theirs);
            return;
        }
    }
}

/* Opens the region GPUSHARE_REGION names: a lease's of gpushared (asked for over its socket)
 * or a file (created with our limits when it does not exist and they are given). */
static CUresult open_named_region(const char *path)
{
    int result;
    if (strncmp(path, "gpushared:", 10) == 0) {
        char err[256];
        result = gs_region_join(path, &state.region, err, sizeof(err));
        if (result != 0)
            return fail_closed("GPUSHARE_REGION", path, err);
    } else {
        gs_region_config_t cfg = region_config();
        result = state.has_limits ? gs_region_open_or_create(path, &cfg, &state.region, NULL)
                                  : gs_region_open(path, &state.region);
        if (result == GS_ENOENT && !state.has_limits)
            return fail_closed("GPUSHARE_REGION", path,
                               "no such region and no GPUSHARE_MEMORY_LIMIT to create it");
        if (result != 0)
            return fail_closed("GPUSHARE_REGION", path, gs_strerror(result));
    }
    /* A region is recycled for its user's next lease: a process of an ended lease must not join
     * the next one. */
    const char *lease = getenv("GPUSHARE_LEASE_ID");
    const char *owner = gs_region_lease_id(state.region);
    if (lease != NULL && *lease != '\0' && *owner != '\0' && strcmp(lease, owner) != 0)
        return fail_closed("GPUSHARE_LEASE_ID", lease,
                           "the region now belongs to another lease (this one has ended)");
    check_region_limits();
    return CUDA_SUCCESS;
}

static CUresult open_region(void)
{
    const char *path = getenv("GPUSHARE_REGION");
    int result;
    if (path != NULL && *path != '\0') {
        CUresult opened = open_named_region(path);
        if (opened != CUDA_SUCCESS)
            return opened;
    } else if (state.has_limits) {
        gs_region_config_t cfg = region_config();
        result = gs_region_create_private(&cfg, &state.region);
        if (result != 0) {
            gs_error("cannot create a private accounting region: %s", gs_strerror(result));
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else {
        return CUDA_SUCCESS; /* no lease: pass everything through */
    }
    result = gs_region_attach(state.region, &state.slot);
    if (result != 0) {
        gs_error("cannot join the lease region: %s", gs_strerror(result));
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    state.accounting = 1;
    return CUDA_SUCCESS;
}

static void *load_driver(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
    return handle;
}

static void after_fork_in_child(void)
{
    gs_region_after_fork(state.region);
    gs__track_after_fork();
    gs__compute_after_fork();
    state.reattach = state.accounting;
}

static void initialize(void)
{
    CUresult result = read_log_level();
    if (result == CUDA_SUCCESS)
        result = read_limits();
    if (result == CUDA_SUCCESS)
        result = open_region();
    if (result == CUDA_SUCCESS)
        result =
            gs__compute_config(state.region != NULL ? gs_region_compute_share(state.region) : 0);
    /* The driver is loaded even when the lease is misconfigured, so lookups keep working and
     * every call returns the configuration error rather than crashing. */
    void *driver = state.driver != NULL ? state.driver : load_driver();
    if (driver != NULL) {
        if (state.driver == NULL)
            gs__resolve_driver(driver);
    } else {
        gs_error("cannot load the CUDA driver libcuda.so.1: %s", dlerror());
        if (result == CUDA_SUCCESS)
            result = CUDA_ERROR_NO_DEVICE;
    }
    state.init_result = result;
    pthread_atfork(NULL, NULL, after_fork_in_child);
    if (result == CUDA_SUCCESS && state.accounting)
        gs_info("lease active: limit %llu bytes on device 0, region slot %d",
                (unsigned long long)gs_region_limit(state.region, 0), state.slot);
}

CUresult gs__ensure_init(void)
{
    pthread_once(&init_once, initialize);
    return __atomic_load_n(&state.init_result, __ATOMIC_ACQUIRE);
}

int gs__accounting(void)
{
    return state.accounting;
}

gs_region_t *gs__region(void)
{
    return state.region;
}

int gs__slot(void)
{
    if (__builtin_expect(state.reattach, 0)) {
        pthread_mutex_lock(&attach_mutex);
        if (state.reattach) {
            int slot = -1;
            if (gs_region_attach(state.region, &slot) != 0)
                gs_error("forked child cannot join the lease region; its allocations are "
                         "refused");
            state.slot = slot;
            state.reattach = 0;
        }
        pthread_mutex_unlock(&attach_mutex);
    }
    return state.slot;
}

uint64_t gs__limit(unsigned dev)
{
    return state.region != NULL ? gs_region_limit(state.region, dev) : 0;
}

/* An application linked with the driver has it loaded before the shim's constructor runs: its
 * functions are then resolved here, at start-up, rather than inside the first CUDA call. This
 * touches nothing of the lease (a process that never uses CUDA never joins it). */
__attribute__((constructor)) static void resolve_early(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver != NULL) {
        gs__resolve_driver(driver);
        state.driver = driver;
    }
}

/* At normal exit the driver frees the process's memory: give the charge back at once rather
 * than waiting for someone to notice the process is gone. */
__attribute__((destructor)) static void leave_region(void)
{
    gs__compute_exit();
    if (state.region != NULL && state.slot >= 0 && !state.reattach) {
        int slot = state.slot;
        state.slot = -1;
        gs_region_detach(state.region, slot);
    }
}

GS_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    result = real->cuInit != NULL ? real->cuInit(Flags) : CUDA_ERROR_NOT_SUPPORTED;
    if (result == CUDA_SUCCESS) {
        result = gs__compute_setup();
        /* A share that cannot be enforced: every later call fails too (fail closed). */
        if (result != CUDA_SUCCESS)
            __atomic_store_n(&state.init_result, result, __ATOMIC_RELEASE);
    }
    return result;
}
