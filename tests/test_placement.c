/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the placement engine: each policy on tiny clusters with known answers, the
 * resource model, target workloads and capacity planning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/placement.h"
#include "placement_internal.h"

/* A node with n GPUs of model "G" and the given CPU (milli) and memory (MiB). */
static int add(gs_place_cluster_t *c, const char *name, uint32_t cpu, uint64_t mem, uint32_t n)
{
    gs_place_node_spec_t spec = {
        .name = name, .cpu_milli = cpu, .mem_mib = mem, .num_gpu = n, .model = "G"};
    int index = -1;
    assert_int_equal(gs_place_cluster_add_node(c, &spec, &index), 0);
    return index;
}

static gs_place_request_t req(uint32_t cpu, uint32_t num_gpu, uint32_t milli)
{
    gs_place_request_t r = {.cpu_milli = cpu, .mem_mib = 1, .num_gpu = num_gpu, .gpu_milli = milli};
    return r;
}

/* Places r on node at the given GPUs (ascending), asserting success. */
static void put(gs_place_cluster_t *c, int node, gs_place_request_t r, uint32_t ngpu, ...)
{
    gs_place_decision_t d = {.node = node, .num_gpu = ngpu};
    va_list ap;
    va_start(ap, ngpu);
    for (uint32_t i = 0; i < ngpu; i++)
        d.gpus[i] = (uint8_t)va_arg(ap, int);
    va_end(ap);
    assert_int_equal(gs_place_commit(c, &r, &d), 0);
}

/* The policy's raw score of a node (the engine's filters are the caller's business). */
static int64_t score(gs_place_engine_t *e, int node, gs_place_request_t r)
{
    return e->ops->score(e, &e->cluster->nodes[node], &r);
}

static gs_place_engine_t *engine(gs_place_cluster_t *c, gs_place_policy_t p,
                                 const gs_place_workload_t *w)
{
    gs_place_engine_t *e = NULL;
    assert_int_equal(gs_place_engine_new(c, p, w, 7, &e), 0);
    return e;
}

