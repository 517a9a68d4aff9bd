/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceClaims of gpushare's device model as resource.k8s.io/v1 JSON: requests with their
 * capacities and productName selectors, and allocation results (dra.h). */
#include "dra.h"

#include "gpushare/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies a required, non-empty string into a fixed buffer; -1 when absent or too long. */
static int take_str(char *dst, size_t size, const char *src)
{
    return gs__k8s_copy(dst, size, src, 1);
}

/* ---- productName selectors: the CEL the model understands ---- */

/* device.attributes["gpu.gpushare.io"].productName == "T4"
 * device.attributes["gpu.gpushare.io"].productName in ["V100M16", "V100M32"] */
#define CEL_PREFIX "device.attributes[\"" GS_DRA_DRIVER "\"].productName"

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* Reads a quoted CEL string literal without escapes into buf. Returns the text after it, or
 * NULL. */
static const char *cel_string(const char *p, char *buf, size_t size)
{
    char quote = *p;
    if (quote != '"' && quote != '\'')
        return NULL;
    const char *end = strchr(p + 1, quote);
    if (end == NULL || (size_t)(end - p - 1) >= size ||
        memchr(p + 1, '\\', (size_t)(end - p - 1)) || memchr(p + 1, '|', (size_t)(end - p - 1)) ||
        end == p + 1)
        return NULL;
    memcpy(buf, p + 1, (size_t)(end - p - 1));
    buf[end - p - 1] = '\0';
    return end + 1;
}

/* Appends a model to a "A|B" list. */
static int add_model(char *list, size_t size, const char *model)
{
    size_t n = strlen(list);
    int w = snprintf(list + n, size - n, "%s%s", n ? "|" : "", model);
    return w < 0 || (size_t)w >= size - n ? -1 : 0;
}

/* Parses one selector expression into a "A|B" list of models. Returns 0 or -1 (not a form the
 * model understands). */
static int cel_models(const char *expr, char *list, size_t size)
{
    char model[GS_DRA_SHORT];
    const char *p = skip_space(expr);
    list[0] = '\0';
    if (strncmp(p, CEL_PREFIX, strlen(CEL_PREFIX)) != 0)
        return -1;
    p = skip_space(p + strlen(CEL_PREFIX));
    if (strncmp(p, "==", 2) == 0) {
        p = cel_string(skip_space(p + 2), model, sizeof(model));
        return p != NULL && *skip_space(p) == '\0' ? add_model(list, size, model) : -1;
    }
    if (strncmp(p, "in", 2) != 0 || *(p = skip_space(p + 2)) != '[')
        return -1;
    for (p = skip_space(p + 1);;) {
        if ((p = cel_string(p, model, sizeof(model))) == NULL || add_model(list, size, model) != 0)
            return -1;
        p = skip_space(p);
        if (*p == ']')
            return *skip_space(p + 1) == '\0' ? 0 : -1;
        if (*p != ',')
            return -1;
        p = skip_space(p + 1);
    }
}

/* Whether the expression is device.attributes["gpu.gpushare.io"].mode == "shared", the selector
 * of deploy/kubernetes/claim-templates.yaml's shared templates: the model takes it as no
 * constraint. The model's GPUs are a node's devices other than MIG ones and it does not tell
 * shared from exclusive or MPS ones; kube-scheduler sends the extender only the nodes its own
 * filters passed, where the claim's devices were found. */
static int cel_mode_shared(const char *expr)
{
    static const char prefix[] = "device.attributes[\"" GS_DRA_DRIVER "\"].mode";
    char mode[GS_DRA_SHORT];
    const char *p = skip_space(expr);
    if (strncmp(p, prefix, strlen(prefix)) != 0)
        return 0;
    p = skip_space(p + strlen(prefix));
    if (strncmp(p, "==", 2) != 0 || (p = cel_string(skip_space(p + 2), mode, sizeof(mode))) == NULL)
        return 0;
    return *skip_space(p) == '\0' && strcmp(mode, "shared") == 0;
}

