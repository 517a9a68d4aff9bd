/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the mode seam's admission (src/daemon/core/mode_ops.h, core/place.c): which GPUs
 * serve which requests, one-GPU modes, and the one-line reasons for refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpu/mode.h"
#include "core/place.h"

#define GIB (UINT64_C(1) << 30)

static gs__gpu_t gpu(unsigned index, gs_gpu_mode_t mode)
{
    gs__gpu_t g;
    memset(&g, 0, sizeof(g));
    g.index = index;
    snprintf(g.uuid, sizeof(g.uuid), "GPU-%u", index);
    snprintf(g.name, sizeof(g.name), "NVIDIA H100-80GB");
    g.total = 80 * GIB;
    gs__gpu_set_mode(&g, mode);
    g.overprovision = 1;
    return g;
}

static gs_lease_request_t req_of(gs_lease_kind_t kind)
{
    gs_lease_request_t r;
    gs_lease_request_init(&r);
    r.kind = kind;
    r.memory = 4 * GIB;
    r.gpus = 1;
    snprintf(r.mig_profile, sizeof(r.mig_profile), "1g.10gb");
    return r;
}

static void expect_never(const gs__gpu_t *gs, unsigned n, const gs_lease_request_t *r, int code,
                         const char *why)
{
    char buf[256];
    assert_int_equal(gs__place_possible(gs, n, r, buf, sizeof(buf)), code);
    assert_string_equal(buf, why);
}

/* A mode whose GPU is not ready (no MPS daemon, MIG not set up) serves nothing and says why;
 * requests it could never serve are not blamed on it. */
static void test_unavailable_gpus(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, GS_GPU_MODE_MPS), gpu(1, GS_GPU_MODE_MIG)};
    gs__alloc_t a;
    gs_lease_request_t mem = req_of(GS_LEASE_MEMORY);
    assert_int_equal(gs__place(gs, 2, &mem, GS__POLICY_BESTFIT, &a), GS_ENOFIT);
    expect_never(gs, 2, &mem, GS_EAGAIN,
                 "GPU 0 (mps): its MPS control daemon is not running: not started");
    gs_lease_request_t mig = req_of(GS_LEASE_MIG);
    expect_never(gs, 2, &mig, GS_EAGAIN, "GPU 1 (mig): not set up");
    gs_lease_request_t whole = req_of(GS_LEASE_GPUS);
    expect_never(gs, 2, &whole, GS_EAGAIN,
                 "GPU 0 (mps): its MPS control daemon is not running: not started");
    gs__gpu_t only_mig = gpu(0, GS_GPU_MODE_MIG);
    expect_never(&only_mig, 1, &whole, GS_ENOFIT,
                 "GPU 0 is mode mig: it gives MIG instances (--gpu-memory, --gpu or "
                 "--mig-profile), not whole GPUs");
}

/* A request goes only to GPUs whose mode serves it, and of the mode it asks for. */
static void test_requests_follow_modes(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, GS_GPU_MODE_SHARED), gpu(1, GS_GPU_MODE_EXCLUSIVE)};
    gs__alloc_t a;
    gs_lease_request_t mig = req_of(GS_LEASE_MIG);
    expect_never(gs, 2, &mig, GS_ENOFIT,
                 "no GPU on this node is mode mig (--mig-profile needs one)");
    gs_lease_request_t mps = req_of(GS_LEASE_MEMORY);
    mps.mode = GS_GPU_MODE_MPS;
    expect_never(gs, 2, &mps, GS_ENOFIT, "no GPU on this node is mode mps");
    gs_lease_request_t excl = req_of(GS_LEASE_GPUS);
    excl.mode = GS_GPU_MODE_EXCLUSIVE;
    assert_int_equal(gs__place(gs, 2, &excl, GS__POLICY_BESTFIT, &a), 0);
    assert_int_equal(a.part[0].gpu, 1);
    gs_lease_request_t shared = req_of(GS_LEASE_MEMORY);
    shared.mode = GS_GPU_MODE_EXCLUSIVE;
    expect_never(gs, 2, &shared, GS_ENOFIT,
                 "GPU 1 is mode exclusive: it gives whole GPUs (--gpus) only");
    char why[128];
    gs__ask_t ask = {.req = &mps, .uid = GS__UID_ANY, .idle = 1};
    gs__gpu_why_not(&gs[0], &ask, why, sizeof(why));
    assert_string_equal(why, "GPU 0 is mode shared, not mps");
}

/* A lease holding a GPU of a one-GPU mode (mps, mig) holds no other. */
static void test_one_gpu_modes(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, GS_GPU_MODE_SHARED), gpu(1, GS_GPU_MODE_MPS)};
    gs_lease_request_t r = req_of(GS_LEASE_MEMORY);
    r.n_pinned = 2;
    r.pinned[0] = 0;
    r.pinned[1] = 1;
    expect_never(gs, 2, &r, GS_ENOFIT, "GPU 1 is mode mps: a lease holding it holds no other GPU");
    assert_int_equal(gs__gpu_free_slots(&gs[1]), 1);
    assert_true(gs__mode_of(&gs[1])->flags & GS__MODE_ONE_GPU);
    assert_false(gs__mode_of(&gs[1])->flags & GS__MODE_SHIM_COMPUTE);
    assert_true(gs__mode_of(&gs[0])->flags & GS__MODE_SHIM_COMPUTE);
    assert_string_equal(gs__mode_of(&gs[1])->name, "mps");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unavailable_gpus),
        cmocka_unit_test(test_requests_follow_modes),
        cmocka_unit_test(test_one_gpu_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
