/* SPDX-License-Identifier: Apache-2.0 */
/* kube-scheduler's extender verbs over HTTP (libmicrohttpd) on the model (extender.h). */
#include "extender.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS      4
#define CONNECTIONS  64
#define IDLE_SECONDS 30

struct gs_ext_server {
    struct MHD_Daemon *daemon;
    gs_k8s_model_t *model;
};

/* A request being read. */
typedef struct request {
    gs__k8s_buf_t body; /* capped at GS_K8S_ARGS_MAX */
    int too_big;
} request_t;

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

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *text, const char *type)
{
    if (text == NULL) {
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        text = strdup("out of memory\n");
        type = "text/plain";
        if (text == NULL)
            return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static enum MHD_Result health(gs_ext_server_t *s, struct MHD_Connection *c, int ready)
{
    gs_k8s_model_stats_t st;
    gs_k8s_model_stats(s->model, &st);
    int synced = gs_k8s_model_synced(s->model);
    char *text = malloc(512);
    if (text != NULL)
        snprintf(text, 512,
                 "{\"synced\":%s,\"nodes\":%zu,\"gpuNodes\":%zu,\"gpus\":%zu,"
                 "\"pods\":%zu,\"claims\":%zu,\"assumed\":%zu,\"answers\":%llu,\"neutral\":%llu}\n",
                 synced ? "true" : "false", st.nodes, st.gpu_nodes, st.gpus, st.pods, st.claims,
                 st.assumed, (unsigned long long)st.answers, (unsigned long long)st.neutral);
    return reply(c, ready && !synced ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, text,
                 "application/json");
}

/* Reads the body (capped), then answers the verb. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
    gs_ext_server_t *s = cls;
    request_t *req = *state;
    (void)version;
    if (strcmp(method, "GET") == 0 && (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0))
        return health(s, c, strcmp(url, "/readyz") == 0);
    int filter = ends_with(url, "/filter"), prioritize = ends_with(url, "/prioritize");
    if (strcmp(method, "POST") != 0 || (!filter && !prioritize))
        return reply(c, MHD_HTTP_NOT_FOUND, strdup("not found\n"), "text/plain");
    if (req == NULL) {
        *state = req = calloc(1, sizeof(*req));
        if (req != NULL)
            req->body.max = GS_K8S_ARGS_MAX + 1;
        return req != NULL ? MHD_YES : MHD_NO;
    }
    if (*size > 0) {
        int result = req->too_big ? 0 : gs__k8s_buf_add(&req->body, data, *size);
        if (result == GS_ENOMEM)
            return MHD_NO;
        req->too_big |= result == GS_ELIMIT;
        *size = 0;
        return MHD_YES;
    }
    if (req->too_big) {
        gs_warn("%s: body over %u bytes refused", url, GS_K8S_ARGS_MAX);
        return reply(c, MHD_HTTP_CONTENT_TOO_LARGE, strdup("body too large\n"), "text/plain");
    }
    const char *body = req->body.data != NULL ? req->body.data : "";
    char *out = filter ? gs_ext_filter(s->model, body, req->body.len)
                       : gs_ext_prioritize(s->model, body, req->body.len);
    return reply(c, MHD_HTTP_OK, out, "application/json");
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode code)
{
    request_t *req = *state;
    (void)cls, (void)c, (void)code;
    if (req != NULL) {
        free(req->body.data);
        free(req);
        *state = NULL;
    }
}

int gs_ext_server_start(const char *addr, uint16_t port, gs_k8s_model_t *model,
                        gs_ext_server_t **out, uint16_t *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return GS_EINVAL;
    gs_ext_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GS_ENOMEM;
    s->model = model;
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, port, NULL, NULL,
                                 on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_SECONDS,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_done, s, MHD_OPTION_END);
    if (s->daemon == NULL) {
        free(s);
        return GS_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (bound != NULL)
        *bound = info != NULL ? info->port : port;
    *out = s;
    return 0;
}

void gs_ext_server_stop(gs_ext_server_t *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
