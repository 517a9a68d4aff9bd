/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpushare's DRA device model (src/k8s/dra*.c): ResourceSlice and ResourceClaim
 * JSON as resource.k8s.io/v1 writes them, and the allocator's model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "dra.h"
#include "gpushare/error.h"

#define GI (UINT64_C(1) << 30)

static char *dump(json_t *obj)
{
    assert_non_null(obj);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(obj);
    return text;
}

/* A node of one shared H100 and one exclusive A100. */
static void two_gpus(gs_dra_slice_t *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "n1-gpu.gpushare.io");
    snprintf(s->driver, sizeof(s->driver), GS_DRA_DRIVER);
    snprintf(s->node, sizeof(s->node), "n1");
    snprintf(s->pool, sizeof(s->pool), "n1");
    s->generation = 3;
    s->slice_count = 1;
    s->count = 2;
    s->devices = calloc(2, sizeof(*s->devices));
    gs_dra_device_init(&s->devices[0], 0, "GPU-aaaa", "H100", GS_DRA_SHARED, 80 * GI + 12345,
                       "12.4.0");
    gs_dra_device_init(&s->devices[1], 1, "GPU-bbbb", "A100", GS_DRA_EXCLUSIVE, 40 * GI, "");
}

static void test_slice_json(void **state)
{
    (void)state;
    gs_dra_slice_t s, back;
    two_gpus(&s);
    char *text = dump(gs_dra_slice_json(&s));
    assert_string_equal(
        text,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
        "{\"name\":\"n1-gpu.gpushare.io\"},\"spec\":{\"devices\":["
        "{\"allowMultipleAllocations\":true,\"attributes\":{\"cudaDriverVersion\":{\"version\":"
        "\"12.4.0\"},\"index\":{\"int\":0},\"mode\":{\"string\":\"shared\"},\"productName\":"
        "{\"string\":\"H100\"},\"uuid\":{\"string\":\"GPU-aaaa\"}},\"capacity\":{\"compute\":"
        "{\"requestPolicy\":{\"default\":\"100\",\"validRange\":{\"min\":\"1\",\"step\":\"1\"}},"
        "\"value\":\"100\"},\"memory\":{\"requestPolicy\":{\"default\":\"80Gi\",\"validRange\":"
        "{\"min\":\"1Mi\",\"step\":\"1Mi\"}},\"value\":\"80Gi\"}},\"name\":\"gpu-0\"},"
        "{\"attributes\":{\"index\":{\"int\":1},\"mode\":{\"string\":\"exclusive\"},"
        "\"productName\":{\"string\":\"A100\"},\"uuid\":{\"string\":\"GPU-bbbb\"}},\"capacity\":"
        "{\"compute\":{\"value\":\"100\"},\"memory\":{\"value\":\"40Gi\"}},\"name\":\"gpu-1\"}],"
        "\"driver\":\"gpu.gpushare.io\",\"nodeName\":\"n1\",\"pool\":{\"generation\":3,\"name\":"
        "\"n1\",\"resourceSliceCount\":1}}}");
    json_t *obj = json_loads(text, 0, NULL);
    char err[GS_K8S_ERR_MAX];
    assert_int_equal(gs_dra_slice_parse(obj, &back, err, sizeof(err)), 0);
    assert_int_equal(back.count, 2);
    assert_memory_equal(back.devices, s.devices, 2 * sizeof(gs_dra_device_t));
    assert_int_equal(back.generation, 3);
    assert_string_equal(back.node, "n1");
    json_decref(obj);
    free(text);
    gs_dra_slice_free(&back);
    gs_dra_slice_free(&s);
}

