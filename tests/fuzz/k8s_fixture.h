/* SPDX-License-Identifier: Apache-2.0 */
/* A small cluster for the Kubernetes fuzz targets: two GPU nodes (one with a share taken), a
 * CPU node, and a pending claim; the model built from it (tests/fuzz/fuzz_*.c). */
#ifndef GS_FUZZ_K8S_FIXTURE_H
#define GS_FUZZ_K8S_FIXTURE_H

#include "model.h"

#include <stdlib.h>

#define FIXTURE_DEVICE(i)                                                                          \
    "{\"name\":\"gpu-" #i "\",\"attributes\":{\"uuid\":{\"string\":\"GPU-" #i "\"},"               \
    "\"productName\":{\"string\":\"H100\"},\"mode\":{\"string\":\"shared\"},\"index\":{"           \
    "\"int\":" #i                                                                                  \
    "}},\"capacity\":{\"memory\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"80Gi\","     \
    "\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}}},\"compute\":{\"value\":\"100\","          \
    "\"requestPolicy\":{\"default\":\"100\",\"validRange\":{\"min\":\"1\",\"step\":\"1\"}}}},"     \
    "\"allowMultipleAllocations\":true}"

static const char *const fixture_objects[][2] = {
    {"n", "{\"metadata\":{\"name\":\"a\"},\"status\":{\"allocatable\":{\"cpu\":\"32\","
          "\"memory\":\"128Gi\"}}}"},
    {"n", "{\"metadata\":{\"name\":\"b\"},\"status\":{\"allocatable\":{\"cpu\":\"64\","
          "\"memory\":\"256Gi\"}}}"},
    {"n", "{\"metadata\":{\"name\":\"c\"},\"status\":{\"allocatable\":{\"cpu\":\"16\"}}}"},
    {"s", "{\"metadata\":{\"name\":\"a-gpu\"},\"spec\":{\"driver\":\"gpu.gpushare.io\","
          "\"nodeName\":\"a\",\"pool\":{\"name\":\"a\",\"generation\":1,\"resourceSliceCount\":1},"
          "\"devices\":[" FIXTURE_DEVICE(0) "," FIXTURE_DEVICE(1) "]}}"},
    {"s", "{\"metadata\":{\"name\":\"b-gpu\"},\"spec\":{\"driver\":\"gpu.gpushare.io\","
          "\"nodeName\":\"b\",\"pool\":{\"name\":\"b\",\"generation\":1,\"resourceSliceCount\":1},"
          "\"devices\":[" FIXTURE_DEVICE(0) "," FIXTURE_DEVICE(1) "]}}"},
    {"c", "{\"metadata\":{\"name\":\"busy\",\"namespace\":\"ml\"},\"spec\":{\"devices\":"
          "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\","
          "\"capacity\":{\"requests\":{\"memory\":\"40Gi\",\"compute\":\"50\"}}}}]}},\"status\":"
          "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
          "\"gpu.gpushare.io\",\"pool\":\"a\",\"device\":\"gpu-0\",\"consumedCapacity\":"
          "{\"memory\":\"40Gi\",\"compute\":\"50\"}}]}}}}"},
    {"c", "{\"metadata\":{\"name\":\"want\",\"namespace\":\"ml\"},\"spec\":{\"devices\":"
          "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\","
          "\"capacity\":{\"requests\":{\"memory\":\"20Gi\",\"compute\":\"30\"}}}}]}}}"},
};

static gs_k8s_kind_t fixture_kind(char c)
{
    return c == 'n'   ? GS_K8S_NODES
           : c == 's' ? GS_K8S_SLICES
           : c == 'c' ? GS_K8S_CLAIMS
                      : GS_K8S_PODS;
}

/* A model of the fixture, listed except for `open_kind` (GS_K8S_KINDS: all listed), whose LIST
 * the caller finishes. Learns no workload and assumes nothing, so that calls do not
 * accumulate state. Aborts on failure (a fuzz target has no other way out). */
static gs_k8s_model_t *fixture_model(gs_k8s_kind_t open_kind)
{
    static const gs_place_pod_t pods[] = {
        {.name = "p", .cpu_milli = 4000, .mem_mib = 1024, .num_gpu = 1, .gpu_milli = 300}};
    gs_place_pods_t workload = {.pods = (gs_place_pod_t *)pods, .count = 1};
    gs_k8s_model_opts_t o = {.policy = GS_PLACE_GPUSHARE, .seed = 1, .workload = &workload};
    gs_k8s_model_t *m = NULL;
    char err[GS_K8S_ERR_MAX];
    if (gs_k8s_model_new(&o, &m, err, sizeof(err)) != 0)
        abort();
    for (int k = 0; k < GS_K8S_KINDS; k++)
        gs_k8s_model_list_begin(m, (gs_k8s_kind_t)k);
    for (size_t i = 0; i < sizeof(fixture_objects) / sizeof(fixture_objects[0]); i++) {
        json_t *obj = json_loads(fixture_objects[i][1], 0, NULL);
        if (obj == NULL || gs_k8s_model_apply(m, fixture_kind(fixture_objects[i][0][0]),
                                              GS_K8S_ADDED, obj, err, sizeof(err)) != 0)
            abort();
        json_decref(obj);
    }
    for (int k = 0; k < GS_K8S_KINDS; k++) {
        if (k != (int)open_kind)
            gs_k8s_model_list_end(m, (gs_k8s_kind_t)k);
    }
    return m;
}

#endif
