/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpushare-k8s's pure parts (src/k8s/plugin.h): gpushared's status read into the
 * node, the node's ResourceSlices, GpuConfig, a claim's plan (and every way a claim is refused,
 * each with its one line), the claims' records and kubeconfigs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

#include "gpushare/error.h"

#define GI (UINT64_C(1) << 30)

/* gpushared's status: a shared H100 with a 10 GiB, 30 % lease, an exclusive A100, a MIG H100. */
static const char *const STATUS =
    "{\"ok\":true,\"op\":\"status\",\"node\":{\"cuda_driver\":\"13.0\"},\"gpus\":["
    "{\"index\":0,\"uuid\":\"GPU-a\",\"name\":\"NVIDIA H100\",\"mode\":\"shared\","
    "\"memory_leasable\":85899345920,\"memory_free\":75161927680,\"compute_leased\":30,"
    "\"n_leases\":1},"
    "{\"index\":1,\"uuid\":\"GPU-b\",\"name\":\"NVIDIA A100\",\"mode\":\"exclusive\","
    "\"memory_leasable\":42949672960,\"memory_free\":42949672960,\"compute_leased\":0,"
    "\"n_leases\":0},"
    "{\"index\":2,\"uuid\":\"GPU-c\",\"name\":\"NVIDIA H100\",\"mode\":\"mig\","
    "\"memory_leasable\":85899345920,\"memory_free\":85899345920,\"compute_leased\":0,"
    "\"n_leases\":0,\"mig\":{\"enabled\":true,\"compute_slices\":7,\"memory_slots\":8,"
    "\"profiles\":["
    "{\"name\":\"1g.10gb\",\"id\":19,\"compute\":1,\"slots\":1,\"max_instances\":7,"
    "\"starts\":[0,1,2,3,4,5,6],\"memory\":10737418240,\"media\":false},"
    "{\"name\":\"1g.10gb+me\",\"id\":20,\"compute\":1,\"slots\":1,\"max_instances\":1,"
    "\"starts\":[0,1,2,3,4,5,6],\"memory\":10737418240,\"media\":true},"
    "{\"name\":\"3g.40gb\",\"id\":9,\"compute\":3,\"slots\":4,\"max_instances\":2,"
    "\"starts\":[0,4],\"memory\":42949672960,\"media\":false}]}}]}";

static void node_of(const char *text, gs__node_t *node)
{
    json_t *j = json_loads(text, 0, NULL);
    char err[256];
    assert_non_null(j);
    assert_int_equal(gs__node_parse(j, node, err, sizeof(err)), 0);
    json_decref(j);
}

static void test_node_parse(void **state)
{
    (void)state;
    gs__node_t node;
    node_of(STATUS, &node);
    assert_int_equal(node.n, 3);
    assert_string_equal(node.cuda, "13.0");
    assert_int_equal(node.gpus[0].mode, GS_DRA_SHARED);
    assert_int_equal(node.gpus[0].leasable, 80 * GI);
    assert_int_equal(node.gpus[0].free, 70 * GI);
    assert_int_equal(node.gpus[0].compute_leased, 30);
    assert_int_equal(node.gpus[1].mode, GS_DRA_EXCLUSIVE);
    assert_int_equal(node.gpus[2].mig_enabled, 1);
    assert_int_equal(node.gpus[2].mig.n_profiles, 3);
    assert_int_equal(node.gpus[2].mig.profiles[2].starts, 0x11);
    assert_int_equal(node.gpus[2].mig.profiles[1].media, 1);
    char err[256];
    static const char *const bad[] = {
        "{\"gpus\":3}",
        "{\"gpus\":[{\"index\":0,\"uuid\":\"\",\"name\":\"x\",\"mode\":\"shared\"}]}",
        "{\"gpus\":[{\"index\":-1,\"uuid\":\"u\",\"name\":\"x\",\"mode\":\"shared\"}]}",
        "{\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"mode\":\"shared\",\"compute_leased\":101}]}",
        "{\"gpus\":[{\"index\":0,\"uuid\":\"u\"},{\"index\":0,\"uuid\":\"v\"}]}",
        "{\"gpus\":[{\"index\":2,\"uuid\":\"u\",\"mode\":\"mig\",\"mig\":{\"enabled\":true,"
        "\"compute_slices\":7,\"memory_slots\":8,\"profiles\":[{\"name\":\"x\",\"compute\":1,"
        "\"slots\":9,\"starts\":[0]}]}}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        if (gs__node_parse(j, &node, err, sizeof(err)) != GS_EFORMAT)
            fail_msg("case %zu parsed", i);
        json_decref(j);
    }
    /* An unknown mode and a MIG GPU with MIG off: parsed, with a problem (not published). */
    node_of("{\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"mode\":\"demo\"},"
            "{\"index\":1,\"uuid\":\"v\",\"mode\":\"mig\",\"mig\":{\"enabled\":false}}]}",
            &node);
    assert_string_equal(node.gpus[0].problem, "mode demo has no DRA device model");
    assert_string_equal(node.gpus[1].problem, "MIG is not on");
}

