/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of online placement (include/gpushare/placement_online.h): first fit in a device
 * order, the device orders, scores of first-fit placements, ranks, and the replay helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/placement_online.h"

static int add(gs_place_cluster_t *c, const char *name, uint32_t cpu, uint32_t ngpu)
{
    gs_place_node_spec_t spec = {
        .name = name, .cpu_milli = cpu, .mem_mib = 1024, .num_gpu = ngpu, .model = "G"};
    int index = -1;
    assert_int_equal(gs_place_cluster_add_node(c, &spec, &index), 0);
    return index;
}

static gs_place_request_t req(uint32_t cpu, uint32_t num_gpu, uint32_t milli)
{
    gs_place_request_t r = {.cpu_milli = cpu, .mem_mib = 1, .num_gpu = num_gpu, .gpu_milli = milli};
    return r;
}

/* Sets what is left on each GPU of node. */
static void set_left(gs_place_cluster_t *c, int node, const uint32_t *left)
{
    gs_place_node_state_t st;
    assert_int_equal(gs_place_node_get(c, node, &st), 0);
    for (uint32_t g = 0; g < st.num_gpu; g++)
        st.gpu_left[g] = left[g];
    assert_int_equal(gs_place_node_set(c, node, &st), 0);
}

static gs_place_workload_t *workload(size_t n, const gs_place_request_t *shapes, const int *count)
{
    gs_place_workload_t *w = NULL;
    assert_int_equal(gs_place_workload_new(&w), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gs_place_workload_add(w, &shapes[i], count[i]), 0);
    assert_int_equal(gs_place_workload_finish(w, 1.0), 0);
    return w;
}

static void test_first_fit(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int n = add(c, "n", 32000, 4);
    set_left(c, n, (uint32_t[]){300, 1000, 500, 0});
    const uint8_t index[4] = {0, 1, 2, 3}, reverse[4] = {3, 2, 1, 0};
    gs_place_decision_t d;
    gs_place_request_t share = req(1000, 1, 400);
    assert_int_equal(gs_place_first_fit(c, n, index, 4, &share, &d), 0);
    assert_int_equal(d.node, n);
    assert_int_equal(d.num_gpu, 1);
    assert_int_equal(d.gpus[0], 1);
    assert_int_equal(gs_place_first_fit(c, n, reverse, 4, &share, &d), 0);
    assert_int_equal(d.gpus[0], 2);
    gs_place_request_t two = req(1000, 2, 1000), cpu = req(40000, 1, 100);
    assert_int_equal(gs_place_first_fit(c, n, index, 4, &two, &d), GS_ENOFIT);
    assert_int_equal(gs_place_first_fit(c, n, index, 4, &cpu, &d), GS_ENOFIT);
    /* An order that names a GPU twice, or one the node lacks, is refused. */
    assert_int_equal(gs_place_first_fit(c, n, (uint8_t[]){0, 0, 1, 2}, 4, &share, &d), GS_EINVAL);
    assert_int_equal(gs_place_first_fit(c, n, (uint8_t[]){4}, 1, &share, &d), GS_EINVAL);
    /* Whole GPUs come back ascending whatever the order. */
    set_left(c, n, (uint32_t[]){1000, 1000, 1000, 1000});
    assert_int_equal(gs_place_first_fit(c, n, reverse, 4, &two, &d), 0);
    assert_int_equal(d.num_gpu, 2);
    assert_int_equal(d.gpus[0], 2);
    assert_int_equal(d.gpus[1], 3);
    gs_place_cluster_free(c);
}

