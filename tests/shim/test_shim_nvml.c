/* Through NVML too, a process sees its lease: nvmlDeviceGetMemoryInfo(_v2) of the lease's GPU
 * report the slice (total = limit, used = the lease's use, its context included), other GPUs their
 * real figures.
 * Run under the shim with GPUSHARE_MEMORY_LIMIT=1G on two simulated H100-80GB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdlib.h>

#include "gpushare/nvml_abi.h"

#define MIB   (UINT64_C(1) << 20)
#define LIMIT (UINT64_C(1) << 30)
/* An H100-80GB as NVML shows it (measured on a real one; gpusim models it): its total, the
 * memory the driver reserves (shown as used), and a context's own memory (charged to the lease). */
#define H100_TOTAL    UINT64_C(85520809984)
#define H100_RESERVED UINT64_C(503316480)
#define CONTEXT       UINT64_C(543162368)

static nvmlDevice_t gpu0, gpu1;

static int setup(void **state)
{
    (void)state;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &gpu0) != 0 ||
        nvmlDeviceGetHandleByIndex_v2(1, &gpu1) != 0 ||
        nvmlDeviceGetUUID(gpu1, uuid, sizeof(uuid)) != 0)
        return -1;
    /* As gpushare run does: the lease's GPU by UUID. */
    setenv("CUDA_VISIBLE_DEVICES", uuid, 1);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_gpu_shows_the_slice),
        cmocka_unit_test(test_other_gpu_is_untouched),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
