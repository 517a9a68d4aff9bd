/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare-scheduler-extender's HTTP side: kube-scheduler's filter and prioritize verbs on the
 * model, served by src/http's server (http/httpd.h), and the same verbs on a request body for
 * tests and benchmarks.
 *
 * Threading: the server answers on its one thread, one request at a time (the model serialises
 * the verbs anyway; a verb takes about a millisecond on 1,500 nodes, docs/kubernetes.md). The
 * verb functions are thread-safe. */
#ifndef GS_K8S_EXTENDER_H
#define GS_K8S_EXTENDER_H

#include "model.h"

#include <stddef.h>
#include <stdint.h>

#define GS_EXT_CONNS 1024 /* connections the server holds at once */
#define GS_EXT_PER_PEER                                                                            \
    128 /* of them, from one IP address (beyond: its oldest not answered goes) */

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
 * written to *bound). Bodies over GS_K8S_ARGS_MAX are refused (413). A request's head must come
 * within 5 s, its body within 10 s; a kept-alive connection waits 15 s for its next request;
 * GS_EXT_CONNS and GS_EXT_PER_PEER bound the connections (httpd.h: the oldest idle or slow one
 * of the heaviest peer makes room). Returns 0, or GS_EINVAL (bad address), GS_EBUSY (the port is
 * taken) or GS_EIO (cannot listen). */
int gs_ext_server_start(const char *addr, uint16_t port, gs_k8s_model_t *model,
                        gs_ext_server_t **out, uint16_t *bound);

void gs_ext_server_stop(gs_ext_server_t *server);

#endif