static void test_slice_malformed(void **state)
{
    (void)state;
    gs_dra_slice_t s;
    char err[GS_K8S_ERR_MAX];
    static const char *const bad[] = {
        "{}", "{\"spec\":{\"driver\":\"gpu.gpushare.io\",\"pool\":{}}}",
        "{\"spec\":{\"driver\":\"gpu.gpushare.io\",\"pool\":{\"name\":\"p\"},\"devices\":[{}]}}",
        "{\"spec\":{\"driver\":\"gpu.gpushare.io\",\"pool\":{\"name\":\"p\"},\"devices\":"
        "[{\"name\":\"gpu-0\",\"attributes\":{\"mode\":{\"string\":\"weird\"},\"index\":{\"int\":0}"
        "}}]}}",
        "{\"spec\":{\"driver\":\"gpu.gpushare.io\",\"pool\":{\"name\":\"p\"},\"devices\":"
        "[{\"name\":\"gpu-0\",\"attributes\":{\"mode\":{\"string\":\"shared\"},\"index\":{\"int\":"
        "0}},"
        "\"capacity\":{\"memory\":{\"value\":\"lots\"}}}]}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *obj = json_loads(bad[i], 0, NULL);
        assert_non_null(obj);
        assert_int_equal(gs_dra_slice_parse(obj, &s, err, sizeof(err)), GS_EFORMAT);
        assert_int_equal(s.count, 0);
        json_decref(obj);
    }
    /* Another driver's slice parses with its devices' names only. */
    json_t *obj = json_loads("{\"spec\":{\"driver\":\"gpu.nvidia.com\",\"pool\":{\"name\":\"n\"},"
                             "\"devices\":[{\"name\":\"gpu-0\"}]}}",
                             0, NULL);
    assert_int_equal(gs_dra_slice_parse(obj, &s, err, sizeof(err)), 0);
    assert_string_equal(s.driver, "gpu.nvidia.com");
    assert_string_equal(s.devices[0].name, "gpu-0");
    gs_dra_slice_free(&s);
    json_decref(obj);
}

