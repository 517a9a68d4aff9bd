/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpusim's core: model tables, device specs, timelines, node state and reaping, and
 * the ground truth of device time (active_ns, future_union) where it is computed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node.h"

#define MS  INT64_C(1000000)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static void test_models(void **state)
{
    (void)state;
    const gsim_model_t *h100 = gsim_model_find("H100-80GB");
    assert_non_null(h100);
    assert_int_equal(h100->memory_mib, 81920);
    assert_int_equal(h100->sms, 132);
    assert_int_equal(h100->mig_compute_slices, 7);
    assert_int_equal(h100->n_profiles, 7);
    /* Calibrated on a real H100 80GB HBM3 (data/gpu-facts/h100-measurements.md): NVML's total,
     * the memory NVML shows used with no process, and NVML's per-process used memory of a
     * process with one context. */
    assert_int_equal(h100->fb_mib << 20, UINT64_C(85520809984));
    assert_int_equal(h100->reserved_mib << 20, UINT64_C(503316480));
    assert_int_equal(gsim_context_bytes(h100, h100->sms), UINT64_C(543162368));
    /* A 1g instance's context has the base part and 16 SMs' local memory. */
    assert_int_equal(gsim_context_bytes(h100, 16), (254 + 16 * 2) * MIB);
    const gsim_model_t *a100 = gsim_model_find("A100-40GB");
    assert_non_null(a100);
    assert_string_equal(a100->profiles[4].name, "3g.20gb");
    assert_int_equal(a100->profiles[4].id, 9);
    assert_int_equal(a100->profiles[4].starts_mask, (1u << 0) | (1u << 4));
    assert_int_equal(a100->profiles[4].size, 4);
    assert_int_equal(a100->fb_mib, 40960); /* estimates, see gpu-models.csv */
    assert_int_equal(a100->reserved_mib, 240);
    assert_int_equal(gsim_context_bytes(a100, a100->sms), 470 * MIB);
    const gsim_model_t *t4 = gsim_model_find("T4-16GB");
    assert_non_null(t4);
    assert_int_equal(t4->n_profiles, 0);
    assert_int_equal(gsim_context_bytes(t4, t4->sms), 294 * MIB);
    assert_null(gsim_model_find("B200"));
}

static void test_parse_devices(void **state)
{
    (void)state;
    const gsim_model_t *out[GSIM_MAX_DEVICES];
    char err[160];
    assert_int_equal(gsim_parse_devices(NULL, out, err, sizeof(err)), 1);
    assert_string_equal(out[0]->name, "H100-80GB");
    assert_int_equal(gsim_parse_devices("A100-40GB*4", out, err, sizeof(err)), 4);
    assert_string_equal(out[3]->name, "A100-40GB");
    assert_int_equal(gsim_parse_devices("H100-80GB,A100-40GB*2", out, err, sizeof(err)), 3);
    assert_string_equal(out[2]->name, "A100-40GB");
    assert_int_equal(gsim_parse_devices("H100", out, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unknown GPU model \"H100\""));
    assert_int_equal(gsim_parse_devices("H100-80GB*0", out, err, sizeof(err)), -EINVAL);
    assert_int_equal(gsim_parse_devices("H100-80GB*17", out, err, sizeof(err)), -EINVAL);
    assert_int_equal(gsim_parse_devices("H100-80GB*9,H100-80GB*8", out, err, sizeof(err)), -EINVAL);
    assert_int_equal(gsim_parse_devices("H100-80GB,", out, err, sizeof(err)), -EINVAL);
}

/* Reserves work_ns of pid's work (MPS client at mps_pct, 0 = time-sliced) ready at ready. */
static int reserve(gsim_timeline_t *tl, int32_t pid, uint32_t mps_pct, int64_t ready,
                   int64_t work_ns, int64_t *s, int64_t *e)
{
    gsim_work_t w = {.pid = pid, .mps_pct = mps_pct, .ready_ns = ready, .work_ns = work_ns};
    return gsim_timeline_reserve(tl, &w, s, e);
}

/* The wall time of work at speed (rounded as the timeline rounds). */
static int64_t at_speed(int64_t work_ns, double speed)
{
    return (int64_t)((double)work_ns / speed + 0.5);
}

