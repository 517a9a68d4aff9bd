/* SPDX-License-Identifier: Apache-2.0 */
/* Private interfaces of src/placement: cluster layout, engine, policies, CSV reader, RNG. */
#ifndef GS_PLACEMENT_INTERNAL_H
#define GS_PLACEMENT_INTERNAL_H

#include "gpushare/placement.h"

#include <stdarg.h>
#include <stdint.h>

/* ---- random numbers: xoshiro256** seeded through splitmix64 ---- */

typedef struct gs__rng {
    uint64_t s[4];
} gs__rng_t;

void gs__rng_seed(gs__rng_t *rng, uint64_t seed);
uint64_t gs__rng_next(gs__rng_t *rng);
/* Uniform in [0, bound) without modulo bias; bound must be > 0. */
uint64_t gs__rng_below(gs__rng_t *rng, uint64_t bound);

/* ---- messages ---- */

/* ---- cluster ---- */

/* Task kinds GpuClustering groups by: share, then whole-GPU tasks by their GPU count. */
#define GS__TAG_SHARE 0
#define GS__TAGS      (GS_PLACE_MAX_GPUS + 1)

typedef struct gs__node {
    char name[GS_PLACE_NAME_MAX];
    uint32_t cpu_cap, cpu_left;
    uint64_t mem_cap, mem_left;
    uint32_t ngpu;
    int model;          /* -1 for a node without GPUs */
    uint64_t model_bit; /* 1 << model, 0 without GPUs */
    uint32_t gpu_left[GS_PLACE_MAX_GPUS];
    uint64_t gpu_mem_cap; /* per GPU, 0 = not tracked */
    uint64_t gpu_mem_left[GS_PLACE_MAX_GPUS];
    uint32_t milli_left;     /* sum of gpu_left */
    uint32_t free_gpus;      /* GPUs with 1000 milli left */
    uint32_t tags[GS__TAGS]; /* running GPU tasks per kind (GpuClustering) */
    uint64_t version;        /* changes whenever anything above changes */
} gs__node_t;

struct gs_place_cluster {
    gs__node_t *nodes;
    size_t count, cap;
    char models[GS_PLACE_MAX_MODELS][GS_PLACE_MODEL_MAX];
    int nmodels;
    uint64_t stamp; /* source of node versions */
    uint64_t total_milli, used_milli;
};

/* Marks a node changed (new version) and refreshes its derived fields. */
void gs__node_touch(gs_place_cluster_t *cluster, gs__node_t *node);

/* Returns nonzero when GPU g of node can hold the per-GPU part of req. */
static inline int gs__gpu_fits(const gs__node_t *node, unsigned g, const gs_place_request_t *req)
{
    return node->gpu_left[g] >= req->gpu_milli &&
           (node->gpu_mem_cap == 0 || node->gpu_mem_left[g] >= req->gpu_mem_bytes);
}

/* Returns nonzero when node passes every filter for req except host memory: model, CPU and
 * enough GPUs with room. */
int gs__node_feasible(const gs__node_t *node, const gs_place_request_t *req);

/* The artifact's GPU choice for whole-GPU requests: the first free GPUs by index. */
void gs__pick_first_free(const gs__node_t *node, const gs_place_request_t *req,
                         gs_place_decision_t *d);

/* The tightest GPU that fits a share request (least milli left, lowest index on ties), or -1. */
int gs__pick_best_fit_gpu(const gs__node_t *node, const gs_place_request_t *req);

/* ---- target workload ---- */

typedef struct gs__shape {
    gs_place_request_t req; /* mem_mib: the mean of the tasks counted; gpu_mem_bytes is 0 */
    double weight;          /* count while building, frequency once finished */
    double mem_sum;         /* weighted sum of the tasks' memory, for the mean */
} gs__shape_t;

struct gs_place_workload {
    gs__shape_t *shapes;
    size_t count, cap;
    double total;
    int finished;
};

/* ---- packing values (gpushare's policy) ---- */

/* CPU axis of the completion table: whole cores, larger amounts count as this many. */
#define GS__PACK_CORES 128
/* The LP prices this many share sizes at most, the most demanded (the openb traces have 20; a
 * daemon may see any milli-GPU): 64 sizes solve in milliseconds, 999 in seconds. */
