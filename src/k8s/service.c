/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's two gRPC services as gpushare-k8s serves them (plugin.h, rpc.h): Registration
 * on the plugin registry's socket, DRAPlugin v1 on the plugin's own; each claim of a request is
 * prepared or unprepared on its own and answered with its own error. */
#include "service.h"

#include "dra.pb-c.h"
#include "pluginregistration.pb-c.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Pluginregistration__PluginInfo info_t;
typedef Pluginregistration__RegistrationStatus reg_status_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim claim_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device device_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest prep_req_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse prep_resp_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry
    prep_entry_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse prep_one_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest unprep_req_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse unprep_resp_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry
    unprep_entry_t;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse unprep_one_t;

#define DRA_SERVICE "v1.DRAPlugin" /* the name the kubelet knows the service by */

/* ---- Registration ---- */

static int get_info(void *ctx, const ProtobufCMessage *request, ProtobufCBuffer *out, char *msg,
                    size_t msglen)
{
    (void)request, (void)msg, (void)msglen;
    const gs__service_t *s = ctx;
    char *versions[] = {DRA_SERVICE};
    info_t info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
    info.type = "DRAPlugin";
    info.name = GS_DRA_DRIVER;
    info.endpoint = (char *)s->endpoint;
    info.n_supported_versions = 1;
    info.supported_versions = versions;
    pluginregistration__plugin_info__pack_to_buffer(&info, out);
    return GS_RPC_OK;
}

static int notify(void *ctx, const ProtobufCMessage *request, ProtobufCBuffer *out, char *msg,
                  size_t msglen)
{
    gs__service_t *s = ctx;
    const reg_status_t *st = (const reg_status_t *)request;
    Pluginregistration__RegistrationStatusResponse resp =
        PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
    atomic_store(&s->registered, st->plugin_registered ? 1 : -1);
    if (!st->plugin_registered) {
        gs_error("the kubelet refused the registration of %s: %s", GS_DRA_DRIVER, st->error);
        snprintf(msg, msglen, "registration failed: %s", st->error);
        return GS_RPC_UNKNOWN;
    }
    gs_info("registered with the kubelet as %s (%s at %s)", GS_DRA_DRIVER, DRA_SERVICE,
            s->endpoint);
    if (s->plugin->cfg.publish)
        gs__publish_relist(s->plugin); /* a starting kubelet deletes the node's slices */
    pluginregistration__registration_status_response__pack_to_buffer(&resp, out);
    return GS_RPC_OK;
}

/* ---- DRAPlugin ---- */

/* Fills one claim's answer from a successful prepare (pointers into prep). */
static int prep_devices(const gs__prepared_t *prep, const char *pool, prep_one_t *one)
{
    one->n_devices = prep->n;
    if (prep->n == 0)
        return 0;
    device_t **list = calloc(prep->n, sizeof(*list));
    device_t *devs = calloc(prep->n, sizeof(*devs));
    char **names = calloc(prep->n, sizeof(*names));
    char **ids = calloc(prep->n * (2 + GS_MAX_DEVICES), sizeof(*ids));
    if (list == NULL || devs == NULL || names == NULL || ids == NULL) {
        free(list), free(devs), free(names), free(ids);
        one->n_devices = 0;
        return GS_ENOMEM;
    }
    for (size_t i = 0; i < prep->n; i++) {
        const struct gs__prepared_device *d = &prep->devices[i];
        k8s__io__kubelet__pkg__apis__dra__v1__device__init(&devs[i]);
        names[i] = (char *)d->request;
        devs[i].n_request_names = 1;
        devs[i].request_names = &names[i];
        devs[i].pool_name = (char *)pool;
        devs[i].device_name = (char *)d->device;
        devs[i].share_id = (char *)d->share_id;
        devs[i].n_cdi_device_ids = d->ncdi;
        devs[i].cdi_device_ids = &ids[i * (2 + GS_MAX_DEVICES)];
        for (size_t k = 0; k < d->ncdi; k++)
            devs[i].cdi_device_ids[k] = (char *)d->cdi[k];
        list[i] = &devs[i];
    }
    one->devices = list;
    return 0;
}

static void prep_devices_free(prep_one_t *one)
{
    if (one->n_devices == 0)
        return;
    free(one->devices[0]->request_names);
    free(one->devices[0]->cdi_device_ids);
    free(one->devices[0]);
    free(one->devices);
}

/* Everything one claim's answer needs, kept until the response is packed. */
typedef struct prep_slot {
    prep_entry_t entry;
    prep_one_t one;
    gs__prepared_t prep;
    char err[GS_PLUGIN_ERR_MAX];
} prep_slot_t;