/* Intersects the models of `a` with those of `b` into a ("-" names no model: nothing left). */
static void intersect(char *a, size_t size, const char *b)
{
    char out[GS_PLACE_SPEC_MAX] = "", copy[GS_PLACE_SPEC_MAX], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", a);
    for (char *m = strtok_r(copy, "|", &save); m != NULL; m = strtok_r(NULL, "|", &save)) {
        char bl[GS_PLACE_SPEC_MAX + 2];
        char needle[GS_DRA_SHORT + 2];
        snprintf(bl, sizeof(bl), "|%s|", b);
        snprintf(needle, sizeof(needle), "|%s|", m);
        if (strstr(bl, needle) != NULL)
            add_model(out, sizeof(out), m);
    }
    snprintf(a, size, "%s", out[0] ? out : "-");
}

static void unsupported(gs_dra_request_t *r, const char *why)
{
    if (!r->unsupported)
        snprintf(r->why, sizeof(r->why), "%s", why);
    r->unsupported = 1;
}

static void read_selectors(const json_t *exact, gs_dra_request_t *r)
{
    size_t i;
    const json_t *sel;
    json_array_foreach(json_object_get(exact, "selectors"), i, sel)
    {
        char list[GS_PLACE_SPEC_MAX];
        const char *expr = gs_k8s_str(sel, "cel", "expression", NULL);
        if (expr != NULL && cel_mode_shared(expr))
            continue;
        if (expr == NULL || cel_models(expr, list, sizeof(list)) != 0) {
            unsupported(r, "a selector other than productName == / in [...] or mode == \"shared\"");
            continue;
        }
        if (r->models[0] == '\0')
            snprintf(r->models, sizeof(r->models), "%s", list);
        else
            intersect(r->models, sizeof(r->models), list);
    }
}

/* ---- requests and results ---- */

static int request_parse(const json_t *req, gs_dra_request_t *r)
{
    memset(r, 0, sizeof(*r));
    const json_t *exact = json_object_get(req, "exactly");
    if (take_str(r->name, sizeof(r->name), gs_k8s_str(req, "name", NULL)) != 0)
        return -1;
    if (exact == NULL) {
        unsupported(r, json_object_get(req, "firstAvailable") ? "firstAvailable" : "no exactly");
        return 0;
    }
    if (take_str(r->device_class, sizeof(r->device_class),
                 gs_k8s_str(exact, "deviceClassName", NULL)) != 0)
        return -1;
    const char *mode = gs_k8s_str(exact, "allocationMode", NULL);
    const json_t *count = json_object_get(exact, "count");
    r->count = count != NULL ? json_integer_value(count) : 1;
    if (mode != NULL && strcmp(mode, "ExactCount") != 0)
        unsupported(r, "allocationMode other than ExactCount");
    if (count != NULL && (!json_is_integer(count) || r->count < 1 || r->count > 64))
        return -1;
    if (json_is_true(json_object_get(exact, "adminAccess")))
        unsupported(r, "adminAccess");
    const char *key;
    const json_t *v;
    json_object_foreach(json_object_get(json_object_get(exact, "capacity"), "requests"), key, v)
    {
        int64_t q;
        if (!json_is_string(v) || gs_k8s_qty_value(json_string_value(v), &q) != 0 || q < 0)
            return -1;
        if (strcmp(key, "memory") == 0 || strcmp(key, GS_DRA_DRIVER "/memory") == 0) {
            r->has_memory = 1;
            r->memory = (uint64_t)q;
        } else if (strcmp(key, "compute") == 0 || strcmp(key, GS_DRA_DRIVER "/compute") == 0) {
            r->has_compute = 1;
            r->compute = (uint64_t)q;
        } else {
            unsupported(r, "a capacity other than memory and compute");
        }
    }
    read_selectors(exact, r);
    return 0;
}

static int result_parse(const json_t *res, gs_dra_result_t *r)
{
    memset(r, 0, sizeof(*r));
    const char *share = gs_k8s_str(res, "shareID", NULL);
    if (take_str(r->request, sizeof(r->request), gs_k8s_str(res, "request", NULL)) != 0 ||
        take_str(r->driver, sizeof(r->driver), gs_k8s_str(res, "driver", NULL)) != 0 ||
        take_str(r->pool, sizeof(r->pool), gs_k8s_str(res, "pool", NULL)) != 0 ||
        take_str(r->device, sizeof(r->device), gs_k8s_str(res, "device", NULL)) != 0 ||
        (share != NULL && take_str(r->share_id, sizeof(r->share_id), share) != 0))
        return -1;
    const json_t *consumed = json_object_get(res, "consumedCapacity");
    r->consumed = consumed != NULL;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)consumed, key, v)
    {
        int64_t q;
        if (!json_is_string(v) || gs_k8s_qty_value(json_string_value(v), &q) != 0 || q < 0)
            return -1;
        if (strcmp(key, "memory") == 0 || strcmp(key, GS_DRA_DRIVER "/memory") == 0)
            r->memory = (uint64_t)q;
        else if (strcmp(key, "compute") == 0 || strcmp(key, GS_DRA_DRIVER "/compute") == 0)
            r->compute = (uint64_t)q;
    }
    return 0;
}

