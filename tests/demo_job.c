/* SPDX-License-Identifier: Apache-2.0 */
/* A small CUDA driver-API job for the demo and the daemon's CUDA tests: it looks at the GPU it
 * was given, allocates memory, runs kernels for a while, and reports what happened, like a real
 * inference or training job would.
 *
 *   gs-demo-job NAME GIB SECONDS [MORE_GIB AFTER]
 *
 * allocates GIB GiB, then launches 2 ms kernels for SECONDS; with MORE_GIB, it tries to allocate
 * that much more AFTER seconds (a job that grows past its slice). Exit status: 0 done, 1 an
 * allocation was refused (CUDA_ERROR_OUT_OF_MEMORY, reported; the job stops cleanly), 2 usage,
 * 3 another CUDA error. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define GIB (1ull << 30)

/* A gpusim module image (kernel durations in simulated time). */
static const char module_image[] = "gpusim-module 1\nkernel work 2ms\n";

static const char *name;

static int check(CUresult rc, const char *what)
{
    if (rc == CUDA_SUCCESS)
        return 0;
    const char *text = NULL, *error = NULL;
    cuGetErrorName(rc, &error);
    cuGetErrorString(rc, &text);
    printf("[%s] %s failed: %s (%s)\n", name, what, error != NULL ? error : "?",
           text != NULL ? text : "?");
    fflush(stdout);
    return rc == CUDA_ERROR_OUT_OF_MEMORY ? 1 : 3;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Launches kernels on the device for seconds; after `after` seconds (if more > 0) it allocates
 * `more` bytes more. Returns 0 or an exit status. */
static int compute(double seconds, size_t more, double after, CUdeviceptr *extra)
{
    CUmodule module;
    CUfunction work;
    int status = check(cuModuleLoadData(&module, module_image), "cuModuleLoadData");
    if (status == 0)
        status = check(cuModuleGetFunction(&work, module, "work"), "cuModuleGetFunction");
    unsigned long launches = 0;
    double start = now_s();
    for (double end = start + seconds; status == 0 && now_s() < end; launches++) {
        if (more > 0 && now_s() >= start + after) {
            printf("[%s] growing by %.1f GiB\n", name, (double)more / GIB);
            status = check(cuMemAlloc(extra, more), "growing");
            if (status != 0)
                printf("[%s] %.1f GiB more does not fit its lease: stopping cleanly\n", name,
                       (double)more / GIB);
            more = 0;
            continue;
        }
        status =
            check(cuLaunchKernel(work, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
        if (status == 0 && launches % 8 == 7)
            status = check(cuCtxSynchronize(), "cuCtxSynchronize");
    }
    cuCtxSynchronize();
    printf("[%s] ran %lu kernels\n", name, launches);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: gs-demo-job NAME GIB SECONDS [MORE_GIB AFTER]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the shim's messages on stderr */
    name = argv[1];
    double gib = atof(argv[2]), seconds = atof(argv[3]);
    size_t more = argc == 6 ? (size_t)(atof(argv[4]) * (double)GIB) : 0;
    double after = argc == 6 ? atof(argv[5]) : 0;
    CUdevice dev;
    CUcontext ctx;
    int status = check(cuInit(0), "cuInit");
    if (status == 0)
        status = check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    if (status == 0)
        status = check(cuCtxCreate(&ctx, NULL, 0, dev), "cuCtxCreate");
    size_t free_bytes = 0, total_bytes = 0;
    if (status == 0)
        status = check(cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
    if (status != 0)
        return status;
    char device_name[64] = "?";
    cuDeviceGetName(device_name, sizeof(device_name), dev);
    printf("[%s] %s: CUDA sees %.1f GiB total, %.1f GiB free\n", name, device_name,
           (double)total_bytes / GIB, (double)free_bytes / GIB);
    CUdeviceptr ptr = 0, extra = 0;
    size_t bytes = (size_t)(gib * (double)GIB);
    status = check(cuMemAlloc(&ptr, bytes), "allocating");
    if (status == 0) {
        printf("[%s] allocated %.1f GiB\n", name, gib);
        fflush(stdout);
        status = check(cuMemsetD8(ptr, 0, 4096), "cuMemsetD8");
    } else {
        printf("[%s] %.1f GiB does not fit its lease: stopping cleanly\n", name, gib);
    }
    if (status == 0)
        status = compute(seconds, more, after, &extra);
    if (extra != 0)
        cuMemFree(extra);
    if (ptr != 0)
        cuMemFree(ptr);
    cuCtxDestroy(ctx);
    printf("[%s] done, exit status %d\n", name, status);
    return status;
}
