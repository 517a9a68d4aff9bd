/* SPDX-License-Identifier: Apache-2.0 */
/* The target workload M: the popular task shapes and their frequencies, as FGD defines it. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>

int gs_place_workload_new(gs_place_workload_t **out)
{
    gs_place_workload_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return GS_ENOMEM;
    *out = w;
    return 0;
}

void gs_place_workload_free(gs_place_workload_t *workload)
{
    if (workload == NULL)
        return;
    free(workload->shapes);
    free(workload);
}

/* A shape is what decides where a task can go: CPU, GPU count and share, allowed models. Host
 * memory varies more between tasks; a shape carries the mean of its tasks'. */
static void shape_of(const gs_place_request_t *req, gs_place_request_t *key)
{
    memset(key, 0, sizeof(*key));
    key->cpu_milli = req->cpu_milli;
    key->num_gpu = req->num_gpu;
    key->gpu_milli = req->num_gpu > 0 ? req->gpu_milli : 0;
    key->model_mask = req->num_gpu > 0 ? req->model_mask : 0;
}

static int same_shape(const gs_place_request_t *a, const gs_place_request_t *b)
{
    return a->cpu_milli == b->cpu_milli && a->num_gpu == b->num_gpu &&
           a->gpu_milli == b->gpu_milli && a->model_mask == b->model_mask;
}

int gs_place_workload_add(gs_place_workload_t *workload, const gs_place_request_t *req,
                          double weight)
{
    if (workload->finished || !(weight > 0) || gs_place_request_check(req, NULL, 0) != 0)
        return GS_EINVAL;
    gs_place_request_t key;
    shape_of(req, &key);
    /* Workloads have tens to hundreds of shapes; a linear search is cheap at this size. */
    for (size_t i = 0; i < workload->count; i++) {
        if (same_shape(&workload->shapes[i].req, &key)) {
            workload->shapes[i].weight += weight;
            workload->shapes[i].mem_sum += weight * (double)req->mem_mib;
            workload->total += weight;
            return 0;
        }
    }
    if (workload->count == workload->cap) {
        size_t cap = workload->cap ? workload->cap * 2 : 32;
        gs__shape_t *grown = realloc(workload->shapes, cap * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        workload->shapes = grown;
        workload->cap = cap;
    }
    workload->shapes[workload->count].req = key;
    workload->shapes[workload->count].weight = weight;
    workload->shapes[workload->count].mem_sum = weight * (double)req->mem_mib;
    workload->count++;
    workload->total += weight;
    return 0;
}

/* Most popular first; equal counts are ordered by the larger shape first (CPU, GPU share, GPU
 * count, models), as the artifact's reverse sort does, so the cut is deterministic. */
static int by_popularity(const void *pa, const void *pb)
{
    const gs__shape_t *a = pa, *b = pb;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    if (a->req.cpu_milli != b->req.cpu_milli)
        return a->req.cpu_milli > b->req.cpu_milli ? -1 : 1;
    if (a->req.gpu_milli != b->req.gpu_milli)
        return a->req.gpu_milli > b->req.gpu_milli ? -1 : 1;
    if (a->req.num_gpu != b->req.num_gpu)
        return a->req.num_gpu > b->req.num_gpu ? -1 : 1;
    if (a->req.model_mask != b->req.model_mask)
        return a->req.model_mask > b->req.model_mask ? -1 : 1;
    return 0;
}

int gs_place_workload_finish(gs_place_workload_t *workload, double coverage)
{
    if (workload->finished || !(coverage > 0 && coverage <= 1))
        return GS_EINVAL;
    if (workload->count == 0)
        return GS_ENOENT;
    qsort(workload->shapes, workload->count, sizeof(workload->shapes[0]), by_popularity);
    double wanted = coverage * workload->total, cum = 0;
    size_t keep = 0;
    while (keep < workload->count && cum < wanted)
        cum += workload->shapes[keep++].weight;
    for (size_t i = 0; i < keep; i++) {
        gs__shape_t *sh = &workload->shapes[i];
        sh->req.mem_mib = (uint64_t)(sh->mem_sum / sh->weight + 0.5);
        sh->weight /= cum;
    }
    workload->count = keep;
    workload->finished = 1;
    return 0;
}

size_t gs_place_workload_size(const gs_place_workload_t *workload)
{
    return workload->count;
}

int gs_place_workload_shape(const gs_place_workload_t *workload, size_t i, gs_place_request_t *req,
                            double *freq)
{
    if (i >= workload->count)
        return GS_EINVAL;
    if (req != NULL)
        *req = workload->shapes[i].req;
    if (freq != NULL)
        *freq = workload->finished ? workload->shapes[i].weight
                                   : workload->shapes[i].weight / workload->total;
    return 0;
}
