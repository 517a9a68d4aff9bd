/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: every function returns NVML_ERROR_UNINITIALIZED before nvmlInit and
 * after the last nvmlShutdown, and NVML_ERROR_INVALID_ARGUMENT for NULL, foreign, misaligned and
 * wrongly typed handles (acceptance 4). Table-driven: one row per exported function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_NO_UNVERSIONED_FUNC_DEFS 1 /* the legacy versions by their own names */
#include "gpushare/nvml_abi.h"
#include "test_sim_nvml_proc.h"

enum handle_kind { NO_HANDLE, DEVICE, GPU_INSTANCE, COMPUTE_INSTANCE };

typedef nvmlReturn_t (*api_call_t)(void *h);

typedef struct api_case {
    const char *name;
    api_call_t call;
    enum handle_kind kind;
} api_case_t;

/* Scratch outputs the calls write into. */
static unsigned u1, u2;
static int i1;
static char text[128];
static nvmlDevice_t dev_out;
static nvmlGpuInstance_t gi_out;
static nvmlComputeInstance_t ci_out;
static nvmlPciInfo_t pci;
static nvmlDeviceAttributes_t attrs;
static nvmlMemory_t mem;
static nvmlMemory_v2_t mem2;
static nvmlUtilization_t util;
static nvmlProcessInfo_t procs[4];
static nvmlProcessInfo_v1_t procs_v1[4];
static nvmlExcludedDeviceInfo_t excluded;
static nvmlProcessUtilizationSample_t samples[4];
static nvmlComputeMode_t mode;
static nvmlReturn_t status;
static nvmlGpuInstanceProfileInfo_t gip;
static nvmlGpuInstanceProfileInfo_v2_t gip2;
static nvmlGpuInstancePlacement_t placements[8];
static nvmlGpuInstanceInfo_t gii;
static nvmlComputeInstanceProfileInfo_t cip;
static nvmlComputeInstanceProfileInfo_v2_t cip2;
static nvmlComputeInstanceInfo_t cii;
static nvmlGpuInstance_t gis[8];
static nvmlComputeInstance_t cis[8];

#define CALL(id, ...)                                                                              \
    static nvmlReturn_t id(void *h)                                                                \
    {                                                                                              \
        (void)h;                                                                                   \
        __VA_ARGS__;                                                                               \
    }

