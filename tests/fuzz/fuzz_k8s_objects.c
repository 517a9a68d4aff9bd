/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what the API server sends the extender (Nodes, Pods, ResourceSlices,
 * ResourceClaims, quantities in them) on arbitrary bytes. The first byte chooses the kind and
 * the event; the rest, when it is JSON, goes into a model of a small cluster, which must then
 * still answer a fixed request with valid JSON. Short inputs are also read as quantities. */
#include "extender.h"
#include "k8s_fixture.h"

#include "gpushare/log.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARGS                                                                                       \
    "{\"pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u\"},\"spec\":"         \
    "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"4\"}}}],"             \
    "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"want\"}]}},"                    \
    "\"nodenames\":[\"a\",\"b\",\"c\",\"x\"]}"

static void quantity(const uint8_t *data, size_t size)
{
    char text[64];
    int64_t milli, value;
    if (size >= sizeof(text))
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    int a = gs_k8s_qty_milli(text, &milli), b = gs_k8s_qty_value(text, &value);
    if ((a == 0) != (b == 0) || (a != 0 && a != -22 && a != -34)) /* GS_EINVAL, GS_ERANGE */
        abort();
    if (a == 0 && milli >= 0 && (value < milli / 1000 || value > milli / 1000 + 1))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        gs_log_init("fuzz_k8s_objects", GS_LOG_ERROR);
        init = 1;
    }
    quantity(data, size);
    if (size < 1)
        return 0;
    gs_k8s_kind_t kind = (gs_k8s_kind_t)(data[0] % GS_K8S_KINDS);
    gs_k8s_event_t event = (gs_k8s_event_t)((data[0] / GS_K8S_KINDS) % 3);
    json_t *obj = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    gs_k8s_model_t *m = fixture_model(kind);
    char err[GS_K8S_ERR_MAX] = "";
    if (obj != NULL && gs_k8s_model_apply(m, kind, event, obj, err, sizeof(err)) != 0 &&
        err[0] == '\0')
        abort(); /* a refused object says why */
    gs_k8s_model_list_end(m, kind);
    char *p = gs_ext_prioritize(m, ARGS, strlen(ARGS)), *f = gs_ext_filter(m, ARGS, strlen(ARGS));
    json_t *pj = p != NULL ? json_loads(p, 0, NULL) : NULL,
           *fj = f != NULL ? json_loads(f, 0, NULL) : NULL;
    if (json_array_size(pj) != 4 || !json_is_object(fj))
        abort();
    json_decref(pj);
    json_decref(fj);
    json_decref(obj);
    free(p);
    free(f);
    gs_k8s_model_free(m);
    return 0;
}
