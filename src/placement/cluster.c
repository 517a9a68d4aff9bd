/* SPDX-License-Identifier: Apache-2.0 */
/* The resource model: nodes with CPU, memory and shared GPUs; taking and giving back requests. */
#include "placement_internal.h"

#include "gpushare/error.h"
#include "gpu_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gs_place_request_check(const gs_place_request_t *req, char *err, size_t errlen)
{
    if (req->num_gpu > GS_PLACE_MAX_GPUS)
        return gs_fail(err, errlen, GS_EINVAL, "num_gpu %u exceeds %d", req->num_gpu,
                       GS_PLACE_MAX_GPUS);
    if (req->num_gpu == 0 && (req->gpu_milli != 0 || req->gpu_mem_bytes != 0))
        return gs_fail(err, errlen, GS_EINVAL, "a CPU-only request asks for GPU share");
    if (req->num_gpu > 0 && (req->gpu_milli == 0 || req->gpu_milli > GS_PLACE_MILLI))
        return gs_fail(err, errlen, GS_EINVAL, "gpu_milli %u is not in 1..1000", req->gpu_milli);
    if (req->num_gpu > 1 && req->gpu_milli != GS_PLACE_MILLI)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a request for %u GPUs must take whole GPUs (gpu_milli 1000)", req->num_gpu);
    return 0;
}

uint64_t gs_place_request_milli(const gs_place_request_t *req)
{
    return (uint64_t)req->num_gpu * req->gpu_milli;
}

uint32_t gs_place_milli_for_bytes(uint64_t bytes, uint64_t gpu_mem_total)
{
    if (bytes == 0 || gpu_mem_total == 0)
        return 0;
    if (bytes >= gpu_mem_total)
        return GS_PLACE_MILLI;
    /* bytes < total, so bytes * 1000 / total < 1000; long double avoids 64-bit overflow. */
    long double share = (long double)bytes * GS_PLACE_MILLI / (long double)gpu_mem_total;
    uint32_t milli = (uint32_t)share;
    if ((long double)milli < share)
        milli++;
    return milli;
}

int gs_place_cluster_new(gs_place_cluster_t **out)
{
    gs_place_cluster_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return GS_ENOMEM;
    *out = c;
    return 0;
}

void gs_place_cluster_free(gs_place_cluster_t *cluster)
{
    if (cluster == NULL)
        return;
    free(cluster->nodes);
    free(cluster);
}

size_t gs_place_cluster_size(const gs_place_cluster_t *cluster)
{
    return cluster->count;
}

const char *gs_place_node_name(const gs_place_cluster_t *cluster, int node)
{
    if (node < 0 || (size_t)node >= cluster->count)
        return NULL;
    return cluster->nodes[node].name;
}

int gs_place_model_id(const gs_place_cluster_t *cluster, const char *model)
{
    for (int i = 0; i < cluster->nmodels; i++) {
        if (strcmp(cluster->models[i], model) == 0)
            return i;
    }
    return GS_ENOENT;
}

/* Returns the model's id, adding it when new: >= 0, GS_EINVAL (too long) or GS_ELIMIT. */
static int intern_model(gs_place_cluster_t *cluster, const char *model)
{
    int id = gs_place_model_id(cluster, model);
    if (id >= 0)
        return id;
    if (strlen(model) >= GS_PLACE_MODEL_MAX)
        return GS_EINVAL;
    if (cluster->nmodels >= GS_PLACE_MAX_MODELS)
        return GS_ELIMIT;
    strcpy(cluster->models[cluster->nmodels], model);
    return cluster->nmodels++;
}

int gs_place_model_mask(const gs_place_cluster_t *cluster, const char *spec, uint64_t *mask)
{
    char item[GS_PLACE_MODEL_MAX];
    uint64_t m = 0;
    int listed = 0;
    if (strlen(spec) >= GS_PLACE_SPEC_MAX)
        return GS_EINVAL;
    for (const char *p = spec; *p != '\0';) {
        size_t n = strcspn(p, "|");
        if (n > 0) {
            listed = 1;
            if (n < sizeof(item)) {
                memcpy(item, p, n);
                item[n] = '\0';
                int id = gs_place_model_id(cluster, item);
                if (id >= 0)
                    m |= UINT64_C(1) << id;
            }
        }
        p += n;
        if (*p == '|')
            p++;
    }
    *mask = listed && m == 0 ? GS_PLACE_MODEL_NONE : m;
    return 0;
}

void gs__node_touch(gs_place_cluster_t *cluster, gs__node_t *node)
{
    uint32_t sum = 0, free_gpus = 0;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        sum += node->gpu_left[g];
        free_gpus += node->gpu_left[g] == GS_PLACE_MILLI;
    }
    node->milli_left = sum;
    node->free_gpus = free_gpus;
    node->version = ++cluster->stamp;
}

