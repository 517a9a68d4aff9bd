/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpushared's configuration parser (gpushare.conf). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "gpushare/error.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static int parse(gs__config_t *cfg, const char *text, char *err)
{
    gs__config_defaults(cfg);
    err[0] = '\0';
    return gs__config_parse(cfg, text, "test.conf", err, GS__CONFIG_ERRMAX);
}

static void test_defaults(void **state)
{
    (void)state;
    gs__config_t cfg;
    gs__config_defaults(&cfg);
    assert_string_equal(cfg.socket, "/run/gpushare/gpushared.sock");
    assert_string_equal(cfg.state_dir, "/var/lib/gpushare");
    assert_string_equal(cfg.metrics_listen, "127.0.0.1:9447");
    assert_string_equal(cfg.nvml_library, "libnvidia-ml.so.1");
    assert_string_equal(cfg.shim, "");
    assert_int_equal(cfg.idle_timeout_ms, 10000);
    assert_int_equal(cfg.watch_interval_ms, 1000);
    assert_int_equal(cfg.watch_tolerance, 128 * MIB);
    assert_int_equal(cfg.enforce, GS__ENFORCE_KILL); /* issue 27: a hard limit is enforced */
    assert_int_equal(cfg.queue_aging_ms, 60000);
    assert_int_equal(cfg.kill_grace_ms, 10000);
    assert_int_equal(cfg.max_connections_per_user, 256);
    assert_int_equal(cfg.max_queued_per_user, 128);
    assert_int_equal(cfg.max_output_per_connection, 4 * MIB);
    assert_int_equal(cfg.max_output_per_user, 16 * MIB);
    assert_int_equal(cfg.max_leases_per_user, 256);
    assert_int_equal(cfg.compute_members_per_lease, 32);
    assert_int_equal(cfg.compute_members_per_user, 64);
    assert_int_equal(cfg.compute_leases_per_user, 16);
    assert_int_equal(cfg.history_max_rows, 200000);
    assert_int_equal(cfg.history_max_rows_per_user, 20000);
    assert_int_equal(cfg.history_max_days, 90);
    assert_int_equal(cfg.metrics_users, GS__METRICS_USERS_NONE);
    gs__gpu_settings_t s = gs__config_gpu(&cfg, 0, "GPU-x");
    assert_int_equal(s.mode, GS_GPU_MODE_SHARED);
    assert_int_equal(s.overprovision, 1);
    assert_int_equal(s.placement, GS__POLICY_GPUSHARE);
    assert_int_equal(s.reserve, 0);
}

