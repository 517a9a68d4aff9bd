/* SPDX-License-Identifier: Apache-2.0 */
/* gs-bypass: a CUDA process that allocates device memory past its lease's limit by the routes
 * around libgpushare.so (issue 34, acceptance 6; tests/daemon/hostile_bypass.sh):
 *
 *   gs-bypass deepbind MIB     (1) dlopen(libcuda.so.1, RTLD_DEEPBIND) and dlsym: the shim's dlsym
 *                              answers with its hook; (2) libc's own dlsym, fetched with dlsym:
 *                              the driver's function; (3) a library of its own loaded with
 *                              RTLD_DEEPBIND that calls cuMemAlloc (libgs-bypass-deep.so,
 *                              beside gs-bypass)
 *   gs-bypass procaddr MIB     cuGetProcAddress and _v2 for cuMemAlloc, cuMemAllocManaged and
 *                              cuMemAllocPitch at CUDA 3.2, 12.0, 13.0 and INT_MAX, with each
 *                              flag (default, legacy stream, per-thread stream), and through the
 *                              cuGetProcAddress that cuGetProcAddress itself returns
 *   gs-bypass exporttable MIB  the driver's private table of gpusim (docs/gpusim.md)
 *   gs-bypass neighbour FILE MIB  (another lease) a context, "ready PID"; once FILE exists,
 *                              allocates MIB MiB, retrying every 10 ms while the device is out
 *                              of memory; prints "filled BYTES MS" (MS: from when it saw FILE)
 *                              and holds it
 *
 * Each route tries MIB MiB at once after a context through the usual path (the shim's) and
 * prints "ROUTE refused CUresult" or "ROUTE held BYTES" ("ROUTE absent CUresult": nothing to
 * call); then "held BYTES PID" when any route
 * got its memory (the memory stays held), else "refused PID"; then it waits to be killed.
 * Exit status: 2 usage, 3 a CUDA error outside the routes. */
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* cuda.h names cuGetProcAddress_v2 so; the CUDA 11.3 ABI is the symbol cuGetProcAddress. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
/* What cuGetProcAddress("cuGetProcAddress") gives at CUDA 12.0 and later: cuGetProcAddress_v2,
 * whose fifth argument is written (calling it with four wrote through whatever the register
 * held: ASan's SEGV). */
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*proc_v2_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
typedef void *(*dlsym_fn)(void *, const char *);

static unsigned long long held;

static void check(CUresult rc, const char *what)
{
    if (rc == CUDA_SUCCESS)
        return;
    fprintf(stderr, "gs-bypass: %s failed: %d\n", what, (int)rc);
    exit(3);
}

/* A context on device 0, current: through the shim, as an honest program makes one. */
static void context(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult rc = cuInit(0);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGet(&dev, 0);
    check(rc == CUDA_SUCCESS ? cuCtxCreate(&ctx, NULL, 0, dev) : rc, "making a context");
}

/* One route's outcome: printed, and counted when it holds memory. */
static void outcome(const char *route, CUresult rc, size_t bytes)
{
    if (rc == CUDA_SUCCESS) {
        held += bytes;
        printf("%s held %zu\n", route, bytes);
    } else {
        printf("%s refused %d\n", route, (int)rc);
    }
    fflush(stdout);
}

static void try_alloc(const char *route, alloc_fn fn, size_t bytes)
{
    CUdeviceptr p = 0;
    if (fn == NULL) {
        printf("%s absent\n", route);
        return;
    }
    outcome(route, fn(&p, bytes), bytes);
}

static void deepbind(size_t bytes)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    try_alloc("deepbind-dlsym", cuda != NULL ? (alloc_fn)dlsym(cuda, "cuMemAlloc_v2") : NULL,
              bytes);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    dlsym_fn libc_dlsym = libc != NULL ? (dlsym_fn)dlsym(libc, "dlsym") : NULL;
    try_alloc("libc-dlsym",
              libc_dlsym != NULL && cuda != NULL ? (alloc_fn)libc_dlsym(cuda, "cuMemAlloc_v2")
                                                 : NULL,
              bytes);
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
    if (slash != NULL)
        strcpy(slash, "/libgs-bypass-deep.so"); /* (beside gs-bypass) */
    void *deep = slash != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND) : NULL;
    if (deep == NULL)
        fprintf(stderr, "gs-bypass: %s\n", dlerror());
    try_alloc("deepbind-library",
              deep != NULL ? (alloc_fn)dlsym(deep, "gs_bypass_deep_alloc") : NULL, bytes);
}

