/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal Kubernetes API client for the scheduler extender: LIST + WATCH of Nodes, Pods,
 * ResourceSlices and ResourceClaims into the extender's model, over HTTPS with a bearer token and
 * a CA (src/k8s/http.h on OpenSSL), the way client-go's reflectors do.
 *
 * Threading: gs_kube_watch_start runs one thread per kind; each makes its own requests and
 * applies what it reads to the model (thread-safe). Start and stop from one thread. */
#ifndef GS_K8S_KUBE_H
#define GS_K8S_KUBE_H

#include "model.h"

#include <limits.h>
#include <stddef.h>

typedef struct gs_kube_config {
    char server[512];          /* "https://10.0.0.1:443" (no trailing slash) */
    char token_file[PATH_MAX]; /* re-read at every connection (tokens rotate); "" none */
    char ca_file[PATH_MAX];    /* the API server's CA; "" the system's CAs */
    int insecure;              /* skip TLS verification (tests against a stand-in only) */
    long connect_timeout_ms;   /* 0: 5,000 */
    long list_timeout_ms;      /* a whole LIST page; 0: 60,000 */
    long watch_seconds;        /* timeoutSeconds of a WATCH; 0: 300 */
    long backoff_max_ms;       /* between failed attempts, doubling from 500 ms; 0: 30,000 */
} gs_kube_config_t;

/* Fills cfg for a pod's service account: KUBERNETES_SERVICE_HOST and _PORT, the token and CA of
 * /var/run/secrets/kubernetes.io/serviceaccount. Returns 0, or GS_ENOENT with the reason in err
 * (not in a pod). */
int gs_kube_config_in_cluster(gs_kube_config_t *cfg, char *err, size_t errlen);

typedef struct gs_kube_watch gs_kube_watch_t;

/* Starts following the API server into model: per kind, LIST (paginated, limit 500) then WATCH
 * from the list's resourceVersion with bookmarks; a WATCH that ends is resumed from the last
 * resourceVersion; 410 Gone, an ERROR event or a failure relists (after a backoff, the kind
 * marked out of sync meanwhile). Returns 0, GS_ENOMEM or an error starting threads. */
int gs_kube_watch_start(const gs_kube_config_t *cfg, gs_k8s_model_t *model, gs_kube_watch_t **out);

/* Stops the threads (each within about 200 ms: every wait looks at the stop flag) and frees. */
void gs_kube_watch_stop(gs_kube_watch_t *watch);

/* The path a kind is listed at, with its field selector (slices of gpu.gpushare.io only, pods
 * that are not finished). */
const char *gs_kube_path(gs_k8s_kind_t kind, const char **selector);

#endif
