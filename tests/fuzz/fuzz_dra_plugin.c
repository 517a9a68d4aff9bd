/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what gpushare-k8s reads from outside, on arbitrary bytes. The first byte
 * chooses the parser, the rest is its input:
 *   0  a ResourceClaim from the API server, planned against a fixed node
 *   1  gpushared's status, read into the node and published as slices (both orders)
 *   2  GpuConfig parameters
 *   3  a claim's record file
 *   4  a kubeconfig
 *   5  the kubelet's NodePrepareResourcesRequest, 6 NodeUnprepareResourcesRequest,
 *   7  RegistrationStatus (protobuf-c's decoders of the messages src/k8s/proto defines)
 * A refusal must say why; what parses must hold its invariants (a plan names its claim and a
 * key, slices emit as JSON). */
#include "dra.pb-c.h"
#include "plugin.h"
#include "pluginregistration.pb-c.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char NODE[] =
    "{\"gpus\":[{\"index\":0,\"uuid\":\"GPU-a\",\"name\":\"H100\",\"mode\":\"shared\","
    "\"memory_leasable\":85899345920,\"memory_free\":85899345920},"
    "{\"index\":1,\"uuid\":\"GPU-b\",\"name\":\"H100\",\"mode\":\"mig\",\"mig\":{\"enabled\":true,"
    "\"compute_slices\":7,\"memory_slots\":8,\"profiles\":[{\"name\":\"3g.40gb\",\"compute\":3,"
    "\"slots\":4,\"starts\":[0,4],\"memory\":42949672960}]}}]}";

static void plan(json_t *obj, const gs__node_t *node)
{
    gs__plan_t p;
    char err[GS_PLUGIN_ERR_MAX] = "";
    int result = gs__plan_claim(obj, NULL, "n1", node, &p, err, sizeof(err));
    if (result != 0 && (strncmp(err, "claim ", 6) != 0 || p.ndevices != 0))
        abort();
    if (result == 0 && p.ndevices > 0 &&
        (strncmp(p.lease.key, "k8s/", 4) != 0 || p.lease.n_pinned != p.ndevices))
        abort();
}

static void slices(json_t *obj)
{
    gs__node_t node;
    char err[GS_PLUGIN_ERR_MAX] = "";
    if (gs__node_parse(obj, &node, err, sizeof(err)) != 0) {
        if (err[0] == '\0')
            abort();
        return;
    }
    for (int how = GS_PLACE_ORDER_INDEX; how <= GS_PLACE_ORDER_TIGHTEST; how++) {
        gs_dra_slice_t s[GS_MAX_DEVICES + 2];
        size_t n = 0;
        if (gs__node_slices(&node, "n1", 1, (gs_place_order_t)how, s, GS_MAX_DEVICES + 2, &n) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            json_t *j = gs_dra_slice_json(&s[i]);
            if (j == NULL)
                abort();
            json_decref(j);
            gs_dra_slice_free(&s[i]);
        }
    }
}

static void protobuf(int which, const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = NULL;
    if (which == 5)
        m = (ProtobufCMessage *)
            k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__unpack(NULL, size,
                                                                                         data);
    else if (which == 6)
        m = (ProtobufCMessage *)
            k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__unpack(
                NULL, size, data);
    else
        m = (ProtobufCMessage *)pluginregistration__registration_status__unpack(NULL, size, data);
    if (m != NULL)
        protobuf_c_message_free_unpacked(m, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gs__node_t node;
    static int init;
    if (!init) {
        json_t *j = json_loads(NODE, 0, NULL);
        gs_log_init("fuzz_dra_plugin", GS_LOG_ERROR);
        if (j == NULL || gs__node_parse(j, &node, NULL, 0) != 0)
            abort();
        json_decref(j);
        init = 1;
    }
    if (size < 1)
        return 0;
    int which = data[0] % 8;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char err[GS_PLUGIN_ERR_MAX] = "";
    if (which >= 5) {
        protobuf(which, data + 1, len);
    } else if (which == 3) {
        gs__record_t r;
        if (gs__record_parse(text, len, &r, err, sizeof(err)) == 0 && !gs__record_uid_ok(r.uid))
            abort();
    } else if (which == 4) {
        gs__kapi_cfg_t cfg;
        if (gs__kapi_kubeconfig_parse(text, len, ".", NULL, &cfg, err, sizeof(err)) != 0 &&
            err[0] == '\0')
            abort();
    } else {
        json_t *obj = json_loadb(text, len, 0, NULL);
        gs__gpuconfig_t cfg;
        gs__gpuconfig_init(&cfg);
        if (obj != NULL && which == 0)
            plan(obj, &node);
        else if (obj != NULL && which == 1)
            slices(obj);
        else if (obj != NULL && gs__gpuconfig_apply(&cfg, obj, err, sizeof(err)) != 0 &&
                 err[0] == '\0')
            abort();
        json_decref(obj);
    }
    return 0;
}
