/* SPDX-License-Identifier: Apache-2.0 */
/* MIG through NVML for one GPU: mode, profile catalog, instances, create and destroy. */
#include "mig_nvml.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One line for a failed call: "nvmlXxx: <NVML's text>". */
static int nvml_fail(const gs__mig_nvml_t *nv, nvmlReturn_t rc, const char *call, char *err,
                     size_t errlen)
{
    return gs_fail(err, errlen, GS_EIO, "%s: %s", call, nv->nvmlErrorString(rc));
}

int gs__mig_nvml_open(const gs__inventory_t *inv, unsigned i, gs__mig_nvml_t *nv, char *err,
                      size_t errlen)
{
    memset(nv, 0, sizeof(*nv));
    const gs_nvml_fn_t fns[] = {
#define X(name) {#name, (void **)&nv->name, 1},
        GS__MIG_NVML_FUNCTIONS(X)
#undef X
    };
    int result = gs__inventory_resolve(inv, fns, sizeof(fns) / sizeof(fns[0]), "no MIG support",
                                       err, errlen);
    if (result != 0)
        return result;
    nv->dev = gs__inventory_handle(inv, i);
    nv->index = gs__inventory_gpu(inv, i) != NULL ? gs__inventory_gpu(inv, i)->index : i;
    return nv->dev != NULL ? 0 : GS_EINVAL;
}

int gs__mig_nvml_enabled(const gs__mig_nvml_t *nv, int *enabled, char *err, size_t errlen)
{
    unsigned current = 0, pending = 0;
    nvmlReturn_t rc = nv->nvmlDeviceGetMigMode(nv->dev, &current, &pending);
    if (rc == NVML_ERROR_NOT_SUPPORTED)
        return gs_fail(err, errlen, GS_ENOSYS, "this GPU has no MIG");
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetMigMode", err, errlen);
    *enabled = current == NVML_DEVICE_MIG_ENABLE;
    return 0;
}

/* Adds the profile behind NVML constant k to cat (skipped when the GPU has none). */
static int add_profile(const gs__mig_nvml_t *nv, unsigned k, gs_mig_catalog_t *cat, char *err,
                       size_t errlen)
{
    nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
    nvmlReturn_t rc = nv->nvmlDeviceGetGpuInstanceProfileInfoV(nv->dev, k, &info);
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT)
        return 0;
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetGpuInstanceProfileInfoV", err, errlen);
    nvmlGpuInstancePlacement_t places[GS_MIG_SLOTS_MAX];
    unsigned count = GS_MIG_SLOTS_MAX;
    rc = nv->nvmlDeviceGetGpuInstancePossiblePlacements_v2(nv->dev, info.id, places, &count);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", err, errlen);
    if (cat->n_profiles == GS_MIG_PROFILES_MAX || count == 0)
        return 0;
    gs_mig_profile_t *p = &cat->profiles[cat->n_profiles++];
    memset(p, 0, sizeof(*p));
    const char *name = strncasecmp(info.name, "MIG ", 4) == 0 ? info.name + 4 : info.name;
    snprintf(p->name, sizeof(p->name), "%.*s", (int)sizeof(p->name) - 1, name);
    p->id = info.id;
    p->compute = info.sliceCount;
    p->max_instances = info.instanceCount;
    p->memory_bytes = info.memorySizeMB << 20;
    p->media = strstr(p->name, "+me") != NULL;
    for (unsigned j = 0; j < count && j < GS_MIG_SLOTS_MAX; j++) {
        if (places[j].start >= 32)
            continue;
        p->starts |= UINT32_C(1) << places[j].start;
        p->size = places[j].size;
        if (places[j].start + places[j].size > cat->memory_slots)
            cat->memory_slots = places[j].start + places[j].size;
    }
    if (p->compute > cat->compute_slices)
        cat->compute_slices = p->compute;
    return 0;
}

/* Profiles from small to large (memory, compute slices), media extensions after the plain. */
static int profile_order(const void *a, const void *b)
{
    const gs_mig_profile_t *x = a, *y = b;
    if (x->memory_bytes != y->memory_bytes)
        return x->memory_bytes < y->memory_bytes ? -1 : 1;
    if (x->compute != y->compute)
        return x->compute < y->compute ? -1 : 1;
    return x->media - y->media;
}