static void test_full_file(void **state)
{
    (void)state;
    gs__config_t cfg;
    char err[GS__CONFIG_ERRMAX];
    const char *text = "# comment\n"
                       "[daemon]\n"
                       "socket = /tmp/x.sock\n"
                       "state_dir = /tmp/state ; inline comment\n"
                       "region_dir = /run/gs/regions\n"
                       "metrics_listen = 127.0.0.1:0\n"
                       "nvml_library = /opt/sim/libnvidia-ml.so.1\n"
                       "shim = /opt/lib/libgpushare.so\n"
                       "idle_timeout = 1.5\n"
                       "queue_aging = 0\n"
                       "kill_grace = 2.5\n"
                       "max_connections_per_user = 8\n"
                       "max_queued_per_user = 3\n"
                       "max_output_per_connection = 1M\n"
                       "max_output_per_user = 2M\n"
                       "max_leases_per_user = 12\n"
                       "compute_members_per_lease = 8\n"
                       "compute_members_per_user = 9\n"
                       "compute_leases_per_user = 3\n"
                       "history_max_rows = 1000\n"
                       "history_max_rows_per_user = 100\n"
                       "history_max_days = 7\n"
                       "metrics_users = all\n"
                       "\n"
                       "[gpu:all]\n"
                       "reserve = 0.5G\n"
                       "placement = spread\n"
                       "[gpu:1]\n"
                       "overprovision = 4\n"
                       "[gpu:GPU-abc]\n"
                       "mode = exclusive\n"
                       "reserve = 1G\n";
    assert_int_equal(parse(&cfg, text, err), 0);
    assert_string_equal(cfg.socket, "/tmp/x.sock");
    assert_string_equal(cfg.state_dir, "/tmp/state");
    assert_string_equal(cfg.region_dir, "/run/gs/regions");
    assert_string_equal(cfg.metrics_listen, "127.0.0.1:0");
    assert_string_equal(cfg.nvml_library, "/opt/sim/libnvidia-ml.so.1");
    assert_string_equal(cfg.shim, "/opt/lib/libgpushare.so");
    assert_int_equal(cfg.idle_timeout_ms, 1500);
    assert_int_equal(cfg.queue_aging_ms, 0);
    assert_int_equal(cfg.kill_grace_ms, 2500);
    assert_int_equal(cfg.max_connections_per_user, 8);
    assert_int_equal(cfg.max_queued_per_user, 3);
    assert_int_equal(cfg.max_output_per_connection, MIB);
    assert_int_equal(cfg.max_output_per_user, 2 * MIB);
    assert_int_equal(cfg.max_leases_per_user, 12);
    assert_int_equal(cfg.compute_members_per_lease, 8);
    assert_int_equal(cfg.compute_members_per_user, 9);
    assert_int_equal(cfg.compute_leases_per_user, 3);
    assert_int_equal(cfg.history_max_rows, 1000);
    assert_int_equal(cfg.history_max_rows_per_user, 100);
    assert_int_equal(cfg.history_max_days, 7);
    assert_int_equal(cfg.metrics_users, GS__METRICS_USERS_ALL);
    assert_int_equal(cfg.n_sections, 3);

    gs__gpu_settings_t s0 = gs__config_gpu(&cfg, 0, "GPU-zzz");
    assert_int_equal(s0.mode, GS_GPU_MODE_SHARED);
    assert_int_equal(s0.overprovision, 1);
    assert_int_equal(s0.placement, GS__POLICY_SPREAD);
    assert_int_equal(s0.reserve, 512 * MIB);

    gs__gpu_settings_t s1 = gs__config_gpu(&cfg, 1, "GPU-zzz");
    assert_int_equal(s1.overprovision, 4);
    assert_int_equal(s1.reserve, 512 * MIB);

    /* UUID sections win over index sections, which win over [gpu:all]. */
    gs__gpu_settings_t s2 = gs__config_gpu(&cfg, 1, "GPU-abc");
    assert_int_equal(s2.mode, GS_GPU_MODE_EXCLUSIVE);
    assert_int_equal(s2.overprovision, 4);
    assert_int_equal(s2.reserve, GIB);
}

static void expect_error(const char *text, const char *message)
{
    gs__config_t cfg;
    char err[GS__CONFIG_ERRMAX];
    assert_int_equal(parse(&cfg, text, err), GS_EINVAL);
    assert_string_equal(err, message);
}

