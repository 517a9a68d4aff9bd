/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim MIG through libnvidia-ml on an A100-40GB: mode changes, the profile and placement
 * tables, creating 3g.20gb + 2g.10gb + 2 x 1g.5gb after which 4g.20gb fails with
 * NVML_ERROR_INSUFFICIENT_RESOURCES, compute instances and MIG devices, a CUDA process that sees
 * only its instance's memory through CUDA_VISIBLE_DEVICES=MIG-<uuid>, NVML_ERROR_IN_USE while it
 * lives (acceptance 2), and CUDA_VISIBLE_DEVICES enumeration rules with MIG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/nvml_abi.h"
#include "node.h"
#include "test_sim_nvml_proc.h"

#define GIB (1ULL << 30)

static nvmlDevice_t device(unsigned index)
{
    nvmlDevice_t h = NULL;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(index, &h), NVML_SUCCESS);
    return h;
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

static void test_mig_mode(void **state)
{
    (void)state;
    nvmlDevice_t a100 = device(0), t4 = device(1);
    unsigned cur = 9, pending = 9, count = 0;
    nvmlReturn_t status = NVML_SUCCESS;
    nvmlGpuInstanceProfileInfo_t info;
    assert_int_equal(nvmlDeviceGetMigMode(t4, &cur, &pending), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceSetMigMode(t4, NVML_DEVICE_MIG_ENABLE, &status),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(a100, 0, &info), NVML_ERROR_NOT_SUPPORTED);
    /* Placements are a property of the profile: available before MIG is enabled. */
    assert_int_equal(nvmlDeviceGetGpuInstancePossiblePlacements_v2(a100, 19, NULL, &count),
                     NVML_SUCCESS);
    assert_int_equal(count, 7);

    /* A GPU in use cannot switch modes. */
    helper_proc_t p;
    char reply[128];
    assert_int_equal(helper_start(&p, NULL), 0);
    assert_int_equal(helper_cmd(&p, "charge 0 1G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(nvmlDeviceSetMigMode(a100, NVML_DEVICE_MIG_ENABLE, &status),
                     NVML_ERROR_IN_USE);
    assert_int_equal(status, NVML_ERROR_IN_USE);
    helper_kill(&p);

    assert_int_equal(nvmlDeviceSetMigMode(a100, NVML_DEVICE_MIG_ENABLE, &status), NVML_SUCCESS);
    assert_int_equal(status, NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMigMode(a100, &cur, &pending), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(pending, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(nvmlDeviceGetMaxMigDeviceCount(a100, &count), NVML_SUCCESS);
    assert_int_equal(count, 7);
    nvmlUtilization_t util;
    assert_int_equal(nvmlDeviceGetUtilizationRates(a100, &util), NVML_ERROR_NOT_SUPPORTED);
}

typedef struct profile_row {
    unsigned constant, id, slices, instances, memory_mb, sms;
    const char *name;
} profile_row_t;

/* NVIDIA's A100-40GB table (MIG user guide), SMs at 14 per slice. */
static const profile_row_t a100_profiles[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 5120, 14, "MIG 1g.5gb"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 10240, 28, "MIG 2g.10gb"},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 20480, 42, "MIG 3g.20gb"},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 20480, 56, "MIG 4g.20gb"},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 40960, 98, "MIG 7g.40gb"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 5120, 14, "MIG 1g.5gb+me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 4, 10240, 14, "MIG 1g.10gb"},
};

