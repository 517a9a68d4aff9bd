/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare placement online: scoring nodes the way a cluster's device allocator will fill them. */
#ifndef GPUSHARE_PLACEMENT_ONLINE_H
#define GPUSHARE_PLACEMENT_ONLINE_H

#include "gpushare/placement.h"

/*
 * In a cluster the placement engine does not choose the GPUs: Kubernetes' DRA allocator takes the
 * first devices that fit, in the order a ResourceSlice lists them. These functions let a caller
 * (the scheduler extender, src/k8s) score a node by what that allocator will really do there,
 * and let a device driver list its devices in the order the policy prefers.
 *
 * Thread-safety: as the engine's (one thread at a time per cluster and its engines).
 */

/* How a node's GPUs are ordered for a first-fit allocator. */
typedef enum gs_place_order {
    GS_PLACE_ORDER_INDEX = 0, /* by GPU index: what a driver that never reorders publishes */
    GS_PLACE_ORDER_TIGHTEST,  /* least room first (best fit), full GPUs last, index on ties */
    GS_PLACE_ORDER_POLICY,    /* the order whose first fit agrees most often with the policy's
                               * own GPU choice, over the target workload's GPU shares weighted by
                               * frequency (ties: TIGHTEST); FGD and gpushare engines only */
    GS_PLACE_ORDER_COUNT
} gs_place_order_t;

/* Parses "index", "tightest" or "policy". Returns 0 and sets *how, or GS_EINVAL. */
int gs_place_order_parse(const char *name, gs_place_order_t *how);

/* Returns "index", "tightest", "policy", or "?" for an invalid value. Never NULL. */
const char *gs_place_order_name(gs_place_order_t how);

/* Fills order[0..num_gpu) with the GPU indexes of node in the order `how` gives for the node's
 * current state (each index once). With GS_PLACE_ORDER_POLICY, engine is the policy's engine
 * (its target workload and tables); the other orders read only the cluster and accept an engine
 * of any policy. Returns 0, or GS_EINVAL (bad node, an engine of another cluster, POLICY with a
 * policy that has no fragmentation measure). */
int gs_place_device_order(gs_place_engine_t *engine, int node, gs_place_order_t how,
                          uint8_t order[GS_PLACE_MAX_GPUS]);

/* The GPUs a first-fit allocator takes for req on node when it tries them in order[0..n): the
 * first num_gpu that have room (share and GPU memory), returned ascending in d->gpus. Checks the
 * node's CPU, host memory and GPU model too. Returns 0 with *d filled (d->node = node), GS_ENOFIT
 * when the node cannot take req, or GS_EINVAL (bad node or request, an order naming a GPU the
 * node lacks). */
int gs_place_first_fit(const gs_place_cluster_t *cluster, int node, const uint8_t *order, size_t n,
                       const gs_place_request_t *req, gs_place_decision_t *d);

/* The policy's score (larger is better, the scale of gs_place_select's comparisons) of placing
 * req on the node and GPUs of d — the placement a first-fit allocator makes, not necessarily the
 * policy's own GPU choice. Only for FGD and gpushare engines. Returns 0 with *score, GS_ENOFIT
 * when d does not fit, or GS_EINVAL (other policies, a malformed request or decision, a node the
 * engine has not seen). */
int gs_place_score_decision(gs_place_engine_t *engine, const gs_place_request_t *req,
                            const gs_place_decision_t *d, int64_t *score);

/* The policy's own score of req on node and the GPUs it would choose there (into *d), as
 * gs_place_select compares nodes, for FGD and gpushare engines: what an extender that ignores
 * the allocator's first fit would score. Returns 0, GS_ENOFIT (the node cannot take req) or
 * GS_EINVAL. */
int gs_place_score_node(gs_place_engine_t *engine, const gs_place_request_t *req, int node,
                        int64_t *score, gs_place_decision_t *d);

/* The node's place in the engine's fixed order of nodes, which breaks equal scores in
 * gs_place_select (the smaller rank wins). Returns 0 with *rank, or GS_EINVAL for a node the
 * engine has not seen. */
int gs_place_node_rank(const gs_place_engine_t *engine, int node, uint64_t *rank);

/* For replays driven outside this library (the scheduler extender's online replay): the pods
 * gs_place_replay schedules, in its order, as indexes into pods (a pod appears again when tuning
 * draws it again), and its table of allocation against arrival. */

/* Fills *seq (malloc'ed, freed by the caller) with *count pod indexes: the order of
 * gs_place_replay with the same nodes, pods and opts (seed, tune; policy and coverage do not
 * matter). Returns 0, GS_EINVAL, GS_ENOMEM or a cluster error, with a message in err. */
int gs_place_replay_sequence(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                             const gs_place_replay_opts_t *opts, size_t **seq, size_t *count,
                             char *err, size_t errlen);

/* Computes result->table and result->valid from its events, total_gpus, arrived_milli and
 * used_milli, as gs_place_replay does. */
void gs_place_replay_table(gs_place_replay_result_t *result);

#endif
