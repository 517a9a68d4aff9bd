/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler extender's model of a cluster: Nodes, Pods, gpushare ResourceSlices and
 * ResourceClaims as the API server reports them, the placement engine built on them, and the
 * filter and prioritize verbs answered from it.
 *
 * Threading: every gs_k8s_model_* function takes the model's mutex, so the watch threads and
 * the HTTP server's threads may call them concurrently; answers are computed under the mutex.
 * Ownership: the model copies what it keeps; objects passed in stay the caller's. */
#ifndef GS_K8S_MODEL_H
#define GS_K8S_MODEL_H

#include "dra.h"
#include "k8s.h"

#include "gpushare/placement.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

typedef enum gs_k8s_kind {
    GS_K8S_NODES = 0,
    GS_K8S_PODS,
    GS_K8S_SLICES,
    GS_K8S_CLAIMS,
    GS_K8S_KINDS
} gs_k8s_kind_t;

/* "nodes", "pods", "resourceslices", "resourceclaims". */
const char *gs_k8s_kind_name(gs_k8s_kind_t kind);

typedef enum gs_k8s_event { GS_K8S_ADDED = 0, GS_K8S_MODIFIED, GS_K8S_DELETED } gs_k8s_event_t;

typedef struct gs_k8s_model_opts {
    gs_place_policy_t policy;        /* GS_PLACE_GPUSHARE (default 0 means Random: set it) or FGD */
    uint64_t seed;                   /* the engine's fixed order of equally good nodes */
    const gs_place_pods_t *workload; /* target workload (copied); NULL: learned from the pods
                                      * scored, rebuilt when their count doubles or a new shape
                                      * appears (as the engine does without a workload) */
    double assume_seconds;           /* a scored pod is assumed on its best node until the API
                                      * server shows where it went, at most this long; 0: off */
    int policy_gpus;                 /* score the policy's own GPU choice on each node rather
                                      * than the allocator's first fit (for comparison only) */
} gs_k8s_model_opts_t;

typedef struct gs_k8s_model gs_k8s_model_t;

/* Creates an empty model (not synced). Returns 0, GS_EINVAL (a policy without a fragmentation
 * measure) or GS_ENOMEM, with a message in err. */
int gs_k8s_model_new(const gs_k8s_model_opts_t *opts, gs_k8s_model_t **out, char *err,
                     size_t errlen);

void gs_k8s_model_free(gs_k8s_model_t *model);

/* Applies one object of kind (a watch event, or an item of a LIST between list_begin and
 * list_end). Slices of other drivers are ignored. Returns 0, or GS_EFORMAT with the reason in
 * err (the object is ignored; a DELETED event still removes what it names). */
int gs_k8s_model_apply(gs_k8s_model_t *model, gs_k8s_kind_t kind, gs_k8s_event_t event,
                       const json_t *obj, char *err, size_t errlen);

/* A LIST of kind replaces what the model holds of it: objects applied between these two calls
 * are kept, the others removed; list_end marks the kind synced. */
void gs_k8s_model_list_begin(gs_k8s_model_t *model, gs_k8s_kind_t kind);
void gs_k8s_model_list_end(gs_k8s_model_t *model, gs_k8s_kind_t kind);

/* Marks kind out of sync (its watch broke) or back in sync (since a moment `now`, in the
 * caller's monotonic seconds). */
void gs_k8s_model_set_synced(gs_k8s_model_t *model, gs_k8s_kind_t kind, int synced);

/* Nonzero when every kind has been listed and none is out of sync. */
int gs_k8s_model_synced(gs_k8s_model_t *model);

/* An answer to a verb. */
typedef struct gs_k8s_answer {
    int neutral; /* pass every node / equal scores; why says why */
    char why[GS_K8S_ERR_MAX];
    size_t count;              /* = args->count */
    gs_k8s_verdict_t *verdict; /* filter: per candidate */
    const char **reason;       /* filter: per candidate, static text */
    int64_t *scores;           /* prioritize: per candidate, 0..GS_K8S_MAX_PRIORITY */
    int best;                  /* prioritize: the candidate the policy chose, -1 */
    size_t unknown;            /* candidates the model does not know (passed, scored 0) */
} gs_k8s_answer_t;

/* filter: candidates without GPU room for the pod's gpushare claims fail (unresolvable when the
 * node has no such GPUs); unknown nodes pass; when every candidate would fail the model is
 * taken to be out of date and all pass. Neutral (all pass, why set) when the model is not
 * synced, the pod did not parse, or its claims are missing, of another driver, or outside the
 * placement model. `now`: monotonic seconds (assumptions expire by it). Returns 0, or GS_ENOMEM
 * (then *answer is empty). */
int gs_k8s_model_filter(gs_k8s_model_t *model, const gs_k8s_args_t *args, double now,
                        gs_k8s_answer_t *answer);

/* prioritize: the policy's choice among the candidates scores GS_K8S_MAX_PRIORITY, the other
 * feasible ones 1..9 by the policy's score, the rest 0; neutral (all 0) in the cases of filter.
 * With assume_seconds the chosen placement is assumed until the API server shows the pod's
 * binding and claims. Returns 0 or GS_ENOMEM. */
int gs_k8s_model_prioritize(gs_k8s_model_t *model, const gs_k8s_args_t *args, double now,
                            gs_k8s_answer_t *answer);

void gs_k8s_answer_free(gs_k8s_answer_t *answer);