static void test_profiles(void **state)
{
    (void)state;
    nvmlDevice_t a100 = device(0);
    for (size_t i = 0; i < sizeof(a100_profiles) / sizeof(a100_profiles[0]); i++) {
        const profile_row_t *row = &a100_profiles[i];
        nvmlGpuInstanceProfileInfo_t info;
        nvmlGpuInstanceProfileInfo_v2_t v2 = {.version = nvmlGpuInstanceProfileInfo_v2};
        nvmlGpuInstanceProfileInfo_v3_t v3 = {.version = nvmlGpuInstanceProfileInfo_v3};
        assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(a100, row->constant, &info),
                         NVML_SUCCESS);
        assert_int_equal(info.id, row->id);
        assert_int_equal(info.sliceCount, row->slices);
        assert_int_equal(info.instanceCount, row->instances);
        assert_int_equal(info.memorySizeMB, row->memory_mb);
        assert_int_equal(info.multiprocessorCount, row->sms);
        assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(a100, row->constant, &v2),
                         NVML_SUCCESS);
        assert_int_equal(v2.id, row->id);
        assert_string_equal(v2.name, row->name);
        assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(
                             a100, row->constant, (nvmlGpuInstanceProfileInfo_v2_t *)(void *)&v3),
                         NVML_SUCCESS);
        assert_int_equal(v3.version, nvmlGpuInstanceProfileInfo_v3);
        assert_int_equal(v3.memorySizeMB, row->memory_mb);
        assert_string_equal(v3.name, row->name);
        assert_int_equal(v3.capabilities, 0);
    }
    nvmlGpuInstanceProfileInfo_t info;
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a100, NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info),
        NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a100, NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, &info),
        NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(
        nvmlDeviceGetGpuInstanceProfileInfo(a100, NVML_GPU_INSTANCE_PROFILE_COUNT, &info),
        NVML_ERROR_INVALID_ARGUMENT);
    nvmlGpuInstanceProfileInfo_v2_t bad = {.version = 1};
    assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(a100, 0, &bad),
                     NVML_ERROR_INVALID_ARGUMENT);
}

/* Expects the placements of profile id to be the starts listed (all of size). */
static void expect_placements(nvmlDevice_t dev, unsigned id, const unsigned *starts, unsigned n,
                              unsigned size)
{
    nvmlGpuInstancePlacement_t p[8];
    unsigned count = 0;
    assert_int_equal(nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, id, p, &count),
                     NVML_SUCCESS);
    assert_int_equal(count, n);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(p[i].start, starts[i]);
        assert_int_equal(p[i].size, size);
    }
}

static void test_placements(void **state)
{
    (void)state;
    nvmlDevice_t a100 = device(0);
    expect_placements(a100, 19, (const unsigned[]){0, 1, 2, 3, 4, 5, 6}, 7, 1);
    expect_placements(a100, 15, (const unsigned[]){0, 2, 4, 6}, 4, 2);
    expect_placements(a100, 14, (const unsigned[]){0, 2, 4}, 3, 2);
    expect_placements(a100, 9, (const unsigned[]){0, 4}, 2, 4);
    expect_placements(a100, 5, (const unsigned[]){0}, 1, 4);
    expect_placements(a100, 0, (const unsigned[]){0}, 1, 8);
    unsigned count;
    assert_int_equal(nvmlDeviceGetGpuInstancePossiblePlacements_v2(a100, 77, NULL, &count),
                     NVML_ERROR_INVALID_ARGUMENT);
}

static nvmlGpuInstanceInfo_t gi_info(nvmlGpuInstance_t gi)
{
    nvmlGpuInstanceInfo_t info;
    assert_int_equal(nvmlGpuInstanceGetInfo(gi, &info), NVML_SUCCESS);
    return info;
}

/* Creates a GI of profile id and expects its id and placement. */
static nvmlGpuInstance_t create_gi(nvmlDevice_t dev, unsigned profile_id, unsigned want_id,
                                   unsigned want_start, unsigned want_size)
{
    nvmlGpuInstance_t gi = NULL;
    assert_int_equal(nvmlDeviceCreateGpuInstance(dev, profile_id, &gi), NVML_SUCCESS);
    nvmlGpuInstanceInfo_t info = gi_info(gi);
    assert_ptr_equal(info.device, dev);
    assert_int_equal(info.profileId, profile_id);
    assert_int_equal(info.id, want_id);
    assert_int_equal(info.placement.start, want_start);
    assert_int_equal(info.placement.size, want_size);
    return gi;
}

static nvmlGpuInstance_t gi_3g, gi_2g, gi_1a, gi_1b;

