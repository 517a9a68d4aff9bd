/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: initialisation, system and device queries, a CUDA process's memory in
 * the memory and process queries, and utilization that rises under kernels and falls to 0 when
 * idle (acceptance 1). The CUDA process is test_sim_nvml_helper, which uses gpusim's core the way
 * the driver does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/nvml_abi.h"
#include "test_sim_nvml_proc.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* The models' memory as the driver shows it (data/gpus/gpu-models.csv): the H100-80GB's figures
 * are measured on a real one, the A100-40GB's estimated. */
#define A100_RESERVED (240 * MIB)
#define A100_CONTEXT  (470 * MIB)
#define H100_TOTAL    85520809984ULL
#define H100_RESERVED 503316480ULL
#define H100_CONTEXT  543162368ULL

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static nvmlDevice_t device(unsigned index)
{
    nvmlDevice_t h = NULL;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(index, &h), NVML_SUCCESS);
    return h;
}

static unsigned long long used_bytes(nvmlDevice_t h)
{
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(h, &m), NVML_SUCCESS);
    assert_int_equal(m.free + m.used, m.total);
    return m.used;
}

static int setup(void **state)
{
    (void)state;
    return nvmlInit_v2() == NVML_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nvmlShutdown() == NVML_SUCCESS ? 0 : -1;
}

