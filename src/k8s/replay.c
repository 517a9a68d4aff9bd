/* SPDX-License-Identifier: Apache-2.0 */
/* The online replay (replay.h): the cluster side — kube-scheduler's feasibility, its choice among
 * the extender's scores, the DRA allocator, the plugin's device order — around the extender's
 * model, which sees only JSON. */
#include "replay.h"

#include "dra.h"
#include "k8s.h"
#include "model.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAMESPACE "openb"

/* A node as the cluster holds it: the published slice (devices in its current order) and what
 * is taken of each device (same order), CPU and memory left. */
typedef struct rnode {
    char name[GS_PLACE_NAME_MAX];
    gs_dra_slice_t slice;
    gs_dra_usage_t usage[GS_PLACE_MAX_GPUS];
    uint64_t cpu_left, mem_left; /* milli-CPU, MiB */
} rnode_t;

/* A change the extender learns of through a watch, `due` pods later. */
typedef struct event {
    size_t due;
    gs_k8s_kind_t kind;
    json_t *obj;
} event_t;

typedef struct replay {
    const gs_k8s_replay_opts_t *opts;
    const gs_place_pods_t *pods;
    rnode_t *rn;
    size_t nn;
    gs_k8s_model_t *model;
    gs_place_cluster_t *mirror; /* the plugins' view, for the device order */
    gs_place_engine_t *mirror_engine;
    event_t *events;
    size_t nevents, capevents;
    uint64_t rng, share_seq;
    gs_k8s_replay_stats_t *stats;
    char *err;
    size_t errlen;
} replay_t;

