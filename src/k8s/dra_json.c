/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare's DRA device model as resource.k8s.io/v1 JSON: ResourceSlices and ResourceClaims,
 * parsed and emitted (dra.h). */
#include "dra.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[GS_DRA_MODE_COUNT] = {"shared", "exclusive", "mps", "mig"};

/* Copies an optional string member (absent: "") into a fixed buffer; -1 when too long. */
static int take(char *dst, size_t size, const char *src)
{
    return gs__k8s_copy(dst, size, src != NULL ? src : "", 0);
}

const char *gs_dra_mode_name(gs_dra_mode_t mode)
{
    return (int)mode >= 0 && mode < GS_DRA_MODE_COUNT ? mode_names[mode] : "?";
}

void gs_dra_device_init(gs_dra_device_t *dev, int64_t index, const char *uuid, const char *product,
                        gs_dra_mode_t mode, uint64_t memory, const char *driver_version)
{
    memset(dev, 0, sizeof(*dev));
    snprintf(dev->name, sizeof(dev->name), "gpu-%lld", (long long)index);
    snprintf(dev->uuid, sizeof(dev->uuid), "%s", uuid != NULL ? uuid : "");
    snprintf(dev->product, sizeof(dev->product), "%s", product != NULL ? product : "");
    snprintf(dev->driver_version, sizeof(dev->driver_version), "%s",
             driver_version != NULL ? driver_version : "");
    dev->mode = mode;
    dev->index = index;
    dev->multiple = mode == GS_DRA_SHARED || mode == GS_DRA_MPS;
    memory -= memory % GS_DRA_MIB;
    /* A requestPolicy only on devices that allow multiple allocations (the API's rule). */
    uint64_t mib = dev->multiple ? GS_DRA_MIB : 0, one = dev->multiple ? 1 : 0;
    dev->memory = (gs_dra_capacity_t){
        .value = memory, .policy = dev->multiple, .dflt = memory, .min = mib, .step = mib};
    dev->compute = (gs_dra_capacity_t){.value = GS_DRA_COMPUTE,
                                       .policy = dev->multiple,
                                       .dflt = GS_DRA_COMPUTE,
                                       .min = one,
                                       .step = one};
}

/* ---- slices ---- */

/* An attribute of the driver's domain: "name" or "gpu.gpushare.io/name". */
static const json_t *attribute(const json_t *attrs, const char *name)
{
    const json_t *v = json_object_get(attrs, name);
    if (v == NULL) {
        char full[GS_DRA_SHORT * 2];
        snprintf(full, sizeof(full), "%s/%s", GS_DRA_DRIVER, name);
        v = json_object_get(attrs, full);
    }
    return v;
}

/* A quantity member as whole units; absent is `dflt`. */
static int qty(const json_t *obj, const char *key, uint64_t dflt, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    int64_t q;
    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v) || gs_k8s_qty_value(json_string_value(v), &q) != 0 || q < 0)
        return -1;
    *out = (uint64_t)q;
    return 0;
}

static int capacity_parse(const json_t *caps, const char *name, gs_dra_capacity_t *cap)
{
    const json_t *c = attribute(caps, name);
    memset(cap, 0, sizeof(*cap));
    if (c == NULL)
        return 0;
    const json_t *policy = json_object_get(c, "requestPolicy");
    const json_t *range = json_object_get(policy, "validRange");
    if (qty(c, "value", 0, &cap->value) != 0 ||
        qty(policy, "default", cap->value, &cap->dflt) != 0 ||
        qty(range, "min", 0, &cap->min) != 0 || qty(range, "step", 0, &cap->step) != 0 ||
        qty(range, "max", 0, &cap->max) != 0)
        return -1;
    cap->policy = policy != NULL;
    return 0;
}

static int device_parse(const json_t *d, int ours, gs_dra_device_t *dev, char *err, size_t errlen)
{
    memset(dev, 0, sizeof(*dev));
    if (take(dev->name, sizeof(dev->name), gs_k8s_str(d, "name", NULL)) != 0 ||
        dev->name[0] == '\0')
        return gs_fail(err, errlen, GS_EFORMAT, "a device without a valid name");
    if (!ours)
        return 0;
    const json_t *attrs = json_object_get(d, "attributes");
    const char *mode = gs_k8s_str(attribute(attrs, "mode"), "string", NULL);
    const json_t *index = json_object_get(attribute(attrs, "index"), "int");
    dev->mode = GS_DRA_MODE_COUNT;
    for (int m = 0; mode != NULL && m < GS_DRA_MODE_COUNT; m++)
        dev->mode = strcmp(mode, mode_names[m]) == 0 ? (gs_dra_mode_t)m : dev->mode;
    if (dev->mode == GS_DRA_MODE_COUNT || !json_is_integer(index) ||
        take(dev->uuid, sizeof(dev->uuid), gs_k8s_str(attribute(attrs, "uuid"), "string", NULL)) ||
        take(dev->product, sizeof(dev->product),
             gs_k8s_str(attribute(attrs, "productName"), "string", NULL)) ||
        take(dev->driver_version, sizeof(dev->driver_version),
             gs_k8s_str(attribute(attrs, "cudaDriverVersion"), "version", NULL)))
        return gs_fail(err, errlen, GS_EFORMAT,
                       "device %s: missing or malformed mode, index, uuid, "
                       "productName or cudaDriverVersion",
                       dev->name);
    dev->index = json_integer_value(index);
    const json_t *caps = json_object_get(d, "capacity");
    if (capacity_parse(caps, "memory", &dev->memory) != 0 ||
        capacity_parse(caps, "compute", &dev->compute) != 0)
        return gs_fail(err, errlen, GS_EFORMAT, "device %s: malformed capacity", dev->name);
    dev->multiple = json_is_true(json_object_get(d, "allowMultipleAllocations"));
    return 0;
}