/* Counters for /healthz and logs. */
typedef struct gs_k8s_model_stats {
    size_t nodes, gpu_nodes, gpus, pods, claims, assumed;
    int synced[GS_K8S_KINDS];
    uint64_t rebuilds, answers, neutral;
} gs_k8s_model_stats_t;

void gs_k8s_model_stats(gs_k8s_model_t *model, gs_k8s_model_stats_t *stats);

/* ---- internal to the model's files (model.c, model_score.c) ---- */

/* A node as the model knows it (from a Node, a slice, or only named by a pod or claim). */
typedef struct gs__mnode {
    char name[GS_K8S_NAME_MAX];
    int has_node, has_slice;
    gs_k8s_node_t node;
    gs_dra_slice_t slice; /* gpushare's slice for the node (pool = node name) */
    int index;            /* in the cluster, -1 when not in it */
    uint32_t ngpu;
    int8_t gpu_of[GS_DRA_DEVICES];    /* slice device -> GPU index, -1 when not scored (MIG) */
    uint8_t order[GS_PLACE_MAX_GPUS]; /* GPU indexes in slice order: the allocator's first fit */
    uint64_t gpu_mem, gpu_compute;    /* per GPU capacity */
    int64_t cpu_used, mem_used;       /* milli-CPU, bytes: bound pods and assumed ones */
    int64_t milli_used[GS_PLACE_MAX_GPUS]; /* per GPU: milli-GPU of compute */
    int64_t bytes_used[GS_PLACE_MAX_GPUS]; /* per GPU: device memory */
    uint64_t version; /* changes with the node's state or order (score caches) */
    int dirty;        /* usage changed since the cluster was told */
    int seen;         /* LIST bookkeeping */
} gs__mnode_t;

/* What a pod, claim or assumption takes on one node. */
typedef struct gs__usage {
    gs__mnode_t *node;
    int64_t cpu, mem;
    uint8_t ngpu;
    uint8_t gpu[GS_PLACE_MAX_GPUS];
    int64_t milli[GS_PLACE_MAX_GPUS], bytes[GS_PLACE_MAX_GPUS];
} gs__usage_t;

typedef struct gs__mpod {
    gs_k8s_pod_t pod;
    gs__usage_t use; /* node NULL when not counted */
    int seen;
} gs__mpod_t;

typedef struct gs__mclaim {
    gs_dra_claim_t claim;
    char key[GS_K8S_LABEL_MAX + GS_K8S_NAME_MAX]; /* namespace/name */
    gs__usage_t use;
    int seen;
} gs__mclaim_t;

/* A pod the extender scored, assumed on its chosen node until the API server shows it. */
typedef struct gs__assumed {
    char uid[GS_K8S_UID_MAX];
    double expires;
    gs__usage_t cpu_part, gpu_part; /* each dropped when the binding / allocation shows */
    size_t nclaims;
    char claims[GS_K8S_POD_CLAIMS][GS_K8S_LABEL_MAX + GS_K8S_NAME_MAX];
} gs__assumed_t;

/* A learned task shape and how often it was seen. */
typedef struct gs__seen_shape {
    gs_place_request_t req; /* what makes a shape (as gs_place_workload_add sees it): CPU, GPU
                             * count and share; the models are in `models` */
    char models[GS_PLACE_SPEC_MAX];
    double count, mem_sum; /* tasks seen, and their host memory (MiB) for the mean */
} gs__seen_shape_t;

/* Scores of one request shape on every node, stamped with the node's version. */
typedef struct gs__mcache {
    gs_place_request_t key;
    uint64_t *version;
    int64_t *score;
    int used;
} gs__mcache_t;

#define GS__MODEL_CACHES 64

struct gs_k8s_model {
    pthread_mutex_t lock;
    gs_k8s_model_opts_t opts;
    gs_place_pods_t workload;                  /* copy of opts.workload's pods */
    gs__k8s_map_t nodes, pods, claims, slices; /* slices: slice name -> node name (strdup) */
    gs__k8s_map_t scored;                      /* pod uids already counted in the workload */
    int listed[GS_K8S_KINDS], broken[GS_K8S_KINDS];
    int stale; /* the cluster must be rebuilt */
    gs_place_cluster_t *cluster;
    gs_place_engine_t *engine;
    gs__mnode_t **by_index; /* cluster index -> node */
    size_t nindex;
    gs__seen_shape_t *shapes; /* learned workload */
    size_t nshapes, capshapes;
    double shapes_total, shapes_next;
    int shapes_changed;
    gs__assumed_t *assumed;
    size_t nassumed, capassumed;
    gs__mcache_t caches[GS__MODEL_CACHES];
    size_t next_cache;
    uint64_t rebuilds, answers, neutral;
};

/* model.c */
gs__mnode_t *gs__model_node(gs_k8s_model_t *m, const char *name, int create);
void gs__usage_add(gs__usage_t *u, int sign);
int gs__model_rebuild(gs_k8s_model_t *m, char *err, size_t errlen);
void gs__model_flush(gs_k8s_model_t *m);
void gs__model_assumed_drop(gs_k8s_model_t *m, size_t i);
void gs__model_assumed_expire(gs_k8s_model_t *m, double now);
/* model_score.c */
void gs__model_caches_clear(gs_k8s_model_t *m);
int gs__model_engine(gs_k8s_model_t *m, char *err, size_t errlen);

#endif
