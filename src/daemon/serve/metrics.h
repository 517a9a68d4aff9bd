/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus metrics on http://ADDR:PORT/metrics (http.h: its own thread and event loop).
 *
 * The event loop renders the text from its state once a second (gs__metrics_publish) and swaps
 * it in; the HTTP thread only sends the latest text, so a scrape never blocks or races the
 * loop, and other clients' idle connections never keep a scrape out. Per-lease series (which
 * name users) are rendered only with metrics_users = all. Series (docs/api.md, "Metrics"): per GPU
 * with dcgm-exporter's names where one exists (DCGM_FI_DEV_FB_USED/FREE in MiB,
 * DCGM_FI_DEV_GPU_UTIL) and gpushare_gpu_*, labelled as dcgm-exporter labels its series (gpu, UUID,
 * pci_bus_id, device, modelName, Hostname: its dashboards and joins work on them; promtool's lint
 * says modelName is camelCase, as it says of dcgm-exporter's); per lease gpushare_lease_*
 * labelled with lease id, user and job name (never the command); node counters
 * gpushare_*_total. */
#ifndef GS_DAEMON_METRICS_H
#define GS_DAEMON_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "core/core.h"
#include "gpu/gpu.h"

typedef struct gs__metrics gs__metrics_t;

/* Starts the HTTP server on cfg.metrics_listen. Returns 0 and *out (NULL with port 0: metrics
 * off), or -errno with one line in err (the port is taken, ...). */
int gs__metrics_start(gs__daemon_t *d, gs__metrics_t **out, char *err, size_t errlen);

/* Renders d's current state for the next scrapes. No-op when m is NULL (metrics off). */
void gs__metrics_publish(gs__metrics_t *m, gs__daemon_t *d);

/* Writes the metrics text of d into f (what gs__metrics_publish serves). */
void gs__metrics_render(gs__daemon_t *d, FILE *f);

/* Stops the HTTP server and frees the snapshot (NULL is fine). */
void gs__metrics_stop(gs__metrics_t *m);

#endif