#define GS__PACK_SIZES 64

/* What GPU room is worth to the target workload, in GPUs of an optimal packing: the dual prices
 * of its GPU shares in the fractional bin-packing LP, and value[room][cores], the most a GPU with
 * that room can still be worth when the node has that many cores left for the tasks filling it. */
typedef struct gs__pack {
    double price[GS_PLACE_MILLI + 1]; /* by share in milli; price[1000] = 1 (a whole GPU) */
    uint8_t known[GS_PLACE_MILLI + 1];
    float *value; /* (GS_PLACE_MILLI + 1) x (GS__PACK_CORES + 1) */
} gs__pack_t;

/* Builds the packing values of shapes[0..n) (weights are their frequencies): prices of the
 * GS__PACK_SIZES most demanded share sizes, the completion table. Returns 0, GS_ENOMEM or GS_EIO
 * (the LP solver failed); *out is freed with gs__pack_free. */
int gs__pack_build(const gs__shape_t *shapes, size_t n, gs__pack_t **out);
void gs__pack_free(gs__pack_t *pack);

/* The packing value of a node's GPU room (GPUs), given its CPU left. */
double gs__pack_node_value(const gs__pack_t *pack, const gs__node_t *node);

/* What a request is worth in GPUs of an optimal packing: its GPU count for whole GPUs, the dual
 * price of its share (for a share the workload lacks, the value of that much room), 0 without
 * GPUs. */
double gs__pack_request_price(const gs__pack_t *pack, const gs_place_request_t *req);

/* Dual prices of the fractional bin-packing LP: min sum x_p over patterns p (multisets of sizes
 * that fit one GPU) with sum_p count(i in p) x_p >= demand[i]. Fills price[0..n). Returns 0,
 * GS_EINVAL or GS_EIO. */
int gs__pack_lp_prices(const uint32_t *size, const double *demand, uint32_t n, double *price);

/* ---- engine ---- */

/* A node's score for a request: larger is better; GS__INFEASIBLE when it cannot take it. */
#define GS__INFEASIBLE INT64_MIN

typedef struct gs__policy_ops {
    const char *name;
    const char *label;
    /* Scores a node that passed the filters (gs__node_feasible). */
    int64_t (*score)(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req);
    /* Chooses the GPUs on the selected node; NULL means the default (tightest GPU for a share,
     * first free GPUs for whole GPUs). */
    void (*choose)(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req,
                   gs_place_decision_t *d);
    /* Fragmentation of a node state for the target workload (FGD and gpushare). */
    double (*frag)(const gs_place_engine_t *e, const gs__node_t *node);
    /* Optional, for policies with frag: how much of the node's packing value (milli-GPU, >= 0)
     * placing req loses, node -> after; a larger regret always scores lower. */
    double (*regret)(const gs_place_engine_t *e, const gs__node_t *node, const gs__node_t *after,
                     const gs_place_request_t *req);
    /* Optional: recomputes the policy's per-engine tables after the target workload or the set
     * of nodes changed. Returns 0 or GS_ENOMEM. */
    int (*prepare)(gs_place_engine_t *e);
    int cacheable;     /* the score depends only on the node's state and the request */
    int random_ties;   /* equal scores: uniformly random node, not the first in the order */
    int uses_workload; /* needs fragmentation bookkeeping */
} gs__policy_ops_t;

/* Cached scores of one request shape on every node. */
typedef struct gs__score_cache {
    gs_place_request_t key;
    uint64_t *version; /* per node: the node version the score was computed for (0 = none) */
    int64_t *score;
} gs__score_cache_t;

/* Cached fragmentation of each node for the target workload. */
typedef struct gs__frag_cache {
    uint64_t version;
    double frag;
} gs__frag_cache_t;

/* Shape caches are found through an open-addressing table of this many slots (a power of 2);
 * shapes beyond GS__CACHE_MAX are scored without a cache. */
#define GS__CACHE_SLOTS 8192
#define GS__CACHE_MAX   4096

