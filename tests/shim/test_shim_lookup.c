/* SPDX-License-Identifier: Apache-2.0 */
/* Every way of reaching the driver lands in the shim: the runtime's recorded cuGetProcAddress
 * lookups (replayed from data/cuda/cudart13-getprocaddress-lookups.tsv), dlsym, dlvsym and
 * RTLD_NEXT. Run under the shim with GPUSHARE_MEMORY_LIMIT=1G.
 *
 * The oracle is the driver itself: the program re-runs itself without the shim (--names) and
 * records, for every lookup, which driver symbol came back; under the shim the same lookup must
 * return the shim's hook of that very symbol when the shim interposes it, else the driver's. */
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
#include <sys/wait.h>
#include <unistd.h>

#define LIMIT (UINT64_C(1) << 30)
/* What is left of the limit beside the primary context's own memory (543162368 bytes on an
 * H100-80GB, charged to the lease). */
#define AVAIL    (LIMIT - UINT64_C(543162368))
#define MAX_ROWS 1024

typedef struct row {
    char symbol[512];
    int version;
    unsigned long long flags;
} row_t;

static row_t rows[MAX_ROWS];
static int n_rows;
static char driver_names[MAX_ROWS][128]; /* what the bare driver returned, "-" for not found */
static char *self_path;

int gs_next_probe(void);
void *gs_next_probe_lookup_from_library(void);

/* The executable's own definition, so RTLD_NEXT from here has something to skip. */
__attribute__((visibility("default"))) int gs_next_probe(void)
{
    return 1;
}

static int load_rows(void)
{
    const char *data = getenv("GS_DATA_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/cuda/cudart13-getprocaddress-lookups.tsv",
             data ? data : "data");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[512];
    while (fgets(line, sizeof(line), f) != NULL && n_rows < MAX_ROWS) {
        if (line[0] == '#' || strncmp(line, "symbol\t", 7) == 0)
            continue;
        row_t *r = &rows[n_rows];
        char *tab = strchr(line, '\t');
        if (tab == NULL)
            continue;
        *tab = '\0';
        snprintf(r->symbol, sizeof(r->symbol), "%s", line);
        char *end;
        r->version = (int)strtol(tab + 1, &end, 10);
        r->flags = strtoull(end, NULL, 10);
        n_rows++;
    }
    fclose(f);
    return n_rows > 400 ? 0 : -1;
}

/* The name of the exported function at fn, or "-". */
static const char *name_of(void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_sname == NULL)
        return "-";
    return info.dli_sname;
}

static const char *object_of(void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_fname == NULL)
        return "-";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static void *lookup(const row_t *r, CUresult *result, CUdriverProcAddressQueryResult *status)
{
    void *fn = NULL;
    *result = cuGetProcAddress(r->symbol, &fn, r->version, r->flags, status);
    return *result == CUDA_SUCCESS ? fn : NULL;
}

/* --names: print the driver's answer for every row (run without the shim). */
static int print_names(void)
{
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    for (int i = 0; i < n_rows; i++) {
        CUresult result;
        CUdriverProcAddressQueryResult status;
        printf("%s\n", name_of(lookup(&rows[i], &result, &status)));
    }
    return 0;
}

