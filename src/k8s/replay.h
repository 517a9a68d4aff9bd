/* SPDX-License-Identifier: Apache-2.0 */
/* The online replay: a trace played pod by pod through the scheduler extender's verbs and a model
 * of the DRA allocator, as a cluster would see it (docs/kubernetes.md, "Placement").
 *
 * Single-threaded; everything it allocates is freed before it returns. */
#ifndef GS_K8S_REPLAY_H
#define GS_K8S_REPLAY_H

#include "model.h"

#include "gpushare/placement.h"
#include "gpushare/placement_online.h"

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>

typedef struct gs_k8s_replay_opts {
    uint64_t seed;          /* the pods' order (as gs_place_replay) and the extender's node order */
    double tune;            /* grow the workload to tune x capacity (1.3), as gs_place_replay */
    gs_place_order_t order; /* how the DRA plugin lists a node's devices: index (never
                             * republished), tightest or policy (republished when it changes) */
    int learn;              /* the extender learns the workload from the pods it scores; else it
                             * is given the trace's pods as its target workload */
    unsigned lag;           /* scheduling results reach the extender this many pods late */
    double assume_seconds;  /* the extender's assumption of scored pods (0: off) */
    uint64_t gpu_memory;    /* bytes published per GPU (the traces have none): 32Gi when 0 */
    int policy_gpus;        /* the extender scores the policy's own GPU choice (comparison) */
    /* Called before each pod is scheduled with the extender's model and the pod's object (a
     * benchmark times the verbs on the cluster's real states); NULL: none. */
    void (*probe)(void *ctx, gs_k8s_model_t *model, const json_t *pod, size_t i);
    void *probe_ctx;
} gs_k8s_replay_opts_t;

typedef struct gs_k8s_replay_stats {
    size_t pods, placed, failed;
    size_t neutral;     /* neutral answers of the extender (should be 0) */
    size_t below_max;   /* pods whose best node scored below the extender's maximum (10): the
                         * replay picks the top score as kube-scheduler's selectHost does, with
                         * no other score plugin, so this is no test of kube-scheduler itself */
    size_t republished; /* slices republished for a new device order */
    double seconds;     /* wall time of the replay */
} gs_k8s_replay_stats_t;

/* Replays pods on nodes (the files of `gpushare plan replay`) online: per pod a ResourceClaim
 * (gpu.gpushare.io, count, capacity memory + compute for shares, productName selectors for
 * gpu_spec) and a Pod; kube-scheduler's view of the feasible nodes (CPU, memory, and the DRA
 * allocator finding devices); the extender's filter and prioritize on ExtenderArgs JSON; the
 * highest total score (ties at random, as kube-scheduler); the DRA allocator's first fit in the
 * slice's order; the allocated claim, bound pod and republished slice sent to the extender as
 * watch events. Fills *out as gs_place_replay does (free with gs_place_replay_result_free) and
 * *stats. Returns 0, or an error code with a message in err. */
int gs_k8s_replay(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                  const gs_k8s_replay_opts_t *opts, gs_place_replay_result_t *out,
                  gs_k8s_replay_stats_t *stats, char *err, size_t errlen);

#endif
