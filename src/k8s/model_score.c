/* SPDX-License-Identifier: Apache-2.0 */
/* The extender's verbs on its model: a pod's GPU demand from its claims, the target workload and
 * engine, scores of first-fit placements (cached per request and node version), filter and
 * prioritize (model.h). */
#include "model.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/placement_online.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INFEASIBLE INT64_MIN

/* A pod's demand in the placement model, and the claims it comes from. */
typedef struct demand {
    gs_place_request_t req;
    char models[GS_PLACE_SPEC_MAX];
    size_t nclaims;
    char claims[GS_K8S_POD_CLAIMS][GS_K8S_LABEL_MAX + GS_K8S_NAME_MAX];
} demand_t;

static double coverage(const gs_k8s_model_t *m)
{
    return m->opts.policy == GS_PLACE_GPUSHARE ? 1.0 : 0.95; /* as gs_place_replay's */
}

/* ---- caches ---- */

void gs__model_caches_clear(gs_k8s_model_t *m)
{
    for (size_t i = 0; i < GS__MODEL_CACHES; i++) {
        free(m->caches[i].version);
        free(m->caches[i].score);
        memset(&m->caches[i], 0, sizeof(m->caches[i]));
    }
}

/* The cache of req's scores, a fresh one replacing the oldest when it has none. */
static gs__mcache_t *cache_for(gs_k8s_model_t *m, const gs_place_request_t *req)
{
    for (size_t i = 0; i < GS__MODEL_CACHES; i++) {
        if (m->caches[i].used && memcmp(&m->caches[i].key, req, sizeof(*req)) == 0)
            return &m->caches[i];
    }
    gs__mcache_t *c = &m->caches[m->next_cache];
    m->next_cache = (m->next_cache + 1) % GS__MODEL_CACHES;
    free(c->version);
    free(c->score);
    c->version = calloc(m->nindex ? m->nindex : 1, sizeof(*c->version));
    c->score = malloc((m->nindex ? m->nindex : 1) * sizeof(*c->score));
    c->used = c->version != NULL && c->score != NULL;
    c->key = *req;
    return c->used ? c : NULL;
}

/* The policy's score of the allocator's first fit on node n, or INFEASIBLE. */
static int64_t node_score(gs_k8s_model_t *m, gs__mcache_t *c, const gs_place_request_t *req,
                          const gs__mnode_t *n)
{
    if (c != NULL && c->version[n->index] == n->version)
        return c->score[n->index];
    gs_place_decision_t d;
    int64_t s = INFEASIBLE;
    if (m->opts.policy_gpus) {
        if (gs_place_score_node(m->engine, req, n->index, &s, &d) != 0)
            s = INFEASIBLE;
    } else if (gs_place_first_fit(m->cluster, n->index, n->order, n->ngpu, req, &d) != 0 ||
               gs_place_score_decision(m->engine, req, &d, &s) != 0) {
        s = INFEASIBLE;
    }
    if (c != NULL) {
        c->version[n->index] = n->version;
        c->score[n->index] = s;
    }
    return s;
}

/* ---- the target workload ---- */

static int learned_workload(gs_k8s_model_t *m, gs_place_workload_t **out)
{
    gs_place_workload_t *w = NULL;
    int result = gs_place_workload_new(&w);
    for (size_t i = 0; i < m->nshapes && result == 0; i++) {
        gs_place_request_t req = m->shapes[i].req;
        req.mem_mib = (uint64_t)(m->shapes[i].mem_sum / m->shapes[i].count);
        if (m->shapes[i].models[0] != '\0' &&
            (result = gs_place_model_mask(m->cluster, m->shapes[i].models, &req.model_mask)) != 0)
            break;
        result = gs_place_workload_add(w, &req, m->shapes[i].count);
    }
    if (result == 0)
        result = gs_place_workload_finish(w, coverage(m));
    if (result != 0)
        gs_place_workload_free(w);
    *out = result == 0 ? w : NULL;
    return result;
}

