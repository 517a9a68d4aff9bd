/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare placement: resource model, placement policies, trace replay and capacity planning. */
#ifndef GPUSHARE_PLACEMENT_H
#define GPUSHARE_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "gpushare/quantity.h"

/*
 * The model. A cluster is a list of nodes; a node has CPU (milli-CPU), host memory (MiB) and up to
 * GS_PLACE_MAX_GPUS GPUs of one model. Each GPU is shared in thousandths ("milli-GPU"): a request
 * takes either a share (1..999 milli) of one GPU or whole GPUs (1000 milli on each of num_gpu
 * GPUs). GPU memory in bytes can be tracked too (the node daemon's view); a trace replay does not.
 *
 * An engine binds one policy to one cluster. gs_place_select() answers "which node and which GPUs
 * for this request"; gs_place_commit() / gs_place_release() change the cluster. Engines cache
 * per-node scores and only rescore nodes that changed, so a daemon asking about its own GPUs (a
 * one-node cluster) or a replay over thousands of nodes pays little per request.
 *
 * Thread-safety: none of these objects is locked. One cluster with its engines must be used by
 * one thread at a time; distinct clusters are independent.
 */

#define GS_PLACE_MILLI      1000           /* milli-GPU in one GPU */
#define GS_PLACE_MAX_GPUS   GS_MAX_DEVICES /* GPUs per node */
#define GS_PLACE_MAX_MODELS 63             /* distinct GPU models per cluster */
#define GS_PLACE_NAME_MAX   64             /* node and pod names, NUL included */
#define GS_PLACE_MODEL_MAX  32             /* a GPU model name, NUL included */
#define GS_PLACE_SPEC_MAX   256            /* a "A|B|C" list of allowed models, NUL included */
#define GS_PLACE_ERR_MAX    256            /* room for any error message of this module */

/* model_mask value that matches no GPU model (the request names only models the cluster lacks). */
#define GS_PLACE_MODEL_NONE (UINT64_C(1) << 63)

typedef enum gs_place_policy {
    GS_PLACE_RANDOM = 0, /* uniformly random feasible node */
    GS_PLACE_DOTPROD,    /* Tetris-style dot product of free and requested CPU/GPU */
    GS_PLACE_CLUSTERING, /* prefer nodes running the same kind of GPU task */
    GS_PLACE_PACKING,    /* prefer used GPUs, then used nodes, then empty nodes */
    GS_PLACE_BESTFIT,    /* least weighted CPU+GPU leftover */
    GS_PLACE_FGD,        /* Fragmentation Gradient Descent (ATC'23) */
    GS_PLACE_GPUSHARE,   /* gpushare's policy (docs/placement.md); the daemon's default */
    GS_PLACE_SPREAD,     /* the emptiest node and GPU (worst fit): spreads load */
    GS_PLACE_POLICY_COUNT
} gs_place_policy_t;

/* Parses a policy name, case-insensitive: random, dotprod, clustering (or gpuclustering), packing
 * (or gpupacking), bestfit, fgd, gpushare, spread. Returns 0 and sets *policy, or GS_EINVAL. */
int gs_place_policy_parse(const char *name, gs_place_policy_t *policy);

/* Returns the policy's short name ("fgd"), or "?" for an invalid value. Never NULL. */
const char *gs_place_policy_name(gs_place_policy_t policy);

/* Returns the label the ATC'23 artifact uses in its result files ("06-FGD"; gpushare's is
 * "07-gpushare", spread's "08-Spread"), or "?" for an invalid value. Never NULL. */
const char *gs_place_policy_label(gs_place_policy_t policy);

/* ------------------------------------------------------------------------------------------ */
/* Requests and nodes                                                                          */

/* What one task (pod, job, lease) asks for. */
typedef struct gs_place_request {
    uint32_t cpu_milli;     /* milli-CPU */
    uint64_t mem_mib;       /* host memory, MiB */
    uint32_t num_gpu;       /* 0 (CPU only) .. GS_PLACE_MAX_GPUS */
    uint32_t gpu_milli;     /* per GPU: 1..1000; below 1000 only when num_gpu == 1 */
    uint64_t gpu_mem_bytes; /* per GPU device memory; 0 = not asked (or not tracked) */
    uint64_t model_mask;    /* allowed GPU models (bit i = model id i), 0 = any model */
} gs_place_request_t;

