/* SPDX-License-Identifier: Apache-2.0 */
/* The node as gpushared's status shows it, and the ResourceSlices that publish it (plugin.h). */
#include "plugin.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLICE_MAX_PLAIN 128 /* devices of a slice in which none consumes counters (the API's) */

/* An unsigned integer member (absent: 0); -1 when present but not a non-negative integer. */
static int uint_member(const json_t *obj, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = 0;
    if (v == NULL)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int text_member(const json_t *obj, const char *key, char *dst, size_t size)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if ((v != NULL && !json_is_string(v)) || strlen(s) >= size)
        return -1;
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int mode_of(const char *name, gs_dra_mode_t *mode)
{
    for (int m = 0; m < GS_DRA_MODE_COUNT; m++) {
        if (strcmp(name, gs_dra_mode_name((gs_dra_mode_t)m)) == 0) {
            *mode = (gs_dra_mode_t)m;
            return 0;
        }
    }
    return -1;
}

static int profile_parse(const json_t *p, gs_mig_profile_t *out)
{
    uint64_t id, compute, slots, max, memory;
    uint32_t starts = 0;
    char name[GS_MIG_NAME_MAX];
    const json_t *list = json_object_get(p, "starts"), *s;
    size_t i;
    if (text_member(p, "name", name, sizeof(name)) != 0 || name[0] == '\0' ||
        uint_member(p, "id", &id) || uint_member(p, "compute", &compute) ||
        uint_member(p, "slots", &slots) || uint_member(p, "max_instances", &max) ||
        uint_member(p, "memory", &memory) || !json_is_array(list) || compute == 0 ||
        compute > GS_MIG_SLOTS_MAX || slots == 0 || slots > GS_MIG_SLOTS_MAX || id > UINT32_MAX ||
        max > UINT32_MAX)
        return -1;
    json_array_foreach(list, i, s)
    {
        if (!json_is_integer(s) || json_integer_value(s) < 0 ||
            json_integer_value(s) + (json_int_t)slots > GS_MIG_SLOTS_MAX)
            return -1;
        starts |= UINT32_C(1) << json_integer_value(s);
    }
    *out = (gs_mig_profile_t){.id = (uint32_t)id,
                              .compute = (uint32_t)compute,
                              .size = (uint32_t)slots,
                              .max_instances = (uint32_t)max,
                              .starts = starts,
                              .memory_bytes = memory,
                              .media = json_is_true(json_object_get(p, "media"))};
    memcpy(out->name, name, sizeof(name));
    return 0;
}

static int mig_parse(const json_t *mig, gs__node_gpu_t *g)
{
    const json_t *profiles = json_object_get(mig, "profiles"), *p;
    uint64_t compute, slots;
    size_t i;
    g->mig_enabled = json_is_true(json_object_get(mig, "enabled")) && json_is_array(profiles);
    if (!g->mig_enabled)
        return 0;
    if (uint_member(mig, "compute_slices", &compute) || uint_member(mig, "memory_slots", &slots) ||
        compute == 0 || compute > GS_MIG_SLOTS_MAX || slots == 0 || slots > GS_MIG_SLOTS_MAX ||
        json_array_size(profiles) > GS_MIG_PROFILES_MAX)
        return -1;
    g->mig.compute_slices = (uint32_t)compute;
    g->mig.memory_slots = (uint32_t)slots;
    json_array_foreach(profiles, i, p)
    {
        const gs_mig_profile_t *prof = &g->mig.profiles[i];
        if (profile_parse(p, &g->mig.profiles[i]) != 0 || prof->compute > compute ||
            prof->size > slots || (prof->starts >> (slots - prof->size + 1)) != 0)
            return -1; /* an instance that does not fit the GPU */
        g->mig.n_profiles = (unsigned)i + 1;
    }
    return 0;
}

static int gpu_parse(const json_t *j, gs__node_gpu_t *g, char *err, size_t errlen)
{
    uint64_t index, leases, compute;
    char mode[16];
    memset(g, 0, sizeof(*g));
    if (uint_member(j, "index", &index) || index >= GS_MAX_DEVICES ||
        text_member(j, "uuid", g->uuid, sizeof(g->uuid)) || g->uuid[0] == '\0' ||
        text_member(j, "name", g->product, sizeof(g->product)) ||
        text_member(j, "mode", mode, sizeof(mode)) ||
        uint_member(j, "memory_leasable", &g->leasable) ||
        uint_member(j, "memory_free", &g->free) || uint_member(j, "n_leases", &leases) ||
        uint_member(j, "compute_leased", &compute) || compute > 100 ||
        text_member(j, "problem", g->problem, sizeof(g->problem)))
        return gs_fail(err, errlen, GS_EFORMAT, "gpushared's status: a malformed GPU");
    g->index = (unsigned)index;
    g->leases = (unsigned)leases;
    g->compute_leased = (uint32_t)compute;
    if (mode_of(mode, &g->mode) != 0)
        snprintf(g->problem, sizeof(g->problem), "mode %s has no DRA device model", mode);
    if (g->mode == GS_DRA_MIG && mig_parse(json_object_get(j, "mig"), g) != 0)
        return gs_fail(err, errlen, GS_EFORMAT,
                       "gpushared's status: GPU %u: malformed MIG profiles", g->index);
    if (g->mode == GS_DRA_MIG && !g->mig_enabled && g->problem[0] == '\0')
        snprintf(g->problem, sizeof(g->problem), "MIG is not on");
    return 0;
}

int gs__node_parse(const json_t *status, gs__node_t *out, char *err, size_t errlen)
{
    const json_t *gpus = json_object_get(status, "gpus"), *j;
    const char *cuda = gs_k8s_str(status, "node", "cuda_driver", NULL);
    size_t i;
    memset(out, 0, sizeof(*out));
    if (!json_is_array(gpus) || json_array_size(gpus) > GS_MAX_DEVICES)
        return gs_fail(err, errlen, GS_EFORMAT, "gpushared's status has no list of GPUs");
    if (cuda != NULL && strlen(cuda) < sizeof(out->cuda))
        snprintf(out->cuda, sizeof(out->cuda), "%s", cuda);
    json_array_foreach(gpus, i, j)
    {
        int result = gpu_parse(j, &out->gpus[i], err, errlen);
        if (result != 0)
            return result;
        for (size_t k = 0; k < i; k++)
            if (out->gpus[k].index == out->gpus[i].index)
                return gs_fail(err, errlen, GS_EFORMAT, "gpushared's status: GPU %u twice",
                               out->gpus[i].index);
        out->n = (unsigned)i + 1;
    }
    return 0;
}

const gs__node_gpu_t *gs__node_gpu(const gs__node_t *node, unsigned index)
{
    for (unsigned i = 0; i < node->n; i++)
        if (node->gpus[i].index == index)
            return &node->gpus[i];
    return NULL;
}

/* ---- slices ---- */

/* "13.0" as the semantic version cudaDriverVersion is: "13.0.0" ("" stays ""). */
static void semver(const char *cuda, char *buf, size_t len)
{
    int dots = 0;
    for (const char *p = cuda; *p != '\0'; p++)
        dots += *p == '.';
    snprintf(buf, len, "%s%s", cuda,
             cuda[0] == '\0' ? ""
             : dots == 0     ? ".0.0"
             : dots == 1     ? ".0"
                             : "");
}

/* The devices of the node's GPUs that are whole GPUs or shares, with what is leased of each. */
static size_t plain_devices(const gs__node_t *node, gs_dra_device_t *dev, gs_dra_usage_t *use)
{
    char version[24];
    size_t n = 0;
    semver(node->cuda, version, sizeof(version));
    for (unsigned i = 0; i < node->n; i++) {
        const gs__node_gpu_t *g = &node->gpus[i];
        if (g->problem[0] != '\0' || g->mode == GS_DRA_MIG)
            continue;
        gs_dra_device_init(&dev[n], g->index, g->uuid, g->product, g->mode, g->leasable, version);
        use[n] = (gs_dra_usage_t){.memory = g->leasable > g->free ? g->leasable - g->free : 0,
                                  .compute = g->compute_leased,
                                  .allocations = g->leases};
        n++;
    }
    return n;
}

/* Appends the placements of every profile of MIG GPU g; returns how many. */
static size_t mig_devices(const gs__node_gpu_t *g, const char *version, gs_dra_device_t *dev)
{
    size_t n = 0;
    for (unsigned p = 0; p < g->mig.n_profiles; p++) {
        const gs_mig_profile_t *prof = &g->mig.profiles[p];
        for (uint32_t s = 0; s + prof->size <= g->mig.memory_slots; s++) {
            if (!((prof->starts >> s) & 1))
                continue;
            gs_dra_mig_device_init(&dev[n++], g->index, g->uuid, g->product, version, prof->name, s,
                                   prof->size, prof->compute, prof->media, prof->memory_bytes,
                                   gs_mig_compute_percent(&g->mig, (int)p));
        }
    }
    return n;
}

/* Every device of the node in publishing order, and the MIG GPUs' counter sets. */
static int all_devices(const gs__node_t *node, gs_place_order_t how, gs_dra_device_t **devs,
                       size_t *ndev, gs_dra_counter_set_t *sets, size_t *nsets)
{
    size_t cap = GS_MAX_DEVICES * (1 + GS_MIG_PROFILES_MAX * GS_MIG_SLOTS_MAX);
    gs_dra_device_t *dev = calloc(cap, sizeof(*dev));
    gs_dra_usage_t use[GS_MAX_DEVICES];
    char version[24];
    if (dev == NULL)
        return GS_ENOMEM;
    semver(node->cuda, version, sizeof(version));
    size_t n = plain_devices(node, dev, use);
    gs_dra_slice_t order = {.count = n, .devices = dev};
    if (n > 0)
        gs_dra_order_devices(&order, use, how);
    *nsets = 0;
    for (unsigned i = 0; i < node->n; i++) {
        const gs__node_gpu_t *g = &node->gpus[i];
        if (g->problem[0] != '\0' || g->mode != GS_DRA_MIG)
            continue;
        sets[*nsets] = (gs_dra_counter_set_t){
            .slots = g->mig.memory_slots, .compute = g->mig.compute_slices, .media = 1};
        snprintf(sets[*nsets].name, sizeof(sets[*nsets].name), "gpu-%u-mig", g->index);
        (*nsets)++;
        n += mig_devices(g, version, dev + n);
    }
    *devs = dev;
    *ndev = n;
    return 0;
}

/* "<node>-gpu.gpushare.io<suffix>", kept within a name's 253 characters. */
static void slice_name(char *buf, size_t len, const char *node, const char *suffix)
{
    snprintf(buf, len, "%.*s-%s%s", 253 - (int)strlen(GS_DRA_DRIVER) - 1 - (int)strlen(suffix),
             node, GS_DRA_DRIVER, suffix);
}

static void slice_init(gs_dra_slice_t *s, const char *node, const char *suffix, int64_t gen)
{
    memset(s, 0, sizeof(*s));
    slice_name(s->name, sizeof(s->name), node, suffix);
    snprintf(s->driver, sizeof(s->driver), "%s", GS_DRA_DRIVER);
    snprintf(s->node, sizeof(s->node), "%s", node);
    snprintf(s->pool, sizeof(s->pool), "%s", node);
    s->generation = gen;
}

/* Cuts devs into pages of at most `page` devices, one slice each (the first always). */
static int page_slices(const char *node, int64_t gen, const gs_dra_device_t *devs, size_t ndev,
                       size_t page, gs_dra_slice_t *out, size_t max, size_t *n)
{
    size_t pages = ndev == 0 ? 1 : (ndev + page - 1) / page;
    if (pages > max)
        return GS_ENOSPC;
    for (size_t k = 0; k < pages; k++) {
        char suffix[24] = "";
        if (k > 0)
            snprintf(suffix, sizeof(suffix), "-%zu", k + 1);
        slice_init(&out[k], node, suffix, gen);
        size_t first = k * page, count = ndev - first < page ? ndev - first : page;
        out[k].count = count;
        if (count > 0 && (out[k].devices = malloc(count * sizeof(*devs))) == NULL)
            return GS_ENOMEM;
        if (count > 0)
            memcpy(out[k].devices, devs + first, count * sizeof(*devs));
        *n = k + 1;
    }
    return 0;
}

int gs__node_slices(const gs__node_t *node, const char *name, int64_t gen, gs_place_order_t how,
                    gs_dra_slice_t *out, size_t max, size_t *n)
{
    gs_dra_device_t *devs = NULL;
    gs_dra_counter_set_t sets[GS_MAX_DEVICES];
    size_t ndev = 0, nsets = 0;
    *n = 0;
    int result = all_devices(node, how, &devs, &ndev, sets, &nsets);
    if (result == 0)
        result = page_slices(name, gen, devs, ndev, nsets > 0 ? GS_PLUGIN_DEVICES : SLICE_MAX_PLAIN,
                             out, nsets > 0 ? max - 1 : max, n);
    free(devs);
    if (result == 0 && nsets > 0) {
        gs_dra_slice_t *c = &out[*n];
        slice_init(c, name, "-counters", gen);
        if ((c->counters = malloc(nsets * sizeof(*sets))) == NULL) {
            result = GS_ENOMEM;
        } else {
            memcpy(c->counters, sets, nsets * sizeof(*sets));
            c->ncounters = nsets;
            (*n)++;
        }
    }
    for (size_t k = 0; k < *n; k++)
        out[k].slice_count = (int64_t)*n;
    if (result != 0) {
        for (size_t k = 0; k < *n; k++)
            gs_dra_slice_free(&out[k]);
        *n = 0;
    }
    return result;
}

int gs__node_device(const gs__node_t *node, const char *name, gs_dra_device_t *dev,
                    const gs__node_gpu_t **gpu)
{
    char version[24];
    semver(node->cuda, version, sizeof(version));
    for (unsigned i = 0; i < node->n; i++) {
        const gs__node_gpu_t *g = &node->gpus[i];
        if (g->problem[0] != '\0')
            continue;
        *gpu = g;
        if (g->mode != GS_DRA_MIG) {
            gs_dra_device_init(dev, g->index, g->uuid, g->product, g->mode, g->leasable, version);
            if (strcmp(dev->name, name) == 0)
                return 0;
            continue;
        }
        gs_dra_device_t *mig = calloc(GS_MIG_PROFILES_MAX * GS_MIG_SLOTS_MAX, sizeof(*mig));
        if (mig == NULL)
            return GS_ENOMEM;
        size_t n = mig_devices(g, version, mig), k = 0;
        while (k < n && strcmp(mig[k].name, name) != 0)
            k++;
        if (k < n)
            *dev = mig[k];
        free(mig);
        if (k < n)
            return 0;
    }
    *gpu = NULL;
    return GS_ENOENT;
}