int gs__model_engine(gs_k8s_model_t *m, char *err, size_t errlen)
{
    gs__model_caches_clear(m);
    gs_place_engine_free(m->engine);
    m->engine = NULL;
    gs_place_workload_t *w = NULL;
    int result = 0;
    if (m->workload.count > 0)
        result = gs_place_workload_from_pods(m->cluster, &m->workload, coverage(m), &w);
    else if (m->nshapes > 0)
        result = learned_workload(m, &w);
    if (result == 0)
        result = gs_place_engine_new(m->cluster, m->opts.policy, w, m->opts.seed, &m->engine);
    gs_place_workload_free(w);
    m->shapes_changed = 0;
    return result == 0 ? 0
                       : gs_fail(err, errlen, result, "placement engine: %s", gs_strerror(result));
}

/* Counts a pod's shape in the learned workload; the engine is rebuilt when a new shape appears
 * or the count doubles (as the placement engine does without a workload). */
static int observe(gs_k8s_model_t *m, const gs_k8s_pod_t *pod, const demand_t *d)
{
    if (m->workload.count > 0 || gs__k8s_map_get(&m->scored, pod->uid) != NULL)
        return 0;
    if (gs__k8s_map_put(&m->scored, pod->uid, m, NULL) != 0)
        return GS_ENOMEM;
    m->shapes_total += 1;
    gs_place_request_t key;
    memset(&key, 0, sizeof(key)); /* compared with memcmp: padding too */
    key.cpu_milli = d->req.cpu_milli;
    key.num_gpu = d->req.num_gpu;
    key.gpu_milli = d->req.gpu_milli;
    size_t i = 0;
    while (i < m->nshapes && (memcmp(&m->shapes[i].req, &key, sizeof(key)) != 0 ||
                              strcmp(m->shapes[i].models, d->models) != 0))
        i++;
    if (i == m->nshapes) {
        if (m->nshapes == m->capshapes) {
            size_t cap = m->capshapes ? m->capshapes * 2 : 32;
            gs__seen_shape_t *grown = realloc(m->shapes, cap * sizeof(*grown));
            if (grown == NULL)
                return GS_ENOMEM;
            m->shapes = grown;
            m->capshapes = cap;
        }
        memset(&m->shapes[m->nshapes], 0, sizeof(m->shapes[0]));
        m->shapes[m->nshapes].req = key;
        snprintf(m->shapes[m->nshapes].models, sizeof(m->shapes[0].models), "%s", d->models);
        m->nshapes++;
        m->shapes_changed = 1;
    }
    m->shapes[i].count += 1;
    m->shapes[i].mem_sum += (double)d->req.mem_mib;
    if (m->shapes_total >= m->shapes_next) {
        m->shapes_next = m->shapes_total * 2;
        m->shapes_changed = 1;
    }
    return 0;
}

/* ---- a pod's demand ---- */

/* Adds one request of a gpushare claim to the demand. Returns 0, or -1 with why. */
static int add_request(demand_t *d, const gs_dra_request_t *r, const char *claim, int *shares,
                       uint32_t *whole, char *why, size_t len)
{
    if (strcmp(r->device_class, GS_DRA_CLASS) != 0)
        return gs_fail(why, len, -1,
                       "claim %s: request %s is for device class %s "
                       "(another driver)",
                       claim, r->name, r->device_class);
    if (r->unsupported)
        return gs_fail(why, len, -1,
                       "claim %s: request %s uses %s (outside the "
                       "placement model)",
                       claim, r->name, r->why);
    if (r->models[0] != '\0' && d->models[0] != '\0' && strcmp(r->models, d->models) != 0)
        return gs_fail(why, len, -1, "claim %s: requests for different GPU models", claim);
    if (r->models[0] != '\0')
        snprintf(d->models, sizeof(d->models), "%s", r->models);
    /* A share names both capacities below the whole GPU: what it leaves out defaults to the
     * whole GPU (requestPolicy), which makes it a whole GPU. */
    if (r->has_compute && r->has_memory && r->compute < GS_DRA_COMPUTE) {
        if (r->count != 1)
            return gs_fail(why, len, -1,
                           "claim %s: request %s shares %lld GPUs (outside "
                           "the placement model)",
                           claim, r->name, (long long)r->count);
        uint64_t compute = r->compute > 0 ? r->compute : 1;
        d->req.gpu_milli = (uint32_t)(compute * GS_PLACE_MILLI / GS_DRA_COMPUTE);
        d->req.gpu_mem_bytes = (r->memory + GS_DRA_MIB - 1) / GS_DRA_MIB * GS_DRA_MIB;
        (*shares)++;
    } else {
        *whole += (uint32_t)r->count;
    }
    return 0;
}

