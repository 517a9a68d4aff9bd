/* SPDX-License-Identifier: Apache-2.0 */
/* The driver-API stand-in CUDA process of gpusim's NVML, MIG and MPS tests: the same command
 * protocol as tests/test_sim_nvml_helper.c, served through NVIDIA's driver API (cuda.h) by
 * gpusim's libcuda.so.1, so the tests check what a real program sees. One command per line:
 *   visible             -> "visible N TOTAL ..."   (cuDeviceGetCount, cuDeviceTotalMem)
 *   ctx ORD             -> "ok"                    (retains the device's primary context)
 *   charge ORD BYTES    -> "ok" | "oom" | "error"  (cuMemAlloc; BYTES may end in K, M or G)
 *   uncharge ORD BYTES  -> "ok" | "error"          (cuMemFree of an allocation of that size)
 *   run ORD N US        -> "done ELAPSED_US"       (N kernels of US each, then synchronize)
 *   busy ORD MS         -> "ok"                    (MS of kernels queued, no wait)
 *   mps                 -> "mps unknown"           (a program cannot read its MPS limits)
 * Kernels come from the module image in $GSIM_TEST_KERNEL_IMAGE (a file) and the function
 * $GSIM_TEST_KERNEL, by default an image gpusim does not know, whose kernels get gpusim's default
 * cost; a kernel of US microseconds is as many launches as it takes. One launch's duration is
 * measured with events at startup on device 0, before any other test process runs kernels (a
 * measurement while another process shares the GPU would include its kernels). */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEVICES 16
#define MAX_ALLOCS  256

static const char default_image[] = "// gpusim test module: an image gpusim does not know.\n";

typedef struct device_ctx {
    CUcontext ctx;
    CUfunction kernel;
    double kernel_us; /* measured duration of one launch */
} device_ctx_t;

typedef struct allocation {
    int ord;
    CUdeviceptr ptr;
    unsigned long long bytes;
} allocation_t;

typedef struct client {
    int n_devices;
    device_ctx_t dev[MAX_DEVICES];
    allocation_t allocs[MAX_ALLOCS];
    int n_allocs;
} client_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static unsigned long long parse_bytes(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    switch (*end) {
    case 'K':
        return v << 10;
    case 'M':
        return v << 20;
    case 'G':
        return v << 30;
    default:
        return v;
    }
}

/* Reads the module image (the default when $GSIM_TEST_KERNEL_IMAGE is unset) into a buffer. */
static char *module_image(void)
{
    const char *path = getenv("GSIM_TEST_KERNEL_IMAGE");
    if (path == NULL || *path == '\0')
        return strdup(default_image);
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 20);
    if (f != NULL && buf != NULL && fread(buf, 1, (1 << 20) - 1, f) == 0) {
        free(buf);
        buf = NULL;
    }
    if (f != NULL)
        fclose(f);
    return buf;
}

/* Times one launch with events: 50 back-to-back launches per trial spread the host's latency
 * before the first one, and the least of several trials drops trials the host slowed down. */
static CUresult measure_kernel(device_ctx_t *d)
{
    CUevent start = NULL, stop = NULL;
    double best = 1e30;
    CUresult r = cuEventCreate(&start, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&stop, CU_EVENT_DEFAULT);
    for (int trial = 0; r == CUDA_SUCCESS && trial < 5; trial++) {
        float ms = 0;
        r = cuEventRecord(start, NULL);
        for (int i = 0; r == CUDA_SUCCESS && i < 50; i++)
            r = cuLaunchKernel(d->kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (r == CUDA_SUCCESS)
            r = cuEventRecord(stop, NULL);
        if (r == CUDA_SUCCESS)
            r = cuEventSynchronize(stop);
        if (r == CUDA_SUCCESS)
            r = cuEventElapsedTime(&ms, start, stop);
        if (r == CUDA_SUCCESS && (double)ms * 1000.0 / 50.0 < best)
            best = (double)ms * 1000.0 / 50.0;
    }
    if (start != NULL)
        cuEventDestroy(start);
    if (stop != NULL)
        cuEventDestroy(stop);
    d->kernel_us = best;
    if (r == CUDA_SUCCESS && d->kernel_us < 0.5)
        r = CUDA_ERROR_INVALID_VALUE; /* kernels that take no time cannot keep a GPU busy */
    return r;
}

/* Retains ord's primary context (once), makes it current and prepares its kernel. */
static CUresult use_device(client_t *c, int ord)
{
    if (ord < 0 || ord >= c->n_devices)
        return CUDA_ERROR_INVALID_DEVICE;
    device_ctx_t *d = &c->dev[ord];
    if (d->ctx != NULL)
        return cuCtxSetCurrent(d->ctx);
    CUdevice dev;
    CUresult r = cuDeviceGet(&dev, ord);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&d->ctx, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(d->ctx);
    return r;
}

static CUresult prepare_kernel(client_t *c, int ord)
{
    device_ctx_t *d = &c->dev[ord];
    if (d->kernel != NULL)
        return CUDA_SUCCESS;
    CUmodule module;
    const char *name = getenv("GSIM_TEST_KERNEL");
    char *image = module_image();
    CUresult r = image != NULL ? cuModuleLoadData(&module, image) : CUDA_ERROR_FILE_NOT_FOUND;
    free(image);
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&d->kernel, module,
                                name != NULL && *name != '\0' ? name : "gsim_test_kernel");
    if (r == CUDA_SUCCESS)
        r = measure_kernel(d);
    if (r != CUDA_SUCCESS)
        d->kernel = NULL;
    return r;
}