/* Acceptance 2: 3g.20gb + 2g.10gb + 2 x 1g.5gb fit; 4g.20gb then does not. */
static void test_create_instances(void **state)
{
    (void)state;
    nvmlDevice_t a100 = device(0);
    unsigned count = 0;
    assert_int_equal(nvmlDeviceGetGpuInstanceRemainingCapacity(a100, 19, &count), NVML_SUCCESS);
    assert_int_equal(count, 7);
    assert_int_equal(nvmlDeviceGetGpuInstanceRemainingCapacity(a100, 9, &count), NVML_SUCCESS);
    assert_int_equal(count, 2);
    /* Ids and placements as NVIDIA's driver gives them (nvidia-smi mig -lgi). */
    gi_3g = create_gi(a100, 9, 2, 4, 4);
    gi_2g = create_gi(a100, 14, 3, 0, 2);
    gi_1a = create_gi(a100, 19, 9, 2, 1);
    gi_1b = create_gi(a100, 19, 10, 3, 1);
    nvmlGpuInstance_t gi = NULL;
    assert_int_equal(nvmlDeviceCreateGpuInstance(a100, 5, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
    nvmlGpuInstancePlacement_t at0 = {.start = 0, .size = 4};
    assert_int_equal(nvmlDeviceCreateGpuInstanceWithPlacement(a100, 5, &at0, &gi),
                     NVML_ERROR_INSUFFICIENT_RESOURCES);
    assert_int_equal(nvmlDeviceCreateGpuInstance(a100, 19, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
    nvmlGpuInstancePlacement_t wrong_size = {.start = 4, .size = 2};
    assert_int_equal(nvmlDeviceCreateGpuInstanceWithPlacement(a100, 19, &wrong_size, &gi),
                     NVML_ERROR_INVALID_ARGUMENT);
    nvmlGpuInstancePlacement_t bad_start = {.start = 7, .size = 1};
    assert_int_equal(nvmlDeviceCreateGpuInstanceWithPlacement(a100, 19, &bad_start, &gi),
                     NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned id = 0; id < 30; id++) {
        assert_int_equal(nvmlDeviceGetGpuInstanceRemainingCapacity(a100, id, &count),
                         id == 0 || id == 5 || id == 9 || id == 14 || id == 15 || id == 19 ||
                                 id == 20
                             ? NVML_SUCCESS
                             : NVML_ERROR_INVALID_ARGUMENT);
        assert_true(count == 0 || id > 20);
        count = 0;
    }
    nvmlGpuInstance_t list[8];
    assert_int_equal(nvmlDeviceGetGpuInstances(a100, 19, list, &count), NVML_SUCCESS);
    assert_int_equal(count, 2);
    assert_ptr_equal(list[0], gi_1a);
    assert_ptr_equal(list[1], gi_1b);
    assert_int_equal(nvmlDeviceGetGpuInstanceById(a100, 2, &gi), NVML_SUCCESS);
    assert_ptr_equal(gi, gi_3g);
    assert_int_equal(nvmlDeviceGetGpuInstanceById(a100, 1, &gi), NVML_ERROR_NOT_FOUND);
}

static nvmlComputeInstance_t create_ci(nvmlGpuInstance_t gi, unsigned profile)
{
    nvmlComputeInstance_t ci = NULL;
    nvmlComputeInstanceInfo_t info;
    assert_int_equal(nvmlGpuInstanceCreateComputeInstance(gi, profile, &ci), NVML_SUCCESS);
    assert_int_equal(nvmlComputeInstanceGetInfo_v2(ci, &info), NVML_SUCCESS);
    assert_ptr_equal(info.gpuInstance, gi);
    assert_int_equal(info.id, 0);
    assert_int_equal(info.profileId, profile);
    assert_int_equal(info.placement.start, 0);
    return ci;
}

static nvmlComputeInstance_t ci_3g;

static void test_compute_instances(void **state)
{
    (void)state;
    nvmlComputeInstanceProfileInfo_t info;
    unsigned count = 0;
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                         gi_3g, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0, &info),
                     NVML_SUCCESS);
    assert_int_equal(info.instanceCount, 3);
    assert_int_equal(info.multiprocessorCount, 14);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                         gi_3g, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 0, &info),
                     NVML_SUCCESS);
    assert_int_equal(info.id, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
    assert_int_equal(info.sliceCount, 3);
    assert_int_equal(info.instanceCount, 1);
    assert_int_equal(info.multiprocessorCount, 42);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                         gi_3g, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0, &info),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfo(gi_3g, 0, 1, &info),
                     NVML_ERROR_INVALID_ARGUMENT);
    nvmlComputeInstanceProfileInfo_v2_t v2 = {.version = nvmlComputeInstanceProfileInfo_v2};
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceProfileInfoV(gi_3g, 1, 0, &v2), NVML_SUCCESS);
    assert_string_equal(v2.name, "MIG 2c.3g.20gb");

    ci_3g = create_ci(gi_3g, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
    create_ci(gi_2g, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
    create_ci(gi_1a, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
    create_ci(gi_1b, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi_3g, 0, &count),
                     NVML_SUCCESS);
    assert_int_equal(count, 0);
    nvmlComputeInstance_t ci = NULL, list[8];
    assert_int_equal(nvmlGpuInstanceCreateComputeInstance(gi_3g, 0, &ci),
                     NVML_ERROR_INSUFFICIENT_RESOURCES);
    assert_int_equal(nvmlGpuInstanceGetComputeInstances(gi_3g, 2, list, &count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_ptr_equal(list[0], ci_3g);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceById(gi_3g, 0, &ci), NVML_SUCCESS);
    assert_ptr_equal(ci, ci_3g);
    assert_int_equal(nvmlGpuInstanceGetComputeInstanceById(gi_3g, 5, &ci), NVML_ERROR_NOT_FOUND);
}

static nvmlDevice_t mig_device(unsigned index)
{
    nvmlDevice_t mig = NULL;
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(device(0), index, &mig), NVML_SUCCESS);
    return mig;
}

static char uuid_3g[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

static void test_mig_devices(void **state)
{
    (void)state;
    nvmlDevice_t a100 = device(0), mig = NULL, parent = NULL, found = NULL;
    unsigned id = 99, is_mig = 9, index = 9;
    /* Ordered by GPU instance id: 3g (2), 2g (3), 1g (9), 1g (10). */
    const unsigned want_gi[4] = {2, 3, 9, 10};
    const unsigned long long want_mem[4] = {20 * GIB, 10 * GIB, 5 * GIB, 5 * GIB};
    for (unsigned i = 0; i < 4; i++) {
        mig = mig_device(i);
        nvmlMemory_t m;
        assert_int_equal(nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
        assert_int_equal(id, want_gi[i]);
        assert_int_equal(nvmlDeviceGetComputeInstanceId(mig, &id), NVML_SUCCESS);
        assert_int_equal(id, 0);
        assert_int_equal(nvmlDeviceGetMemoryInfo(mig, &m), NVML_SUCCESS);
        assert_int_equal(m.total, want_mem[i]);
        assert_int_equal(m.used, 0);
        assert_int_equal(nvmlDeviceGetIndex(mig, &index), NVML_SUCCESS);
        assert_int_equal(index, i);
    }
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a100, 4, &mig), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(a100, 7, &mig),
                     NVML_ERROR_INVALID_ARGUMENT);
    mig = mig_device(0);
    assert_int_equal(nvmlDeviceIsMigDeviceHandle(mig, &is_mig), NVML_SUCCESS);
    assert_int_equal(is_mig, 1);
    assert_int_equal(nvmlDeviceIsMigDeviceHandle(a100, &is_mig), NVML_SUCCESS);
    assert_int_equal(is_mig, 0);
    assert_int_equal(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), NVML_SUCCESS);
    assert_ptr_equal(parent, a100);
    assert_int_equal(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(a100, &parent),
                     NVML_ERROR_INVALID_ARGUMENT);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetName(mig, name, sizeof(name)), NVML_SUCCESS);
    assert_string_equal(name, "NVIDIA A100-40GB MIG 3g.20gb");
    assert_int_equal(nvmlDeviceGetUUID(mig, uuid_3g, sizeof(uuid_3g)), NVML_SUCCESS);
    assert_memory_equal(uuid_3g, "MIG-", 4);
    assert_int_equal(strlen(uuid_3g), 40);
    assert_int_equal(nvmlDeviceGetHandleByUUID(uuid_3g, &found), NVML_SUCCESS);
    assert_ptr_equal(found, mig);
    char other[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetUUID(mig_device(1), other, sizeof(other)), NVML_SUCCESS);
    assert_string_not_equal(other, uuid_3g);
    nvmlDeviceAttributes_t attrs;
    assert_int_equal(nvmlDeviceGetAttributes_v2(mig, &attrs), NVML_SUCCESS);
    assert_int_equal(attrs.multiprocessorCount, 42);
    assert_int_equal(attrs.memorySizeMB, 20480);
    assert_int_equal(attrs.gpuInstanceSliceCount, 3);
}