/* The pod's demand: its CPU and memory, and one placement request for the gpushare claims not
 * yet allocated. Returns 0, or -1 with why (the answer is then neutral). */
static int pod_demand(gs_k8s_model_t *m, const gs_k8s_pod_t *pod, demand_t *d, char *why,
                      size_t len)
{
    memset(d, 0, sizeof(*d));
    d->req.cpu_milli = pod->cpu_milli >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)pod->cpu_milli;
    d->req.mem_mib = (pod->mem_bytes + (1 << 20) - 1) >> 20;
    int shares = 0;
    uint32_t whole = 0;
    for (size_t i = 0; i < pod->nclaims; i++) {
        char key[sizeof(d->claims[0])];
        if (pod->claims[i].claim[0] == '\0')
            return gs_fail(why, len, -1, "claim %s of the pod is not created yet",
                           pod->claims[i].ref);
        snprintf(key, sizeof(key), "%s/%s", pod->ns, pod->claims[i].claim);
        const gs__mclaim_t *c = gs__k8s_map_get(&m->claims, key);
        if (c == NULL)
            return gs_fail(why, len, -1, "claim %s not seen from the API server yet", key);
        for (size_t r = 0; r < c->claim.nrequests; r++) {
            const gs_dra_request_t *rq = &c->claim.requests[r];
            if (c->claim.allocated && strcmp(rq->device_class, GS_DRA_CLASS) == 0)
                continue; /* already placed: nothing to choose for it */
            if (add_request(d, rq, key, &shares, &whole, why, len) != 0)
                return -1;
        }
        if (!c->claim.allocated && c->claim.nrequests > 0)
            snprintf(d->claims[d->nclaims++], sizeof(d->claims[0]), "%s", key);
    }
    if (shares > 1 || (shares > 0 && whole > 0) || whole > GS_PLACE_MAX_GPUS)
        return gs_fail(why, len, -1,
                       "%d shared and %u whole GPUs asked (outside the "
                       "placement model)",
                       shares, whole);
    d->req.num_gpu = shares > 0 ? 1 : whole;
    if (whole > 0)
        d->req.gpu_milli = GS_PLACE_MILLI;
    return 0;
}

/* ---- verbs ---- */

void gs_k8s_answer_free(gs_k8s_answer_t *a)
{
    if (a == NULL)
        return;
    free(a->verdict);
    free(a->reason);
    free(a->scores);
    memset(a, 0, sizeof(*a));
}

/* Makes the model ready to answer for args' pod and fills its demand. Returns 1 when ready, 0
 * when the answer is neutral (a->why says why), or GS_ENOMEM. */
static int prepare(gs_k8s_model_t *m, const gs_k8s_args_t *args, double now, gs_k8s_answer_t *a,
                   demand_t *d)
{
    char err[GS_K8S_ERR_MAX];
    m->answers++;
    if (!(m->listed[GS_K8S_NODES] && m->listed[GS_K8S_PODS] && m->listed[GS_K8S_SLICES] &&
          m->listed[GS_K8S_CLAIMS]))
        return gs_fail(a->why, sizeof(a->why), 0, "not listed from the API server yet");
    for (int k = 0; k < GS_K8S_KINDS; k++) {
        if (m->broken[k])
            return gs_fail(a->why, sizeof(a->why), 0, "out of sync with the API server (%s)",
                           gs_k8s_kind_name((gs_k8s_kind_t)k));
    }
    if (!args->pod_ok)
        return gs_fail(a->why, sizeof(a->why), 0, "malformed pod: %s", args->pod_err);
    gs__model_assumed_expire(m, now);
    if (m->stale && gs__model_rebuild(m, err, sizeof(err)) != 0)
        return gs_fail(a->why, sizeof(a->why), 0, "%s", err);
    if (pod_demand(m, &args->pod, d, a->why, sizeof(a->why)) != 0)
        return 0;
    if (observe(m, &args->pod, d) != 0)
        return GS_ENOMEM;
    if (m->shapes_changed && gs__model_engine(m, err, sizeof(err)) != 0)
        return gs_fail(a->why, sizeof(a->why), 0, "%s", err);
    gs__model_flush(m);
    if (d->models[0] != '\0' && strcmp(d->models, "-") != 0 &&
        gs_place_model_mask(m->cluster, d->models, &d->req.model_mask) != 0)
        return gs_fail(a->why, sizeof(a->why), 0, "GPU models %s: malformed", d->models);
    if (strcmp(d->models, "-") == 0)
        d->req.model_mask = GS_PLACE_MODEL_NONE;
    return 1;
}

