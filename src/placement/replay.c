/* SPDX-License-Identifier: Apache-2.0 */
/* Trace replay with the ATC'23 artifact's protocol, and its table of allocation vs arrival. */
#include "placement_internal.h"

#include "gpushare/error.h"
#include "gpushare/placement_online.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A tuned workload never grows beyond this many tasks. */
#define SEQUENCE_MAX 50000000u

typedef struct replay_state {
    const gs_place_pods_t *pods;
    gs_place_request_t *reqs; /* one per pod, file order */
    size_t *by_name;          /* pod indexes sorted by name */
    size_t *seq;              /* the pods to schedule, in order */
    size_t nseq, capseq;
    gs_place_cluster_t *cluster;
    gs_place_workload_t *workload;
    gs_place_engine_t *engine;
} replay_state_t;

/* Orders pod indexes by name, then by position, so equal names keep file order (qsort_r). */
static int by_name(const void *pa, const void *pb, void *ctx)
{
    const gs_place_pods_t *pods = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int c = strcmp(pods->pods[a].name, pods->pods[b].name);
    if (c != 0)
        return c;
    return a < b ? -1 : a > b;
}

static int push(replay_state_t *s, size_t pod)
{
    if (s->nseq == s->capseq) {
        if (s->capseq >= SEQUENCE_MAX)
            return GS_ELIMIT;
        size_t cap = s->capseq ? s->capseq * 2 : 1024;
        size_t *grown = realloc(s->seq, cap * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        s->seq = grown;
        s->capseq = cap;
    }
    s->seq[s->nseq++] = pod;
    return 0;
}

/* Pods sorted by name, shuffled with the seed, then tuned to `tune` x capacity: grown by pods
 * drawn uniformly with replacement, or shrunk by removing pods at random. */
static int build_sequence(replay_state_t *s, const gs_place_replay_opts_t *opts)
{
    size_t n = s->pods->count;
    gs__rng_t rng;
    gs__rng_seed(&rng, opts->seed);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int result = push(s, s->by_name[i]);
        if (result != 0)
            return result;
        total += gs_place_request_milli(&s->reqs[s->by_name[i]]);
    }
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)gs__rng_below(&rng, i);
        size_t t = s->seq[i - 1];
        s->seq[i - 1] = s->seq[j];
        s->seq[j] = t;
    }
    if (!(opts->tune > 0) || total == 0)
        return 0;
    double target = opts->tune * (double)s->cluster->total_milli;
    while ((double)total < target) {
        size_t pod = s->by_name[gs__rng_below(&rng, n)];
        int result = push(s, pod);
        if (result != 0)
            return result;
        total += gs_place_request_milli(&s->reqs[pod]);
    }
    while ((double)total > target && s->nseq > 0) {
        size_t j = (size_t)gs__rng_below(&rng, s->nseq);
        total -= gs_place_request_milli(&s->reqs[s->seq[j]]);
        memmove(&s->seq[j], &s->seq[j + 1], (s->nseq - j - 1) * sizeof(s->seq[0]));
        s->nseq--;
    }
    return 0;
}

/* Python's round(x, digits) for the table: nearest, ties to even. */
static double round_to(double x, int digits)
{
    double scale = pow(10, digits);
    return nearbyint(x * scale) / scale;
}

/* The artifact's table: per integer arrived %, the mean allocation % of the records whose
 * arrived % rounds to it (or, when none does, of those within one point). */
static void build_table(gs_place_replay_result_t *r)
{
    double sum[GS_PLACE_TABLE_MAX + 3] = {0};
    size_t cnt[GS_PLACE_TABLE_MAX + 3] = {0};
    double gpus = r->total_gpus;
    for (size_t i = 0; i < r->events; i++) {
        double arrived = round_to((double)r->arrived_milli[i] / gpus / 10, 0);
        double alloc = round_to((double)r->used_milli[i] / gpus / 10, 2);
        if (arrived >= 0 && arrived <= GS_PLACE_TABLE_MAX + 1) {
            sum[(int)arrived] += alloc;
            cnt[(int)arrived]++;
        }
    }
    for (int x = 0; x <= GS_PLACE_TABLE_MAX; x++) {
        double s = sum[x];
        size_t c = cnt[x];
        if (c == 0) {
            for (int y = x - 1; y <= x + 1; y++) {
                if (y >= 0) {
                    s += sum[y];
                    c += cnt[y];
                }
            }
        }
        r->valid[x] = c > 0;
        r->table[x] = c > 0 ? round_to(s / (double)c, 2) : 0;
    }
}

/* Schedules the sequence once, in order, recording arrived and allocated GPU milli. */
static int schedule(replay_state_t *s, gs_place_replay_result_t *r)
{
    r->events = s->nseq + 1;
    r->arrived_milli = calloc(r->events, sizeof(uint64_t));
    r->used_milli = calloc(r->events, sizeof(uint64_t));
    if (r->arrived_milli == NULL || r->used_milli == NULL)
        return GS_ENOMEM;
    uint64_t arrived = 0;
    for (size_t i = 0; i < s->nseq; i++) {
        const gs_place_request_t *req = &s->reqs[s->seq[i]];
        gs_place_decision_t d;
        arrived += gs_place_request_milli(req);
        int result = gs_place_place(s->engine, req, &d);
        if (result == GS_ENOFIT)
            r->failed++;
        else if (result != 0)
            return result;
        r->arrived_milli[i + 1] = arrived;
        r->used_milli[i + 1] = s->cluster->used_milli;
    }
    r->pods = s->nseq;
    return 0;
}