/* The watchdog's keys: watch_interval (seconds, 0 = off), watch_tolerance, enforce. */
static void test_watchdog_keys(void **state)
{
    (void)state;
    gs__config_t cfg;
    char err[GS__CONFIG_ERRMAX];
    assert_int_equal(parse(&cfg,
                           "[daemon]\nwatch_interval = 0.25\nwatch_tolerance = 64M\n"
                           "enforce = report\n",
                           err),
                     0);
    assert_int_equal(cfg.watch_interval_ms, 250);
    assert_int_equal(cfg.watch_tolerance, 64 * MIB);
    assert_int_equal(cfg.enforce, GS__ENFORCE_REPORT);
    assert_string_equal(gs__enforce_name(cfg.enforce), "report");
    assert_int_equal(parse(&cfg, "[daemon]\nwatch_interval = 0\nwatch_tolerance = 0\n", err), 0);
    assert_int_equal(cfg.watch_interval_ms, 0);
    assert_int_equal(cfg.watch_tolerance, 0);
    expect_error("[daemon]\nenforce = stop\n",
                 "test.conf:2: enforce \"stop\" must be report or kill");
    expect_error("[daemon]\nwatch_interval = 0.01\n",
                 "test.conf:2: watch_interval \"0.01\" must be seconds from 0.1 to 3600");
    expect_error("[daemon]\nwatch_interval = soon\n",
                 "test.conf:2: watch_interval \"soon\" must be seconds from 0.1 to 3600");
    expect_error("[daemon]\nenforce = kill\nenforce = report\n",
                 "test.conf:3: \"enforce\" is given twice in [daemon]");
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    expect_error("[daemon]\nbogus = 1\n",
                 "test.conf:2: unknown key \"bogus\" in [daemon] (socket, state_dir, runtime_dir, "
                 "metrics_listen, nvml_library, shim, mps_control, idle_timeout, queue_aging, "
                 "kill_grace, watch_interval, watch_tolerance, enforce, max_connections_per_user, "
                 "max_queued_per_user, max_output_per_connection, max_output_per_user, "
                 "max_leases_per_user, compute_members_per_lease, compute_members_per_user, "
                 "compute_leases_per_user, history_max_rows, history_max_rows_per_user, "
                 "history_max_days, metrics_users, lease_admin_group)");
    expect_error("[daemon]\ncompute_leases_per_user = 65\n",
                 "test.conf:2: compute_leases_per_user \"65\" must be a whole number from 1 to 64");
    expect_error("[daemon]\nmax_leases_per_user = 0\n",
                 "test.conf:2: max_leases_per_user \"0\" must be a whole number from 1 to 65536");
    expect_error("[daemon]\nmax_output_per_user = 1K\n",
                 "test.conf:2: max_output_per_user \"1K\" must be from 64K to 1G");
    expect_error("[daemon]\nhistory_max_days = 0\n",
                 "test.conf:2: history_max_days \"0\" must be a whole number from 1 to 36500");
    expect_error("[daemon]\nmax_connections_per_user = 0\n",
                 "test.conf:2: max_connections_per_user \"0\" must be a whole number from 1 to "
                 "65536");
    expect_error("[daemon]\nmax_output_per_connection = 1K\n",
                 "test.conf:2: max_output_per_connection \"1K\" must be from 64K to 1G");
    expect_error("[daemon]\nmetrics_users = some\n",
                 "test.conf:2: metrics_users \"some\" must be all or none");
    expect_error("[gpu:all]\nmode = fast\n",
                 "test.conf:2: mode \"fast\" must be shared, mps, mig or exclusive");
    expect_error("[gpu:all]\n\noverprovision = 0\n",
                 "test.conf:3: overprovision \"0\" must be a whole number from 1 to 64");
    expect_error("[gpu:all]\noverprovision = 2x\n",
                 "test.conf:2: overprovision \"2x\" must be a whole number from 1 to 64");
    expect_error("[gpu:all]\noverprovision = -1\n",
                 "test.conf:2: overprovision \"-1\" must be a whole number from 1 to 64");
    expect_error("[gpu:0]\nreserve = lots\n",
                 "test.conf:2: reserve: invalid memory size \"lots\": expected a number and a "
                 "unit such as 4G, 1.5G or 512M");
    expect_error("[gpu:0]\nreserve = 1.1\n",
                 "test.conf:2: reserve: invalid memory size \"1.1\": add a unit: 1.1G or 1126M");
    expect_error("[gpu:0]\nplacement = random\n",
                 "test.conf:2: placement \"random\" must be gpushare, fgd, bestfit or spread");
    expect_error("[gpu:0]\nsize = 1\n",
                 "test.conf:2: unknown key \"size\" in [gpu:0] (mode, overprovision, placement, "
                 "reserve)");
    /* A section with no keys is still checked. */
    expect_error("[daemon]\n[gpus]\n",
                 "test.conf:2: unknown section [gpus] (use [daemon], [gpu:all], [gpu:INDEX] or "
                 "[gpu:GPU-UUID])");
    expect_error("[gpu:99]\nmode = shared\n",
                 "test.conf:1: unknown section [gpu:99] (use [daemon], [gpu:all], [gpu:INDEX] "
                 "or [gpu:GPU-UUID])");
    expect_error("socket = /x\n",
                 "test.conf:1: \"socket\" is outside any section (start with [daemon] or "
                 "[gpu:all])");
    expect_error("[daemon]\nsocket = /a\nsocket = /b\n",
                 "test.conf:3: \"socket\" is given twice in [daemon]");
    expect_error("[gpu:0]\nmode = shared\n[gpu:0]\n", "test.conf:3: section [gpu:0] appears twice");
    expect_error("[daemon]\nthis is not a pair\n",
                 "test.conf:2: syntax error (expected [section] or key = value)");
    expect_error("[daemon]\nmetrics_listen = localhost\n",
                 "test.conf:2: metrics_listen \"localhost\" is not ADDRESS:PORT (e.g. "
                 "127.0.0.1:9447; port 0 turns metrics off)");
    expect_error("[daemon]\nidle_timeout = 0\n",
                 "test.conf:2: idle_timeout \"0\" must be seconds from 0.1 to 3600");
    expect_error("[daemon]\nkill_grace = 0\n",
                 "test.conf:2: kill_grace \"0\" must be seconds from 0.1 to 3600");
    expect_error("[daemon]\nqueue_aging = -1\n",
                 "test.conf:2: queue_aging \"-1\" must be seconds from 0 to 86400");
    expect_error("[daemon]\nsocket =\n", "test.conf:2: socket must not be empty");
    char longline[400];
    snprintf(longline, sizeof(longline), "[daemon]\nsocket = /%0250d\n", 0);
    expect_error(longline, "test.conf:2: line longer than 197 characters");
}

