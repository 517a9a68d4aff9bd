/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim MPS timing (acceptance 3): two clients of a daemon at 50 % each launching 100 kernels of
 * 1 ms overlap (their total time stays close to one client's), while without MPS the same two
 * processes are time-sliced (at least the sum of their kernel time). Lower bounds are exact
 * properties of the device timeline; the upper bound is relative to one client measured in the
 * same run, with a 1.5x margin. Registered RUN_SERIAL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_sim_nvml_proc.h"

#define KERNELS   100
#define KERNEL_US 1000
#define SERIAL_MS (2.0 * KERNELS * KERNEL_US / 1000.0)

static char pipe_dir[256];

static int run_control(const char *arg, const char *input)
{
    const char *argv[] = {build_path("sim/nvidia-cuda-mps-control"), arg, NULL};
    char out[256];
    return run_program(argv, input, out, sizeof(out));
}

static pid_t daemon_pid(void)
{
    char path[512];
    int pid = 0;
    snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", pipe_dir);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

/* Runs the kernels on every helper at once; returns the wall time in ms until all are done. */
static double run_together(helper_proc_t *helpers, int n)
{
    char cmd[64], reply[64];
    snprintf(cmd, sizeof(cmd), "run 0 %d %d", KERNELS, KERNEL_US);
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        assert_int_equal(helper_send(&helpers[i], cmd), 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(helper_reply(&helpers[i], reply, sizeof(reply)), 0);
        assert_memory_equal(reply, "done ", 5);
    }
    return now_ms() - t0;
}

static void start_helpers(helper_proc_t *helpers, int n, const char *want_mps)
{
    char reply[64];
    for (int i = 0; i < n; i++) {
        assert_int_equal(helper_start(&helpers[i], NULL), 0);
        assert_int_equal(helper_cmd(&helpers[i], "mps", reply, sizeof(reply)), 0);
        if (!helper_is_cuda()) /* the driver-API client cannot see its MPS limits */
            assert_string_equal(reply, want_mps);
    }
}

static void stop_helpers(helper_proc_t *helpers, int n)
{
    for (int i = 0; i < n; i++)
        helper_stop(&helpers[i]);
}

static void test_mps_overlap(void **state)
{
    (void)state;
    helper_proc_t h[2];
    assert_int_equal(run_control("-d", NULL), 0);
    pid_t daemon = daemon_pid();
    assert_int_equal(run_control(NULL, "set_default_active_thread_percentage 50\n"), 0);
    start_helpers(h, 2, "mps 1 50 0 0");
    double one = run_together(h, 1);
    double both = run_together(h, 2);
    stop_helpers(h, 2);
    assert_int_equal(run_control(NULL, "quit\n"), 0);
    assert_int_equal(wait_gone(daemon, 5000), 0);

    start_helpers(h, 2, "mps 0 0 0 0");
    double sliced = run_together(h, 2);
    stop_helpers(h, 2);

    print_message("%d x %d us kernels: one MPS client %.1f ms, two MPS clients at 50%% %.1f ms "
                  "(%.2fx), two time-sliced processes %.1f ms (%.2fx)\n",
                  KERNELS, KERNEL_US, one, both, both / one, sliced, sliced / one);
    /* The driver-API client makes a 1 ms kernel of launches of gpusim's default kernel cost,
     * measured with events: its kernels are 1 ms within a few percent, hence the 5 % slack. */
    double slack = helper_is_cuda() ? 0.95 : 1.0;
    assert_true(one >= slack * KERNELS * KERNEL_US / 1000.0);
    assert_true(both >= slack * KERNELS * KERNEL_US / 1000.0);
    assert_true(both < 1.5 * one);
    assert_true(sliced >= slack * SERIAL_MS);
}

static int teardown(void **state)
{
    (void)state;
    pid_t pid = daemon_pid();
    if (pid > 0 && process_alive(pid)) {
        kill(pid, SIGTERM);
        wait_gone(pid, 5000);
    }
    return 0;
}

int main(void)
{
    const char *root = make_temp_dir("mps-overlap");
    if (root == NULL)
        return 1;
    char path[512];
    snprintf(pipe_dir, sizeof(pipe_dir), "%s/pipe", root);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
    snprintf(path, sizeof(path), "%s/log", root);
    setenv("CUDA_MPS_LOG_DIRECTORY", path, 1);
    snprintf(path, sizeof(path), "%s/state", root);
    setenv("GPUSIM_STATE", path, 1);
    setenv("GPUSIM_DEVICES", "H100-80GB", 1);
    unsetenv("GPUSIM_TIME_SCALE");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_mps_overlap, teardown)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(root);
    return failed;
}
