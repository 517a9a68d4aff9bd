/* SPDX-License-Identifier: Apache-2.0 */
/* Driver initialisation: cuInit, cuDriverGetVersion, and the process-wide driver state. */
#include "cuda_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { STATE_NONE = 0, STATE_READY, STATE_FAILED };

typedef struct driver {
    pthread_mutex_t mu;
    _Atomic int state;
    _Atomic int forked; /* this process was forked from one that had initialised */
    CUresult failure;
    gsim_node_t *node;
    int n_devices;
    gsim_cu_device_t devices[GSIM_MAX_DEVICES];
    int32_t pid;
    pthread_mutex_t mps_mu;
    int mps_detected;
    CUresult mps_result;
    gsim_mps_client_t mps;
} driver_t;

static driver_t driver = {.mu = PTHREAD_MUTEX_INITIALIZER, .mps_mu = PTHREAD_MUTEX_INITIALIZER};

static void parse_pci(gsim_cu_device_t *d, const char *bus_id)
{
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4) {
        d->pci_domain = dom;
        d->pci_bus = bus;
        d->pci_device = dev;
    }
}

/* Fills the description of CUDA device ordinal from its domain. Call with the node locked. */
static void describe_locked(gsim_node_t *node, int ordinal, gsim_domain_t dom)
{
    gsim_cu_device_t *d = &driver.devices[ordinal];
    const gsim_device_t *dev = &node->dev[dom.dev];
    const gsim_model_t *models;
    size_t n_models = gsim_models(&models);
    memset(d, 0, sizeof(*d));
    d->ordinal = ordinal;
    d->domain = dom;
    d->model = dev->model_index < n_models ? &models[dev->model_index] : &models[0];
    snprintf(d->parent_uuid, sizeof(d->parent_uuid), "%s", dev->uuid);
    parse_pci(d, dev->pci_bus_id);
    gsim_cu_device_describe_model(d);
    if (dom.gi < 0) {
        d->sms = dev->sms;
        d->total_bytes = gsim_device_usable(dev);
        snprintf(d->name, sizeof(d->name), "%s", dev->name);
        snprintf(d->uuid, sizeof(d->uuid), "%s", dev->uuid);
        return;
    }
    const gsim_gi_t *gi = &dev->gi[dom.gi];
    const char *profile =
        gi->profile_index < d->model->n_profiles ? d->model->profiles[gi->profile_index].name : "";
    d->sms = gi->sms;
    d->total_bytes = gi->memory_bytes;
    snprintf(d->name, sizeof(d->name), "%s MIG %s", dev->name, profile);
    snprintf(d->uuid, sizeof(d->uuid), "%s", gi->uuid);
}

