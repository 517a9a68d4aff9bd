/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the trace readers on arbitrary bytes, and, when the input parses into a small
 * cluster and workload, a replay and a capacity plan that must keep their invariants. */
#include "gpushare/placement.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs holding both files separate them with this byte (never valid in a CSV field). */
#define SEPARATOR '\x01'
#define MAX_NODES 64
#define MAX_PODS  256

static void check_replay(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                         unsigned selector)
{
    gs_place_replay_opts_t opts = {.policy = (gs_place_policy_t)(selector % GS_PLACE_POLICY_COUNT),
                                   .seed = selector,
                                   .tune = (selector & 8) ? 1.3 : 0.5};
    /* Tuning appends pods until the demand reaches tune x capacity: keep that small. */
    uint64_t demand = 0, capacity = 0;
    for (size_t i = 0; i < pods->count; i++)
        demand += (uint64_t)pods->pods[i].num_gpu * pods->pods[i].gpu_milli;
    for (size_t i = 0; i < nodes->count; i++)
        capacity += (uint64_t)nodes->nodes[i].num_gpu * 1000;
    if (demand == 0 || capacity * 2 / demand * pods->count > 4 * MAX_PODS)
        opts.tune = 0;
    gs_place_replay_result_t r;
    char err[GS_PLACE_ERR_MAX];
    if (gs_place_replay(nodes, pods, &opts, &r, err, sizeof(err)) != 0)
        return;
    for (size_t i = 1; i < r.events; i++) {
        if (r.arrived_milli[i] < r.arrived_milli[i - 1] || r.used_milli[i] > r.total_milli ||
            r.used_milli[i] > r.arrived_milli[i])
            abort();
    }
    if (r.failed > r.pods)
        abort();
    gs_place_replay_result_free(&r);
}

static void check_plan(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                       unsigned selector)
{
    gs_place_plan_t plan;
    char err[GS_PLACE_ERR_MAX];
    gs_place_policy_t policy = (gs_place_policy_t)((selector >> 4) % GS_PLACE_POLICY_COUNT);
    if (gs_place_plan_nodes(&nodes->nodes[0], pods, policy, selector & 1, 64, &plan, err,
                            sizeof(err)) != 0)
        return;
    if (plan.feasible && plan.gpus != plan.nodes * nodes->nodes[0].num_gpu)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned selector = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const char *sep = memchr(text, SEPARATOR, len);
    size_t node_len = sep != NULL ? (size_t)(sep - text) : len;
    gs_place_nodes_t nodes = {0};
    gs_place_pods_t pods = {0};
    char err[GS_PLACE_ERR_MAX];
    /* Every input is tried as both kinds of file; messages must always be terminated. */
    if (gs_place_pods_parse(text, len, "fuzz", &pods, err, sizeof(err)) != 0 &&
        memchr(err, '\0', sizeof(err)) == NULL)
        abort();
    gs_place_pods_free(&pods);
    int nodes_ok = gs_place_nodes_parse(text, node_len, "nodes", &nodes, err, sizeof(err)) == 0;
    int pods_ok = sep != NULL && gs_place_pods_parse(sep + 1, len - node_len - 1, "pods", &pods,
                                                     err, sizeof(err)) == 0;
    if (nodes_ok && pods_ok && nodes.count > 0 && nodes.count <= MAX_NODES &&
        pods.count <= MAX_PODS) {
        check_replay(&nodes, &pods, selector);
        check_plan(&nodes, &pods, selector);
    }
    gs_place_nodes_free(&nodes);
    gs_place_pods_free(&pods);
    return 0;
}
