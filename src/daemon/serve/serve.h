/* SPDX-License-Identifier: Apache-2.0 */
/* serve/: gpushared's clients: the API socket's event loop (server.h) and its connections, the
 * requests (api.h), the JSON views of the state (views.h), the Prometheus endpoint (metrics.h,
 * http.h) and main.c. It calls core/ and gpu/ through their interfaces; nothing calls it (core
 * tells it about a lease's holder through callbacks, gs__api_attach). The interface of serve/
 * (for main.c and tests); conn.h and http.h are private. Threads: the event loop runs all of it
 * but the metrics endpoint's own thread (http.c), which only sends the latest published text. */
#ifndef GS_DAEMON_SERVE_H
#define GS_DAEMON_SERVE_H

#include "api.h"
#include "metrics.h"
#include "server.h"
#include "views.h"

#endif
