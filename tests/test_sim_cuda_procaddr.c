/* SPDX-License-Identifier: Apache-2.0 */
/* Acceptance: cuGetProcAddress_v2 replays the lookups libcudart 13 makes (data/cuda/
 * cudart13-getprocaddress-lookups.tsv). For every row the expected symbol comes from an oracle
 * independent of gpusim's table: the newest ABI's name from cuda.h's own macros (sim_cuda_oracle.c,
 * legacy and per-thread builds), the newest version from cudaTypedefs.h's PFN typedefs, and the
 * hand-written list below for rows that ask for an older version. A row whose expected symbol
 * gpusim exports must return exactly that function; every other row CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_cuda_oracle.h"

typedef CUresult (*get_proc_v2_t)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_t)(unsigned int);

/* Rows asking for an ABI older than the newest: the symbol NVIDIA names that version. */
typedef struct older {
    const char *name;
    int version;
    int per_thread;
    const char *symbol;
} older_t;

static const older_t older_abis[] = {
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"cuDeviceGetUuid", 9020, 0, "cuDeviceGetUuid"},
    {"cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease"},
    {"cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset"},
    {"cuCtxCreate", 3020, 0, "cuCtxCreate_v2"},
    {"cuCtxGetDevice", 2000, 0, "cuCtxGetDevice"},
    {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
    {"cuCtxSynchronize", 2000, 0, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
    {"cuLinkCreate", 5050, 0, "cuLinkCreate"},
    {"cuLinkAddData", 5050, 0, "cuLinkAddData"},
    {"cuLinkAddFile", 5050, 0, "cuLinkAddFile"},
    {"cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync"},
    {"cuMemcpyBatchAsync", 12080, 1, "cuMemcpyBatchAsync_ptsz"},
    {"cuMemcpy3DBatchAsync", 12080, 0, "cuMemcpy3DBatchAsync"},
    {"cuMemcpy3DBatchAsync", 12080, 1, "cuMemcpy3DBatchAsync_ptsz"},
    {"cuEventElapsedTime", 2000, 0, "cuEventElapsedTime"},
    {"cuStreamWaitValue32", 8000, 0, "cuStreamWaitValue32"},
    {"cuStreamWaitValue32", 8000, 1, "cuStreamWaitValue32_ptsz"},
    {"cuStreamWriteValue32", 8000, 0, "cuStreamWriteValue32"},
    {"cuStreamWriteValue32", 8000, 1, "cuStreamWriteValue32_ptsz"},
    {"cuStreamWaitValue64", 9000, 0, "cuStreamWaitValue64"},
    {"cuStreamWaitValue64", 9000, 1, "cuStreamWaitValue64_ptsz"},
    {"cuStreamWriteValue64", 9000, 0, "cuStreamWriteValue64"},
    {"cuStreamWriteValue64", 9000, 1, "cuStreamWriteValue64_ptsz"},
    {"cuStreamBatchMemOp", 8000, 0, "cuStreamBatchMemOp"},
    {"cuStreamBatchMemOp", 8000, 1, "cuStreamBatchMemOp_ptsz"},
    {"cuStreamGetCtx", 9020, 0, "cuStreamGetCtx"},
    {"cuIpcOpenMemHandle", 4010, 0, "cuIpcOpenMemHandle"},
    {"cuMemAdvise", 8000, 0, "cuMemAdvise"},
    {"cuMemPrefetchAsync", 8000, 0, "cuMemPrefetchAsync"},
    {"cuMemPrefetchAsync", 8000, 1, "cuMemPrefetchAsync_ptsz"},
    {"cuGraphGetEdges", 10000, 0, "cuGraphGetEdges"},
    {"cuGraphNodeGetDependencies", 10000, 0, "cuGraphNodeGetDependencies"},
    {"cuGraphNodeGetDependentNodes", 10000, 0, "cuGraphNodeGetDependentNodes"},
    {"cuGraphAddDependencies", 10000, 0, "cuGraphAddDependencies"},
    {"cuGraphRemoveDependencies", 10000, 0, "cuGraphRemoveDependencies"},
    {"cuGraphInstantiate", 10000, 0, "cuGraphInstantiate"},
    {"cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2"},
    {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 10000, 1, "cuStreamBeginCapture_ptsz"},
    {"cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo"},
    {"cuStreamGetCaptureInfo", 10010, 1, "cuStreamGetCaptureInfo_ptsz"},
    {"cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2"},
    {"cuStreamGetCaptureInfo", 11030, 1, "cuStreamGetCaptureInfo_v2_ptsz"},
    {"cuStreamUpdateCaptureDependencies", 11030, 0, "cuStreamUpdateCaptureDependencies"},
    {"cuStreamUpdateCaptureDependencies", 11030, 1, "cuStreamUpdateCaptureDependencies_ptsz"},
    {"cuGraphAddNode", 12020, 0, "cuGraphAddNode"},
};

/* Functions gpusim must implement (acceptance families): their rows must all resolve. */
static const char *const required[] = {
    "cuInit",
    "cuGetProcAddress",
    "cuDeviceGet",
    "cuDeviceTotalMem",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuCtxCreate",
    "cuCtxGetDevice",
    "cuCtxSynchronize",
    "cuMemAlloc",
    "cuMemAllocPitch",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
    "cuMemHostRegister",
    "cuMemAllocAsync",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
    "cuMemPoolCreate",
    "cuMemGetInfo",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuMemcpy",
    "cuMemsetD8",
    "cuArrayCreate",
    "cuArray3DCreate",
    "cuMipmappedArrayCreate",
    "cuArrayGetMemoryRequirements",
    "cuModuleLoadData",
    "cuLibraryLoadData",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cuEventElapsedTime",
    "cuStreamSynchronize",
    "cuGraphAddMemAllocNode",
    "cuGraphAddMemFreeNode",
    "cuGraphLaunch",
    "cuGetErrorName",
};

typedef struct pfn_version {
    char name[128];
    int legacy, per_thread;     /* newest version of each flavour, 0 = none */
    int n_legacy, n_per_thread; /* how many ABIs each flavour has had */
} pfn_version_t;

typedef struct fixture {
    void *lib;
    get_proc_v2_t get_proc;
    pfn_version_t *pfn;
    size_t n_pfn;
} fixture_t;

static fixture_t fx;
static char state_dir[] = "/tmp/gpusim-procaddr.XXXXXX";

static pfn_version_t *pfn_entry(const char *name, int create)
{
    for (size_t i = 0; i < fx.n_pfn; i++) {
        if (strcmp(fx.pfn[i].name, name) == 0)
            return &fx.pfn[i];
    }
    if (!create)
        return NULL;
    pfn_version_t *grown = realloc(fx.pfn, (fx.n_pfn + 1) * sizeof(*grown));
    assert_non_null(grown);
    fx.pfn = grown;
    pfn_version_t *e = &fx.pfn[fx.n_pfn++];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    return e;
}

/* Records one "PFN_<name>_v<version>[_ptds|_ptsz]" token of cudaTypedefs.h. */
static void note_pfn(char *token)
{
    size_t len = strlen(token);
    int per_thread = 0;
    if (len > 5 &&
        (strcmp(token + len - 5, "_ptds") == 0 || strcmp(token + len - 5, "_ptsz") == 0)) {
        per_thread = 1;
        token[len - 5] = '\0';
    }
    char *v = strrchr(token, '_');
    if (v == NULL || v[1] != 'v')
        return;
    int version = atoi(v + 2);
    *v = '\0';
    pfn_version_t *e = pfn_entry(token, 1);
    int *slot = per_thread ? &e->per_thread : &e->legacy;
    if (version > *slot)
        *slot = version;
    (*(per_thread ? &e->n_per_thread : &e->n_legacy))++;
}

static void load_pfn_versions(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/cudaTypedefs.h", getenv("CUDA_INCLUDE_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    while (fgets(line, sizeof(line), f) != NULL) {
        char *p = strstr(line, "(CUDAAPI *PFN_");
        if (p == NULL)
            continue;
        p += strlen("(CUDAAPI *PFN_");
        char *end = strchr(p, ')');
        if (end == NULL)
            continue;
        *end = '\0';
        note_pfn(p);
    }
    fclose(f);
}

static const char *oracle_symbol(const sim_cuda_oracle_t *table, const char *name)
{
    for (const sim_cuda_oracle_t *o = table; o->name != NULL; o++) {
        if (strcmp(o->name, name) == 0)
            return o->symbol;
    }
    return name;
}

/* The symbol the oracle expects for one row, or NULL when the row needs a hand-written entry
 * that is missing (a test failure). */
static const char *expected_symbol(const char *name, int version, int per_thread)
{
    for (size_t i = 0; i < sizeof(older_abis) / sizeof(older_abis[0]); i++) {
        const older_t *o = &older_abis[i];
        if (strcmp(o->name, name) == 0 && o->version == version && o->per_thread == per_thread)
            return o->symbol;
    }
    const pfn_version_t *v = pfn_entry(name, 0);
    if (v == NULL)
        return name; /* not a cuda.h driver function at all: gpusim cannot implement it */
    int pt = per_thread && v->per_thread != 0;
    int newest = pt ? v->per_thread : v->legacy;
    int n_abis = pt ? v->n_per_thread : v->n_legacy;
    const char *symbol = oracle_symbol(pt ? oracle_ptds : oracle_legacy, name);
    if (version < newest || strncmp(symbol, name, strlen(name)) != 0)
        return NULL;
    /* Several ABIs but no macro renaming the name (cuCtxGetDevice_v2): cuda.h cannot tell. */
    if (n_abis > 1 && strcmp(symbol, name) == 0 && !pt)
        return NULL;
    return symbol;
}

typedef struct tally {
    int rows, implemented;
} tally_t;

static void replay_row(const char *name, int version, int flags, tally_t *t)
{
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const char *expected = name[0] != '\0' ? expected_symbol(name, version, per_thread) : "";
    if (expected == NULL)
        fail_msg("%s@%d flags %d: no oracle entry for an older ABI", name, version, flags);
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
    CUresult result = fx.get_proc(name, &fn, version, (cuuint64_t)flags, &status);
    void *want = expected[0] != '\0' ? dlsym(fx.lib, expected) : NULL;
    t->rows++;
    if (want != NULL) {
        t->implemented++;
        if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || fn != want)
            fail_msg("%s@%d flags %d: got result %d status %d, expected %s", name, version, flags,
                     result, status, expected);
    } else if (result != CUDA_ERROR_NOT_FOUND || status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ||
               fn != NULL) {
        fail_msg("%s@%d flags %d: got result %d status %d, expected not found (%s)", name, version,
                 flags, result, status, expected);
    }
}

