/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's gRPC services served by gpushare-k8s (service.c): Registration (pluginregistration
 * v1) on <registry>/gpu.gpushare.io-reg.sock, DRAPlugin (v1.DRAPlugin) on <plugin dir>/dra.sock.
 *
 * Threading: each server runs its calls one at a time on its own thread (rpc.h); the DRA
 * service's thread is the only one that prepares, unprepares and touches the claims' records.
 * Start and stop from the main thread. */
#ifndef GS_K8S_SERVICE_H
#define GS_K8S_SERVICE_H

#include "plugin.h"
#include "rpc.h"

#include <stdatomic.h>

typedef struct gs__service {
    gs__plugin_t *plugin;
    char dra_socket[PATH_MAX]; /* where the DRA service listens */
    char reg_socket[PATH_MAX]; /* the registration socket in the kubelet's registry */
    char endpoint[PATH_MAX];   /* the DRA socket as the kubelet sees it (GetInfo's endpoint) */
    atomic_int registered;     /* the kubelet's last word: 1 registered, -1 refused, 0 none */
    gs__rpc_server_t *dra, *reg;
} gs__service_t;

/* Starts both servers (the DRA one first). Returns 0, or a code with one line in err (nothing
 * left listening). */
int gs__service_start(gs__service_t *s, char *err, size_t errlen);

/* Stops both (the registration one first, so that the kubelet stops calling). */
void gs__service_stop(gs__service_t *s);

#endif
