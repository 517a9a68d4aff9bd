/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim MPS: nvidia-cuda-mps-control's daemon and commands, client detection and limits
 * (daemon defaults lowered by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE /
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), the pinned limit as OOM, stale and killed daemons, and "echo
 * quit | nvidia-cuda-mps-control" (acceptance 3). Every daemon is stopped by its pid. */
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
#include <unistd.h>

#include "mps/mps_state.h"
#include "node.h"
#include "test_sim_nvml_proc.h"

#define GIB (1ULL << 30)

static char pipe_dir[256];

static const char *control(void)
{
    return build_path("sim/nvidia-cuda-mps-control");
}

/* Runs nvidia-cuda-mps-control with arg (NULL: none) and input; returns its status. */
static int run_control(const char *arg, const char *input, char *out, size_t len)
{
    const char *argv[] = {control(), arg, NULL};
    char scratch[16];
    return run_program(argv, input, out != NULL ? out : scratch,
                       out != NULL ? len : sizeof(scratch));
}

/* Sends one command line and returns the reply (static buffer). */
static const char *ask(const char *cmd)
{
    static char out[4096];
    char input[256];
    snprintf(input, sizeof(input), "%s\n", cmd);
    assert_int_equal(run_control(NULL, input, out, sizeof(out)), 0);
    return out;
}

static pid_t daemon_pid(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", pipe_dir, GSIM_MPS_PID_FILE);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f != NULL) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

static pid_t start_daemon(void)
{
    assert_int_equal(run_control("-d", NULL, NULL, 0), 0);
    pid_t pid = daemon_pid();
    assert_true(pid > 0);
    assert_true(process_alive(pid));
    return pid;
}

static void quit_daemon(pid_t pid)
{
    assert_string_equal(ask("quit"), "");
    assert_int_equal(wait_gone(pid, 5000), 0);
}

/* Kills a daemon a failed test left behind, by its pid. */
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

static void read_comm(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f != NULL) {
        if (fgets(buf, (int)len, f) == NULL)
            buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
}

static void test_control_commands(void **state)
{
    (void)state;
    char out[256], cmd[64];
    pid_t pid = start_daemon();
    assert_int_equal(run_control("-d", NULL, NULL, 0), 1); /* one daemon per pipe directory */
    assert_int_equal(run_control("--bogus", NULL, NULL, 0), 1);
    assert_string_equal(ask("get_default_active_thread_percentage"), "100.0\n");
    assert_string_equal(ask("set_default_active_thread_percentage 50"), "50.0\n");
    assert_string_equal(ask("get_default_active_thread_percentage"), "50.0\n");
    assert_string_equal(ask("set_default_active_thread_percentage 0"),
                        "Invalid percentage: expected a number in (0, 100]\n");
    assert_string_equal(ask("get_default_device_pinned_mem_limit 0"), "0\n");
    assert_string_equal(ask("set_default_device_pinned_mem_limit 0 1G"), "");
    assert_string_equal(ask("set_default_device_pinned_mem_limit 1 1536M"), "");
    assert_string_equal(ask("get_default_device_pinned_mem_limit 0"), "1G\n");
    assert_string_equal(ask("get_default_device_pinned_mem_limit 1"), "1536M\n");
    assert_string_equal(ask("bogus"), "Unrecognized command: bogus\n");
    assert_string_equal(ask("get_server_list"), "");
    snprintf(cmd, sizeof(cmd), "start_server -uid %u", (unsigned)getuid());
    assert_string_equal(ask(cmd), "");
    int server = atoi(ask("get_server_list"));
    assert_true(server > 0 && process_alive(server));
    read_comm(server, out, sizeof(out));
    assert_string_equal(out, "nvidia-cuda-mps");
    snprintf(cmd, sizeof(cmd), "get_server_status %d", server);
    assert_string_equal(ask(cmd), "ACTIVE\n");
    /* Several commands on one standard input, replies in order. */
    assert_int_equal(run_control(NULL,
                                 "get_default_active_thread_percentage\n\n"
                                 "get_default_device_pinned_mem_limit 0\n",
                                 out, sizeof(out)),
                     0);
    assert_string_equal(out, "50.0\n1G\n");
    quit_daemon(pid);
    assert_int_equal(wait_gone(server, 5000), 0);
    /* Without a daemon the front end fails. */
    assert_int_equal(run_control(NULL, "get_server_list\n", out, sizeof(out)), 1);
}

static gsim_mps_client_t detect(void)
{
    gsim_node_t *node = NULL;
    gsim_mps_client_t mps;
    assert_int_equal(gsim_node_open(0, &node), 0);
    assert_int_equal(gsim_mps_client_detect(node, &mps), 0);
    return mps;
}

static int detect_error(void)
{
    gsim_node_t *node = NULL;
    gsim_mps_client_t mps;
    assert_int_equal(gsim_node_open(0, &node), 0);
    return gsim_mps_client_detect(node, &mps);
}

static void test_client_limits(void **state)
{
    (void)state;
    assert_int_equal(detect().active, 0);
    pid_t pid = start_daemon();
    gsim_mps_client_t mps = detect();
    assert_int_equal(mps.active, 1);
    assert_int_equal(mps.thread_pct, 100);
    assert_int_equal(mps.pinned_limit[0], 0);
    ask("set_default_active_thread_percentage 50");
    ask("set_default_device_pinned_mem_limit 0 1G");
    mps = detect();
    assert_int_equal(mps.thread_pct, 50);
    assert_int_equal(mps.pinned_limit[0], GIB);
    assert_int_equal(mps.pinned_limit[1], 0);

    /* The client's variables can only lower the daemon's defaults. */
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "30", 1);
    assert_int_equal(detect().thread_pct, 30);
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "80", 1);
    assert_int_equal(detect().thread_pct, 50);
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "0", 1);
    assert_int_equal(detect_error(), -EINVAL);
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "half", 1);
    assert_int_equal(detect_error(), -EINVAL);
    unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=512M,1=2G", 1);
    mps = detect();
    assert_int_equal(mps.pinned_limit[0], 512ULL << 20);
    assert_int_equal(mps.pinned_limit[1], 2 * GIB);
    setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4G", 1);
    assert_int_equal(detect().pinned_limit[0], GIB);
    setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0:1G", 1);
    assert_int_equal(detect_error(), -EINVAL);
    setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=1X", 1);
    assert_int_equal(detect_error(), -EINVAL);
    unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");

    /* A detected client is registered: its user's server lists it. */
    char cmd[64];
    int server = atoi(ask("get_server_list"));
    assert_true(server > 0);
    snprintf(cmd, sizeof(cmd), "get_client_list %d", server);
    char want[32];
    snprintf(want, sizeof(want), "%d\n", (int)getpid());
    assert_string_equal(ask(cmd), want);
    quit_daemon(pid);
    assert_int_equal(detect().active, 0);
}