int gs__mig_nvml_catalog(const gs__mig_nvml_t *nv, const char *model, gs_mig_catalog_t *cat,
                         char *err, size_t errlen)
{
    memset(cat, 0, sizeof(*cat));
    snprintf(cat->model, sizeof(cat->model), "%s", model);
    for (unsigned k = 0; k < NVML_GPU_INSTANCE_PROFILE_COUNT; k++) {
        int result = add_profile(nv, k, cat, err, errlen);
        if (result != 0)
            return result;
    }
    if (cat->n_profiles == 0 || cat->memory_slots > GS_MIG_SLOTS_MAX)
        return gs_fail(err, errlen, GS_EIO, "NVML lists no usable MIG profile for this GPU");
    qsort(cat->profiles, cat->n_profiles, sizeof(cat->profiles[0]), profile_order);
    return 0;
}

/* Fills the UUIDs (and first CI ids) of found[0..n) from the GPU's MIG devices. */
static int find_uuids(const gs__mig_nvml_t *nv, gs__mig_found_t *found, unsigned n, char *err,
                      size_t errlen)
{
    unsigned max = 0;
    nvmlReturn_t rc = nv->nvmlDeviceGetMaxMigDeviceCount(nv->dev, &max);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetMaxMigDeviceCount", err, errlen);
    for (unsigned m = 0; m < max; m++) {
        nvmlDevice_t mig;
        unsigned gi = 0, ci = 0;
        rc = nv->nvmlDeviceGetMigDeviceHandleByIndex(nv->dev, m, &mig);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue;
        if (rc == NVML_SUCCESS && (rc = nv->nvmlDeviceGetGpuInstanceId(mig, &gi)) == NVML_SUCCESS)
            rc = nv->nvmlDeviceGetComputeInstanceId(mig, &ci);
        if (rc != NVML_SUCCESS)
            return nvml_fail(nv, rc, "MIG device query", err, errlen);
        for (unsigned k = 0; k < n; k++) {
            if (found[k].gi != gi || (found[k].has_ci && found[k].ci <= ci))
                continue;
            char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
            rc = nv->nvmlDeviceGetUUID(mig, uuid, sizeof(uuid));
            if (rc != NVML_SUCCESS)
                return nvml_fail(nv, rc, "nvmlDeviceGetUUID", err, errlen);
            found[k].has_ci = 1;
            found[k].ci = ci;
            snprintf(found[k].uuid, sizeof(found[k].uuid), "%s", uuid);
        }
    }
    return 0;
}

int gs__mig_nvml_list(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, gs__mig_found_t *found,
                      unsigned max, char *err, size_t errlen)
{
    unsigned n = 0;
    for (unsigned p = 0; p < cat->n_profiles; p++) {
        nvmlGpuInstance_t gis[GS_MIG_INSTANCES_MAX];
        unsigned count = GS_MIG_INSTANCES_MAX;
        nvmlReturn_t rc = nv->nvmlDeviceGetGpuInstances(nv->dev, cat->profiles[p].id, gis, &count);
        if (rc != NVML_SUCCESS)
            return nvml_fail(nv, rc, "nvmlDeviceGetGpuInstances", err, errlen);
        for (unsigned k = 0; k < count && n < max; k++) {
            nvmlGpuInstanceInfo_t info;
            rc = nv->nvmlGpuInstanceGetInfo(gis[k], &info);
            if (rc != NVML_SUCCESS)
                return nvml_fail(nv, rc, "nvmlGpuInstanceGetInfo", err, errlen);
            found[n++] =
                (gs__mig_found_t){.gi = info.id, .profile = (int)p, .start = info.placement.start};
        }
    }
    int result = find_uuids(nv, found, n, err, errlen);
    return result != 0 ? result : (int)n;
}

/* The compute instance profile id spanning all compute slices of a GPU instance. */
static int full_ci_profile(const gs__mig_nvml_t *nv, nvmlGpuInstance_t gi, uint32_t slices,
                           unsigned *id, char *err, size_t errlen)
{
    static const unsigned by_slices[9] = {0,
                                          NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                          NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                                          NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                                          NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
                                          0,
                                          NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE,
                                          NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
                                          NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE};
    if (slices == 0 || slices > 8 || slices == 5)
        return gs_fail(err, errlen, GS_EIO, "no compute instance profile of %u slices", slices);
    nvmlComputeInstanceProfileInfo_t info;
    nvmlReturn_t rc = nv->nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, by_slices[slices], NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlGpuInstanceGetComputeInstanceProfileInfo", err, errlen);
    *id = info.id;
    return 0;
}