static uint64_t next_random(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int queue(replay_t *r, size_t due, gs_k8s_kind_t kind, json_t *obj)
{
    if (obj == NULL)
        return GS_ENOMEM;
    if (r->nevents == r->capevents) {
        size_t cap = r->capevents ? r->capevents * 2 : 64;
        event_t *grown = realloc(r->events, cap * sizeof(*grown));
        if (grown == NULL) {
            json_decref(obj);
            return GS_ENOMEM;
        }
        r->events = grown;
        r->capevents = cap;
    }
    r->events[r->nevents++] = (event_t){.due = due, .kind = kind, .obj = obj};
    return 0;
}

/* Sends the extender the events due by `now` (in order), as MODIFIED watch events. */
static int deliver(replay_t *r, size_t now)
{
    size_t kept = 0;
    int result = 0;
    for (size_t i = 0; i < r->nevents; i++) {
        event_t *e = &r->events[i];
        if (e->due > now) {
            r->events[kept++] = *e;
            continue;
        }
        if (result == 0)
            result =
                gs_k8s_model_apply(r->model, e->kind, GS_K8S_MODIFIED, e->obj, r->err, r->errlen);
        json_decref(e->obj);
    }
    r->nevents = kept;
    return result;
}

static json_t *node_json(const gs_place_node_row_t *row)
{
    char cpu[32], mem[32];
    snprintf(cpu, sizeof(cpu), "%um", row->cpu_milli);
    snprintf(mem, sizeof(mem), "%lluMi", (unsigned long long)row->mem_mib);
    return json_pack("{s:s,s:s,s:{s:s},s:{s:{s:s,s:s}}}", "apiVersion", "v1", "kind", "Node",
                     "metadata", "name", row->name, "status", "allocatable", "cpu", cpu, "memory",
                     mem);
}

/* The node's slice as gpushare's plugin publishes it: one shared device per GPU. */
static int make_slice(replay_t *r, const gs_place_node_row_t *row, rnode_t *n)
{
    gs_dra_slice_t *s = &n->slice;
    snprintf(s->name, sizeof(s->name), "%s-%s", row->name, GS_DRA_DRIVER);
    snprintf(s->driver, sizeof(s->driver), "%s", GS_DRA_DRIVER);
    snprintf(s->node, sizeof(s->node), "%s", row->name);
    snprintf(s->pool, sizeof(s->pool), "%s", row->name);
    s->generation = 1;
    s->slice_count = 1;
    s->devices = calloc(row->num_gpu ? row->num_gpu : 1, sizeof(*s->devices));
    if (s->devices == NULL)
        return GS_ENOMEM;
    uint64_t memory = r->opts->gpu_memory ? r->opts->gpu_memory : UINT64_C(32) << 30;
    for (uint32_t g = 0; g < row->num_gpu; g++) {
        char uuid[GS_PLACE_NAME_MAX + 16]; /* gs_dra_device_init keeps what fits */
        snprintf(uuid, sizeof(uuid), "GPU-%s-%u", row->name, g);
        gs_dra_device_init(&s->devices[g], g, uuid, row->model, GS_DRA_SHARED, memory, "12.4.0");
    }
    s->count = row->num_gpu;
    return 0;
}

/* The model sees the cluster's nodes and slices as a LIST of each kind. */
static int setup_model(replay_t *r, const gs_place_nodes_t *nodes)
{
    gs_k8s_model_opts_t mo = {.policy = GS_PLACE_GPUSHARE,
                              .seed = r->opts->seed,
                              .workload = r->opts->learn ? NULL : r->pods,
                              .assume_seconds = r->opts->assume_seconds,
                              .policy_gpus = r->opts->policy_gpus};
    int result = gs_k8s_model_new(&mo, &r->model, r->err, r->errlen);
    for (int k = 0; k < GS_K8S_KINDS && result == 0; k++)
        gs_k8s_model_list_begin(r->model, (gs_k8s_kind_t)k);
    for (size_t i = 0; i < nodes->count && result == 0; i++) {
        const gs_place_node_row_t *row = &nodes->nodes[i];
        rnode_t *n = &r->rn[i];
        snprintf(n->name, sizeof(n->name), "%s", row->name);
        n->cpu_left = row->cpu_milli;
        n->mem_left = row->mem_mib;
        json_t *obj = node_json(row);
        result = obj == NULL ? GS_ENOMEM
                             : gs_k8s_model_apply(r->model, GS_K8S_NODES, GS_K8S_ADDED, obj, r->err,
                                                  r->errlen);
        json_decref(obj);
        if (result == 0 && row->num_gpu > 0 && (result = make_slice(r, row, n)) == 0) {
            obj = gs_dra_slice_json(&n->slice);
            result = obj == NULL ? GS_ENOMEM
                                 : gs_k8s_model_apply(r->model, GS_K8S_SLICES, GS_K8S_ADDED, obj,
                                                      r->err, r->errlen);
            json_decref(obj);
        }
    }
    for (int k = 0; k < GS_K8S_KINDS && result == 0; k++)
        gs_k8s_model_list_end(r->model, (gs_k8s_kind_t)k);
    return result;
}

/* The DRA plugins' view, from which they order their devices: the same nodes, and for the
 * policy order gpushare's engine with the trace's target workload. */
static int setup_mirror(replay_t *r, const gs_place_nodes_t *nodes)
{
    int result = gs_place_cluster_from_nodes(nodes, &r->mirror, r->err, r->errlen);
    if (result != 0)
        return result;
    gs_place_workload_t *w = NULL;
    gs_place_policy_t policy = GS_PLACE_BESTFIT; /* any engine for index and tightest */
    if (r->opts->order == GS_PLACE_ORDER_POLICY) {
        policy = GS_PLACE_GPUSHARE;
        result = gs_place_workload_from_pods(r->mirror, r->pods, 1.0, &w);
    }
    if (result == 0)
        result = gs_place_engine_new(r->mirror, policy, w, r->opts->seed, &r->mirror_engine);
    gs_place_workload_free(w);
    return result != 0 ? gs_fail(r->err, r->errlen, result, "plugin view: %s", gs_strerror(result))
                       : 0;
}

static json_t *pod_json(const gs_place_pod_t *p, size_t i, const char *claim, const char *node)
{
    char name[GS_PLACE_NAME_MAX + 24], uid[32], cpu[32], mem[32];
    snprintf(name, sizeof(name), "%s-%zu", p->name, i);
    snprintf(uid, sizeof(uid), "pod-uid-%zu", i);
    snprintf(cpu, sizeof(cpu), "%um", p->cpu_milli);
    snprintf(mem, sizeof(mem), "%lluMi", (unsigned long long)p->mem_mib);
    json_t *spec = json_pack("{s:[{s:s,s:{s:{s:s,s:s}}}]}", "containers", "name", "main",
                             "resources", "requests", "cpu", cpu, "memory", mem);
    if (spec != NULL && claim != NULL)
        json_object_set_new(spec, "resourceClaims",
                            json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", claim));
    if (spec != NULL && node != NULL)
        json_object_set_new(spec, "nodeName", json_string(node));
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:o,s:{s:s}}", "apiVersion", "v1", "kind", "Pod",
                     "metadata", "name", name, "namespace", NAMESPACE, "uid", uid, "spec", spec,
                     "status", "phase", node != NULL ? "Running" : "Pending");
}

