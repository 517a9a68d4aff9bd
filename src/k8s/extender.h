/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-scheduler-extender's HTTP side: kube-scheduler's filter and prioritize verbs on the
 * model (src/k8s/http.h), and the same verbs on a request body for tests and benchmarks.
 *
 * Threading: the server answers on a pool of 8 threads; the model serialises the verbs. The
 * verb functions are thread-safe. */
#ifndef GS_K8S_EXTENDER_H
#define GS_K8S_EXTENDER_H

#include "model.h"

#include <stddef.h>
#include <stdint.h>

/* Answers a filter (ExtenderArgs body, not NUL-terminated) as the server does: an
 * ExtenderFilterResult; on any failure a neutral one (all nodes pass) or, when the body names
 * no nodes, {"error": ...} (kube-scheduler then ignores an `ignorable` extender), with one log
 * line. Returns malloc'ed JSON text, or NULL only when memory is short. */
char *gs_ext_filter(gs_k8s_model_t *model, const char *body, size_t len);

/* Answers a prioritize: a HostPriorityList; neutral (every node 0, or [] for a body without
 * nodes) on any failure, with one log line. Same return convention. */
char *gs_ext_prioritize(gs_k8s_model_t *model, const char *body, size_t len);

typedef struct gs_ext_server gs_ext_server_t;

/* Serves POST <prefix>/filter and <prefix>/prioritize (any prefix: kube-scheduler appends the
 * verb to its urlPrefix), GET /healthz (200 while the process runs) and GET /readyz (200 when
 * the model is synced with the API server, else 503), on addr:port (port 0: any free port,
 * written to *bound). Bodies over GS_K8S_ARGS_MAX are refused (413); connections idle for 30 s
 * are closed, and so are connections past the 64 waiting for a thread. Returns 0, or GS_EINVAL (bad
 * address) / GS_EIO (cannot listen). */
int gs_ext_server_start(const char *addr, uint16_t port, gs_k8s_model_t *model,
                        gs_ext_server_t **out, uint16_t *bound);

void gs_ext_server_stop(gs_ext_server_t *server);

#endif