static unsigned long long mig_used(unsigned index)
{
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(mig_device(index), &m), NVML_SUCCESS);
    return m.used;
}

/* Acceptance 2: a process on MIG-<uuid> sees the instance's memory; its use touches no other
 * instance; the instance cannot be destroyed while it lives. */
static void test_instance_in_use(void **state)
{
    (void)state;
    char env[160], reply[256], want[128];
    snprintf(env, sizeof(env), "CUDA_VISIBLE_DEVICES=%s", uuid_3g);
    const char *const vars[] = {env, NULL};
    helper_proc_t p;
    assert_int_equal(helper_start(&p, vars), 0);
    assert_int_equal(helper_cmd(&p, "visible", reply, sizeof(reply)), 0);
    snprintf(want, sizeof(want), "visible 1 %llu", 20 * GIB);
    assert_string_equal(reply, want);
    nvmlDevice_t mig = mig_device(0);
    gsim_node_t *node = NULL;
    assert_int_equal(gsim_node_open(0, &node), 0);
    int slot = -1;
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (node->dev[0].gi[g].in_use && node->dev[0].gi[g].id == 2)
            slot = g;
    }
    assert_true(slot >= 0);
    assert_int_equal(helper_cmd(&p, "ctx 0", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    unsigned long long base = mig_used(0);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(device(0), &m), NVML_SUCCESS);
    unsigned long long parent_base = m.used;
    assert_int_equal(helper_cmd(&p, "charge 0 1G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    assert_int_equal(helper_cmd(&p, "charge 0 20G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "oom");
    assert_int_equal(mig_used(0), base + GIB);
    assert_int_equal(mig_used(1), 0);
    assert_int_equal(mig_used(2), 0);
    assert_int_equal(nvmlDeviceGetMemoryInfo(device(0), &m), NVML_SUCCESS);
    assert_int_equal(m.used, parent_base + GIB);
    if (!helper_is_cuda())
        assert_int_equal(base, 0);

    nvmlProcessInfo_t infos[4];
    unsigned count = 4;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(mig, &count, infos), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(infos[0].pid, p.pid);
    assert_int_equal(infos[0].usedGpuMemory, base + GIB);
    assert_int_equal(infos[0].gpuInstanceId, 2);
    assert_int_equal(infos[0].computeInstanceId, 0);
    count = 4;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(mig_device(1), &count, infos),
                     NVML_SUCCESS);
    assert_int_equal(count, 0);

    /* Its kernels run on its instance's timeline only. */
    assert_int_equal(helper_cmd(&p, "busy 0 200", reply, sizeof(reply)), 0);
    gsim_node_lock(node);
    assert_true(node->dev[0].gi[slot].timeline.n_reserved >= 1);
    assert_int_equal(node->dev[0].timeline.n_reserved, 0);
    gsim_node_unlock(node);

    nvmlReturn_t status;
    assert_int_equal(nvmlDeviceSetMigMode(device(0), NVML_DEVICE_MIG_DISABLE, &status),
                     NVML_ERROR_IN_USE);
    assert_int_equal(nvmlGpuInstanceDestroy(gi_3g), NVML_ERROR_IN_USE);
    assert_int_equal(nvmlComputeInstanceDestroy(ci_3g), NVML_ERROR_IN_USE);
    helper_kill(&p);
    assert_int_equal(nvmlComputeInstanceDestroy(ci_3g), NVML_SUCCESS);
    assert_int_equal(nvmlComputeInstanceDestroy(ci_3g), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetMemoryInfo(mig, &m), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlGpuInstanceDestroy(gi_3g), NVML_SUCCESS);
    nvmlGpuInstanceInfo_t info;
    assert_int_equal(nvmlGpuInstanceGetInfo(gi_3g, &info), NVML_ERROR_INVALID_ARGUMENT);
    /* The freed slots take a 3g.20gb again (a new instance, a new UUID). */
    gi_3g = create_gi(device(0), 9, 2, 4, 4);
    ci_3g = create_ci(gi_3g, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetUUID(mig_device(0), uuid, sizeof(uuid)), NVML_SUCCESS);
    assert_string_not_equal(uuid, uuid_3g);
    snprintf(uuid_3g, sizeof(uuid_3g), "%s", uuid);
}

