/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml exports NVIDIA's R580 entry-point list (sim/nvml/entry_points.tsv): every
 * name resolves with dlsym from the built library; what gpusim does not model answers
 * NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT for a bad handle, else
 * NVML_ERROR_NOT_SUPPORTED; the process lists write the record of their version (v1: 16 bytes,
 * v2/v3: 24) and nothing beyond it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "gpushare/nvml_abi.h"
#include "test_sim_nvml_proc.h"

#define MAX_ROWS 512

typedef struct row {
    char name[96], kind[24], impl[8], origin[16];
} row_t;

typedef nvmlReturn_t (*handle_fn_t)(void *);
typedef nvmlReturn_t (*void_fn_t)(void);

static row_t rows[MAX_ROWS];
static int n_rows;
static void *lib;

static void load_list(void)
{
    FILE *f = fopen(GSIM_NVML_LIST, "r");
    assert_non_null(f);
    char line[256];
    n_rows = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        row_t *r = &rows[n_rows];
        assert_int_equal(sscanf(line, "%95s %23s %7s %15s", r->name, r->kind, r->impl, r->origin),
                         4);
        assert_true(++n_rows < MAX_ROWS);
    }
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    load_list();
    lib = dlopen(build_path("sim/libnvidia-ml.so.1"), RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        fprintf(stderr, "dlopen: %s\n", dlerror());
    return lib == NULL ? -1 : 0;
}

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        fail_msg("%s does not resolve: %s", name, dlerror());
    return p;
}

/* Every listed name resolves in gpusim's library, and the list is NVIDIA's whole R580 list: 373
 * functions of nvml.h 13.0.39, 23 legacy versions, 2 compatibility names. */
static void test_every_entry_point_resolves(void **state)
{
    (void)state;
    int header = 0, legacy = 0, compat = 0, stubs = 0;
    for (int i = 0; i < n_rows; i++) {
        void *p = sym(rows[i].name);
        Dl_info info;
        assert_int_not_equal(dladdr(p, &info), 0);
        assert_non_null(strstr(info.dli_fname, "libnvidia-ml.so.1"));
        header += strcmp(rows[i].origin, "header") == 0;
        legacy += strcmp(rows[i].origin, "legacy") == 0;
        compat += strcmp(rows[i].origin, "compat") == 0;
        stubs += strcmp(rows[i].impl, "stub") == 0;
    }
    assert_int_equal(n_rows, 398);
    assert_int_equal(header, 373);
    assert_int_equal(legacy, 23);
    assert_int_equal(compat, 2);
    assert_int_equal(stubs, 327); /* nvmlDeviceGetMinorNumber is modelled (issue 27) */
}

/* The answer a stub of kind must give for handle h (valid_dev: a real device handle). */
static nvmlReturn_t stub_answer(const char *kind, int valid_dev)
{
    if (strcmp(kind, "none") == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strcmp(kind, "device") == 0 && valid_dev)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_ERROR_INVALID_ARGUMENT;
}

static void test_stubs_answer(void **state)
{
    (void)state;
    for (int i = 0; i < n_rows; i++) {
        if (strcmp(rows[i].impl, "stub") == 0)
            assert_int_equal(((handle_fn_t)sym(rows[i].name))(NULL), NVML_ERROR_UNINITIALIZED);
    }
    assert_int_equal(((void_fn_t)sym("nvmlInit_v2"))(), NVML_SUCCESS);
    nvmlDevice_t dev = NULL;
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = sym("nvmlDeviceGetHandleByIndex_v2");
    assert_int_equal(by_index(0, &dev), NVML_SUCCESS);
    for (int i = 0; i < n_rows; i++) {
        if (strcmp(rows[i].impl, "stub") != 0)
            continue;
        handle_fn_t fn = (handle_fn_t)sym(rows[i].name);
        nvmlReturn_t got = fn(NULL), want = stub_answer(rows[i].kind, 0);
        if (got != want)
            fail_msg("%s(NULL) returned %d, expected %d", rows[i].name, got, want);
        if (strcmp(rows[i].kind, "device") == 0 && fn(dev) != NVML_ERROR_NOT_SUPPORTED)
            fail_msg("%s(device) did not return NOT_SUPPORTED", rows[i].name);
    }
    int major = 0, minor = 0; /* modelled: the H100-80GB's 9.0 */
    nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *) = sym("nvmlDeviceGetCudaComputeCapability");
    assert_int_equal(cc(dev, &major, &minor), NVML_SUCCESS);
    assert_int_equal(major, 9);
    assert_int_equal(minor, 0);
    unsigned count = 7;
    nvmlReturn_t (*unit_count)(unsigned *) = sym("nvmlUnitGetCount");
    assert_int_equal(unit_count(&count), NVML_SUCCESS);
    assert_int_equal(count, 0);
    count = 7;
    nvmlReturn_t (*excluded)(unsigned *) = sym("nvmlGetBlacklistDeviceCount");
    assert_int_equal(excluded(&count), NVML_SUCCESS);
    assert_int_equal(count, 0);
    assert_int_equal(((void_fn_t)sym("nvmlShutdown"))(), NVML_SUCCESS);
}