static void reply_error(CUresult r)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    printf("error %s\n", name != NULL ? name : "unknown");
}

static void cmd_visible(client_t *c)
{
    printf("visible %d", c->n_devices);
    for (int i = 0; i < c->n_devices; i++) {
        CUdevice dev;
        size_t total = 0;
        if (cuDeviceGet(&dev, i) == CUDA_SUCCESS)
            cuDeviceTotalMem(&total, dev);
        printf(" %llu", (unsigned long long)total);
    }
    printf("\n");
}

static void cmd_charge(client_t *c, int ord, unsigned long long bytes)
{
    CUdeviceptr ptr;
    CUresult r = use_device(c, ord);
    if (r == CUDA_SUCCESS && c->n_allocs == MAX_ALLOCS)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&ptr, (size_t)bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        printf("oom\n");
        return;
    }
    if (r != CUDA_SUCCESS) {
        reply_error(r);
        return;
    }
    c->allocs[c->n_allocs++] = (allocation_t){.ord = ord, .ptr = ptr, .bytes = bytes};
    printf("ok\n");
}

static void cmd_uncharge(client_t *c, int ord, unsigned long long bytes)
{
    for (int i = 0; i < c->n_allocs; i++) {
        if (c->allocs[i].ord == ord && c->allocs[i].bytes == bytes &&
            use_device(c, ord) == CUDA_SUCCESS && cuMemFree(c->allocs[i].ptr) == CUDA_SUCCESS) {
            c->allocs[i] = c->allocs[--c->n_allocs];
            printf("ok\n");
            return;
        }
    }
    printf("error\n");
}

/* Queues us microseconds of kernels on ord's context. */
static CUresult queue_kernels(client_t *c, int ord, double us)
{
    CUresult r = use_device(c, ord);
    if (r == CUDA_SUCCESS)
        r = prepare_kernel(c, ord);
    if (r != CUDA_SUCCESS)
        return r;
    long launches = (long)ceil(us / c->dev[ord].kernel_us - 1e-6);
    for (long i = 0; r == CUDA_SUCCESS && i < (launches > 0 ? launches : 1); i++)
        r = cuLaunchKernel(c->dev[ord].kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    return r;
}

static void cmd_run(client_t *c, int ord, long n, long us)
{
    double t0 = now_us();
    CUresult r = CUDA_SUCCESS;
    for (long i = 0; r == CUDA_SUCCESS && i < n; i++)
        r = queue_kernels(c, ord, (double)us);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
        reply_error(r);
    else
        printf("done %lld\n", (long long)(now_us() - t0));
}

static void dispatch(client_t *c, const char *line)
{
    char cmd[32], a[32], b[32], d[32];
    int n = sscanf(line, "%31s %31s %31s %31s", cmd, a, b, d);
    CUresult r;
    if (n >= 1 && strcmp(cmd, "visible") == 0) {
        cmd_visible(c);
    } else if (n == 2 && strcmp(cmd, "ctx") == 0) {
        r = use_device(c, atoi(a));
        if (r == CUDA_SUCCESS)
            printf("ok\n");
        else
            reply_error(r);
    } else if (n == 3 && strcmp(cmd, "charge") == 0) {
        cmd_charge(c, atoi(a), parse_bytes(b));
    } else if (n == 3 && strcmp(cmd, "uncharge") == 0) {
        cmd_uncharge(c, atoi(a), parse_bytes(b));
    } else if (n == 4 && strcmp(cmd, "run") == 0) {
        cmd_run(c, atoi(a), atol(b), atol(d));
    } else if (n == 3 && strcmp(cmd, "busy") == 0) {
        r = queue_kernels(c, atoi(a), (double)atol(b) * 1000.0);
        if (r == CUDA_SUCCESS)
            printf("ok\n");
        else
            reply_error(r);
    } else if (n >= 1 && strcmp(cmd, "mps") == 0) {
        printf("mps unknown\n");
    } else {
        printf("error\n");
    }
    fflush(stdout);
}

int main(void)
{
    static client_t c;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&c.n_devices) != CUDA_SUCCESS) {
        fprintf(stderr, "cuda_client: cuInit failed\n");
        return 1;
    }
    if (c.n_devices > MAX_DEVICES)
        c.n_devices = MAX_DEVICES;
    /* Context and kernel of device 0 now, while the GPU is quiet; failures surface later. */
    if (c.n_devices > 0 && use_device(&c, 0) == CUDA_SUCCESS)
        prepare_kernel(&c, 0);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof(line), stdin) != NULL)
        dispatch(&c, line);
    return 0;
}
