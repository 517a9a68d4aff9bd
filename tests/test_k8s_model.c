/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the extender's model (src/k8s/model*.c): objects in, filter and prioritize out,
 * the neutral answers, assumptions, slices reordered, LISTs that drop objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "model.h"

static void apply(gs_k8s_model_t *m, gs_k8s_kind_t kind, gs_k8s_event_t ev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void apply(gs_k8s_model_t *m, gs_k8s_kind_t kind, gs_k8s_event_t ev, const char *fmt, ...)
{
    char text[4096], err[GS_K8S_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_error_t je;
    json_t *obj = json_loads(text, 0, &je);
    if (obj == NULL)
        fail_msg("bad fixture: %s: %s", je.text, text);
    assert_int_equal(gs_k8s_model_apply(m, kind, ev, obj, err, sizeof(err)), 0);
    json_decref(obj);
}

static void node(gs_k8s_model_t *m, const char *name, const char *cpu)
{
    apply(m, GS_K8S_NODES, GS_K8S_ADDED,
          "{\"metadata\":{\"name\":\"%s\"},\"status\":"
          "{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"128Gi\"}}}",
          name, cpu);
}

#define DEVICE                                                                                     \
    "{\"name\":\"gpu-%d\",\"attributes\":{\"uuid\":{\"string\":\"GPU-%d\"},\"productName\":"       \
    "{\"string\":\"H100\"},\"mode\":{\"string\":\"shared\"},\"index\":{\"int\":%d}},"              \
    "\"capacity\":{\"memory\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"80Gi\","        \
    "\"validRange\":{\"min\":\"1Mi\",\"step\":\"1Mi\"}}},\"compute\":{\"value\":\"100\","          \
    "\"requestPolicy\":{\"default\":\"100\",\"validRange\":{\"min\":\"1\",\"step\":\"1\"}}}},"     \
    "\"allowMultipleAllocations\":true}"

/* A slice of n H100s on node, listed in the order of indexes in order[]. */
static void slice(gs_k8s_model_t *m, gs_k8s_event_t ev, const char *name, int n, const int *order)
{
    char devices[3000] = "";
    for (int i = 0; i < n; i++) {
        char d[512];
        snprintf(d, sizeof(d), DEVICE, order[i], order[i], order[i]);
        strcat(devices, i ? "," : "");
        strcat(devices, d);
    }
    apply(m, GS_K8S_SLICES, ev,
          "{\"metadata\":{\"name\":\"%s-gpu\"},\"spec\":{\"driver\":"
          "\"gpu.gpushare.io\",\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,"
          "\"resourceSliceCount\":1},\"devices\":[%s]}}",
          name, name, name, devices);
}

/* A claim for one GPU share of class cls, allocated on node/device when node is not NULL. */
static void claim(gs_k8s_model_t *m, gs_k8s_event_t ev, const char *name, const char *cls,
                  int compute, const char *node, int device)
{
    char status[1024] = "";
    if (node != NULL)
        snprintf(status, sizeof(status),
                 ",\"status\":{\"allocation\":{\"devices\":{\"results\":"
                 "[{\"request\":\"gpu\",\"driver\":\"gpu.gpushare.io\",\"pool\":\"%s\",\"device\":"
                 "\"gpu-%d\",\"consumedCapacity\":{\"memory\":\"%dGi\",\"compute\":\"%d\"}}]}}}",
                 node, device, compute * 80 / 100, compute);
    apply(m, GS_K8S_CLAIMS, ev,
          "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":"
          "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"%s\","
          "\"capacity\":{\"requests\":{\"memory\":\"%dGi\",\"compute\":\"%d\"}}}}]}}%s}",
          name, cls, compute * 80 / 100, compute, status);
}

/* ExtenderArgs for pod (uid) with claim (NULL: none) on the candidates. */
static void args_for(gs_k8s_args_t *a, const char *uid, const char *claim_name, const char *names)
{
    char text[2048], err[GS_K8S_ERR_MAX], claims[256] = "";
    if (claim_name != NULL)
        snprintf(claims, sizeof(claims),
                 ",\"resourceClaims\":[{\"name\":\"gpu\","
                 "\"resourceClaimName\":\"%s\"}]",
                 claim_name);
    snprintf(
        text, sizeof(text),
        "{\"pod\":{\"metadata\":{\"name\":\"p-%s\",\"namespace\":\"ml\","
        "\"uid\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
        "{\"cpu\":\"4\",\"memory\":\"8Gi\"}}}]%s}},\"nodenames\":[%s]}",
        uid, uid, claims, names);
    assert_int_equal(gs_k8s_args_parse(text, strlen(text), a, err, sizeof(err)), 0);
}

static gs_k8s_model_t *model(double assume)
{
    gs_k8s_model_opts_t o = {.policy = GS_PLACE_GPUSHARE, .seed = 42, .assume_seconds = assume};
    gs_k8s_model_t *m = NULL;
    char err[GS_K8S_ERR_MAX];
    assert_int_equal(gs_k8s_model_new(&o, &m, err, sizeof(err)), 0);
    for (int k = 0; k < GS_K8S_KINDS; k++)
        gs_k8s_model_list_begin(m, (gs_k8s_kind_t)k);
    return m;
}

static void listed(gs_k8s_model_t *m)
{
    for (int k = 0; k < GS_K8S_KINDS; k++)
        gs_k8s_model_list_end(m, (gs_k8s_kind_t)k);
}

/* a: 2 H100s, 50 % of gpu-0 taken; b: 4 H100s; c: no GPU. */
static gs_k8s_model_t *three_nodes(double assume)
{
    gs_k8s_model_t *m = model(assume);
    node(m, "a", "32");
    node(m, "b", "64");
    node(m, "c", "16");
    slice(m, GS_K8S_ADDED, "a", 2, (int[]){0, 1});
    slice(m, GS_K8S_ADDED, "b", 4, (int[]){0, 1, 2, 3});
    claim(m, GS_K8S_ADDED, "busy", "gpu.gpushare.io", 50, "a", 0);
    claim(m, GS_K8S_ADDED, "want", "gpu.gpushare.io", 30, NULL, 0);
    return m;
}

/* Before every kind is listed, answers are neutral; then the policy answers. A 30 % share on a
 * (first fit: gpu-0, 50 % left) strands 20 %: FGD-style points 45; on b a fresh GPU keeps all
 * the room usable: 50 points, the choice. c has no GPU: never. */
static void test_verbs(void **state)
{
    (void)state;
    gs_k8s_model_t *m = three_nodes(0);
    gs_k8s_args_t a;
    gs_k8s_answer_t ans;
    args_for(&a, "u1", "want", "\"a\",\"b\",\"c\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 1);
    assert_string_equal(ans.why, "not listed from the API server yet");
    gs_k8s_answer_free(&ans);
    listed(m);
    assert_int_equal(gs_k8s_model_synced(m), 1);
    assert_int_equal(gs_k8s_model_filter(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 0);
    assert_int_equal(ans.verdict[0], GS_K8S_PASS);
    assert_int_equal(ans.verdict[1], GS_K8S_PASS);
    assert_int_equal(ans.verdict[2], GS_K8S_UNRESOLVABLE);
    assert_string_equal(ans.reason[2],
                        "gpushare: no gpushare GPUs of the kind the pod's claims ask for");
    gs_k8s_answer_free(&ans);
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 0);
    assert_int_equal(ans.best, 1);
    assert_int_equal(ans.scores[0], 1);
    assert_int_equal(ans.scores[1], 10);
    assert_int_equal(ans.scores[2], 0);
    gs_k8s_answer_free(&ans);
    /* A watch that breaks makes answers neutral until the kind is listed again. */
    gs_k8s_model_set_synced(m, GS_K8S_CLAIMS, 0);
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 1);
    assert_string_equal(ans.why, "out of sync with the API server (resourceclaims)");
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    gs_k8s_model_free(m);
}

static void expect_neutral(gs_k8s_model_t *m, gs_k8s_args_t *a, const char *why)
{
    gs_k8s_answer_t ans;
    assert_int_equal(gs_k8s_model_filter(m, a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 1);
    assert_string_equal(ans.why, why);
    gs_k8s_answer_free(&ans);
    assert_int_equal(gs_k8s_model_prioritize(m, a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 1);
    assert_string_equal(ans.why, why);
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(a);
}

static void test_neutral(void **state)
{
    (void)state;
    gs_k8s_model_t *m = three_nodes(0);
    claim(m, GS_K8S_ADDED, "nv", "gpu.nvidia.com", 30, NULL, 0);
    listed(m);
    gs_k8s_args_t a;
    args_for(&a, "u1", "nv", "\"a\",\"b\"");
    expect_neutral(m, &a,
                   "claim ml/nv: request gpu is for device class gpu.nvidia.com "
                   "(another driver)");
    args_for(&a, "u2", "ghost", "\"a\",\"b\"");
    expect_neutral(m, &a, "claim ml/ghost not seen from the API server yet");
    char err[GS_K8S_ERR_MAX];
    const char *bad = "{\"pod\":{\"metadata\":{}},\"nodenames\":[\"a\"]}";
    assert_int_equal(gs_k8s_args_parse(bad, strlen(bad), &a, err, sizeof(err)), 0);
    expect_neutral(m, &a, "malformed pod: pod without a valid name, namespace, uid or node");
    /* Unknown candidates pass and score 0; the others are still answered. */
    gs_k8s_answer_t ans;
    args_for(&a, "u3", "want", "\"zz\",\"b\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 0);
    assert_int_equal(ans.unknown, 1);
    assert_int_equal(ans.scores[0], 0);
    assert_int_equal(ans.scores[1], 10);
    gs_k8s_answer_free(&ans);
    assert_int_equal(gs_k8s_model_filter(m, &a, 0, &ans), 0);
    assert_int_equal(ans.verdict[0], GS_K8S_PASS);
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    /* When the model says no candidate has room it is taken to be behind: all pass. */
    args_for(&a, "u4", "want", "\"c\"");
    assert_int_equal(gs_k8s_model_filter(m, &a, 0, &ans), 0);
    assert_int_equal(ans.neutral, 1);
    assert_int_equal(ans.verdict[0], GS_K8S_PASS);
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    gs_k8s_model_free(m);
}

static gs_k8s_verdict_t verdict(gs_k8s_model_t *m, const char *uid, const char *claim_name,
                                double now)
{
    gs_k8s_args_t a;
    gs_k8s_answer_t ans;
    args_for(&a, uid, claim_name, "\"solo\",\"big\"");
    assert_int_equal(gs_k8s_model_filter(m, &a, now, &ans), 0);
    assert_int_equal(ans.neutral, 0);
    gs_k8s_verdict_t v = ans.verdict[0];
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    return v;
}

/* A scored pod is assumed where the policy chose until the API server shows its claim
 * allocated (counted once), and no longer than assume_seconds. "big" keeps room throughout, so
 * that filter answers for "solo" are not all-fail (which passes everything). */
static void test_assume(void **state)
{
    (void)state;
    gs_k8s_model_t *m = model(30);
    node(m, "solo", "32");
    node(m, "big", "32");
    slice(m, GS_K8S_ADDED, "solo", 1, (int[]){0});
    slice(m, GS_K8S_ADDED, "big", 1, (int[]){0});
    claim(m, GS_K8S_ADDED, "c30", "gpu.gpushare.io", 30, NULL, 0);
    claim(m, GS_K8S_ADDED, "c80", "gpu.gpushare.io", 80, NULL, 0);
    listed(m);
    assert_int_equal(verdict(m, "u80", "c80", 0), GS_K8S_PASS);
    gs_k8s_args_t a;
    gs_k8s_answer_t ans;
    args_for(&a, "u30", "c30", "\"solo\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.best, 0);
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    gs_k8s_model_stats_t st;
    gs_k8s_model_stats(m, &st);
    assert_int_equal(st.assumed, 1);
    /* 30 % assumed: an 80 % share no longer fits; once allocated it is counted once. */
    assert_int_equal(verdict(m, "u80", "c80", 1), GS_K8S_FAIL);
    claim(m, GS_K8S_MODIFIED, "c30", "gpu.gpushare.io", 30, "solo", 0);
    assert_int_equal(verdict(m, "u80", "c80", 2), GS_K8S_FAIL);
    claim(m, GS_K8S_DELETED, "c30", "gpu.gpushare.io", 30, "solo", 0);
    assert_int_equal(verdict(m, "u80", "c80", 3), GS_K8S_PASS);
    /* An assumption the API server never confirms expires. */
    claim(m, GS_K8S_ADDED, "c40", "gpu.gpushare.io", 40, NULL, 0);
    args_for(&a, "u40", "c40", "\"solo\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 10, &ans), 0);
    gs_k8s_answer_free(&ans);
    gs_k8s_args_free(&a);
    assert_int_equal(verdict(m, "u80", "c80", 39), GS_K8S_FAIL);
    assert_int_equal(verdict(m, "u80", "c80", 41), GS_K8S_PASS);
    gs_k8s_model_free(m);
}

/* A republished slice that only reorders the devices changes the first fit: the 30 % share now
 * lands on a's fresh gpu-1, as good as b's (50 points each); the engine's order decides. */
static void test_reorder(void **state)
{
    (void)state;
    gs_k8s_model_t *m = three_nodes(0);
    listed(m);
    gs_k8s_args_t a;
    gs_k8s_answer_t ans;
    args_for(&a, "u1", "want", "\"a\",\"b\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.scores[0] + ans.scores[1], 11);
    gs_k8s_answer_free(&ans);
    slice(m, GS_K8S_MODIFIED, "a", 2, (int[]){1, 0});
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.scores[0] + ans.scores[1], 19);
    gs_k8s_answer_free(&ans);
    gs_k8s_model_stats_t st;
    gs_k8s_model_stats(m, &st);
    assert_int_equal(st.rebuilds, 1); /* an order is updated in place */
    gs_k8s_args_free(&a);
    gs_k8s_model_free(m);
}

/* A new LIST drops what it does not name: node c and the claim of a become unknown. */
static void test_relist(void **state)
{
    (void)state;
    gs_k8s_model_t *m = three_nodes(0);
    listed(m);
    gs_k8s_model_list_begin(m, GS_K8S_NODES);
    node(m, "a", "32");
    node(m, "b", "64");
    gs_k8s_model_list_end(m, GS_K8S_NODES);
    gs_k8s_model_list_begin(m, GS_K8S_CLAIMS);
    claim(m, GS_K8S_ADDED, "want", "gpu.gpushare.io", 30, NULL, 0);
    gs_k8s_model_list_end(m, GS_K8S_CLAIMS);
    gs_k8s_args_t a;
    gs_k8s_answer_t ans;
    args_for(&a, "u1", "want", "\"a\",\"b\",\"c\"");
    assert_int_equal(gs_k8s_model_prioritize(m, &a, 0, &ans), 0);
    assert_int_equal(ans.unknown, 1);
    assert_int_equal(ans.scores[2], 0);
    /* a's gpu-0 is free again: a and b tie. */
    assert_int_equal(ans.scores[0] + ans.scores[1], 19);
    gs_k8s_answer_free(&ans);
    gs_k8s_model_stats_t st;
    gs_k8s_model_stats(m, &st);
    assert_int_equal(st.nodes, 2);
    assert_int_equal(st.claims, 1);
    gs_k8s_args_free(&a);
    gs_k8s_model_free(m);
}

int main(void)
{
    gs_log_init("test_k8s_model", GS_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verbs),  cmocka_unit_test(test_neutral),
        cmocka_unit_test(test_assume), cmocka_unit_test(test_reorder),
        cmocka_unit_test(test_relist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