static void test_listen_parser(void **state)
{
    (void)state;
    uint32_t addr;
    uint16_t port;
    assert_int_equal(gs__config_parse_listen("127.0.0.1:9447", &addr, &port), 0);
    assert_int_equal(addr, 0x7f000001);
    assert_int_equal(port, 9447);
    assert_int_equal(gs__config_parse_listen("0.0.0.0:0", &addr, &port), 0);
    assert_int_equal(port, 0);
    assert_int_equal(gs__config_parse_listen("127.0.0.1:65536", &addr, &port), GS_EINVAL);
    assert_int_equal(gs__config_parse_listen("127.0.0.1:", &addr, &port), GS_EINVAL);
    assert_int_equal(gs__config_parse_listen(":80", &addr, &port), GS_EINVAL);
    assert_int_equal(gs__config_parse_listen("host:80", &addr, &port), GS_EINVAL);
    assert_int_equal(gs__config_parse_listen("127.0.0.1:-1", &addr, &port), GS_EINVAL);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/gs-config-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "[gpu:all]\noverprovision = 2\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    gs__config_t cfg;
    char err[GS__CONFIG_ERRMAX];
    gs__config_defaults(&cfg);
    assert_int_equal(gs__config_load(&cfg, path, err, sizeof(err)), 0);
    assert_string_equal(cfg.path, path);
    assert_int_equal(gs__config_gpu(&cfg, 3, NULL).overprovision, 2);
    unlink(path);
    assert_int_equal(gs__config_load(&cfg, path, err, sizeof(err)), GS_ENOENT);
    char expected[256];
    snprintf(expected, sizeof(expected), "%s: No such file or directory", path);
    assert_string_equal(err, expected);
}

/* The documented example in packaging/ must stay a valid configuration. */
static void test_packaged_example(void **state)
{
    (void)state;
    const char *source = getenv("GS_SOURCE_DIR");
    if (source == NULL) {
        const char *all = getenv("GS_REQUIRE_ALL"); /* tests/skip.sh: a skip CI sees */
        if (all != NULL && strcmp(all, "1") == 0)
            fail_msg("required, but skipped: GS_SOURCE_DIR is not set (run through ctest)");
        skip();
    }
    char path[1024], err[GS__CONFIG_ERRMAX];
    snprintf(path, sizeof(path), "%s/packaging/gpushare.conf.example", source);
    gs__config_t cfg;
    gs__config_defaults(&cfg);
    assert_int_equal(gs__config_load(&cfg, path, err, sizeof(err)), 0);
    assert_string_equal(cfg.socket, "/run/gpushare/gpushared.sock");
    assert_string_equal(cfg.region_dir, "");
    assert_int_equal(cfg.kill_grace_ms, 10000);
    assert_int_equal(cfg.max_connections_per_user, 256);
    assert_int_equal(cfg.max_queued_per_user, 128);
    assert_int_equal(cfg.max_output_per_connection, 4 * MIB);
    assert_int_equal(cfg.compute_members_per_lease, 32);
    assert_int_equal(cfg.compute_members_per_user, 64);
    assert_int_equal(cfg.compute_leases_per_user, 16);
    assert_int_equal(cfg.metrics_users, GS__METRICS_USERS_NONE);
    gs__gpu_settings_t s = gs__config_gpu(&cfg, 0, NULL);
    assert_int_equal(s.mode, GS_GPU_MODE_SHARED);
    assert_int_equal(s.reserve, 0);
    assert_int_equal(cfg.watch_interval_ms, 1000);
    assert_int_equal(cfg.watch_tolerance, 128 * MIB);
    assert_int_equal(cfg.enforce, GS__ENFORCE_KILL);
    assert_string_equal(cfg.metrics_listen, "127.0.0.1:9447");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_watchdog_keys),
        cmocka_unit_test(test_listen_parser),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_packaged_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