static void test_orders(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    gs_place_engine_t *e = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int n = add(c, "n", 32000, 5);
    set_left(c, n, (uint32_t[]){300, 1000, 0, 500, 300});
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_BESTFIT, NULL, 1, &e), 0);
    uint8_t order[GS_PLACE_MAX_GPUS];
    assert_int_equal(gs_place_device_order(e, n, GS_PLACE_ORDER_INDEX, order), 0);
    assert_memory_equal(order, ((uint8_t[]){0, 1, 2, 3, 4}), 5);
    /* Least room first, equal rooms by index, full GPUs last. */
    assert_int_equal(gs_place_device_order(e, n, GS_PLACE_ORDER_TIGHTEST, order), 0);
    assert_memory_equal(order, ((uint8_t[]){0, 4, 3, 1, 2}), 5);
    /* The policy order needs a policy with a fragmentation measure. */
    assert_int_equal(gs_place_device_order(e, n, GS_PLACE_ORDER_POLICY, order), GS_EINVAL);
    assert_int_equal(gs_place_device_order(e, 7, GS_PLACE_ORDER_INDEX, order), GS_EINVAL);
    gs_place_order_t how;
    assert_int_equal(gs_place_order_parse("tightest", &how), 0);
    assert_int_equal(how, GS_PLACE_ORDER_TIGHTEST);
    assert_int_equal(gs_place_order_parse("fastest", &how), GS_EINVAL);
    assert_string_equal(gs_place_order_name(GS_PLACE_ORDER_POLICY), "policy");
    assert_string_equal(gs_place_order_name(GS_PLACE_ORDER_COUNT), "?");
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* gpushare leaves the 530 that a 470 left for another 470 and puts a 320 on a fresh GPU (docs/
 * placement.md): with 320s twice as frequent as 470s, the order that makes the allocator's first
 * fit the policy's choice most often lists the fresh GPU first; the tightest order does not. */
static void test_policy_order(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    gs_place_engine_t *g = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int n = add(c, "n", 64000, 2);
    set_left(c, n, (uint32_t[]){530, 1000});
    gs_place_request_t shapes[4] = {req(1000, 1, 470), req(1000, 1, 320), req(1000, 1, 650),
                                    req(1000, 1, 1000)};
    gs_place_workload_t *w = workload(4, shapes, (int[]){10, 20, 10, 30});
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_GPUSHARE, w, 1, &g), 0);
    gs_place_decision_t d;
    gs_place_request_t r470 = req(1000, 1, 470), r320 = req(1000, 1, 320);
    assert_int_equal(gs_place_select(g, &r470, &d), 0);
    assert_int_equal(d.gpus[0], 0);
    assert_int_equal(gs_place_select(g, &r320, &d), 0);
    assert_int_equal(d.gpus[0], 1);
    uint8_t order[GS_PLACE_MAX_GPUS];
    assert_int_equal(gs_place_device_order(g, n, GS_PLACE_ORDER_TIGHTEST, order), 0);
    assert_memory_equal(order, ((uint8_t[]){0, 1}), 2);
    assert_int_equal(gs_place_device_order(g, n, GS_PLACE_ORDER_POLICY, order), 0);
    assert_memory_equal(order, ((uint8_t[]){1, 0}), 2);
    /* With 470s the more frequent, the tight GPU stays first. */
    gs_place_engine_free(g);
    gs_place_workload_free(w);
    w = workload(4, shapes, (int[]){20, 10, 10, 30});
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_GPUSHARE, w, 1, &g), 0);
    assert_int_equal(gs_place_device_order(g, n, GS_PLACE_ORDER_POLICY, order), 0);
    assert_memory_equal(order, ((uint8_t[]){0, 1}), 2);
    gs_place_engine_free(g);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* FGD with one task shape, a 600 share: GPU 1 (500 left) is lost to it (F = 500). A 500 there
 * leaves nothing lost: (500 - 0) / 1000 through the sigmoid, 62 points; on GPU 0 neither GPU
 * can take a 600 any more (F = 1000): 37 points. */