/* Calls what a lookup returned for name as that function. */
static void call_found(const char *route, const char *name, void *fn, size_t bytes)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    if (strcmp(name, "cuMemAlloc") == 0)
        outcome(route, ((alloc_fn)fn)(&p, bytes), bytes);
    else if (strcmp(name, "cuMemAllocManaged") == 0)
        outcome(route, ((managed_fn)fn)(&p, bytes, CU_MEM_ATTACH_GLOBAL), bytes);
    else
        outcome(route, ((pitch_fn)fn)(&p, &pitch, bytes >> 10, 1024, 4), bytes);
}

static void procaddr(size_t bytes)
{
    static const char *const names[] = {"cuMemAlloc", "cuMemAllocManaged", "cuMemAllocPitch"};
    static const int versions[] = {3020, 12000, 13000, INT_MAX};
    static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT,
                                       CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
    proc_fn self = NULL;
    check(cuGetProcAddress("cuGetProcAddress", (void **)&self, 13000, 0), "cuGetProcAddress");
    for (size_t n = 0; n < 3; n++)
        for (size_t v = 0; v < 4; v++)
            for (size_t f = 0; f < 3; f++)
                for (int way = 0; way < 3; way++) {
                    void *fn = NULL;
                    CUdriverProcAddressQueryResult status;
                    CUresult rc = way == 0 ? cuGetProcAddress(names[n], &fn, versions[v], flags[f])
                                  : way == 1 ? cuGetProcAddress_v2(names[n], &fn, versions[v],
                                                                   flags[f], &status)
                                             : self(names[n], &fn, versions[v], flags[f], &status);
                    char route[96];
                    snprintf(route, sizeof(route), "procaddr-%s-%d-%llu-%s", names[n], versions[v],
                             (unsigned long long)flags[f],
                             way == 0   ? "v1"
                             : way == 1 ? "v2"
                                        : "self");
                    if (rc == CUDA_SUCCESS && fn != NULL)
                        call_found(route, names[n], fn, bytes);
                    else
                        printf("%s absent %d\n", route, (int)rc);
                }
}

/* The table of docs/gpusim.md, as someone who read a driver's would call it. */
typedef struct private_alloc_table {
    size_t size;
    alloc_fn alloc;
    CUresult (*free)(CUdeviceptr);
} private_alloc_table_t;

static void exporttable(size_t bytes)
{
    CUuuid id;
    const void *table = NULL;
    memcpy(id.bytes, "gpusim-allocate", sizeof(id.bytes));
    CUresult rc = cuGetExportTable(&table, &id);
    const private_alloc_table_t *t = table;
    if (rc != CUDA_SUCCESS || t == NULL || t->size < sizeof(*t))
        printf("exporttable absent %d\n", (int)rc);
    else
        try_alloc("exporttable", t->alloc, bytes);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The neighbour: fills its lease's free memory once told, however long the device refuses. */
static void neighbour(const char *go, size_t bytes)
{
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (access(go, F_OK) != 0)
        usleep(1000);
    long long start = now_ms();
    for (;;) {
        CUdeviceptr p;
        CUresult rc = cuMemAlloc(&p, bytes);
        if (rc == CUDA_SUCCESS) {
            printf("filled %zu %lld\n", bytes, now_ms() - start);
            fflush(stdout);
            return;
        }
        if (rc != CUDA_ERROR_OUT_OF_MEMORY || now_ms() - start > 60000)
            check(rc, "cuMemAlloc");
        usleep(10000);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[1] : "";
    int neighbour_mode = strcmp(mode, "neighbour") == 0;
    const char *mib = neighbour_mode ? (argc > 3 ? argv[3] : "0") : argc > 2 ? argv[2] : "0";
    size_t bytes = (size_t)strtoull(mib, NULL, 10) << 20;
    if (bytes == 0 || (!neighbour_mode && strcmp(mode, "deepbind") != 0 &&
                       strcmp(mode, "procaddr") != 0 && strcmp(mode, "exporttable") != 0)) {
        fprintf(stderr,
                "usage: gs-bypass deepbind|procaddr|exporttable MIB | neighbour FILE MIB\n");
        return 2;
    }
    context();
    if (neighbour_mode)
        neighbour(argv[2], bytes);
    else if (strcmp(mode, "deepbind") == 0)
        deepbind(bytes);
    else if (strcmp(mode, "procaddr") == 0)
        procaddr(bytes);
    else
        exporttable(bytes);
    if (!neighbour_mode) {
        if (held > 0)
            printf("held %llu %d\n", held, (int)getpid());
        else
            printf("refused %d\n", (int)getpid());
        fflush(stdout);
    }
    for (;;)
        pause();
}