static int row_resolves(const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    return fx.get_proc(name, &fn, 13000, 0, &status) == CUDA_SUCCESS && fn != NULL;
}

static void test_replay_tsv(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/cuda/cudart13-getprocaddress-lookups.tsv",
             getenv("GS_DATA_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int header = 0;
    tally_t t = {0, 0};
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#')
            continue;
        if (!header++)
            continue; /* "symbol cudaVersion flags" */
        line[strcspn(line, "\n")] = '\0';
        char *tab1 = strchr(line, '\t');
        assert_non_null(tab1);
        *tab1 = '\0';
        char *tab2 = strchr(tab1 + 1, '\t');
        assert_non_null(tab2);
        replay_row(line, atoi(tab1 + 1), atoi(tab2 + 1), &t);
    }
    fclose(f);
    assert_int_equal(t.rows, 440);
    if (getenv("GSIM_TEST_VERBOSE") != NULL)
        fprintf(stderr, "%d of %d lookups resolve to gpusim functions\n", t.implemented, t.rows);
    assert_true(t.implemented >= 200);
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!row_resolves(required[i]))
            fail_msg("%s is not implemented", required[i]);
    }
}

static void test_self_lookup(void **state)
{
    (void)state;
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    assert_int_equal(fx.get_proc("cuGetProcAddress", &fn, 12000, 0, &status), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(fx.lib, "cuGetProcAddress_v2"));
    get_proc_v2_t again = (get_proc_v2_t)fn;
    void *init = NULL;
    assert_int_equal(again("cuInit", &init, 2000, 0, &status), CUDA_SUCCESS);
    assert_ptr_equal(init, dlsym(fx.lib, "cuInit"));
    assert_int_equal(fx.get_proc("cuGetProcAddress", &fn, 11030, 0, &status), CUDA_SUCCESS);
    get_proc_v1_t v1 = (get_proc_v1_t)fn;
    assert_ptr_equal(fn, dlsym(fx.lib, "cuGetProcAddress"));
    assert_int_equal(v1("cuMemAlloc", &init, 3020, 0), CUDA_SUCCESS);
    assert_ptr_equal(init, dlsym(fx.lib, "cuMemAlloc_v2"));
}