static int read_driver_names(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("LD_PRELOAD");
        const char *asan = getenv("GS_SANITIZE");
        if (asan != NULL && *asan != '\0')
            setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
        dup2(fds[1], 1);
        execl(self_path, self_path, "--names", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    int i = 0;
    char line[120];
    while (i < n_rows && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(driver_names[i++], sizeof(driver_names[0]), "%s", line);
    }
    fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    return i == n_rows && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void *shim_handle(void)
{
    const char *preload = getenv("GS_SHIM_PRELOAD");
    const char *last = preload ? strrchr(preload, ':') : NULL;
    return dlopen(last ? last + 1 : preload, RTLD_LAZY | RTLD_NOLOAD);
}

static void test_replay_runtime_lookups(void **state)
{
    (void)state;
    void *shim = shim_handle();
    assert_non_null(shim);
    int hooked = 0, passed = 0, missing = 0;
    for (int i = 0; i < n_rows; i++) {
        CUresult result;
        CUdriverProcAddressQueryResult status;
        void *fn = lookup(&rows[i], &result, &status);
        const char *expected = driver_names[i];
        if (strcmp(expected, "-") == 0) {
            assert_null(fn);
            assert_int_equal(result, CUDA_ERROR_NOT_FOUND);
            missing++;
            continue;
        }
        assert_string_equal(name_of(fn), expected);
        if (dlsym(shim, expected) != NULL) {
            /* The shim interposes this very versioned function: we must get the hook. */
            assert_string_equal(object_of(fn), "libgpushare.so");
            hooked++;
        } else {
            assert_string_equal(object_of(fn), "libcuda.so.1");
            passed++;
        }
    }
    printf("replayed %d lookups: %d hooked, %d passed through, %d not found\n", n_rows, hooked,
           passed, missing);
    assert_true(hooked >= 30);
}

static void test_functions_obtained_are_limited(void **state)
{
    (void)state;
    CUdevice dev;
    CUcontext ctx;
    assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    /* The self-lookup returns the shim's cuGetProcAddress, and what it returns is hooked. */
    void *gpa = NULL;
    CUdriverProcAddressQueryResult status;
    assert_int_equal(cuGetProcAddress("cuGetProcAddress", &gpa, 12000, 0, &status), 0);
    assert_string_equal(object_of(gpa), "libgpushare.so");
    __typeof__(&cuGetProcAddress_v2) gpa_fn = (__typeof__(gpa_fn))gpa;
    void *alloc = NULL, *alloc_async = NULL, *free_fn = NULL;
    assert_int_equal(gpa_fn("cuMemAlloc", &alloc, 12000, 0, &status), 0);
    assert_int_equal(gpa_fn("cuMemAllocAsync", &alloc_async, 12000, 2, &status), 0);
    assert_int_equal(gpa_fn("cuMemFree", &free_fn, 12000, 0, &status), 0);
    assert_string_equal(name_of(alloc_async), "cuMemAllocAsync_ptsz");
    CUdeviceptr p, q;
    __typeof__(&cuMemAlloc_v2) alloc_v2 = (__typeof__(alloc_v2))alloc;
    __typeof__(&cuMemAllocAsync) alloc_a = (__typeof__(alloc_a))alloc_async;
    __typeof__(&cuMemFree_v2) free_v2 = (__typeof__(free_v2))free_fn;
    assert_int_equal(alloc_v2(&p, AVAIL + 1), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(alloc_v2(&p, AVAIL), CUDA_SUCCESS);
    assert_int_equal(alloc_a(&q, 1, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(free_v2(p), CUDA_SUCCESS);
    assert_int_equal(alloc_a(&q, AVAIL, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync(q, NULL), CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
}

static void test_dlsym_routes(void **state)
{
    (void)state;
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY);
    assert_non_null(driver);
    void *fn = dlsym(driver, "cuMemAlloc_v2");
    assert_string_equal(object_of(fn), "libgpushare.so");
    assert_string_equal(name_of(fn), "cuMemAlloc_v2");
    fn = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    assert_string_equal(object_of(fn), "libgpushare.so");
    fn = dlsym(driver, "cuGetProcAddress_v2");
    assert_string_equal(object_of(fn), "libgpushare.so");
    /* Not interposed: the driver's own. */
    fn = dlsym(driver, "cuMemcpyHtoD_v2");
    assert_string_equal(object_of(fn), "libcuda.so.1");
    assert_null(dlsym(driver, "cuNoSuchFunction"));
    /* dlvsym of a versioned libc symbol still reaches libc. */
    fn = dlvsym(RTLD_DEFAULT, "dlopen", "GLIBC_2.34");
    assert_string_equal(object_of(fn), "libc.so.6");
    dlclose(driver);
}

/* libgs_next_probe.so is linked in at start-up, after this executable; both define
 * gs_next_probe. glibc's RTLD_NEXT searches the caller's scope after the caller: from here it
 * must find the library's definition, from inside the library nothing. A shim that answered
 * RTLD_NEXT relative to itself would give the library its own definition back. */
static void test_rtld_next_is_relative_to_the_caller(void **state)
{
    (void)state;
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gs_next_probe");
    assert_non_null(next);
    assert_int_equal(next(), 2);
    assert_int_equal(gs_next_probe(), 1);
    assert_null(gs_next_probe_lookup_from_library());
    /* RTLD_NEXT for an interposed name gives the hook. */
    assert_string_equal(object_of(dlsym(RTLD_NEXT, "cuMemFree_v2")), "libgpushare.so");
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (load_rows() != 0) {
        fprintf(stderr, "cannot read the lookup table\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--names") == 0)
        return print_names();
    if (cuInit(0) != CUDA_SUCCESS || read_driver_names() != 0) {
        fprintf(stderr, "cannot get the driver's own answers\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_runtime_lookups),
        cmocka_unit_test(test_functions_obtained_are_limited),
        cmocka_unit_test(test_dlsym_routes),
        cmocka_unit_test(test_rtld_next_is_relative_to_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
