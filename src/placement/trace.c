/* SPDX-License-Identifier: Apache-2.0 */
/* Workload and node files: the Alibaba openb CSVs, job lists and node types for `gpushare plan`. */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A workload expands to at most this many tasks (count column included). */
#define PODS_MAX 10000000u

/* Where a row is, for messages. */
typedef struct row_ctx {
    const gs__csv_t *csv;
    char *err;
    size_t errlen;
} row_ctx_t;

static int row_fail(const row_ctx_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int row_fail(const row_ctx_t *r, const char *fmt, ...)
{
    if (r->err != NULL && r->errlen > 0) {
        int n = snprintf(r->err, r->errlen, "%s:%u: ", r->csv->source, r->csv->line);
        if (n > 0 && (size_t)n < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return GS_EFORMAT;
}

/* Parses a whole number (digits, optionally followed by ".0..." as spreadsheets write them) no
 * larger than max. */
static int parse_uint(const row_ctx_t *r, const char *column, const char *text, uint64_t max,
                      uint64_t *value)
{
    const char *p = text;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return row_fail(r, "%s \"%s\" is not a whole number", column, text);
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (max - d) / 10)
            return row_fail(r, "%s \"%s\" is out of range (at most %llu)", column, text,
                            (unsigned long long)max);
        v = v * 10 + d;
    }
    if (*p == '.') {
        for (p++; *p == '0'; p++)
            ;
    }
    if (*p != '\0')
        return row_fail(r, "%s \"%s\" is not a whole number", column, text);
    *value = v;
    return 0;
}

static int parse_u32(const row_ctx_t *r, const char *column, const char *text, uint32_t max,
                     uint32_t *value)
{
    uint64_t v;
    int result = parse_uint(r, column, text, max, &v);
    if (result == 0)
        *value = (uint32_t)v;
    return result;
}

/* Copies text into dst (size cap), failing when it does not fit. */
static int copy_text(const row_ctx_t *r, const char *column, const char *text, char *dst,
                     size_t cap)
{
    size_t n = strlen(text);
    if (n >= cap)
        return row_fail(r, "%s is longer than %zu bytes", column, cap - 1);
    memcpy(dst, text, n + 1);
    return 0;
}

static int push_pod(gs_place_pods_t *out, size_t *cap, const gs_place_pod_t *pod)
{
    if (out->count == *cap) {
        size_t n = *cap ? *cap * 2 : 1024;
        gs_place_pod_t *grown = realloc(out->pods, n * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        out->pods = grown;
        *cap = n;
    }
    out->pods[out->count++] = *pod;
    return 0;
}

/* Checks num_gpu/gpu_milli the way the trace defines them. */
static int check_gpu(const row_ctx_t *r, const gs_place_pod_t *pod)
{
    if (pod->num_gpu == 0 && pod->gpu_milli != 0)
        return row_fail(r, "gpu_milli %u on a pod with num_gpu 0", pod->gpu_milli);
    if (pod->num_gpu > 0 && (pod->gpu_milli == 0 || pod->gpu_milli > GS_PLACE_MILLI))
        return row_fail(r, "gpu_milli %u is not in 1..1000", pod->gpu_milli);
    if (pod->num_gpu > 1 && pod->gpu_milli != GS_PLACE_MILLI)
        return row_fail(r, "gpu_milli %u below 1000 with num_gpu %u (a share is of one GPU)",
                        pod->gpu_milli, pod->num_gpu);
    return 0;
}

/* Column positions of a workload file; -1 when absent. */
typedef struct pod_cols {
    int name, cpu, mem, num_gpu, gpu_milli, spec, gpu, count;
    unsigned nfields;
} pod_cols_t;

static int openb_row(const row_ctx_t *r, const pod_cols_t *c, gs_place_pod_t *pod)
{
    char *const *f = r->csv->field;
    int result;
    if ((result = copy_text(r, "name", f[c->name], pod->name, sizeof(pod->name))) != 0 ||
        (result = parse_u32(r, "cpu_milli", f[c->cpu], UINT32_MAX - 1, &pod->cpu_milli)) != 0 ||
        (result = parse_uint(r, "memory_mib", f[c->mem], UINT64_MAX / 2, &pod->mem_mib)) != 0 ||
        (result = parse_u32(r, "num_gpu", f[c->num_gpu], GS_PLACE_MAX_GPUS, &pod->num_gpu)) != 0 ||
        (result = parse_u32(r, "gpu_milli", f[c->gpu_milli], 1000000, &pod->gpu_milli)) != 0)
        return result;
    if (c->spec >= 0 &&
        (result = copy_text(r, "gpu_spec", f[c->spec], pod->gpu_spec, sizeof(pod->gpu_spec))) != 0)
        return result;
    return check_gpu(r, pod);
}

/* A job list's gpu value: "0.25" or "25%" (a share of one GPU) or "2" (whole GPUs). */
static int job_gpu(const row_ctx_t *r, const char *text, gs_place_pod_t *pod)
{
    char why[GS_QTY_ERR_MAX];
    uint32_t v;
    if (strchr(text, '%') != NULL) {
        if (gs_qty_parse_percent(text, GS_QTY_ALLOW_ZERO, &v, why, sizeof(why)) != 0)
            return row_fail(r, "gpu: %s", why);
        pod->num_gpu = v > 0;
        pod->gpu_milli = v * 10;
        return 0;
    }
    if (strchr(text, '.') != NULL) {
        if (gs_qty_parse_fraction(text, &v, why, sizeof(why)) != 0)
            return row_fail(r, "gpu: %s (a share of one GPU, or a whole number of GPUs)", why);
        pod->num_gpu = 1;
        pod->gpu_milli = v;
        return 0;
    }
    int result = parse_u32(r, "gpu", text, GS_PLACE_MAX_GPUS, &pod->num_gpu);
    pod->gpu_milli = pod->num_gpu > 0 ? GS_PLACE_MILLI : 0;
    return result;
}

static int job_row(const row_ctx_t *r, const pod_cols_t *c, gs_place_pod_t *pod, uint32_t *count)
{
    char *const *f = r->csv->field;
    int result = 0;
    if (c->name >= 0)
        result = copy_text(r, "name", f[c->name], pod->name, sizeof(pod->name));
    else
        snprintf(pod->name, sizeof(pod->name), "job-%u", r->csv->line);
    if (result == 0 && c->cpu >= 0)
        result = parse_u32(r, "cpu_milli", f[c->cpu], UINT32_MAX - 1, &pod->cpu_milli);
    if (result == 0 && c->mem >= 0)
        result = parse_uint(r, "memory_mib", f[c->mem], UINT64_MAX / 2, &pod->mem_mib);
    if (result == 0 && c->spec >= 0)
        result = copy_text(r, "gpu_spec", f[c->spec], pod->gpu_spec, sizeof(pod->gpu_spec));
    if (result == 0 && c->count >= 0) {
        result = parse_u32(r, "count", f[c->count], PODS_MAX, count);
        if (result == 0 && *count == 0)
            result = row_fail(r, "count must be at least 1");
    }
    if (result == 0)
        result = job_gpu(r, f[c->gpu], pod);
    return result;
}

/* Reads the header row and decides between the openb format and a job list. */
static int pod_header(gs__csv_t *csv, pod_cols_t *c, char *err, size_t errlen)
{
    int result = gs__csv_next(csv, err, errlen);
    if (result < 0)
        return result;
    if (result == 0)
        return gs_fail(err, errlen, GS_EFORMAT, "%s:1: empty file (expected a header)",
                       csv->source);
    c->nfields = csv->nfields;
    c->name = gs__csv_column(csv, "name");
    c->cpu = gs__csv_column(csv, "cpu_milli");
    c->mem = gs__csv_column(csv, "memory_mib");
    c->num_gpu = gs__csv_column(csv, "num_gpu");
    c->gpu_milli = gs__csv_column(csv, "gpu_milli");
    c->spec = gs__csv_column(csv, "gpu_spec");
    c->gpu = gs__csv_column(csv, "gpu");
    c->count = gs__csv_column(csv, "count");
    const row_ctx_t r = {csv, err, errlen};
    if (c->num_gpu >= 0) {
        const char *missing = c->name < 0        ? "name"
                              : c->cpu < 0       ? "cpu_milli"
                              : c->mem < 0       ? "memory_mib"
                              : c->gpu_milli < 0 ? "gpu_milli"
                                                 : NULL;
        if (missing != NULL)
            return row_fail(&r, "header has no %s column", missing);
        c->gpu = -1;
        c->count = -1;
        return 0;
    }
    if (c->gpu < 0)
        return row_fail(&r, "header has neither num_gpu (pod list) nor gpu (job list) column");
    return 0;
}

int gs_place_pods_parse(const char *text, size_t len, const char *source, gs_place_pods_t *out,
                        char *err, size_t errlen)
{
    gs__csv_t *csv = malloc(sizeof(*csv));
    pod_cols_t c = {0};
    size_t cap = 0;
    int result;
    out->pods = NULL;
    out->count = 0;
    if (csv == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    gs__csv_init(csv, text, len, source);
    if ((result = pod_header(csv, &c, err, errlen)) != 0)
        goto out;
    const row_ctx_t r = {csv, err, errlen};
    while ((result = gs__csv_next(csv, err, errlen)) > 0) {
        if (csv->nfields != c.nfields) {
            result = row_fail(&r, "%u fields where the header has %u", csv->nfields, c.nfields);
            goto out;
        }
        gs_place_pod_t pod;
        uint32_t count = 1;
        memset(&pod, 0, sizeof(pod));
        result = c.num_gpu >= 0 ? openb_row(&r, &c, &pod) : job_row(&r, &c, &pod, &count);
        if (result != 0)
            goto out;
        if (out->count + count > PODS_MAX) {
            result = row_fail(&r, "more than %u tasks", PODS_MAX);
            goto out;
        }
        for (uint32_t i = 0; i < count && result == 0; i++)
            result = push_pod(out, &cap, &pod);
        if (result != 0) {
            result = gs_fail(err, errlen, result, "%s: out of memory", csv->source);
            goto out;
        }
    }
out:
    free(csv);
    if (result < 0)
        gs_place_pods_free(out);
    return result < 0 ? result : 0;
}

int gs_place_pods_read(const char *path, gs_place_pods_t *out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    out->pods = NULL;
    out->count = 0;
    int result = gs__read_file(path, &text, &len, err, errlen);
    if (result == 0)
        result = gs_place_pods_parse(text, len, path, out, err, errlen);
    free(text);
    return result;
}

void gs_place_pods_free(gs_place_pods_t *pods)
{
    if (pods == NULL)
        return;
    free(pods->pods);
    pods->pods = NULL;
    pods->count = 0;
}

/* ---- node lists ---- */

typedef struct node_cols {
    int name, cpu, mem, gpu, model, price;
    unsigned nfields;
} node_cols_t;

static int first_column(const gs__csv_t *csv, const char *a, const char *b)
{
    int i = gs__csv_column(csv, a);
    return i >= 0 ? i : gs__csv_column(csv, b);
}

static int parse_price(const row_ctx_t *r, const char *text, double *price)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (text[0] == '\0' || end == NULL || *end != '\0' || errno != 0 || !isfinite(v) || v < 0 ||
        v > 1e9)
        return row_fail(r, "price \"%s\" is not a price per hour (a number like 0.752)", text);
    *price = v;
    return 0;
}

static int node_row(const row_ctx_t *r, const node_cols_t *c, gs_place_node_row_t *n)
{
    char *const *f = r->csv->field;
    int result;
    memset(n, 0, sizeof(*n));
    n->cpu_milli = UINT32_MAX;
    n->mem_mib = UINT64_MAX;
    n->price_per_hour = -1;
    if ((result = copy_text(r, "name", f[c->name], n->name, sizeof(n->name))) != 0 ||
        (result = parse_u32(r, "gpu", f[c->gpu], GS_PLACE_MAX_GPUS, &n->num_gpu)) != 0)
        return result;
    if (c->cpu >= 0 &&
        (result = parse_u32(r, "cpu_milli", f[c->cpu], UINT32_MAX - 1, &n->cpu_milli)) != 0)
        return result;
    if (c->mem >= 0 &&
        (result = parse_uint(r, "memory_mib", f[c->mem], UINT64_MAX / 2, &n->mem_mib)) != 0)
        return result;
    if (c->model >= 0 &&
        (result = copy_text(r, "model", f[c->model], n->model, sizeof(n->model))) != 0)
        return result;
    if (c->price >= 0 && (result = parse_price(r, f[c->price], &n->price_per_hour)) != 0)
        return result;
    if (strchr(n->model, '|') != NULL)
        return row_fail(r, "model \"%s\" contains '|'", n->model);
    if (n->num_gpu > 0 && n->model[0] == '\0')
        strcpy(n->model, GS_PLACE_DEFAULT_MODEL);
    return 0;
}

static int node_header(gs__csv_t *csv, node_cols_t *c, char *err, size_t errlen)
{
    int result = gs__csv_next(csv, err, errlen);
    if (result < 0)
        return result;
    if (result == 0)
        return gs_fail(err, errlen, GS_EFORMAT, "%s:1: empty file (expected a header)",
                       csv->source);
    const row_ctx_t r = {csv, err, errlen};
    c->nfields = csv->nfields;
    c->name = first_column(csv, "sn", "name");
    c->gpu = first_column(csv, "gpu", "gpus");
    c->cpu = gs__csv_column(csv, "cpu_milli");
    c->mem = gs__csv_column(csv, "memory_mib");
    c->model = gs__csv_column(csv, "model");
    c->price = first_column(csv, "price_per_hour", "price");
    if (c->name < 0)
        return row_fail(&r, "header has no sn (or name) column");
    if (c->gpu < 0)
        return row_fail(&r, "header has no gpu (or gpus) column");
    return 0;
}

int gs_place_nodes_parse(const char *text, size_t len, const char *source, gs_place_nodes_t *out,
                         char *err, size_t errlen)
{
    gs__csv_t *csv = malloc(sizeof(*csv));
    node_cols_t c = {0};
    size_t cap = 0;
    int result;
    out->nodes = NULL;
    out->count = 0;
    if (csv == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    gs__csv_init(csv, text, len, source);
    if ((result = node_header(csv, &c, err, errlen)) != 0)
        goto out;
    const row_ctx_t r = {csv, err, errlen};
    while ((result = gs__csv_next(csv, err, errlen)) > 0) {
        if (csv->nfields != c.nfields) {
            result = row_fail(&r, "%u fields where the header has %u", csv->nfields, c.nfields);
            goto out;
        }
        if (out->count == cap) {
            size_t n = cap ? cap * 2 : 256;
            gs_place_node_row_t *grown = realloc(out->nodes, n * sizeof(*grown));
            if (grown == NULL) {
                result = gs_fail(err, errlen, GS_ENOMEM, "%s: out of memory", source);
                goto out;
            }
            out->nodes = grown;
            cap = n;
        }
        if ((result = node_row(&r, &c, &out->nodes[out->count])) != 0)
            goto out;
        out->count++;
    }
out:
    free(csv);
    if (result < 0)
        gs_place_nodes_free(out);
    return result < 0 ? result : 0;
}

int gs_place_nodes_read(const char *path, gs_place_nodes_t *out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    out->nodes = NULL;
    out->count = 0;
    int result = gs__read_file(path, &text, &len, err, errlen);
    if (result == 0)
        result = gs_place_nodes_parse(text, len, path, out, err, errlen);
    free(text);
    return result;
}

void gs_place_nodes_free(gs_place_nodes_t *nodes)
{
    if (nodes == NULL)
        return;
    free(nodes->nodes);
    nodes->nodes = NULL;
    nodes->count = 0;
}

/* ---- from rows to the model ---- */

int gs_place_cluster_from_nodes(const gs_place_nodes_t *nodes, gs_place_cluster_t **out, char *err,
                                size_t errlen)
{
    gs_place_cluster_t *cluster = NULL;
    int result = gs_place_cluster_new(&cluster);
    if (result != 0)
        return gs_fail(err, errlen, result, "out of memory");
    for (size_t i = 0; i < nodes->count; i++) {
        const gs_place_node_row_t *row = &nodes->nodes[i];
        gs_place_node_spec_t spec = {.name = row->name,
                                     .cpu_milli = row->cpu_milli,
                                     .mem_mib = row->mem_mib,
                                     .num_gpu = row->num_gpu,
                                     .model = row->model};
        result = gs_place_cluster_add_node(cluster, &spec, NULL);
        if (result != 0) {
            gs_place_cluster_free(cluster);
            return gs_fail(err, errlen, result, "node %s: %s", row->name,
                           result == GS_ELIMIT ? "more than 63 GPU models" : gs_strerror(result));
        }
    }
    *out = cluster;
    return 0;
}

int gs_place_pod_request(const gs_place_cluster_t *cluster, const gs_place_pod_t *pod,
                         gs_place_request_t *req)
{
    memset(req, 0, sizeof(*req));
    req->cpu_milli = pod->cpu_milli;
    req->mem_mib = pod->mem_mib;
    req->num_gpu = pod->num_gpu;
    req->gpu_milli = pod->num_gpu > 0 ? pod->gpu_milli : 0;
    if (pod->num_gpu > 0 && gs_place_model_mask(cluster, pod->gpu_spec, &req->model_mask) != 0)
        return GS_EINVAL;
    return gs_place_request_check(req, NULL, 0);
}

int gs_place_workload_from_pods(const gs_place_cluster_t *cluster, const gs_place_pods_t *pods,
                                double coverage, gs_place_workload_t **out)
{
    gs_place_workload_t *w = NULL;
    int result = gs_place_workload_new(&w);
    for (size_t i = 0; result == 0 && i < pods->count; i++) {
        gs_place_request_t req;
        result = gs_place_pod_request(cluster, &pods->pods[i], &req);
        if (result == 0)
            result = gs_place_workload_add(w, &req, 1.0);
    }
    if (result == 0)
        result = gs_place_workload_finish(w, coverage);
    if (result != 0) {
        gs_place_workload_free(w);
        return result;
    }
    *out = w;
    return 0;
}
