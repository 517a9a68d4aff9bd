/* SPDX-License-Identifier: Apache-2.0 */
/* A new GPU mode is one new file and one line of the table of modes (docs/modes.md): this test
 * is built with the test-only mode demo (tests/modes/mode_demo.c, tests/modes/demo.def) added to
 * the client and the daemon's core and gpu layers, and nothing else changed (tests/modes.cmake).
 * The mode is then in the enum and the names, the configuration and the protocol parse it, the
 * daemon's dispatch reaches its operations (its own check_config, its admission through
 * placement), and the messages that list modes name it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "gpu/gpu.h"
#include "gpushare/error.h"

#define GIB (UINT64_C(1) << 30)

static gs__gpu_t gpu(unsigned index, gs_gpu_mode_t mode)
{
    gs__gpu_t g;
    memset(&g, 0, sizeof(g));
    g.index = index;
    snprintf(g.uuid, sizeof(g.uuid), "GPU-%u", index);
    snprintf(g.name, sizeof(g.name), "NVIDIA H100-80GB");
    g.total = 80 * GIB;
    g.overprovision = 1;
    gs__gpu_set_mode(&g, mode);
    return g;
}

static void test_table(void **state)
{
    (void)state;
    gs_gpu_mode_t mode = GS_GPU_MODE_ANY;
    assert_int_equal(gs_gpu_mode_parse("demo", &mode), 0);
    assert_int_equal(mode, GS_GPU_MODE_DEMO);
    assert_string_equal(gs_gpu_mode_name(GS_GPU_MODE_DEMO), "demo");
    assert_int_equal(gs_gpu_mode_flags(GS_GPU_MODE_DEMO), GS_MODE_SHARES_GPU);
    char list[128];
    assert_string_equal(gs_gpu_mode_list(0, 0, 0, NULL, list, sizeof(list)),
                        "shared, exclusive, mps, mig or demo");
    /* Every mode of the table reaches its own operations, named as in the table. */
    for (unsigned m = GS_GPU_MODE_ANY + 1; m < GS_GPU_MODE_END; m++)
        assert_string_equal(gs__mode_ops((gs_gpu_mode_t)m)->name, gs_gpu_mode_name(m));
    assert_ptr_equal(gs__mode_ops(GS_GPU_MODE_DEMO), &gs__mode_demo_ops);
}

static void test_config(void **state)
{
    (void)state;
    gs__config_t cfg;
    char err[GS__CONFIG_ERRMAX];
    gs__config_defaults(&cfg);
    assert_int_equal(
        gs__config_parse(&cfg, "[gpu:1]\nmode = demo\n", "test.conf", err, sizeof(err)), 0);
    assert_int_equal(gs__config_gpu(&cfg, 1, NULL).mode, GS_GPU_MODE_DEMO);
    gs__config_defaults(&cfg);
    assert_int_equal(
        gs__config_parse(&cfg, "[gpu:all]\nmode = fast\n", "test.conf", err, sizeof(err)),
        GS_EINVAL);
    assert_string_equal(err, "test.conf:2: mode \"fast\" must be shared, mps, mig, demo or "
                             "exclusive");
}

static void test_check_config(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(3, GS_GPU_MODE_DEMO);
    char err[128];
    assert_int_equal(gs__mode_of(&g)->check_config(&g, err, sizeof(err)), 0);
    g.overprovision = 2;
    assert_int_equal(gs__mode_of(&g)->check_config(&g, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "GPU 3: mode demo gives memory leases: overprovision must be 1, "
                             "not 2");
}

static void test_placement(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, GS_GPU_MODE_SHARED), gpu(1, GS_GPU_MODE_DEMO)};
    gs_lease_request_t req;
    gs_lease_request_init(&req);
    req.kind = GS_LEASE_MEMORY;
    req.memory = 4 * GIB;
    req.mode = GS_GPU_MODE_DEMO;
    gs__alloc_t a;
    assert_int_equal(gs__place(gs, 2, &req, GS__POLICY_BESTFIT, &a), 0);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.part[0].gpu, 1);
    req.kind = GS_LEASE_GPUS;
    req.gpus = 1;
    char why[256];
    assert_int_equal(gs__place_possible(&gs[1], 1, &req, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "GPU 1 is mode demo: it gives memory leases (--gpu-memory) only");
    req.kind = GS_LEASE_MEMORY;
    assert_int_equal(gs__place_possible(gs, 1, &req, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "no GPU on this node is mode demo");
}

static void test_protocol(void **state)
{
    (void)state;
    const char *line = "{\"op\": \"acquire\", \"gpu_memory\": \"1G\", \"mode\": \"demo\"}";
    gs_request_t req;
    char err[GS_CLIENT_ERR_MAX];
    assert_int_equal(gs_proto_parse_request(line, strlen(line), &req, err, sizeof(err)), 0);
    assert_int_equal(req.lease.mode, GS_GPU_MODE_DEMO);
    line = "{\"op\": \"acquire\", \"gpu_memory\": \"1G\", \"mode\": \"fast\"}";
    assert_int_equal(gs_proto_parse_request(line, strlen(line), &req, err, sizeof(err)), GS_EINVAL);
    assert_string_equal(err, "\"mode\" must be \"shared\", \"exclusive\", \"mps\", \"mig\", "
                             "\"demo\" or \"any\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),        cmocka_unit_test(test_config),
        cmocka_unit_test(test_check_config), cmocka_unit_test(test_placement),
        cmocka_unit_test(test_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
