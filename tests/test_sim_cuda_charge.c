/* SPDX-License-Identifier: Apache-2.0 */
/* Unit test of the driver's memory charging (sim/cuda/charge.c) against a mock node: the MPS
 * pinned device memory limit is exact, also with threads racing for it, and a node that is full
 * rolls the reservation back; a context's footprint counts against the pinned limit. The real
 * node and MPS detection are replaced by the mocks below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>

#include "cuda_internal.h"

#define MIB (UINT64_C(1) << 20)

static gsim_cu_device_t mock_device = {.ordinal = 0, .domain = {.dev = 0, .gi = -1}};
static uint64_t mock_pinned_limit;
static uint64_t mock_node_free;
static uint64_t mock_node_used;
static pthread_mutex_t mock_mu = PTHREAD_MUTEX_INITIALIZER;

const gsim_cu_device_t *gsim_cu_device(CUdevice ord)
{
    return ord == 0 ? &mock_device : NULL;
}

gsim_node_t *gsim_cu_node(void)
{
    return NULL;
}

uint64_t gsim_cu_pinned_limit(int ordinal)
{
    return ordinal == 0 ? mock_pinned_limit : 0;
}

int gsim_mem_charge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    (void)node;
    (void)domain;
    pthread_mutex_lock(&mock_mu);
    int result = bytes <= mock_node_free ? 0 : -ENOMEM;
    if (result == 0) {
        mock_node_free -= bytes;
        mock_node_used += bytes;
    }
    pthread_mutex_unlock(&mock_mu);
    return result;
}

void gsim_mem_uncharge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    (void)node;
    (void)domain;
    pthread_mutex_lock(&mock_mu);
    mock_node_free += bytes;
    mock_node_used -= bytes;
    pthread_mutex_unlock(&mock_mu);
}

/* The model's context size; the real formula is tested against the CSV in test_gsim_core. */
uint64_t gsim_context_bytes(const gsim_model_t *m, uint32_t sms)
{
    (void)m;
    return sms * MIB;
}

static void reset(uint64_t limit, uint64_t node_free)
{
    mock_pinned_limit = limit;
    mock_node_free = node_free;
    mock_node_used = 0;
}

static void test_pinned_limit_is_exact(void **state)
{
    (void)state;
    reset(10 * MIB, 80 * MIB);
    assert_int_equal(gsim_cu_charge(0, 6 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsim_cu_charge(0, 4 * MIB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(gsim_cu_charge(0, 4 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsim_cu_charge(0, 1), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(mock_node_used, 10 * MIB);
    gsim_cu_uncharge(0, 4 * MIB);
    assert_int_equal(gsim_cu_charge(0, 4 * MIB), CUDA_SUCCESS);
    gsim_cu_uncharge(0, 10 * MIB);
    assert_int_equal(mock_node_used, 0);
    assert_int_equal(gsim_cu_charge(1, 1), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(gsim_cu_charge(0, 0), CUDA_SUCCESS);
}

static void test_full_node_rolls_back(void **state)
{
    (void)state;
    reset(10 * MIB, 3 * MIB);
    assert_int_equal(gsim_cu_charge(0, 4 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    /* The failed attempt left nothing reserved against the pinned limit. */
    mock_node_free = 80 * MIB;
    assert_int_equal(gsim_cu_charge(0, 10 * MIB), CUDA_SUCCESS);
    gsim_cu_uncharge(0, 10 * MIB);
    reset(0, 5 * MIB); /* no limit: only the node decides */
    assert_int_equal(gsim_cu_charge(0, 5 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsim_cu_charge(0, 1), CUDA_ERROR_OUT_OF_MEMORY);
    gsim_cu_uncharge(0, 5 * MIB);
}

/* A context's footprint counts in the node and against the pinned limit (as an MPS client's does
 * on a real H100), cuMemGetInfo's cap follows, and a node or a limit without room for it refuses
 * the context with nothing charged. */
static void test_context_footprint(void **state)
{
    (void)state;
    struct CUctx_st ctx = {.ordinal = 0, .domain = {.dev = 0, .gi = -1}};
    mock_device.sms = 7;
    reset(10 * MIB, 20 * MIB);
    assert_int_equal(gsim_cu_pinned_left(0), 10 * MIB);
    assert_int_equal(gsim_cu_charge_context(&ctx, 0), CUDA_SUCCESS);
    assert_int_equal(ctx.footprint, 7 * MIB);
    assert_int_equal(mock_node_used, 7 * MIB);
    assert_int_equal(gsim_cu_pinned_left(0), 3 * MIB);
    assert_int_equal(gsim_cu_charge(0, 3 * MIB), CUDA_SUCCESS); /* the limit's rest */
    assert_int_equal(gsim_cu_charge(0, 1), CUDA_ERROR_OUT_OF_MEMORY);
    gsim_cu_uncharge(0, 3 * MIB);
    gsim_cu_uncharge_context(&ctx);
    gsim_cu_uncharge_context(&ctx); /* idempotent */
    assert_int_equal(ctx.footprint, 0);
    assert_int_equal(mock_node_used, 0);
    assert_int_equal(gsim_cu_pinned_left(0), 10 * MIB);
    reset(0, 6 * MIB);
    assert_int_equal(gsim_cu_pinned_left(0), UINT64_MAX);
    assert_int_equal(gsim_cu_charge_context(&ctx, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(ctx.footprint, 0);
    assert_int_equal(mock_node_used, 0);
    reset(6 * MIB, 20 * MIB); /* the limit has no room for it: nothing charged */
    assert_int_equal(gsim_cu_charge_context(&ctx, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(mock_node_used, 0);
    assert_int_equal(gsim_cu_pinned_left(0), 6 * MIB);
    assert_int_equal(gsim_cu_charge_context(&ctx, 1), CUDA_ERROR_INVALID_DEVICE);
    mock_device.sms = 0;
}

static void *charge_loop(void *arg)
{
    int *granted = arg;
    for (int i = 0; i < 1000; i++) {
        if (gsim_cu_charge(0, MIB) == CUDA_SUCCESS)
            (*granted)++;
    }
    return NULL;
}

static void test_racing_threads_never_exceed(void **state)
{
    (void)state;
    reset(100 * MIB, 1000 * MIB);
    pthread_t t[4];
    int granted[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, charge_loop, &granted[i]), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(granted[0] + granted[1] + granted[2] + granted[3], 100);
    assert_int_equal(mock_node_used, 100 * MIB);
    gsim_cu_uncharge(0, 100 * MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_limit_is_exact),
        cmocka_unit_test(test_full_node_rolls_back),
        cmocka_unit_test(test_context_footprint),
        cmocka_unit_test(test_racing_threads_never_exceed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