/* The pod's claim: count GPUs of class gpu.gpushare.io; a share names its compute (percent,
 * rounded up) and memory (the same fraction of the published memory, in whole MiB). */
static int claim_of(const replay_t *r, const gs_place_pod_t *p, size_t i, gs_dra_claim_t *c)
{
    memset(c, 0, sizeof(*c));
    if ((c->requests = calloc(1, sizeof(*c->requests))) == NULL)
        return GS_ENOMEM;
    c->nrequests = 1;
    snprintf(c->ns, sizeof(c->ns), "%s", NAMESPACE);
    snprintf(c->name, sizeof(c->name), "%s-%zu-gpu", p->name, i);
    snprintf(c->uid, sizeof(c->uid), "claim-uid-%zu", i);
    gs_dra_request_t *q = &c->requests[0];
    snprintf(q->name, sizeof(q->name), "gpu");
    snprintf(q->device_class, sizeof(q->device_class), "%s", GS_DRA_CLASS);
    snprintf(q->models, sizeof(q->models), "%s", p->gpu_spec);
    q->count = p->num_gpu;
    if (p->gpu_milli < GS_PLACE_MILLI) {
        uint64_t memory = r->opts->gpu_memory ? r->opts->gpu_memory : UINT64_C(32) << 30;
        uint64_t mib = memory / GS_DRA_MIB * p->gpu_milli / GS_PLACE_MILLI;
        q->has_compute = q->has_memory = 1;
        q->compute = (p->gpu_milli * GS_DRA_COMPUTE + GS_PLACE_MILLI - 1) / GS_PLACE_MILLI;
        q->memory = (mib > 0 ? mib : 1) * GS_DRA_MIB;
    }
    return 0;
}

/* kube-scheduler's filters on the cluster's state: CPU and memory fit, and the DRA allocator
 * finds devices for the claim on the node. */
static int feasible(const rnode_t *n, const gs_place_pod_t *p, const gs_dra_claim_t *claim)
{
    if (n->cpu_left < p->cpu_milli || n->mem_left < p->mem_mib)
        return 0;
    if (claim == NULL)
        return 1;
    if (n->slice.count == 0)
        return 0;
    return gs_dra_fits(&n->slice, n->usage, GS_DRA_CLASS, claim);
}

/* Sends an ExtenderArgs body to a verb as kube-scheduler would; returns the answer's JSON text
 * (malloc'ed) or NULL. filter: verdicts; else scores. */
static char *call_verb(replay_t *r, json_t *pod, json_t *names, int filter)
{
    json_t *root = json_pack("{s:O,s:O}", "pod", pod, "nodenames", names);
    char *body = root != NULL ? json_dumps(root, JSON_COMPACT) : NULL, *answer = NULL;
    json_decref(root);
    gs_k8s_args_t args;
    gs_k8s_answer_t a;
    if (body == NULL || gs_k8s_args_parse(body, strlen(body), &args, r->err, r->errlen) != 0) {
        free(body);
        return NULL;
    }
    int result = filter ? gs_k8s_model_filter(r->model, &args, now_seconds(), &a)
                        : gs_k8s_model_prioritize(r->model, &args, now_seconds(), &a);
    if (result == 0) {
        r->stats->neutral += a.neutral;
        answer = filter ? gs_k8s_filter_result(&args, a.verdict, a.reason, NULL)
                        : gs_k8s_priority_list(&args, a.scores);
        gs_k8s_answer_free(&a);
    }
    gs_k8s_args_free(&args);
    free(body);
    return answer;
}

