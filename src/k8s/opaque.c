/* SPDX-License-Identifier: Apache-2.0 */
/* The opaque configuration of driver gpu.gpushare.io in a claim (GpuConfig, plugin.h): read
 * strictly, as Kubernetes' own decoders read a typed object, so that a typo is an error the pod
 * shows rather than a setting silently ignored. */
#include "plugin.h"

#include "gpushare/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs__gpuconfig_init(gs__gpuconfig_t *cfg)
{
    *cfg = (gs__gpuconfig_t){.compute_enforce = 1};
}

/* A Kubernetes duration as Go writes it ("2h", "1h30m", "90s", "1500ms"): whole numbers, each
 * with a unit h, m, s or ms. Returns 0 with *ms, or -1. */
static int duration_ms(const char *text, uint64_t *ms)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    uint64_t total = 0;
    const char *p = text;
    if (*p == '\0')
        return -1;
    while (*p != '\0') {
        if (!isdigit((unsigned char)*p))
            return -1;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        size_t u = 0;
        while (u < sizeof(units) / sizeof(units[0]) &&
               strncmp(end, units[u].unit, strlen(units[u].unit)) != 0)
            u++;
        if (u == sizeof(units) / sizeof(units[0]) || v > GS_LEASE_TIME_MAX / units[u].ms)
            return -1;
        total += v * units[u].ms;
        if (total > GS_LEASE_TIME_MAX)
            return -1;
        p = end + strlen(units[u].unit);
    }
    *ms = total;
    return 0;
}

static int field_compute_max(gs__gpuconfig_t *cfg, const json_t *v, char *err, size_t errlen)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100)
        return gs_fail(err, errlen, GS_EINVAL, "computeMax must be a whole percent, 1 to 100");
    cfg->compute_max = (uint32_t)json_integer_value(v);
    return 0;
}

static int field_time_limit(gs__gpuconfig_t *cfg, const json_t *v, char *err, size_t errlen)
{
    uint64_t ms = 0;
    if (!json_is_string(v) || duration_ms(json_string_value(v), &ms) != 0 || ms < 1000)
        return gs_fail(err, errlen, GS_EINVAL,
                       "timeLimit must be a duration of 1s to a year, e.g. \"2h\" or \"1h30m\"");
    cfg->time_limit_ms = ms;
    return 0;
}

static int field_enforce(gs__gpuconfig_t *cfg, const json_t *v, char *err, size_t errlen)
{
    const char *s = json_string_value(v);
    if (s == NULL || (strcmp(s, "all") != 0 && strcmp(s, "memory") != 0))
        return gs_fail(err, errlen, GS_EINVAL, "enforce must be \"all\" or \"memory\"");
    cfg->compute_enforce = strcmp(s, "all") == 0;
    return 0;
}

/* apiVersion and kind must name GpuConfig of gpu.gpushare.io/v1. */
static int type_check(const json_t *params, char *err, size_t errlen)
{
    const char *api = json_string_value(json_object_get(params, "apiVersion"));
    const char *kind = json_string_value(json_object_get(params, "kind"));
    if (!json_is_object(params))
        return gs_fail(err, errlen, GS_EINVAL, "the opaque parameters are not a JSON object");
    if (api == NULL || kind == NULL || strcmp(api, GS_GPUCONFIG_API) != 0 ||
        strcmp(kind, GS_GPUCONFIG_KIND) != 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "the opaque parameters must be apiVersion %s, kind %s", GS_GPUCONFIG_API,
                       GS_GPUCONFIG_KIND);
    return 0;
}

/* The line of an unknown field: its name escaped (a claim's author writes it), one line. */
static int no_field(const char *key, char *err, size_t errlen)
{
    char shown[65];
    gs_display_escape(shown, sizeof(shown), key);
    return gs_fail(err, errlen, GS_EINVAL,
                   "GpuConfig has no field \"%s\" (it has computeMax, timeLimit, enforce)", shown);
}

int gs__gpuconfig_apply(gs__gpuconfig_t *cfg, const json_t *params, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        int (*set)(gs__gpuconfig_t *, const json_t *, char *, size_t);
    } fields[] = {{"computeMax", field_compute_max},
                  {"timeLimit", field_time_limit},
                  {"enforce", field_enforce}};
    int result = type_check(params, err, errlen);
    gs__gpuconfig_t next = *cfg;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        if (result != 0 || strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
            continue;
        size_t f = 0;
        while (f < sizeof(fields) / sizeof(fields[0]) && strcmp(key, fields[f].name) != 0)
            f++;
        if (f == sizeof(fields) / sizeof(fields[0]))
            result = no_field(key, err, errlen);
        else
            result = fields[f].set(&next, v, err, errlen);
    }
    if (result == 0)
        *cfg = next;
    return result;
}

/* Whether a configuration entry applies to request (its "requests", none: all). */
static int applies(const json_t *entry, const char *request)
{
    const json_t *reqs = json_object_get(entry, "requests"), *r;
    size_t i;
    if (json_array_size(reqs) == 0)
        return 1;
    json_array_foreach(reqs, i, r) if (json_is_string(r) &&
                                       strcmp(json_string_value(r), request) == 0) return 1;
    return 0;
}

/* Applies the entries of source (FromClass, FromClaim) that are ours and name request. */
static int apply_source(const json_t *list, const char *source, const char *request,
                        gs__gpuconfig_t *cfg, char *err, size_t errlen)
{
    const json_t *entry;
    size_t i;
    json_array_foreach(list, i, entry)
    {
        const json_t *opaque = json_object_get(entry, "opaque");
        const char *driver = json_string_value(json_object_get(opaque, "driver"));
        const char *from = json_string_value(json_object_get(entry, "source"));
        if (opaque == NULL || driver == NULL || strcmp(driver, GS_DRA_DRIVER) != 0 ||
            from == NULL || strcmp(from, source) != 0 || !applies(entry, request))
            continue;
        char why[GS_PLUGIN_ERR_MAX];
        if (gs__gpuconfig_apply(cfg, json_object_get(opaque, "parameters"), why, sizeof(why)) != 0)
            return gs_fail(err, errlen, GS_EINVAL, "its configuration (%s, entry %zu): %s", source,
                           i, why);
    }
    return 0;
}

int gs__gpuconfig_for(const json_t *claim, const char *request, gs__gpuconfig_t *out, char *err,
                      size_t errlen)
{
    const json_t *list = json_object_get(
        json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"), "devices"),
        "config");
    gs__gpuconfig_init(out);
    if (list != NULL && !json_is_array(list))
        return gs_fail(err, errlen, GS_EINVAL, "its allocation's config is not a list");
    int result = apply_source(list, "FromClass", request, out, err, errlen);
    return result != 0 ? result : apply_source(list, "FromClaim", request, out, err, errlen);
}