/* Returns the domains CUDA shows with CUDA_VISIBLE_DEVICES = value (NULL: unset). */
static int visible(const char *value, gsim_domain_t *out)
{
    gsim_node_t *node = NULL;
    assert_int_equal(gsim_node_open(0, &node), 0);
    if (value != NULL)
        setenv("CUDA_VISIBLE_DEVICES", value, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    int n = gsim_visible_domains(node, out, 8);
    unsetenv("CUDA_VISIBLE_DEVICES");
    return n;
}

static int gi_slot_of(unsigned id)
{
    gsim_node_t *node = NULL;
    assert_int_equal(gsim_node_open(0, &node), 0);
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (node->dev[0].gi[g].in_use && node->dev[0].gi[g].id == id)
            return g;
    }
    return -1;
}

/* NVIDIA's MIG enumeration: one MIG device at most, and then no non-MIG GPU. */
static void test_visible_devices(void **state)
{
    (void)state;
    gsim_domain_t d[8];
    char text[256], gpu0[NVML_DEVICE_UUID_V2_BUFFER_SIZE], gpu1[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetUUID(device(0), gpu0, sizeof(gpu0)), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetUUID(device(1), gpu1, sizeof(gpu1)), NVML_SUCCESS);
    int first = gi_slot_of(2), second = gi_slot_of(3);

    assert_int_equal(visible(NULL, d), 1); /* the first MIG device, not the T4 */
    assert_int_equal(d[0].dev, 0);
    assert_int_equal(d[0].gi, first);
    assert_int_equal(visible("1", d), 1);
    assert_int_equal(d[0].dev, 1);
    assert_int_equal(d[0].gi, -1);
    assert_int_equal(visible("1,0", d), 1);
    assert_int_equal(d[0].gi, first);
    char other[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetUUID(mig_device(1), other, sizeof(other)), NVML_SUCCESS);
    assert_int_equal(visible(other, d), 1);
    assert_int_equal(d[0].gi, second);
    snprintf(text, sizeof(text), "%s,%s", other, uuid_3g);
    assert_int_equal(visible(text, d), 1);
    assert_int_equal(d[0].gi, second);
    other[12] = '\0'; /* a unique prefix is enough */
    assert_int_equal(visible(other, d), 1);
    assert_int_equal(d[0].gi, second);
    snprintf(text, sizeof(text), "MIG-%s/3/0", gpu0);
    assert_int_equal(visible(text, d), 1);
    assert_int_equal(d[0].gi, second);
    snprintf(text, sizeof(text), "MIG-%s/4/0", gpu0);
    assert_int_equal(visible(text, d), 0);
    assert_int_equal(visible("MIG-00000000-0000", d), 0);
    gpu1[12] = '\0';
    assert_int_equal(visible(gpu1, d), 1);
    assert_int_equal(d[0].dev, 1);
    assert_int_equal(visible("2", d), 0);
}