/* Acceptance 3: a pinned limit makes an allocation past it fail. A driver-API client's context
 * counts against the limit as on a real H100 (a context is ~0.5 GiB), so the limits leave room
 * for one and the expectations hold for both helpers. */
static void test_pinned_limit(void **state)
{
    (void)state;
    char reply[128];
    pid_t pid = start_daemon();
    ask("set_default_device_pinned_mem_limit 0 2G");
    helper_proc_t p;
    assert_int_equal(helper_start(&p, NULL), 0);
    assert_int_equal(helper_cmd(&p, "mps", reply, sizeof(reply)), 0);
    if (!helper_is_cuda())
        assert_string_equal(reply, "mps 1 100 2147483648 0");
    assert_int_equal(helper_cmd(&p, "charge 0 1G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(helper_cmd(&p, "charge 0 1200M", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "oom");
    assert_int_equal(helper_cmd(&p, "charge 1 2G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    helper_stop(&p);

    const char *const env[] = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1536M",
                               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", NULL};
    assert_int_equal(helper_start(&p, env), 0);
    assert_int_equal(helper_cmd(&p, "mps", reply, sizeof(reply)), 0);
    if (!helper_is_cuda())
        assert_string_equal(reply, "mps 1 25 1610612736 0");
    assert_int_equal(helper_cmd(&p, "charge 0 1600M", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "oom");
    assert_int_equal(helper_cmd(&p, "charge 0 512M", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    helper_stop(&p);
    quit_daemon(pid);
}

static int path_exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", pipe_dir, name);
    return access(path, F_OK) == 0;
}

/* A killed daemon leaves files but no lock: clients see no daemon, and a new daemon starts. */
static void test_killed_daemon(void **state)
{
    (void)state;
    char cmd[64], out[128];
    pid_t pid = start_daemon();
    snprintf(cmd, sizeof(cmd), "start_server -uid %u", (unsigned)getuid());
    ask(cmd);
    int server = atoi(ask("get_server_list"));
    kill(pid, SIGKILL);
    assert_int_equal(wait_gone(pid, 5000), 0);
    assert_int_equal(wait_gone(server, 5000), 0); /* servers die with their daemon */
    assert_true(path_exists(GSIM_MPS_SOCKET));
    assert_true(path_exists(GSIM_MPS_STATE));
    assert_int_equal(detect().active, 0);
    assert_int_equal(run_control(NULL, "get_server_list\n", out, sizeof(out)), 1);

    pid = start_daemon(); /* replaces the stale socket */
    assert_string_equal(ask("get_default_active_thread_percentage"), "100.0\n");
    kill(pid, SIGTERM);
    assert_int_equal(wait_gone(pid, 5000), 0);
    assert_false(path_exists(GSIM_MPS_SOCKET));
    assert_false(path_exists(GSIM_MPS_PID_FILE));
    assert_int_equal(detect().active, 0);
}

/* Acceptance 3: "echo quit | nvidia-cuda-mps-control" stops the daemon. */
static void test_echo_quit(void **state)
{
    (void)state;
    char script[600], out[64];
    pid_t pid = start_daemon();
    snprintf(script, sizeof(script), "echo quit | '%s'", control());
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    assert_int_equal(run_program(argv, NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "");
    /* The daemon has released its lock and removed its files when quit returns. */
    assert_int_equal(detect().active, 0);
    assert_false(path_exists(GSIM_MPS_SOCKET));
    assert_int_equal(wait_gone(pid, 5000), 0);
}

int main(void)
{
    const char *root = make_temp_dir("mps");
    if (root == NULL)
        return 1;
    char path[512];
    snprintf(pipe_dir, sizeof(pipe_dir), "%s/pipe", root);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
    snprintf(path, sizeof(path), "%s/log", root);
    setenv("CUDA_MPS_LOG_DIRECTORY", path, 1);
    snprintf(path, sizeof(path), "%s/state", root);
    setenv("GPUSIM_STATE", path, 1);
    setenv("GPUSIM_DEVICES", "H100-80GB*2", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_control_commands, teardown),
        cmocka_unit_test_teardown(test_client_limits, teardown),
        cmocka_unit_test_teardown(test_pinned_limit, teardown),
        cmocka_unit_test_teardown(test_killed_daemon, teardown),
        cmocka_unit_test_teardown(test_echo_quit, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(root);
    return failed;
}