typedef nvmlReturn_t (*list_fn_t)(nvmlDevice_t, unsigned *, void *);

/* Lists with fn into a buffer of 0xab bytes; returns the count and checks that nothing past
 * count records of record bytes was written. */
static unsigned list_into(const char *fn, nvmlDevice_t dev, unsigned char *buf, size_t record)
{
    memset(buf, 0xab, 256);
    unsigned count = 4;
    assert_int_equal(((list_fn_t)sym(fn))(dev, &count, buf), NVML_SUCCESS);
    for (size_t i = count * record; i < 256; i++)
        assert_int_equal(buf[i], 0xab);
    return count;
}

/* A process holding 3 GiB on GPU 0: each version lists it with its pid and exactly 3 GiB in its
 * own record layout; no MPS client and no graphics process. */
static void test_process_record_versions(void **state)
{
    (void)state;
    helper_proc_t p;
    char reply[64];
    assert_int_equal(helper_start(&p, NULL), 0);
    assert_int_equal(helper_cmd(&p, "charge 0 3G", reply, sizeof(reply)), 0);
    assert_string_equal(reply, "ok");
    unsigned long long want = 3ULL << 30;
    if (helper_is_cuda())
        want += 543162368ULL; /* its context (H100-80GB) */
    assert_int_equal(((void_fn_t)sym("nvmlInit"))(), NVML_SUCCESS);
    nvmlDevice_t dev;
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = sym("nvmlDeviceGetHandleByIndex");
    assert_int_equal(by_index(0, &dev), NVML_SUCCESS);
    unsigned char buf[256];
    assert_int_equal(list_into("nvmlDeviceGetComputeRunningProcesses", dev, buf, 16), 1);
    nvmlProcessInfo_v1_t v1;
    memcpy(&v1, buf, sizeof(v1));
    assert_int_equal(sizeof(v1), 16);
    assert_int_equal(v1.pid, (unsigned)p.pid);
    assert_int_equal(v1.usedGpuMemory, want);
    const char *v2_names[] = {"nvmlDeviceGetComputeRunningProcesses_v2",
                              "nvmlDeviceGetComputeRunningProcesses_v3"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(list_into(v2_names[i], dev, buf, 24), 1);
        nvmlProcessInfo_v2_t v2;
        memcpy(&v2, buf, sizeof(v2));
        assert_int_equal(sizeof(v2), 24);
        assert_int_equal(v2.pid, (unsigned)p.pid);
        assert_int_equal(v2.usedGpuMemory, want);
        assert_int_equal(v2.gpuInstanceId, 0xFFFFFFFFu);
        assert_int_equal(v2.computeInstanceId, 0xFFFFFFFFu);
    }
    assert_int_equal(list_into("nvmlDeviceGetMPSComputeRunningProcesses", dev, buf, 16), 0);
    assert_int_equal(list_into("nvmlDeviceGetGraphicsRunningProcesses_v2", dev, buf, 24), 0);
    assert_int_equal(((void_fn_t)sym("nvmlShutdown"))(), NVML_SUCCESS);
    helper_stop(&p);
}

int main(void)
{
    const char *dir = make_temp_dir("nvml-exports");
    if (dir == NULL)
        return 1;
    setenv("GPUSIM_STATE", dir, 1); /* a node of its own */
    setenv("GPUSIM_DEVICES", "H100-80GB", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_entry_point_resolves),
        cmocka_unit_test(test_stubs_answer),
        cmocka_unit_test(test_process_record_versions),
    };
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    remove_tree(dir);
    return failed;
}