static void test_system(void **state)
{
    (void)state;
    char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    int cuda = 0;
    assert_int_equal(nvmlSystemGetDriverVersion(text, sizeof(text)), NVML_SUCCESS);
    assert_string_equal(text, "580.65.06");
    assert_int_equal(nvmlSystemGetDriverVersion(text, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlSystemGetDriverVersion(NULL, 80), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlSystemGetNVMLVersion(text, sizeof(text)), NVML_SUCCESS);
    assert_string_equal(text, "13.580.65.06");
    assert_int_equal(nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
    assert_int_equal(cuda, 13000);
    assert_int_equal(NVML_CUDA_DRIVER_VERSION_MAJOR(cuda), 13);
    assert_string_equal(nvmlErrorString(NVML_ERROR_IN_USE), "In use by another client");
    assert_string_equal(nvmlErrorString((nvmlReturn_t)12345), "Unknown Error");
    /* Reference counting: a second init needs a second shutdown. */
    assert_int_equal(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    unsigned count = 0;
    assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
}

static void test_identity(void **state)
{
    (void)state;
    unsigned count = 0, index = 9;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDevice_t h0 = device(0), h1 = device(1), found = NULL;
    assert_int_equal(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 2);
    assert_ptr_not_equal(h0, h1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(2, &found), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetName(h0, name, sizeof(name)), NVML_SUCCESS);
    assert_string_equal(name, "NVIDIA A100-40GB");
    assert_int_equal(nvmlDeviceGetName(h1, name, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlDeviceGetIndex(h1, &index), NVML_SUCCESS);
    assert_int_equal(index, 1);
    assert_int_equal(nvmlDeviceGetUUID(h1, uuid, sizeof(uuid)), NVML_SUCCESS);
    assert_int_equal(strlen(uuid), 40);
    assert_memory_equal(uuid, "GPU-", 4);
    assert_int_equal(nvmlDeviceGetHandleByUUID(uuid, &found), NVML_SUCCESS);
    assert_ptr_equal(found, h1);
    assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-00000000", &found), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetHandleByUUID(NULL, &found), NVML_ERROR_INVALID_ARGUMENT);
    nvmlPciInfo_t pci;
    assert_int_equal(nvmlDeviceGetPciInfo_v3(h1, &pci), NVML_SUCCESS);
    assert_string_equal(pci.busId, "00000000:28:00.0");
    assert_string_equal(pci.busIdLegacy, "0000:28:00.0");
    assert_int_equal(pci.bus, 0x28);
    assert_int_equal(pci.pciDeviceId, 0x233010de);
    assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("0000:28:00.0", &found), NVML_SUCCESS);
    assert_ptr_equal(found, h1);
    assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("0000:99:00.0", &found),
                     NVML_ERROR_NOT_FOUND);
    nvmlDeviceAttributes_t attrs;
    assert_int_equal(nvmlDeviceGetAttributes_v2(h0, &attrs), NVML_SUCCESS);
    assert_int_equal(attrs.multiprocessorCount, 108);
    assert_int_equal(attrs.memorySizeMB, 40960);
}

static void test_memory_and_modes(void **state)
{
    (void)state;
    nvmlDevice_t h0 = device(0), h1 = device(1);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(h0, &m), NVML_SUCCESS);
    /* With no process, NVML shows the driver's reserved memory as used. */
    assert_int_equal(m.total, 40 * GIB);
    assert_int_equal(m.used, A100_RESERVED);
    assert_int_equal(m.free, 40 * GIB - A100_RESERVED);
    nvmlMemory_v2_t m2 = {.version = 1};
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(h1, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m2.version = nvmlMemory_v2;
    assert_int_equal(nvmlMemory_v2, (unsigned)sizeof(nvmlMemory_v2_t) | 2u << 24);
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(h1, &m2), NVML_SUCCESS);
    assert_int_equal(m2.total, H100_TOTAL);
    assert_int_equal(m2.reserved, H100_RESERVED);
    assert_int_equal(m2.used, H100_RESERVED); /* used includes reserved */
    assert_int_equal(m2.free, H100_TOTAL - H100_RESERVED);
    nvmlComputeMode_t mode;
    assert_int_equal(nvmlDeviceGetComputeMode(h0, &mode), NVML_SUCCESS);
    assert_int_equal(mode, NVML_COMPUTEMODE_DEFAULT);
    assert_int_equal(nvmlDeviceSetComputeMode(h0, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS),
                     NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetComputeMode(h0, &mode), NVML_SUCCESS);
    assert_int_equal(mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    assert_int_equal(nvmlDeviceSetComputeMode(h0, NVML_COMPUTEMODE_EXCLUSIVE_THREAD),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceSetComputeMode(h0, (nvmlComputeMode_t)7),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceSetComputeMode(h0, NVML_COMPUTEMODE_DEFAULT), NVML_SUCCESS);
    unsigned cur = 9, pending = 9, max = 9;
    assert_int_equal(nvmlDeviceGetMigMode(h1, &cur, &pending), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(pending, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(nvmlDeviceGetMaxMigDeviceCount(h1, &max), NVML_SUCCESS);
    assert_int_equal(max, 0);
}

static nvmlReturn_t list_processes(nvmlDevice_t h, nvmlProcessInfo_t *infos, unsigned *count)
{
    return nvmlDeviceGetComputeRunningProcesses_v3(h, count, infos);
}

/* Returns NVML's entry for pid on h in *found; returns 0 when pid is not listed. */
static int find_process(nvmlDevice_t h, unsigned pid, nvmlProcessInfo_t *found)
{
    nvmlProcessInfo_t infos[16];
    unsigned count = 16;
    assert_int_equal(list_processes(h, infos, &count), NVML_SUCCESS);
    for (unsigned i = 0; i < count; i++) {
        if (infos[i].pid == pid) {
            *found = infos[i];
            return 1;
        }
    }
    return 0;
}

/* Memory NVML lists for pid on h, 0 when it is not listed. */
static unsigned long long process_memory(nvmlDevice_t h, unsigned pid)
{
    nvmlProcessInfo_t info;
    return find_process(h, pid, &info) ? info.usedGpuMemory : 0;
}

/* Acceptance 1: a process holding 3 GiB on device 0 shows in memory used and the process list.
 * A driver-API process's contexts hold the model's context footprint of their own, which NVML
 * shows as the process's memory (issue 12); the core helper creates no real context. */
static void test_process_memory(void **state)
{
    (void)state;
    helper_proc_t p;
    char reply[256];
    nvmlDevice_t h0 = device(0), h1 = device(1);
    unsigned long long idle0 = used_bytes(h0), idle1 = used_bytes(h1);
    assert_int_equal(helper_start(&p, NULL), 0);
    assert_int_equal(helper_cmd(&p, "ctx 0", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(helper_cmd(&p, "ctx 1", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    unsigned long long base0 = used_bytes(h0), base1 = used_bytes(h1);
    unsigned long long own0 = process_memory(h0, (unsigned)p.pid);
    unsigned long long own1 = process_memory(h1, (unsigned)p.pid);
    assert_int_equal(helper_cmd(&p, "charge 0 3G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(used_bytes(h0), base0 + 3 * GIB);
    assert_int_equal(used_bytes(h1), base1);
    unsigned long long context0 = helper_is_cuda() ? A100_CONTEXT : 0;
    unsigned long long context1 = helper_is_cuda() ? H100_CONTEXT : 0;
    assert_int_equal(idle0, A100_RESERVED);
    assert_int_equal(idle1, H100_RESERVED);
    assert_int_equal(own0, context0);
    assert_int_equal(own1, context1);
    assert_int_equal(base0, A100_RESERVED + context0);
    assert_int_equal(base1, H100_RESERVED + context1);

    nvmlProcessInfo_t info;
    unsigned count = 0;
    assert_int_equal(list_processes(h0, NULL, &count), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_true(count >= 1);
    if (!helper_is_cuda())
        assert_int_equal(count, 1);
    assert_true(find_process(h0, (unsigned)p.pid, &info));
    assert_int_equal(info.usedGpuMemory, own0 + 3 * GIB);
    assert_int_equal(info.gpuInstanceId, 0xFFFFFFFFu);
    assert_int_equal(info.computeInstanceId, 0xFFFFFFFFu);
    char name[64];
    assert_int_equal(nvmlSystemGetProcessName(info.pid, name, sizeof(name)), NVML_SUCCESS);
    assert_string_equal(name, helper_comm());
    assert_int_equal(nvmlSystemGetProcessName(info.pid, name, 5), NVML_SUCCESS);
    assert_int_equal(strlen(name), 4);
    assert_int_equal(nvmlSystemGetProcessName(0x7ffffff0, name, sizeof(name)),
                     NVML_ERROR_NOT_FOUND);
    assert_int_equal(process_memory(h1, (unsigned)p.pid), own1);

    assert_int_equal(helper_cmd(&p, "charge 1 512M", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(process_memory(h1, (unsigned)p.pid), own1 + (512ULL << 20));

    /* Killed without a chance to clean up: NVML reclaims its memory. */
    unsigned pid = (unsigned)p.pid;
    helper_kill(&p);
    assert_int_equal(used_bytes(h0), idle0);
    assert_int_equal(used_bytes(h1), idle1);
    assert_false(find_process(h0, pid, &info));
    assert_false(find_process(h1, pid, &info));
}

static unsigned gpu_util(nvmlDevice_t h)
{
    nvmlUtilization_t u = {.gpu = 999, .memory = 999};
    assert_int_equal(nvmlDeviceGetUtilizationRates(h, &u), NVML_SUCCESS);
    assert_true(u.gpu <= 100);
    assert_int_equal(u.memory, u.gpu / 2);
    return u.gpu;
}

static unsigned long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

/* Acceptance 1: utilization rises while kernels run and falls to 0 when idle. */
static void test_utilization(void **state)
{
    (void)state;
    helper_proc_t p;
    char reply[256];
    nvmlDevice_t h1 = device(1);
    nvmlProcessUtilizationSample_t samples[4];
    unsigned count = 0;
    assert_int_equal(gpu_util(h1), 0); /* also starts a sample period */
    assert_int_equal(nvmlDeviceGetProcessUtilization(h1, NULL, &count, 0), NVML_ERROR_NOT_FOUND);
    assert_int_equal(helper_start(&p, NULL), 0);
    assert_int_equal(helper_cmd(&p, "busy 1 1000", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    gpu_util(h1); /* the next sample period starts now, with the kernel running */
    sleep_ms(300);
    unsigned busy = gpu_util(h1);
    assert_true(busy >= 90);
    print_message("gpu utilization while busy: %u%%\n", busy);

    count = 0;
    assert_int_equal(nvmlDeviceGetProcessUtilization(h1, NULL, &count, 0),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(count, 1);
    count = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(h1, samples, &count, 0), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(samples[0].pid, p.pid);
    assert_true(samples[0].smUtil >= 25 && samples[0].smUtil <= 100);
    assert_true(samples[0].timeStamp <= now_us() && samples[0].timeStamp + 5000000ULL > now_us());

    /* Idle for more than the longest sample period: 0 %, and no sample newer than the last. */
    sleep_ms(700 + 1100);
    assert_int_equal(gpu_util(h1), 0);
    count = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(h1, samples, &count, 0), NVML_SUCCESS);
    unsigned long long last = samples[0].timeStamp;
    count = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(h1, samples, &count, last),
                     NVML_ERROR_NOT_FOUND);
    assert_int_equal(count, 0);
    helper_stop(&p);
}

int main(void)
{
    const char *dir = make_temp_dir("nvml");
    if (dir == NULL)
        return 1;
    setenv("GPUSIM_STATE", dir, 1);
    setenv("GPUSIM_DEVICES", "A100-40GB,H100-80GB", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    char no_mps[512]; /* a pipe directory without daemon: no MPS, whatever runs elsewhere */
    snprintf(no_mps, sizeof(no_mps), "%s/no-mps", dir);
    setenv("CUDA_MPS_PIPE_DIRECTORY", no_mps, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_system, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_and_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_process_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_utilization, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(dir);
    return failed;
}