CALL(c_driver, return nvmlSystemGetDriverVersion(text, sizeof(text)))
CALL(c_nvml_version, return nvmlSystemGetNVMLVersion(text, sizeof(text)))
CALL(c_cuda_version, return nvmlSystemGetCudaDriverVersion(&i1))
CALL(c_cuda_version2, return nvmlSystemGetCudaDriverVersion_v2(&i1))
CALL(c_proc_name, return nvmlSystemGetProcessName(1, text, sizeof(text)))
CALL(c_count2, return nvmlDeviceGetCount_v2(&u1))
CALL(c_by_index2, return nvmlDeviceGetHandleByIndex_v2(0, &dev_out))
CALL(c_by_uuid, return nvmlDeviceGetHandleByUUID("GPU-x", &dev_out))
CALL(c_by_pci, return nvmlDeviceGetHandleByPciBusId_v2("00000000:18:00.0", &dev_out))
CALL(c_name, return nvmlDeviceGetName(h, text, sizeof(text)))
CALL(c_uuid, return nvmlDeviceGetUUID(h, text, sizeof(text)))
CALL(c_index, return nvmlDeviceGetIndex(h, &u1))
CALL(c_pci, return nvmlDeviceGetPciInfo_v3(h, &pci))
CALL(c_attrs, return nvmlDeviceGetAttributes_v2(h, &attrs))
CALL(c_mem, return nvmlDeviceGetMemoryInfo(h, &mem))
CALL(c_mem2, mem2.version = nvmlMemory_v2; return nvmlDeviceGetMemoryInfo_v2(h, &mem2))
CALL(c_util, return nvmlDeviceGetUtilizationRates(h, &util))
CALL(c_procs, u1 = 4; return nvmlDeviceGetComputeRunningProcesses_v3(h, &u1, procs))
CALL(c_proc_util, u1 = 4; return nvmlDeviceGetProcessUtilization(h, samples, &u1, 0))
CALL(c_procs_v1, u1 = 4; return nvmlDeviceGetComputeRunningProcesses(h, &u1, procs_v1))
CALL(c_procs_v2, u1 = 4; return nvmlDeviceGetComputeRunningProcesses_v2(h, &u1, procs))
CALL(c_mps_v1, u1 = 4; return nvmlDeviceGetMPSComputeRunningProcesses(h, &u1, procs_v1))
CALL(c_mps_v2, u1 = 4; return nvmlDeviceGetMPSComputeRunningProcesses_v2(h, &u1, procs))
CALL(c_mps_v3, u1 = 4; return nvmlDeviceGetMPSComputeRunningProcesses_v3(h, &u1, procs))
CALL(c_gfx_v1, u1 = 4; return nvmlDeviceGetGraphicsRunningProcesses(h, &u1, procs_v1))
CALL(c_gfx_v2, u1 = 4; return nvmlDeviceGetGraphicsRunningProcesses_v2(h, &u1, procs))
CALL(c_gfx_v3, u1 = 4; return nvmlDeviceGetGraphicsRunningProcesses_v3(h, &u1, procs))
CALL(c_attrs_v1, return nvmlDeviceGetAttributes(h, &attrs))
CALL(c_by_pci_v1, return nvmlDeviceGetHandleByPciBusId("00000000:18:00.0", &dev_out))
CALL(c_init_v1_count, return nvmlDeviceGetCount(&u1))
CALL(c_by_index_v1, return nvmlDeviceGetHandleByIndex(0, &dev_out))
CALL(c_units, return nvmlUnitGetCount(&u1))
CALL(c_cc, return nvmlDeviceGetCudaComputeCapability(h, &i1, &i1))
CALL(c_excluded, return nvmlGetExcludedDeviceCount(&u1))
CALL(c_excluded_info, return nvmlGetExcludedDeviceInfoByIndex(0, &excluded))
CALL(c_blacklist, return nvmlGetBlacklistDeviceCount(&u1))
CALL(c_blacklist_info, return nvmlGetBlacklistDeviceInfoByIndex(0, &excluded))
CALL(c_get_mode, return nvmlDeviceGetComputeMode(h, &mode))
CALL(c_set_mode, return nvmlDeviceSetComputeMode(h, NVML_COMPUTEMODE_DEFAULT))
CALL(c_get_mig, return nvmlDeviceGetMigMode(h, &u1, &u2))
CALL(c_set_mig, return nvmlDeviceSetMigMode(h, NVML_DEVICE_MIG_DISABLE, &status))
CALL(c_gip, return nvmlDeviceGetGpuInstanceProfileInfo(h, 0, &gip))
CALL(c_gip_v, gip2.version = nvmlGpuInstanceProfileInfo_v2;
     return nvmlDeviceGetGpuInstanceProfileInfoV(h, 0, &gip2))
CALL(c_placements, u1 = 8;
     return nvmlDeviceGetGpuInstancePossiblePlacements_v2(h, 19, placements, &u1))
CALL(c_gi_capacity, return nvmlDeviceGetGpuInstanceRemainingCapacity(h, 19, &u1))
CALL(c_gi_create, return nvmlDeviceCreateGpuInstance(h, 19, &gi_out))
CALL(c_gi_create_at, nvmlGpuInstancePlacement_t p = {.start = 0, .size = 1};
     return nvmlDeviceCreateGpuInstanceWithPlacement(h, 19, &p, &gi_out))
CALL(c_gi_list, u1 = 8; return nvmlDeviceGetGpuInstances(h, 19, gis, &u1))
CALL(c_gi_by_id, return nvmlDeviceGetGpuInstanceById(h, 7, &gi_out))
CALL(c_is_mig, return nvmlDeviceIsMigDeviceHandle(h, &u1))
CALL(c_gi_id, return nvmlDeviceGetGpuInstanceId(h, &u1))
CALL(c_ci_id, return nvmlDeviceGetComputeInstanceId(h, &u1))
CALL(c_max_mig, return nvmlDeviceGetMaxMigDeviceCount(h, &u1))
CALL(c_mig_by_index, return nvmlDeviceGetMigDeviceHandleByIndex(h, 0, &dev_out))
CALL(c_mig_parent, return nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h, &dev_out))
CALL(c_gi_destroy, return nvmlGpuInstanceDestroy(h))
CALL(c_gi_info, return nvmlGpuInstanceGetInfo(h, &gii))
CALL(c_cip,
     return nvmlGpuInstanceGetComputeInstanceProfileInfo(h, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                         0, &cip))
CALL(c_cip_v, cip2.version = nvmlComputeInstanceProfileInfo_v2;
     return nvmlGpuInstanceGetComputeInstanceProfileInfoV(h, 0, 0, &cip2))
