/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes JSON for the scheduler extender: quantities, Nodes, Pods, ExtenderArgs and the
 * extender's answers (k8s.h). */
#include "k8s.h"

#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef unsigned __int128 u128;

/* A node list longer than this is refused (kube-scheduler's clusters stop at 5,000 nodes). */
#define NODES_MAX 1000000u

/* ---- quantities ---- */

/* The digits of a quantity's number: mant = all digits as one integer, frac = how many of them
 * follow the point. Returns the text after the number, or NULL (no digit, too many digits). */
static const char *read_number(const char *p, u128 *mant, int *frac)
{
    int digits = 0, point = 0, sig = 0;
    *mant = 0;
    *frac = 0;
    for (;; p++) {
        if (*p == '.' && !point) {
            point = 1;
            continue;
        }
        if (*p < '0' || *p > '9')
            break;
        digits++;
        if (*mant == 0 && *p == '0' && !point)
            continue;
        if (++sig > 36)
            return NULL;
        *mant = *mant * 10 + (unsigned)(*p - '0');
        *frac += point;
    }
    return digits > 0 ? p : NULL;
}

/* The suffix: a power of ten (exp10) and a power of two (exp2). Returns 0 or GS_EINVAL. */
static int read_suffix(const char *s, int *exp10, int *exp2)
{
    static const char bin[] = "KMGTPE", dec[] = "kMGTPE";
    *exp10 = *exp2 = 0;
    if (*s == '\0')
        return 0;
    if (s[1] == 'i' && s[2] == '\0' && strchr(bin, s[0]) != NULL) {
        *exp2 = 10 * (int)(strchr(bin, s[0]) - bin + 1);
        return 0;
    }
    if ((s[0] == 'e' || s[0] == 'E') && s[1] != '\0') {
        char *end;
        long e = strtol(s + 1, &end, 10);
        if (*end != '\0' || e < -100 || e > 100 ||
            (s[1] != '-' && s[1] != '+' && (s[1] < '0' || s[1] > '9')))
            return GS_EINVAL;
        *exp10 = (int)e;
        return 0;
    }
    if (s[1] != '\0')
        return GS_EINVAL;
    if (s[0] == 'm') {
        *exp10 = -3;
        return 0;
    }
    if (strchr(dec, s[0]) == NULL)
        return GS_EINVAL;
    *exp10 = 3 * (int)(strchr(dec, s[0]) - dec + 1);
    return 0;
}

/* mant * 10^e10 * 2^e2, rounded up, into *out; GS_ERANGE past 2^63 - 1. */
static int scale(u128 mant, int e10, int e2, int64_t *out)
{
    const u128 limit = (u128)INT64_MAX;
    u128 den = 1;
    for (; e10 > 0; e10--) {
        if (mant > limit)
            return GS_ERANGE;
        mant *= 10;
    }
    for (; e10 < 0 && den <= limit; e10++)
        den *= 10;
    if (e10 < 0) { /* a divisor beyond 10^19: any nonzero mantissa rounds up to 1 */
        *out = mant > 0;
        return 0;
    }
    for (; e2 > 0; e2--) {
        if (mant > limit * 2)
            return GS_ERANGE;
        mant <<= 1;
    }
    u128 v = mant / den + (mant % den != 0);
    if (v > limit)
        return GS_ERANGE;
    *out = (int64_t)v;
    return 0;
}

int gs_k8s_qty_milli(const char *text, int64_t *milli)
{
    if (text == NULL)
        return GS_EINVAL;
    const char *p = text;
    int negative = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    u128 mant;
    int frac, e10, e2;
    p = read_number(p, &mant, &frac);
    if (p == NULL)
        return GS_EINVAL;
    int result = read_suffix(p, &e10, &e2);
    if (result != 0)
        return result;
    int64_t v;
    if ((result = scale(mant, e10 - frac + 3, e2, &v)) != 0)
        return result;
    *milli = negative ? -v : v;
    return 0;
}

int gs_k8s_qty_value(const char *text, int64_t *value)
{
    int64_t milli;
    int result = gs_k8s_qty_milli(text, &milli);
    if (result != 0)
        return result;
    *value = milli >= 0 ? milli / 1000 + (milli % 1000 != 0) : -((-milli) / 1000);
    return 0;
}

int gs_k8s_qty_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    int n = -1;
    for (int i = 0; i < 6 && n < 0; i++) {
        unsigned shift = 10u * (unsigned)(6 - i);
        if (bytes != 0 && (bytes & ((UINT64_C(1) << shift) - 1)) == 0)
            n = snprintf(buf, len, "%llu%s", (unsigned long long)(bytes >> shift), units[i]);
    }
    if (n < 0)
        n = snprintf(buf, len, "%llu", (unsigned long long)bytes);
    return n >= 0 && (size_t)n < len ? n : GS_ENOSPC;
}