/* A finished workload of the given shapes, each counted `count` times. */
static gs_place_workload_t *workload(int n, const gs_place_request_t *shapes, const int *count)
{
    gs_place_workload_t *w = NULL;
    assert_int_equal(gs_place_workload_new(&w), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(gs_place_workload_add(w, &shapes[i], count[i]), 0);
    assert_int_equal(gs_place_workload_finish(w, 1.0), 0);
    return w;
}

static void test_policy_names(void **state)
{
    (void)state;
    gs_place_policy_t p;
    assert_int_equal(gs_place_policy_parse("FGD", &p), 0);
    assert_int_equal(p, GS_PLACE_FGD);
    assert_int_equal(gs_place_policy_parse("gpupacking", &p), 0);
    assert_int_equal(p, GS_PLACE_PACKING);
    assert_int_equal(gs_place_policy_parse("gpuclustering", &p), 0);
    assert_int_equal(p, GS_PLACE_CLUSTERING);
    assert_int_equal(gs_place_policy_parse("Spread", &p), 0);
    assert_int_equal(p, GS_PLACE_SPREAD);
    assert_int_equal(gs_place_policy_parse("worstfit", &p), GS_EINVAL);
    assert_string_equal(gs_place_policy_name(GS_PLACE_GPUSHARE), "gpushare");
    assert_string_equal(gs_place_policy_label(GS_PLACE_RANDOM), "01-Random");
    assert_string_equal(gs_place_policy_label(GS_PLACE_DOTPROD), "02-DotProd");
    assert_string_equal(gs_place_policy_label(GS_PLACE_CLUSTERING), "03-GpuClustering");
    assert_string_equal(gs_place_policy_label(GS_PLACE_PACKING), "04-GpuPacking");
    assert_string_equal(gs_place_policy_label(GS_PLACE_BESTFIT), "05-BestFit");
    assert_string_equal(gs_place_policy_label(GS_PLACE_FGD), "06-FGD");
    assert_string_equal(gs_place_policy_label(GS_PLACE_GPUSHARE), "07-gpushare");
    assert_string_equal(gs_place_policy_label(GS_PLACE_SPREAD), "08-Spread");
    assert_string_equal(gs_place_policy_label(GS_PLACE_POLICY_COUNT), "?");
}

static void test_request_check(void **state)
{
    (void)state;
    char err[GS_PLACE_ERR_MAX];
    gs_place_request_t r = req(1000, 2, 500);
    assert_int_equal(gs_place_request_check(&r, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "a request for 2 GPUs must take whole GPUs (gpu_milli 1000)");
    r = req(1000, 1, 0);
    assert_int_equal(gs_place_request_check(&r, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "gpu_milli 0 is not in 1..1000");
    r = req(1000, 0, 5);
    assert_int_equal(gs_place_request_check(&r, err, sizeof(err)), GS_EINVAL);
    r = req(1000, 17, 1000);
    assert_int_equal(gs_place_request_check(&r, NULL, 0), GS_EINVAL);
    r = req(1000, 4, 1000);
    assert_int_equal(gs_place_request_check(&r, NULL, 0), 0);
    assert_int_equal(gs_place_request_milli(&r), 4000);
    assert_int_equal(gs_place_milli_for_bytes(UINT64_C(4) << 30, UINT64_C(16) << 30), 250);
    assert_int_equal(gs_place_milli_for_bytes(1, 3000), 1);
    assert_int_equal(gs_place_milli_for_bytes(7, 3), 1000);
    assert_int_equal(gs_place_milli_for_bytes(0, 3), 0);
}

static void test_commit_release(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int n = add(c, "n0", 8000, 1024, 2);
    assert_int_equal(gs_place_cluster_gpu_milli(c), 2000);
    gs_place_request_t r = req(3000, 1, 600);
    put(c, n, r, 1, 1);
    gs_place_node_state_t s;
    assert_int_equal(gs_place_node_get(c, n, &s), 0);
    assert_int_equal(s.cpu_left, 5000);
    assert_int_equal(s.mem_left, 1023);
    assert_int_equal(s.gpu_left[0], 1000);
    assert_int_equal(s.gpu_left[1], 400);
    assert_int_equal(gs_place_cluster_used_milli(c), 600);
    /* 600 more does not fit GPU 1; a bad GPU index or count is refused. */
    gs_place_decision_t d = {.node = n, .num_gpu = 1, .gpus = {1}};
    assert_int_equal(gs_place_commit(c, &r, &d), GS_ENOFIT);
    d.gpus[0] = 2;
    assert_int_equal(gs_place_commit(c, &r, &d), GS_EINVAL);
    d.num_gpu = 2;
    assert_int_equal(gs_place_commit(c, &r, &d), GS_EINVAL);
    d = (gs_place_decision_t){.node = n, .num_gpu = 1, .gpus = {1}};
    assert_int_equal(gs_place_release(c, &r, &d), 0);
    assert_int_equal(gs_place_release(c, &r, &d), GS_EINVAL); /* would exceed capacity */
    assert_int_equal(gs_place_node_get(c, n, &s), 0);
    assert_int_equal(s.cpu_left, 8000);
    assert_int_equal(s.gpu_left[1], 1000);
    assert_int_equal(gs_place_cluster_used_milli(c), 0);
    /* The daemon resynchronises a node. */
    s.gpu_left[0] = 250;
    s.cpu_left = 100;
    assert_int_equal(gs_place_node_set(c, n, &s), 0);
    assert_int_equal(gs_place_cluster_used_milli(c), 750);
    s.gpu_left[0] = 1001;
    assert_int_equal(gs_place_node_set(c, n, &s), GS_EINVAL);
    assert_string_equal(gs_place_node_name(c, n), "n0");
    assert_null(gs_place_node_name(c, 5));
    gs_place_cluster_free(c);
}

static void test_models(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    gs_place_node_spec_t t4 = {
        .name = "a", .cpu_milli = 1000, .mem_mib = 10, .num_gpu = 1, .model = "T4"};
    gs_place_node_spec_t v100 = t4;
    v100.model = "V100";
    gs_place_node_spec_t bad = t4;
    bad.model = "";
    assert_int_equal(gs_place_cluster_add_node(c, &t4, NULL), 0);
    assert_int_equal(gs_place_cluster_add_node(c, &v100, NULL), 0);
    assert_int_equal(gs_place_cluster_add_node(c, &bad, NULL), GS_EINVAL);
    assert_int_equal(gs_place_model_id(c, "V100"), 1);
    assert_int_equal(gs_place_model_id(c, "A100"), GS_ENOENT);
    uint64_t mask = 0;
    assert_int_equal(gs_place_model_mask(c, "", &mask), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(gs_place_model_mask(c, "A100|V100", &mask), 0);
    assert_int_equal(mask, 2);
    assert_int_equal(gs_place_model_mask(c, "A100", &mask), 0);
    assert_true(mask == GS_PLACE_MODEL_NONE);
    /* A request for V100 only lands on node 1; one for A100 nowhere. */
    gs_place_engine_t *e = engine(c, GS_PLACE_BESTFIT, NULL);
    gs_place_request_t r = req(100, 1, 1000);
    r.model_mask = 2;
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, 1);
    r.model_mask = GS_PLACE_MODEL_NONE;
    assert_int_equal(gs_place_select(e, &r, &d), GS_ENOFIT);
    assert_int_equal(d.node, -1);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* Random: only feasible nodes, every one of them sometimes, the same choices for the same seed. */
static void test_random(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    add(c, "small", 1000, 100, 1);
    add(c, "a", 8000, 100, 1);
    add(c, "b", 8000, 100, 1);
    gs_place_engine_t *e1 = engine(c, GS_PLACE_RANDOM, NULL),
                      *e2 = engine(c, GS_PLACE_RANDOM, NULL);
    gs_place_request_t r = req(4000, 1, 500);
    int seen[3] = {0};
    for (int i = 0; i < 200; i++) {
        gs_place_decision_t d1, d2;
        assert_int_equal(gs_place_select(e1, &r, &d1), 0);
        assert_int_equal(gs_place_select(e2, &r, &d2), 0);
        assert_int_equal(d1.node, d2.node);
        seen[d1.node]++;
    }
    assert_int_equal(seen[0], 0);
    assert_true(seen[1] > 50 && seen[2] > 50);
    gs_place_engine_free(e1);
    gs_place_engine_free(e2);
    gs_place_cluster_free(c);
}

/* DotProd: free (CPU, GPU) . requested, normalised by 128 CPUs and 8 GPUs; smallest wins. */
static void test_dotprod(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int small = add(c, "small", 8000, 100, 1), big = add(c, "big", 64000, 100, 8);
    gs_place_engine_t *e = engine(c, GS_PLACE_DOTPROD, NULL);
    gs_place_request_t r = req(4000, 1, 1000);
    /* small: 1 - (0.0625*0.03125 + 0.125*0.125)/2 = 0.9912; big: 1 - 0.0703 = 0.9297. */
    assert_int_equal(score(e, small, r), 99);
    assert_int_equal(score(e, big, r), 92);
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, small);
    assert_int_equal(d.num_gpu, 1);
    assert_int_equal(d.gpus[0], 0);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* GpuClustering: a node running only shares beats an idle node, which beats a mixed one. */
static void test_clustering(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int shares = add(c, "shares", 64000, 100, 8), whole = add(c, "whole", 64000, 100, 8);
    int idle = add(c, "idle", 64000, 100, 8);
    put(c, shares, req(100, 1, 500), 1, 0);
    put(c, whole, req(100, 1, 1000), 1, 0);
    gs_place_engine_t *e = engine(c, GS_PLACE_CLUSTERING, NULL);
    gs_place_request_t share = req(100, 1, 300);
    assert_int_equal(score(e, shares, share), 76); /* 25 * 500 / 8000 = 1, + 75 */
    assert_int_equal(score(e, whole, share), 3);   /* 25 * 1000 / 8000 = 3 */
    assert_int_equal(score(e, idle, share), 25);
    assert_int_equal(score(e, whole, req(100, 1, 1000)), 78);
    assert_int_equal(score(e, idle, req(100, 0, 0)), 0);
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &share, &d), 0);
    assert_int_equal(d.node, shares);
    assert_int_equal(d.gpus[0], 0); /* the tightest GPU: 500 left */
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* GpuPacking: a shared GPU first, then a free GPU on a used node, then small empty nodes. */
static void test_packing(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int shared = add(c, "shared", 64000, 100, 2), used = add(c, "used", 64000, 100, 2);
    int two = add(c, "two", 64000, 100, 2), eight = add(c, "eight", 64000, 100, 8);
    put(c, shared, req(100, 1, 700), 1, 1);
    put(c, used, req(100, 1, 1000), 1, 0);
    gs_place_engine_t *e = engine(c, GS_PLACE_PACKING, NULL);
    gs_place_request_t r = req(100, 1, 200);
    assert_int_equal(score(e, shared, r), 97); /* 100 - (300*100/1000)/10 */
    assert_int_equal(score(e, used, r), 49);   /* 50 - 1 free GPU used */
    assert_int_equal(score(e, two, r), 31);    /* 33 - 2 GPUs */
    assert_int_equal(score(e, eight, r), 25);  /* 33 - 8 GPUs */
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, shared);
    assert_int_equal(d.gpus[0], 1);
    /* A whole GPU takes a free GPU of a used node: both used nodes score the same. */
    r = req(100, 1, 1000);
    assert_int_equal(score(e, shared, r), 49);
    assert_int_equal(score(e, used, r), 49);
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_true(d.node == shared || d.node == used);
    assert_int_equal(d.gpus[0], d.node == shared ? 0 : 1);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* BestFit: least CPU and GPU left over, each weighted one half. */
static void test_bestfit(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int tight = add(c, "tight", 16000, 100, 2), roomy = add(c, "roomy", 96000, 100, 8);
    gs_place_engine_t *e = engine(c, GS_PLACE_BESTFIT, NULL);
    gs_place_request_t r = req(8000, 1, 1000);
    /* tight: 1 - (8000/128000 + 1000/8000) / 2 = 0.906; roomy: 1 - (88000/128000 + 7000/8000) / 2
     * = 0.219. */
    assert_int_equal(score(e, tight, r), 90);
    assert_int_equal(score(e, roomy, r), 21);
    gs_place_decision_t d;
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(d.node, tight);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* Spread: the emptiest node, then its roomiest GPU. */
static void test_spread(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int busy = add(c, "busy", 64000, 100, 2), calm = add(c, "calm", 64000, 100, 2);
    put(c, busy, req(100, 1, 1000), 1, 0);
    put(c, calm, req(100, 1, 300), 1, 1);
    gs_place_engine_t *e = engine(c, GS_PLACE_SPREAD, NULL);
    gs_place_request_t r = req(100, 1, 200);
    assert_int_equal(score(e, busy, r), 800);
    assert_int_equal(score(e, calm, r), 1500);
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, calm);
    assert_int_equal(d.gpus[0], 0);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* FGD on a workload of whole GPUs and half GPUs, one of each: a half goes next to another half
 * (the fragment closes) rather than onto a free GPU (a fragment opens). */
static void test_fgd(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int fresh = add(c, "fresh", 64000, 100, 2), half = add(c, "half", 64000, 100, 2);
    put(c, half, req(100, 1, 500), 1, 1);
    gs_place_request_t shapes[2] = {req(1000, 1, 1000), req(1000, 1, 500)};
    int counts[2] = {1, 1};
    gs_place_workload_t *w = workload(2, shapes, counts);
    gs_place_engine_t *e = engine(c, GS_PLACE_FGD, w);
    gs_place_request_t r = req(1000, 1, 500);
    /* fresh: F 0 -> 250 (the whole-GPU shape cannot use 500): sigmoid(-0.25) = 0.438 -> 43.
     * half: F 250 -> 0: sigmoid(0.25) = 0.562 -> 56. */
    assert_int_equal(score(e, fresh, r), 43);
    assert_int_equal(score(e, half, r), 56);
    assert_true(fabs(gs__frag_cached(e, &c->nodes[half]) - 250.0) < 1e-9);
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(e, &r, &d), 0);
    assert_int_equal(d.node, half);
    assert_int_equal(d.gpus[0], 1);
    gs_place_engine_free(e);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* gpushare counts GPUs the CPU cannot serve: a CPU-only task goes where it strands no GPU, while
 * FGD sees no difference between the two nodes. */
static void test_gpushare_cpu_blocked(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int gpus = add(c, "gpus", 16000, 100, 2), cpus = add(c, "cpus", 16000, 100, 0);
    gs_place_request_t shapes[1] = {req(8000, 1, 1000)};
    int counts[1] = {1};
    gs_place_workload_t *w = workload(1, shapes, counts);
    gs_place_engine_t *g = engine(c, GS_PLACE_GPUSHARE, w), *f = engine(c, GS_PLACE_FGD, w);
    gs_place_request_t cpu_task = req(8000, 0, 0);
    /* After the task, one copy of the shape fits the CPU left: one GPU of two is stranded. The
     * fragmentation points are sigmoid(-1) = 0.269 -> 26; the packing value lost is one GPU
     * (1000 milli-GPU of regret, which ranks first: 128 per milli). */
    assert_int_equal(score(g, gpus, cpu_task), 26 - 128 * 1000);
    assert_int_equal(score(g, cpus, cpu_task), 50);
    assert_int_equal(score(f, gpus, cpu_task), 50);
    assert_int_equal(score(f, cpus, cpu_task), 50);
    gs_place_decision_t d;
    assert_int_equal(gs_place_select(g, &cpu_task, &d), 0);
    assert_int_equal(d.node, cpus);
    assert_int_equal(d.num_gpu, 0);
    /* The measure itself: 10 cores left serve one task, so 1000 of 2000 milli is stranded. */
    gs_place_node_state_t s;
    assert_int_equal(gs_place_node_get(c, gpus, &s), 0);
    s.cpu_left = 10000;
    assert_int_equal(gs_place_node_set(c, gpus, &s), 0);
    assert_true(fabs(gs__frag_cached(g, &c->nodes[gpus]) - 1000.0) < 1e-9);
    assert_true(fabs(gs__frag_cached(f, &c->nodes[gpus]) - 0.0) < 1e-9);
    gs_place_engine_free(g);
    gs_place_engine_free(f);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* Host memory is filtered even though it is not part of a cached shape. */
static void test_memory_filter(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    add(c, "a", 64000, 1000, 1);
    add(c, "b", 64000, 4000, 1);
    gs_place_engine_t *e = engine(c, GS_PLACE_PACKING, NULL);
    gs_place_request_t r = req(1000, 1, 100);
    r.mem_mib = 2000;
    gs_place_decision_t d;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(gs_place_place(e, &r, &d), 0);
        assert_int_equal(d.node, 1);
    }
    assert_int_equal(gs_place_select(e, &r, &d), GS_ENOFIT);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* Equal scores go to the same node every time (a fixed order), so load consolidates. */
static void test_ties_consolidate(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    for (int i = 0; i < 4; i++)
        add(c, "same", 64000, 100, 1);
    gs_place_engine_t *e = engine(c, GS_PLACE_CLUSTERING, NULL);
    gs_place_request_t r = req(0, 0, 0);
    gs_place_decision_t d;
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    int first = d.node;
    for (int i = 0; i < 10; i++) {
        assert_int_equal(gs_place_place(e, &r, &d), 0);
        assert_int_equal(d.node, first);
    }
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* GPU device memory in bytes, as the node daemon tracks it. */
static void test_gpu_bytes(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    gs_place_node_spec_t spec = {.name = "h100",
                                 .cpu_milli = UINT32_MAX,
                                 .mem_mib = UINT64_MAX,
                                 .num_gpu = 2,
                                 .model = "H100",
                                 .gpu_mem_bytes = 80};
    assert_int_equal(gs_place_cluster_add_node(c, &spec, NULL), 0);
    gs_place_engine_t *e = engine(c, GS_PLACE_GPUSHARE, NULL);
    gs_place_request_t r = {.num_gpu = 1, .gpu_milli = 100, .gpu_mem_bytes = 50};
    gs_place_decision_t d;
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(d.gpus[0], 1); /* GPU 0 has 30 bytes left */
    assert_int_equal(gs_place_select(e, &r, &d), GS_ENOFIT);
    gs_place_node_state_t s;
    assert_int_equal(gs_place_node_get(c, 0, &s), 0);
    assert_int_equal(s.gpu_mem_left[0], 30);
    assert_int_equal(s.gpu_left[0], 900);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* Nodes added after the engine was created are seen by the next decision. */
static void test_nodes_added_later(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    add(c, "first", 64000, 100, 1);
    gs_place_engine_t *e = engine(c, GS_PLACE_FGD, NULL);
    gs_place_request_t r = req(1000, 1, 1000);
    gs_place_decision_t d;
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(d.node, 0);
    assert_int_equal(gs_place_select(e, &r, &d), GS_ENOFIT);
    int second = add(c, "second", 64000, 100, 2);
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(d.node, second);
    assert_int_equal(gs_place_place(e, &r, &d), 0);
    assert_int_equal(d.node, second);
    assert_int_equal(gs_place_select(e, &r, &d), GS_ENOFIT);
    gs_place_engine_free(e);
    gs_place_cluster_free(c);
}

/* The LP's dual prices: {700, 300, 300} packs as 700+300 and 300+300+300 (a third of a GPU
 * left), so a 300 is worth a third of a GPU and a 700 two thirds; 810s outnumber the 160s that
 * could fill their room, so an 810 is worth a whole GPU and a 160 nothing. */
static void test_pack_prices(void **state)
{
    (void)state;
    uint32_t size[2] = {700, 300};
    double demand[2] = {1, 2}, price[2];
    assert_int_equal(gs__pack_lp_prices(size, demand, 2, price), 0);
    assert_true(fabs(price[0] - 2.0 / 3) < 1e-6);
    assert_true(fabs(price[1] - 1.0 / 3) < 1e-6);
    uint32_t size2[2] = {810, 160};
    double demand2[2] = {10, 1}, price2[2];
    assert_int_equal(gs__pack_lp_prices(size2, demand2, 2, price2), 0);
    assert_true(fabs(price2[0] - 1) < 1e-6);
    assert_true(fabs(price2[1]) < 1e-6);
    assert_int_equal(gs__pack_lp_prices(size, demand, 0, price), 0);
    size[0] = 0;
    assert_int_equal(gs__pack_lp_prices(size, demand, 2, price), GS_EINVAL);
}

/* The completion table: what room is worth given the cores left for the tasks that fill it. */
static void test_pack_values(void **state)
{
    (void)state;
    gs__shape_t shapes[3] = {{.req = req(2000, 1, 700), .weight = 1},
                             {.req = req(1000, 1, 300), .weight = 2},
                             {.req = req(8000, 1, 1000), .weight = 1}};
    gs__pack_t *pack = NULL;
    assert_int_equal(gs__pack_build(shapes, 3, &pack), 0);
    const float *v = pack->value;
#define VALUE(room, cores) v[(room) * (GS__PACK_CORES + 1) + (cores)]
    assert_true(fabs(VALUE(1000, 128) - 1) < 1e-6);     /* a whole GPU, or 700 + 300 */
    assert_true(fabs(VALUE(1000, 3) - 1) < 1e-6);       /* 700 + 300 take 3 cores */
    assert_true(fabs(VALUE(1000, 2) - 2.0 / 3) < 1e-6); /* only the 700 */
    assert_true(fabs(VALUE(300, 1) - 1.0 / 3) < 1e-6);
    assert_true(fabs(VALUE(300, 0)) < 1e-6);
    assert_true(fabs(VALUE(299, 128)) < 1e-6);
#undef VALUE
    gs_place_request_t unknown = req(0, 1, 400), cpu = req(1000, 0, 0);
    assert_true(fabs(gs__pack_request_price(pack, &unknown) - 1.0 / 3) < 1e-6);
    assert_true(fabs(gs__pack_request_price(pack, &shapes[0].req) - 2.0 / 3) < 1e-6);
    assert_true(fabs(gs__pack_request_price(pack, &cpu)) < 1e-9);
    gs__pack_free(pack);
}

/* Many share sizes (a daemon sees any milli-GPU): the LP prices the GS__PACK_SIZES most demanded,
 * the rest are valued by the room they take. */
static void test_pack_many_sizes(void **state)
{
    (void)state;
    gs__shape_t shapes[199];
    for (int i = 0; i < 199; i++)
        shapes[i] = (gs__shape_t){.req = req(1000, 1, 5 * (i + 1)), .weight = i + 1};
    gs__pack_t *pack = NULL;
    assert_int_equal(gs__pack_build(shapes, 199, &pack), 0);
    int known = 0;
    for (int m = 1; m < GS_PLACE_MILLI; m++)
        known += pack->known[m];
    assert_int_equal(known, GS__PACK_SIZES);
    assert_true(pack->known[995] && pack->known[5 * (199 - GS__PACK_SIZES + 1)]);
    assert_false(pack->known[5 * (199 - GS__PACK_SIZES)]);
    gs_place_request_t rare = req(1000, 1, 5);
    assert_true(fabs(gs__pack_request_price(pack, &rare) -
                     pack->value[5 * (GS__PACK_CORES + 1) + GS__PACK_CORES]) < 1e-9);
    gs__pack_free(pack);
}

/* gpushare keeps the pairings of an optimal packing: with 470s, 320s, 650s and whole GPUs to
 * come, a 320 opens a fresh GPU (where a 650 will fill it to 970) rather than taking the 530
 * left by a 470 (which only another 470 fills well) -- the tightest fit, which FGD takes. */
static void test_gpushare_pairs(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    int used = add(c, "used", 64000, 100, 1), fresh = add(c, "fresh", 64000, 100, 1);
    put(c, used, req(1000, 1, 470), 1, 0);
    gs_place_request_t shapes[4] = {req(1000, 1, 470), req(1000, 1, 320), req(1000, 1, 650),
                                    req(1000, 1, 1000)};
    int counts[4] = {10, 10, 10, 30};
    gs_place_workload_t *w = workload(4, shapes, counts);
    gs_place_engine_t *g = engine(c, GS_PLACE_GPUSHARE, w), *f = engine(c, GS_PLACE_FGD, w);
    gs_place_request_t r = req(1000, 1, 320);
    gs_place_decision_t d;
    /* FGD: the used GPU goes from 530 (too small for 650s and whole GPUs, 2/3 of the tasks) to
     * 210 (too small for all): F 353 -> 210, 53 points; the fresh one to 680, too small for whole
     * GPUs (1/2): F 0 -> 340, 41 points. */
    assert_int_equal(score(f, used, r), 53);
    assert_int_equal(score(f, fresh, r), 41);
    assert_int_equal(gs_place_select(f, &r, &d), 0);
    assert_int_equal(d.node, used);
    assert_int_equal(gs_place_select(g, &r, &d), 0);
    assert_int_equal(d.node, fresh);
    /* The used GPU would keep 210, which no task of the workload fills: a regret of at least a
     * sixth of a GPU (a 470's half less what a 320 is worth, at most a third). */
    assert_true(score(g, used, r) <= -128 * 166);
    gs_place_engine_free(g);
    gs_place_engine_free(f);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* A shape's weight is its frequency times the cluster's capacity over what it can use: tasks
 * that only run on the one T4 weigh four times their frequency. */
static void test_gpushare_weights(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    gs_place_node_spec_t t4 = {
        .name = "t4", .cpu_milli = 64000, .mem_mib = 100, .num_gpu = 1, .model = "T4"};
    gs_place_node_spec_t v100 = {
        .name = "v100", .cpu_milli = 64000, .mem_mib = 100, .num_gpu = 3, .model = "V100"};
    assert_int_equal(gs_place_cluster_add_node(c, &t4, NULL), 0);
    assert_int_equal(gs_place_cluster_add_node(c, &v100, NULL), 0);
    gs_place_request_t shapes[3] = {req(1000, 1, 1000), req(2000, 1, 1000), req(1000, 0, 0)};
    assert_int_equal(gs_place_model_mask(c, "T4", &shapes[1].model_mask), 0);
    int counts[3] = {2, 1, 1};
    gs_place_workload_t *w = workload(3, shapes, counts);
    gs_place_engine_t *g = engine(c, GS_PLACE_GPUSHARE, w);
    assert_int_equal(g->nshapes, 3);
    for (size_t i = 0; i < g->nshapes; i++) {
        const gs_place_request_t *m = &g->shapes[i].req;
        double want = m->num_gpu == 0 ? 0 : m->model_mask != 0 ? 0.25 * 4 : 0.5;
        assert_true(fabs(g->weight[i] - want) < 1e-9);
    }
    gs_place_engine_free(g);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

/* Weights count where a shape can run, not how many of its tasks fit: on identical nodes a
 * CPU-heavy shape (one task per node) weighs its frequency, like a light one; a shape only the
 * big node holds weighs more. */
static void test_gpushare_weights_cpu(void **state)
{
    (void)state;
    gs_place_cluster_t *c = NULL;
    assert_int_equal(gs_place_cluster_new(&c), 0);
    add(c, "a", 64000, 100, 8);
    add(c, "b", 64000, 100, 8);
    add(c, "big", 128000, 100, 8);
    gs_place_request_t shapes[3] = {req(40000, 1, 1000), req(4000, 1, 1000), req(100000, 8, 1000)};
    int counts[3] = {1, 2, 1};
    gs_place_workload_t *w = workload(3, shapes, counts);
    gs_place_engine_t *g = engine(c, GS_PLACE_GPUSHARE, w);
    for (size_t i = 0; i < g->nshapes; i++) {
        const gs_place_request_t *m = &g->shapes[i].req;
        double want = m->cpu_milli == 100000 ? 0.25 * 3 : m->cpu_milli == 40000 ? 0.25 : 0.5;
        assert_true(fabs(g->weight[i] - want) < 1e-9);
    }
    gs_place_engine_free(g);
    gs_place_workload_free(w);
    gs_place_cluster_free(c);
}

static void test_workload(void **state)
{
    (void)state;
    gs_place_request_t shapes[4] = {req(1000, 1, 1000), req(2000, 1, 500), req(1000, 0, 0),
                                    req(3000, 8, 1000)};
    int counts[4] = {50, 30, 15, 5};
    gs_place_workload_t *w = NULL;
    assert_int_equal(gs_place_workload_new(&w), 0);
    for (int i = 0; i < 4; i++) {
        gs_place_request_t r = shapes[i];
        r.mem_mib = 100 * (i + 1);
        assert_int_equal(gs_place_workload_add(w, &r, counts[i]), 0);
    }
    assert_int_equal(gs_place_workload_finish(w, 0.95), 0);
    assert_int_equal(gs_place_workload_finish(w, 0.95), GS_EINVAL);
    assert_int_equal(gs_place_workload_size(w), 3); /* 50 + 30 + 15 covers 95 of 100 */
    gs_place_request_t r;
    double p;
    assert_int_equal(gs_place_workload_shape(w, 1, &r, &p), 0);
    assert_int_equal(r.cpu_milli, 2000);
    assert_int_equal(r.mem_mib, 200); /* the mean of its tasks */
    assert_true(fabs(p - 30.0 / 95.0) < 1e-12);
    assert_int_equal(gs_place_workload_shape(w, 3, &r, &p), GS_EINVAL);
    gs_place_workload_free(w);
    assert_int_equal(gs_place_workload_new(&w), 0);
    assert_int_equal(gs_place_workload_finish(w, 0.95), GS_ENOENT);
    gs_place_workload_free(w);
}

/* The example: four jobs at 25 % of a GPU on 1-GPU nodes. */
static void test_plan_example(void **state)
{
    (void)state;
    gs_place_pod_t jobs[4];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < 4; i++) {
        jobs[i].num_gpu = 1;
        jobs[i].gpu_milli = 250;
    }
    gs_place_pods_t list = {jobs, 4};
    gs_place_node_row_t type = {.name = "g4dn.2xlarge",
                                .cpu_milli = UINT32_MAX,
                                .mem_mib = UINT64_MAX,
                                .num_gpu = 1,
                                .model = "T4",
                                .price_per_hour = 0.752};
    gs_place_plan_t shared, alone;
    char err[GS_PLACE_ERR_MAX];
    assert_int_equal(
        gs_place_plan_nodes(&type, &list, GS_PLACE_GPUSHARE, 0, 100, &shared, err, sizeof(err)), 0);
    assert_int_equal(
        gs_place_plan_nodes(&type, &list, GS_PLACE_GPUSHARE, 1, 100, &alone, err, sizeof(err)), 0);
    assert_int_equal(shared.feasible, 1);
    assert_int_equal(shared.nodes, 1);
    assert_int_equal(shared.gpus, 1);
    assert_int_equal(shared.requested_milli, 1000);
    assert_int_equal(alone.nodes, 4);
    assert_int_equal(alone.requested_milli, 4000);
    /* A job larger than the node type never fits. */
    jobs[0].num_gpu = 2;
    jobs[0].gpu_milli = 1000;
    assert_int_equal(
        gs_place_plan_nodes(&type, &list, GS_PLACE_GPUSHARE, 0, 100, &shared, err, sizeof(err)), 0);
    assert_int_equal(shared.feasible, 0);
    assert_int_equal(shared.misfit, 0);
    /* More than max_nodes needed. */
    jobs[0].num_gpu = 1;
    assert_int_equal(
        gs_place_plan_nodes(&type, &list, GS_PLACE_GPUSHARE, 1, 3, &alone, err, sizeof(err)), 0);
    assert_int_equal(alone.feasible, 0);
    assert_true(alone.misfit == SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_request_check),
        cmocka_unit_test(test_commit_release),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_dotprod),
        cmocka_unit_test(test_clustering),
        cmocka_unit_test(test_packing),
        cmocka_unit_test(test_bestfit),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_fgd),
        cmocka_unit_test(test_gpushare_cpu_blocked),
        cmocka_unit_test(test_memory_filter),
        cmocka_unit_test(test_ties_consolidate),
        cmocka_unit_test(test_gpu_bytes),
        cmocka_unit_test(test_nodes_added_later),
        cmocka_unit_test(test_pack_prices),
        cmocka_unit_test(test_pack_values),
        cmocka_unit_test(test_pack_many_sizes),
        cmocka_unit_test(test_gpushare_pairs),
        cmocka_unit_test(test_gpushare_weights),
        cmocka_unit_test(test_gpushare_weights_cpu),
        cmocka_unit_test(test_workload),
        cmocka_unit_test(test_plan_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