CALL(c_ci_capacity, return nvmlGpuInstanceGetComputeInstanceRemainingCapacity(h, 0, &u1))
CALL(c_ci_create, return nvmlGpuInstanceCreateComputeInstance(h, 0, &ci_out))
CALL(c_ci_list, u1 = 8; return nvmlGpuInstanceGetComputeInstances(h, 0, cis, &u1))
CALL(c_ci_by_id, return nvmlGpuInstanceGetComputeInstanceById(h, 0, &ci_out))
CALL(c_ci_destroy, return nvmlComputeInstanceDestroy(h))
CALL(c_ci_info, return nvmlComputeInstanceGetInfo_v2(h, &cii))

#define ROW(fn, call, kind)                                                                        \
    {                                                                                              \
#fn, call, kind                                                                            \
    }

static const api_case_t cases[] = {
    ROW(nvmlSystemGetDriverVersion, c_driver, NO_HANDLE),
    ROW(nvmlSystemGetNVMLVersion, c_nvml_version, NO_HANDLE),
    ROW(nvmlSystemGetCudaDriverVersion, c_cuda_version, NO_HANDLE),
    ROW(nvmlSystemGetCudaDriverVersion_v2, c_cuda_version2, NO_HANDLE),
    ROW(nvmlSystemGetProcessName, c_proc_name, NO_HANDLE),
    ROW(nvmlDeviceGetCount_v2, c_count2, NO_HANDLE),
    ROW(nvmlDeviceGetHandleByIndex_v2, c_by_index2, NO_HANDLE),
    ROW(nvmlDeviceGetHandleByUUID, c_by_uuid, NO_HANDLE),
    ROW(nvmlDeviceGetHandleByPciBusId_v2, c_by_pci, NO_HANDLE),
    ROW(nvmlDeviceGetName, c_name, DEVICE),
    ROW(nvmlDeviceGetUUID, c_uuid, DEVICE),
    ROW(nvmlDeviceGetIndex, c_index, DEVICE),
    ROW(nvmlDeviceGetPciInfo_v3, c_pci, DEVICE),
    ROW(nvmlDeviceGetAttributes_v2, c_attrs, DEVICE),
    ROW(nvmlDeviceGetMemoryInfo, c_mem, DEVICE),
    ROW(nvmlDeviceGetMemoryInfo_v2, c_mem2, DEVICE),
    ROW(nvmlDeviceGetUtilizationRates, c_util, DEVICE),
    ROW(nvmlDeviceGetComputeRunningProcesses_v3, c_procs, DEVICE),
    ROW(nvmlDeviceGetProcessUtilization, c_proc_util, DEVICE),
    ROW(nvmlDeviceGetComputeRunningProcesses, c_procs_v1, DEVICE),
    ROW(nvmlDeviceGetComputeRunningProcesses_v2, c_procs_v2, DEVICE),
    ROW(nvmlDeviceGetMPSComputeRunningProcesses, c_mps_v1, DEVICE),
    ROW(nvmlDeviceGetMPSComputeRunningProcesses_v2, c_mps_v2, DEVICE),
    ROW(nvmlDeviceGetMPSComputeRunningProcesses_v3, c_mps_v3, DEVICE),
    ROW(nvmlDeviceGetGraphicsRunningProcesses, c_gfx_v1, DEVICE),
    ROW(nvmlDeviceGetGraphicsRunningProcesses_v2, c_gfx_v2, DEVICE),
    ROW(nvmlDeviceGetGraphicsRunningProcesses_v3, c_gfx_v3, DEVICE),
    ROW(nvmlDeviceGetAttributes, c_attrs_v1, DEVICE),
    ROW(nvmlDeviceGetHandleByPciBusId, c_by_pci_v1, NO_HANDLE),
    ROW(nvmlDeviceGetCount, c_init_v1_count, NO_HANDLE),
    ROW(nvmlDeviceGetHandleByIndex, c_by_index_v1, NO_HANDLE),
    ROW(nvmlUnitGetCount, c_units, NO_HANDLE),
    ROW(nvmlDeviceGetCudaComputeCapability, c_cc, DEVICE),
    ROW(nvmlGetExcludedDeviceCount, c_excluded, NO_HANDLE),
    ROW(nvmlGetExcludedDeviceInfoByIndex, c_excluded_info, NO_HANDLE),
    ROW(nvmlGetBlacklistDeviceCount, c_blacklist, NO_HANDLE),
    ROW(nvmlGetBlacklistDeviceInfoByIndex, c_blacklist_info, NO_HANDLE),
    ROW(nvmlDeviceGetComputeMode, c_get_mode, DEVICE),
    ROW(nvmlDeviceSetComputeMode, c_set_mode, DEVICE),
    ROW(nvmlDeviceGetMigMode, c_get_mig, DEVICE),
    ROW(nvmlDeviceSetMigMode, c_set_mig, DEVICE),
    ROW(nvmlDeviceGetGpuInstanceProfileInfo, c_gip, DEVICE),
    ROW(nvmlDeviceGetGpuInstanceProfileInfoV, c_gip_v, DEVICE),
    ROW(nvmlDeviceGetGpuInstancePossiblePlacements_v2, c_placements, DEVICE),
    ROW(nvmlDeviceGetGpuInstanceRemainingCapacity, c_gi_capacity, DEVICE),
    ROW(nvmlDeviceCreateGpuInstance, c_gi_create, DEVICE),
    ROW(nvmlDeviceCreateGpuInstanceWithPlacement, c_gi_create_at, DEVICE),
    ROW(nvmlDeviceGetGpuInstances, c_gi_list, DEVICE),
    ROW(nvmlDeviceGetGpuInstanceById, c_gi_by_id, DEVICE),
    ROW(nvmlDeviceIsMigDeviceHandle, c_is_mig, DEVICE),
    ROW(nvmlDeviceGetGpuInstanceId, c_gi_id, DEVICE),
    ROW(nvmlDeviceGetComputeInstanceId, c_ci_id, DEVICE),
    ROW(nvmlDeviceGetMaxMigDeviceCount, c_max_mig, DEVICE),
    ROW(nvmlDeviceGetMigDeviceHandleByIndex, c_mig_by_index, DEVICE),
    ROW(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, c_mig_parent, DEVICE),
    ROW(nvmlGpuInstanceDestroy, c_gi_destroy, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetInfo, c_gi_info, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetComputeInstanceProfileInfo, c_cip, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetComputeInstanceProfileInfoV, c_cip_v, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetComputeInstanceRemainingCapacity, c_ci_capacity, GPU_INSTANCE),
    ROW(nvmlGpuInstanceCreateComputeInstance, c_ci_create, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetComputeInstances, c_ci_list, GPU_INSTANCE),
    ROW(nvmlGpuInstanceGetComputeInstanceById, c_ci_by_id, GPU_INSTANCE),
    ROW(nvmlComputeInstanceDestroy, c_ci_destroy, COMPUTE_INSTANCE),
    ROW(nvmlComputeInstanceGetInfo_v2, c_ci_info, COMPUTE_INSTANCE),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Asserts every row returns want when called with handle h (rows with a handle only when
 * with_handle_only). */
static void expect_all(void *h, int with_handle_only, nvmlReturn_t want)
{
    for (size_t i = 0; i < N_CASES; i++) {
        if (with_handle_only && cases[i].kind == NO_HANDLE)
            continue;
        nvmlReturn_t got = cases[i].call(h);
        if (got != want)
            fail_msg("%s returned %d (%s), expected %d", cases[i].name, got, nvmlErrorString(got),
                     want);
    }
}

static void test_before_init(void **state)
{
    (void)state;
    expect_all(NULL, 0, NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    /* nvmlErrorString needs no initialisation. */
    assert_string_equal(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
}

static void test_bad_handles(void **state)
{
    (void)state;
    static unsigned char foreign[256];
    memset(foreign, 0x5a, sizeof(foreign));
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t dev0;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev0), NVML_SUCCESS);
    expect_all(NULL, 1, NVML_ERROR_INVALID_ARGUMENT);
    expect_all(foreign, 1, NVML_ERROR_INVALID_ARGUMENT);
    expect_all((char *)dev0 + 1, 1, NVML_ERROR_INVALID_ARGUMENT);
    /* A device handle is not a GPU or compute instance handle. */
    for (size_t i = 0; i < N_CASES; i++) {
        if (cases[i].kind == GPU_INSTANCE || cases[i].kind == COMPUTE_INSTANCE)
            assert_int_equal(cases[i].call(dev0), NVML_ERROR_INVALID_ARGUMENT);
    }
    /* The device handle itself is fine. */
    assert_int_equal(c_name(dev0), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
}

static void test_after_shutdown(void **state)
{
    (void)state;
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    assert_int_equal(nvmlInitWithFlags(0), NVML_SUCCESS);
    nvmlDevice_t dev0;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev0), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    /* Still one reference: calls work. */
    assert_int_equal(c_name(dev0), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    expect_all(dev0, 0, NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

/* Writes the fault file (NULL: removes it). */
static void faults(const char *rules)
{
    const char *path = getenv("GPUSIM_NVML_FAULTS");
    if (rules == NULL) {
        unlink(path);
        return;
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(rules, f);
    fclose(f);
}

/* Issue 25: GPUSIM_NVML_FAULTS makes any entry point fail, modelled or not, by name, by prefix
 * or all of them; the first matching line wins, and a fault goes when its line does. */
static void test_faults_any_function(void **state)
{
    (void)state;
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t dev0;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev0), NVML_SUCCESS);
    nvmlReturn_t (*fan)(nvmlDevice_t, unsigned *) =
        (nvmlReturn_t(*)(nvmlDevice_t, unsigned *))dlsym(RTLD_DEFAULT, "nvmlDeviceGetFanSpeed");
    assert_non_null(fan);
    assert_int_equal(fan(dev0, &u1), NVML_ERROR_NOT_SUPPORTED);
    faults("nvmlDeviceGetShutdown 0\n* 999 # every function\n");
    expect_all(dev0, 1, NVML_ERROR_UNKNOWN);
    assert_int_equal(fan(dev0, &u1), NVML_ERROR_UNKNOWN);
    faults("nvmlDeviceGetName 3\nnvmlGpuInstance* 19\n");
    assert_int_equal(c_name(dev0), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceGetMemoryInfo(dev0, &mem), NVML_SUCCESS);
    assert_int_equal(nvmlGpuInstanceGetInfo(NULL, &gii), NVML_ERROR_IN_USE);
    assert_int_equal(fan(dev0, &u1), NVML_ERROR_NOT_SUPPORTED);
    faults("nvmlDeviceGetMemoryInfo 0\nnvmlDeviceGet* 999\n");
    assert_int_equal(nvmlDeviceGetMemoryInfo(dev0, &mem), NVML_SUCCESS);
    assert_int_equal(fan(dev0, &u1), NVML_ERROR_UNKNOWN);
    faults(NULL);
    assert_int_equal(c_name(dev0), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
}

/* The lines of the file PATH ("" when there is none). */
static void read_all(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* Issue 41: a fault is seen to fire. GPUSIM_NVML_FAULTS_FIRED gets one line "FUNCTION CODE" for
 * the first call each version of the rules fails, none for an exempt or unmatched call. */
static void test_faults_fired(void **state)
{
    (void)state;
    char fired[600], got[256];
    snprintf(fired, sizeof(fired), "%s.fired", getenv("GPUSIM_NVML_FAULTS"));
    unlink(fired);
    setenv("GPUSIM_NVML_FAULTS_FIRED", fired, 1);
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t dev0;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &dev0), NVML_SUCCESS);
    faults("nvmlDeviceGetName 0\nnvmlDeviceGetMemoryInfo 999\n");
    assert_int_equal(c_name(dev0), NVML_SUCCESS);
    read_all(fired, got, sizeof(got));
    assert_string_equal(got, "");
    assert_int_equal(nvmlDeviceGetMemoryInfo(dev0, &mem), NVML_ERROR_UNKNOWN);
    assert_int_equal(nvmlDeviceGetMemoryInfo(dev0, &mem), NVML_ERROR_UNKNOWN);
    read_all(fired, got, sizeof(got));
    assert_string_equal(got, "nvmlDeviceGetMemoryInfo 999\n");
    faults("nvmlDeviceGetN* 3\n");
    assert_int_equal(c_name(dev0), NVML_ERROR_NOT_SUPPORTED);
    read_all(fired, got, sizeof(got));
    assert_string_equal(got, "nvmlDeviceGetMemoryInfo 999\nnvmlDeviceGetName 3\n");
    faults(NULL);
    assert_int_equal(c_name(dev0), NVML_SUCCESS);
    unsetenv("GPUSIM_NVML_FAULTS_FIRED");
    unlink(fired);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
}

int main(void)
{
    const char *dir = make_temp_dir("nvml-errors");
    if (dir == NULL)
        return 1;
    setenv("GPUSIM_STATE", dir, 1);
    setenv("GPUSIM_DEVICES", "A100-40GB", 1);
    char fault_file[512];
    snprintf(fault_file, sizeof(fault_file), "%s/nvml-faults", dir);
    setenv("GPUSIM_NVML_FAULTS", fault_file, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_init),    cmocka_unit_test(test_bad_handles),
        cmocka_unit_test(test_after_shutdown), cmocka_unit_test(test_faults_any_function),
        cmocka_unit_test(test_faults_fired),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(dir);
    return failed;
}