struct gs_place_engine {
    gs_place_cluster_t *cluster;
    gs_place_policy_t policy;
    const gs__policy_ops_t *ops;
    gs__rng_t rng;
    gs__shape_t *shapes; /* target workload (frequencies sum to 1) */
    size_t nshapes;
    gs_place_workload_t *observed; /* without a given workload: the requests seen so far */
    double observed_next;          /* rebuild the target workload when this many are seen */
    gs__score_cache_t *caches;
    size_t ncaches;
    int32_t *slots; /* GS__CACHE_SLOTS entries: cache index, or -1 */
    gs__frag_cache_t *frag;
    size_t nodes_seen; /* size of the per-node arrays */
    int *ties;         /* equally good nodes (policies that pick among them at random) */
    uint64_t *rank;    /* per node: its place in the engine's fixed order, for ties */
    double *weight;    /* gpushare: per shape, the weight of its fragmentation */
    gs__pack_t *pack;  /* gpushare: packing values of the target workload's GPU shares */
};

/* The table of policies, indexed by gs_place_policy_t. */
extern const gs__policy_ops_t *const gs__policies[GS_PLACE_POLICY_COUNT];
extern const gs__policy_ops_t gs__policy_random, gs__policy_dotprod, gs__policy_clustering,
    gs__policy_packing, gs__policy_bestfit, gs__policy_fgd, gs__policy_gpushare, gs__policy_spread;

/* The target workload coverage a policy plans with when none is given: FGD keeps the shapes
 * covering 95 % of the tasks (as its artifact); gpushare keeps every shape. */
double gs__default_coverage(gs_place_policy_t policy);

/* The node's fragmentation (ops->frag) for its current version, cached. */
double gs__frag_cached(gs_place_engine_t *e, const gs__node_t *node);

/* FGD's decision rule, shared by FGD and gpushare: the score of a node is the decrease of its
 * fragmentation (ops->frag) mapped through a sigmoid onto the scheduler's integers 0..100, less
 * 128 per milli-GPU of the policy's regret (ops->regret, when it has one); a share goes to the GPU
 * with the best score (lowest index on ties), whole GPUs are the first free ones. */
int64_t gs__frag_score(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req);
void gs__frag_choose(gs_place_engine_t *e, const gs__node_t *node, const gs_place_request_t *req,
                     gs_place_decision_t *d);

/* The same score for req placed on the GPUs of d (a first-fit allocator's choice rather than the
 * policy's own); d must fit (gs__node_feasible, gs__gpu_fits on each GPU). */
int64_t gs__frag_score_decision(gs_place_engine_t *e, const gs__node_t *node,
                                const gs_place_request_t *req, const gs_place_decision_t *d);

/* Applies req to a copy of node on the GPUs of d (d->num_gpu may be 0 for CPU-only requests). */
void gs__node_apply(gs__node_t *node, const gs_place_request_t *req, const gs_place_decision_t *d);

/* ---- CSV ---- */

#define GS__CSV_LINE_MAX   4096
#define GS__CSV_FIELDS_MAX 64

typedef struct gs__csv {
    const char *p, *end;
    const char *source;
    unsigned line; /* line number of the current row (1-based) */
    char buf[GS__CSV_LINE_MAX];
    char *field[GS__CSV_FIELDS_MAX];
    unsigned nfields;
    int comments; /* set by the caller: lines starting with '#' are comments */
} gs__csv_t;

void gs__csv_init(gs__csv_t *csv, const char *text, size_t len, const char *source);
/* Reads the next non-blank row into csv->field. Returns 1 for a row, 0 at the end, or GS_EFORMAT
 * with "source:line: reason" in err. */
int gs__csv_next(gs__csv_t *csv, char *err, size_t errlen);
/* Index of the header column named name (case-insensitive), or -1. */
int gs__csv_column(const gs__csv_t *csv, const char *name);
/* Reads a whole file into a fresh NUL-terminated buffer. Returns 0, GS_ENOENT, GS_EIO,
 * GS_ENOMEM or GS_ELIMIT (over 1 GiB) with "path: why" in err. */
int gs__read_file(const char *path, char **text, size_t *len, char *err, size_t errlen);

#endif
