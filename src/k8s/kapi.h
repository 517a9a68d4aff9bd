/* SPDX-License-Identifier: Apache-2.0 */
/* The Kubernetes API server as gpushare-k8s speaks to it: JSON over HTTPS with libcurl, as the
 * pod's service account (its token and CA) or as a kubeconfig names.
 *
 * libcurl rather than HTTP of our own: it is what Debian keeps patched for TLS and HTTP, and it
 * already does what a kubeconfig may ask (client certificates and keys, CA bundles, proxies from
 * the environment, HTTP/2). Its dependencies that scripts/licence-check.sh misreads as GPL-only
 * are reviewed in scripts/licence-overrides.txt.
 *
 * Threading: a gs__kapi_t is one thread's (it keeps its connection); open one per thread. */
#ifndef GS_K8S_KAPI_H
#define GS_K8S_KAPI_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#define GS_KAPI_TOKEN_MAX 8192 /* a bearer token (service account tokens are about 1 KiB) */
#define GS_KAPI_BODY_MAX  (16 << 20)

typedef struct gs__kapi_cfg {
    char server[512];              /* "https://10.0.0.1:443", no trailing slash */
    char token_file[PATH_MAX];     /* re-read at every request (tokens rotate); "" none */
    char token[GS_KAPI_TOKEN_MAX]; /* a kubeconfig's token, when token_file is "" */
    char ca_file[PATH_MAX];        /* the API server's CA (PEM); "" the system's */
    char cert_file[PATH_MAX];      /* a client certificate (PEM), "" none */
    char key_file[PATH_MAX];       /* its key */
    int insecure;                  /* skip TLS verification (tests against a stand-in only) */
    long timeout_ms;               /* a whole request; 0: 10,000 */
} gs__kapi_cfg_t;

/* Fills cfg for a pod's service account: KUBERNETES_SERVICE_HOST and _PORT, the token and CA of
 * /var/run/secrets/kubernetes.io/serviceaccount. Returns 0, or GS_ENOENT with the reason in err
 * (not in a pod). */
int gs__kapi_in_cluster(gs__kapi_cfg_t *cfg, char *err, size_t errlen);

/* Fills cfg from a kubeconfig file (YAML or JSON): the current context's cluster (server,
 * certificate-authority or -data, insecure-skip-tls-verify) and user (token, tokenFile,
 * client-certificate and -key or their -data). Data fields are written to files under dir
 * (0600). exec and auth-provider users are not supported. Returns 0, or GS_ENOENT / GS_EFORMAT /
 * GS_ENOTSUP / GS_EIO with one line in err. */
int gs__kapi_kubeconfig(const char *path, const char *dir, gs__kapi_cfg_t *cfg, char *err,
                        size_t errlen);

/* The same from a kubeconfig already in memory (text of len bytes; the fuzz target's entry):
 * relative paths are relative to base (the kubeconfig's directory); dir NULL writes no data
 * file (a field with data is then GS_ENOTSUP). */
int gs__kapi_kubeconfig_parse(const char *text, size_t len, const char *base, const char *dir,
                              gs__kapi_cfg_t *cfg, char *err, size_t errlen);

typedef struct gs__kapi gs__kapi_t;

/* A client of the API server cfg names (copied). Call curl_global_init first, once. Returns 0,
 * or GS_ENOMEM. */
int gs__kapi_open(const gs__kapi_cfg_t *cfg, gs__kapi_t **out);

void gs__kapi_close(gs__kapi_t *api);

/* One request: method, path with its query ("/apis/resource.k8s.io/v1/resourceslices?..."),
 * body (NULL: none) sent as JSON. Returns 0 with the HTTP status in *status and the reply in
 * *reply (a new reference; NULL when the body is not JSON), or GS_ECONNREFUSED / GS_ETIMEDOUT /
 * GS_EIO (network, TLS) / GS_EMSGSIZE (a reply over GS_KAPI_BODY_MAX) / GS_EACCES (the token
 * file cannot be read) with one line in err naming the server. */
int gs__kapi_call(gs__kapi_t *api, const char *method, const char *path, const json_t *body,
                  long *status, json_t **reply, char *err, size_t errlen);

/* One line for a reply that is not 2xx: "HTTP 403: <the Status object's message>" (its control
 * characters escaped), or for a 2xx reply without a JSON object. */
void gs__kapi_status_text(long status, const json_t *reply, char *buf, size_t len);

/* The server's URL (for messages). */
const char *gs__kapi_server(const gs__kapi_t *api);

#endif
