/* SPDX-License-Identifier: Apache-2.0 */
/* One process of the timing test: on device ORDINAL, launches COUNT kernels of DURATION back to
 * back on one stream once it reads a byte on stdin ("go"), then prints
 * "<start_ns> <end_ns> <elapsed_ms>": CLOCK_MONOTONIC around the work and cuEventElapsedTime.
 * Usage: timing_worker COUNT DURATION ORDINAL   (prints "ready" when set up) */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int count = atoi(argv[1]);
    char image[256];
    snprintf(image, sizeof(image), "gpusim-module 1\nkernel work %s\n", argv[2]);
    CHECK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, atoi(argv[3])));
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUevent e0, e1;
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&f, mod, "work"));
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    printf("ready\n");
    fflush(stdout);
    char go;
    if (read(0, &go, 1) != 1)
        return 3;
    long long start = now_ns();
    CHECK(cuEventRecord(e0, s));
    for (int i = 0; i < count; i++)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CHECK(cuEventRecord(e1, s));
    CHECK(cuStreamSynchronize(s));
    long long end = now_ns();
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    printf("%lld %lld %.3f\n", start, end, ms);
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