static void test_teardown_instances(void **state)
{
    (void)state;
    nvmlGpuInstance_t gis[4] = {gi_3g, gi_2g, gi_1a, gi_1b};
    nvmlReturn_t status;
    for (int i = 0; i < 4; i++) {
        nvmlComputeInstance_t ci;
        assert_int_equal(nvmlGpuInstanceGetComputeInstanceById(gis[i], 0, &ci), NVML_SUCCESS);
        assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
    }
    /* A MIG-enabled GPU without compute instances offers CUDA nothing. */
    gsim_domain_t d[8];
    assert_int_equal(visible("0", d), 0);
    assert_int_equal(visible(NULL, d), 1);
    assert_int_equal(d[0].dev, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(nvmlGpuInstanceDestroy(gis[i]), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceSetMigMode(device(0), NVML_DEVICE_MIG_DISABLE, &status),
                     NVML_SUCCESS);
    assert_int_equal(visible(NULL, d), 2);
}

int main(void)
{
    const char *dir = make_temp_dir("mig");
    if (dir == NULL)
        return 1;
    setenv("GPUSIM_STATE", dir, 1);
    setenv("GPUSIM_DEVICES", "A100-40GB,T4-16GB", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    char no_mps[512]; /* a pipe directory without daemon: no MPS, whatever runs elsewhere */
    snprintf(no_mps, sizeof(no_mps), "%s/no-mps", dir);
    setenv("CUDA_MPS_PIPE_DIRECTORY", no_mps, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mig_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mig_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_instance_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_visible_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_teardown_instances, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tree(dir);
    return failed;
}