#define CLAIM                                                                                      \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"    \
    "\"c1\",\"namespace\":\"ml\",\"uid\":\"u-c1\"},\"spec\":{\"devices\":{\"requests\":[{"         \
    "\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"count\":1,"           \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes[\\\"gpu.gpushare.io\\\"]"         \
    ".productName in ['H100', \\\"A100\\\"]\"}},{\"cel\":{\"expression\":\" device.attributes["    \
    "\\\"gpu.gpushare.io\\\"].productName == 'H100' \"}}],\"capacity\":{\"requests\":"             \
    "{\"memory\":\"4Gi\",\"compute\":\"30\"}}}}]}},\"status\":{\"allocation\":{\"devices\":"       \
    "{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n1\","           \
    "\"device\":\"gpu-0\",\"shareID\":\"00000000-0000-4000-8000-000000000001\","                   \
    "\"consumedCapacity\":{\"memory\":\"4Gi\",\"compute\":\"30\"}}]},\"nodeSelector\":"            \
    "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","    \
    "\"values\":[\"n1\"]}]}]}}}}"

static void test_claim_json(void **state)
{
    (void)state;
    gs_dra_claim_t c;
    char err[GS_K8S_ERR_MAX];
    json_t *obj = json_loads(CLAIM, 0, NULL);
    assert_non_null(obj);
    assert_int_equal(gs_dra_claim_parse(obj, &c, err, sizeof(err)), 0);
    json_decref(obj);
    assert_string_equal(c.ns, "ml");
    assert_int_equal(c.nrequests, 1);
    assert_string_equal(c.requests[0].models, "H100"); /* both selectors: the intersection */
    assert_int_equal(c.requests[0].unsupported, 0);
    assert_int_equal(c.requests[0].memory, 4 * GI);
    assert_int_equal(c.requests[0].compute, 30);
    assert_int_equal(c.allocated, 1);
    assert_string_equal(c.node, "n1");
    assert_int_equal(c.nresults, 1);
    assert_string_equal(c.results[0].device, "gpu-0");
    assert_int_equal(c.results[0].consumed, 1);
    assert_int_equal(c.results[0].memory, 4 * GI);
    char *text = dump(gs_dra_claim_json(&c));
    assert_string_equal(
        text,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"c1\",\"namespace\":\"ml\",\"uid\":\"u-c1\"},\"spec\":{\"devices\":{\"requests\":[{"
        "\"exactly\":{\"allocationMode\":\"ExactCount\",\"capacity\":{\"requests\":{\"compute\":"
        "\"30\",\"memory\":\"4Gi\"}},\"count\":1,\"deviceClassName\":\"gpu.gpushare.io\","
        "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes[\\\"gpu.gpushare.io\\\"]."
        "productName == \\\"H100\\\"\"}}]},\"name\":\"gpu\"}]}},\"status\":{\"allocation\":{"
        "\"devices\":{\"results\":[{\"consumedCapacity\":{\"compute\":\"30\",\"memory\":\"4Gi\"},"
        "\"device\":\"gpu-0\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n1\",\"request\":\"gpu\","
        "\"shareID\":\"00000000-0000-4000-8000-000000000001\"}]},\"nodeSelector\":{"
        "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
        "\"values\":[\"n1\"]}]}]}}}}");
    free(text);
    /* Two models: the "in" form, read back the same. */
    snprintf(c.requests[0].models, sizeof(c.requests[0].models), "V100M16|V100M32");
    obj = gs_dra_claim_json(&c);
    gs_dra_claim_t again;
    assert_int_equal(gs_dra_claim_parse(obj, &again, err, sizeof(err)), 0);
    assert_string_equal(again.requests[0].models, "V100M16|V100M32");
    assert_string_equal(
        gs_k8s_str(
            json_array_get(
                json_object_get(
                    json_object_get(
                        json_array_get(json_object_get(
                                           json_object_get(json_object_get(obj, "spec"), "devices"),
                                           "requests"),
                                       0),
                        "exactly"),
                    "selectors"),
                0),
            "cel", "expression", NULL),
        "device.attributes[\"gpu.gpushare.io\"].productName in [\"V100M16\", "
        "\"V100M32\"]");
    json_decref(obj);
    gs_dra_claim_free(&again);
    gs_dra_claim_free(&c);
}

/* The shared templates' selector (deploy/kubernetes/claim-templates.yaml) is no constraint. */
static void test_claim_mode_shared(void **state)
{
    (void)state;
    gs_dra_claim_t c;
    char err[GS_K8S_ERR_MAX];
    json_t *obj = json_loads(
        "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.attributes[\\\"gpu.gpushare.io\\\"].mode == \\\"shared\\\"\"}},"
        "{\"cel\":{\"expression\":\"device.attributes[\\\"gpu.gpushare.io\\\"].productName == "
        "'L4'\"}}],"
        "\"capacity\":{\"requests\":{\"memory\":\"19Gi\",\"compute\":\"25\"}}}}]}}}",
        0, NULL);
    assert_non_null(obj);
    assert_int_equal(gs_dra_claim_parse(obj, &c, err, sizeof(err)), 0);
    json_decref(obj);
    assert_int_equal(c.requests[0].unsupported, 0);
    assert_string_equal(c.requests[0].models, "L4");
    assert_int_equal(c.requests[0].memory, 19 * GI);
    gs_dra_claim_free(&c);
}

/* Requests the model does not place are parsed and flagged, with the reason. */
static void test_claim_unsupported(void **state)
{
    (void)state;
    static const struct {
        const char *request, *why;
    } cases[] = {
        {"{\"name\":\"r\",\"firstAvailable\":[{\"name\":\"a\",\"deviceClassName\":\"x\"}]}",
         "firstAvailable"},
        {"{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\","
         "\"allocationMode\":\"All\"}}",
         "allocationMode other than ExactCount"},
        {"{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"selectors\":"
         "[{\"cel\":{\"expression\":\"device.capacity['gpu.gpushare.io'].memory.compareTo("
         "quantity('8Gi')) >= 0\"}}]}}",
         "a selector other than productName == / in [...] or mode == \"shared\""},
        {"{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"selectors\":"
         "[{\"cel\":{\"expression\":\"device.attributes[\\\"gpu.gpushare.io\\\"].mode == "
         "'mig'\"}}]}}",
         "a selector other than productName == / in [...] or mode == \"shared\""},
        {"{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\",\"capacity\":"
         "{\"requests\":{\"bandwidth\":\"1\"}}}}",
         "a capacity other than memory and compute"},
        {"{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.gpushare.io\","
         "\"adminAccess\":true}}",
         "adminAccess"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"devices\":"
                 "{\"requests\":[%s]}}}",
                 cases[i].request);
        json_t *obj = json_loads(text, 0, NULL);
        gs_dra_claim_t c;
        char err[GS_K8S_ERR_MAX];
        assert_non_null(obj);
        assert_int_equal(gs_dra_claim_parse(obj, &c, err, sizeof(err)), 0);
        assert_int_equal(c.requests[0].unsupported, 1);
        assert_string_equal(c.requests[0].why, cases[i].why);
        gs_dra_claim_free(&c);
        json_decref(obj);
    }
}

/* A claim of one request: count devices; compute 0 and memory 0 leave them out (whole). */
static gs_dra_claim_t claim(int64_t count, uint64_t memory, uint64_t compute, const char *models)
{
    gs_dra_claim_t c;
    memset(&c, 0, sizeof(c));
    snprintf(c.ns, sizeof(c.ns), "ml");
    snprintf(c.name, sizeof(c.name), "c");
    c.nrequests = 1;
    c.requests = calloc(1, sizeof(*c.requests));
    snprintf(c.requests[0].name, sizeof(c.requests[0].name), "gpu");
    snprintf(c.requests[0].device_class, sizeof(c.requests[0].device_class), GS_DRA_CLASS);
    snprintf(c.requests[0].models, sizeof(c.requests[0].models), "%s", models);
    c.requests[0].count = count;
    c.requests[0].has_memory = memory > 0;
    c.requests[0].memory = memory;
    c.requests[0].has_compute = compute > 0;
    c.requests[0].compute = compute;
    return c;
}

static void test_allocate(void **state)
{
    (void)state;
    gs_dra_slice_t s;
    gs_dra_usage_t use[2] = {{0}};
    uint64_t seq = 0;
    two_gpus(&s);
    /* A share takes the first device with room, rounded up to whole MiB. */
    gs_dra_claim_t a = claim(1, 4 * GI + 1, 30, "");
    assert_int_equal(gs_dra_fits(&s, use, GS_DRA_CLASS, &a), 1);
    assert_int_equal(gs_dra_allocate(&s, use, GS_DRA_CLASS, &a, &seq), 0);
    assert_int_equal(a.allocated, 1);
    assert_string_equal(a.node, "n1");
    assert_string_equal(a.results[0].device, "gpu-0");
    assert_int_equal(a.results[0].memory, 4 * GI + (UINT64_C(1) << 20));
    assert_int_equal(a.results[0].compute, 30);
    assert_string_equal(a.results[0].share_id, "00000000-0000-4000-8000-000000000001");
    assert_int_equal(use[0].compute, 30);
    assert_int_equal(use[0].allocations, 1);
    /* 80 % no longer fits the H100: the exclusive A100 is taken whole. */
    gs_dra_claim_t b = claim(1, GI, 80, "");
    assert_int_equal(gs_dra_allocate(&s, use, GS_DRA_CLASS, &b, &seq), 0);
    assert_string_equal(b.results[0].device, "gpu-1");
    assert_int_equal(b.results[0].consumed, 0);
    assert_string_equal(b.results[0].share_id, "");
    assert_int_equal(use[1].compute, 100);
    /* Nothing left for another 80 %: refused, nothing changed. */
    gs_dra_usage_t before[2];
    memcpy(before, use, sizeof(use));
    gs_dra_claim_t c = claim(1, GI, 80, "");
    assert_int_equal(gs_dra_fits(&s, use, GS_DRA_CLASS, &c), 0);
    assert_int_equal(gs_dra_allocate(&s, use, GS_DRA_CLASS, &c, &seq), GS_ENOFIT);
    assert_memory_equal(use, before, sizeof(use));
    assert_int_equal(c.allocated, 0);
    assert_int_equal(seq, 1);
    gs_dra_claim_free(&a);
    gs_dra_claim_free(&b);
    gs_dra_claim_free(&c);
    gs_dra_slice_free(&s);
}

static void test_allocate_whole(void **state)
{
    (void)state;
    gs_dra_slice_t s;
    gs_dra_usage_t use[2] = {{0}};
    uint64_t seq = 0;
    two_gpus(&s);
    /* Two devices: never one twice. A whole request on a shared device consumes the default,
     * all of it. */
    gs_dra_claim_t two = claim(2, 0, 0, "");
    assert_int_equal(gs_dra_allocate(&s, use, GS_DRA_CLASS, &two, &seq), 0);
    assert_int_equal(two.nresults, 2);
    assert_string_equal(two.results[0].device, "gpu-0");
    assert_string_equal(two.results[1].device, "gpu-1");
    assert_int_equal(two.results[0].memory, 80 * GI);
    assert_int_equal(two.results[0].compute, 100);
    gs_dra_claim_t small = claim(1, GI, 1, "");
    assert_int_equal(gs_dra_allocate(&s, use, GS_DRA_CLASS, &small, &seq), GS_ENOFIT);
    /* A selector skips devices of other models; another class is not the model's. */
    gs_dra_usage_t fresh[2] = {{0}};
    gs_dra_claim_t a100 = claim(1, GI, 10, "A100");
    assert_int_equal(gs_dra_allocate(&s, fresh, GS_DRA_CLASS, &a100, &seq), 0);
    assert_string_equal(a100.results[0].device, "gpu-1");
    gs_dra_claim_t other = claim(1, GI, 10, "");
    snprintf(other.requests[0].device_class, sizeof(other.requests[0].device_class),
             "gpu.nvidia.com");
    assert_int_equal(gs_dra_allocate(&s, fresh, GS_DRA_CLASS, &other, &seq), GS_EINVAL);
    gs_dra_claim_free(&two);
    gs_dra_claim_free(&small);
    gs_dra_claim_free(&a100);
    gs_dra_claim_free(&other);
    gs_dra_slice_free(&s);
}

static void test_consume(void **state)
{
    (void)state;
    gs_dra_capacity_t mem = {.value = 8 * GI,
                             .policy = 1,
                             .dflt = 8 * GI,
                             .min = GI,
                             .step = UINT64_C(1) << 29,
                             .max = 4 * GI};
    uint64_t v;
    assert_int_equal(gs_dra_consume(&mem, 0, 0, &v), 0);
    assert_int_equal(v, 8 * GI); /* the default */
    assert_int_equal(gs_dra_consume(&mem, 1, 1, &v), 0);
    assert_int_equal(v, GI); /* below min: min */
    assert_int_equal(gs_dra_consume(&mem, 1, GI + 1, &v), 0);
    assert_int_equal(v, GI + (UINT64_C(1) << 29));                        /* up to the next step */
    assert_int_equal(gs_dra_consume(&mem, 1, 4 * GI + 1, &v), GS_ENOFIT); /* over max */
    gs_dra_capacity_t plain = {.value = 100};
    assert_int_equal(gs_dra_consume(&plain, 0, 0, &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(gs_dra_consume(&plain, 1, 37, &v), 0);
    assert_int_equal(v, 37);
    assert_int_equal(gs_dra_consume(&plain, 1, 101, &v), GS_ENOFIT);
}

/* The order a driver publishes: tightest puts the device with the least room first, full or
 * whole-taken devices last, MIG devices after all; index puts them back. */
static void test_order(void **state)
{
    (void)state;
    gs_dra_slice_t s;
    two_gpus(&s); /* gpu-0 shared H100, gpu-1 exclusive A100 */
    gs_dra_device_t *d = realloc(s.devices, 4 * sizeof(*d));
    assert_non_null(d);
    s.devices = d;
    gs_dra_device_init(&d[2], 2, "GPU-cccc", "H100", GS_DRA_SHARED, 80 * GI, "");
    gs_dra_device_init(&d[3], 3, "GPU-dddd", "H100", GS_DRA_MIG, 80 * GI, "");
    s.count = 4;
    gs_dra_usage_t use[4] = {
        {.compute = 30, .allocations = 1}, {0}, {.compute = 80, .allocations = 2}, {0}};
    assert_int_equal(gs_dra_milli_left(&d[0], &use[0]), 700);
    assert_int_equal(gs_dra_milli_left(&d[1], &use[1]), 1000);
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_TIGHTEST), 1);
    const char *want[4] = {"gpu-2", "gpu-0", "gpu-1", "gpu-3"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(s.devices[i].name, want[i]);
    assert_int_equal(use[0].compute, 80); /* usage moved with its device */
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_TIGHTEST), 0);
    use[2].allocations = 1; /* the A100 (third) taken whole: still last of the GPUs */
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_TIGHTEST), 0);
    memset(&use[0], 0, sizeof(use[0])); /* gpu-2 free again: after gpu-0 */
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_TIGHTEST), 1);
    const char *now[4] = {"gpu-0", "gpu-2", "gpu-1", "gpu-3"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(s.devices[i].name, now[i]);
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_INDEX), 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s.devices[i].index, i);
    assert_int_equal(use[1].allocations, 1);
    assert_int_equal(gs_dra_order_devices(&s, use, GS_PLACE_ORDER_POLICY), GS_EINVAL);
    gs_dra_slice_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slice_json),
        cmocka_unit_test(test_slice_malformed),
        cmocka_unit_test(test_claim_json),
        cmocka_unit_test(test_claim_unsupported),
        cmocka_unit_test(test_claim_mode_shared),
        cmocka_unit_test(test_allocate),
        cmocka_unit_test(test_allocate_whole),
        cmocka_unit_test(test_consume),
        cmocka_unit_test(test_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
