/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of src/k8s/k8s_json.c: Kubernetes quantities, Nodes, Pods, ExtenderArgs and the
 * extender's answers, with exact values and texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "k8s.h"

static int64_t milli(const char *text)
{
    int64_t v = -12345;
    assert_int_equal(gs_k8s_qty_milli(text, &v), 0);
    return v;
}

static void test_quantity(void **state)
{
    (void)state;
    assert_int_equal(milli("500m"), 500);
    assert_int_equal(milli("12"), 12000);
    assert_int_equal(milli("1.5"), 1500);
    assert_int_equal(milli("0.1m"), 1); /* rounded up, as MilliValue() */
    assert_int_equal(milli("16Gi"), INT64_C(16) * 1073741824 * 1000);
    assert_int_equal(milli("4G"), INT64_C(4000000000000));
    assert_int_equal(milli("100k"), 100000000);
    assert_int_equal(milli("1e3"), 1000000);
    assert_int_equal(milli("1E3"), 1000000);
    assert_int_equal(milli("5P"), INT64_C(5000000000000000000));
    assert_int_equal(milli("-2"), -2000);
    assert_int_equal(milli(".5Ki"), 512000);
    assert_int_equal(milli("5."), 5000);
    int64_t v;
    assert_int_equal(gs_k8s_qty_value("1500m", &v), 0);
    assert_int_equal(v, 2);
    assert_int_equal(gs_k8s_qty_value("80Gi", &v), 0);
    assert_int_equal(v, INT64_C(85899345920));
    static const char *const bad[] = {"",       "m",  "1.2.3", "1Ki5", "1KI",  "1 Gi", "1e",
                                      "1e1000", "Gi", "+",     "1x",   "0x10", "1mi"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gs_k8s_qty_milli(bad[i], &v), GS_EINVAL);
    assert_int_equal(gs_k8s_qty_milli("10Ei", &v), GS_ERANGE);
    assert_int_equal(gs_k8s_qty_milli("5E", &v), GS_ERANGE); /* 5e21 thousandths */
    assert_int_equal(gs_k8s_qty_milli("9223372036854775807", &v), GS_ERANGE);
    char buf[32];
    assert_int_equal(gs_k8s_qty_format_bytes(UINT64_C(80) << 30, buf, sizeof(buf)), 4);
    assert_string_equal(buf, "80Gi");
    gs_k8s_qty_format_bytes(UINT64_C(1536) << 20, buf, sizeof(buf));
    assert_string_equal(buf, "1536Mi");
    gs_k8s_qty_format_bytes(4097, buf, sizeof(buf));
    assert_string_equal(buf, "4097");
    gs_k8s_qty_format_bytes(0, buf, sizeof(buf));
    assert_string_equal(buf, "0");
    assert_int_equal(gs_k8s_qty_format_bytes(UINT64_C(80) << 30, buf, 4), GS_ENOSPC);
}

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *obj = json_loads(text, 0, &e);
    assert_non_null(obj);
    return obj;
}

static void test_node(void **state)
{
    (void)state;
    gs_k8s_node_t n;
    char err[GS_K8S_ERR_MAX];
    json_t *obj = load("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":"
                       "{\"cpu\":\"63500m\",\"memory\":\"250Gi\",\"pods\":\"110\"}}}");
    assert_int_equal(gs_k8s_node_parse(obj, &n, err, sizeof(err)), 0);
    assert_string_equal(n.name, "n1");
    assert_int_equal(n.cpu_milli, 63500);
    assert_int_equal(n.mem_bytes, UINT64_C(250) << 30);
    json_decref(obj);
    obj = load("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"-1\"}}}");
    assert_int_equal(gs_k8s_node_parse(obj, &n, err, sizeof(err)), GS_EFORMAT);
    assert_string_equal(err, "cpu is not a quantity");
    json_decref(obj);
    obj = load("{\"metadata\":{}}");
    assert_int_equal(gs_k8s_node_parse(obj, &n, err, sizeof(err)), GS_EFORMAT);
    assert_string_equal(err, "node without a valid metadata.name");
    json_decref(obj);
}

/* Requests as kube-scheduler counts them: containers 2 + 1 CPU, a sidecar 0.5 that runs beside
 * them, an init container of 4 (after the sidecar: 4.5 while it runs), overhead 0.25. */
#define POD                                                                                        \
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u1\"},"                          \
    "\"spec\":{\"nodeName\":\"n1\",\"containers\":["                                               \
    "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}},"            \
    "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"                              \
    "\"initContainers\":["                                                                         \
    "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":"        \
    "\"500m\"}}},"                                                                                 \
    "{\"name\":\"init\",\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"3Gi\"}}}],"        \
    "\"overhead\":{\"cpu\":\"250m\"},"                                                             \
    "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"},"                  \
    "{\"name\":\"other\",\"resourceClaimName\":\"shared\"}]},"                                     \
    "\"status\":{\"phase\":\"Running\",\"resourceClaimStatuses\":"                                 \
    "[{\"name\":\"gpu\",\"resourceClaimName\":\"p-gpu-x7k2q\"}]}}"

static void test_pod(void **state)
{
    (void)state;
    gs_k8s_pod_t p;
    char err[GS_K8S_ERR_MAX];
    json_t *obj = load(POD);
    assert_int_equal(gs_k8s_pod_parse(obj, &p, err, sizeof(err)), 0);
    assert_string_equal(p.ns, "ml");
    assert_string_equal(p.uid, "u1");
    assert_string_equal(p.node, "n1");
    assert_int_equal(p.terminal, 0);
    assert_int_equal(p.cpu_milli, 4750);              /* max(3 + 0.5, 4 + 0.5) + 0.25 */
    assert_int_equal(p.mem_bytes, UINT64_C(3) << 30); /* max(1Gi, 3Gi) */
    assert_int_equal(p.nclaims, 2);
    assert_string_equal(p.claims[0].ref, "gpu");
    assert_string_equal(p.claims[0].claim, "p-gpu-x7k2q");
    assert_string_equal(p.claims[1].claim, "shared");
    json_decref(obj);
    obj = load("{\"metadata\":{\"name\":\"q\",\"uid\":\"u2\"},\"spec\":{\"resourceClaims\":"
               "[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"}]},"
               "\"status\":{\"phase\":\"Succeeded\"}}");
    assert_int_equal(gs_k8s_pod_parse(obj, &p, err, sizeof(err)), 0);
    assert_string_equal(p.ns, "default");
    assert_string_equal(p.claims[0].claim, ""); /* the template's claim is not named yet */
    assert_int_equal(p.terminal, 1);
    json_decref(obj);
    obj = load("{\"metadata\":{\"name\":\"q\"}}");
    assert_int_equal(gs_k8s_pod_parse(obj, &p, err, sizeof(err)), GS_EFORMAT);
    json_decref(obj);
}