/* Checks the request's invariants. Returns 0 or GS_EINVAL with a message in err (may be NULL). */
int gs_place_request_check(const gs_place_request_t *req, char *err, size_t errlen);

/* Returns the request's total GPU demand in milli-GPU (num_gpu * gpu_milli). */
uint64_t gs_place_request_milli(const gs_place_request_t *req);

/* Converts a per-GPU memory amount to the milli-GPU share it represents on a GPU with
 * gpu_mem_total bytes, rounded up, capped at 1000. Returns 0 when either argument is 0. */
uint32_t gs_place_milli_for_bytes(uint64_t bytes, uint64_t gpu_mem_total);

/* A node to add to a cluster. */
typedef struct gs_place_node_spec {
    const char *name;       /* copied, truncated to GS_PLACE_NAME_MAX - 1 bytes; may be NULL */
    uint32_t cpu_milli;     /* capacity; UINT32_MAX = unlimited */
    uint64_t mem_mib;       /* capacity; UINT64_MAX = unlimited */
    uint32_t num_gpu;       /* 0..GS_PLACE_MAX_GPUS */
    const char *model;      /* GPU model name, NULL or "" when the node has no GPU */
    uint64_t gpu_mem_bytes; /* device memory of each GPU, 0 = not tracked */
} gs_place_node_spec_t;

/* A node's current state, as read with gs_place_node_get. */
typedef struct gs_place_node_state {
    uint32_t cpu_milli, cpu_left;
    uint64_t mem_mib, mem_left;
    uint32_t num_gpu;
    int model;                                /* model id, -1 when the node has no GPU */
    uint32_t gpu_left[GS_PLACE_MAX_GPUS];     /* milli-GPU left on each GPU */
    uint64_t gpu_mem_left[GS_PLACE_MAX_GPUS]; /* bytes left (0 when not tracked) */
    uint64_t gpu_mem_bytes;                   /* per GPU capacity, 0 = not tracked */
} gs_place_node_state_t;

/* Where a request goes: a node and the GPUs on it. */
typedef struct gs_place_decision {
    int node;                        /* node index, -1 when nothing fits */
    uint32_t num_gpu;                /* entries used in gpus[] */
    uint8_t gpus[GS_PLACE_MAX_GPUS]; /* GPU indexes on that node, ascending */
} gs_place_decision_t;

/* ------------------------------------------------------------------------------------------ */
/* Cluster                                                                                     */

typedef struct gs_place_cluster gs_place_cluster_t;

/* Creates an empty cluster in *out; free it with gs_place_cluster_free. Returns 0 or
 * GS_ENOMEM. */
int gs_place_cluster_new(gs_place_cluster_t **out);

/* Frees the cluster (NULL is fine). Engines bound to it must be freed first. */
void gs_place_cluster_free(gs_place_cluster_t *cluster);

/* Adds an empty node; its index (0, 1, ...) goes to *index when index is not NULL. Returns 0,
 * GS_EINVAL (too many GPUs, a GPU node without a model), GS_ELIMIT (more than
 * GS_PLACE_MAX_MODELS models) or GS_ENOMEM. Engines created before the call see the node. */
int gs_place_cluster_add_node(gs_place_cluster_t *cluster, const gs_place_node_spec_t *spec,
                              int *index);

/* Returns the number of nodes. */
size_t gs_place_cluster_size(const gs_place_cluster_t *cluster);

/* Returns the node's name (owned by the cluster), or NULL for a bad index. */
const char *gs_place_node_name(const gs_place_cluster_t *cluster, int node);

/* Returns the id of a GPU model known to the cluster, or GS_ENOENT. */
int gs_place_model_id(const gs_place_cluster_t *cluster, const char *model);

/* Returns 1 when model names a GPU gpushare knows (data/gpus/gpu-models.csv: "A100-40GB", or its
 * family before the memory size, "A100"; case-insensitive), else 0. Thread-safe. */
int gs_place_gpu_model_known(const char *model);

/* Returns the i-th GPU model gpushare knows ("A100-40GB"), or NULL past the last. Thread-safe. */
const char *gs_place_gpu_model_name(size_t i);

