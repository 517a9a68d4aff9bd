/* SPDX-License-Identifier: Apache-2.0 */
/* NodePrepareResources and NodeUnprepareResources for one claim (plugin.h): the claim from the
 * API server, its plan against gpushared's view, the keyed lease, the CDI spec, the record.
 *
 * Order and undo: the record is written before the lease is asked for (so that an unprepare
 * after a crash finds the key), the CDI spec after the lease (it holds the lease's socket and
 * environment); a failure undoes what this call made, in reverse. A lease that existed before
 * the call (a retried prepare: the same key gives the same lease) is kept when a later step
 * fails: the kubelet will call again. */
#include "plugin.h"

#include "gpushare/cdi.h"
#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLAIMS_PATH "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s"

/* The line of a namespace and name that are not Kubernetes names: as much of them as fits,
 * their control characters escaped, so that the line stays one line. */
static int refused_name(const char *ns, const char *name, char *err, size_t errlen)
{
    char ns_shown[65], name_shown[254];
    gs_display_escape(ns_shown, sizeof(ns_shown), ns);
    gs_display_escape(name_shown, sizeof(name_shown), name);
    return gs_fail(err, errlen, GS_EINVAL, "claim %s/%s: not a namespace and name", ns_shown,
                   name_shown);
}

/* The line of a UID that cannot name a record: its first characters, escaped. */
static int malformed_uid(const char *ns, const char *name, const char *uid, char *err,
                         size_t errlen)
{
    char shown[65];
    gs_display_escape(shown, sizeof(shown), uid);
    return gs_fail(err, errlen, GS_EINVAL, "claim %s/%s: malformed UID \"%s\"", ns, name, shown);
}

/* Reads the claim from the API server: *claim, or a line naming the claim and the failure. */
static int get_claim(gs__plugin_t *p, const char *ns, const char *name, json_t **claim, char *err,
                     size_t errlen)
{
    char path[512], why[GS_PLUGIN_ERR_MAX];
    long status = 0;
    *claim = NULL;
    snprintf(path, sizeof(path), CLAIMS_PATH, ns, name);
    int result = gs__kapi_call(p->api, "GET", path, NULL, &status, claim, why, sizeof(why));
    if (result != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: cannot read it: %s", ns, name, why);
    if (status == 200 && json_is_object(*claim))
        return 0;
    gs__kapi_status_text(status, *claim, why, sizeof(why));
    json_decref(*claim);
    *claim = NULL;
    return gs_fail(err, errlen,
                   status == 404   ? GS_ENOENT
                   : status == 403 ? GS_EACCES
                                   : GS_EIO,
                   "claim %s/%s: the API server (%s) answered %s", ns, name,
                   gs__kapi_server(p->api), why);
}

/* "4Gi" */
static void bytes_text(uint64_t bytes, char *buf, size_t len)
{
    if (gs_k8s_qty_format_bytes(bytes - bytes % (1 << 20), buf, len) < 0)
        snprintf(buf, len, "?");
}

/* The line of a claim that does not fit: what it needs and what was free on its GPUs. */
static int no_fit(const gs__plan_t *plan, const gs__node_t *node, const char *why, char *err,
                  size_t errlen)
{
    char need[64] = "", free_text[256] = "", mem[32];
    const gs_lease_request_t *r = &plan->lease;
    if (r->kind == GS_LEASE_MEMORY) {
        bytes_text(r->memory, mem, sizeof(mem));
        snprintf(need, sizeof(need), "%s and %u %% of compute", mem, r->compute);
    } else if (r->kind == GS_LEASE_MIG) {
        snprintf(need, sizeof(need), "a MIG %s instance", r->mig_profile);
    } else {
        snprintf(need, sizeof(need), "%u whole GPU%s", r->gpus, r->gpus == 1 ? "" : "s");
    }
    for (size_t i = 0, n = 0; i < plan->ndevices && n < sizeof(free_text); i++) {
        const gs__node_gpu_t *g = gs__node_gpu(node, plan->devices[i].gpu);
        if (g == NULL)
            continue;
        bytes_text(g->free, mem, sizeof(mem));
        n += (size_t)snprintf(free_text + n, sizeof(free_text) - n,
                              "%s%s had %s and %u %% of compute free (%u lease%s)", n ? "; " : "",
                              plan->devices[i].device, mem, 100 - g->compute_leased, g->leases,
                              g->leases == 1 ? "" : "s");
    }
    return gs_fail(err, errlen, GS_ENOFIT, "claim %s/%s: does not fit: it needs %s; %s (%s)",
                   plan->ns, plan->name, need, free_text, why);
}

/* The CDI device IDs of a prepared plan. */
static void cdi_ids(const gs__plugin_t *p, const gs__plan_t *plan, const gs__node_t *node,
                    const char *cdi, struct gs__prepared_device *d)
{
    d->ncdi = 0;
    snprintf(d->cdi[d->ncdi++], sizeof(d->cdi[0]), "%s=%s", GS_CDI_KIND, cdi);
    if (p->cfg.gpusim_cdi[0] != '\0')
        snprintf(d->cdi[d->ncdi++], sizeof(d->cdi[0]), "%s=%s", GS_CDI_GPUSIM_KIND,
                 p->cfg.gpusim_cdi);
    for (size_t i = 0; p->cfg.driver_cdi[0] != '\0' && i < plan->ndevices; i++) {
        const gs__node_gpu_t *g = gs__node_gpu(node, plan->devices[i].gpu);
        if (g != NULL)
            snprintf(d->cdi[d->ncdi++], sizeof(d->cdi[0]), "%s=%s", p->cfg.driver_cdi, g->uuid);
    }
}

/* The response's devices: each device of the plan with the CDI IDs of the claim's lease. */
static void prepared(const gs__plugin_t *p, const gs__plan_t *plan, const gs__node_t *node,
                     const char *cdi, gs__prepared_t *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < plan->ndevices; i++) {
        struct gs__prepared_device *d = &out->devices[out->n++];
        snprintf(d->request, sizeof(d->request), "%s", plan->request);
        snprintf(d->device, sizeof(d->device), "%s", plan->devices[i].device);
        snprintf(d->share_id, sizeof(d->share_id), "%s", plan->devices[i].share_id);
        cdi_ids(p, plan, node, cdi, d);
    }
}

