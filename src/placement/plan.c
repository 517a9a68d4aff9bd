/* SPDX-License-Identifier: Apache-2.0 */
/* Capacity planning: the fewest nodes of a type that hold a workload under a placement policy. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct plan_ctx {
    const gs_place_node_row_t *type;
    const gs_place_pods_t *jobs;
    gs_place_policy_t policy;
    int exclusive;
    gs_place_request_t *reqs;
    gs_place_workload_t *workload;
    char *err; /* why planning fails, for the caller */
    size_t errlen;
} plan_ctx_t;

static int make_cluster(const plan_ctx_t *p, uint32_t nodes, gs_place_cluster_t **out)
{
    gs_place_cluster_t *c = NULL;
    int result = gs_place_cluster_new(&c);
    for (uint32_t i = 0; result == 0 && i < nodes; i++) {
        gs_place_node_spec_t spec = {.name = p->type->name,
                                     .cpu_milli = p->type->cpu_milli,
                                     .mem_mib = p->type->mem_mib,
                                     .num_gpu = p->type->num_gpu,
                                     .model = p->type->model};
        result = gs_place_cluster_add_node(c, &spec, NULL);
    }
    if (result != 0) {
        gs_place_cluster_free(c);
        return result;
    }
    *out = c;
    return 0;
}

/* Places every job in order on `nodes` nodes; *fits is set when none is left over. */
static int try_nodes(const plan_ctx_t *p, uint32_t nodes, int *fits)
{
    gs_place_cluster_t *c = NULL;
    gs_place_engine_t *e = NULL;
    int result = make_cluster(p, nodes, &c);
    if (result == 0)
        result = gs_place_engine_new(c, p->policy, p->workload, 1, &e);
    *fits = 1;
    for (size_t i = 0; result == 0 && i < p->jobs->count; i++) {
        gs_place_decision_t d;
        result = gs_place_place(e, &p->reqs[i], &d);
        if (result == GS_ENOFIT) {
            *fits = 0;
            result = 0;
            break;
        }
    }
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
    return result;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b == 0 ? 0 : (a + b - 1) / b;
}

/* The target workload FGD and gpushare plan for: the requests as they will be placed (whole GPUs
 * when exclusive), not the jobs as listed. */
static int target_workload(plan_ctx_t *p)
{
    int result = gs_place_workload_new(&p->workload);
    for (size_t i = 0; result == 0 && i < p->jobs->count; i++)
        result = gs_place_workload_add(p->workload, &p->reqs[i], 1.0);
    if (result == 0)
        result = gs_place_workload_finish(p->workload, gs__default_coverage(p->policy));
    return result;
}

/* A job given by its memory (--job 10G) takes that memory's share of the type's GPU; more memory
 * than the GPU has never fits (*lower = 0, out->misfit). Returns 0, or GS_EINVAL with the reason
 * in p->err when the type's GPU model (so its memory) is not known. */
static int memory_share(plan_ctx_t *p, const gs_place_pod_t *job, gs_place_request_t *r,
                        gs_place_plan_t *out, size_t i, uint32_t *lower)
{
    if (job->gpu_mem_bytes == 0 || r->num_gpu == 0)
        return 0;
    uint64_t memory = gs_place_gpu_model_memory(p->type->model);
    if (memory == 0)
        return gs_fail(p->err, p->errlen, GS_EINVAL,
                       "node type %s: the memory of its GPU model \"%s\" is not known (give "
                       "model=A100-40GB, T4, ...): job %s is given by its memory",
                       p->type->name, p->type->model, job->name);
    r->gpu_mem_bytes = job->gpu_mem_bytes;
    r->gpu_milli = gs_place_milli_for_bytes(job->gpu_mem_bytes, memory);
    if (job->gpu_mem_bytes > memory && *lower != 0) {
        *lower = 0;
        out->misfit = i;
    }
    return 0;
}

/* Turns the jobs into requests (whole GPUs when exclusive), checks each fits an empty node,
 * and returns a lower bound on the node count in *lower (0 when some job never fits). */
