/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus metrics: rendering from the daemon's state, served by the endpoint (http.h). */
#include "metrics.h"
#include "http.h"

#include "gpushare/version.h"
#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs__metrics {
    gs__http_t *http;
};

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Writes a label value with Prometheus's escapes (backslash, quote, newline). */
static void put_label(FILE *f, const char *name, const char *value, int first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", name);
    for (const char *p = value; *p != '\0'; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A GPU's labels, dcgm-exporter's (names, order and values), so that its dashboards and joins
 * on (gpu, UUID) or (Hostname, gpu) work on gpushare's series too. */
static void gpu_labels(FILE *f, const gs__daemon_t *d, unsigned g)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    const gs__gpu_info_t *info = gs__inventory_gpu(d->inv, g);
    char index[16], device[32];
    snprintf(index, sizeof(index), "%u", gpu->index);
    snprintf(device, sizeof(device), "nvidia%d",
             info != NULL && info->minor >= 0 ? info->minor : (int)gpu->index);
    fputc('{', f);
    put_label(f, "gpu", index, 1);
    put_label(f, "UUID", gpu->uuid, 0);
    put_label(f, "pci_bus_id", info != NULL ? info->pci_bus_id : "", 0);
    put_label(f, "device", device, 0);
    put_label(f, "modelName", gpu->name, 0);
    put_label(f, "Hostname", d->hostname, 0);
    fputc('}', f);
}

/* One series per GPU: value(d, g) for each. */
static void gpu_family(FILE *f, const gs__daemon_t *d, const char *name, const char *type,
                       const char *help, uint64_t (*value)(const gs__daemon_t *, unsigned))
{
    family(f, name, type, help);
    for (unsigned g = 0; g < d->n_gpus; g++) {
        fputs(name, f);
        gpu_labels(f, d, g);
        fprintf(f, " %llu\n", (unsigned long long)value(d, g));
    }
}

#define MIB (UINT64_C(1) << 20)
static uint64_t fb_used(const gs__daemon_t *d, unsigned g)
{
    return d->usage[g].used / MIB;
}
static uint64_t fb_free(const gs__daemon_t *d, unsigned g)
{
    uint64_t total = d->usage[g].total != 0 ? d->usage[g].total : d->gpus[g].total;
    return total > d->usage[g].used ? (total - d->usage[g].used) / MIB : 0;
}
static uint64_t util(const gs__daemon_t *d, unsigned g)
{
    return d->usage[g].utilization;
}
static uint64_t mem_total(const gs__daemon_t *d, unsigned g)
{
    return d->gpus[g].total;
}
static uint64_t mem_reserved(const gs__daemon_t *d, unsigned g)
{
    return d->gpus[g].reserve;
}
static uint64_t mem_leased(const gs__daemon_t *d, unsigned g)
{
    return d->gpus[g].mem_leased;
}
static uint64_t compute_leased(const gs__daemon_t *d, unsigned g)
{
    return (d->gpus[g].compute_leased + 5) / 10;
}
static uint64_t logical_total(const gs__daemon_t *d, unsigned g)
{
    return d->gpus[g].overprovision >= 1 ? d->gpus[g].overprovision : 1;
}
static uint64_t logical_free(const gs__daemon_t *d, unsigned g)
{
    return gs__gpu_free_slots(&d->gpus[g]);
}
static uint64_t gpu_leases(const gs__daemon_t *d, unsigned g)
{
    return d->gpus[g].n_leases;
}

static void render_gpus(FILE *f, const gs__daemon_t *d)
{
    gpu_family(f, d, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", fb_used);
    gpu_family(f, d, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", fb_free);
    gpu_family(f, d, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", util);
    gpu_family(f, d, "gpushare_gpu_memory_total_bytes", "gauge", "Device memory of the GPU.",
               mem_total);
    gpu_family(f, d, "gpushare_gpu_memory_reserved_bytes", "gauge",
               "Device memory kept for the driver, never leased (config reserve).", mem_reserved);
    gpu_family(f, d, "gpushare_gpu_memory_leased_bytes", "gauge",
               "Device memory promised to leases (sum of their limits).", mem_leased);
    gpu_family(f, d, "gpushare_gpu_compute_leased_percent", "gauge",
               "Compute guaranteed to leases, in percent of the GPU.", compute_leased);
    gpu_family(f, d, "gpushare_gpu_logical_capacity", "gauge",
               "Logical GPUs the GPU offers (its overprovision factor).", logical_total);
    gpu_family(f, d, "gpushare_gpu_logical_free", "gauge",
               "Logical GPUs a --gpus lease could still get on the GPU.", logical_free);
    gpu_family(f, d, "gpushare_gpu_leases", "gauge", "Leases on the GPU.", gpu_leases);
}

static void lease_labels(FILE *f, const gs__daemon_t *d, const gs__lease_t *lease, unsigned part)
{
    char id[32];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)lease->rec.id);
    fputc('{', f);
    put_label(f, "lease", id, 1);
    put_label(f, "user", lease->rec.user, 0);
    put_label(f, "job_name", lease->rec.request.name, 0);
    if (part < lease->alloc.n) {
        const gs__gpu_t *gpu = &d->gpus[lease->alloc.part[part].gpu];
        char index[16];
        snprintf(index, sizeof(index), "%u", gpu->index);
        put_label(f, "gpu", index, 0);
        put_label(f, "UUID", gpu->uuid, 0);
    }
    fputc('}', f);
}

/* Per-lease uses, read once per rendering. */
typedef struct lease_row {
    const gs__lease_t *lease;
    gs__lease_use_t use;
} lease_row_t;

static void render_lease_parts(FILE *f, const gs__daemon_t *d, const lease_row_t *rows, unsigned n,
                               int used)
{
    for (unsigned r = 0; r < n; r++) {
        for (unsigned i = 0; i < rows[r].lease->alloc.n; i++) {
            fputs(used ? "gpushare_lease_memory_used_bytes" : "gpushare_lease_memory_limit_bytes",
                  f);
            lease_labels(f, d, rows[r].lease, i);
            fprintf(f, " %llu\n",
                    (unsigned long long)(used ? rows[r].use.used[i]
                                              : rows[r].lease->alloc.part[i].memory));
        }
    }
}

static void render_leases(FILE *f, const gs__daemon_t *d, const lease_row_t *rows, unsigned n)
{
    family(f, "gpushare_lease_info", "gauge",
           "A live lease (value 1), with its user, uid, state and kind.");
    for (unsigned r = 0; r < n; r++) {
        const gs__lease_t *lease = rows[r].lease;
        char id[32], uid[16];
        snprintf(id, sizeof(id), "%llu", (unsigned long long)lease->rec.id);
        snprintf(uid, sizeof(uid), "%u", (unsigned)lease->rec.uid);
        static const char *const kinds[] = {"none", "gpus", "fraction", "memory", "mig"};
        unsigned kind = (unsigned)lease->rec.request.kind;
        fputs("gpushare_lease_info{", f);
        put_label(f, "lease", id, 1);
        put_label(f, "user", lease->rec.user, 0);
        put_label(f, "uid", uid, 0);
        put_label(f, "job_name", lease->rec.request.name, 0);
        put_label(f, "state",
                  lease->rec.state == GS__LEASE_ENDING ? "ending"
                  : lease->rec.suspended               ? "suspended"
                                                       : "active",
                  0);
        put_label(f, "kind", kind < 5 ? kinds[kind] : "?", 0);
        fputs("} 1\n", f);
    }
    family(f, "gpushare_lease_memory_used_bytes", "gauge",
           "Device memory the lease's processes hold on each of its GPUs.");
    render_lease_parts(f, d, rows, n, 1);
    family(f, "gpushare_lease_memory_limit_bytes", "gauge",
           "The lease's memory limit on each of its GPUs.");
    render_lease_parts(f, d, rows, n, 0);
    family(f, "gpushare_lease_compute_share", "gauge",
           "The lease's guaranteed compute share in percent (0 = not limited).");
    for (unsigned r = 0; r < n; r++) {
        fputs("gpushare_lease_compute_share", f);
        lease_labels(f, d, rows[r].lease, UINT32_MAX);
        fprintf(f, " %u\n", rows[r].lease->rec.compute_share);
    }
    family(f, "gpushare_lease_compute_max", "gauge",
           "The lease's compute cap in percent (0 = none).");
    for (unsigned r = 0; r < n; r++) {
        fputs("gpushare_lease_compute_max", f);
        lease_labels(f, d, rows[r].lease, UINT32_MAX);
        fprintf(f, " %u\n", rows[r].lease->rec.request.compute_max);
    }
    family(f, "gpushare_lease_compute_seconds_total", "counter",
           "Device time the lease used: the slots the GPU's compute scheduler granted it "
           "(drains included); on an mps GPU its processes' busy time (NVML) at its share.");
    for (unsigned r = 0; r < n; r++) {
        for (unsigned i = 0; i < rows[r].lease->alloc.n; i++) {
            fputs("gpushare_lease_compute_seconds_total", f);
            lease_labels(f, d, rows[r].lease, i);
            fprintf(f, " %.3f\n", (double)gs__compute_sched_lease_used(d, rows[r].lease, i) / 1e9);
        }
    }
    family(f, "gpushare_oom_events_total", "counter",
           "Allocations refused because they would exceed the lease's memory limit.");
    for (unsigned r = 0; r < n; r++) {
        fputs("gpushare_oom_events_total", f);
        lease_labels(f, d, rows[r].lease, UINT32_MAX);
        fprintf(f, " %llu\n", (unsigned long long)rows[r].use.oom_events);
    }
}

/* The watchdog's figures: processes of no lease per GPU (count and memory), and per lease part
 * its processes' real memory and how far it is over its limit (per_lease: they name users). */
static void render_unmanaged(FILE *f, const gs__daemon_t *d, int bytes)
{
    const char *name = bytes ? "gpushare_unmanaged_memory_bytes" : "gpushare_unmanaged_processes";
    family(f, name, "gauge",
           bytes ? "Device memory held by processes of no lease on the GPU (NVML)."
                 : "Processes of no lease holding memory on the GPU (NVML).");
    for (unsigned g = 0; g < d->n_gpus; g++) {
        unsigned n;
        uint64_t held;
        gs__watchdog_unmanaged(d, g, &n, &held);
        fputs(name, f);
        gpu_labels(f, d, g);
        fprintf(f, " %llu\n", (unsigned long long)(bytes ? held : n));
    }
}

static void render_real(FILE *f, const gs__daemon_t *d, int over)
{
    const char *name =
        over ? "gpushare_lease_over_limit_bytes" : "gpushare_lease_memory_real_bytes";
    family(f, name, "gauge",
           over ? "How far the lease's processes are over its limit on the GPU (NVML), when "
                  "beyond the watchdog's tolerance; else 0."
                : "Device memory the lease's processes hold on the GPU as NVML reports it "
                  "(contexts included).");
    for (const gs__lease_t *l = d->leases; l != NULL; l = l->next) {
        for (unsigned k = 0; k < l->alloc.n; k++) {
            uint64_t real = 0, beyond = 0;
            gs__watchdog_lease_real(d, l, k, &real, &beyond);
            fputs(name, f);
            lease_labels(f, d, l, k);
            fprintf(f, " %llu\n", (unsigned long long)(over ? beyond : real));
        }
    }
}

/* The label of each gs__kill_reason_t, in its order. */
static const char *const kill_reasons[GS__KILL_REASONS] = {
    [GS__KILL_OVER_LIMIT] = "over_limit",
    [GS__KILL_OUTSIDE_LEASE] = "outside_lease",
};

static void render_watchdog(FILE *f, const gs__daemon_t *d, int per_lease)
{
    render_unmanaged(f, d, 0);
    render_unmanaged(f, d, 1);
    if (per_lease) {
        render_real(f, d, 0);
        render_real(f, d, 1);
    }
    family(f, "gpushare_watchdog_kills_total", "counter",
           "Processes the watchdog killed (enforce = kill), by reason.");
    for (unsigned r = 0; r < GS__KILL_REASONS; r++)
        fprintf(f, "gpushare_watchdog_kills_total{reason=\"%s\"} %llu\n", kill_reasons[r],
                (unsigned long long)gs__watchdog_kills(d, (gs__kill_reason_t)r));
    family(f, "gpushare_watchdog_scans_total", "counter",
           "Scans the watchdog completed (every GPU's processes listed and judged).");
    fprintf(f, "gpushare_watchdog_scans_total %llu\n", (unsigned long long)gs__watchdog_scans(d));
}

static void counter(FILE *f, const char *name, const char *help, uint64_t value)
{
    family(f, name, "counter", help);
    fprintf(f, "%s %llu\n", name, (unsigned long long)value);
}

static void render_node(FILE *f, const gs__daemon_t *d)
{
    const gs__counters_t *c = &d->counters;
    family(f, "gpushare_info", "gauge", "The daemon (value 1) and its GPUs' driver.");
    fputs("gpushare_info{", f);
    put_label(f, "version", GS_VERSION, 1);
    put_label(f, "driver", gs__inventory_driver(d->inv), 0);
    put_label(f, "simulated", gs__inventory_simulated(d->inv) ? "true" : "false", 0);
    put_label(f, "placement", gs__policy_name(d->policy), 0);
    put_label(f, "Hostname", d->hostname, 0);
    fputs("} 1\n", f);
    family(f, "gpushare_leases", "gauge", "Live leases on the node.");
    fprintf(f, "gpushare_leases %u\n", d->n_leases);
    family(f, "gpushare_queue_length", "gauge", "Lease requests waiting for room.");
    fprintf(f, "gpushare_queue_length %u\n", d->queue.length);
    counter(f, "gpushare_leases_granted_total", "Leases granted.", c->granted);
    counter(f, "gpushare_leases_ended_total", "Leases ended.", c->ended);
    counter(f, "gpushare_leases_queued_total", "Lease requests that had to wait.", c->queued);
    counter(f, "gpushare_leases_reaped_total", "Leases ended because their holder was gone.",
            c->reaped);
    counter(f, "gpushare_leases_revoked_total", "Leases released by another caller.", c->revoked);
    counter(f, "gpushare_leases_expired_total", "Leases that reached their time limit.",
            c->expired);
    family(f, "gpushare_requests_rejected_total", "counter", "Lease requests refused, by reason.");
    fprintf(f, "gpushare_requests_rejected_total{reason=\"no_fit\"} %llu\n",
            (unsigned long long)c->rejected_no_fit);
    fprintf(f, "gpushare_requests_rejected_total{reason=\"never_fits\"} %llu\n",
            (unsigned long long)c->rejected_never);
    fprintf(f, "gpushare_requests_rejected_total{reason=\"timeout\"} %llu\n",
            (unsigned long long)c->timeouts);
    fprintf(f, "gpushare_requests_rejected_total{reason=\"bad_request\"} %llu\n",
            (unsigned long long)c->bad_requests);
}

void gs__metrics_render(gs__daemon_t *d, FILE *f)
{
    render_gpus(f, d);
    gs__modes_metrics(d, f);
    /* Per-lease series name users: only where the configuration says every local user may see
     * them (the endpoint has no authentication). */
    if (d->cfg.metrics_users == GS__METRICS_USERS_ALL) {
        lease_row_t *rows = calloc(d->n_leases + 1, sizeof(*rows));
        unsigned n = 0;
        for (const gs__lease_t *lease = d->leases; rows != NULL && lease != NULL;
             lease = lease->next, n++) {
            rows[n].lease = lease;
            gs__lease_use(lease, &rows[n].use);
        }
        render_leases(f, d, rows, n);
        free(rows);
    }
    render_watchdog(f, d, d->cfg.metrics_users == GS__METRICS_USERS_ALL);
    render_node(f, d);
}

void gs__metrics_publish(gs__metrics_t *m, gs__daemon_t *d)
{
    if (m == NULL)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    gs__metrics_render(d, f);
    if (fclose(f) != 0) {
        free(text);
        return;
    }
    gs__http_publish(m->http, text, len);
}

int gs__metrics_start(gs__daemon_t *d, gs__metrics_t **out, char *err, size_t errlen)
{
    uint32_t addr;
    *out = NULL;
    uint16_t port;
    if (gs__config_parse_listen(d->cfg.metrics_listen, &addr, &port) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "metrics address \"%s\" is not ADDRESS:PORT",
                       d->cfg.metrics_listen);
    if (port == 0)
        return 0;
    struct gs__metrics *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return GS_ENOMEM;
    int result = gs__http_start(addr, port, "/metrics", CONTENT_TYPE, &m->http);
    if (result != 0) {
        free(m);
        return gs_fail(err, errlen, result, "cannot serve metrics on %s: %s", d->cfg.metrics_listen,
                       result == GS_EBUSY ? "the port is taken" : gs_strerror(result));
    }
    *out = m; /* published once the daemon has started (gs__metrics_publish) */
    gs_info("metrics on http://%s/metrics (per-lease series: %s)", d->cfg.metrics_listen,
            d->cfg.metrics_users == GS__METRICS_USERS_ALL ? "all, with users" : "none");
    return 0;
}

void gs__metrics_stop(gs__metrics_t *m)
{
    if (m == NULL)
        return;
    gs__http_stop(m->http);
    free(m);
}