static char *slice_text(const gs_dra_slice_t *s)
{
    json_t *j = gs_dra_slice_json(s);
    assert_non_null(j);
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return text;
}

static void test_node_slices(void **state)
{
    (void)state;
    gs__node_t node;
    gs_dra_slice_t s[4];
    size_t n = 0;
    node_of(STATUS, &node);
    assert_int_equal(gs__node_slices(&node, "n1", 5, GS_PLACE_ORDER_TIGHTEST, s, 4, &n), 0);
    assert_int_equal(n, 2);
    /* The tightest first (the shared H100 has 30 % leased), MIG placements last: 7 + 7 + 2. */
    assert_int_equal(s[0].count, 2 + 16);
    assert_string_equal(s[0].name, "n1-gpu.gpushare.io");
    assert_string_equal(s[0].devices[0].name, "gpu-0");
    assert_string_equal(s[0].devices[1].name, "gpu-1");
    assert_string_equal(s[0].devices[2].name, "gpu-2-mig-1g10gb-0");
    assert_string_equal(s[0].devices[9].name, "gpu-2-mig-1g10gbme-0");
    assert_string_equal(s[0].devices[17].name, "gpu-2-mig-3g40gb-4");
    assert_int_equal(s[0].devices[17].compute.value, 43);
    assert_int_equal(s[0].devices[17].memory.value, 40 * GI);
    assert_int_equal(s[0].slice_count, 2);
    assert_int_equal(s[0].generation, 5);
    assert_string_equal(s[1].name, "n1-gpu.gpushare.io-counters");
    char *text = slice_text(&s[1]);
    assert_string_equal(
        text,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
        "{\"name\":\"n1-gpu.gpushare.io-counters\"},\"spec\":{\"driver\":\"gpu.gpushare.io\","
        "\"nodeName\":\"n1\",\"pool\":{\"generation\":5,\"name\":\"n1\",\"resourceSliceCount\":2},"
        "\"sharedCounters\":[{\"counters\":{\"compute-slices\":{\"value\":\"7\"},"
        "\"media-extensions\":{\"value\":\"1\"},\"memory-slot-0\":{\"value\":\"1\"},"
        "\"memory-slot-1\":{\"value\":\"1\"},\"memory-slot-2\":{\"value\":\"1\"},"
        "\"memory-slot-3\":{\"value\":\"1\"},\"memory-slot-4\":{\"value\":\"1\"},"
        "\"memory-slot-5\":{\"value\":\"1\"},\"memory-slot-6\":{\"value\":\"1\"},"
        "\"memory-slot-7\":{\"value\":\"1\"}},\"name\":\"gpu-2-mig\"}]}}");
    free(text);
    /* A media-extension placement consumes the media counter. */
    gs_dra_slice_t one = {.count = 1, .devices = &s[0].devices[9]};
    snprintf(one.driver, sizeof(one.driver), "%s", GS_DRA_DRIVER);
    snprintf(one.pool, sizeof(one.pool), "n1");
    text = slice_text(&one);
    assert_non_null(strstr(text, "\"consumesCounters\":[{\"counterSet\":\"gpu-2-mig\",\"counters\":"
                                 "{\"compute-slices\":{\"value\":\"1\"},\"media-extensions\":"
                                 "{\"value\":\"1\"},\"memory-slot-0\":{\"value\":\"1\"}}}]"));
    assert_non_null(strstr(text, "\"profile\":{\"string\":\"1g.10gb+me\"}"));
    assert_null(strstr(text, "allowMultipleAllocations"));
    free(text);
    for (size_t i = 0; i < n; i++)
        gs_dra_slice_free(&s[i]);
    /* By index: the order of the GPUs. Room for one slice only: GS_ENOSPC. */
    assert_int_equal(gs__node_slices(&node, "n1", 1, GS_PLACE_ORDER_INDEX, s, 4, &n), 0);
    assert_string_equal(s[0].devices[0].name, "gpu-0");
    for (size_t i = 0; i < n; i++)
        gs_dra_slice_free(&s[i]);
    assert_int_equal(gs__node_slices(&node, "n1", 1, GS_PLACE_ORDER_INDEX, s, 1, &n), GS_ENOSPC);
    assert_int_equal(n, 0);
}

