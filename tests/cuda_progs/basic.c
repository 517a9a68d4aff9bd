/* SPDX-License-Identifier: Apache-2.0 */
/* Acceptance: init, query an H100-80GB, create a context, allocate, copy a round trip, launch a
 * kernel, synchronize and free, with the driver API exactly as an application uses it. */
#include <string.h>

#include <cudaProfiler.h>

#include "check.h"

static const char image[] = "gpusim-module 1\n"
                            "# the kernels of this test\n"
                            "kernel gate 200ms\n"
                            "kernel scale 20ms\n"
                            "kernel tiny 5us\n";

static void check_device(CUdevice dev)
{
    char name[64];
    CHECK(cuDeviceGetName(name, sizeof(name), dev));
    CHECK_TRUE(strcmp(name, "NVIDIA H100-80GB") == 0);
    size_t total = 0;
    CHECK(cuDeviceTotalMem(&total, dev));
    CHECK_EQ(total, H100_TOTAL);
    int major = 0, minor = -1, sms = 0, warp = 0;
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    CHECK_EQ(major, 9);
    CHECK_EQ(minor, 0);
    CHECK_EQ(sms, 132);
    CHECK_EQ(warp, 32);
    char bus[32];
    CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), dev));
    CHECK_TRUE(strcmp(bus, "0000:18:00.0") == 0);
    CUdevice again = -1;
    CHECK(cuDeviceGetByPCIBusId(&again, bus));
    CHECK_EQ(again, dev);
    CUuuid uuid, zero;
    memset(&zero, 0, sizeof(zero));
    CHECK(cuDeviceGetUuid(&uuid, dev));
    CHECK_TRUE(memcmp(&uuid, &zero, sizeof(uuid)) != 0);
}

static void round_trip(size_t n)
{
    unsigned char *in = malloc(n), *out = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    CUdeviceptr a, b;
    CHECK(cuMemAlloc(&a, n));
    CHECK(cuMemAlloc(&b, n));
    CHECK(cuMemcpyHtoD(a, in, n));
    CHECK(cuMemcpyDtoD(b, a, n));
    memset(out, 0, n);
    CHECK(cuMemcpyDtoH(out, b, n));
    CHECK_TRUE(memcmp(in, out, n) == 0);
    CHECK(cuMemsetD8(b, 0xab, n));
    CHECK(cuMemcpyDtoH(out, b, n));
    CHECK_EQ(out[0], 0xab);
    CHECK_EQ(out[n - 1], 0xab);
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    free(in);
    free(out);
}

static void launch_and_sync(void)
{
    CUmodule mod;
    CUfunction scale, gate;
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&scale, mod, "scale"));
    CHECK(cuModuleGetFunction(&gate, mod, "gate"));
    CUstream s;
    CUevent start, stop;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    void *args[] = {NULL};
    /* The first kernel keeps the stream busy for 200 ms, so the timed ones run back to back. */
    CHECK(cuLaunchKernel(gate, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK(cuEventRecord(start, s));
    for (int i = 0; i < 3; i++)
        CHECK(cuLaunchKernel(scale, 64, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CHECK(cuEventRecord(stop, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamQuery(s));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, start, stop));
    CHECK_TRUE(ms > 59.999f && ms < 60.001f);
    CHECK(cuCtxSynchronize());
    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(mod));
}

int main(void)
{
    CHECK_RESULT(cuMemAlloc(&(CUdeviceptr){0}, 1), CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuInit(0));
    int version = 0, count = 0;
    CHECK(cuDriverGetVersion(&version));
    CHECK_EQ(version, 13000);
    CHECK(cuDeviceGetCount(&count));
    CHECK_EQ(count, 1);
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    check_device(dev);
    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    size_t free0 = 0, total = 0;
    CHECK(cuMemGetInfo(&free0, &total));
    CHECK_EQ(total, H100_TOTAL);
    CHECK_EQ(free0, H100_TOTAL - H100_CONTEXT); /* the context's own memory */
    CHECK(cuProfilerStart());
    round_trip(1);
    round_trip(3 * MIB + 17);
    launch_and_sync();
    CHECK(cuProfilerStop());
    size_t free1 = 0;
    CHECK(cuMemGetInfo(&free1, &total));
    CHECK_EQ(free1, free0);
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