int gs_place_cluster_add_node(gs_place_cluster_t *cluster, const gs_place_node_spec_t *spec,
                              int *index)
{
    if (spec->num_gpu > GS_PLACE_MAX_GPUS)
        return GS_EINVAL;
    int model = -1;
    if (spec->num_gpu > 0) {
        if (spec->model == NULL || spec->model[0] == '\0')
            return GS_EINVAL;
        model = intern_model(cluster, spec->model);
        if (model < 0)
            return model;
    }
    if (cluster->count == cluster->cap) {
        size_t cap = cluster->cap ? cluster->cap * 2 : 64;
        gs__node_t *grown = realloc(cluster->nodes, cap * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        cluster->nodes = grown;
        cluster->cap = cap;
    }
    gs__node_t *n = &cluster->nodes[cluster->count];
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", spec->name != NULL ? spec->name : "");
    n->cpu_cap = n->cpu_left = spec->cpu_milli;
    n->mem_cap = n->mem_left = spec->mem_mib;
    n->ngpu = spec->num_gpu;
    n->model = model;
    n->model_bit = model >= 0 ? UINT64_C(1) << model : 0;
    n->gpu_mem_cap = spec->gpu_mem_bytes;
    for (uint32_t g = 0; g < n->ngpu; g++) {
        n->gpu_left[g] = GS_PLACE_MILLI;
        n->gpu_mem_left[g] = spec->gpu_mem_bytes;
    }
    gs__node_touch(cluster, n);
    cluster->total_milli += (uint64_t)n->ngpu * GS_PLACE_MILLI;
    if (index != NULL)
        *index = (int)cluster->count;
    cluster->count++;
    return 0;
}

int gs_place_node_get(const gs_place_cluster_t *cluster, int node, gs_place_node_state_t *state)
{
    if (node < 0 || (size_t)node >= cluster->count)
        return GS_EINVAL;
    const gs__node_t *n = &cluster->nodes[node];
    memset(state, 0, sizeof(*state));
    state->cpu_milli = n->cpu_cap;
    state->cpu_left = n->cpu_left;
    state->mem_mib = n->mem_cap;
    state->mem_left = n->mem_left;
    state->num_gpu = n->ngpu;
    state->model = n->model;
    state->gpu_mem_bytes = n->gpu_mem_cap;
    for (uint32_t g = 0; g < n->ngpu; g++) {
        state->gpu_left[g] = n->gpu_left[g];
        state->gpu_mem_left[g] = n->gpu_mem_left[g];
    }
    return 0;
}

int gs_place_node_set(gs_place_cluster_t *cluster, int node, const gs_place_node_state_t *state)
{
    if (node < 0 || (size_t)node >= cluster->count)
        return GS_EINVAL;
    gs__node_t *n = &cluster->nodes[node];
    if (state->cpu_left > n->cpu_cap || state->mem_left > n->mem_cap)
        return GS_EINVAL;
    for (uint32_t g = 0; g < n->ngpu; g++) {
        if (state->gpu_left[g] > GS_PLACE_MILLI || state->gpu_mem_left[g] > n->gpu_mem_cap)
            return GS_EINVAL;
    }
    uint32_t before = n->milli_left;
    n->cpu_left = state->cpu_left;
    n->mem_left = state->mem_left;
    for (uint32_t g = 0; g < n->ngpu; g++) {
        n->gpu_left[g] = state->gpu_left[g];
        n->gpu_mem_left[g] = n->gpu_mem_cap ? state->gpu_mem_left[g] : 0;
    }
    gs__node_touch(cluster, n);
    cluster->used_milli = cluster->used_milli + before - n->milli_left;
    return 0;
}

uint64_t gs_place_cluster_gpu_milli(const gs_place_cluster_t *cluster)
{
    return cluster->total_milli;
}

uint64_t gs_place_cluster_used_milli(const gs_place_cluster_t *cluster)
{
    return cluster->used_milli;
}

int gs__node_feasible(const gs__node_t *node, const gs_place_request_t *req)
{
    if (node->cpu_left < req->cpu_milli)
        return 0;
    if (req->num_gpu == 0)
        return 1;
    if (req->model_mask != 0 && (req->model_mask & node->model_bit) == 0)
        return 0;
    if (req->num_gpu > node->ngpu)
        return 0;
    if (req->gpu_milli == GS_PLACE_MILLI && node->gpu_mem_cap == 0)
        return node->free_gpus >= req->num_gpu;
    uint32_t fit = 0;
    for (uint32_t g = 0; g < node->ngpu; g++)
        fit += gs__gpu_fits(node, g, req);
    return fit >= req->num_gpu;
}

void gs__pick_first_free(const gs__node_t *node, const gs_place_request_t *req,
                         gs_place_decision_t *d)
{
    d->num_gpu = 0;
    for (uint32_t g = 0; g < node->ngpu && d->num_gpu < req->num_gpu; g++) {
        if (gs__gpu_fits(node, g, req))
            d->gpus[d->num_gpu++] = (uint8_t)g;
    }
}

int gs__pick_best_fit_gpu(const gs__node_t *node, const gs_place_request_t *req)
{
    int best = -1;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        if (gs__gpu_fits(node, g, req) && (best < 0 || node->gpu_left[g] < node->gpu_left[best]))
            best = (int)g;
    }
    return best;
}

