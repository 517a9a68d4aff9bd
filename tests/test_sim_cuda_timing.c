/* SPDX-License-Identifier: Apache-2.0 */
/* Acceptance: simulated time on shared devices. Two processes each launching 100 kernels of 1 ms
 * on one device take at least 200 ms of simulated time (their kernels are time-sliced, never
 * overlapping); on two devices, one each, well under that (about 100 ms). The processes are
 * cuda_progs/timing_worker, started together; the node's busy time is checked: exactly the work
 * on two devices, between the work and the work at the time-sliced speed on one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node.h"

#define KERNELS   100
#define SCALE     1.0
#define KERNEL_NS INT64_C(1000000)

typedef struct worker {
    pid_t pid;
    FILE *out;
    int go_fd;
    long long start, end;
    double elapsed_ms;
} worker_t;

static char state_dir[] = "/tmp/gpusim-timing.XXXXXX";
static char worker_path[4096];

static void start_worker(worker_t *w, int ordinal)
{
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    w->pid = fork();
    assert_true(w->pid >= 0);
    if (w->pid == 0) {
        char count[16], ord[16];
        snprintf(count, sizeof(count), "%d", KERNELS);
        snprintf(ord, sizeof(ord), "%d", ordinal);
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[1]);
        close(from_child[0]);
        execl(worker_path, worker_path, count, "1ms", ord, (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    w->go_fd = to_child[1];
    w->out = fdopen(from_child[0], "r");
    char line[64];
    assert_non_null(fgets(line, sizeof(line), w->out));
    assert_string_equal(line, "ready\n");
}

static void finish_worker(worker_t *w)
{
    assert_int_equal(fscanf(w->out, "%lld %lld %lf", &w->start, &w->end, &w->elapsed_ms), 3);
    fclose(w->out);
    close(w->go_fd);
    int status;
    assert_int_equal(waitpid(w->pid, &status, 0), w->pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Runs two workers on the given ordinals, released together; returns the simulated makespan. */
static double run_pair(int ord_a, int ord_b, worker_t w[2])
{
    start_worker(&w[0], ord_a);
    start_worker(&w[1], ord_b);
    assert_int_equal(write(w[0].go_fd, "g", 1), 1);
    assert_int_equal(write(w[1].go_fd, "g", 1), 1);
    finish_worker(&w[0]);
    finish_worker(&w[1]);
    long long first = w[0].start < w[1].start ? w[0].start : w[1].start;
    long long last = w[0].end > w[1].end ? w[0].end : w[1].end;
    return (double)(last - first) * SCALE / 1e6;
}

static uint64_t busy_total(int dev)
{
    gsim_node_t *node;
    assert_int_equal(gsim_node_open(0, &node), 0);
    gsim_node_lock(node);
    uint64_t busy = node->dev[dev].busy_ns_total;
    gsim_node_unlock(node);
    return busy;
}

static void report(const char *what, double sim_ms, const worker_t w[2])
{
    if (getenv("GSIM_TEST_VERBOSE") != NULL)
        fprintf(stderr, "%s: makespan %.1f ms simulated; per-process event time %.1f / %.1f ms\n",
                what, sim_ms, w[0].elapsed_ms, w[1].elapsed_ms);
}

static void test_one_device_time_sliced(void **state)
{
    (void)state;
    uint64_t busy0 = busy_total(0);
    worker_t w[2];
    double sim_ms = run_pair(0, 0, w);
    report("one device", sim_ms, w);
    assert_true(sim_ms >= 200.0);
    assert_true(w[0].elapsed_ms >= 100.0 && w[1].elapsed_ms >= 100.0);
    /* 200 kernels of 1 ms: 200 ms of work on device 0, each kernel launched while the other
     * process had work pending runs time-sliced, at GSIM_SLICE_EFFICIENCY of the speed. */
    int64_t work = (int64_t)(2 * KERNELS * KERNEL_NS / SCALE);
    int64_t busy = (int64_t)(busy_total(0) - busy0);
    assert_true(busy >= work);
    assert_true(busy <= (int64_t)((double)work / GSIM_SLICE_EFFICIENCY) + 2 * KERNELS);
}

static void test_two_devices_in_parallel(void **state)
{
    (void)state;
    uint64_t busy0 = busy_total(0), busy1 = busy_total(1);
    worker_t w[2];
    double sim_ms = run_pair(0, 1, w);
    report("two devices", sim_ms, w);
    assert_true(sim_ms >= 100.0);
    assert_true(sim_ms < 180.0);
    int64_t wall = (int64_t)(KERNELS * KERNEL_NS / SCALE);
    assert_int_equal(busy_total(0) - busy0, wall);
    assert_int_equal(busy_total(1) - busy1, wall);
}

static int setup(void **state)
{
    (void)state;
    const char *build = getenv("GS_BUILD_DIR");
    if (build == NULL || mkdtemp(state_dir) == NULL)
        return -1;
    snprintf(worker_path, sizeof(worker_path), "%s/tests/cuda_progs/timing_worker", build);
    char libs[4200];
    snprintf(libs, sizeof(libs), "%s/sim", build);
    setenv("LD_LIBRARY_PATH", libs, 1);
    setenv("GPUSIM_STATE", state_dir, 1);
    setenv("GPUSIM_DEVICES", "H100-80GB*2", 1);
    setenv("GPUSIM_TIME_SCALE", "1", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_device_time_sliced),
        cmocka_unit_test(test_two_devices_in_parallel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