/* What CUDA sees of the memory of a GPU of that model (as gs_place_gpu_model_known matches it,
 * the first of a family), in bytes; 0 when the model is not known. Thread-safe. */
uint64_t gs_place_gpu_model_memory(const char *model);

/* Turns a list of allowed models ("", "T4", "V100M16|V100M32") into a request's model_mask:
 * 0 for an empty list, GS_PLACE_MODEL_NONE when no listed model is in the cluster. Returns 0, or
 * GS_EINVAL for an over-long list. */
int gs_place_model_mask(const gs_place_cluster_t *cluster, const char *spec, uint64_t *mask);

/* Copies node's state to *state. Returns 0 or GS_EINVAL (bad index). */
int gs_place_node_get(const gs_place_cluster_t *cluster, int node, gs_place_node_state_t *state);

/* Overwrites what is left on a node (cpu_left, mem_left, gpu_left, gpu_mem_left of *state; the
 * capacities are kept): the daemon's way to resynchronise with the truth. Returns 0, or GS_EINVAL
 * when a value exceeds the node's capacity (nothing changes then). */
int gs_place_node_set(gs_place_cluster_t *cluster, int node, const gs_place_node_state_t *state);

/* Takes req's resources on the decided node and GPUs. Returns 0, GS_EINVAL (bad decision) or
 * GS_ENOFIT (the resources are not there; nothing changes). */
int gs_place_commit(gs_place_cluster_t *cluster, const gs_place_request_t *req,
                    const gs_place_decision_t *decision);

/* Gives back what gs_place_commit took. Returns 0, or GS_EINVAL when that would exceed the
 * node's capacity (nothing changes then). */
int gs_place_release(gs_place_cluster_t *cluster, const gs_place_request_t *req,
                     const gs_place_decision_t *decision);

/* Cluster totals in milli-GPU: capacity and currently allocated. */
uint64_t gs_place_cluster_gpu_milli(const gs_place_cluster_t *cluster);
uint64_t gs_place_cluster_used_milli(const gs_place_cluster_t *cluster);

/* ------------------------------------------------------------------------------------------ */
/* Target workload: the task shapes a fragmentation-aware policy plans for                     */

typedef struct gs_place_workload gs_place_workload_t;

/* Creates an empty target workload. Returns 0 or GS_ENOMEM. */
int gs_place_workload_new(gs_place_workload_t **out);

/* Frees it (NULL is fine). */
void gs_place_workload_free(gs_place_workload_t *workload);

/* Counts one task of req's shape (CPU, GPU count, GPU share, allowed models; memory is not part
 * of a shape) with the given weight (> 0, usually 1). Returns 0, GS_EINVAL or GS_ENOMEM. */
int gs_place_workload_add(gs_place_workload_t *workload, const gs_place_request_t *req,
                          double weight);

/* Keeps the most popular shapes that together cover at least `coverage` (0 < coverage <= 1, the
 * artifact uses 0.95) of the total weight, and normalises their frequencies to sum to 1. Call
 * once, after the last gs_place_workload_add. Returns 0, GS_EINVAL or GS_ENOENT (empty). */
int gs_place_workload_finish(gs_place_workload_t *workload, double coverage);

/* Number of shapes kept, and shape i with its frequency. Returns 0 or GS_EINVAL. */
size_t gs_place_workload_size(const gs_place_workload_t *workload);
int gs_place_workload_shape(const gs_place_workload_t *workload, size_t i, gs_place_request_t *req,
                            double *freq);

/* ------------------------------------------------------------------------------------------ */
/* Engine                                                                                      */

typedef struct gs_place_engine gs_place_engine_t;

/* Creates an engine for policy on cluster. FGD and gpushare plan for a finished target workload
 * (copied); without one they plan for the requests seen so far. gpushare derives tables from the
 * workload and the cluster (shape weights; packing prices from an LP solved with COIN-OR CLP, a
 * few milliseconds) when the engine sees nodes for the first time, when nodes are added and when
 * its estimate of the workload changes. seed drives every random choice: the fixed order in which
 * equally good nodes are preferred, and the Random policy. Equal seeds give equal decisions.
 * Returns 0, GS_EINVAL or GS_ENOMEM. The cluster must outlive the engine. */
int gs_place_engine_new(gs_place_cluster_t *cluster, gs_place_policy_t policy,
                        const gs_place_workload_t *workload, uint64_t seed,
                        gs_place_engine_t **out);

