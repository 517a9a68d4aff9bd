/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes JSON read and written by gpushare's scheduler extender: resource quantities, Nodes,
 * Pods, and kube-scheduler's extender protocol (k8s.io/kube-scheduler extender/v1).
 *
 * Every parser takes untrusted input (the API server's objects, kube-scheduler's requests) and
 * bounds what it keeps; none keeps a reference to the json_t it reads. Functions are thread-safe
 * (no shared state); objects belong to the caller. */
#ifndef GS_K8S_H
#define GS_K8S_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define GS_K8S_NAME_MAX   254 /* a DNS subdomain name (253) and its NUL */
#define GS_K8S_LABEL_MAX  64  /* a DNS label (63): namespaces, claim references */
#define GS_K8S_UID_MAX    64
#define GS_K8S_ERR_MAX    256
#define GS_K8S_POD_CLAIMS 16 /* resource claims per pod that the extender follows */

/* Internal to src/k8s: copies src into dst (size bytes with the NUL). Returns 0, or -1 when src
 * is NULL, empty while required, or too long (dst is then ""). */
int gs__k8s_copy(char *dst, size_t size, const char *src, int required);

/* Internal to src/k8s: a map from string keys (copied) to pointers, open addressing. */
typedef struct gs__k8s_slot {
    char *key; /* NULL: empty; GS__K8S_TOMB: deleted */
    void *value;
    uint64_t hash;
} gs__k8s_slot_t;

typedef struct gs__k8s_map {
    gs__k8s_slot_t *slots;
    size_t cap, count, used; /* used: live and deleted slots */
} gs__k8s_map_t;

extern char gs__k8s_tomb[1];
#define GS__K8S_TOMB       gs__k8s_tomb
#define GS__K8S_LIVE(slot) ((slot)->key != NULL && (slot)->key != GS__K8S_TOMB)

void *gs__k8s_map_get(const gs__k8s_map_t *map, const char *key);
/* Sets key's value (replacing an old one, returned in *old when old is not NULL). Returns 0 or
 * GS_ENOMEM. */
int gs__k8s_map_put(gs__k8s_map_t *map, const char *key, void *value, void **old);
/* Removes key; returns its value, or NULL. */
void *gs__k8s_map_del(gs__k8s_map_t *map, const char *key);
/* Frees the map, calling free_value (when not NULL) on each value. */
void gs__k8s_map_free(gs__k8s_map_t *map, void (*free_value)(void *));

/* Internal to src/k8s: a growing byte buffer with a cap fixed by its user, always
 * NUL-terminated after data. */
typedef struct gs__k8s_buf {
    char *data;
    size_t len, cap, max;
} gs__k8s_buf_t;

/* Appends n bytes. Returns 0, GS_ELIMIT (past max: nothing appended) or GS_ENOMEM. */
int gs__k8s_buf_add(gs__k8s_buf_t *b, const char *data, size_t n);

/* ---- resource.Quantity ---- */

/* Parses a Kubernetes quantity ("500m", "12", "1.5", "16Gi", "4G", "1e3", "100k") into thousandths
 * of its unit (CPU "500m" -> 500, "16Gi" -> 16 * 2^30 * 1000), rounded up as
 * Quantity.MilliValue() does. Signs are accepted ("-1" -> -1000). Returns 0, GS_EINVAL (not a
 * quantity) or GS_ERANGE (beyond int64 thousandths, i.e. about 9.2e15 units). */
int gs_k8s_qty_milli(const char *text, int64_t *milli);

/* The quantity in whole units, rounded up (Quantity.Value()); as gs_k8s_qty_milli otherwise. */
int gs_k8s_qty_value(const char *text, int64_t *value);

/* Writes bytes as Kubernetes writes a binary quantity: "80Gi", "1536Mi", "4097" (the largest
 * binary suffix that keeps it exact). Returns the length, or GS_ENOSPC (24 bytes always do). */
int gs_k8s_qty_format_bytes(uint64_t bytes, char *buf, size_t len);

/* ---- objects ---- */

/* Reads a string member at a path of object keys ("metadata", "name", NULL); NULL when absent
 * or not a string. The pointer is owned by obj. */
const char *gs_k8s_str(const json_t *obj, ...);

/* What the extender keeps of a Node (v1). */
typedef struct gs_k8s_node {
    char name[GS_K8S_NAME_MAX];
    uint64_t cpu_milli; /* status.allocatable.cpu, milli-CPU */
    uint64_t mem_bytes; /* status.allocatable.memory */
} gs_k8s_node_t;

