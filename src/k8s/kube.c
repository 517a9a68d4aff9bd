/* SPDX-License-Identifier: Apache-2.0 */
/* LIST + WATCH of the API server into the extender's model (kube.h), over src/k8s/http.h. */
#include "http.h"
#include "kube.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SA_DIR     "/var/run/secrets/kubernetes.io/serviceaccount"
#define PAGE_LIMIT 500
#define BODY_MAX   (512u << 20) /* a LIST page */
#define LINE_MAX_  (64u << 20)  /* one watch event */
#define TOKEN_MAX  (64u << 10)
#define RELIST     1 /* watch(): the list must be read again */

typedef struct watcher {
    struct gs_kube_watch *parent;
    gs_k8s_kind_t kind;
    pthread_t thread;
    long code;          /* the status of the response being read */
    char rv[128];       /* resourceVersion to watch from */
    gs__k8s_buf_t body; /* a LIST page, or the watch's partial line */
    int relist;         /* an ERROR event asked for a new LIST */
    int listed;
} watcher_t;

struct gs_kube_watch {
    gs_kube_config_t cfg;
    gs_k8s_model_t *model;
    atomic_int stop;
    int started[GS_K8S_KINDS];
    watcher_t w[GS_K8S_KINDS];
};

static const char *const paths[GS_K8S_KINDS] = {"/api/v1/nodes", "/api/v1/pods",
                                                "/apis/resource.k8s.io/v1/resourceslices",
                                                "/apis/resource.k8s.io/v1/resourceclaims"};
static const char *const selectors[GS_K8S_KINDS] = {
    NULL, "status.phase!=Succeeded,status.phase!=Failed", "spec.driver=" GS_DRA_DRIVER, NULL};

const char *gs_kube_path(gs_k8s_kind_t kind, const char **selector)
{
    if (selector != NULL)
        *selector = selectors[kind];
    return paths[kind];
}

/* Reads a small text file into buf (NUL-terminated, trailing white space cut). */
static int read_small(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return GS_ENOENT;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return 0;
}

int gs_kube_config_in_cluster(gs_kube_config_t *cfg, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    memset(cfg, 0, sizeof(*cfg));
    if (host == NULL || port == NULL)
        return gs_fail(err, errlen, GS_ENOENT,
                       "not in a pod (KUBERNETES_SERVICE_HOST "
                       "unset): give --server and --token-file");
    /* An IPv6 service address needs brackets in a URL. */
    snprintf(cfg->server, sizeof(cfg->server),
             strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    snprintf(cfg->token_file, sizeof(cfg->token_file), "%s/token", SA_DIR);
    snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s/ca.crt", SA_DIR);
    return 0;
}

/* Appends text percent-encoded (RFC 3986: unreserved characters as they are). */
static void escape(char *out, size_t size, const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0' && n + 4 < size; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) != NULL) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
}

/* The URL of kind's path with query parameters (values escaped). */
static int make_url(watcher_t *w, char *url, size_t size, int watch, const char *cont)
{
    const gs_kube_config_t *cfg = &w->parent->cfg;
    const char *sel = selectors[w->kind];
    char esel[256], econt[4096], erv[384];
    escape(esel, sizeof(esel), sel != NULL ? sel : "");
    escape(econt, sizeof(econt), cont != NULL ? cont : "");
    escape(erv, sizeof(erv), w->rv);
    int n = watch ? snprintf(url, size,
                             "%s%s?watch=true&allowWatchBookmarks=true&timeoutSeconds=%ld"
                             "&resourceVersion=%s%s%s",
                             cfg->server, paths[w->kind], cfg->watch_seconds, erv,
                             sel ? "&fieldSelector=" : "", sel ? esel : "")
                  : snprintf(url, size, "%s%s?limit=%d%s%s%s%s", cfg->server, paths[w->kind],
                             PAGE_LIMIT, sel ? "&fieldSelector=" : "", sel ? esel : "",
                             cont ? "&continue=" : "", cont ? econt : "");
    return n > 0 && (size_t)n < size ? 0 : GS_ELIMIT;
}

static int on_body(void *p, const char *data, size_t len)
{
    return gs__k8s_buf_add(&((watcher_t *)p)->body, data, len) != 0;
}

/* GET url; the response's status code in *code. Returns 0, or GS_EIO with a line logged. */
static int get(watcher_t *w, const char *url, long timeout_ms, gs__khttp_sink_t sink, long *code)
{
    const gs_kube_config_t *cfg = &w->parent->cfg;
    char token[TOKEN_MAX], auth[TOKEN_MAX + 32], err[GS_K8S_ERR_MAX];
    const char *headers[1];
    size_t nheaders = 0;
    if (cfg->token_file[0] != '\0' && read_small(cfg->token_file, token, sizeof(token)) == 0) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        headers[nheaders++] = auth;
    }
    gs__khttp_client_t client = {.ca_file = cfg->ca_file,
                                 .insecure = cfg->insecure,
                                 .connect_ms = cfg->connect_timeout_ms,
                                 .total_ms = timeout_ms,
                                 .idle_ms = timeout_ms,
                                 .stop = &w->parent->stop};
    w->body.len = 0;
    w->code = 0;
    int result = gs__khttp_request(&client, "GET", url, headers, nheaders, NULL, 0, sink, w,
                                   &w->code, err, sizeof(err));
    *code = w->code;
    if (result == 0)
        return 0;
    if (!atomic_load(&w->parent->stop))
        gs_warn("%s: %s: %s", gs_k8s_kind_name(w->kind), cfg->server, err);
    return GS_EIO;
}