void gs_dra_slice_free(gs_dra_slice_t *slice)
{
    if (slice == NULL)
        return;
    free(slice->devices);
    memset(slice, 0, sizeof(*slice));
}

int gs_dra_slice_parse(const json_t *obj, gs_dra_slice_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *pool = json_object_get(spec, "pool");
    const json_t *devices = json_object_get(spec, "devices");
    if (take(out->name, sizeof(out->name), gs_k8s_str(obj, "metadata", "name", NULL)) ||
        take(out->driver, sizeof(out->driver), gs_k8s_str(spec, "driver", NULL)) ||
        take(out->node, sizeof(out->node), gs_k8s_str(spec, "nodeName", NULL)) ||
        take(out->pool, sizeof(out->pool), gs_k8s_str(pool, "name", NULL)) ||
        out->driver[0] == '\0' || out->pool[0] == '\0')
        return gs_fail(err, errlen, GS_EFORMAT, "slice without a valid driver or pool name");
    if (json_array_size(devices) > GS_DRA_DEVICES)
        return gs_fail(err, errlen, GS_EFORMAT, "slice %s: more than %d devices", out->name,
                       GS_DRA_DEVICES);
    out->generation = json_integer_value(json_object_get(pool, "generation"));
    out->slice_count = json_integer_value(json_object_get(pool, "resourceSliceCount"));
    size_t n = json_array_size(devices);
    if (n > 0 && (out->devices = calloc(n, sizeof(*out->devices))) == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    int ours = strcmp(out->driver, GS_DRA_DRIVER) == 0;
    for (size_t i = 0; i < n; i++) {
        int result = device_parse(json_array_get(devices, i), ours, &out->devices[i], err, errlen);
        if (result != 0) {
            gs_dra_slice_free(out);
            return result;
        }
        out->count = i + 1;
    }
    return 0;
}

/* A quantity string of bytes (memory) or of plain units. */
static json_t *qty_json(uint64_t v, int bytes)
{
    char buf[32];
    if (bytes)
        gs_k8s_qty_format_bytes(v, buf, sizeof(buf));
    else
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    return json_string(buf);
}

static json_t *capacity_json(const gs_dra_capacity_t *c, int bytes)
{
    json_t *out = json_pack("{s:o}", "value", qty_json(c->value, bytes));
    if (out == NULL || !c->policy)
        return out;
    json_t *range = json_pack("{s:o}", "min", qty_json(c->min, bytes));
    if (range != NULL && c->step)
        json_object_set_new(range, "step", qty_json(c->step, bytes));
    if (range != NULL && c->max)
        json_object_set_new(range, "max", qty_json(c->max, bytes));
    json_object_set_new(
        out, "requestPolicy",
        json_pack("{s:o,s:o}", "default", qty_json(c->dflt, bytes), "validRange", range));
    return out;
}

static json_t *device_json(const gs_dra_device_t *d)
{
    json_t *attrs = json_pack("{s:{s:s},s:{s:s},s:{s:s},s:{s:I}}", "uuid", "string", d->uuid,
                              "productName", "string", d->product, "mode", "string",
                              gs_dra_mode_name(d->mode), "index", "int", (json_int_t)d->index);
    if (attrs != NULL && d->driver_version[0] != '\0')
        json_object_set_new(attrs, "cudaDriverVersion",
                            json_pack("{s:s}", "version", d->driver_version));
    json_t *dev =
        json_pack("{s:s,s:o,s:{s:o,s:o}}", "name", d->name, "attributes", attrs, "capacity",
                  "memory", capacity_json(&d->memory, 1), "compute", capacity_json(&d->compute, 0));
    if (dev != NULL && d->multiple)
        json_object_set_new(dev, "allowMultipleAllocations", json_true());
    return dev;
}

json_t *gs_dra_slice_json(const gs_dra_slice_t *s)
{
    json_t *devices = json_array();
    for (size_t i = 0; devices != NULL && i < s->count; i++) {
        if (json_array_append_new(devices, device_json(&s->devices[i])) != 0) {
            json_decref(devices);
            return NULL;
        }
    }
    json_t *spec = json_pack("{s:s,s:{s:s,s:I,s:I},s:o}", "driver", s->driver, "pool", "name",
                             s->pool, "generation", (json_int_t)s->generation, "resourceSliceCount",
                             (json_int_t)s->slice_count, "devices", devices);
    if (spec != NULL && s->node[0] != '\0')
        json_object_set_new(spec, "nodeName", json_string(s->node));
    json_t *meta = json_object();
    if (meta != NULL && s->name[0] != '\0')
        json_object_set_new(meta, "name", json_string(s->name));
    return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", GS_DRA_API, "kind", "ResourceSlice",
                     "metadata", meta, "spec", spec);
}
