/* SPDX-License-Identifier: Apache-2.0 */
/* kube-scheduler's extender verbs over HTTP (src/http's server, http/httpd.h) on the model
 * (extender.h). */
#include "extender.h"
#include "http/httpd.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gs_ext_server {
    gs__httpd_t *http;
    gs_k8s_model_t *model;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "namespace/name" of the pod, for log lines. */
static const char *who(const gs_k8s_args_t *args, char *buf, size_t len)
{
    if (!args->pod_ok)
        return "a malformed pod";
    snprintf(buf, len, "%s/%s", args->pod.ns, args->pod.name);
    return buf;
}

static void log_answer(const char *verb, const gs_k8s_args_t *args, const gs_k8s_answer_t *a)
{
    char pod[GS_K8S_LABEL_MAX + GS_K8S_NAME_MAX];
    if (a->neutral)
        gs_warn("%s %s: neutral answer: %s", verb, who(args, pod, sizeof(pod)), a->why);
    if (a->unknown > 0)
        gs_warn("%s %s: %zu of %zu candidate nodes unknown to the model (passed, scored 0)", verb,
                who(args, pod, sizeof(pod)), a->unknown, a->count);
    if (!a->neutral && a->best >= 0 && gs_log_enabled(GS_LOG_DEBUG))
        gs_debug("%s %s: best node %s of %zu", verb, who(args, pod, sizeof(pod)),
                 args->names[a->best], a->count);
}

char *gs_ext_filter(gs_k8s_model_t *model, const char *body, size_t len)
{
    gs_k8s_args_t args;
    gs_k8s_answer_t a;
    char err[GS_K8S_ERR_MAX], msg[GS_K8S_ERR_MAX + 64];
    if (gs_k8s_args_parse(body, len, &args, err, sizeof(err)) != 0) {
        gs_warn("filter: malformed ExtenderArgs: %s: answering an error (ignorable)", err);
        snprintf(msg, sizeof(msg), "gpushare: malformed ExtenderArgs: %s", err);
        return gs_k8s_filter_result(&args, NULL, NULL, msg);
    }
    char *out;
    if (gs_k8s_model_filter(model, &args, now_seconds(), &a) != 0) {
        gs_warn("filter: out of memory: every node passes");
        out = gs_k8s_filter_result(&args, NULL, NULL, NULL);
    } else {
        log_answer("filter", &args, &a);
        out = gs_k8s_filter_result(&args, a.neutral ? NULL : a.verdict, a.reason, NULL);
        gs_k8s_answer_free(&a);
    }
    gs_k8s_args_free(&args);
    return out;
}

char *gs_ext_prioritize(gs_k8s_model_t *model, const char *body, size_t len)
{
    gs_k8s_args_t args;
    gs_k8s_answer_t a;
    char err[GS_K8S_ERR_MAX];
    if (gs_k8s_args_parse(body, len, &args, err, sizeof(err)) != 0) {
        gs_warn("prioritize: malformed ExtenderArgs: %s: no scores", err);
        return strdup("[]");
    }
    char *out;
    if (gs_k8s_model_prioritize(model, &args, now_seconds(), &a) != 0) {
        gs_warn("prioritize: out of memory: equal scores");
        out = gs_k8s_priority_list(&args, NULL);
    } else {
        log_answer("prioritize", &args, &a);
        out = gs_k8s_priority_list(&args, a.neutral ? NULL : a.scores);
        gs_k8s_answer_free(&a);
    }
    gs_k8s_args_free(&args);
    return out;
}

/* ---- HTTP ---- */

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t m = strlen(suffix);
    return n >= m && strncmp(s + n - m, suffix, m) == 0;
}

static char *health(gs_ext_server_t *s, int ready, int *status)
{
    gs_k8s_model_stats_t st;
    gs_k8s_model_stats(s->model, &st);
    int synced = gs_k8s_model_synced(s->model);
    char *text = malloc(512);
    if (text != NULL)
        snprintf(text, 512,
                 "{\"synced\":%s,\"nodes\":%zu,\"gpuNodes\":%zu,\"gpus\":%zu,\"pods\":%zu,"
                 "\"claims\":%zu,\"assumed\":%zu,\"answers\":%llu,\"neutral\":%llu}\n",
                 synced ? "true" : "false", st.nodes, st.gpu_nodes, st.gpus, st.pods, st.claims,
                 st.assumed, (unsigned long long)st.answers, (unsigned long long)st.neutral);
    *status = ready && !synced ? 503 : 200;
    return text;
}

/* POST .../filter and .../prioritize (kube-scheduler appends the verb to its urlPrefix), GET
 * /healthz and /readyz. */
static char *route(gs_ext_server_t *s, const gs__httpd_request_t *rq, int *status,
                   const char **type)
{
    const char *method = rq->method, *path = rq->target;
    size_t n = strcspn(path, "?");
    if (strcmp(method, "GET") == 0 && n == 8 && strncmp(path, "/healthz", 8) == 0)
        return health(s, 0, status);
    if (strcmp(method, "GET") == 0 && n == 7 && strncmp(path, "/readyz", 7) == 0)
        return health(s, 1, status);
    if (strcmp(method, "POST") == 0 && ends_with(path, n, "/filter"))
        return gs_ext_filter(s->model, rq->body, rq->len);
    if (strcmp(method, "POST") == 0 && ends_with(path, n, "/prioritize"))
        return gs_ext_prioritize(s->model, rq->body, rq->len);
    *status = 404;
    *type = "text/plain";
    return strdup("not found\n");
}

static void on_request(void *ctx, const gs__httpd_request_t *rq, gs__httpd_reply_t *rp)
{
    rp->body = route(ctx, rq, &rp->status, &rp->type);
    rp->len = rp->body != NULL ? strlen(rp->body) : 0;
}

int gs_ext_server_start(const char *addr, uint16_t port, gs_k8s_model_t *model,
                        gs_ext_server_t **out, uint16_t *bound)
{
    gs_ext_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GS_ENOMEM;
    s->model = model;
    gs__httpd_opts_t o = {.addr = addr,
                          .port = port,
                          .handler = on_request,
                          .ctx = s,
                          .max_body = GS_K8S_ARGS_MAX,
                          .max_conns = GS_EXT_CONNS,
                          .per_peer = GS_EXT_PER_PEER};
    int result = gs__httpd_start(&o, &s->http, bound);
    if (result != 0) {
        free(s);
        return result;
    }
    *out = s;
    return 0;
}

void gs_ext_server_stop(gs_ext_server_t *s)
{
    if (s == NULL)
        return;
    gs__httpd_stop(s->http);
    free(s);
}