/* Allocates the answer's arrays and runs prepare, logging a neutral answer. */
static int begin(gs_k8s_model_t *m, const gs_k8s_args_t *args, double now, gs_k8s_answer_t *a,
                 demand_t *d, int filter)
{
    memset(a, 0, sizeof(*a));
    a->count = args->count;
    a->best = -1;
    size_t n = args->count ? args->count : 1;
    if (filter) {
        a->verdict = calloc(n, sizeof(*a->verdict));
        a->reason = calloc(n, sizeof(*a->reason));
    } else {
        a->scores = calloc(n, sizeof(*a->scores));
    }
    if ((filter && (a->verdict == NULL || a->reason == NULL)) || (!filter && a->scores == NULL)) {
        gs_k8s_answer_free(a);
        return GS_ENOMEM;
    }
    int ready = prepare(m, args, now, a, d);
    if (ready == 0) {
        a->neutral = 1;
        m->neutral++;
    }
    return ready;
}

/* The node m knows by this candidate name, or NULL (not a node of the cluster). */
static gs__mnode_t *candidate(gs_k8s_model_t *m, const char *name)
{
    gs__mnode_t *n = gs__model_node(m, name, 0);
    return n != NULL && n->index >= 0 ? n : NULL;
}

/* Why node n cannot take the GPUs of req: never (no such GPUs), or not now. */
static gs_k8s_verdict_t refusal(gs_k8s_model_t *m, const gs__mnode_t *n,
                                const gs_place_request_t *req, const char **reason)
{
    gs_place_node_state_t st;
    gs_place_node_get(m->cluster, n->index, &st);
    if (n->ngpu < req->num_gpu ||
        (req->model_mask != 0 &&
         (st.model < 0 || !(req->model_mask & (UINT64_C(1) << st.model))))) {
        *reason = "gpushare: no gpushare GPUs of the kind the pod's claims ask for";
        return GS_K8S_UNRESOLVABLE;
    }
    *reason = "gpushare: not enough free GPU capacity for the pod's claims";
    return GS_K8S_FAIL;
}

static void filter_nodes(gs_k8s_model_t *m, const gs_k8s_args_t *args, const demand_t *d,
                         gs_k8s_answer_t *a)
{
    gs_place_request_t gpu = d->req; /* CPU and memory are kube-scheduler's to check */
    gpu.cpu_milli = 0;
    gpu.mem_mib = 0;
    size_t pass = 0;
    for (size_t i = 0; i < args->count; i++) {
        gs__mnode_t *n = candidate(m, args->names[i]);
        gs_place_decision_t dec;
        a->unknown += n == NULL;
        if (n == NULL || gpu.num_gpu == 0 ||
            gs_place_first_fit(m->cluster, n->index, n->order, n->ngpu, &gpu, &dec) == 0)
            pass++;
        else
            a->verdict[i] = refusal(m, n, &gpu, &a->reason[i]);
    }
    if (pass == 0 && args->count > 0) {
        memset(a->verdict, 0, args->count * sizeof(*a->verdict));
        a->neutral = 1;
        m->neutral++;
        snprintf(a->why, sizeof(a->why),
                 "no candidate has room by the model (behind the API "
                 "server?): all pass");
    }
}

int gs_k8s_model_filter(gs_k8s_model_t *m, const gs_k8s_args_t *args, double now,
                        gs_k8s_answer_t *a)
{
    demand_t d;
    pthread_mutex_lock(&m->lock);
    int ready = begin(m, args, now, a, &d, 1);
    if (ready > 0)
        filter_nodes(m, args, &d, a);
    pthread_mutex_unlock(&m->lock);
    return ready < 0 ? ready : 0;
}

