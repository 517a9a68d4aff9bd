/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: handle tables and the common call prologue. */
#include "nvml_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* One table entry per GPU, MIG device, GPU instance and compute instance slot there can be. */
typedef struct handle_tables {
    struct nvmlDevice_st device[GSIM_MAX_DEVICES];
    struct nvmlDevice_st mig[GSIM_MAX_DEVICES][GSIM_MAX_GI][GSIM_MAX_CI];
    struct nvmlGpuInstance_st gi[GSIM_MAX_DEVICES][GSIM_MAX_GI];
    struct nvmlComputeInstance_st ci[GSIM_MAX_DEVICES][GSIM_MAX_GI][GSIM_MAX_CI];
} handle_tables_t;

static handle_tables_t tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
    for (int d = 0; d < GSIM_MAX_DEVICES; d++) {
        tables.device[d] = (struct nvmlDevice_st){.dev = d, .gi = -1, .ci = -1};
        for (int g = 0; g < GSIM_MAX_GI; g++) {
            tables.gi[d][g] = (struct nvmlGpuInstance_st){.dev = d, .gi = g};
            for (int c = 0; c < GSIM_MAX_CI; c++) {
                tables.mig[d][g][c] = (struct nvmlDevice_st){.dev = d, .gi = g, .ci = c};
                tables.ci[d][g][c] = (struct nvmlComputeInstance_st){.dev = d, .gi = g, .ci = c};
            }
        }
    }
}

static handle_tables_t *get_tables(void)
{
    pthread_once(&tables_once, fill_tables);
    return &tables;
}

nvmlDevice_t gsim_nvml_device_handle(int dev)
{
    return &get_tables()->device[dev];
}

nvmlDevice_t gsim_nvml_mig_handle(int dev, int gi, int ci)
{
    return &get_tables()->mig[dev][gi][ci];
}

nvmlGpuInstance_t gsim_nvml_gi_handle(int dev, int gi)
{
    return &get_tables()->gi[dev][gi];
}

nvmlComputeInstance_t gsim_nvml_ci_handle(int dev, int gi, int ci)
{
    return &get_tables()->ci[dev][gi][ci];
}

/* Returns nonzero when p points at an element of the array [base, base + size) of elem-sized
 * elements. Integer arithmetic: comparing unrelated pointers is undefined. */
static int in_table(const void *p, const void *base, size_t size, size_t elem)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
    return a >= b && a < b + size && (a - b) % elem == 0;
}

static nvmlReturn_t lock_node(nvml_target_t *t)
{
    memset(t, 0, sizeof(*t));
    t->node = gsim_nvml_node();
    if (t->node == NULL)
        return NVML_ERROR_UNINITIALIZED;
    gsim_node_lock(t->node);
    t->locked = 1;
    return NVML_SUCCESS;
}

/* Fills the target of dev/gi/ci, checking that they exist now. */
static nvmlReturn_t resolve(nvml_target_t *t, int dev, int gi, int ci)
{
    if (dev < 0 || (uint32_t)dev >= t->node->n_devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    t->dev = dev;
    t->gi = gi;
    t->ci = ci;
    t->d = &t->node->dev[dev];
    t->model = gsim_device_model(t->node, dev);
    if (gi < 0)
        return NVML_SUCCESS;
    if (!t->d->mig_mode || !t->d->gi[gi].in_use)
        return NVML_ERROR_INVALID_ARGUMENT;
    t->g = &t->d->gi[gi];
    if (ci >= 0 && !t->g->ci[ci].in_use)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t gsim_nvml_begin_node(nvml_target_t *t)
{
    return lock_node(t);
}

nvmlReturn_t gsim_nvml_begin_device(nvmlDevice_t device, nvml_target_t *t)
{
    nvmlReturn_t result = lock_node(t);
    if (result != NVML_SUCCESS)
        return result;
    handle_tables_t *h = get_tables();
    if (!in_table(device, h->device, sizeof(h->device), sizeof(h->device[0])) &&
        !in_table(device, h->mig, sizeof(h->mig), sizeof(h->mig[0][0][0])))
        return NVML_ERROR_INVALID_ARGUMENT;
    return resolve(t, device->dev, device->gi, device->ci);
}

nvmlReturn_t gsim_nvml_begin_gi(nvmlGpuInstance_t gpuInstance, nvml_target_t *t)
{
    nvmlReturn_t result = lock_node(t);
    if (result != NVML_SUCCESS)
        return result;
    handle_tables_t *h = get_tables();
    if (!in_table(gpuInstance, h->gi, sizeof(h->gi), sizeof(h->gi[0][0])))
        return NVML_ERROR_INVALID_ARGUMENT;
    return resolve(t, gpuInstance->dev, gpuInstance->gi, -1);
}

nvmlReturn_t gsim_nvml_begin_ci(nvmlComputeInstance_t computeInstance, nvml_target_t *t)
{
    nvmlReturn_t result = lock_node(t);
    if (result != NVML_SUCCESS)
        return result;
    handle_tables_t *h = get_tables();
    if (!in_table(computeInstance, h->ci, sizeof(h->ci), sizeof(h->ci[0][0][0])))
        return NVML_ERROR_INVALID_ARGUMENT;
    return resolve(t, computeInstance->dev, computeInstance->gi, computeInstance->ci);
}

nvmlReturn_t gsim_nvml_end(nvml_target_t *t, nvmlReturn_t result)
{
    if (t->locked)
        gsim_node_unlock(t->node);
    t->locked = 0;
    return result;
}

nvmlReturn_t gsim_nvml_copy_string(char *buf, unsigned int length, const char *text)
{
    size_t need = strlen(text) + 1;
    if (buf == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length < need)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, text, need);
    return NVML_SUCCESS;
}

int gsim_nvml_mig_index(const nvml_target_t *t)
{
    int n = gsim_mig_device_count_locked(t->node, t->dev);
    for (int i = 0; i < n; i++) {
        int gi, ci;
        if (gsim_mig_device_at_locked(t->node, t->dev, i, &gi, &ci) == 0 && gi == t->gi &&
            ci == t->ci)
            return i;
    }
    return -1;
}

void gsim_nvml_mig_profile_name(const gsim_model_t *model, const gsim_gi_t *g, int ci, char *out,
                                size_t len)
{
    const char *gi_name =
        g->profile_index < model->n_profiles ? model->profiles[g->profile_index].name : "unknown";
    if (ci < 0 || g->ci[ci].size == g->compute)
        snprintf(out, len, "%s", gi_name);
    else
        snprintf(out, len, "%uc.%s", g->ci[ci].size, gi_name);
}