/* Parses a Node. Returns 0, or GS_EFORMAT with the reason in err (no name, a malformed or
 * negative allocatable quantity; a missing allocatable counts as 0). */
int gs_k8s_node_parse(const json_t *obj, gs_k8s_node_t *out, char *err, size_t errlen);

/* A pod's reference to a ResourceClaim. */
typedef struct gs_k8s_pod_claim {
    char ref[GS_K8S_LABEL_MAX];  /* spec.resourceClaims[].name */
    char claim[GS_K8S_NAME_MAX]; /* the ResourceClaim's name; "" while a template's claim is
                                  * not yet named in status.resourceClaimStatuses */
} gs_k8s_pod_claim_t;

/* What the extender keeps of a Pod (v1). */
typedef struct gs_k8s_pod {
    char ns[GS_K8S_LABEL_MAX];
    char name[GS_K8S_NAME_MAX];
    char uid[GS_K8S_UID_MAX];
    char node[GS_K8S_NAME_MAX]; /* spec.nodeName, "" when not bound */
    int terminal;               /* status.phase Succeeded or Failed: holds nothing */
    uint64_t cpu_milli;         /* effective requests, as kube-scheduler counts them */
    uint64_t mem_bytes;
    size_t nclaims;
    gs_k8s_pod_claim_t claims[GS_K8S_POD_CLAIMS];
} gs_k8s_pod_t;

/* Parses a Pod: identity, node, phase, the effective CPU and memory requests (the larger of the
 * containers' sum and each init container's, sidecars counted with both, plus the overhead) and
 * its resource claims. Returns 0, or GS_EFORMAT with the reason in err (no uid or name, a
 * malformed quantity, more than GS_K8S_POD_CLAIMS claims). */
int gs_k8s_pod_parse(const json_t *obj, gs_k8s_pod_t *out, char *err, size_t errlen);

/* ---- the extender protocol ---- */

/* ExtenderArgs: {"pod": Pod, "nodes": NodeList} or {"pod": Pod, "nodenames": [names]}. */
typedef struct gs_k8s_args {
    int pod_ok; /* the pod parsed (else pod_err says why) */
    gs_k8s_pod_t pod;
    char pod_err[GS_K8S_ERR_MAX];
    size_t count;       /* candidate nodes */
    const char **names; /* count names, pointing into root */
    json_t *nodes;      /* the NodeList's items when given as objects (returned filtered) */
    json_t *root;       /* the parsed body, owned */
} gs_k8s_args_t;

/* Longest ExtenderArgs body the extender reads (a NodeList of 5,000 full Node objects fits). */
#define GS_K8S_ARGS_MAX (64u << 20)

/* Parses an ExtenderArgs body (not NUL-terminated). Returns 0 when the candidate nodes parsed
 * (args->pod_ok says whether the pod did too), or GS_EFORMAT (not JSON, no node list, a node
 * without a name, more than 1,000,000 nodes) / GS_ENOMEM with the reason in err; then *args
 * is empty. Free with gs_k8s_args_free. */
int gs_k8s_args_parse(const char *body, size_t len, gs_k8s_args_t *args, char *err, size_t errlen);

void gs_k8s_args_free(gs_k8s_args_t *args);

/* Filter verdict of one candidate node. */
typedef enum gs_k8s_verdict {
    GS_K8S_PASS = 0,
    GS_K8S_FAIL,         /* failedNodes: may pass later (room frees, preemption) */
    GS_K8S_UNRESOLVABLE, /* failedAndUnresolvableNodes: never (no such GPUs) */
} gs_k8s_verdict_t;

/* ExtenderFilterResult for args: the passing nodes as "nodenames" (or "nodes", the objects, when
 * args had objects), the others in "failedNodes" / "failedAndUnresolvableNodes" with
 * reason[i]; verdict NULL passes every node. With error set, only {"error": error} (its bytes
 * outside printable ASCII shown as "?"). Returns a
 * malloc'ed NUL-terminated JSON text, or NULL when memory is short. */
char *gs_k8s_filter_result(const gs_k8s_args_t *args, const gs_k8s_verdict_t *verdict,
                           const char *const *reason, const char *error);

/* HostPriorityList: [{"host": name, "score": scores[i]}...] in args' order; scores NULL gives
 * every node 0. Returns malloc'ed JSON text, or NULL when memory is short. */
char *gs_k8s_priority_list(const gs_k8s_args_t *args, const int64_t *scores);

/* kube-scheduler's extender score range (extender/v1 MaxExtenderPriority). */
#define GS_K8S_MAX_PRIORITY 10

#endif