static void test_timeline_time_slicing(void **state)
{
    (void)state;
    static gsim_timeline_t tl;
    memset(&tl, 0, sizeof(tl));
    int64_t t0 = gsim_now_ns() + 1000 * MS, s, e;
    /* Alone on the device: full speed. */
    assert_int_equal(reserve(&tl, 1, 0, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0);
    assert_int_equal(e, t0 + 10 * MS);
    /* Another process waits for the first, and shares the device by time slices. */
    int64_t d2 = at_speed(5 * MS, GSIM_SLICE_EFFICIENCY);
    assert_int_equal(reserve(&tl, 2, 0, t0, 5 * MS, &s, &e), 0);
    assert_int_equal(s, t0 + 10 * MS);
    assert_int_equal(e, t0 + 10 * MS + d2);
    /* The first process's next kernel must not overlap process 2, and is sliced too. */
    int64_t d3 = at_speed(10 * MS, GSIM_SLICE_EFFICIENCY);
    assert_int_equal(reserve(&tl, 1, 0, t0 + 10 * MS, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0 + 10 * MS + d2);
    assert_int_equal(gsim_timeline_busy_ns(&tl, 0, t0, t0 + 100 * MS), 10 * MS + d2 + d3);
    assert_int_equal(gsim_timeline_busy_ns(&tl, 2, t0, t0 + 100 * MS), d2);
    assert_int_equal(gsim_timeline_busy_ns(&tl, 1, t0 + 5 * MS, t0 + 20 * MS), 15 * MS - d2);
    /* Booked but not spent yet: everything (it lies in the future). */
    assert_int_equal(gsim_timeline_future_ns(&tl, 1, t0), 10 * MS + d3);
    assert_int_equal(gsim_timeline_future_ns(&tl, 1, t0 + 5 * MS), 5 * MS + d3);
    /* Pending from the launch (now, before t0) to the end of its work. */
    int64_t now = gsim_now_ns();
    assert_true(gsim_timeline_pending_ns(&tl, 2, now, t0 + 100 * MS) >= t0 + 10 * MS + d2 - now);
    gsim_timeline_forget(&tl, 1);
    assert_int_equal(gsim_timeline_busy_ns(&tl, 0, t0, t0 + 100 * MS), d2);
}

static void test_timeline_mps(void **state)
{
    (void)state;
    static gsim_timeline_t tl;
    memset(&tl, 0, sizeof(tl));
    int64_t t0 = gsim_now_ns() + 1000 * MS, s, e;
    /* Two MPS clients at 50 % overlap, each at half the device's speed. */
    assert_int_equal(reserve(&tl, 1, 50, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(e - s, 20 * MS);
    assert_int_equal(reserve(&tl, 2, 50, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0);
    assert_int_equal(e, t0 + 20 * MS);
    /* A third at 50 %: 150 % asked, so each is scaled to 33 % and they gain the concurrency
     * bonus; it waits until its 33 % fit (the first two end). */
    assert_int_equal(reserve(&tl, 3, 50, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0 + 20 * MS);
    assert_int_equal(e - s, at_speed(10 * MS, 0.33 * GSIM_MPS_CONCURRENCY));
    /* A time-sliced process waits until everything ends and is sliced against the MPS server. */
    int64_t busy_end = e;
    assert_int_equal(reserve(&tl, 4, 0, t0, 1 * MS, &s, &e), 0);
    assert_int_equal(s, busy_end);
    assert_int_equal(e - s, at_speed(1 * MS, GSIM_SLICE_EFFICIENCY));
    /* Two full clients: the second runs at 50 % x 1.07 and, once the first also sees it, both
     * overlap at 53.5 % of the device's speed (107 % together). */
    memset(&tl, 0, sizeof(tl));
    assert_int_equal(reserve(&tl, 1, 100, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(e - s, 10 * MS);
    assert_int_equal(reserve(&tl, 2, 100, t0, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0 + 10 * MS);
    assert_int_equal(e - s, at_speed(10 * MS, 0.5 * GSIM_MPS_CONCURRENCY));
    assert_int_equal(reserve(&tl, 1, 100, t0 + 10 * MS, 10 * MS, &s, &e), 0);
    assert_int_equal(s, t0 + 10 * MS);
    assert_int_equal(e - s, at_speed(10 * MS, 0.5 * GSIM_MPS_CONCURRENCY));
    /* 30 and 70: the SMs are partitioned, no scaling. */
    memset(&tl, 0, sizeof(tl));
    assert_int_equal(reserve(&tl, 1, 30, t0, 3 * MS, &s, &e), 0);
    assert_int_equal(e - s, 10 * MS);
    assert_int_equal(reserve(&tl, 2, 70, t0, 7 * MS, &s, &e), 0);
    assert_int_equal(s, t0);
    assert_int_equal(e - s, 10 * MS);
}

static void test_timeline_full(void **state)
{
    (void)state;
    static gsim_timeline_t tl;
    memset(&tl, 0, sizeof(tl));
    int64_t t0 = gsim_now_ns() + 1000 * MS, s, e;
    for (int i = 0; i < GSIM_MAX_RESERVATIONS; i++)
        assert_int_equal(reserve(&tl, 10 + i, 1, t0 + i * MS, MS / 100, &s, &e), 0);
    assert_int_equal(reserve(&tl, 99, 1, t0, MS / 100, &s, &e), -EAGAIN);
    assert_int_equal(s, t0 + MS);
}

static char state_dir[] = "/tmp/gsim-core-test-XXXXXX";

static void test_node_memory_and_reap(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(state_dir));
    setenv("GPUSIM_STATE", state_dir, 1);
    setenv("GPUSIM_DEVICES", "A100-40GB,H100-80GB", 1);
    gsim_node_t *node = NULL;
    assert_int_equal(gsim_node_open(1, &node), 0);
    assert_int_equal(node->n_devices, 2);
    assert_string_equal(node->dev[1].name, "NVIDIA H100-80GB");
    assert_int_equal(node->dev[0].total_bytes, 40 * GIB);
    assert_int_equal(node->dev[0].reserved_bytes, 240 * MIB);
    assert_int_equal(node->dev[1].total_bytes, UINT64_C(85520809984));
    assert_int_equal(strlen(node->dev[0].uuid), 40);
    assert_string_not_equal(node->dev[0].uuid, node->dev[1].uuid);

    gsim_domain_t d1 = {.dev = 1, .gi = -1};
    uint64_t total, used;
    assert_int_equal(gsim_mem_charge(node, d1, 3 * GIB), 0);
    assert_int_equal(gsim_mem_info(node, d1, &total, &used), 0);
    assert_int_equal(total, UINT64_C(85017493504)); /* CUDA's total: NVML's less 480 MiB */
    assert_int_equal(used, 3 * GIB);
    /* Exactly CUDA's total fits, not a byte more: the reserved memory is not the processes'. */
    assert_int_equal(gsim_mem_charge(node, d1, total - 3 * GIB + 1), -ENOMEM);
    assert_int_equal(gsim_mem_charge(node, d1, total - 3 * GIB), 0);
    gsim_mem_uncharge(node, d1, total);
    assert_int_equal(gsim_mem_info(node, d1, &total, &used), 0);
    assert_int_equal(used, 0);
    gsim_domain_t bad = {.dev = 2, .gi = -1};
    assert_int_equal(gsim_mem_charge(node, bad, 1), -EINVAL);
    assert_int_equal(gsim_mem_info(node, (gsim_domain_t){.dev = 0, .gi = 0}, &total, &used),
                     -EINVAL);

    /* A child takes 5 GiB and is SIGKILLed: its memory returns. */
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t child = fork();
    if (child == 0) {
        /* The child shares the mapping; it must register its own slot. */
        gsim_node_t *n = NULL;
        if (gsim_node_open(1, &n) != 0 || gsim_mem_charge(n, d1, 5 * GIB) != 0)
            _exit(1);
        if (write(pipefd[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    assert_int_equal(gsim_mem_info(node, d1, &total, &used), 0);
    assert_int_equal(used, 5 * GIB);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(gsim_mem_info(node, d1, &total, &used), 0);
    assert_int_equal(used, 0);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* Issue 41: the union of a process's work after now, where it is computed: its intervals
 * clipped at now, overlaps counted once, other processes' apart. */
static void test_future_union(void **state)
{
    (void)state;
    static gsim_timeline_t tl;
    memset(&tl, 0, sizeof(tl));
    int64_t t0 = gsim_now_ns() + 1000 * MS;
    gsim_interval_t ivs[] = {
        {.start_ns = t0, .end_ns = t0 + 10 * MS, .busy_ns = 10 * MS, .pid = 1, .pct = 100},
        {.start_ns = t0 + 5 * MS, .end_ns = t0 + 15 * MS, .busy_ns = 10 * MS, .pid = 1, .pct = 100},
        {.start_ns = t0 + 30 * MS,
         .end_ns = t0 + 40 * MS,
         .busy_ns = 10 * MS,
         .pid = 1,
         .pct = 100},
        {.start_ns = t0 + 15 * MS,
         .end_ns = t0 + 30 * MS,
         .busy_ns = 15 * MS,
         .pid = 2,
         .pct = 100},
    };
    for (unsigned i = 0; i < sizeof(ivs) / sizeof(ivs[0]); i++)
        tl.reserved[tl.n_reserved++] = ivs[i];
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 1, t0 - MS), 25 * MS);
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 1, t0 + 12 * MS), 13 * MS);
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 1, t0 + 35 * MS), 5 * MS);
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 1, t0 + 40 * MS), 0);
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 2, t0), 15 * MS);
    assert_int_equal(gsim_timeline_future_union_ns(&tl, 3, t0), 0);
}

/* Issue 41: the booking of a launch (gsim_node_reserve_locked, what the CUDA driver and the NVML
 * tests' helper call): busy_ns grows by each kernel, active_ns by the union (two overlapping
 * kernels of one process: once), the device's total too; active_ns less the future union is the
 * device time had so far: none before the work's start. */
static void test_node_reserve_truth(void **state)
{
    (void)state;
    gsim_node_t *node = NULL;
    assert_int_equal(gsim_node_open(0, &node), 0);
    gsim_domain_t d1 = {.dev = 1, .gi = -1};
    gsim_node_lock(node);
    gsim_proc_t *self = gsim_node_self(node);
    assert_non_null(self);
    uint64_t active0 = self->active_ns[1], busy0 = self->busy_ns[1];
    uint64_t total0 = node->dev[1].busy_ns_total;
    int64_t t0 = gsim_now_ns() + 1000 * MS, s, e;
    gsim_work_t w = {.pid = self->pid, .ready_ns = t0, .work_ns = 10 * MS};
    assert_int_equal(gsim_node_reserve_locked(node, d1, &w, &s, &e), 0);
    assert_int_equal(s, t0);
    assert_int_equal(e, t0 + 10 * MS);
    w.ready_ns = t0 + 5 * MS; /* another stream of the process: its kernels overlap */
    assert_int_equal(gsim_node_reserve_locked(node, d1, &w, &s, &e), 0);
    assert_int_equal(s, t0 + 5 * MS);
    assert_int_equal(e, t0 + 15 * MS);
    assert_int_equal(self->busy_ns[1] - busy0, 20 * MS);
    assert_int_equal(self->active_ns[1] - active0, 15 * MS);
    assert_int_equal(node->dev[1].busy_ns_total - total0, 20 * MS);
    int64_t now = gsim_now_ns();
    assert_int_equal((int64_t)(self->active_ns[1] - active0) -
                         gsim_timeline_future_union_ns(&node->dev[1].timeline, self->pid, now),
                     0);
    assert_int_equal(
        gsim_node_reserve_locked(node, (gsim_domain_t){.dev = 5, .gi = -1}, &w, &s, &e), -ENODEV);
    gsim_timeline_forget(&node->dev[1].timeline, self->pid);
    gsim_node_unlock(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_parse_devices),
        cmocka_unit_test(test_timeline_time_slicing),
        cmocka_unit_test(test_timeline_mps),
        cmocka_unit_test(test_timeline_full),
        cmocka_unit_test(test_node_memory_and_reap),
        cmocka_unit_test(test_future_union),
        cmocka_unit_test(test_node_reserve_truth),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", state_dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
