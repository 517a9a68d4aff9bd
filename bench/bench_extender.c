/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of gpushare-scheduler-extender's prioritize on the 1,523-node openb cluster (every
 * node, CPU-only ones included, as candidates of every call), on the states a cluster goes
 * through: the default trace is replayed online (seed 42, inflated to 1.3 x the GPU capacity) and
 * before each pod is scheduled the pod's prioritize is timed in process (JSON parse, model,
 * JSON answer) and, for every fourth pod, over HTTP to the extender's server on loopback (a new
 * connection per call: what kube-scheduler pays at worst).
 * Prints p50, p99 and max per method beside the target (p99 < 20 ms). Not a test. */
#include "extender.h"
#include "http.h"
#include "replay.h"

#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HTTP_EVERY 4
#define TARGET_MS  20.0

typedef struct samples {
    double *ms;
    size_t n, cap;
} samples_t;

typedef struct bench {
    json_t *names; /* every node */
    samples_t local, http;
    gs_ext_server_t *server;
    gs_k8s_model_t *served; /* the model the server answers from */
    uint16_t port;
    size_t bytes;
} bench_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void add(samples_t *s, double ms)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->ms = realloc(s->ms, s->cap * sizeof(*s->ms));
        if (s->ms == NULL)
            abort();
    }
    s->ms[s->n++] = ms;
}

static int discard(void *ctx, const char *p, size_t len)
{
    (void)p;
    *(size_t *)ctx += len;
    return 0;
}

/* Times one prioritize over HTTP: the server answers from this replay's model. */
static void over_http(bench_t *b, gs_k8s_model_t *model, const char *body)
{
    char url[64];
    if (b->server == NULL || b->served != model) {
        gs_ext_server_stop(b->server);
        b->server = NULL;
        if (gs_ext_server_start("127.0.0.1", 0, model, &b->server, &b->port) != 0)
            return;
        b->served = model;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/prioritize", b->port);
    gs__khttp_client_t client = {.connect_ms = 2000, .total_ms = 10000, .idle_ms = 10000};
    const char *headers[] = {"Content-Type: application/json"};
    char err[256];
    long status = 0;
    double t0 = now_ms();
    if (gs__khttp_request(&client, "POST", url, headers, 1, body, strlen(body), discard, &b->bytes,
                          &status, err, sizeof(err)) == 0 &&
        status == 200)
        add(&b->http, now_ms() - t0);
}

static void probe(void *ctx, gs_k8s_model_t *model, const json_t *pod, size_t i)
{
    bench_t *b = ctx;
    json_t *args = json_pack("{s:O,s:O}", "pod", pod, "nodenames", b->names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    double t0 = now_ms();
    char *out = gs_ext_prioritize(model, body, strlen(body));
    add(&b->local, now_ms() - t0);
    free(out);
    if (i % HTTP_EVERY == 0)
        over_http(b, model, body);
    free(body);
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return a < c ? -1 : a > c;
}

static void report(const char *what, samples_t *s)
{
    if (s->n == 0) {
        printf("%-36s no samples\n", what);
        return;
    }
    qsort(s->ms, s->n, sizeof(double), by_value);
    double p50 = s->ms[s->n / 2], p99 = s->ms[(size_t)((double)s->n * 0.99)];
    printf("%-36s %7zu calls  p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms  target p99 < %.0f ms: %s\n",
           what, s->n, p50, p99, s->ms[s->n - 1], TARGET_MS, p99 < TARGET_MS ? "met" : "MISSED");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s ALL_NODES.csv PODS.csv\n", argv[0]);
        return 2;
    }
    gs_log_init("bench_extender", GS_LOG_ERROR);
    char err[GS_PLACE_ERR_MAX];
    gs_place_nodes_t nodes;
    gs_place_pods_t pods;
    if (gs_place_nodes_read(argv[1], &nodes, err, sizeof(err)) != 0 ||
        gs_place_pods_read(argv[2], &pods, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_extender: %s\n", err);
        return 1;
    }
    bench_t b = {.names = json_array()};
    for (size_t i = 0; i < nodes.count; i++)
        json_array_append_new(b.names, json_string(nodes.nodes[i].name));
    gs_k8s_replay_opts_t o = {.seed = 42, .tune = 1.3, .probe = probe, .probe_ctx = &b};
    gs_place_replay_result_t r;
    gs_k8s_replay_stats_t st;
    int result = gs_k8s_replay(&nodes, &pods, &o, &r, &st, err, sizeof(err));
    gs_ext_server_stop(b.server);
    if (result != 0) {
        fprintf(stderr, "bench_extender: %s\n", err);
        return 1;
    }
    printf("prioritize on %zu candidate nodes (every node of %s), the pod of each step of the\n"
           "online replay of %s (seed 42, inflate 1.3: %zu pods, arrival 0..130 %%; unallocated\n"
           "at 100 %%: %.2f %%), one thread, this machine\n",
           nodes.count, argv[1], argv[2], st.pods, 100 - r.table[100]);
    report("in process (parse, score, answer)", &b.local);
    report("over HTTP (a new connection each)", &b.http);
    gs_place_replay_result_free(&r);
    json_decref(b.names);
    free(b.local.ms);
    free(b.http.ms);
    gs_place_nodes_free(&nodes);
    gs_place_pods_free(&pods);
    return 0;
}
