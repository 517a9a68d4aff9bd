/* SPDX-License-Identifier: Apache-2.0 */
/* The publisher (plugin.h): this node's ResourceSlices kept as gpushared's view and the device
 * order say. Each pass builds the slices from gpushared's status and writes them only when they
 * differ from what was published: all slices of the pool with a new generation (PUT the ones
 * that exist, POST the others), then DELETE slices of this driver and node that are no longer
 * wanted. The first pass, and every pass after a failure, lists what the API server has first:
 * a restarted plugin adopts its slices as they are when they already say the same (nothing
 * doubled, no generation burnt), and a write refused as a conflict is retried on fresh
 * resourceVersions. What the API server has is listed again when the kubelet registers the
 * plugin (gs__publish_relist) and at least every RELIST_MS: the kubelet deletes its node's slices
 * when it starts, after the registration or before it, and the plugin is told of neither; a
 * slice deleted behind its back is written again within that time. When gpushared does not answer,
 * the slices stay as published (a restart of gpushared must not withdraw the node's GPUs from the
 * scheduler).
 *
 * Health: a GPU that gpushared reports with a problem (MIG off on a mig GPU, its MPS control
 * daemon down, ...) is left out of the slices, and each change of a GPU's problem is told to the
 * cluster as an Event on the Node (Warning GpuUnavailable with gpushared's line, Normal
 * GpuAvailable when it serves again) and logged; the first pass reports the GPUs that start
 * with a problem. An Event the API server refuses is logged, never retried. */
#include "plugin.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLICES_PATH "/apis/resource.k8s.io/v1/resourceslices"
#define EVENTS_PATH "/api/v1/namespaces/default/events" /* where Nodes' events go */
#define MAX_SLICES  (GS_MAX_DEVICES + 2)
#define RELIST_MS   5000L /* the most a slice deleted behind the plugin's back stays missing */

typedef struct pub {
    gs__plugin_t *p;
    gs__kapi_t *api;
    int listed;         /* existing[] is what the API server has */
    long listed_ms;     /* when it was listed (CLOCK_MONOTONIC) */
    int no_partitions;  /* the API server drops MIG's counters: MIG GPUs are not published */
    int64_t generation; /* the pool's, as last published or found */
    json_t *existing;   /* name -> the slice as last listed, or as last written (what was sent,
                         * with the server's resourceVersion: a field the server drops must not
                         * make every pass write again) */
    json_t *owner;      /* ownerReferences naming the Node, or NULL */
    json_t *problems;   /* GPU UUID -> its problem as last reported ("" none) */
    char last_error[GS_PLUGIN_ERR_MAX];
} pub_t;

/* A slice's spec without its pool's generation: what two publications are compared on. */
static json_t *comparable(const json_t *slice)
{
    json_t *spec = json_deep_copy(json_object_get(slice, "spec"));
    json_object_del(json_object_get(spec, "pool"), "generation");
    return spec;
}

/* The Node as owner of the slices (so that they go with it), when the API server shows it. */
static void find_owner(pub_t *pub)
{
    char path[512], why[GS_PLUGIN_ERR_MAX];
    long status = 0;
    json_t *node = NULL;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", pub->p->cfg.node);
    if (pub->owner != NULL ||
        gs__kapi_call(pub->api, "GET", path, NULL, &status, &node, why, sizeof(why)) != 0)
        return;
    const char *uid = gs_k8s_str(node, "metadata", "uid", NULL);
    if (status == 200 && uid != NULL)
        pub->owner = json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion", "v1", "kind", "Node",
                               "name", pub->p->cfg.node, "uid", uid, "controller", 1);
    else
        gs_info("node %s: not readable on the API server (HTTP %ld): slices published without "
                "an owner",
                pub->p->cfg.node, status);
    json_decref(node);
}

/* Lists this driver's slices of this node into pub->existing. */
static int list_existing(pub_t *pub, char *err, size_t errlen)
{
    char path[768], why[GS_PLUGIN_ERR_MAX];
    long status = 0;
    json_t *list = NULL, *item;
    size_t i;
    snprintf(path, sizeof(path), "%s?fieldSelector=spec.nodeName%%3D%s%%2Cspec.driver%%3D%s",
             SLICES_PATH, pub->p->cfg.node, GS_DRA_DRIVER);
    int result = gs__kapi_call(pub->api, "GET", path, NULL, &status, &list, err, errlen);
    if (result == 0 && status != 200) {
        gs__kapi_status_text(status, list, why, sizeof(why));
        result = gs_fail(err, errlen, GS_EIO, "listing the node's ResourceSlices: %s", why);
    }
    if (result == 0) {
        json_object_clear(pub->existing);
        json_array_foreach(json_object_get(list, "items"), i, item)
        {
            const char *name = gs_k8s_str(item, "metadata", "name", NULL);
            json_int_t gen = json_integer_value(json_object_get(
                json_object_get(json_object_get(item, "spec"), "pool"), "generation"));
            if (name != NULL)
                json_object_set(pub->existing, name, item);
            if (gen > pub->generation)
                pub->generation = gen;
        }
        pub->listed = 1;
    }
    json_decref(list);
    return result;
}