/* The node an allocation's nodeSelector names: matchFields metadata.name In [node]. */
static const char *selected_node(const json_t *selector)
{
    const json_t *terms = json_object_get(selector, "nodeSelectorTerms");
    if (json_array_size(terms) != 1)
        return NULL;
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(json_array_get(terms, 0), "matchFields"), i, f)
    {
        const json_t *values = json_object_get(f, "values");
        const char *key = gs_k8s_str(f, "key", NULL), *op = gs_k8s_str(f, "operator", NULL);
        if (key != NULL && op != NULL && strcmp(key, "metadata.name") == 0 &&
            strcmp(op, "In") == 0 && json_array_size(values) == 1)
            return json_string_value(json_array_get(values, 0));
    }
    return NULL;
}

void gs_dra_claim_free(gs_dra_claim_t *claim)
{
    if (claim == NULL)
        return;
    free(claim->requests);
    free(claim->results);
    memset(claim, 0, sizeof(*claim));
}

static int claim_status(const json_t *alloc, gs_dra_claim_t *out, char *err, size_t errlen)
{
    const json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
    size_t n = json_array_size(results);
    const char *node = selected_node(json_object_get(alloc, "nodeSelector"));
    out->allocated = 1;
    if (node != NULL && strlen(node) < sizeof(out->node))
        memcpy(out->node, node, strlen(node) + 1);
    if (n > GS_DRA_REQUESTS * 64)
        return gs_fail(err, errlen, GS_EFORMAT, "claim %s: %zu results", out->name, n);
    if (n > 0 && (out->results = calloc(n, sizeof(*out->results))) == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (result_parse(json_array_get(results, i), &out->results[i]) != 0)
            return gs_fail(err, errlen, GS_EFORMAT, "claim %s: malformed allocation result %zu",
                           out->name, i);
        out->nresults = i + 1;
    }
    return 0;
}

static int claim_parse(const json_t *obj, gs_dra_claim_t *out, char *err, size_t errlen)
{
    const char *ns = gs_k8s_str(obj, "metadata", "namespace", NULL);
    const char *uid = gs_k8s_str(obj, "metadata", "uid", NULL);
    if (take_str(out->name, sizeof(out->name), gs_k8s_str(obj, "metadata", "name", NULL)) != 0 ||
        take_str(out->ns, sizeof(out->ns), ns != NULL ? ns : "default") != 0 ||
        (uid != NULL && take_str(out->uid, sizeof(out->uid), uid) != 0))
        return gs_fail(err, errlen, GS_EFORMAT, "claim without a valid name, namespace or uid");
    const json_t *reqs =
        json_object_get(json_object_get(json_object_get(obj, "spec"), "devices"), "requests");
    size_t n = json_array_size(reqs);
    if (n > GS_DRA_REQUESTS)
        return gs_fail(err, errlen, GS_EFORMAT, "claim %s: more than %d requests", out->name,
                       GS_DRA_REQUESTS);
    if (n > 0 && (out->requests = calloc(n, sizeof(*out->requests))) == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (request_parse(json_array_get(reqs, i), &out->requests[i]) != 0)
            return gs_fail(err, errlen, GS_EFORMAT, "claim %s: malformed request %zu", out->name,
                           i);
        out->nrequests = i + 1;
    }
    const json_t *alloc = json_object_get(json_object_get(obj, "status"), "allocation");
    return alloc != NULL ? claim_status(alloc, out, err, errlen) : 0;
}

int gs_dra_claim_parse(const json_t *obj, gs_dra_claim_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int result = claim_parse(obj, out, err, errlen);
    if (result != 0)
        gs_dra_claim_free(out);
    return result;
}