static void prepare_claim(gs__service_t *s, const claim_t *c, prep_slot_t *slot)
{
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__init(
        &slot->entry);
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__init(&slot->one);
    slot->entry.key = c->uid;
    slot->entry.value = &slot->one;
    int result = gs__prepare(s->plugin, c->namespace_, c->uid, c->name, &slot->prep, slot->err,
                             sizeof(slot->err));
    if (result == 0 && prep_devices(&slot->prep, s->plugin->cfg.node, &slot->one) != 0)
        result = gs_fail(slot->err, sizeof(slot->err), GS_ENOMEM, "claim %s/%s: out of memory",
                         c->namespace_, c->name);
    if (result != 0) {
        gs_warn("NodePrepareResources: %s", slot->err);
        slot->one.error = slot->err;
    }
}

static int node_prepare(void *ctx, const ProtobufCMessage *request, ProtobufCBuffer *out, char *msg,
                        size_t msglen)
{
    gs__service_t *s = ctx;
    const prep_req_t *req = (const prep_req_t *)request;
    prep_resp_t resp = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
    prep_slot_t *slots = calloc(req->n_claims ? req->n_claims : 1, sizeof(*slots));
    prep_entry_t **entries = calloc(req->n_claims ? req->n_claims : 1, sizeof(*entries));
    if (slots == NULL || entries == NULL) {
        free(slots), free(entries);
        snprintf(msg, msglen, "out of memory");
        return GS_RPC_INTERNAL;
    }
    for (size_t i = 0; i < req->n_claims; i++) {
        prepare_claim(s, req->claims[i], &slots[i]);
        entries[i] = &slots[i].entry;
    }
    resp.n_claims = req->n_claims;
    resp.claims = entries;
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__pack_to_buffer(&resp,
                                                                                          out);
    for (size_t i = 0; i < req->n_claims; i++)
        prep_devices_free(&slots[i].one);
    free(entries);
    free(slots);
    if (req->n_claims > 0 && s->plugin->cfg.publish)
        gs__publish_poke(s->plugin);
    return GS_RPC_OK;
}

typedef struct unprep_slot {
    unprep_entry_t entry;
    unprep_one_t one;
    char err[GS_PLUGIN_ERR_MAX];
} unprep_slot_t;

static int node_unprepare(void *ctx, const ProtobufCMessage *request, ProtobufCBuffer *out,
                          char *msg, size_t msglen)
{
    gs__service_t *s = ctx;
    const unprep_req_t *req = (const unprep_req_t *)request;
    unprep_resp_t resp =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
    unprep_slot_t *slots = calloc(req->n_claims ? req->n_claims : 1, sizeof(*slots));
    unprep_entry_t **entries = calloc(req->n_claims ? req->n_claims : 1, sizeof(*entries));
    if (slots == NULL || entries == NULL) {
        free(slots), free(entries);
        snprintf(msg, msglen, "out of memory");
        return GS_RPC_INTERNAL;
    }
    for (size_t i = 0; i < req->n_claims; i++) {
        const claim_t *c = req->claims[i];
        unprep_slot_t *slot = &slots[i];
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__init(
            &slot->entry);
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__init(&slot->one);
        slot->entry.key = c->uid;
        slot->entry.value = &slot->one;
        if (gs__unprepare(s->plugin, c->namespace_, c->uid, c->name, slot->err,
                          sizeof(slot->err)) != 0) {
            gs_warn("NodeUnprepareResources: %s", slot->err);
            slot->one.error = slot->err;
        }
        entries[i] = &slot->entry;
    }
    resp.n_claims = req->n_claims;
    resp.claims = entries;
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__pack_to_buffer(&resp,
                                                                                            out);
    free(entries);
    free(slots);
    if (req->n_claims > 0 && s->plugin->cfg.publish)
        gs__publish_poke(s->plugin);
    return GS_RPC_OK;
}

/* ---- the two servers ---- */

int gs__service_start(gs__service_t *s, char *err, size_t errlen)
{
    const ProtobufCServiceDescriptor *dra =
        &k8s__io__kubelet__pkg__apis__dra__v1__draplugin__descriptor;
    const ProtobufCServiceDescriptor *reg = &pluginregistration__registration__descriptor;
    gs__rpc_method_t dra_methods[] = {
        {dra, "NodePrepareResources", node_prepare, s},
        {dra, "NodeUnprepareResources", node_unprepare, s},
    };
    gs__rpc_method_t reg_methods[] = {
        {reg, "GetInfo", get_info, s},
        {reg, "NotifyRegistrationStatus", notify, s},
    };
    /* The DRA service first: the kubelet calls it as soon as it sees the registration socket. */
    int result = gs__rpc_serve(s->dra_socket, dra_methods, 2, &s->dra, err, errlen);
    if (result == 0)
        result = gs__rpc_serve(s->reg_socket, reg_methods, 2, &s->reg, err, errlen);
    if (result != 0)
        gs__service_stop(s);
    return result;
}

void gs__service_stop(gs__service_t *s)
{
    /* The registration socket first: its removal is how the kubelet learns the plugin left. */
    gs__rpc_stop(s->reg);
    s->reg = NULL;
    gs__rpc_stop(s->dra);
    s->dra = NULL;
}