static int prepare(replay_state_t *s, const gs_place_nodes_t *nodes,
                   const gs_place_replay_opts_t *opts, char *err, size_t errlen)
{
    size_t n = s->pods->count;
    int result = gs_place_cluster_from_nodes(nodes, &s->cluster, err, errlen);
    if (result != 0)
        return result;
    if (s->cluster->total_milli == 0)
        return gs_fail(err, errlen, GS_ENOENT, "the node list has no GPU");
    s->reqs = malloc(n * sizeof(*s->reqs));
    s->by_name = malloc(n * sizeof(*s->by_name));
    if (s->reqs == NULL || s->by_name == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (gs_place_pod_request(s->cluster, &s->pods->pods[i], &s->reqs[i]) != 0)
            return gs_fail(err, errlen, GS_EINVAL, "pod %s: invalid request",
                           s->pods->pods[i].name);
        s->by_name[i] = i;
    }
    qsort_r(s->by_name, n, sizeof(*s->by_name), by_name, (void *)s->pods);
    double coverage = opts->coverage > 0 ? opts->coverage : gs__default_coverage(opts->policy);
    result = gs_place_workload_from_pods(s->cluster, s->pods, coverage, &s->workload);
    if (result != 0)
        return gs_fail(err, errlen, result, "target workload: %s", gs_strerror(result));
    result = gs_place_engine_new(s->cluster, opts->policy, s->workload, opts->seed, &s->engine);
    if (result != 0)
        return gs_fail(err, errlen, result, "engine: %s", gs_strerror(result));
    result = build_sequence(s, opts);
    if (result != 0)
        return gs_fail(err, errlen, result, "tuned workload: %s", gs_strerror(result));
    return 0;
}

int gs_place_replay(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                    const gs_place_replay_opts_t *opts, gs_place_replay_result_t *out, char *err,
                    size_t errlen)
{
    replay_state_t s = {.pods = pods};
    memset(out, 0, sizeof(*out));
    int result;
    if ((int)opts->policy < 0 || opts->policy >= GS_PLACE_POLICY_COUNT ||
        !(opts->tune >= 0 && opts->tune < 1000) || !(opts->coverage >= 0 && opts->coverage <= 1))
        return gs_fail(err, errlen, GS_EINVAL, "invalid replay options");
    if (pods->count == 0)
        return gs_fail(err, errlen, GS_ENOENT, "the workload has no pods");
    if ((result = prepare(&s, nodes, opts, err, errlen)) != 0)
        goto out;
    out->total_milli = s.cluster->total_milli;
    out->total_gpus = (uint32_t)(s.cluster->total_milli / GS_PLACE_MILLI);
    if ((result = schedule(&s, out)) != 0) {
        gs_fail(err, errlen, result, "replay: %s", gs_strerror(result));
        goto out;
    }
    build_table(out);
out:
    if (result != 0)
        gs_place_replay_result_free(out);
    gs_place_engine_free(s.engine);
    gs_place_workload_free(s.workload);
    gs_place_cluster_free(s.cluster);
    free(s.reqs);
    free(s.by_name);
    free(s.seq);
    return result;
}

void gs_place_replay_result_free(gs_place_replay_result_t *result)
{
    if (result == NULL)
        return;
    free(result->arrived_milli);
    free(result->used_milli);
    result->arrived_milli = NULL;
    result->used_milli = NULL;
    result->events = 0;
}

int gs_place_replay_sequence(const gs_place_nodes_t *nodes, const gs_place_pods_t *pods,
                             const gs_place_replay_opts_t *opts, size_t **seq, size_t *count,
                             char *err, size_t errlen)
{
    replay_state_t s = {.pods = pods};
    size_t n = pods->count;
    int result;
    *seq = NULL;
    *count = 0;
    if (n == 0 || !(opts->tune >= 0 && opts->tune < 1000))
        return gs_fail(err, errlen, GS_EINVAL, "no pods, or invalid replay options");
    if ((result = gs_place_cluster_from_nodes(nodes, &s.cluster, err, errlen)) != 0)
        return result;
    s.reqs = malloc(n * sizeof(*s.reqs));
    s.by_name = malloc(n * sizeof(*s.by_name));
    result = s.reqs == NULL || s.by_name == NULL ? GS_ENOMEM : 0;
    for (size_t i = 0; i < n && result == 0; i++) {
        result = gs_place_pod_request(s.cluster, &pods->pods[i], &s.reqs[i]);
        s.by_name[i] = i;
    }
    if (result == 0) {
        qsort_r(s.by_name, n, sizeof(*s.by_name), by_name, (void *)pods);
        result = build_sequence(&s, opts);
    }
    if (result == 0) {
        *seq = s.seq;
        *count = s.nseq;
        s.seq = NULL;
    } else {
        gs_fail(err, errlen, result, "replay sequence: %s", gs_strerror(result));
    }
    gs_place_cluster_free(s.cluster);
    free(s.reqs);
    free(s.by_name);
    free(s.seq);
    return result;
}

void gs_place_replay_table(gs_place_replay_result_t *result)
{
    build_table(result);
}
