/* SPDX-License-Identifier: Apache-2.0 */
/* A context's footprint is measured once per process and device, and once per lease: the
 * process's first context is measured (NVML), later contexts of the same kind are charged the
 * same bytes from that figure, and so is the first context of a later process of the lease,
 * unless its CUDA_* environment differs (then it measures its own). Each charge is the context's
 * exact memory on gpusim's H100 and comes back when the context goes. Run under the shim with
 * GPUSHARE_MEMORY_LIMIT=4G (tests/shim.cmake); the lease's region is a file in GS_TEST_TMP. A
 * plain driver-API program: cuda.h, linked against NVIDIA's stub libcuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIMIT (UINT64_C(4) << 30)
/* A context's own memory on an H100 (as test_shim_families has it). */
#define CONTEXT UINT64_C(543162368)

#define CU(call) assert_int_equal((call), CUDA_SUCCESS)

static const char *self;

static uint64_t used_now(void)
{
    size_t free_bytes = 0, total = 0;
    CU(cuMemGetInfo(&free_bytes, &total));
    assert_int_equal(total, LIMIT);
    return LIMIT - free_bytes;
}

static int setup(void **state)
{
    (void)state;
    return cuInit(0) == CUDA_SUCCESS ? 0 : -1;
}

/* The first context is measured; a second and a third of the same kind are charged the same,
 * one of them made after every context was gone; each comes back. */
static void test_same_process(void **state)
{
    (void)state;
    CUdevice dev;
    CUcontext a, b, c;
    CU(cuDeviceGet(&dev, 0));
    CU(cuCtxCreate(&a, NULL, 0, dev));
    assert_int_equal(used_now(), CONTEXT);
    CU(cuCtxCreate(&b, NULL, 0, dev));
    assert_int_equal(used_now(), 2 * CONTEXT);
    CU(cuCtxDestroy(b));
    CU(cuCtxDestroy(a));
    CU(cuCtxCreate(&c, NULL, 0, dev));
    assert_int_equal(used_now(), CONTEXT);
    CU(cuCtxDestroy(c));
    CU(cuDevicePrimaryCtxRetain(&a, dev)); /* another kind: measured, the same bytes here */
    CU(cuCtxSetCurrent(a));
    assert_int_equal(used_now(), CONTEXT);
    CU(cuDevicePrimaryCtxRelease(dev));
}

/* Runs this program as a later process of the lease (with extra, "VAR=VALUE" or NULL, in its
 * environment and GPUSHARE_LOG=info); returns its log, and the bytes it saw used after its
 * first context in *used. */
static char *child(const char *extra, uint64_t *used)
{
    static char log[8192];
    int out[2], err[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        setenv("GPUSHARE_LOG", "info", 1);
        if (extra != NULL)
            putenv((char *)extra);
        execl(self, self, "child", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    char line[64] = "";
    ssize_t n = read(out[0], line, sizeof(line) - 1);
    line[n > 0 ? n : 0] = '\0';
    size_t len = 0;
    while (len < sizeof(log) - 1 && (n = read(err[0], log + len, sizeof(log) - 1 - len)) > 0)
        len += (size_t)n;
    log[len] = '\0';
    close(out[0]);
    close(err[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    *used = strtoull(line, NULL, 10);
    return log;
}

static void test_later_process(void **state)
{
    (void)state;
    uint64_t used = 0;
    const char *log = child(NULL, &used);
    assert_int_equal(used, CONTEXT);
    assert_non_null(strstr(log, "measured by an earlier process of the lease"));
}

/* Another CUDA_* environment may shape the context otherwise: that process measures its own. */
static void test_other_environment(void **state)
{
    (void)state;
    uint64_t used = 0;
    const char *log = child("CUDA_DEVICE_MAX_CONNECTIONS=4", &used);
    assert_int_equal(used, CONTEXT);
    assert_null(strstr(log, "measured by an earlier process"));
    assert_non_null(strstr(log, "this process's memory"));
}

static int run_child(void)
{
    CUdevice dev;
    CUcontext ctx;
    size_t free_bytes = 0, total = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuCtxCreate(&ctx, NULL, 0, dev) != CUDA_SUCCESS ||
        cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS)
        return 1;
    printf("%llu\n", (unsigned long long)(total - free_bytes));
    return 0;
}

int main(int argc, char **argv)
{
    char region[512];
    const char *tmp = getenv("GS_TEST_TMP");
    if (tmp == NULL)
        return 2;
    snprintf(region, sizeof(region), "%s/lease.region", tmp);
    setenv("GPUSHARE_REGION", region, 1); /* read at the first CUDA call */
    self = argv[0];
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return run_child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_process),
        cmocka_unit_test(test_later_process),
        cmocka_unit_test(test_other_environment),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