/* kube-scheduler's choice among the prioritized nodes: the highest score, ties uniformly at
 * random (its reservoir sampling). Returns the host's name (owned by list) or NULL. */
static const char *select_host(replay_t *r, const json_t *list)
{
    const char *host = NULL;
    json_int_t top = 0;
    uint64_t ties = 0;
    size_t i;
    const json_t *hp;
    json_array_foreach(list, i, hp)
    {
        json_int_t s = json_integer_value(json_object_get(hp, "score"));
        const char *h = gs_k8s_str(hp, "host", NULL);
        if (h == NULL || (host != NULL && s < top))
            continue;
        if (host == NULL || s > top) {
            host = h;
            top = s;
            ties = 1;
        } else if (next_random(&r->rng) % ++ties == 0) {
            host = h;
        }
    }
    if (host != NULL && top != GS_K8S_MAX_PRIORITY)
        r->stats->below_max++;
    return host;
}

/* Filter, then prioritize the nodes that passed; the chosen node's name into name. Returns 1
 * with a choice, 0 when no node passed, or an error code. */
static int choose(replay_t *r, json_t *pod, json_t *names, char *name, size_t len)
{
    if (json_array_size(names) == 0)
        return 0;
    char *text = call_verb(r, pod, names, 1);
    json_t *result = text != NULL ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *kept = json_object_get(result, "nodenames");
    if (!json_is_array(kept)) {
        json_decref(result);
        return gs_fail(r->err, r->errlen, GS_EPROTO, "filter gave no node names");
    }
    int chosen = 0;
    if (json_array_size(kept) > 0) {
        text = call_verb(r, pod, kept, 0);
        json_t *list = text != NULL ? json_loads(text, 0, NULL) : NULL;
        free(text);
        const char *host = select_host(r, list);
        chosen = host != NULL ? 1 : gs_fail(r->err, r->errlen, GS_EPROTO, "no priorities");
        if (host != NULL)
            snprintf(name, len, "%s", host);
        json_decref(list);
    }
    json_decref(result);
    return chosen;
}

/* The plugin's new device order for node k after an allocation; republished when it changed.
 * The tightest order is the one the driver gets from gs_dra_order_devices; the policy's from
 * gs_place_device_order on the plugins' view. */
static int republish(replay_t *r, size_t k, size_t due)
{
    rnode_t *n = &r->rn[k];
    if (r->opts->order != GS_PLACE_ORDER_POLICY) {
        int changed = gs_dra_order_devices(&n->slice, n->usage, r->opts->order);
        if (changed <= 0)
            return changed;
        n->slice.generation++;
        r->stats->republished++;
        return queue(r, due, GS_K8S_SLICES, gs_dra_slice_json(&n->slice));
    }
    gs_place_node_state_t st;
    if (gs_place_node_get(r->mirror, (int)k, &st) != 0)
        return GS_EINVAL;
    st.cpu_left = (uint32_t)n->cpu_left;
    st.mem_left = n->mem_left;
    for (size_t j = 0; j < n->slice.count; j++)
        st.gpu_left[n->slice.devices[j].index] =
            (uint32_t)(GS_PLACE_MILLI - n->usage[j].compute * GS_PLACE_MILLI / GS_DRA_COMPUTE);
    uint8_t order[GS_PLACE_MAX_GPUS];
    if (gs_place_node_set(r->mirror, (int)k, &st) != 0 ||
        gs_place_device_order(r->mirror_engine, (int)k, r->opts->order, order) != 0)
        return gs_fail(r->err, r->errlen, GS_EINVAL, "node %s: no device order", n->name);
    gs_dra_device_t dev[GS_PLACE_MAX_GPUS];
    gs_dra_usage_t use[GS_PLACE_MAX_GPUS];
    int changed = 0;
    for (size_t p = 0; p < n->slice.count; p++) {
        size_t j = 0;
        while (n->slice.devices[j].index != order[p])
            j++;
        dev[p] = n->slice.devices[j];
        use[p] = n->usage[j];
        changed |= j != p;
    }
    if (!changed)
        return 0;
    memcpy(n->slice.devices, dev, n->slice.count * sizeof(dev[0]));
    memcpy(n->usage, use, n->slice.count * sizeof(use[0]));
    n->slice.generation++;
    r->stats->republished++;
    return queue(r, due, GS_K8S_SLICES, gs_dra_slice_json(&n->slice));
}