/* Creates the full compute instance of gi and finds its MIG device UUID. */
static int add_ci(const gs__mig_nvml_t *nv, nvmlGpuInstance_t gi, uint32_t slices,
                  gs__mig_found_t *f, char *err, size_t errlen)
{
    unsigned profile = 0;
    nvmlComputeInstance_t ci;
    nvmlComputeInstanceInfo_t info;
    int result = full_ci_profile(nv, gi, slices, &profile, err, errlen);
    if (result != 0)
        return result;
    nvmlReturn_t rc = nv->nvmlGpuInstanceCreateComputeInstance(gi, profile, &ci);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlGpuInstanceCreateComputeInstance", err, errlen);
    rc = nv->nvmlComputeInstanceGetInfo_v2(ci, &info);
    if (rc != NVML_SUCCESS) {
        nv->nvmlComputeInstanceDestroy(ci);
        return nvml_fail(nv, rc, "nvmlComputeInstanceGetInfo_v2", err, errlen);
    }
    f->has_ci = 0;
    result = find_uuids(nv, f, 1, err, errlen);
    if (result == 0 && f->uuid[0] == '\0') {
        result =
            gs_fail(err, errlen, GS_EIO, "NVML lists no MIG device for GPU instance %u", f->gi);
    }
    if (result != 0)
        nv->nvmlComputeInstanceDestroy(ci);
    return result;
}

int gs__mig_nvml_create(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, int p,
                        uint32_t start, gs__mig_found_t *out, char *err, size_t errlen)
{
    const gs_mig_profile_t *prof = &cat->profiles[p];
    nvmlGpuInstancePlacement_t place = {.start = start, .size = prof->size};
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info;
    nvmlReturn_t rc = nv->nvmlDeviceCreateGpuInstanceWithPlacement(nv->dev, prof->id, &place, &gi);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceCreateGpuInstanceWithPlacement", err, errlen);
    rc = nv->nvmlGpuInstanceGetInfo(gi, &info);
    if (rc != NVML_SUCCESS) {
        nv->nvmlGpuInstanceDestroy(gi);
        return nvml_fail(nv, rc, "nvmlGpuInstanceGetInfo", err, errlen);
    }
    *out = (gs__mig_found_t){.gi = info.id, .profile = p, .start = info.placement.start};
    int result = add_ci(nv, gi, prof->compute, out, err, errlen);
    if (result != 0)
        nv->nvmlGpuInstanceDestroy(gi);
    return result;
}

int gs__mig_nvml_complete(const gs__mig_nvml_t *nv, const gs_mig_catalog_t *cat, gs__mig_found_t *f,
                          char *err, size_t errlen)
{
    if (f->has_ci)
        return 0;
    nvmlGpuInstance_t gi;
    nvmlReturn_t rc = nv->nvmlDeviceGetGpuInstanceById(nv->dev, f->gi, &gi);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetGpuInstanceById", err, errlen);
    return add_ci(nv, gi, cat->profiles[f->profile].compute, f, err, errlen);
}

/* Destroys every compute instance of gi. */
static int destroy_cis(const gs__mig_nvml_t *nv, nvmlGpuInstance_t gi, char *err, size_t errlen)
{
    for (unsigned k = 0; k < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; k++) {
        nvmlComputeInstanceProfileInfo_t info;
        nvmlReturn_t rc = nv->nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, k, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
        if (rc != NVML_SUCCESS)
            continue; /* the GPU instance has no such profile */
        nvmlComputeInstance_t cis[8];
        unsigned count = 8;
        rc = nv->nvmlGpuInstanceGetComputeInstances(gi, info.id, cis, &count);
        if (rc != NVML_SUCCESS)
            return nvml_fail(nv, rc, "nvmlGpuInstanceGetComputeInstances", err, errlen);
        for (unsigned c = 0; c < count; c++) {
            rc = nv->nvmlComputeInstanceDestroy(cis[c]);
            if (rc != NVML_SUCCESS)
                return nvml_fail(nv, rc, "nvmlComputeInstanceDestroy", err, errlen);
        }
    }
    return 0;
}

int gs__mig_nvml_destroy(const gs__mig_nvml_t *nv, uint32_t id, char *err, size_t errlen)
{
    nvmlGpuInstance_t gi;
    nvmlReturn_t rc = nv->nvmlDeviceGetGpuInstanceById(nv->dev, id, &gi);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlDeviceGetGpuInstanceById", err, errlen);
    int result = destroy_cis(nv, gi, err, errlen);
    if (result != 0)
        return result;
    rc = nv->nvmlGpuInstanceDestroy(gi);
    if (rc != NVML_SUCCESS)
        return nvml_fail(nv, rc, "nvmlGpuInstanceDestroy", err, errlen);
    return 0;
}