/* Frees the engine (NULL is fine). */
void gs_place_engine_free(gs_place_engine_t *engine);

/* Chooses a node and GPUs for req without changing anything. Returns 0 with *decision filled,
 * GS_ENOFIT when no node can take req (decision->node = -1), or GS_EINVAL for a malformed
 * request. */
int gs_place_select(gs_place_engine_t *engine, const gs_place_request_t *req,
                    gs_place_decision_t *decision);

/* gs_place_select followed by gs_place_commit. Same returns. */
int gs_place_place(gs_place_engine_t *engine, const gs_place_request_t *req,
                   gs_place_decision_t *decision);

/* ------------------------------------------------------------------------------------------ */
/* Trace files (the Alibaba openb CSV format, and the simpler formats of `gpushare plan`)      */

/* A task read from a workload file. */
typedef struct gs_place_pod {
    char name[GS_PLACE_NAME_MAX];
    uint32_t cpu_milli;
    uint64_t mem_mib;
    uint32_t num_gpu;
    uint32_t gpu_milli;
    char gpu_spec[GS_PLACE_SPEC_MAX]; /* "" or "A|B" */
    uint64_t gpu_mem_bytes; /* a job of one GPU given by its memory (gpushare plan --job 10G):
                               its share is that memory's on the node type's GPU model, gpu_milli
                               is then 1000 until a plan sets it; 0 = given as a share */
} gs_place_pod_t;

typedef struct gs_place_pods {
    gs_place_pod_t *pods;
    size_t count;
} gs_place_pods_t;

/* The model of a node file's GPU nodes when the file has no model column (or leaves it empty). */
#define GS_PLACE_DEFAULT_MODEL "gpu"

/* A node (or, in `gpushare plan`, a node type) read from a node file. */
typedef struct gs_place_node_row {
    char name[GS_PLACE_NAME_MAX];
    uint32_t cpu_milli; /* UINT32_MAX when the file has no cpu_milli column */
    uint64_t mem_mib;   /* UINT64_MAX when the file has no memory_mib column */
    uint32_t num_gpu;
    char model[GS_PLACE_MODEL_MAX];
    double price_per_hour; /* -1 when the file has no price column */
} gs_place_node_row_t;

typedef struct gs_place_nodes {
    gs_place_node_row_t *nodes;
    size_t count;
} gs_place_nodes_t;

/* Parses a workload: either the openb pod CSV (header with name, cpu_milli, memory_mib, num_gpu,
 * gpu_milli and optionally gpu_spec; other columns are ignored) or a job list (header with gpu
 * and optionally name, count, cpu_milli, memory_mib, gpu_spec; gpu is a fraction "0.25", a
 * percentage "25%" or a whole GPU count "2"; count repeats the row). text need not be
 * NUL-terminated; source names it in messages. On error returns GS_EFORMAT (or GS_ENOMEM) with
 * "source:line: reason" in err, and *out is left empty. The caller frees *out with
 * gs_place_pods_free. */
int gs_place_pods_parse(const char *text, size_t len, const char *source, gs_place_pods_t *out,
                        char *err, size_t errlen);

/* Reads and parses a workload file (as gs_place_pods_parse; also GS_ENOENT/GS_EIO, "path: why"). */
int gs_place_pods_read(const char *path, gs_place_pods_t *out, char *err, size_t errlen);

/* Frees the rows (NULL or empty is fine) and empties *pods. */
void gs_place_pods_free(gs_place_pods_t *pods);

/* Parses a node list: header with sn (or name) and gpu (or gpus), optionally cpu_milli,
 * memory_mib, model and price_per_hour (or price). Same conventions as gs_place_pods_parse. */
int gs_place_nodes_parse(const char *text, size_t len, const char *source, gs_place_nodes_t *out,
                         char *err, size_t errlen);

/* Reads and parses a node file. */
int gs_place_nodes_read(const char *path, gs_place_nodes_t *out, char *err, size_t errlen);

/* Frees the rows (NULL or empty is fine) and empties *nodes. */
void gs_place_nodes_free(gs_place_nodes_t *nodes);

/* Builds a cluster holding every node of the list (in order). Returns 0, GS_EINVAL, GS_ELIMIT or
 * GS_ENOMEM with a message in err. */
