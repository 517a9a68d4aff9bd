/* SPDX-License-Identifier: Apache-2.0 */
/* The API server over libcurl (kapi.h): one easy handle per client, kept for its connection. */
#include "kapi.h"

#include "gpushare/client.h"
#include "gpushare/error.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct gs__kapi {
    gs__kapi_cfg_t cfg;
    CURL *curl;
};

typedef struct body {
    char *data;
    size_t len;
    int over;
} body_t;

int gs__kapi_in_cluster(gs__kapi_cfg_t *cfg, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    memset(cfg, 0, sizeof(*cfg));
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
        return gs_fail(err, errlen, GS_ENOENT,
                       "not in a pod (KUBERNETES_SERVICE_HOST and _PORT are not set): give "
                       "--kubeconfig or --server");
    int v6 = strchr(host, ':') != NULL;
    snprintf(cfg->server, sizeof(cfg->server), "https://%s%.200s%s:%.8s", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    snprintf(cfg->token_file, sizeof(cfg->token_file), "%s/token", SA_DIR);
    snprintf(cfg->ca_file, sizeof(cfg->ca_file), "%s/ca.crt", SA_DIR);
    return 0;
}

int gs__kapi_open(const gs__kapi_cfg_t *cfg, gs__kapi_t **out)
{
    gs__kapi_t *api = calloc(1, sizeof(*api));
    if (api == NULL || (api->curl = curl_easy_init()) == NULL) {
        free(api);
        return GS_ENOMEM;
    }
    api->cfg = *cfg;
    if (api->cfg.timeout_ms <= 0)
        api->cfg.timeout_ms = 10000;
    *out = api;
    return 0;
}

void gs__kapi_close(gs__kapi_t *api)
{
    if (api == NULL)
        return;
    curl_easy_cleanup(api->curl);
    free(api);
}

const char *gs__kapi_server(const gs__kapi_t *api)
{
    return api->cfg.server;
}

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
    body_t *b = ctx;
    size_t len = size * n;
    if (b->len + len > GS_KAPI_BODY_MAX) {
        b->over = 1;
        return 0;
    }
    char *more = realloc(b->data, b->len + len + 1);
    if (more == NULL)
        return 0;
    memcpy(more + b->len, data, len);
    b->data = more;
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

/* The bearer token: the file's first line (read now: tokens rotate), or the configured one. */
static int bearer(const gs__kapi_cfg_t *cfg, char *buf, size_t len, char *err, size_t errlen)
{
    buf[0] = '\0';
    if (cfg->token_file[0] == '\0') {
        snprintf(buf, len, "%s", cfg->token);
        return 0;
    }
    FILE *f = fopen(cfg->token_file, "r");
    if (f == NULL)
        return gs_fail(err, errlen, GS_EACCES, "cannot read the token %s: %s", cfg->token_file,
                       strerror(errno));
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

static void set_tls(const gs__kapi_t *api)
{
    const gs__kapi_cfg_t *cfg = &api->cfg;
    if (cfg->ca_file[0] != '\0')
        curl_easy_setopt(api->curl, CURLOPT_CAINFO, cfg->ca_file);
    if (cfg->cert_file[0] != '\0')
        curl_easy_setopt(api->curl, CURLOPT_SSLCERT, cfg->cert_file);
    if (cfg->key_file[0] != '\0')
        curl_easy_setopt(api->curl, CURLOPT_SSLKEY, cfg->key_file);
    curl_easy_setopt(api->curl, CURLOPT_SSL_VERIFYPEER, cfg->insecure ? 0L : 1L);
    curl_easy_setopt(api->curl, CURLOPT_SSL_VERIFYHOST, cfg->insecure ? 0L : 2L);
}

/* The code of a transport failure. */
static int transport_code(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return GS_ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return GS_ETIMEDOUT;
    case CURLE_WRITE_ERROR:
        return GS_EMSGSIZE;
    default:
        return GS_EIO;
    }
}

/* Sets the request's method, URL, headers and body on the handle. */
static int prepare(gs__kapi_t *api, const char *method, const char *path, const char *text,
                   struct curl_slist **headers, char *err, size_t errlen)
{
    char url[2048], token[GS_KAPI_TOKEN_MAX], auth[GS_KAPI_TOKEN_MAX + 32];
    if (snprintf(url, sizeof(url), "%s%s", api->cfg.server, path) >= (int)sizeof(url))
        return gs_fail(err, errlen, GS_EINVAL, "URL too long: %s%.64s...", api->cfg.server, path);
    int result = bearer(&api->cfg, token, sizeof(token), err, errlen);
    if (result != 0)
        return result;
    curl_easy_reset(api->curl);
    curl_easy_setopt(api->curl, CURLOPT_URL, url);
    curl_easy_setopt(api->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(api->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(api->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(api->curl, CURLOPT_TIMEOUT_MS, api->cfg.timeout_ms);
    curl_easy_setopt(api->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(api->curl, CURLOPT_USERAGENT, "gpushare-k8s");
    set_tls(api);
    *headers = curl_slist_append(*headers, "Accept: application/json");
    if (token[0] != '\0') {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        *headers = curl_slist_append(*headers, auth);
    }
    if (text != NULL) {
        *headers = curl_slist_append(*headers, "Content-Type: application/json");
        curl_easy_setopt(api->curl, CURLOPT_POSTFIELDS, text);
    }
    curl_easy_setopt(api->curl, CURLOPT_HTTPHEADER, *headers);
    return 0;
}

int gs__kapi_call(gs__kapi_t *api, const char *method, const char *path, const json_t *body,
                  long *status, json_t **reply, char *err, size_t errlen)
{
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    struct curl_slist *headers = NULL;
    body_t got = {0};
    char curl_err[CURL_ERROR_SIZE] = "";
    *status = 0;
    *reply = NULL;
    int result = body != NULL && text == NULL ? GS_ENOMEM : 0;
    if (result == 0)
        result = prepare(api, method, path, text, &headers, err, errlen);
    if (result == 0) {
        curl_easy_setopt(api->curl, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(api->curl, CURLOPT_WRITEDATA, &got);
        curl_easy_setopt(api->curl, CURLOPT_ERRORBUFFER, curl_err);
        CURLcode rc = curl_easy_perform(api->curl);
        if (rc != CURLE_OK)
            result = gs_fail(err, errlen, got.over ? GS_EMSGSIZE : transport_code(rc),
                             "API server %s: %s %s: %s", api->cfg.server, method, path,
                             got.over      ? "reply too large"
                             : curl_err[0] ? curl_err
                                           : curl_easy_strerror(rc));
        else
            curl_easy_getinfo(api->curl, CURLINFO_RESPONSE_CODE, status);
    }
    if (result == 0 && got.data != NULL)
        *reply = json_loadb(got.data, got.len, 0, NULL);
    curl_slist_free_all(headers);
    free(got.data);
    free(text);
    return result;
}

void gs__kapi_status_text(long status, const json_t *reply, char *buf, size_t len)
{
    const char *message = json_string_value(json_object_get(reply, "message"));
    char shown[301] = ""; /* (the message quotes names from the request: escaped, one line) */
    if (message != NULL)
        gs_display_escape(shown, sizeof(shown), message);
    if (status >= 200 && status < 300 && !json_is_object(reply))
        snprintf(buf, len, "HTTP %ld without a JSON object (malformed, or a string with NUL)",
                 status);
    else
        snprintf(buf, len, "HTTP %ld%s%s", status, message != NULL ? ": " : "", shown);
}