static void test_gpuconfig(void **state)
{
    (void)state;
    gs__gpuconfig_t cfg;
    char err[256];
    gs__gpuconfig_init(&cfg);
    json_t *p = json_loads("{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\","
                           "\"computeMax\":50,\"timeLimit\":\"1h30m\",\"enforce\":\"memory\"}",
                           0, NULL);
    assert_int_equal(gs__gpuconfig_apply(&cfg, p, err, sizeof(err)), 0);
    json_decref(p);
    assert_int_equal(cfg.compute_max, 50);
    assert_int_equal(cfg.time_limit_ms, 5400000);
    assert_int_equal(cfg.compute_enforce, 0);
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\",\"computeMax\":0}",
         "computeMax must be a whole percent, 1 to 100"},
        {"{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\",\"computemax\":5}",
         "GpuConfig has no field \"computemax\" (it has computeMax, timeLimit, enforce)"},
        {"{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\",\"timeLimit\":\"2 h\"}",
         "timeLimit must be a duration of 1s to a year, e.g. \"2h\" or \"1h30m\""},
        {"{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\",\"timeLimit\":\"900ms\"}",
         "timeLimit must be a duration of 1s to a year, e.g. \"2h\" or \"1h30m\""},
        {"{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\",\"enforce\":true}",
         "enforce must be \"all\" or \"memory\""},
        {"{\"kind\":\"GpuConfig\"}",
         "the opaque parameters must be apiVersion gpu.gpushare.io/v1, kind GpuConfig"},
        {"[1]", "the opaque parameters are not a JSON object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gs__gpuconfig_t before = cfg;
        p = json_loads(bad[i].json, 0, NULL);
        assert_int_equal(gs__gpuconfig_apply(&cfg, p, err, sizeof(err)), GS_EINVAL);
        assert_string_equal(err, bad[i].why);
        assert_memory_equal(&cfg, &before, sizeof(cfg));
        json_decref(p);
    }
}