/* Writes the lease's CDI spec (again, when a retried prepare finds it). */
static int write_spec(const gs__plugin_t *p, const gs__record_t *rec, const gs__gsd_lease_t *lease,
                      char *err, size_t errlen)
{
    gs_cdi_lease_t spec_of = {
        .name = rec->cdi,
        .key = rec->key,
        .env = lease->env,
        .socket = lease->socket,
        .shim = p->cfg.shim[0] != '\0' ? p->cfg.shim : lease->preload,
        .gpushare = p->cfg.gpushare,
        /* the hooks run with the container runtime's environment, not the plugin's */
        .main_socket = gs_client_socket_path(p->cfg.gpushared[0] != '\0' ? p->cfg.gpushared : NULL),
        .keep_lease = 1, /* the claim's lease lives until NodeUnprepareResources, which may
                          * outlive a container (restarts, several containers of a pod) */
    };
    char why[GS_PLUGIN_ERR_MAX];
    json_t *spec = gs_cdi_lease_spec(&spec_of, why, sizeof(why));
    int result = spec == NULL ? GS_EINVAL : 0;
    if (result == 0)
        result = gs_cdi_remove(p->cfg.cdi_dir, GS_CDI_KIND, rec->cdi, why, sizeof(why));
    if (result == 0)
        result = gs_cdi_write(p->cfg.cdi_dir, spec, why, sizeof(why));
    json_decref(spec);
    if (result != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: its CDI spec: %s", rec->ns, rec->name,
                       why);
    return 0;
}

/* Acquires the lease and writes the spec; undoes its own steps when one fails. */
static int make(gs__plugin_t *p, const gs__plan_t *plan, const gs__node_t *node, gs__record_t *rec,
                char *err, size_t errlen)
{
    gs__gsd_lease_t lease = {0};
    gs__record_t before;
    char why[GS_PLUGIN_ERR_MAX], state[16];
    /* A record from an earlier call stays whatever happens now: its lease may exist. */
    int had = gs__record_read(p->records, rec->uid, &before, why, sizeof(why)) != GS_ENOENT;
    int result = gs__record_write(p->records, rec, err, errlen);
    if (result != 0)
        return result;
    result = gs__gsd_acquire(p->cfg.gpushared, plan, &lease, why, sizeof(why));
    if (result == GS_ENOFIT)
        result = no_fit(plan, node, why, err, errlen);
    else if (result != 0)
        result = gs_fail(err, errlen, result, "claim %s/%s: %s", plan->ns, plan->name, why);
    if (result == 0 && (result = write_spec(p, rec, &lease, err, errlen)) != 0 && !lease.existing &&
        gs__gsd_release(p->cfg.gpushared, plan->lease.key, state, sizeof(state), why,
                        sizeof(why)) != 0)
        gs_warn("claim %s/%s: its lease stays: %s", plan->ns, plan->name, why);
    if (result == 0) {
        rec->prepared = 1;
        rec->lease = lease.id;
        result = gs__record_write(p->records, rec, err, errlen);
    }
    if (result != 0 && !had && !lease.existing &&
        gs__record_remove(p->records, rec->uid, why, sizeof(why)) != 0)
        gs_warn("%s", why);
    if (result == 0)
        gs_info("claim %s/%s (%s): lease %llu%s, CDI %s=%s", plan->ns, plan->name, plan->lease.key,
                (unsigned long long)lease.id, lease.existing ? " (prepared already)" : "",
                GS_CDI_KIND, rec->cdi);
    json_decref(lease.env);
    return result;
}