/* Assumes the pod where the policy chose, until the API server shows it (model.h). */
static void assume(gs_k8s_model_t *m, const gs_k8s_pod_t *pod, const demand_t *d, gs__mnode_t *n,
                   double now)
{
    gs_place_decision_t dec;
    if (m->opts.assume_seconds <= 0 ||
        gs_place_first_fit(m->cluster, n->index, n->order, n->ngpu, &d->req, &dec) != 0)
        return;
    for (size_t i = m->nassumed; i-- > 0;) {
        if (strcmp(m->assumed[i].uid, pod->uid) == 0)
            gs__model_assumed_drop(m, i);
    }
    if (m->nassumed == m->capassumed) {
        size_t cap = m->capassumed ? m->capassumed * 2 : 64;
        gs__assumed_t *grown = realloc(m->assumed, cap * sizeof(*grown));
        if (grown == NULL)
            return;
        m->assumed = grown;
        m->capassumed = cap;
    }
    gs__assumed_t *as = &m->assumed[m->nassumed++];
    memset(as, 0, sizeof(*as));
    snprintf(as->uid, sizeof(as->uid), "%s", pod->uid);
    as->expires = now + m->opts.assume_seconds;
    if (pod->node[0] == '\0')
        as->cpu_part = (gs__usage_t){
            .node = n, .cpu = (int64_t)pod->cpu_milli, .mem = (int64_t)pod->mem_bytes};
    as->gpu_part.node = d->nclaims > 0 ? n : NULL;
    for (uint32_t g = 0; d->nclaims > 0 && g < dec.num_gpu; g++) {
        as->gpu_part.gpu[g] = dec.gpus[g];
        as->gpu_part.milli[g] = d->req.gpu_milli;
        as->gpu_part.bytes[g] = (int64_t)(d->req.gpu_mem_bytes ? d->req.gpu_mem_bytes : n->gpu_mem);
        as->gpu_part.ngpu++;
    }
    as->nclaims = d->nclaims;
    memcpy(as->claims, d->claims, sizeof(as->claims));
    gs__usage_add(&as->cpu_part, 1);
    gs__usage_add(&as->gpu_part, 1);
}

/* Scores the candidates: the policy's choice (best score, then the engine's fixed order) gets
 * the top score, the others 1..9 by their score, the infeasible and unknown 0. */
static void score_nodes(gs_k8s_model_t *m, const gs_k8s_args_t *args, const demand_t *d,
                        gs_k8s_answer_t *a, int64_t *raw)
{
    gs__mcache_t *c = cache_for(m, &d->req);
    int64_t hi = INFEASIBLE, lo = INT64_MAX;
    uint64_t best_rank = UINT64_MAX;
    for (size_t i = 0; i < args->count; i++) {
        gs__mnode_t *n = candidate(m, args->names[i]);
        uint64_t rank = 0;
        a->unknown += n == NULL;
        raw[i] = n != NULL ? node_score(m, c, &d->req, n) : INFEASIBLE;
        if (raw[i] == INFEASIBLE)
            continue;
        gs_place_node_rank(m->engine, n->index, &rank);
        lo = raw[i] < lo ? raw[i] : lo;
        if (raw[i] > hi || (raw[i] == hi && rank < best_rank)) {
            hi = raw[i];
            best_rank = rank;
            a->best = (int)i;
        }
    }
    for (size_t i = 0; i < args->count; i++) {
        if (raw[i] == INFEASIBLE)
            a->scores[i] = 0;
        else if ((int)i == a->best)
            a->scores[i] = GS_K8S_MAX_PRIORITY;
        else if (hi == lo)
            a->scores[i] = GS_K8S_MAX_PRIORITY - 1;
        else
            a->scores[i] = 1 + (int64_t)((double)(GS_K8S_MAX_PRIORITY - 2) * (double)(raw[i] - lo) /
                                         (double)(hi - lo));
    }
}

int gs_k8s_model_prioritize(gs_k8s_model_t *m, const gs_k8s_args_t *args, double now,
                            gs_k8s_answer_t *a)
{
    demand_t d;
    int64_t *raw = malloc((args->count ? args->count : 1) * sizeof(*raw));
    if (raw == NULL)
        return GS_ENOMEM;
    pthread_mutex_lock(&m->lock);
    int ready = begin(m, args, now, a, &d, 0);
    if (ready > 0) {
        score_nodes(m, args, &d, a, raw);
        if (a->best >= 0)
            assume(m, &args->pod, &d, candidate(m, args->names[a->best]), now);
    }
    pthread_mutex_unlock(&m->lock);
    free(raw);
    return ready < 0 ? ready : 0;
}