static void test_versions_and_flags(void **state)
{
    (void)state;
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    /* A function that exists only in newer versions. */
    assert_int_equal(fx.get_proc("cuMemAllocAsync", &fn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_null(fn);
    /* A versioned symbol is not a base name. */
    assert_int_equal(fx.get_proc("cuMemAlloc_v2", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* Per-thread and legacy flavours. */
    assert_int_equal(fx.get_proc("cuLaunchKernel", &fn, 13000, 2, &status), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(fx.lib, "cuLaunchKernel_ptsz"));
    assert_int_equal(fx.get_proc("cuLaunchKernel", &fn, 13000, 1, &status), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(fx.lib, "cuLaunchKernel"));
    assert_int_equal(fx.get_proc("cuMemcpyHtoD", &fn, 6050, 2, &status), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(fx.lib, "cuMemcpyHtoD_v2"));
    /* Bad arguments. */
    assert_int_equal(fx.get_proc("cuInit", &fn, 13000, 4, &status), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fx.get_proc(NULL, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(fx.get_proc("cuInit", NULL, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
    /* Lookups work before cuInit, and the library still initialises afterwards. */
    init_t init = (init_t)dlsym(fx.lib, "cuInit");
    assert_non_null(init);
    assert_int_equal(init(0), CUDA_SUCCESS);
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(state_dir) == NULL)
        return -1;
    setenv("GPUSIM_STATE", state_dir, 1);
    char path[4096];
    snprintf(path, sizeof(path), "%s/sim/libcuda.so.1", getenv("GS_BUILD_DIR"));
    fx.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (fx.lib == NULL)
        return -1;
    fx.get_proc = (get_proc_v2_t)dlsym(fx.lib, "cuGetProcAddress_v2");
    if (fx.get_proc == NULL)
        return -1;
    load_pfn_versions();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_tsv),
        cmocka_unit_test(test_self_lookup),
        cmocka_unit_test(test_versions_and_flags),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
