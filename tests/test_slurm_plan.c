/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the Slurm plugin's core: its arguments, the lease a step asks for, the tasks'
 * environment (no Slurm needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "slurm_plugin.h"

#define GIB (UINT64_C(1) << 30)

static char err[GS__SLURM_MSG_MAX];

static int parse_args(gs__slurm_config_t *cfg, int argc, const char *const *argv)
{
    err[0] = '\0';
    return gs__slurm_config_parse(argc, (char **)argv, cfg, err, sizeof(err));
}

static void test_config(void **state)
{
    (void)state;
    gs__slurm_config_t cfg;
    assert_int_equal(parse_args(&cfg, 0, NULL), 0);
    assert_string_equal(cfg.socket, "");
    assert_string_equal(cfg.shim, "");
    assert_int_equal(cfg.timeout_s, 0);
    assert_int_equal(cfg.shards, 0);
    const char *all[] = {"socket=/run/gs.sock", "shim=/opt/gs/libgpushare.so", "timeout=30",
                         "shards=4"};
    assert_int_equal(parse_args(&cfg, 4, all), 0);
    assert_string_equal(cfg.socket, "/run/gs.sock");
    assert_string_equal(cfg.shim, "/opt/gs/libgpushare.so");
    assert_int_equal(cfg.timeout_s, 30);
    assert_int_equal(cfg.shards, 4);

    const char *relative[] = {"socket=gs.sock"};
    assert_int_equal(parse_args(&cfg, 1, relative), GS_EINVAL);
    assert_string_equal(err, "socket= must be an absolute path shorter than 1024 bytes");
    const char *timeout[] = {"timeout=5s"};
    assert_int_equal(parse_args(&cfg, 1, timeout), GS_EINVAL);
    assert_string_equal(err, "timeout=\"5s\" must be whole seconds from 0 to 604800");
    const char *negative[] = {"timeout=-1"};
    assert_int_equal(parse_args(&cfg, 1, negative), GS_EINVAL);
    const char *week[] = {"timeout=604801"};
    assert_int_equal(parse_args(&cfg, 1, week), GS_EINVAL);
    const char *shards[] = {"shards=0"};
    assert_int_equal(parse_args(&cfg, 1, shards), GS_EINVAL);
    assert_string_equal(err, "shards=\"0\" must be the shards per GPU, from 1 to 10000");
    const char *unknown[] = {"sockets=/x"};
    assert_int_equal(parse_args(&cfg, 1, unknown), GS_EINVAL);
    assert_string_equal(
        err, "unknown argument \"sockets=/x\" (socket=PATH, shim=PATH, timeout=SECONDS, shards=S)");
    const char *bare[] = {"shim"};
    assert_int_equal(parse_args(&cfg, 1, bare), GS_EINVAL);
}

static void test_option_values(void **state)
{
    (void)state;
    uint64_t bytes = 0;
    uint32_t pct = 0;
    assert_int_equal(gs__slurm_parse_memory("4G", &bytes), 0);
    assert_int_equal(bytes, 4 * GIB);
    assert_int_equal(gs__slurm_parse_memory("1536M", &bytes), 0);
    assert_int_equal(bytes, 3 * GIB / 2);
    assert_int_not_equal(gs__slurm_parse_memory("0", &bytes), 0);
    assert_int_not_equal(gs__slurm_parse_memory("junk", &bytes), 0);
    assert_int_not_equal(gs__slurm_parse_memory("-1", &bytes), 0);
    assert_int_not_equal(gs__slurm_parse_memory("4X", &bytes), 0);
    assert_int_not_equal(gs__slurm_parse_memory("", &bytes), 0);
    /* The parser of the CLI: decimals to whole MiB, a unit needed (issue 14). */
    assert_int_equal(gs__slurm_parse_memory("1.1G", &bytes), 0);
    assert_int_equal(bytes, UINT64_C(1126) << 20);
    assert_int_not_equal(gs__slurm_parse_memory("4", &bytes), 0);
    assert_int_equal(gs__slurm_parse_compute("30", &pct), 0);
    assert_int_equal(pct, 30);
    assert_int_equal(gs__slurm_parse_compute("45%", &pct), 0);
    assert_int_equal(pct, 45);
    assert_int_not_equal(gs__slurm_parse_compute("0", &pct), 0);
    assert_int_not_equal(gs__slurm_parse_compute("101", &pct), 0);
    uint32_t n = 0;
    assert_int_equal(gs__slurm_parse_count("12", &n), 0);
    assert_int_equal(n, 12);
    assert_int_equal(gs__slurm_parse_count("0", &n), GS_EINVAL);
    assert_int_equal(gs__slurm_parse_count("2x", &n), GS_EINVAL);
    assert_int_equal(gs__slurm_parse_count(" 2", &n), GS_EINVAL);

    gs__slurm_opts_t opts = {.compute = 30};
    assert_int_equal(gs__slurm_check_opts(&opts, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "gpushare: --gpu-compute goes with --gpu-memory (a shard gres sets "
                             "the compute share by itself)");
    opts.memory = GIB;
    assert_int_equal(gs__slurm_check_opts(&opts, err, sizeof(err)), 0);
}

static void test_gpu_list(void **state)
{
    (void)state;
    gs__slurm_step_t step;
    assert_int_equal(gs__slurm_parse_gpus("1", &step, err, sizeof(err)), 0);
    assert_int_equal(step.n_gpus, 1);
    assert_int_equal(step.gpus[0], 1);
    assert_int_equal(gs__slurm_parse_gpus("3,0-2,7", &step, err, sizeof(err)), 0);
    assert_int_equal(step.n_gpus, 5);
    const uint8_t order[] = {3, 0, 1, 2, 7};
    assert_memory_equal(step.gpus, order, sizeof(order));
    assert_int_equal(gs__slurm_parse_gpus("0,0", &step, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "cannot read Slurm's GPU list \"0,0\": GPU 0 is listed twice");
    assert_int_equal(step.n_gpus, 0);
    assert_int_equal(gs__slurm_parse_gpus("16", &step, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "cannot read Slurm's GPU list \"16\": GPU index 16 is above 15");
    const char *bad[] = {"", ",", "0,", "a", "0;1", "2-1", "1-", " 1", "GPU-1234"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gs__slurm_parse_gpus(bad[i], &step, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "cannot read Slurm's GPU list \"GPU-1234\"");
}

static gs__slurm_step_t step_of(const char *gpus, uint32_t shards)
{
    gs__slurm_step_t step;
    memset(&step, 0, sizeof(step));
    if (gpus != NULL)
        assert_int_equal(gs__slurm_parse_gpus(gpus, &step, err, sizeof(err)), 0);
    step.shards = shards;
    return step;
}

static void test_plan_memory(void **state)
{
    (void)state;
    gs__slurm_config_t cfg = {.shards = 4};
    gs_lease_request_t req;
    gs__slurm_opts_t none = {0};
    gs__slurm_step_t gpu1 = step_of("1", 0);
    assert_int_equal(gs__slurm_plan(&none, &gpu1, &cfg, &req, err, sizeof(err)), 0);

    gs__slurm_opts_t mem = {.memory = 4 * GIB};
    assert_int_equal(gs__slurm_plan(&mem, &gpu1, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.kind, GS_LEASE_MEMORY);
    assert_int_equal(req.memory, 4 * GIB);
    assert_int_equal(req.compute, 0);
    assert_int_equal(req.n_pinned, 1);
    assert_int_equal(req.pinned[0], 1);
    assert_int_equal(req.wait, 0); /* timeout 0: fail at once */
    assert_int_equal(req.timeout_ms, 0);

    gs__slurm_opts_t both = {.memory = 2 * GIB, .compute = 30};
    gs__slurm_step_t gpu2 = step_of("1,0", 0);
    cfg.timeout_s = 20;
    assert_int_equal(gs__slurm_plan(&both, &gpu2, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.compute, 30);
    assert_int_equal(req.n_pinned, 2);
    assert_int_equal(req.pinned[0], 1);
    assert_int_equal(req.pinned[1], 0);
    assert_int_equal(req.wait, 1);
    assert_int_equal(req.timeout_ms, 20000);

    gs__slurm_step_t nogpu = step_of(NULL, 0);
    assert_int_equal(gs__slurm_plan(&mem, &nogpu, &cfg, &req, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "gpushare: --gpu-memory needs GPUs from Slurm: add --gres=gpu:N or "
                             "--gres=shard:N");
    gs__slurm_opts_t compute = {.compute = 30};
    assert_int_equal(gs__slurm_plan(&compute, &gpu1, &cfg, &req, err, sizeof(err)), GS_EINVAL);
}

static void test_plan_shards(void **state)
{
    (void)state;
    gs__slurm_config_t cfg = {.shards = 4};
    gs_lease_request_t req;
    gs__slurm_opts_t none = {0};
    gs__slurm_step_t two = step_of("0", 2);
    assert_int_equal(gs__slurm_plan(&none, &two, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.kind, GS_LEASE_FRACTION);
    assert_int_equal(req.fraction_milli, 500);
    assert_int_equal(req.n_pinned, 1);
    gs__slurm_step_t all = step_of("1", 4);
    assert_int_equal(gs__slurm_plan(&none, &all, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.fraction_milli, 1000);

    /* Thirds round down, so three of them fit on one GPU. */
    gs__slurm_config_t thirds = {.shards = 3};
    gs__slurm_step_t one = step_of("0", 1);
    assert_int_equal(gs__slurm_plan(&none, &one, &thirds, &req, err, sizeof(err)), 1);
    assert_int_equal(req.fraction_milli, 333);

    /* --gpu-memory with shards: that memory, the shards' compute share (not limited for all). */
    gs__slurm_opts_t mem = {.memory = 10 * GIB};
    assert_int_equal(gs__slurm_plan(&mem, &one, &thirds, &req, err, sizeof(err)), 1);
    assert_int_equal(req.kind, GS_LEASE_MEMORY);
    assert_int_equal(req.memory, 10 * GIB);
    assert_int_equal(req.compute, 33);
    assert_int_equal(gs__slurm_plan(&mem, &all, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.compute, 0);
    gs__slurm_opts_t explicit_share = {.memory = 10 * GIB, .compute = 70};
    assert_int_equal(gs__slurm_plan(&explicit_share, &two, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.compute, 70);
    gs__slurm_config_t many = {.shards = 2000};
    assert_int_equal(gs__slurm_plan(&mem, &one, &many, &req, err, sizeof(err)), 1);
    assert_int_equal(req.compute, 1); /* 0.05 %: the smallest share */
    assert_int_equal(gs__slurm_plan(&none, &one, &many, &req, err, sizeof(err)), 1);
    assert_int_equal(req.fraction_milli, 1);

    /* Shards over two GPUs are split evenly. */
    gs__slurm_step_t spread = step_of("0,1", 4);
    assert_int_equal(gs__slurm_plan(&none, &spread, &cfg, &req, err, sizeof(err)), 1);
    assert_int_equal(req.fraction_milli, 500);
    assert_int_equal(req.n_pinned, 2);

    gs__slurm_config_t unset = {0};
    assert_int_equal(gs__slurm_plan(&none, &two, &unset, &req, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err,
                        "gpushare: the step uses shards but the plugin does not know how many "
                        "a GPU has: add shards=S (as in gres.conf) to its plugstack.conf line");
    gs__slurm_step_t over = step_of("0", 5);
    assert_int_equal(gs__slurm_plan(&none, &over, &cfg, &req, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "gpushare: 5 shards on 1 GPU of 4 shards each (shards= in "
                             "plugstack.conf does not match gres.conf)");
    gs__slurm_step_t nogpu = step_of(NULL, 2);
    assert_int_equal(gs__slurm_plan(&none, &nogpu, &cfg, &req, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "gpushare: a shard gres needs GPUs from Slurm: add --gres=gpu:N or "
                             "--gres=shard:N");
}

static void test_preload(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(gs__slurm_preload("/lib/gs.so", NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so");
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "", out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so");
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "/a.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so:/a.so");
    /* Blank or colon separated; an inherited copy of the shim is not repeated. */
    assert_int_equal(
        gs__slurm_preload("/lib/gs.so", " /a.so /lib/gs.so::/b.so\t", out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so:/a.so:/b.so");
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "/lib/gs.so", out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so");
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "/lib/gs.so.1", out, sizeof(out)), 0);
    assert_string_equal(out, "/lib/gs.so:/lib/gs.so.1");
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "/a.so", out, 16), GS_ENOSPC);
    assert_int_equal(gs__slurm_preload("/lib/gs.so", "/a.so", out, 17), 0);
    assert_int_equal(gs__slurm_preload("/lib/gs.so", NULL, out, 10), GS_ENOSPC);
}

static json_t *lease_json(const char *text)
{
    json_t *lease = json_loads(text, 0, NULL);
    assert_non_null(lease);
    return lease;
}

static void expect_env(json_t *env, const char *key, const char *value)
{
    assert_non_null(env);
    const char *got = json_string_value(json_object_get(env, key));
    if (value == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, value);
}

static void test_env_of_lease(void **state)
{
    (void)state;
    json_t *lease = lease_json(
        "{\"id\":42,\"region\":\"/run/gs/regions/42\",\"compute_share\":0,\"compute_max\":0,"
        "\"gpus\":[{\"index\":1,\"uuid\":\"GPU-b\",\"memory_limit\":4294967296}]}");
    json_t *env = gs__slurm_env_of_lease(lease);
    expect_env(env, "CUDA_VISIBLE_DEVICES", "GPU-b");
    expect_env(env, "GPUSHARE_REGION", "/run/gs/regions/42");
    expect_env(env, "GPUSHARE_MEMORY_LIMIT", "4G");
    expect_env(env, "GPUSHARE_LEASE_ID", "42");
    expect_env(env, "GPUSHARE_COMPUTE_SHARE", NULL);
    expect_env(env, "GPUSHARE_COMPUTE_MAX", NULL);
    assert_int_equal(json_object_size(env), 4);
    json_decref(env);
    json_decref(lease);

    lease = lease_json("{\"id\":7,\"region\":\"/r/7\",\"compute_share\":30,\"compute_max\":50,"
                       "\"gpus\":[{\"uuid\":\"GPU-b\",\"memory_limit\":2147483648},"
                       "{\"uuid\":\"GPU-a\",\"memory_limit\":1610612736}]}");
    env = gs__slurm_env_of_lease(lease);
    expect_env(env, "CUDA_VISIBLE_DEVICES", "GPU-b,GPU-a");
    expect_env(env, "GPUSHARE_MEMORY_LIMIT", "0=2G,1=1536M");
    expect_env(env, "GPUSHARE_COMPUTE_SHARE", "30");
    expect_env(env, "GPUSHARE_COMPUTE_MAX", "50");
    json_decref(env);
    json_decref(lease);

    const char *bad[] = {
        "{\"region\":\"/r\",\"gpus\":[{\"uuid\":\"G\",\"memory_limit\":1}]}",
        "{\"id\":1,\"gpus\":[{\"uuid\":\"G\",\"memory_limit\":1}]}",
        "{\"id\":1,\"region\":\"/r\",\"gpus\":[]}",
        "{\"id\":1,\"region\":\"/r\",\"gpus\":[{\"memory_limit\":1}]}",
        "{\"id\":1,\"region\":\"/r\",\"gpus\":[{\"uuid\":\"G\",\"memory_limit\":0}]}",
        "{\"id\":1,\"region\":\"/r\",\"gpus\":[{\"uuid\":\"G\"}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        lease = lease_json(bad[i]);
        assert_null(gs__slurm_env_of_lease(lease));
        json_decref(lease);
    }
}

/* Without a daemon, acquiring and joining fail with one line; an empty lease releases fine. */
static void test_no_daemon(void **state)
{
    (void)state;
    gs__slurm_config_t cfg = {.socket = "/nonexistent/gpushared.sock"};
    gs_lease_request_t req;
    gs__slurm_opts_t mem = {.memory = GIB};
    gs__slurm_step_t gpu0 = step_of("0", 0);
    assert_int_equal(gs__slurm_plan(&mem, &gpu0, &cfg, &req, err, sizeof(err)), 1);
    gs__slurm_lease_t lease;
    assert_int_equal(gs__slurm_acquire(&cfg, &req, &lease, err, sizeof(err)), GS_ENOENT);
    assert_string_equal(err, "cannot connect to gpushared at /nonexistent/gpushared.sock: No such "
                             "file or directory (is gpushared running?)");
    assert_null(lease.client);
    assert_null(lease.env);
    assert_int_equal(gs__slurm_join(&cfg, 3, 1000, &req, &lease, err, sizeof(err)), GS_ENOENT);
    gs__slurm_release(&lease);
    assert_int_equal(lease.id, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),       cmocka_unit_test(test_option_values),
        cmocka_unit_test(test_gpu_list),     cmocka_unit_test(test_plan_memory),
        cmocka_unit_test(test_plan_shards),  cmocka_unit_test(test_preload),
        cmocka_unit_test(test_env_of_lease), cmocka_unit_test(test_no_daemon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
