/* SPDX-License-Identifier: Apache-2.0 */
/* Integration test: replays the nine Alibaba openb traces with the ATC'23 protocol (tune 1.3) and
 * asserts issue 13's acceptance figures: on every trace gpushare's mean unallocated GPU % at
 * arrived 100 % is at most 0.95 x the published FGD mean, for seeds 42-46 and again for seeds
 * 47-51, and at most 4.0 on the default trace. It also checks that the replay reproduces the
 * paper (every baseline on the default trace, and FGD on every trace, within 0.1 point of the
 * published figure over seeds 42-51; 0.2 over the quick run's 42-46), and the exact means this
 * implementation produces (a regression check).
 *
 * GS_REPLAY=quick checks three traces (default, gpushare100, multigpu30) on seeds 42-46 only,
 * without the exact means; it is the default when GS_SANITIZE is set (the sanitizer build, where
 * a replay is several times slower). GS_REPLAY=full checks everything in any build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/placement.h"

#define NTRACES 9

/* A trace, the gpushare and FGD means over seeds 42-51 this implementation produces, and whether
 * the quick run checks it. */
static const struct trace {
    const char *name;
    double gpushare, fgd;
    int quick;
} traces[NTRACES] = {
    {"openb_pod_list_default", 3.716, 4.724, 1},
    {"openb_pod_list_cpu050", 3.715, 4.926, 0},
    {"openb_pod_list_cpu100", 3.712, 4.892, 0},
    {"openb_pod_list_gpushare40", 5.152, 6.010, 0},
    {"openb_pod_list_gpushare100", 11.688, 13.360, 1},
    {"openb_pod_list_gpuspec10", 3.815, 5.436, 0},
    {"openb_pod_list_gpuspec33", 6.299, 12.127, 0},
    {"openb_pod_list_multigpu20", 3.386, 4.402, 0},
    {"openb_pod_list_multigpu30", 2.982, 3.654, 1},
};

/* Seeds 42-46 and 47-51: each group must meet the acceptance figures on its own. */
static const int group_first[2] = {42, 47};
#define GROUP_SEEDS 5

typedef struct setup {
    char dir[4096];
    gs_place_nodes_t nodes;
    int quick;
} setup_t;

static int setup(void **state)
{
    static setup_t t;
    const char *data = getenv("GS_DATA_DIR"), *mode = getenv("GS_REPLAY");
    const char *sanitize = getenv("GS_SANITIZE");
    snprintf(t.dir, sizeof(t.dir), "%s/traces/alibaba-openb", data ? data : "data");
    t.quick = mode != NULL ? strcmp(mode, "quick") == 0 : sanitize != NULL && sanitize[0] != '\0';
    char path[4200], err[GS_PLACE_ERR_MAX];
    snprintf(path, sizeof(path), "%s/openb_node_list_gpu_node.csv", t.dir);
    if (gs_place_nodes_read(path, &t.nodes, err, sizeof(err)) != 0) {
        fprintf(stderr, "test_placement_replay: %s\n", err);
        return -1;
    }
    printf("mode: %s\n", t.quick ? "quick (3 traces, seeds 42-46)" : "full (9 traces, 42-51)");
    *state = &t;
    return 0;
}

static int teardown(void **state)
{
    setup_t *t = *state;
    gs_place_nodes_free(&t->nodes);
    return 0;
}