/* Logs a refused request with the API server's Status message. */
static void refused(watcher_t *w, const char *verb, long code)
{
    json_t *status = w->body.len > 0 ? json_loadb(w->body.data, w->body.len, 0, NULL) : NULL;
    const char *msg = gs_k8s_str(status, "message", NULL);
    gs_warn("%s %s: HTTP %ld%s%s%s", verb, gs_k8s_kind_name(w->kind), code, msg ? " (" : "",
            msg ? msg : "", msg ? ")" : (code == 401 || code == 403 ? " (token or RBAC?)" : ""));
    json_decref(status);
}

/* Applies one LIST page; its continue token into cont (empty at the end). */
static int list_page(watcher_t *w, char *cont, size_t size, size_t *count)
{
    json_t *root = json_loadb(w->body.data, w->body.len, 0, NULL);
    const json_t *items = json_object_get(root, "items");
    if (!json_is_array(items)) {
        json_decref(root);
        gs_warn("LIST %s: the answer is not a list", gs_k8s_kind_name(w->kind));
        return GS_EPROTO;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(items, i, item)
    {
        char err[GS_K8S_ERR_MAX];
        if (gs_k8s_model_apply(w->parent->model, w->kind, GS_K8S_ADDED, item, err, sizeof(err)) !=
            0)
            gs_warn("LIST %s: item %zu ignored: %s", gs_k8s_kind_name(w->kind), i, err);
    }
    *count += json_array_size(items);
    const char *rv = gs_k8s_str(root, "metadata", "resourceVersion", NULL);
    const char *next = gs_k8s_str(root, "metadata", "continue", NULL);
    snprintf(w->rv, sizeof(w->rv), "%s", rv != NULL ? rv : "");
    snprintf(cont, size, "%s", next != NULL ? next : "");
    json_decref(root);
    return 0;
}

static int list(watcher_t *w)
{
    char url[4096], cont[2048] = "";
    size_t count = 0;
    long code;
    w->body.max = BODY_MAX;
    gs_k8s_model_list_begin(w->parent->model, w->kind);
    do {
        if (make_url(w, url, sizeof(url), 0, cont[0] ? cont : NULL) != 0)
            return GS_ELIMIT;
        int result = get(w, url, w->parent->cfg.list_timeout_ms, on_body, &code);
        if (result != 0)
            return result;
        if (code != 200) {
            refused(w, "LIST", code);
            return GS_EIO;
        }
        if ((result = list_page(w, cont, sizeof(cont), &count)) != 0)
            return result;
    } while (cont[0] != '\0');
    gs_k8s_model_list_end(w->parent->model, w->kind);
    gs_info("listed %zu %s (resourceVersion %s)", count, gs_k8s_kind_name(w->kind), w->rv);
    return 0;
}

/* One watch event line: applied to the model; an ERROR asks for a new LIST. */
static void watch_event(watcher_t *w, const char *line, size_t len)
{
    json_t *ev = json_loadb(line, len, 0, NULL);
    const char *type = gs_k8s_str(ev, "type", NULL);
    const json_t *obj = json_object_get(ev, "object");
    const char *rv = gs_k8s_str(obj, "metadata", "resourceVersion", NULL);
    gs_k8s_event_t kind = GS_K8S_ADDED;
    if (type == NULL || !json_is_object(obj)) {
        gs_warn("WATCH %s: malformed event ignored", gs_k8s_kind_name(w->kind));
    } else if (strcmp(type, "ERROR") == 0) {
        gs_info("WATCH %s: %s (code %lld): listing again", gs_k8s_kind_name(w->kind),
                gs_k8s_str(obj, "message", NULL) ? gs_k8s_str(obj, "message", NULL) : "error",
                json_integer_value(json_object_get(obj, "code")));
        w->relist = 1;
    } else if (strcmp(type, "BOOKMARK") != 0) {
        kind = strcmp(type, "DELETED") == 0    ? GS_K8S_DELETED
               : strcmp(type, "MODIFIED") == 0 ? GS_K8S_MODIFIED
                                               : GS_K8S_ADDED;
        char err[GS_K8S_ERR_MAX];
        if (gs_k8s_model_apply(w->parent->model, w->kind, kind, obj, err, sizeof(err)) != 0)
            gs_warn("WATCH %s: %s event ignored: %s", gs_k8s_kind_name(w->kind), type, err);
    }
    if (rv != NULL && !w->relist)
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
    json_decref(ev);
}

/* The watch stream: JSON objects one per line. Returns nonzero to end it (ERROR). */
static int on_stream(void *p, const char *data, size_t len)
{
    watcher_t *w = p;
    if (gs__k8s_buf_add(&w->body, data, len) != 0)
        return 1;
    if (w->code != 200) /* a Status, kept whole for the log line */
        return 0;
    char *start = w->body.data, *nl;
    while (!w->relist &&
           (nl = memchr(start, '\n', w->body.len - (size_t)(start - w->body.data))) != NULL) {
        if (nl > start)
            watch_event(w, start, (size_t)(nl - start));
        start = nl + 1;
    }
    size_t rest = w->body.len - (size_t)(start - w->body.data);
    memmove(w->body.data, start, rest);
    w->body.len = rest;
    return w->relist;
}

/* One WATCH from w->rv. Returns 0 when it ended normally (resume), RELIST, or GS_EIO. */
static int watch(watcher_t *w)
{
    char url[4096];
    long code;
    w->relist = 0;
    w->body.max = LINE_MAX_;
    if (make_url(w, url, sizeof(url), 1, NULL) != 0)
        return GS_ELIMIT;
    int result = get(w, url, (w->parent->cfg.watch_seconds + 30) * 1000, on_stream, &code);
    if (result != 0)
        return result;
    if (code == 410 || w->relist)
        return RELIST;
    if (code != 200) {
        refused(w, "WATCH", code);
        return GS_EIO;
    }
    return 0;
}

/* Sleeps ms, waking early when stop is asked. */
static void pause_ms(gs_kube_watch_t *kw, long ms)
{
    for (; ms > 0 && !atomic_load(&kw->stop); ms -= 100) {
        struct timespec ts = {0, (ms < 100 ? ms : 100) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void *follow(void *p)
{
    watcher_t *w = p;
    gs_kube_watch_t *kw = w->parent;
    long backoff = 500;
    while (!atomic_load(&kw->stop)) {
        int result = list(w);
        if (result == 0)
            backoff = 500;
        while (result == 0 && !atomic_load(&kw->stop))
            result = watch(w);
        if (atomic_load(&kw->stop))
            break;
        if (result == RELIST)
            continue;
        gs_k8s_model_set_synced(kw->model, w->kind, 0);
        gs_warn("%s: out of sync with the API server: answers are neutral; retrying in %ld ms",
                gs_k8s_kind_name(w->kind), backoff);
        pause_ms(kw, backoff);
        backoff = backoff * 2 < kw->cfg.backoff_max_ms ? backoff * 2 : kw->cfg.backoff_max_ms;
    }
    return NULL;
}

int gs_kube_watch_start(const gs_kube_config_t *cfg, gs_k8s_model_t *model, gs_kube_watch_t **out)
{
    gs_kube_watch_t *kw = calloc(1, sizeof(*kw));
    if (kw == NULL)
        return GS_ENOMEM;
    kw->cfg = *cfg;
    kw->cfg.connect_timeout_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 5000;
    kw->cfg.list_timeout_ms = cfg->list_timeout_ms ? cfg->list_timeout_ms : 60000;
    kw->cfg.watch_seconds = cfg->watch_seconds ? cfg->watch_seconds : 300;
    kw->cfg.backoff_max_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : 30000;
    kw->model = model;
    atomic_init(&kw->stop, 0);
    int result = 0;
    for (int k = 0; k < GS_K8S_KINDS && result == 0; k++) {
        watcher_t *w = &kw->w[k];
        w->parent = kw;
        w->kind = (gs_k8s_kind_t)k;
        if ((result = -pthread_create(&w->thread, NULL, follow, w)) == 0)
            kw->started[k] = 1;
    }
    if (result != 0)
        gs_kube_watch_stop(kw);
    else
        *out = kw;
    return result;
}

void gs_kube_watch_stop(gs_kube_watch_t *kw)
{
    if (kw == NULL)
        return;
    atomic_store(&kw->stop, 1);
    for (int k = 0; k < GS_K8S_KINDS; k++) {
        if (kw->started[k])
            pthread_join(kw->w[k].thread, NULL);
        free(kw->w[k].body.data);
    }
    free(kw);
}
