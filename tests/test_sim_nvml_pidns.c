/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's NVML across PID namespaces: two processes in PID (and mount) namespaces of their own
 * (unshare --pid --fork --mount --mount-proc: each is pid 1 there and cannot see its host pid)
 * hold memory and run kernels; NVML in the root namespace lists them under their host pids with
 * their memory, in the process lists of every version, the per-process utilization samples and
 * nvmlSystemGetProcessName, as NVIDIA's driver reports a client's pid in the caller's namespace.
 * A process of the root namespace is listed as before. Needs root (unshare); skipped without. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_NO_UNVERSIONED_FUNC_DEFS 1 /* the v1 list by its own name */
#include "gpushare/nvml_abi.h"
#include "test_sim_nvml_proc.h"

/* --kill-child: the helper dies with the unshare process the test kills. */
static const char *const unshare_argv[] = {"unshare",      "--pid",        "--fork", "--mount",
                                           "--mount-proc", "--kill-child", NULL};

/* The host pid of the process unshare (pid) forked: its only child. */
static pid_t child_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int child = 0;
    if (f != NULL) {
        if (fscanf(f, "%d", &child) != 1)
            child = 0;
        fclose(f);
    }
    return child;
}

/* Starts a helper in namespaces of its own holding gib GiB; *host gets its host pid. */
static void start_isolated(helper_proc_t *p, const char *charge, pid_t *host)
{
    int ns_pid = 0;
    char reply[64];
    assert_int_equal(helper_start_wrapped(p, NULL, unshare_argv, &ns_pid), 0);
    assert_int_equal(ns_pid, 1); /* what it knows of itself */
    *host = child_of(p->pid);
    assert_true(*host > 1);
    assert_int_equal(helper_cmd(p, charge, reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(helper_cmd(p, "busy 0 50", reply, sizeof(reply)), 0); /* 50 ms of kernels */
    assert_string_equal(reply, "ok");
}

/* The memory the list shows for pid, or 0 when it is not listed; *n gets the list's length. */
static unsigned long long listed(nvmlDevice_t dev, unsigned pid, unsigned *n)
{
    nvmlProcessInfo_v1_t v1[8];
    nvmlProcessInfo_t v3[8];
    unsigned n1 = 8, n3 = 8;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses(dev, &n1, v1), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(dev, &n3, v3), NVML_SUCCESS);
    assert_int_equal(n1, n3);
    *n = n3;
    for (unsigned i = 0; i < n3; i++) {
        assert_int_equal(v1[i].pid, v3[i].pid);
        if (v3[i].pid == pid) {
            assert_int_equal(v1[i].usedGpuMemory, v3[i].usedGpuMemory);
            return v3[i].usedGpuMemory;
        }
    }
    return 0;
}

/* Whether the utilization samples hold one for pid (and none for pid 1, the host's init). */
static int sampled(nvmlDevice_t dev, unsigned pid)
{
    nvmlProcessUtilizationSample_t s[8];
    unsigned n = 8;
    assert_int_equal(nvmlDeviceGetProcessUtilization(dev, s, &n, 0), NVML_SUCCESS);
    int found = 0;
    for (unsigned i = 0; i < n; i++) {
        assert_int_not_equal(s[i].pid, 1);
        found |= s[i].pid == pid;
    }
    return found;
}

static void test_host_pids(void **state)
{
    (void)state;
    if (geteuid() != 0 || system("unshare --pid --fork --mount --mount-proc true 2>/dev/null")) {
        const char *all = getenv("GS_REQUIRE_ALL"); /* tests/skip.sh: a skip CI sees */
        if (all != NULL && strcmp(all, "1") == 0)
            fail_msg("required, but skipped: PID namespaces need root here");
        skip(); /* namespaces need root here */
    }
    helper_proc_t a, b, c;
    pid_t host_a, host_b;
    char reply[64];
    /* NVML first: the node is created in the root namespace, whose processes keep their pids
     * as keys (gsim_proc_t). */
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    start_isolated(&a, "charge 0 1G", &host_a);
    start_isolated(&b, "charge 0 2G", &host_b);
    assert_int_equal(helper_start(&c, NULL), 0);
    assert_int_equal(helper_cmd(&c, "charge 0 512M", reply, sizeof(reply)), 0);
    nvmlDevice_t dev;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev), NVML_SUCCESS);
    unsigned n = 0;
    assert_int_equal(listed(dev, (unsigned)host_a, &n), 1ULL << 30);
    assert_int_equal(n, 3);
    assert_int_equal(listed(dev, (unsigned)host_b, &n), 2ULL << 30);
    assert_int_equal(listed(dev, (unsigned)c.pid, &n), 512ULL << 20);
    assert_int_equal(listed(dev, 1, &n), 0); /* never the host's init */
    usleep(150 * 1000); /* both 50 ms kernels have run (time-sliced: one after the other) */
    assert_true(sampled(dev, (unsigned)host_a));
    assert_true(sampled(dev, (unsigned)host_b));
    char name[64];
    assert_int_equal(nvmlSystemGetProcessName((unsigned)host_a, name, sizeof(name)), NVML_SUCCESS);
    assert_string_equal(name, helper_comm());
    assert_int_equal(nvmlSystemGetProcessName(1, name, sizeof(name)), NVML_ERROR_NOT_FOUND);
    helper_kill(&a); /* the namespace's init dies, and with it the namespace */
    assert_int_equal(wait_gone(host_a, 5000), 0);
    assert_int_equal(listed(dev, (unsigned)host_a, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    helper_kill(&b);
    helper_stop(&c);
}

int main(void)
{
    const char *dir = make_temp_dir("nvml-pidns");
    if (dir == NULL)
        return 1;
    setenv("GPUSIM_STATE", dir, 1); /* a node of its own */
    setenv("GPUSIM_DEVICES", "H100-80GB", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_host_pids)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(dir);
    return failed;
}
