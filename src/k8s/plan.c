/* SPDX-License-Identifier: Apache-2.0 */
/* What a claim's allocation asks of this node: the one keyed lease its devices of driver
 * gpu.gpushare.io become (plugin.h). Pure: the claim as the API server returned it, the node as
 * gpushared showed it. */
#include "plugin.h"

#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a result takes of its device. */
typedef enum take { TAKE_SHARE, TAKE_WHOLE, TAKE_MIG } take_t;

typedef struct ctx {
    const gs_dra_claim_t *claim;
    const gs__node_t *node;
    const char *pool;
    char *err;
    size_t errlen;
} ctx_t;

#define FAIL(c, code, ...) claim_fail(c, code, __VA_ARGS__)

int gs__k8s_name_ok(const char *text, size_t max, int dots)
{
    size_t n = strlen(text);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= '0' && text[i] <= '9') ||
              text[i] == '-' || (dots && text[i] == '.')))
            return 0;
    return 1;
}

__attribute__((format(printf, 3, 4))) static int claim_fail(const ctx_t *c, int code,
                                                            const char *fmt, ...)
{
    char why[GS_PLUGIN_ERR_MAX], ns[GS_K8S_LABEL_MAX], name[GS_K8S_NAME_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    gs_display_escape(ns, sizeof(ns), c->claim->ns);
    gs_display_escape(name, sizeof(name), c->claim->name);
    return gs_fail(c->err, c->errlen, code, "claim %s/%s: %s", ns, name, why);
}

/* What of the claim a line shows: its first characters, escaped. */
typedef struct shown {
    char text[72];
} shown_t;

static shown_t shown(const char *text)
{
    shown_t s;
    gs_display_escape(s.text, sizeof(s.text), text);
    return s;
}

/* The names of result r, which become the lease's key, the answer to the kubelet and lines:
 * Kubernetes names, as the API server would have checked them (a request and a device a DNS
 * label, a share ID [a-z0-9-]). */
static int check_names(const ctx_t *c, const gs_dra_result_t *r)
{
    if (!gs__k8s_name_ok(r->request, 63, 0))
        return FAIL(c, GS_EINVAL, "its allocation names request \"%s\", not a DNS label",
                    shown(r->request).text);
    if (!gs__k8s_name_ok(r->device, 63, 0))
        return FAIL(c, GS_EINVAL, "its allocation names device \"%s\", not a DNS label",
                    shown(r->device).text);
    if (r->share_id[0] != '\0' && !gs__k8s_name_ok(r->share_id, 63, 0))
        return FAIL(c, GS_EINVAL, "its allocation has share ID \"%s\", not of [a-z0-9-]",
                    shown(r->share_id).text);
    return 0;
}

/* "79Gi" for people. */
static void bytes_text(uint64_t bytes, char *buf, size_t len)
{
    if (gs_k8s_qty_format_bytes(bytes, buf, len) < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

/* Checks result r against its device; *take says how it takes it. */
static int check_result(const ctx_t *c, const gs_dra_result_t *r, const gs_dra_device_t *dev,
                        take_t *take)
{
    char want[32], has[32];
    if (dev->mode == GS_DRA_MIG) {
        *take = TAKE_MIG;
        return 0;
    }
    if (!dev->multiple || !r->consumed) {
        *take = TAKE_WHOLE;
        return 0;
    }
    if (r->memory > dev->memory.value) {
        bytes_text(r->memory, want, sizeof(want));
        bytes_text(dev->memory.value, has, sizeof(has));
        return FAIL(c, GS_ERANGE, "consumes %s of memory of %s, which has %s", want, r->device,
                    has);
    }
    if (r->compute > dev->compute.value)
        return FAIL(c, GS_ERANGE, "consumes %llu %% of compute of %s, which has %llu %%",
                    (unsigned long long)r->compute, r->device,
                    (unsigned long long)dev->compute.value);
    *take = r->memory == dev->memory.value && r->compute == dev->compute.value ? TAKE_WHOLE
                                                                               : TAKE_SHARE;
    return 0;
}

/* Adds result r (a device of this node) to plan; take is how the plan's earlier results took
 * theirs (-1: none yet). */
static int add_result(const ctx_t *c, const gs_dra_result_t *r, gs__plan_t *plan, int *take,
                      gs_dra_device_t *dev)
{
    const gs__node_gpu_t *gpu = NULL;
    take_t t = TAKE_WHOLE;
    int result = gs__node_device(c->node, r->device, dev, &gpu);
    if (result == GS_ENOENT)
        return FAIL(c, GS_ENOENT, "allocated on %s, which this node (%s) does not have", r->device,
                    c->pool);
    if (result != 0)
        return FAIL(c, result, "%s", gs_strerror(result));
    if ((result = check_result(c, r, dev, &t)) != 0)
        return result;
    if (plan->ndevices > 0 && strcmp(plan->request, r->request) != 0)
        return FAIL(c, GS_ENOTSUP,
                    "requests %s and %s of %s: gpushare gives a container one lease, ask with "
                    "one request",
                    plan->request, r->request, GS_DRA_DRIVER);
    if (*take >= 0 && ((int)t != *take || t != TAKE_WHOLE))
        return FAIL(c, GS_ENOTSUP,
                    "%zu devices of request %s, not all whole GPUs: gpushare gives a container "
                    "one share, one MIG instance, or whole GPUs",
                    plan->ndevices + 1, r->request);
    if (plan->ndevices == GS_MAX_DEVICES)
        return FAIL(c, GS_ENOTSUP, "more than %d devices", GS_MAX_DEVICES);
    struct gs__plan_device *d = &plan->devices[plan->ndevices++];
    memcpy(d->device, r->device, sizeof(d->device));
    memcpy(d->share_id, r->share_id, sizeof(d->share_id));
    d->gpu = gpu->index;
    memcpy(plan->request, r->request, sizeof(plan->request));
    *take = (int)t;
    return 0;
}

/* The lease of the plan's devices (taken as take; dev the last one's device). */
static int lease_of(const ctx_t *c, gs__plan_t *plan, take_t take, const gs_dra_device_t *dev,
                    const gs_dra_result_t *r, const gs__gpuconfig_t *cfg)
{
    gs_lease_request_t *req = &plan->lease;
    gs_lease_request_init(req);
    req->wait = 0;
    if (take == TAKE_SHARE) {
        req->kind = GS_LEASE_MEMORY;
        req->memory = r->memory;
        req->compute = cfg->compute_enforce ? (uint32_t)r->compute : 0;
    } else if (take == TAKE_MIG) {
        req->kind = GS_LEASE_MIG;
        if (gs__k8s_copy(req->mig_profile, sizeof(req->mig_profile), dev->profile, 1) != 0)
            return FAIL(c, GS_EINVAL, "MIG profile \"%.40s\" is too long", dev->profile);
        req->has_mig_start = 1;
        req->mig_start = dev->mig_start;
    } else {
        req->kind = GS_LEASE_GPUS;
        req->gpus = (uint32_t)plan->ndevices;
    }
    req->n_pinned = (unsigned)plan->ndevices;
    for (size_t i = 0; i < plan->ndevices; i++)
        req->pinned[i] = (uint8_t)plan->devices[i].gpu;
    req->compute_max = cfg->compute_max;
    req->time_limit_ms = cfg->time_limit_ms;
    if (snprintf(req->key, sizeof(req->key), "k8s/%s/%s", c->claim->uid, plan->request) >=
        (int)sizeof(req->key))
        return FAIL(c, GS_EINVAL, "its UID and request name are too long for a lease key");
    snprintf(req->name, sizeof(req->name), "%.40s/%.20s", c->claim->ns, c->claim->name);
    snprintf(req->command, sizeof(req->command), "claim %.63s/%.100s request %.63s", c->claim->ns,
             c->claim->name, plan->request);
    char why[GS_PLUGIN_ERR_MAX];
    if (cfg->compute_max > 0 && req->compute > cfg->compute_max)
        return FAIL(c, GS_EINVAL, "its computeMax %u is below the %u %% of compute it consumes",
                    cfg->compute_max, req->compute);
    if (gs_lease_request_check(req, why, sizeof(why)) != 0)
        return FAIL(c, GS_EINVAL, "%s", why);
    return 0;
}

/* Collects the claim's results of this driver on this node into plan. */
static int collect(const ctx_t *c, gs__plan_t *plan, take_t *take, gs_dra_device_t *dev,
                   const gs_dra_result_t **last)
{
    int t = -1;
    for (size_t i = 0; i < c->claim->nresults; i++) {
        const gs_dra_result_t *r = &c->claim->results[i];
        if (strcmp(r->driver, GS_DRA_DRIVER) != 0)
            continue;
        if (strcmp(r->pool, c->pool) != 0)
            return FAIL(c, GS_ENOENT, "allocated on %s of pool %s, not on this node (%s)",
                        shown(r->device).text, shown(r->pool).text, c->pool);
        int result = check_names(c, r);
        if (result == 0)
            result = add_result(c, r, plan, &t, dev);
        if (result != 0)
            return result;
        *last = r;
    }
    *take = t < 0 ? TAKE_WHOLE : (take_t)t;
    return 0;
}

static int plan_parsed(const ctx_t *c, const json_t *obj, const char *uid, gs__plan_t *plan)
{
    const gs_dra_claim_t *claim = c->claim;
    if (uid != NULL && strcmp(uid, claim->uid) != 0)
        return FAIL(c, GS_ENOENT, "its UID is %s, not %s (deleted and made again?)",
                    shown(claim->uid).text, shown(uid).text);
    if (!claim->allocated)
        return FAIL(c, GS_EINVAL, "not allocated");
    memcpy(plan->ns, claim->ns, sizeof(plan->ns));
    memcpy(plan->name, claim->name, sizeof(plan->name));
    memcpy(plan->uid, claim->uid, sizeof(plan->uid));
    gs_dra_device_t dev;
    const gs_dra_result_t *last = NULL;
    take_t take = TAKE_WHOLE;
    int result = collect(c, plan, &take, &dev, &last);
    if (result != 0 || plan->ndevices == 0)
        return result;
    gs__gpuconfig_t cfg;
    char why[GS_PLUGIN_ERR_MAX];
    if (gs__gpuconfig_for(obj, plan->request, &cfg, why, sizeof(why)) != 0)
        return FAIL(c, GS_EINVAL, "%s", why);
    return lease_of(c, plan, take, &dev, last, &cfg);
}

int gs__plan_claim(const json_t *obj, const char *uid, const char *pool, const gs__node_t *node,
                   gs__plan_t *out, char *err, size_t errlen)
{
    gs_dra_claim_t claim;
    char why[GS_PLUGIN_ERR_MAX];
    memset(out, 0, sizeof(*out));
    int result = gs_dra_claim_parse(obj, &claim, why, sizeof(why));
    if (result != 0) {
        const char *ns = gs_k8s_str(obj, "metadata", "namespace", NULL);
        const char *name = gs_k8s_str(obj, "metadata", "name", NULL);
        char ns_shown[GS_K8S_LABEL_MAX], name_shown[GS_K8S_NAME_MAX], why_shown[sizeof(why)];
        gs_display_escape(ns_shown, sizeof(ns_shown), ns != NULL ? ns : "?");
        gs_display_escape(name_shown, sizeof(name_shown), name != NULL ? name : "?");
        gs_display_escape(why_shown, sizeof(why_shown), why); /* (it may quote the claim) */
        return gs_fail(err, errlen, result, "claim %s/%s: %s", ns_shown, name_shown, why_shown);
    }
    ctx_t c = {.claim = &claim, .node = node, .pool = pool, .err = err, .errlen = errlen};
    result = plan_parsed(&c, obj, uid, out);
    gs_dra_claim_free(&claim);
    if (result != 0)
        memset(out, 0, sizeof(*out));
    return result;
}