/* ---- objects ---- */

const char *gs_k8s_str(const json_t *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    const char *key;
    while (obj != NULL && (key = va_arg(ap, const char *)) != NULL)
        obj = json_object_get(obj, key);
    va_end(ap);
    return json_is_string(obj) ? json_string_value(obj) : NULL;
}

int gs__k8s_copy(char *dst, size_t size, const char *src, int required)
{
    size_t n = src != NULL ? strlen(src) : 0;
    dst[0] = '\0';
    if (src == NULL || n >= size || (required && n == 0))
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* Reads quantity member key of obj (absent: 0) as whole units (or thousandths with milli). */
static int quantity_of(const json_t *obj, const char *key, int milli, uint64_t *out, char *err,
                       size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *out = 0;
    if (v == NULL)
        return 0;
    int64_t q = 0;
    if (!json_is_string(v) ||
        (milli ? gs_k8s_qty_milli(json_string_value(v), &q)
               : gs_k8s_qty_value(json_string_value(v), &q)) != 0 ||
        q < 0)
        return gs_fail(err, errlen, GS_EFORMAT, "%s is not a quantity", key);
    *out = (uint64_t)q;
    return 0;
}

int gs_k8s_node_parse(const json_t *obj, gs_k8s_node_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *name = gs_k8s_str(obj, "metadata", "name", NULL);
    if (gs__k8s_copy(out->name, sizeof(out->name), name, 1) != 0)
        return gs_fail(err, errlen, GS_EFORMAT, "node without a valid metadata.name");
    const json_t *alloc = json_object_get(json_object_get(obj, "status"), "allocatable");
    int result = quantity_of(alloc, "cpu", 1, &out->cpu_milli, err, errlen);
    if (result == 0)
        result = quantity_of(alloc, "memory", 0, &out->mem_bytes, err, errlen);
    return result;
}

/* A container's CPU (milli) and memory requests. */
typedef struct requests {
    uint64_t cpu, mem;
} requests_t;

static int container_requests(const json_t *c, requests_t *r, char *err, size_t errlen)
{
    const json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
    int result = quantity_of(req, "cpu", 1, &r->cpu, err, errlen);
    return result != 0 ? result : quantity_of(req, "memory", 0, &r->mem, err, errlen);
}

static void max_into(requests_t *a, const requests_t *b)
{
    a->cpu = b->cpu > a->cpu ? b->cpu : a->cpu;
    a->mem = b->mem > a->mem ? b->mem : a->mem;
}

/* kube-scheduler's pod requests: containers' sum; each init container alone plus the sidecars
 * started before it (sidecars, restartPolicy Always, also run beside the containers); the
 * larger of the two, plus the pod's overhead. */
static int pod_requests(const json_t *spec, gs_k8s_pod_t *pod, char *err, size_t errlen)
{
    requests_t sum = {0, 0}, sidecars = {0, 0}, init = {0, 0}, r;
    size_t i;
    const json_t *c;
    int result;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        if ((result = container_requests(c, &r, err, errlen)) != 0)
            return result;
        sum.cpu += r.cpu;
        sum.mem += r.mem;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if ((result = container_requests(c, &r, err, errlen)) != 0)
            return result;
        const char *restart = gs_k8s_str(c, "restartPolicy", NULL);
        r.cpu += sidecars.cpu;
        r.mem += sidecars.mem;
        if (restart != NULL && strcmp(restart, "Always") == 0) {
            sum.cpu += r.cpu - sidecars.cpu;
            sum.mem += r.mem - sidecars.mem;
            sidecars = r;
        }
        max_into(&init, &r);
    }
    max_into(&sum, &init);
    requests_t overhead = {0, 0};
    const json_t *oh = json_object_get(spec, "overhead");
    if ((result = quantity_of(oh, "cpu", 1, &overhead.cpu, err, errlen)) != 0 ||
        (result = quantity_of(oh, "memory", 0, &overhead.mem, err, errlen)) != 0)
        return result;
    pod->cpu_milli = sum.cpu + overhead.cpu;
    pod->mem_bytes = sum.mem + overhead.mem;
    return 0;
}