/* Binds pod i to node k: the DRA allocator allocates its claim (first fit in slice order), the
 * pod takes CPU and memory; the extender hears of both `lag` pods later. Returns the GPU milli
 * allocated, or an error code. */
static int64_t bind(replay_t *r, size_t i, size_t k, const gs_place_pod_t *p, gs_dra_claim_t *claim)
{
    rnode_t *n = &r->rn[k];
    size_t due = i + 1 + r->opts->lag;
    int64_t milli = 0;
    n->cpu_left -= p->cpu_milli;
    n->mem_left -= p->mem_mib;
    if (claim != NULL) {
        if (gs_dra_allocate(&n->slice, n->usage, GS_DRA_CLASS, claim, &r->share_seq) != 0)
            return gs_fail(r->err, r->errlen, GS_EPROTO, "pod %zu: allocation failed on %s", i,
                           n->name);
        for (size_t j = 0; j < claim->nresults; j++)
            milli += claim->results[j].consumed
                         ? (int64_t)(claim->results[j].compute * GS_PLACE_MILLI / GS_DRA_COMPUTE)
                         : GS_PLACE_MILLI;
        int result = queue(r, due, GS_K8S_CLAIMS, gs_dra_claim_json(claim));
        if (result == 0 && r->opts->order != GS_PLACE_ORDER_INDEX)
            result = republish(r, k, due);
        if (result != 0)
            return result;
    }
    int result =
        queue(r, due, GS_K8S_PODS, pod_json(p, i, claim != NULL ? claim->name : NULL, n->name));
    return result != 0 ? result : milli;
}

/* Schedules pod i: its claim and pod appear, kube-scheduler filters, asks the extender, the
 * allocator binds. Returns the GPU milli allocated (0 when it fits nowhere) or an error. */
static int64_t schedule(replay_t *r, size_t i, const gs_place_pod_t *p, gs__k8s_map_t *index)
{
    gs_dra_claim_t claim;
    int has_claim = p->num_gpu > 0, result = 0;
    int64_t milli = 0;
    if (has_claim && (result = claim_of(r, p, i, &claim)) != 0)
        return result;
    json_t *cobj = has_claim ? gs_dra_claim_json(&claim) : NULL;
    json_t *pod = pod_json(p, i, has_claim ? claim.name : NULL, NULL);
    json_t *names = json_array();
    if (pod == NULL || names == NULL || (has_claim && cobj == NULL))
        result = GS_ENOMEM;
    if (result == 0 && has_claim)
        result = gs_k8s_model_apply(r->model, GS_K8S_CLAIMS, GS_K8S_ADDED, cobj, r->err, r->errlen);
    if (result == 0)
        result = gs_k8s_model_apply(r->model, GS_K8S_PODS, GS_K8S_ADDED, pod, r->err, r->errlen);
    for (size_t k = 0; k < r->nn && result == 0; k++) {
        if (feasible(&r->rn[k], p, has_claim ? &claim : NULL))
            result = json_array_append_new(names, json_string(r->rn[k].name)) ? GS_ENOMEM : 0;
    }
    if (result == 0 && r->opts->probe != NULL)
        r->opts->probe(r->opts->probe_ctx, r->model, pod, i);
    char host[GS_K8S_NAME_MAX];
    int chosen = result == 0 ? choose(r, pod, names, host, sizeof(host)) : result;
    if (chosen == 1) {
        size_t k = (size_t)(uintptr_t)gs__k8s_map_get(index, host) - 1;
        milli = bind(r, i, k, p, has_claim ? &claim : NULL);
        r->stats->placed += milli >= 0;
    } else if (chosen == 0) { /* dropped, as in the artifact's protocol */
        r->stats->failed++;
        result = gs_k8s_model_apply(r->model, GS_K8S_PODS, GS_K8S_DELETED, pod, r->err, r->errlen);
        if (result == 0 && has_claim)
            result = gs_k8s_model_apply(r->model, GS_K8S_CLAIMS, GS_K8S_DELETED, cobj, r->err,
                                        r->errlen);
    }
    json_decref(cobj);
    json_decref(pod);
    json_decref(names);
    if (has_claim)
        gs_dra_claim_free(&claim);
    return chosen < 0 ? chosen : result != 0 ? result : milli;
}

