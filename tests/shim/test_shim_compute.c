/* A compute share is a share of the GPU's time: a process launching 2 ms kernels back to back
 * keeps the GPU busy LOW..HIGH percent of the time once its lease's controller has settled.
 * usage: test_shim_compute LOW HIGH. Measured from the kernels it completes in a window after a
 * warm-up (gpusim runs kernels for their declared duration at GPUSIM_TIME_SCALE=1). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KERNEL_MS 2.0
#define WARMUP_S  5.0
#define WINDOW_S  3.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_shim_compute LOW HIGH\n");
        return 2;
    }
    double low = atof(argv[1]), high = atof(argv[2]);
    static const char image[] = "gpusim-module 1\nkernel work 2ms\n";
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction fn;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0 || cuModuleLoadData(&module, image) != 0 ||
        cuModuleGetFunction(&fn, module, "work") != 0) {
        fprintf(stderr, "test_shim_compute: cannot set up CUDA\n");
        return 1;
    }
    double start = now_s(), window_start = 0;
    long in_window = 0;
    for (;;) {
        double t = now_s() - start;
        if (t >= WARMUP_S + WINDOW_S)
            break;
        if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS ||
            cuCtxSynchronize() != CUDA_SUCCESS)
            return 1;
        if (t >= WARMUP_S) {
            if (in_window == 0)
                window_start = now_s();
            in_window++;
        }
    }
    double busy = 100.0 * in_window * KERNEL_MS / 1000.0 / (now_s() - window_start);
    printf("GPU busy %.1f%% over the last %.0f s (%ld kernels of %.0f ms); expected %.0f-%.0f%%\n",
           busy, WINDOW_S, in_window, KERNEL_MS, low, high);
    return busy >= low && busy <= high ? 0 : 1;
}