/* Validates a decision against the request's shape (not against what is free). */
static int decision_ok(const gs_place_cluster_t *cluster, const gs_place_request_t *req,
                       const gs_place_decision_t *d)
{
    if (d->node < 0 || (size_t)d->node >= cluster->count || d->num_gpu != req->num_gpu)
        return 0;
    const gs__node_t *n = &cluster->nodes[d->node];
    for (uint32_t i = 0; i < d->num_gpu; i++) {
        if (d->gpus[i] >= n->ngpu || (i > 0 && d->gpus[i] <= d->gpus[i - 1]))
            return 0;
    }
    return 1;
}

void gs__node_apply(gs__node_t *node, const gs_place_request_t *req, const gs_place_decision_t *d)
{
    node->cpu_left -= req->cpu_milli;
    node->mem_left -= req->mem_mib;
    for (uint32_t i = 0; i < d->num_gpu; i++) {
        unsigned g = d->gpus[i];
        node->free_gpus -= node->gpu_left[g] == GS_PLACE_MILLI;
        node->gpu_left[g] -= req->gpu_milli;
        node->milli_left -= req->gpu_milli;
        if (node->gpu_mem_cap != 0)
            node->gpu_mem_left[g] -= req->gpu_mem_bytes;
    }
}

/* The GpuClustering kind of a GPU request: share, or its number of whole GPUs. */
static unsigned task_tag(const gs_place_request_t *req)
{
    return req->gpu_milli < GS_PLACE_MILLI ? GS__TAG_SHARE : req->num_gpu;
}

int gs_place_commit(gs_place_cluster_t *cluster, const gs_place_request_t *req,
                    const gs_place_decision_t *decision)
{
    if (gs_place_request_check(req, NULL, 0) != 0 || !decision_ok(cluster, req, decision))
        return GS_EINVAL;
    gs__node_t *n = &cluster->nodes[decision->node];
    if (n->cpu_left < req->cpu_milli || n->mem_left < req->mem_mib)
        return GS_ENOFIT;
    if (req->num_gpu > 0 && req->model_mask != 0 && (req->model_mask & n->model_bit) == 0)
        return GS_ENOFIT;
    for (uint32_t i = 0; i < decision->num_gpu; i++) {
        if (!gs__gpu_fits(n, decision->gpus[i], req))
            return GS_ENOFIT;
    }
    gs__node_apply(n, req, decision);
    if (req->num_gpu > 0)
        n->tags[task_tag(req)]++;
    gs__node_touch(cluster, n);
    cluster->used_milli += gs_place_request_milli(req);
    return 0;
}

int gs_place_release(gs_place_cluster_t *cluster, const gs_place_request_t *req,
                     const gs_place_decision_t *decision)
{
    if (gs_place_request_check(req, NULL, 0) != 0 || !decision_ok(cluster, req, decision))
        return GS_EINVAL;
    gs__node_t *n = &cluster->nodes[decision->node];
    if ((uint64_t)n->cpu_left + req->cpu_milli > n->cpu_cap ||
        n->mem_left + req->mem_mib > n->mem_cap || n->mem_left + req->mem_mib < n->mem_left)
        return GS_EINVAL;
    for (uint32_t i = 0; i < decision->num_gpu; i++) {
        unsigned g = decision->gpus[i];
        if (n->gpu_left[g] + req->gpu_milli > GS_PLACE_MILLI ||
            (n->gpu_mem_cap != 0 && n->gpu_mem_left[g] + req->gpu_mem_bytes > n->gpu_mem_cap))
            return GS_EINVAL;
    }
    n->cpu_left += req->cpu_milli;
    n->mem_left += req->mem_mib;
    for (uint32_t i = 0; i < decision->num_gpu; i++) {
        unsigned g = decision->gpus[i];
        n->gpu_left[g] += req->gpu_milli;
        if (n->gpu_mem_cap != 0)
            n->gpu_mem_left[g] += req->gpu_mem_bytes;
    }
    if (req->num_gpu > 0 && n->tags[task_tag(req)] > 0)
        n->tags[task_tag(req)]--;
    gs__node_touch(cluster, n);
    cluster->used_milli -= gs_place_request_milli(req);
    return 0;
}

/* The table's row of model (its full name, or its family: the first of that family), or -1. */
static int find_model(const char *model)
{
    size_t n = strlen(model);
    for (size_t i = 0; i < sizeof(gpu_models) / sizeof(gpu_models[0]); i++) {
        const char *full = gpu_models[i];
        size_t family = strcspn(full, "-");
        if (strcasecmp(model, full) == 0 || (n == family && strncasecmp(model, full, n) == 0))
            return (int)i;
    }
    return -1;
}

int gs_place_gpu_model_known(const char *model)
{
    return find_model(model) >= 0;
}

uint64_t gs_place_gpu_model_memory(const char *model)
{
    int i = find_model(model);
    return i >= 0 ? (uint64_t)gpu_model_mib[i] << 20 : 0;
}

const char *gs_place_gpu_model_name(size_t i)
{
    return i < sizeof(gpu_models) / sizeof(gpu_models[0]) ? gpu_models[i] : NULL;
}