static void test_score_decision(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    gs_place_engine_t *f = NULL, *b = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int n = add(c, "n", 32000, 2);
    set_left(c, n, (uint32_t[]){1000, 500});
    gs_place_request_t shape = req(0, 1, 600), r = req(1000, 1, 500);
    gs_place_workload_t *w = workload(1, &shape, (int[]){1});
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_FGD, w, 1, &f), 0);
    gs_place_decision_t on1 = {.node = n, .num_gpu = 1, .gpus = {1}};
    gs_place_decision_t on0 = {.node = n, .num_gpu = 1, .gpus = {0}};
    int64_t s = 0;
    assert_int_equal(gs_place_score_decision(f, &r, &on1, &s), 0);
    assert_int_equal(s, 62);
    assert_int_equal(gs_place_score_decision(f, &r, &on0, &s), 0);
    assert_int_equal(s, 37);
    /* The policy's own choice on the node: GPU 1, 62 points. */
    gs_place_decision_t own;
    assert_int_equal(gs_place_score_node(f, &r, n, &s, &own), 0);
    assert_int_equal(s, 62);
    assert_int_equal(own.num_gpu, 1);
    assert_int_equal(own.gpus[0], 1);
    gs_place_request_t big = req(1000, 1, 600);
    assert_int_equal(gs_place_score_decision(f, &big, &on1, &s), GS_ENOFIT);
    assert_int_equal(gs_place_score_node(f, &big, n, &s, &own), 0); /* GPU 0 has room */
    gs_place_request_t huge = req(64000, 1, 100);
    assert_int_equal(gs_place_score_node(f, &huge, n, &s, &own), GS_ENOFIT);
    gs_place_decision_t wrong = {.node = n, .num_gpu = 2, .gpus = {0, 1}};
    assert_int_equal(gs_place_score_decision(f, &r, &wrong, &s), GS_EINVAL);
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_BESTFIT, NULL, 1, &b), 0);
    assert_int_equal(gs_place_score_decision(b, &r, &on1, &s), GS_EINVAL);
    gs_place_engine_free(b);
    gs_place_engine_free(f);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* Equal nodes: gs_place_select takes the one of smaller rank. */
static void test_rank(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    gs_place_engine_t *e = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    for (int i = 0; i < 8; i++)
        add(c, "same", 32000, 2);
    assert_int_equal(gs_place_engine_new(c, GS_PLACE_PACKING, NULL, 42, &e), 0);
    uint64_t best = UINT64_MAX, rank;
    int first = -1;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(gs_place_node_rank(e, i, &rank), 0);
        if (rank < best) {
            best = rank;
            first = i;
        }
    }
    gs_place_decision_t d;
    gs_place_request_t r = req(1000, 1, 500);
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, first);
    assert_int_equal(gs_place_node_rank(e, 8, &rank), GS_EINVAL);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

#define NODES "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,G\nn1,32000,65536,4,G\n"
#define PODS                                                                                       \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,2000,1024,1,250\n"        \
    "p2,1000,2048,2,1000\np3,4000,1024,0,0\n"

/* The sequence is gs_place_replay's: its cumulative GPU demand is the replay's arrived curve. */
static void test_replay_sequence(void **state)
{
    (void)state;
    gs_place_nodes_t nodes;
    gs_place_pods_t pods;
    char err[GS_PLACE_ERR_MAX];
    assert_int_equal(gs_place_nodes_parse(NODES, strlen(NODES), "nodes", &nodes, err, sizeof(err)),
                     0);
    assert_int_equal(gs_place_pods_parse(PODS, strlen(PODS), "pods", &pods, err, sizeof(err)), 0);
    gs_place_replay_opts_t o = {.policy = GS_PLACE_GPUSHARE, .seed = 7, .tune = 1.3};
    gs_place_replay_result_t r;
    size_t *seq = NULL, n = 0;
    assert_int_equal(gs_place_replay(&nodes, &pods, &o, &r, err, sizeof(err)), 0);
    assert_int_equal(gs_place_replay_sequence(&nodes, &pods, &o, &seq, &n, err, sizeof(err)), 0);
    assert_int_equal(n, r.pods);
    uint64_t arrived = 0;
    for (size_t i = 0; i < n; i++) {
        arrived += (uint64_t)pods.pods[seq[i]].num_gpu * pods.pods[seq[i]].gpu_milli;
        assert_int_equal(arrived, r.arrived_milli[i + 1]);
    }
    /* The table helper rebuilds the replay's table from its records. */
    gs_place_replay_result_t copy = r;
    memset(copy.table, 0, sizeof(copy.table));
    memset(copy.valid, 0, sizeof(copy.valid));
    gs_place_replay_table(&copy);
    assert_memory_equal(copy.table, r.table, sizeof(r.table));
    assert_memory_equal(copy.valid, r.valid, sizeof(r.valid));
    free(seq);
    gs_place_replay_result_free(&r);
    gs_place_pods_free(&pods);
    gs_place_nodes_free(&nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_fit),    cmocka_unit_test(test_orders),
        cmocka_unit_test(test_policy_order), cmocka_unit_test(test_score_decision),
        cmocka_unit_test(test_rank),         cmocka_unit_test(test_replay_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