static void cleanup(replay_t *r, gs__k8s_map_t *index)
{
    for (size_t i = 0; i < r->nevents; i++)
        json_decref(r->events[i].obj);
    free(r->events);
    for (size_t k = 0; k < r->nn; k++)
        gs_dra_slice_free(&r->rn[k].slice);
    free(r->rn);
    gs_k8s_model_free(r->model);
    gs_place_engine_free(r->mirror_engine);
    gs_place_cluster_free(r->mirror);
    gs__k8s_map_free(index, NULL);
}

static int run(replay_t *r, const size_t *seq, size_t nseq, gs__k8s_map_t *index,
               gs_place_replay_result_t *out)
{
    uint64_t arrived = 0, used = 0;
    out->events = nseq + 1;
    out->arrived_milli = calloc(out->events, sizeof(uint64_t));
    out->used_milli = calloc(out->events, sizeof(uint64_t));
    if (out->arrived_milli == NULL || out->used_milli == NULL)
        return GS_ENOMEM;
    for (size_t i = 0; i < nseq; i++) {
        const gs_place_pod_t *p = &r->pods->pods[seq[i]];
        int result = deliver(r, i);
        int64_t milli = result == 0 ? schedule(r, i, p, index) : result;
        if (milli < 0)
            return (int)milli;
        arrived += (uint64_t)p->num_gpu * p->gpu_milli;
        used += (uint64_t)milli;
        out->arrived_milli[i + 1] = arrived;
        out->used_milli[i + 1] = used;
    }
    out->pods = nseq;
    out->failed = r->stats->failed;
    r->stats->pods = nseq;
    return 0;
}

int gs_k8s_replay(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                  const gs_k8s_replay_opts_t *opts, gs_place_replay_result_t *out,
                  gs_k8s_replay_stats_t *stats, char *err, size_t errlen)
{
    replay_t r = {.opts = opts,
                  .pods = pods,
                  .stats = stats,
                  .err = err,
                  .errlen = errlen,
                  .rng = opts->seed};
    gs__k8s_map_t index = {0};
    gs_place_replay_opts_t po = {
        .policy = GS_PLACE_GPUSHARE, .seed = opts->seed, .tune = opts->tune};
    size_t *seq = NULL, nseq = 0;
    double start = now_seconds();
    memset(out, 0, sizeof(*out));
    memset(stats, 0, sizeof(*stats));
    int result = gs_place_replay_sequence(nodes, pods, &po, &seq, &nseq, err, errlen);
    if (result == 0 && (r.rn = calloc(nodes->count ? nodes->count : 1, sizeof(*r.rn))) == NULL)
        result = GS_ENOMEM;
    r.nn = result == 0 ? nodes->count : 0;
    for (size_t k = 0; k < r.nn && result == 0; k++) {
        out->total_milli += (uint64_t)nodes->nodes[k].num_gpu * GS_PLACE_MILLI;
        result = gs__k8s_map_put(&index, nodes->nodes[k].name, (void *)(uintptr_t)(k + 1), NULL);
    }
    if (result == 0)
        result = setup_model(&r, nodes);
    if (result == 0)
        result = setup_mirror(&r, nodes);
    if (result == 0)
        result = run(&r, seq, nseq, &index, out);
    out->total_gpus = (uint32_t)(out->total_milli / GS_PLACE_MILLI);
    if (result == 0)
        gs_place_replay_table(out);
    else
        gs_place_replay_result_free(out);
    cleanup(&r, &index);
    free(seq);
    stats->seconds = now_seconds() - start;
    return result;
}