/* Whether the existing slices are exactly the wanted ones (names and specs). */
static int same_as_existing(const pub_t *pub, json_t *const *want, size_t n)
{
    if (json_object_size(pub->existing) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *have =
            json_object_get(pub->existing, gs_k8s_str(want[i], "metadata", "name", NULL));
        const json_t *pool = json_object_get(json_object_get(have, "spec"), "pool");
        json_t *a = comparable(want[i]), *b = comparable(have);
        /* ... and one generation: a pass that failed half-way wrote some slices only. */
        int same = have != NULL && json_equal(a, b) &&
                   json_integer_value(json_object_get(pool, "generation")) == pub->generation;
        json_decref(a);
        json_decref(b);
        if (!same)
            return 0;
    }
    return 1;
}

/* Whether the slice has MIG's counters (sharedCounters, or devices that consume them). */
static int has_partitions(const json_t *slice)
{
    const json_t *spec = json_object_get(slice, "spec"), *d;
    size_t i;
    if (json_array_size(json_object_get(spec, "sharedCounters")) > 0)
        return 1;
    json_array_foreach(json_object_get(spec, "devices"), i,
                       d) if (json_object_get(d, "consumesCounters") != NULL) return 1;
    return 0;
}

/* What the API server kept of what was written: a field it dropped is a feature gate it lacks
 * (DRAConsumableCapacity, DRAPartitionableDevices). Without partitionable devices MIG GPUs
 * would be allocated as independent devices that overlap: they are withdrawn. */
static void check_kept(pub_t *pub, const json_t *sent, const json_t *reply)
{
    json_t *a = comparable(sent), *b = comparable(reply);
    int same = json_equal(a, b);
    json_decref(a);
    json_decref(b);
    if (same)
        return;
    const char *name = gs_k8s_str(sent, "metadata", "name", NULL);
    if (has_partitions(sent) && !has_partitions(reply) && !pub->no_partitions) {
        pub->no_partitions = 1;
        gs_error("ResourceSlice %s: the API server dropped MIG's counters (feature gate "
                 "DRAPartitionableDevices off): MIG GPUs are withdrawn from the slices",
                 name);
    } else {
        gs_warn("ResourceSlice %s: the API server did not keep all of it (a feature gate off: "
                "DRAConsumableCapacity for shares?)",
                name);
    }
}

/* Writes one wanted slice: PUT over the existing one, else POST. */
static int write_slice(pub_t *pub, json_t *slice, char *err, size_t errlen)
{
    const char *name = gs_k8s_str(slice, "metadata", "name", NULL);
    const json_t *have = json_object_get(pub->existing, name);
    char path[512], why[GS_PLUGIN_ERR_MAX];
    long status = 0;
    json_t *reply = NULL;
    if (pub->owner != NULL)
        json_object_set(json_object_get(slice, "metadata"), "ownerReferences", pub->owner);
    if (have != NULL)
        json_object_set_new(json_object_get(slice, "metadata"), "resourceVersion",
                            json_string(gs_k8s_str(have, "metadata", "resourceVersion", NULL)));
    snprintf(path, sizeof(path), have != NULL ? "%s/%s" : "%s", SLICES_PATH, name);
    int result = gs__kapi_call(pub->api, have != NULL ? "PUT" : "POST", path, slice, &status,
                               &reply, err, errlen);
    if (result == 0 && (status == 200 || status == 201)) {
        json_t *kept = json_deep_copy(slice);
        json_object_set_new(json_object_get(kept, "metadata"), "resourceVersion",
                            json_string(gs_k8s_str(reply, "metadata", "resourceVersion", NULL)));
        json_object_set_new(pub->existing, name, kept);
        check_kept(pub, slice, reply);
    } else if (result == 0) {
        gs__kapi_status_text(status, reply, why, sizeof(why));
        result = gs_fail(err, errlen, status == 409 ? GS_EAGAIN : GS_EIO, "%s ResourceSlice %s: %s",
                         have != NULL ? "updating" : "creating", name, why);
    }
    json_decref(reply);
    return result;
}