/* ---- emitting claims ---- */

static json_t *selector_json(const char *models)
{
    char expr[GS_PLACE_SPEC_MAX * 2 + 128], copy[GS_PLACE_SPEC_MAX], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", models);
    int several = strchr(models, '|') != NULL;
    size_t n = (size_t)snprintf(expr, sizeof(expr), "%s %s", CEL_PREFIX, several ? "in [" : "==");
    int first = 1;
    for (char *m = strtok_r(copy, "|", &save); m != NULL && n < sizeof(expr);
         m = strtok_r(NULL, "|", &save), first = 0)
        n += (size_t)snprintf(expr + n, sizeof(expr) - n, "%s\"%s\"",
                              first ? (several ? "" : " ") : ", ", m);
    if (several && n < sizeof(expr))
        snprintf(expr + n, sizeof(expr) - n, "]");
    return json_pack("[{s:{s:s}}]", "cel", "expression", expr);
}

static json_t *request_json(const gs_dra_request_t *r)
{
    json_t *exact = json_pack("{s:s,s:s,s:I}", "deviceClassName", r->device_class, "allocationMode",
                              "ExactCount", "count", (json_int_t)r->count);
    if (exact != NULL && r->models[0] != '\0')
        json_object_set_new(exact, "selectors", selector_json(r->models));
    if (exact != NULL && (r->has_memory || r->has_compute)) {
        json_t *reqs = json_object();
        char buf[32];
        if (r->has_memory && gs_k8s_qty_format_bytes(r->memory, buf, sizeof(buf)) > 0)
            json_object_set_new(reqs, "memory", json_string(buf));
        if (r->has_compute) {
            snprintf(buf, sizeof(buf), "%llu", (unsigned long long)r->compute);
            json_object_set_new(reqs, "compute", json_string(buf));
        }
        json_object_set_new(exact, "capacity", json_pack("{s:o}", "requests", reqs));
    }
    return json_pack("{s:s,s:o}", "name", r->name, "exactly", exact);
}

static json_t *result_json(const gs_dra_result_t *r)
{
    json_t *res = json_pack("{s:s,s:s,s:s,s:s}", "request", r->request, "driver", r->driver, "pool",
                            r->pool, "device", r->device);
    if (res != NULL && r->share_id[0] != '\0')
        json_object_set_new(res, "shareID", json_string(r->share_id));
    if (res != NULL && r->consumed) {
        char mem[32], compute[32];
        gs_k8s_qty_format_bytes(r->memory, mem, sizeof(mem));
        snprintf(compute, sizeof(compute), "%llu", (unsigned long long)r->compute);
        json_object_set_new(res, "consumedCapacity",
                            json_pack("{s:s,s:s}", "memory", mem, "compute", compute));
    }
    return res;
}

static json_t *allocation_json(const gs_dra_claim_t *c)
{
    json_t *results = json_array();
    for (size_t i = 0; results != NULL && i < c->nresults; i++)
        json_array_append_new(results, result_json(&c->results[i]));
    json_t *alloc = json_pack("{s:{s:o}}", "devices", "results", results);
    if (alloc != NULL && c->node[0] != '\0')
        json_object_set_new(alloc, "nodeSelector",
                            json_pack("{s:[{s:[{s:s,s:s,s:[s]}]}]}", "nodeSelectorTerms",
                                      "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", c->node));
    return alloc;
}

json_t *gs_dra_claim_json(const gs_dra_claim_t *c)
{
    json_t *reqs = json_array();
    for (size_t i = 0; reqs != NULL && i < c->nrequests; i++)
        json_array_append_new(reqs, request_json(&c->requests[i]));
    json_t *meta = json_pack("{s:s,s:s}", "name", c->name, "namespace", c->ns);
    if (meta != NULL && c->uid[0] != '\0')
        json_object_set_new(meta, "uid", json_string(c->uid));
    json_t *obj = json_pack("{s:s,s:s,s:o,s:{s:{s:o}}}", "apiVersion", GS_DRA_API, "kind",
                            "ResourceClaim", "metadata", meta, "spec", "devices", "requests", reqs);
    if (obj != NULL && c->allocated)
        json_object_set_new(obj, "status", json_pack("{s:o}", "allocation", allocation_json(c)));
    return obj;
}