static int prepare(plan_ctx_t *p, gs_place_plan_t *out, uint32_t *lower)
{
    gs_place_cluster_t *one = NULL;
    int result = make_cluster(p, 1, &one);
    if (result != 0)
        return result;
    uint64_t cpu = 0, mem = 0;
    *lower = 1;
    for (size_t i = 0; result == 0 && i < p->jobs->count; i++) {
        gs_place_request_t *r = &p->reqs[i];
        result = gs_place_pod_request(one, &p->jobs->pods[i], r);
        if (result == 0)
            result = memory_share(p, &p->jobs->pods[i], r, out, i, lower);
        if (result != 0)
            break;
        if (p->exclusive && r->num_gpu > 0)
            r->gpu_milli = GS_PLACE_MILLI;
        out->requested_milli += gs_place_request_milli(r);
        cpu += r->cpu_milli;
        mem += r->mem_mib;
        if ((!gs__node_feasible(&one->nodes[0], r) || one->nodes[0].mem_left < r->mem_mib) &&
            *lower != 0) {
            *lower = 0;
            out->misfit = i;
        }
    }
    if (result == 0 && *lower != 0) {
        uint64_t gpu_cap = (uint64_t)p->type->num_gpu * GS_PLACE_MILLI, lb = 1;
        if (ceil_div(out->requested_milli, gpu_cap) > lb)
            lb = ceil_div(out->requested_milli, gpu_cap);
        if (p->type->cpu_milli != UINT32_MAX && ceil_div(cpu, p->type->cpu_milli) > lb)
            lb = ceil_div(cpu, p->type->cpu_milli);
        if (p->type->mem_mib != UINT64_MAX && ceil_div(mem, p->type->mem_mib) > lb)
            lb = ceil_div(mem, p->type->mem_mib);
        *lower = lb > UINT32_MAX ? UINT32_MAX : (uint32_t)lb;
    }
    if (result == 0 && *lower != 0 && gs__policies[p->policy]->uses_workload)
        result = target_workload(p);
    gs_place_cluster_free(one);
    return result;
}

/* Smallest n in [lo, max] that fits: doubling to find one that does, then bisection. */
static int search(const plan_ctx_t *p, uint32_t lo, uint32_t max, uint32_t *found)
{
    uint32_t hi = lo;
    int fits = 0, result;
    *found = 0;
    for (;;) {
        if ((result = try_nodes(p, hi, &fits)) != 0)
            return result;
        if (fits)
            break;
        if (hi >= max)
            return 0;
        lo = hi + 1;
        hi = hi > max / 2 ? max : hi * 2;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((result = try_nodes(p, mid, &fits)) != 0)
            return result;
        if (fits)
            hi = mid;
        else
            lo = mid + 1;
    }
    *found = hi;
    return 0;
}

int gs_place_plan_nodes(const gs_place_node_row_t *type, const gs_place_pods_t *jobs,
                        gs_place_policy_t policy, int exclusive, uint32_t max_nodes,
                        gs_place_plan_t *out, char *err, size_t errlen)
{
    plan_ctx_t p = {.type = type,
                    .jobs = jobs,
                    .policy = policy,
                    .exclusive = exclusive,
                    .err = err,
                    .errlen = errlen};
    uint32_t lower = 0, found = 0;
    memset(out, 0, sizeof(*out));
    out->misfit = SIZE_MAX;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if ((int)policy < 0 || policy >= GS_PLACE_POLICY_COUNT || max_nodes == 0)
        return gs_fail(err, errlen, GS_EINVAL, "invalid planning options");
    if (jobs->count == 0) {
        out->feasible = 1;
        return 0;
    }
    p.reqs = malloc(jobs->count * sizeof(*p.reqs));
    int result = p.reqs == NULL ? GS_ENOMEM : prepare(&p, out, &lower);
    if (result == 0 && lower != 0 && lower <= max_nodes)
        result = search(&p, lower, max_nodes, &found);
    if (result == 0 && found > 0) {
        out->feasible = 1;
        out->nodes = found;
        out->gpus = found * type->num_gpu;
    }
    free(p.reqs);
    gs_place_workload_free(p.workload);
    if (result != 0 && (err == NULL || errlen == 0 || err[0] == '\0'))
        return gs_fail(err, errlen, result, "planning for %s: %s", type->name, gs_strerror(result));
    return result;
}