/* Deletes the existing slices that are not wanted. */
static int delete_others(pub_t *pub, json_t *const *want, size_t n, char *err, size_t errlen)
{
    const char *name;
    json_t *v, *tmp;
    json_object_foreach_safe(pub->existing, tmp, name, v)
    {
        size_t i = 0;
        while (i < n && strcmp(name, gs_k8s_str(want[i], "metadata", "name", NULL)) != 0)
            i++;
        if (i < n)
            continue;
        char path[512], why[GS_PLUGIN_ERR_MAX];
        long status = 0;
        json_t *reply = NULL;
        snprintf(path, sizeof(path), "%s/%s", SLICES_PATH, name);
        int result = gs__kapi_call(pub->api, "DELETE", path, NULL, &status, &reply, err, errlen);
        if (result == 0 && status != 200 && status != 404) {
            gs__kapi_status_text(status, reply, why, sizeof(why));
            result = gs_fail(err, errlen, GS_EIO, "deleting ResourceSlice %s: %s", name, why);
        }
        json_decref(reply);
        if (result != 0)
            return result;
        json_object_del(pub->existing, name);
    }
    return 0;
}

/* Publishes want[0..n) as the pool's new generation. */
static int publish(pub_t *pub, json_t **want, size_t n, char *err, size_t errlen)
{
    int64_t gen = pub->generation + 1;
    for (size_t i = 0; i < n; i++)
        json_object_set_new(json_object_get(json_object_get(want[i], "spec"), "pool"), "generation",
                            json_integer(gen));
    for (size_t i = 0; i < n; i++) {
        int result = write_slice(pub, want[i], err, errlen);
        if (result != 0)
            return result;
    }
    pub->generation = gen;
    int result = delete_others(pub, want, n, err, errlen);
    if (result == 0)
        gs_info("ResourceSlices of node %s published: %zu slice%s, generation %lld",
                pub->p->cfg.node, n, n == 1 ? "" : "s", (long long)gen);
    return result;
}

/* Posts an Event on this node: type Warning or Normal, reason, message. */
static void post_event(pub_t *pub, const char *type, const char *reason, const char *message)
{
    char now[32], why[GS_PLUGIN_ERR_MAX], text[GS_PLUGIN_ERR_MAX];
    time_t t = time(NULL);
    struct tm tm;
    long status = 0;
    json_t *reply = NULL;
    find_owner(pub); /* the Node's uid, for the event */
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    const char *uid = json_string_value(json_object_get(json_array_get(pub->owner, 0), "uid"));
    json_t *node =
        json_pack("{s:s, s:s, s:s}", "apiVersion", "v1", "kind", "Node", "name", pub->p->cfg.node);
    if (node != NULL && uid != NULL)
        json_object_set_new(node, "uid", json_string(uid));
    json_t *event =
        json_pack("{s:s, s:s, s:{s:s}, s:o, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
                  "apiVersion", "v1", "kind", "Event", "metadata", "generateName", "gpushare-k8s-",
                  "involvedObject", node, "type", type, "reason", reason, "message", message,
                  "source", "component", "gpushare-k8s", "host", pub->p->cfg.node, "firstTimestamp",
                  now, "lastTimestamp", now, "count", 1, "reportingComponent", GS_DRA_DRIVER,
                  "reportingInstance", pub->p->cfg.node);
    if (event == NULL)
        return;
    if (gs__kapi_call(pub->api, "POST", EVENTS_PATH, event, &status, &reply, why, sizeof(why)) != 0)
        gs_warn("node %s: the event \"%s\" not posted: %s", pub->p->cfg.node, message, why);
    else if (status / 100 != 2) {
        gs__kapi_status_text(status, reply, text, sizeof(text));
        gs_warn("node %s: the event \"%s\" not posted: %s", pub->p->cfg.node, message, text);
    }
    json_decref(reply);
    json_decref(event);
}

/* Tells the cluster each GPU whose problem changed since the last pass (the first pass: each
 * that has one). */
static void report_health(pub_t *pub, const gs__node_t *node)
{
    char message[GS_PLUGIN_ERR_MAX];
    for (unsigned i = 0; pub->problems != NULL && i < node->n; i++) {
        const gs__node_gpu_t *g = &node->gpus[i];
        const char *before = json_string_value(json_object_get(pub->problems, g->uuid));
        if (before == NULL ? g->problem[0] == '\0' : strcmp(before, g->problem) == 0) {
            if (before == NULL)
                json_object_set_new(pub->problems, g->uuid, json_string(""));
            continue;
        }
        if (g->problem[0] != '\0') {
            snprintf(message, sizeof(message), "GPU %u (%s) serves nothing: %s; not published",
                     g->index, g->uuid, g->problem);
            gs_warn("%s", message);
            post_event(pub, "Warning", "GpuUnavailable", message);
        } else {
            snprintf(message, sizeof(message), "GPU %u (%s) serves again; published", g->index,
                     g->uuid);
            gs_info("%s", message);
            post_event(pub, "Normal", "GpuAvailable", message);
        }
        json_object_set_new(pub->problems, g->uuid, json_string(g->problem));
    }
}