/* spec.resourceClaims, named by status.resourceClaimStatuses for claims made from templates. */
static int pod_claims(const json_t *obj, gs_k8s_pod_t *pod, char *err, size_t errlen)
{
    size_t i, j;
    const json_t *c, *s;
    const json_t *statuses =
        json_object_get(json_object_get(obj, "status"), "resourceClaimStatuses");
    json_array_foreach(json_object_get(json_object_get(obj, "spec"), "resourceClaims"), i, c)
    {
        if (pod->nclaims == GS_K8S_POD_CLAIMS)
            return gs_fail(err, errlen, GS_EFORMAT, "more than %d resource claims",
                           GS_K8S_POD_CLAIMS);
        gs_k8s_pod_claim_t *pc = &pod->claims[pod->nclaims++];
        const char *ref = gs_k8s_str(c, "name", NULL);
        const char *claim = gs_k8s_str(c, "resourceClaimName", NULL);
        if (gs__k8s_copy(pc->ref, sizeof(pc->ref), ref, 1) != 0)
            return gs_fail(err, errlen, GS_EFORMAT, "a resource claim without a valid name");
        json_array_foreach(statuses, j, s)
        {
            const char *sref = gs_k8s_str(s, "name", NULL);
            if (claim == NULL && sref != NULL && strcmp(sref, ref) == 0)
                claim = gs_k8s_str(s, "resourceClaimName", NULL);
        }
        if (claim != NULL && gs__k8s_copy(pc->claim, sizeof(pc->claim), claim, 1) != 0)
            return gs_fail(err, errlen, GS_EFORMAT, "resource claim %s: name too long", ref);
    }
    return 0;
}

int gs_k8s_pod_parse(const json_t *obj, gs_k8s_pod_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *ns = gs_k8s_str(obj, "metadata", "namespace", NULL);
    const char *name = gs_k8s_str(obj, "metadata", "name", NULL);
    const char *uid = gs_k8s_str(obj, "metadata", "uid", NULL);
    const char *node = gs_k8s_str(obj, "spec", "nodeName", NULL);
    const char *phase = gs_k8s_str(obj, "status", "phase", NULL);
    if (gs__k8s_copy(out->name, sizeof(out->name), name, 1) != 0 ||
        gs__k8s_copy(out->uid, sizeof(out->uid), uid, 1) != 0 ||
        gs__k8s_copy(out->ns, sizeof(out->ns), ns != NULL ? ns : "default", 1) != 0 ||
        gs__k8s_copy(out->node, sizeof(out->node), node != NULL ? node : "", 0) != 0)
        return gs_fail(err, errlen, GS_EFORMAT, "pod without a valid name, namespace, uid or node");
    out->terminal =
        phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    int result = pod_requests(json_object_get(obj, "spec"), out, err, errlen);
    return result != 0 ? result : pod_claims(obj, out, err, errlen);
}

/* ---- the extender protocol ---- */

void gs_k8s_args_free(gs_k8s_args_t *args)
{
    if (args == NULL)
        return;
    free(args->names);
    json_decref(args->nodes);
    json_decref(args->root);
    memset(args, 0, sizeof(*args));
}

/* Member key of an ExtenderArgs, matched as Go's encoding/json matches it: ignoring case. The
 * type (k8s.io/kube-scheduler/extender/v1) has no json tags: the real kube-scheduler sends
 * "Pod", "Nodes", "NodeNames"; an exact match wins. */
static const json_t *args_member(const json_t *root, const char *key)
{
    const json_t *v = json_object_get(root, key);
    const char *k;
    json_t *value;
    if (v != NULL)
        return v;
    json_object_foreach((json_t *)root, k, value)
    {
        if (strcasecmp(k, key) == 0)
            return value;
    }
    return NULL;
}

/* The candidate names: "nodenames" (nodeCacheCapable) or the items of "nodes". */
static int read_names(const json_t *root, gs_k8s_args_t *args, char *err, size_t errlen)
{
    const json_t *list = args_member(root, "nodenames");
    const json_t *items = json_object_get(args_member(root, "nodes"), "items");
    int objects = !json_is_array(list);
    if (objects && !json_is_array(items))
        return gs_fail(err, errlen, GS_EFORMAT, "neither nodenames nor nodes.items is a list");
    if (objects)
        list = items;
    size_t n = json_array_size(list);
    if (n > NODES_MAX)
        return gs_fail(err, errlen, GS_EFORMAT, "%zu candidate nodes (at most %u)", n, NODES_MAX);
    args->names = calloc(n ? n : 1, sizeof(char *));
    if (args->names == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(list, i);
        const char *name = objects ? gs_k8s_str(v, "metadata", "name", NULL) : json_string_value(v);
        if (name == NULL || name[0] == '\0' || strlen(name) >= GS_K8S_NAME_MAX)
            return gs_fail(err, errlen, GS_EFORMAT, "candidate node %zu has no valid name", i);
        args->names[i] = name;
        args->count = i + 1;
    }
    if (objects)
        args->nodes = json_incref((json_t *)items);
    return 0;
}