int gs_place_cluster_from_nodes(const gs_place_nodes_t *nodes, gs_place_cluster_t **out, char *err,
                                size_t errlen);

/* Fills *req from a pod for the given cluster (the gpu_spec becomes a model mask). Returns 0 or
 * GS_EINVAL. */
int gs_place_pod_request(const gs_place_cluster_t *cluster, const gs_place_pod_t *pod,
                         gs_place_request_t *req);

/* Builds the target workload the ATC'23 artifact uses: every pod of the list counted once, the
 * most popular shapes covering `coverage` kept. Returns 0, GS_EINVAL, GS_ENOENT or GS_ENOMEM. */
int gs_place_workload_from_pods(const gs_place_cluster_t *cluster, const gs_place_pods_t *pods,
                                double coverage, gs_place_workload_t **out);

/* ------------------------------------------------------------------------------------------ */
/* Trace replay: the ATC'23 artifact's experiment                                              */

#define GS_PLACE_TABLE_MAX 130 /* the published table has arrived % columns 0..130 */

typedef struct gs_place_replay_opts {
    gs_place_policy_t policy;
    uint64_t seed;   /* shuffles the pods and drives the policy's random choices */
    double tune;     /* grow (or shrink) the workload to tune x cluster GPU capacity; 0 = as is */
    double coverage; /* target workload coverage; 0 = the policy's own (FGD 0.95, gpushare 1) */
} gs_place_replay_opts_t;

typedef struct gs_place_replay_result {
    size_t events;           /* records: the initial state, then one per arrived pod */
    uint64_t *arrived_milli; /* cumulative GPU milli requested, per record */
    uint64_t *used_milli;    /* GPU milli allocated, per record */
    uint64_t total_milli;    /* cluster GPU capacity in milli */
    uint32_t total_gpus;
    size_t pods;   /* pods scheduled (after tuning) */
    size_t failed; /* pods that fit nowhere */
    /* The published table: mean allocation % over the records whose arrived % rounds to i
     * (falling back to i +- 1), rounded to 2 decimals; valid[i] is 0 when there is none. */
    double table[GS_PLACE_TABLE_MAX + 1];
    uint8_t valid[GS_PLACE_TABLE_MAX + 1];
} gs_place_replay_result_t;

/* Replays pods on nodes following the artifact: pods sorted by name and shuffled with the seed,
 * tuned to opts->tune x capacity by appending pods drawn uniformly with replacement, scheduled
 * once each in order (a pod that fits nowhere is dropped but counts as arrived). Fills *out
 * (free it with gs_place_replay_result_free). Returns 0, GS_EINVAL, GS_ENOENT (no pods or no
 * GPU) or GS_ENOMEM, with a message in err. */
int gs_place_replay(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                    const gs_place_replay_opts_t *opts, gs_place_replay_result_t *out, char *err,
                    size_t errlen);

/* Frees the result's arrays (NULL is fine). */
void gs_place_replay_result_free(gs_place_replay_result_t *result);

/* ------------------------------------------------------------------------------------------ */
/* Capacity planning                                                                           */

typedef struct gs_place_plan {
    uint32_t nodes;           /* nodes of the type needed to place every job; 0 if impossible */
    uint32_t gpus;            /* their GPUs */
    uint64_t requested_milli; /* GPU milli the jobs take (after rounding, for exclusive) */
    int feasible;             /* 0 when some job fits no node of this type at all */
    size_t misfit;            /* index of the first job that fits no empty node, or SIZE_MAX */
} gs_place_plan_t;

/* Finds the fewest nodes of one type on which every job, placed in order by policy, fits. With
 * exclusive set each GPU job gets whole GPUs (one job per GPU: a share is rounded up to one GPU).
 * Returns 0 with *out filled (out->feasible = 0 when a job cannot fit even an empty node, named
 * by out->misfit, or when more than max_nodes would be needed), or GS_EINVAL / GS_ENOMEM with a
 * message in err. */
int gs_place_plan_nodes(const gs_place_node_row_t *type, const gs_place_pods_t *jobs,
                        gs_place_policy_t policy, int exclusive, uint32_t max_nodes,
                        gs_place_plan_t *out, char *err, size_t errlen);

#endif