/* A claim allocated on this node: results and config as JSON fragments. */
static json_t *claim_json(const char *results, const char *config)
{
    char text[4096];
    snprintf(
        text, sizeof(text),
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
        "{\"name\":\"c1\",\"namespace\":\"ml\",\"uid\":\"0b9d6c3e-1111-2222-3333-444455556666\"},"
        "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
        "{\"deviceClassName\":\"gpu.gpushare.io\"}}]}},\"status\":{\"allocation\":"
        "{\"devices\":{\"results\":[%s],\"config\":[%s]}}}}",
        results, config);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

#define SHARE(dev, mem, c)                                                                         \
    "{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n1\",\"device\":\"" dev        \
    "\",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"" mem "\",\"compute\":\"" c "\"}}"
#define WHOLE(dev)                                                                                 \
    "{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n1\",\"device\":\"" dev "\"}"
#define CONFIG(src, params)                                                                        \
    "{\"source\":\"" src "\",\"requests\":[\"gpu\"],\"opaque\":{\"driver\":\"gpu.gpushare.io\","   \
    "\"parameters\":{\"apiVersion\":\"gpu.gpushare.io/v1\",\"kind\":\"GpuConfig\"," params "}}}"

static int plan_of(const char *results, const char *config, gs__plan_t *plan, char *err,
                   size_t errlen)
{
    gs__node_t node;
    node_of(STATUS, &node);
    json_t *claim = claim_json(results, config);
    int result = gs__plan_claim(claim, "0b9d6c3e-1111-2222-3333-444455556666", "n1", &node, plan,
                                err, errlen);
    json_decref(claim);
    return result;
}

static void test_plan_share(void **state)
{
    (void)state;
    gs__plan_t plan;
    char err[512];
    assert_int_equal(
        plan_of(SHARE("gpu-0", "4Gi", "30"),
                CONFIG("FromClass", "\"computeMax\":90,\"timeLimit\":\"2h\"") "," CONFIG(
                    "FromClaim", "\"computeMax\":60"),
                &plan, err, sizeof(err)),
        0);
    assert_string_equal(plan.lease.key, "k8s/0b9d6c3e-1111-2222-3333-444455556666/gpu");
    assert_string_equal(plan.request, "gpu");
    assert_int_equal(plan.ndevices, 1);
    assert_string_equal(plan.devices[0].device, "gpu-0");
    assert_string_equal(plan.devices[0].share_id, "s1");
    assert_int_equal(plan.lease.kind, GS_LEASE_MEMORY);
    assert_int_equal(plan.lease.memory, 4 * GI);
    assert_int_equal(plan.lease.compute, 30);
    assert_int_equal(plan.lease.compute_max, 60); /* the claim's over the class's */
    assert_int_equal(plan.lease.time_limit_ms, 7200000);
    assert_int_equal(plan.lease.wait, 0);
    assert_int_equal(plan.lease.n_pinned, 1);
    assert_int_equal(plan.lease.pinned[0], 0);
    assert_string_equal(plan.lease.name, "ml/c1");
    assert_string_equal(plan.lease.command, "claim ml/c1 request gpu");
    /* enforce memory: no guaranteed share. */
    assert_int_equal(plan_of(SHARE("gpu-0", "4Gi", "30"),
                             CONFIG("FromClaim", "\"enforce\":\"memory\""), &plan, err,
                             sizeof(err)),
                     0);
    assert_int_equal(plan.lease.compute, 0);
}

static void test_plan_whole_and_mig(void **state)
{
    (void)state;
    gs__plan_t plan;
    char err[512];
    assert_int_equal(plan_of(WHOLE("gpu-1") "," WHOLE("gpu-0"), "", &plan, err, sizeof(err)), 0);
    assert_int_equal(plan.lease.kind, GS_LEASE_GPUS);
    assert_int_equal(plan.lease.gpus, 2);
    assert_int_equal(plan.lease.n_pinned, 2);
    assert_int_equal(plan.lease.pinned[0], 1);
    assert_int_equal(plan.lease.pinned[1], 0);
    /* A share of the whole shared GPU is a whole GPU. */
    assert_int_equal(plan_of(SHARE("gpu-0", "80Gi", "100"), "", &plan, err, sizeof(err)), 0);
    assert_int_equal(plan.lease.kind, GS_LEASE_GPUS);
    assert_int_equal(plan_of(WHOLE("gpu-2-mig-3g40gb-4"), "", &plan, err, sizeof(err)), 0);
    assert_int_equal(plan.lease.kind, GS_LEASE_MIG);
    assert_string_equal(plan.lease.mig_profile, "3g.40gb");
    assert_int_equal(plan.lease.has_mig_start, 1);
    assert_int_equal(plan.lease.mig_start, 4);
    assert_int_equal(plan.lease.pinned[0], 2);
    /* Results of other drivers only: nothing to do. */
    assert_int_equal(plan_of("{\"request\":\"gpu\",\"driver\":\"other.io\",\"pool\":\"n1\","
                             "\"device\":\"d\"}",
                             "", &plan, err, sizeof(err)),
                     0);
    assert_int_equal(plan.ndevices, 0);
}

static void test_plan_refused(void **state)
{
    (void)state;
    gs__plan_t plan;
    char err[512];
    static const struct {
        const char *results, *config;
        int code;
        const char *why;
    } cases[] = {
        {WHOLE("gpu-7"), "", GS_ENOENT,
         "claim ml/c1: allocated on gpu-7, which this node (n1) does not have"},
        {SHARE("gpu-0", "90Gi", "30"), "", GS_ERANGE,
         "claim ml/c1: consumes 90Gi of memory of gpu-0, which has 80Gi"},
        {SHARE("gpu-0", "4Gi", "130"), "", GS_ERANGE,
         "claim ml/c1: consumes 130 % of compute of gpu-0, which has 100 %"},
        {SHARE("gpu-0", "4Gi", "30"), CONFIG("FromClaim", "\"computeMax\":\"50\""), GS_EINVAL,
         "claim ml/c1: its configuration (FromClaim, entry 0): computeMax must be a whole "
         "percent, 1 to 100"},
        {SHARE("gpu-0", "4Gi", "30"), CONFIG("FromClaim", "\"computeMax\":20"), GS_EINVAL,
         "claim ml/c1: its computeMax 20 is below the 30 % of compute it consumes"},
        {SHARE("gpu-0", "4Gi", "30") "," SHARE("gpu-0", "4Gi", "30"), "", GS_ENOTSUP,
         "claim ml/c1: 2 devices of request gpu, not all whole GPUs: gpushare gives a container "
         "one share, one MIG instance, or whole GPUs"},
        {"{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n2\",\"device\":\"gpu-"
         "0\"}",
         "", GS_ENOENT, "claim ml/c1: allocated on gpu-0 of pool n2, not on this node (n1)"},
        {WHOLE("gpu-0") ",{\"request\":\"gpu2\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"n1\","
                        "\"device\":\"gpu-1\"}",
         "", GS_ENOTSUP,
         "claim ml/c1: requests gpu and gpu2 of gpu.gpushare.io: gpushare gives a container one "
         "lease, ask with one request"},
        {"{\"request\":\"gpu\"}", "", GS_EFORMAT,
         "claim ml/c1: claim c1: malformed allocation result 0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(plan_of(cases[i].results, cases[i].config, &plan, err, sizeof(err)),
                         cases[i].code);
        assert_string_equal(err, cases[i].why);
        assert_int_equal(plan.ndevices, 0);
    }
    /* Another UID (the claim was made again), not allocated. */
    gs__node_t node;
    node_of(STATUS, &node);
    json_t *claim = claim_json(WHOLE("gpu-1"), "");
    assert_int_equal(gs__plan_claim(claim, "ffff", "n1", &node, &plan, err, sizeof(err)),
                     GS_ENOENT);
    assert_string_equal(err, "claim ml/c1: its UID is 0b9d6c3e-1111-2222-3333-444455556666, not "
                             "ffff (deleted and made again?)");
    json_object_del(claim, "status");
    assert_int_equal(gs__plan_claim(claim, NULL, "n1", &node, &plan, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "claim ml/c1: not allocated");
    json_decref(claim);
}

static void test_records(void **state)
{
    (void)state;
    char dir[] = "/tmp/gs-test-records.XXXXXX", err[512];
    assert_non_null(mkdtemp(dir));
    gs__record_t r = {.prepared = 1, .lease = 42}, back;
    snprintf(r.uid, sizeof(r.uid), "0b9d6c3e-1111");
    snprintf(r.ns, sizeof(r.ns), "ml");
    snprintf(r.name, sizeof(r.name), "c1");
    snprintf(r.key, sizeof(r.key), "k8s/0b9d6c3e-1111/gpu");
    snprintf(r.cdi, sizeof(r.cdi), "k8s-0b9d6c3e-1111");
    assert_int_equal(gs__record_read(dir, r.uid, &back, err, sizeof(err)), GS_ENOENT);
    assert_int_equal(gs__record_write(dir, &r, err, sizeof(err)), 0);
    assert_int_equal(gs__record_read(dir, r.uid, &back, err, sizeof(err)), 0);
    assert_memory_equal(&back, &r, sizeof(r));
    assert_int_equal(gs__record_remove(dir, r.uid, err, sizeof(err)), 0);
    assert_int_equal(gs__record_remove(dir, r.uid, err, sizeof(err)), 0);
    assert_int_equal(gs__record_read(dir, r.uid, &back, err, sizeof(err)), GS_ENOENT);
    assert_int_equal(gs__record_uid_ok("../x"), 0);
    assert_int_equal(gs__record_uid_ok("ABC"), 0);
    assert_int_equal(gs__record_uid_ok(""), 0);
    snprintf(r.uid, sizeof(r.uid), "../etc");
    assert_int_equal(gs__record_write(dir, &r, err, sizeof(err)), GS_EINVAL);
    static const char *const bad[] = {
        "{}",
        "[]",
        "{\"version\":2}",
        "{\"version\":1,\"uid\":\"A\",\"namespace\":\"n\",\"name\":\"c\",\"key\":\"k\","
        "\"cdi\":\"c\",\"prepared\":true,\"lease\":1}",
        "{\"version\":1,\"uid\":\"a\",\"namespace\":\"n\",\"name\":\"c\",\"key\":\"k\","
        "\"cdi\":\"c\",\"prepared\":1,\"lease\":1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gs__record_parse(bad[i], strlen(bad[i]), &back, err, sizeof(err)),
                         GS_EFORMAT);
    rmdir(dir);
}

static void test_kubeconfig(void **state)
{
    (void)state;
    char dir[] = "/tmp/gs-test-kubeconfig.XXXXXX", err[512], path[600];
    assert_non_null(mkdtemp(dir));
    gs__kapi_cfg_t cfg;
    static const char yaml[] = "apiVersion: v1\n"
                               "kind: Config\n"
                               "current-context: prod\n"
                               "contexts:\n"
                               "- name: dev\n  context: {cluster: dev, user: dev}\n"
                               "- name: prod\n  context:\n    cluster: c1\n    user: u1\n"
                               "clusters:\n"
                               "- name: c1\n  cluster:\n    server: https://10.0.0.1:6443/\n"
                               "    certificate-authority-data: aGVsbG8=\n"
                               "users:\n"
                               "- name: u1\n  user:\n    token: abc.def\n"
                               "    client-key: keys/u1.key\n";
    assert_int_equal(
        gs__kapi_kubeconfig_parse(yaml, strlen(yaml), "/etc/k", dir, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.server, "https://10.0.0.1:6443");
    assert_string_equal(cfg.token, "abc.def");
    assert_string_equal(cfg.key_file, "/etc/k/keys/u1.key");
    snprintf(path, sizeof(path), "%s/kubeconfig-ca.crt", dir);
    assert_string_equal(cfg.ca_file, path);
    FILE *f = fopen(path, "r");
    char data[16] = "";
    assert_non_null(f);
    assert_int_equal(fread(data, 1, sizeof(data), f), 5);
    fclose(f);
    assert_memory_equal(data, "hello", 5);
    unlink(path);
    rmdir(dir);
    static const struct {
        const char *text;
        int code;
        const char *why;
    } bad[] = {
        {"a: [", GS_EFORMAT, "kubeconfig: not YAML or JSON"},
        {"current-context: x\n", GS_EFORMAT,
         "kubeconfig: no current-context with a cluster and its server"},
        {"{\"current-context\":\"p\",\"contexts\":[{\"name\":\"p\",\"context\":{\"cluster\":"
         "\"c\",\"user\":\"u\"}}],\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":"
         "\"https://h\"}}],\"users\":[{\"name\":\"u\",\"user\":{\"exec\":{}}}]}",
         GS_ENOTSUP,
         "kubeconfig: the user authenticates with exec or an auth-provider, which gpushare-k8s "
         "does not run: use a token or a client certificate"},
        {"{\"current-context\":\"p\",\"contexts\":[{\"name\":\"p\",\"context\":{\"cluster\":"
         "\"c\"}}],\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h\","
         "\"certificate-authority-data\":\"!!\"}}]}",
         GS_ENOTSUP, "kubeconfig: kubeconfig-ca.crt data has nowhere to go"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gs__kapi_kubeconfig_parse(bad[i].text, strlen(bad[i].text), ".", NULL,
                                                   &cfg, err, sizeof(err)),
                         bad[i].code);
        assert_string_equal(err, bad[i].why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_parse),
        cmocka_unit_test(test_node_slices),
        cmocka_unit_test(test_gpuconfig),
        cmocka_unit_test(test_plan_share),
        cmocka_unit_test(test_plan_whole_and_mig),
        cmocka_unit_test(test_plan_refused),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_kubeconfig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
