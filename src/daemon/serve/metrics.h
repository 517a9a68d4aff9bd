/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus metrics on http://ADDR:PORT/metrics (http.h: its own thread and event loop).
 *
 * The event loop renders the text from its state once a second (gs__metrics_publish) and swaps
 * it in; the HTTP thread only sends the latest text, so a scrape never blocks or races the
 * loop, and other clients' idle connections never keep a scrape out. Per-lease series (which
 * name users) are rendered only with metrics_users = all. Series (docs/api.md, "Metrics"): per GPU
 * with dcgm-exporter's names where one exists (DCGM_FI_DEV_FB_USED/FREE in MiB,
 * DCGM_FI_DEV_GPU_UTIL) and gpushare_gpu_*; per lease gpushare_lease_* labelled with lease id and
 * user (never the command); node counters gpushare_*_total. Labels are snake_case (gpu, uuid,
 * model_name, hostname) rather than dcgm-exporter's UUID / modelName / Hostname, which promtool's
 * lint rejects. */
#ifndef GS_DAEMON_METRICS_H
#define GS_DAEMON_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "core/daemon.h"

/* Starts the HTTP server on cfg.metrics_listen (port 0: metrics off, d->metrics stays NULL).
 * Returns 0, or -errno with one line in err (the port is taken, ...). */
int gs__metrics_start(gs__daemon_t *d, char *err, size_t errlen);

/* Renders the current state for the next scrapes. No-op when metrics are off. */
void gs__metrics_publish(gs__daemon_t *d);

/* Writes the metrics text of d into f (what gs__metrics_publish serves). */
void gs__metrics_render(gs__daemon_t *d, FILE *f);

/* Helpers for other modules' families (watchdog.c): a family's HELP and TYPE lines, and the
 * label sets of a GPU and of a lease's part (part >= lease->alloc.n: the lease alone). */
void gs__metrics_family(FILE *f, const char *name, const char *type, const char *help);
void gs__metrics_gpu_labels(FILE *f, const gs__daemon_t *d, const gs__gpu_t *gpu);
void gs__metrics_lease_labels(FILE *f, const gs__daemon_t *d, const gs__lease_t *lease,
                              unsigned part);

/* Stops the HTTP server and frees the snapshot (NULL d->metrics is fine). */
void gs__metrics_stop(gs__daemon_t *d);

#endif