int gs_k8s_args_parse(const char *body, size_t len, gs_k8s_args_t *args, char *err, size_t errlen)
{
    memset(args, 0, sizeof(*args));
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    if (root == NULL)
        return gs_fail(err, errlen, GS_EFORMAT, "not JSON: %s (line %d)", jerr.text, jerr.line);
    int result = json_is_object(root)
                     ? read_names(root, args, err, errlen)
                     : gs_fail(err, errlen, GS_EFORMAT, "ExtenderArgs is not a JSON object");
    if (result == 0) {
        const json_t *pod = args_member(root, "pod");
        if (!json_is_object(pod))
            snprintf(args->pod_err, sizeof(args->pod_err), "no pod object");
        else
            args->pod_ok =
                gs_k8s_pod_parse(pod, &args->pod, args->pod_err, sizeof(args->pod_err)) == 0;
    }
    args->root = root;
    if (result != 0)
        gs_k8s_args_free(args);
    return result;
}

static char *dump(json_t *root)
{
    char *text = root != NULL ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

/* Adds failed node i to the map named key of root (created on first use). */
static int add_failed(json_t *root, const char *key, const char *name, const char *reason)
{
    json_t *map = json_object_get(root, key);
    if (map == NULL && json_object_set_new(root, key, map = json_object()) != 0)
        return -1;
    return json_object_set_new(map, name, json_string(reason != NULL ? reason : "gpushare"));
}

char *gs_k8s_filter_result(const gs_k8s_args_t *args, const gs_k8s_verdict_t *verdict,
                           const char *const *reason, const char *error)
{
    json_t *root = json_object();
    if (root == NULL)
        return NULL;
    if (error != NULL) { /* printable ASCII only: a parser's message may quote any bytes */
        char text[GS_K8S_ERR_MAX * 2];
        snprintf(text, sizeof(text), "%s", error);
        for (char *c = text; *c != '\0'; c++)
            *c = (unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e ? '?' : *c;
        if (json_object_set_new(root, "error", json_string(text)) != 0) {
            json_decref(root);
            return NULL;
        }
        return dump(root);
    }
    json_t *pass = json_array();
    int bad = pass == NULL;
    for (size_t i = 0; i < args->count && !bad; i++) {
        gs_k8s_verdict_t v = verdict != NULL ? verdict[i] : GS_K8S_PASS;
        if (v == GS_K8S_PASS)
            bad = args->nodes != NULL ? json_array_append(pass, json_array_get(args->nodes, i))
                                      : json_array_append_new(pass, json_string(args->names[i]));
        else
            bad = add_failed(root, v == GS_K8S_FAIL ? "failedNodes" : "failedAndUnresolvableNodes",
                             args->names[i], reason != NULL ? reason[i] : NULL);
    }
    if (!bad && args->nodes != NULL)
        bad = json_object_set_new(root, "nodes", json_pack("{s:o}", "items", pass));
    else if (!bad)
        bad = json_object_set_new(root, "nodenames", pass);
    else
        json_decref(pass);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return dump(root);
}

/* Appends s as a JSON string. */
static int add_string(gs__k8s_buf_t *b, const char *s)
{
    int result = gs__k8s_buf_add(b, "\"", 1);
    for (const char *p = s; result == 0 && *p != '\0'; p++) {
        char esc[8];
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            result = gs__k8s_buf_add(b, (char[]){'\\', (char)c}, 2);
        else if (c < 0x20)
            result = gs__k8s_buf_add(b, esc, (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c));
        else
            result = gs__k8s_buf_add(b, p, 1);
    }
    return result == 0 ? gs__k8s_buf_add(b, "\"", 1) : result;
}

/* Written directly rather than through json_t: one allocation for 1,500 hosts instead of
 * 4,500 (this answer is on every pod's path). */
char *gs_k8s_priority_list(const gs_k8s_args_t *args, const int64_t *scores)
{
    gs__k8s_buf_t b = {.max = SIZE_MAX / 2};
    int result = gs__k8s_buf_add(&b, "[", 1);
    for (size_t i = 0; result == 0 && i < args->count; i++) {
        char score[48];
        int n = snprintf(score, sizeof(score), ",\"score\":%lld}",
                         (long long)(scores != NULL ? scores[i] : 0));
        result = gs__k8s_buf_add(&b, i > 0 ? ",{\"host\":" : "{\"host\":", i > 0 ? 9 : 8);
        if (result == 0)
            result = add_string(&b, args->names[i]);
        if (result == 0)
            result = gs__k8s_buf_add(&b, score, (size_t)n);
    }
    if (result == 0)
        result = gs__k8s_buf_add(&b, "]", 1);
    if (result != 0) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