#define ARGS_POD "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u1\"}}"

static void test_args(void **state)
{
    (void)state;
    gs_k8s_args_t a;
    char err[GS_K8S_ERR_MAX];
    const char *names = "{\"pod\":" ARGS_POD ",\"nodenames\":[\"n1\",\"n2\",\"n3\"]}";
    assert_int_equal(gs_k8s_args_parse(names, strlen(names), &a, err, sizeof(err)), 0);
    assert_int_equal(a.pod_ok, 1);
    assert_int_equal(a.count, 3);
    assert_string_equal(a.names[2], "n3");
    assert_null(a.nodes);
    /* filter: n2 may pass later, n3 never; the passing node by name. */
    gs_k8s_verdict_t v[3] = {GS_K8S_PASS, GS_K8S_FAIL, GS_K8S_UNRESOLVABLE};
    const char *why[3] = {NULL, "full", "no GPUs"};
    char *out = gs_k8s_filter_result(&a, v, why, NULL);
    assert_string_equal(out, "{\"failedNodes\":{\"n2\":\"full\"},\"failedAndUnresolvableNodes\":"
                             "{\"n3\":\"no GPUs\"},\"nodenames\":[\"n1\"]}");
    free(out);
    out = gs_k8s_priority_list(&a, (int64_t[]){10, 3, 0});
    assert_string_equal(out, "[{\"host\":\"n1\",\"score\":10},{\"host\":\"n2\",\"score\":3},"
                             "{\"host\":\"n3\",\"score\":0}]");
    free(out);
    out = gs_k8s_priority_list(&a, NULL);
    assert_string_equal(out, "[{\"host\":\"n1\",\"score\":0},{\"host\":\"n2\",\"score\":0},"
                             "{\"host\":\"n3\",\"score\":0}]");
    free(out);
    gs_k8s_args_free(&a);
    /* nodeCacheCapable false: Node objects, returned filtered as objects. */
    const char *objects = "{\"pod\":{},\"nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                          "{\"metadata\":{\"name\":\"b\"},\"spec\":{}}]}}";
    assert_int_equal(gs_k8s_args_parse(objects, strlen(objects), &a, err, sizeof(err)), 0);
    assert_int_equal(a.pod_ok, 0);
    assert_string_equal(a.pod_err, "pod without a valid name, namespace, uid or node");
    assert_string_equal(a.names[1], "b");
    out = gs_k8s_filter_result(&a, (gs_k8s_verdict_t[]){GS_K8S_FAIL, GS_K8S_PASS},
                               (const char *[]){"full", NULL}, NULL);
    assert_string_equal(out, "{\"failedNodes\":{\"a\":\"full\"},\"nodes\":{\"items\":"
                             "[{\"metadata\":{\"name\":\"b\"},\"spec\":{}}]}}");
    free(out);
    gs_k8s_args_free(&a);
    /* What the real kube-scheduler sends: ExtenderArgs has no json tags, so its Go field names
     * ("Pod", "Nodes": null, "NodeNames"). */
    const char *go = "{\"Pod\":" ARGS_POD ",\"Nodes\":null,\"NodeNames\":[\"n1\",\"n2\"]}";
    assert_int_equal(gs_k8s_args_parse(go, strlen(go), &a, err, sizeof(err)), 0);
    assert_int_equal(a.pod_ok, 1);
    assert_int_equal(a.count, 2);
    assert_string_equal(a.names[1], "n2");
    assert_null(a.nodes);
    gs_k8s_args_free(&a);
}

static void test_args_malformed(void **state)
{
    (void)state;
    gs_k8s_args_t a;
    char err[GS_K8S_ERR_MAX];
    static const char *const bad[] = {"",
                                      "{",
                                      "[]",
                                      "{\"pod\":{}}",
                                      "{\"nodenames\":[1]}",
                                      "{\"nodenames\":[\"\"]}",
                                      "{\"nodes\":{\"items\":[{\"metadata\":{}}]}}",
                                      "{\"nodenames\":\"n1\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(gs_k8s_args_parse(bad[i], strlen(bad[i]), &a, err, sizeof(err)),
                         GS_EFORMAT);
        assert_true(err[0] != '\0');
        assert_int_equal(a.count, 0);
    }
    assert_int_equal(gs_k8s_args_parse("{\"nodenames\":[1]}", 17, &a, err, sizeof(err)),
                     GS_EFORMAT);
    assert_string_equal(err, "candidate node 0 has no valid name");
    char *out = gs_k8s_filter_result(&a, NULL, NULL, "gpushare: malformed");
    assert_string_equal(out, "{\"error\":\"gpushare: malformed\"}");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_pod),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_args_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