/* The slices wanted now, as JSON. Returns 0 with want[0..*n), or a code with one line. */
static int wanted(pub_t *pub, json_t **want, size_t *n, char *err, size_t errlen)
{
    gs__node_t *node = malloc(sizeof(*node));
    gs_dra_slice_t slices[MAX_SLICES];
    size_t count = 0;
    *n = 0;
    int result = node == NULL ? GS_ENOMEM : gs__gsd_node(pub->p->cfg.gpushared, node, err, errlen);
    for (unsigned i = 0; result == 0 && pub->no_partitions && i < node->n; i++)
        if (node->gpus[i].mode == GS_DRA_MIG)
            snprintf(node->gpus[i].problem, sizeof(node->gpus[i].problem),
                     "the API server keeps no partitionable devices");
    if (result == 0)
        report_health(pub, node);
    if (result == 0)
        result = gs__node_slices(node, pub->p->cfg.node, pub->generation, pub->p->cfg.order, slices,
                                 MAX_SLICES, &count);
    for (size_t i = 0; i < count; i++) {
        if (result == 0 && (want[*n] = gs_dra_slice_json(&slices[i])) == NULL)
            result = GS_ENOMEM;
        else if (result == 0)
            (*n)++;
        gs_dra_slice_free(&slices[i]);
    }
    free(node);
    if (result == GS_ENOMEM || result == GS_ENOSPC)
        gs_fail(err, errlen, result, "building the slices: %s", gs_strerror(result));
    return result;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* One pass. Returns 0, or a code with one line in err. */
static int pass(pub_t *pub, char *err, size_t errlen)
{
    json_t *want[MAX_SLICES];
    size_t n = 0;
    int result = wanted(pub, want, &n, err, errlen);
    if (atomic_exchange(&pub->p->relist, 0) || now_ms() - pub->listed_ms >= RELIST_MS)
        pub->listed = 0;
    if (result == 0 && !pub->listed) {
        find_owner(pub);
        result = list_existing(pub, err, errlen);
        pub->listed_ms = now_ms();
    }
    if (result == 0 && !same_as_existing(pub, want, n))
        result = publish(pub, want, n, err, errlen);
    if (result != 0)
        pub->listed = 0; /* list again before the next write: resourceVersions, conflicts */
    for (size_t i = 0; i < n; i++)
        json_decref(want[i]);
    return result;
}

/* Sleeps until the next pass is due (resync_ms, or sooner when poked or stopping). */
static void wait_next(gs__plugin_t *p, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->lock);
    while (!atomic_load(&p->stop) && !atomic_load(&p->poke))
        if (pthread_cond_timedwait(&p->wake, &p->lock, &until) != 0)
            break;
    atomic_store(&p->poke, 0);
    pthread_mutex_unlock(&p->lock);
}

static void *publisher(void *arg)
{
    pub_t pub = {.p = arg, .existing = json_object(), .problems = json_object()};
    char err[GS_PLUGIN_ERR_MAX];
    if (pub.existing == NULL || gs__kapi_open(&pub.p->cfg.api, &pub.api) != 0) {
        gs_error("the publisher cannot start: out of memory");
        json_decref(pub.existing);
        return NULL;
    }
    long backoff = 500;
    unsigned long passes = 0;
    while (!atomic_load(&pub.p->stop)) {
        int result = pass(&pub, err, sizeof(err));
        /* (Counted at debug level: a test says "nothing was written" after passes, not a sleep.) */
        gs_debug("ResourceSlices: pass %lu done (%s)", ++passes, result == 0 ? "ok" : "failed");
        if (result != 0 && strcmp(err, pub.last_error) != 0)
            gs_warn("ResourceSlices: %s (retrying)", err);
        else if (result == 0 && pub.last_error[0] != '\0')
            gs_info("ResourceSlices: publishing again");
        snprintf(pub.last_error, sizeof(pub.last_error), "%s", result != 0 ? err : "");
        backoff = result != 0 ? (backoff * 2 > 30000 ? 30000 : backoff * 2) : 500;
        wait_next(pub.p,
                  result != 0 && backoff < pub.p->cfg.resync_ms ? backoff : pub.p->cfg.resync_ms);
    }
    gs__kapi_close(pub.api);
    json_decref(pub.existing);
    json_decref(pub.owner);
    json_decref(pub.problems);
    return NULL;
}

int gs__publish_start(gs__plugin_t *p, pthread_t *thread)
{
    return -pthread_create(thread, NULL, publisher, p);
}

void gs__publish_relist(gs__plugin_t *p)
{
    atomic_store(&p->relist, 1);
    gs__publish_poke(p);
}

void gs__publish_poke(gs__plugin_t *p)
{
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->poke, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
}