int gs__prepare(gs__plugin_t *p, const char *ns, const char *uid, const char *name,
                gs__prepared_t *out, char *err, size_t errlen)
{
    json_t *claim = NULL;
    gs__node_t *node = malloc(sizeof(*node));
    gs__plan_t *plan = malloc(sizeof(*plan));
    char why[GS_PLUGIN_ERR_MAX];
    memset(out, 0, sizeof(*out));
    int result =
        node == NULL || plan == NULL ? gs_fail(err, errlen, GS_ENOMEM, "out of memory") : 0;
    if (result == 0 && (!gs__k8s_name_ok(ns, 63, 0) || !gs__k8s_name_ok(name, 253, 1)))
        result = refused_name(ns, name, err, errlen);
    if (result == 0 && !gs__record_uid_ok(uid))
        result = malformed_uid(ns, name, uid, err, errlen);
    if (result == 0)
        result = get_claim(p, ns, name, &claim, err, errlen);
    if (result == 0 && (result = gs__gsd_node(p->cfg.gpushared, node, why, sizeof(why))) != 0)
        gs_fail(err, errlen, result, "claim %s/%s: %s", ns, name, why);
    if (result == 0)
        result = gs__plan_claim(claim, uid, p->cfg.node, node, plan, err, errlen);
    if (result == 0 && p->cfg.lease_user[0] != '\0') {
        plan->lease.owner.set = 1;
        memcpy(plan->lease.owner.user, p->cfg.lease_user, sizeof(plan->lease.owner.user));
    }
    if (result == 0 && plan->ndevices > 0) {
        gs__record_t rec = {.prepared = 0};
        snprintf(rec.uid, sizeof(rec.uid), "%s", uid);
        snprintf(rec.ns, sizeof(rec.ns), "%s", plan->ns);
        snprintf(rec.name, sizeof(rec.name), "%s", plan->name);
        snprintf(rec.key, sizeof(rec.key), "%s", plan->lease.key);
        snprintf(rec.cdi, sizeof(rec.cdi), "k8s-%s", uid);
        result = make(p, plan, node, &rec, err, errlen);
        if (result == 0)
            prepared(p, plan, node, rec.cdi, out);
    }
    json_decref(claim);
    free(plan);
    free(node);
    return result;
}

int gs__unprepare(gs__plugin_t *p, const char *ns_in, const char *uid, const char *name_in,
                  char *err, size_t errlen)
{
    gs__record_t rec;
    char why[GS_PLUGIN_ERR_MAX], state[16] = "none", ns[65], name[254];
    /* (the kubelet's names, which only the lines below show, never checked: escaped) */
    gs_display_escape(ns, sizeof(ns), ns_in);
    gs_display_escape(name, sizeof(name), name_in);
    if (!gs__record_uid_ok(uid))
        return malformed_uid(ns, name, uid, err, errlen);
    int result = gs__record_read(p->records, uid, &rec, why, sizeof(why));
    if (result == GS_ENOENT)
        return 0; /* never prepared here, or unprepared already */
    if (result != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: %s", ns, name, why);
    if ((result = gs__gsd_release(p->cfg.gpushared, rec.key, state, sizeof(state), why,
                                  sizeof(why))) != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: cannot release its lease: %s", ns, name,
                       why);
    if ((result = gs_cdi_remove(p->cfg.cdi_dir, GS_CDI_KIND, rec.cdi, why, sizeof(why))) != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: cannot remove its CDI spec: %s", ns, name,
                       why);
    if ((result = gs__record_remove(p->records, uid, why, sizeof(why))) != 0)
        return gs_fail(err, errlen, result, "claim %s/%s: %s", ns, name, why);
    gs_info("claim %s/%s (%s): unprepared, lease %s", ns, name, rec.key, state);
    return 0;
}
