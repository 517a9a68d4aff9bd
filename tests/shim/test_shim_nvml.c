/* SPDX-License-Identifier: Apache-2.0 */
/* Through NVML too, a process sees its lease: nvmlDeviceGetMemoryInfo(_v2) of the lease's GPU
 * report the slice (total = limit, used = the lease's use, its context included), other GPUs their
 * real figures; with CUDA_VISIBLE_DEVICES set, NVML lists only those GPUs, in CUDA's order (count,
 * indexes, handles). Run under the shim with GPUSHARE_MEMORY_LIMIT=1G on two simulated
 * H100-80GB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

/* The legacy nvmlDeviceGetCount / GetHandleByIndex too. */
#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "gpushare/nvml_abi.h"

#define MIB   (UINT64_C(1) << 20)
#define LIMIT (UINT64_C(1) << 30)
/* An H100-80GB as NVML shows it (measured on a real one; gpusim models it): its total, the
 * memory the driver reserves (shown as used), and a context's own memory (charged to the lease). */
#define H100_TOTAL    UINT64_C(85520809984)
#define H100_RESERVED UINT64_C(503316480)
#define CONTEXT       UINT64_C(543162368)

static nvmlDevice_t gpu0, gpu1;
static char uuid0[NVML_DEVICE_UUID_V2_BUFFER_SIZE], uuid1[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

static int setup(void **state)
{
    (void)state;
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &gpu0) != 0 ||
        nvmlDeviceGetHandleByIndex_v2(1, &gpu1) != 0 ||
        nvmlDeviceGetUUID(gpu0, uuid0, sizeof(uuid0)) != 0 ||
        nvmlDeviceGetUUID(gpu1, uuid1, sizeof(uuid1)) != 0)
        return -1;
    /* As gpushare run does: the lease's GPU by UUID. */
    setenv("CUDA_VISIBLE_DEVICES", uuid1, 1);
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0)
        return -1;
    return 0;
}

static void test_lease_gpu_shows_the_slice(void **state)
{
    (void)state;
    CUdeviceptr p;
    assert_int_equal(cuMemAlloc(&p, 300 * MIB), CUDA_SUCCESS);
    nvmlMemory_t mem;
    assert_int_equal(nvmlDeviceGetMemoryInfo(gpu1, &mem), NVML_SUCCESS);
    assert_int_equal(mem.total, LIMIT);
    assert_int_equal(mem.used, CONTEXT + 300 * MIB);
    assert_int_equal(mem.free, LIMIT - CONTEXT - 300 * MIB);
    nvmlMemory_v2_t mem2 = {.version = nvmlMemory_v2};
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(gpu1, &mem2), NVML_SUCCESS);
    assert_int_equal(mem2.total, LIMIT);
    assert_int_equal(mem2.used, CONTEXT + 300 * MIB);
    assert_int_equal(mem2.free, LIMIT - CONTEXT - 300 * MIB);
    assert_int_equal(mem2.reserved, 0);
    assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
    assert_int_equal(nvmlDeviceGetMemoryInfo(gpu1, &mem), NVML_SUCCESS);
    assert_int_equal(mem.used, CONTEXT);
    assert_int_equal(mem.free, LIMIT - CONTEXT);
}

static void test_other_gpu_is_untouched(void **state)
{
    (void)state;
    nvmlMemory_t mem;
    assert_int_equal(nvmlDeviceGetMemoryInfo(gpu0, &mem), NVML_SUCCESS);
    assert_int_equal(mem.total, H100_TOTAL);
    assert_int_equal(mem.used, H100_RESERVED); /* nothing of this process is there */
    assert_int_equal(mem.free + mem.used, H100_TOTAL);
}

/* Inside a one-GPU lease NVML shows one GPU, as CUDA does (issue 14). */
static void test_only_the_lease_gpus_are_listed(void **state)
{
    (void)state;
    unsigned count = 9, index = 9;
    nvmlDevice_t dev;
    nvmlPciInfo_t pci;
    assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(nvmlDeviceGetCount(&count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev), NVML_SUCCESS);
    assert_ptr_equal(dev, gpu1);
    assert_int_equal(nvmlDeviceGetHandleByIndex(0, &dev), NVML_SUCCESS);
    assert_ptr_equal(dev, gpu1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(1, &dev), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetIndex(gpu1, &index), NVML_SUCCESS);
    assert_int_equal(index, 0);
    assert_int_equal(nvmlDeviceGetIndex(gpu0, &index), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetHandleByUUID(uuid0, &dev), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetHandleByUUID(uuid1, &dev), NVML_SUCCESS);
    assert_ptr_equal(dev, gpu1);
    assert_int_equal(nvmlDeviceGetPciInfo_v3(gpu0, &pci), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &dev), NVML_ERROR_NOT_FOUND);
}

/* CUDA_VISIBLE_DEVICES's order, indexes and UUID prefixes; the list ends at a bad entry. */
static void test_visible_order_and_forms(void **state)
{
    (void)state;
    unsigned count = 0, index = 9;
    nvmlDevice_t dev;
    char prefix[16];
    snprintf(prefix, sizeof(prefix), "%.12s", uuid0);
    const char *lists[] = {"1,0", "1,junk,0", "", "0,0,1"};
    const unsigned counts[] = {2, 1, 0, 1};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        setenv("CUDA_VISIBLE_DEVICES", lists[i], 1);
        assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
        assert_int_equal(count, counts[i]);
    }
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev), NVML_SUCCESS);
    assert_ptr_equal(dev, gpu1);
    assert_int_equal(nvmlDeviceGetIndex(gpu0, &index), NVML_SUCCESS);
    assert_int_equal(index, 1);
    setenv("CUDA_VISIBLE_DEVICES", prefix, 1);
    assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev), NVML_SUCCESS);
    assert_ptr_equal(dev, gpu0);
    unsetenv("CUDA_VISIBLE_DEVICES"); /* not in a lease: every GPU, NVML's own indexes */
    assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 2);
    assert_int_equal(nvmlDeviceGetIndex(gpu1, &index), NVML_SUCCESS);
    assert_int_equal(index, 1);
    setenv("CUDA_VISIBLE_DEVICES", uuid1, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_gpu_shows_the_slice),
        cmocka_unit_test(test_other_gpu_is_untouched),
        cmocka_unit_test(test_only_the_lease_gpus_are_listed),
        cmocka_unit_test(test_visible_order_and_forms),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