static gs_place_pods_t load(const setup_t *t, const char *workload)
{
    char path[4200], err[GS_PLACE_ERR_MAX];
    gs_place_pods_t pods;
    snprintf(path, sizeof(path), "%s/%s.csv", t->dir, workload);
    if (gs_place_pods_read(path, &pods, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return pods;
}

/* Mean unallocated % at arrived 100 % over seeds first .. first + n - 1. */
static double replay_mean(const setup_t *t, const gs_place_pods_t *pods, gs_place_policy_t p,
                          int first, int n)
{
    double sum = 0;
    char err[GS_PLACE_ERR_MAX];
    for (int s = first; s < first + n; s++) {
        gs_place_replay_opts_t opts = {.policy = p, .seed = (uint64_t)s, .tune = 1.3};
        gs_place_replay_result_t r;
        assert_int_equal(gs_place_replay(&t->nodes, pods, &opts, &r, err, sizeof(err)), 0);
        assert_true(r.valid[100]);
        assert_int_equal(r.total_gpus, 6212);
        /* Arrivals only grow; the allocation never exceeds them or the capacity. */
        for (size_t i = 1; i < r.events; i++) {
            assert_true(r.arrived_milli[i] >= r.arrived_milli[i - 1]);
            assert_true(r.used_milli[i] <= r.arrived_milli[i]);
            assert_true(r.used_milli[i] <= r.total_milli);
        }
        sum += 100.0 - r.table[100];
        gs_place_replay_result_free(&r);
    }
    return sum / n;
}

/* The published mean unallocated % at arrived 100 % for (workload, label) over the seeds. */
static double published(const setup_t *t, const char *workload, const char *label, int first, int n)
{
    char path[4200], line[8192];
    snprintf(path, sizeof(path), "%s/published_allocation_fgd_atc23.csv", t->dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    double sum = 0;
    int found = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *field[140], *save = NULL;
        int nf = 0;
        for (char *tok = strtok_r(line, ",\n", &save); tok != NULL && nf < 140;
             tok = strtok_r(NULL, ",\n", &save))
            field[nf++] = tok;
        /* workload, sc_policy, tune, seed, total_gpus, then arrived 0..130: 100 is field 105. */
        if (nf < 106 || strcmp(field[0], workload) != 0 || strcmp(field[1], label) != 0)
            continue;
        int seed = atoi(field[3]);
        if (seed >= first && seed < first + n) {
            sum += 100.0 - strtod(field[105], NULL);
            found++;
        }
    }
    fclose(f);
    assert_int_equal(found, n);
    return sum / n;
}

/* How close a replayed mean is to the published one (docs/placement.md): 0.1 point over seeds
 * 42-51, 0.2 over the quick run's 42-46 (fewer seeds, further apart: up to 0.18 seen); 1e-9 for
 * the sums' rounding (cpu100's FGD is 0.100 off). */
#define FIGURE_BOUND(t) ((t)->quick ? 0.2 : 0.1 + 1e-9)

/* The replay reproduces the paper: each baseline within FIGURE_BOUND of the published figure on
 * the default trace; also the exact means this implementation produces. */
static void test_baselines_default(void **state)
{
    setup_t *t = *state;
    static const double exact[] = {13.608, 9.347, 8.380, 8.280, 7.122, 4.724};
    int n = t->quick ? GROUP_SEEDS : 2 * GROUP_SEEDS;
    gs_place_pods_t pods = load(t, "openb_pod_list_default");
    for (int p = GS_PLACE_RANDOM; p <= GS_PLACE_FGD; p++) {
        double ours = replay_mean(t, &pods, (gs_place_policy_t)p, 42, n);
        double paper = published(t, "openb_pod_list_default", gs_place_policy_label(p), 42, n);
        printf("default %-16s ours %6.3f published %6.3f\n", gs_place_policy_label(p), ours, paper);
        assert_true(fabs(ours - paper) <= FIGURE_BOUND(t));
        if (!t->quick)
            assert_true(fabs(ours - exact[p]) < 0.0005);
    }
    gs_place_pods_free(&pods);
}

/* The comparison is fair: our FGD is within FIGURE_BOUND of the published FGD on every trace. */
static void test_fgd_every_trace(void **state)
{
    setup_t *t = *state;
    int n = t->quick ? GROUP_SEEDS : 2 * GROUP_SEEDS;
    for (int i = 0; i < NTRACES; i++) {
        if (t->quick && !traces[i].quick)
            continue;
        gs_place_pods_t pods = load(t, traces[i].name);
        double ours = replay_mean(t, &pods, GS_PLACE_FGD, 42, n);
        double paper = published(t, traces[i].name, "06-FGD", 42, n);
        printf("%-27s fgd %.4f published %6.3f\n", traces[i].name, ours, paper);
        assert_true(fabs(ours - paper) <= FIGURE_BOUND(t));
        if (!t->quick)
            assert_true(fabs(ours - traces[i].fgd) < 0.0005);
        gs_place_pods_free(&pods);
    }
}

/* Issue 13, acceptance 1 and 2: at most 0.95 x the published FGD mean on every trace, for each
 * group of seeds, and at most 4.0 on the default trace. */
static void test_gpushare_beats_fgd(void **state)
{
    setup_t *t = *state;
    for (int i = 0; i < NTRACES; i++) {
        if (t->quick && !traces[i].quick)
            continue;
        gs_place_pods_t pods = load(t, traces[i].name);
        double sum = 0;
        for (int g = 0; g < (t->quick ? 1 : 2); g++) {
            double ours = replay_mean(t, &pods, GS_PLACE_GPUSHARE, group_first[g], GROUP_SEEDS);
            double fgd = published(t, traces[i].name, "06-FGD", group_first[g], GROUP_SEEDS);
            printf("%-27s seeds %d-%d gpushare %6.3f published fgd %6.3f ratio %.3f\n",
                   traces[i].name, group_first[g], group_first[g] + GROUP_SEEDS - 1, ours, fgd,
                   ours / fgd);
            assert_true(ours <= 0.95 * fgd);
            if (i == 0)
                assert_true(ours <= 4.0);
            sum += ours;
        }
        if (!t->quick) {
            printf("%-27s seeds 42-51 gpushare %.4f\n", traces[i].name, sum / 2);
            assert_true(fabs(sum / 2 - traces[i].gpushare) < 0.0005);
        }
        gs_place_pods_free(&pods);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baselines_default),
        cmocka_unit_test(test_fgd_every_trace),
        cmocka_unit_test(test_gpushare_beats_fgd),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