static void after_fork_child(void)
{
    if (atomic_load(&driver.state) == STATE_READY)
        atomic_store(&driver.forked, 1);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* Validates GPUSIM_DEVICES before the node is opened, so a bad value is one clear line. */
static CUresult check_device_spec(void)
{
    const gsim_model_t *models[GSIM_MAX_DEVICES];
    char err[160];
    if (gsim_parse_devices(getenv("GPUSIM_DEVICES"), models, err, sizeof(err)) >= 0)
        return CUDA_SUCCESS;
    fprintf(stderr, "gpusim: %s\n", err);
    return CUDA_ERROR_NO_DEVICE;
}

static CUresult init_locked(void)
{
    CUresult result = check_device_spec();
    if (result != CUDA_SUCCESS)
        return result;
    gsim_node_t *node = NULL;
    if (gsim_node_open(1, &node) != 0)
        return CUDA_ERROR_NO_DEVICE;
    gsim_domain_t domains[GSIM_MAX_DEVICES];
    int n = gsim_visible_domains(node, domains, GSIM_MAX_DEVICES);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    /* UUIDs that are not this node's GPUs (as gpushared gives them): most likely a job on
     * another simulated node than its daemon's; NVIDIA's driver says nothing, gpusim says why. */
    if (n <= 0 && visible != NULL &&
        (strstr(visible, "GPU-") != NULL || strstr(visible, "MIG-") != NULL)) {
        fprintf(stderr,
                "gpusim: no device: CUDA_VISIBLE_DEVICES=\"%s\" names none of the GPUs of node "
                "%s (%s); a job of gpushared's runs on its daemon's node (GPUSIM_STATE)\n",
                visible, gsim_node_path(), node->config);
        return CUDA_ERROR_NO_DEVICE;
    }
    if (n <= 0)
        return CUDA_ERROR_NO_DEVICE;
    gsim_node_lock(node);
    for (int i = 0; i < n; i++)
        describe_locked(node, i, domains[i]);
    gsim_node_unlock(node);
    driver.node = node;
    driver.n_devices = n;
    /* The process's key on the node (its pid, or a node-unique id in another PID namespace). */
    gsim_node_lock(node);
    gsim_proc_t *self = gsim_node_self(node);
    driver.pid = self != NULL ? self->pid : (int32_t)getpid();
    gsim_node_unlock(node);
    gsim_cu_checkpoint_start(); /* without it the process only cannot be checkpointed */
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (atomic_load(&driver.forked))
        return CUDA_ERROR_NOT_INITIALIZED;
    int state = atomic_load(&driver.state);
    if (state != STATE_NONE)
        return state == STATE_READY ? CUDA_SUCCESS : driver.failure;
    pthread_mutex_lock(&driver.mu);
    CUresult result = CUDA_SUCCESS;
    state = atomic_load(&driver.state);
    if (state == STATE_NONE) {
        result = init_locked();
        driver.failure = result;
        atomic_store(&driver.state, result == CUDA_SUCCESS ? STATE_READY : STATE_FAILED);
    } else {
        result = state == STATE_READY ? CUDA_SUCCESS : driver.failure;
    }
    pthread_mutex_unlock(&driver.mu);
    return result;
}

GSIM_CU_API CUresult cuDriverGetVersion(int *driverVersion)
{
    GSIM_CU_CHECK_PTR(driverVersion);
    *driverVersion = gsim_cuda_version();
    return CUDA_SUCCESS;
}

CUresult gsim_cu_init_state(void)
{
    if (atomic_load_explicit(&driver.state, memory_order_acquire) != STATE_READY ||
        atomic_load_explicit(&driver.forked, memory_order_relaxed))
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_initialized(void)
{
    CUresult result = gsim_cu_init_state();
    return result != CUDA_SUCCESS ? result : gsim_cu_checkpoint_gate();
}

void gsim_cu_device_remap_locked(int ord, int dev)
{
    if (ord < 0 || ord >= driver.n_devices)
        return;
    describe_locked(driver.node, ord, (gsim_domain_t){.dev = dev, .gi = -1});
}

gsim_node_t *gsim_cu_node(void)
{
    return driver.node;
}

int gsim_cu_device_count(void)
{
    return driver.n_devices;
}

const gsim_cu_device_t *gsim_cu_device(CUdevice ord)
{
    if (ord < 0 || ord >= driver.n_devices)
        return NULL;
    return &driver.devices[ord];
}

int32_t gsim_cu_pid(void)
{
    return driver.pid;
}

CUresult gsim_cu_mps_connect(void)
{
    pthread_mutex_lock(&driver.mps_mu);
    if (!driver.mps_detected) {
        int rc = gsim_mps_client_detect(driver.node, &driver.mps);
        driver.mps_result = rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_MPS_CONNECTION_FAILED;
        if (rc != 0)
            memset(&driver.mps, 0, sizeof(driver.mps));
        driver.mps_detected = 1;
    }
    CUresult result = driver.mps_result;
    pthread_mutex_unlock(&driver.mps_mu);
    return result;
}

CUresult gsim_cu_mps_attach(CUdevice ordinal)
{
    const gsim_cu_device_t *d = gsim_cu_device(ordinal);
    if (!driver.mps.active || d == NULL)
        return CUDA_SUCCESS;
    return gsim_mps_client_attach(d->domain.dev) == -EIO ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

uint32_t gsim_cu_mps_pct(void)
{
    if (!driver.mps.active)
        return 0;
    return driver.mps.thread_pct == 0 || driver.mps.thread_pct > 100 ? 100 : driver.mps.thread_pct;
}

int gsim_cu_mps_active(void)
{
    return driver.mps.active;
}

uint64_t gsim_cu_pinned_limit(int ordinal)
{
    if (!driver.mps.active || ordinal < 0 || ordinal >= GSIM_MAX_DEVICES)
        return 0;
    return driver.mps.pinned_limit[ordinal];
}

int64_t gsim_cu_sim_to_wall(int64_t sim_ns)
{
    if (sim_ns <= 0)
        return 0;
    double wall = (double)sim_ns / gsim_time_scale() + 0.5;
    int64_t result = wall >= 9.0e18 ? INT64_C(9000000000000000000) : (int64_t)wall;
    return result > 0 ? result : 1;
}
