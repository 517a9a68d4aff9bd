/* SPDX-License-Identifier: Apache-2.0 */
/* Bad input returns NVIDIA's documented errors and never crashes: calls before cuInit, without a
 * context, with garbage handles and pointers, bad sizes and bad images. */
#include <string.h>
#include <sys/mman.h>

#include "check.h"

#define GARBAGE ((void *)(uintptr_t)0xdeadbeef0ull)

static void before_init(void)
{
    int n;
    CUcontext ctx;
    CHECK_RESULT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_RESULT(cuCtxCreate(&ctx, NULL, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_RESULT(cuStreamSynchronize(NULL), CUDA_ERROR_NOT_INITIALIZED);
    /* These work before cuInit. */
    int version = 0;
    CHECK(cuDriverGetVersion(&version));
    const char *s = NULL;
    CHECK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    CHECK_TRUE(strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
}

static void error_names(void)
{
    int named = 0;
    for (int e = 0; e < 1100; e++) {
        const char *name = NULL, *text = NULL;
        CUresult r = cuGetErrorName((CUresult)e, &name);
        CHECK_EQ(cuGetErrorString((CUresult)e, &text), r);
        if (r == CUDA_SUCCESS) {
            CHECK_TRUE(strncmp(name, "CUDA_", 5) == 0 && strlen(text) > 10);
            named++;
        } else {
            CHECK_EQ(r, CUDA_ERROR_INVALID_VALUE);
            CHECK_TRUE(name == NULL);
        }
    }
    CHECK_TRUE(named >= 100);
    const char *s = NULL;
    CHECK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    CHECK_TRUE(strstr(s, "parameters") != NULL);
    CHECK_RESULT(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void no_context(void)
{
    CUdeviceptr p;
    size_t f, t;
    CHECK_RESULT(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxPopCurrent(NULL), CUDA_ERROR_INVALID_CONTEXT);
}

static void devices(void)
{
    CUdevice d;
    char name[8];
    CHECK_RESULT(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RESULT(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RESULT(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuDeviceGetName(name, sizeof(name), 0));
    CHECK_TRUE(strcmp(name, "NVIDIA ") == 0); /* truncated, terminated */
    int v;
    CHECK_RESULT(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7),
                 CUDA_ERROR_INVALID_DEVICE);
    CHECK_RESULT(cuDeviceGetByPCIBusId(&d, "0000:99:00.0"), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RESULT(cuDeviceGetByPCIBusId(&d, "junk"), CUDA_ERROR_INVALID_VALUE);
}

static void contexts(void)
{
    CUcontext c;
    CHECK_RESULT(cuCtxCreate(&c, NULL, 0x1000, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuCtxCreate(&c, NULL, 3, 0), CUDA_ERROR_INVALID_VALUE); /* two sched flags */
    CHECK_RESULT(cuCtxCreate(&c, NULL, 0, 4), CUDA_ERROR_INVALID_DEVICE);
    CHECK_RESULT(cuCtxDestroy(GARBAGE), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxPushCurrent(GARBAGE), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxSetCurrent(GARBAGE), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxCreate(&c, NULL, 0, 0));
    CHECK(cuCtxDestroy(c));
    CHECK_RESULT(cuCtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxPushCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
}

static void memory(void)
{
    CUdeviceptr p, q;
    unsigned char buf[64];
    CHECK_RESULT(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemFree((CUdeviceptr)GARBAGE), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(0)); /* free(NULL) semantics */
    CHECK(cuMemFreeHost(NULL));
    CHECK_RESULT(cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAlloc(&p, 64));
    CHECK_RESULT(cuMemFree(p + 8), CUDA_ERROR_INVALID_VALUE); /* not the start */
    CHECK_RESULT(cuMemcpyHtoD((CUdeviceptr)GARBAGE, buf, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpyHtoD(p, buf, 65), CUDA_ERROR_INVALID_VALUE); /* out of bounds */
    CHECK_RESULT(cuMemcpyHtoD(p + 60, buf, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpyHtoD(p, NULL, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpyDtoH(buf, (CUdeviceptr)GARBAGE, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemsetD32(p + 1, 0, 4), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CHECK_RESULT(cuMemsetD8(p, 0, 65), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemsetD2D8(p, 8, 0, 16, 2), CUDA_ERROR_INVALID_VALUE); /* pitch < width */
    CHECK(cuMemcpyHtoD(p, buf, 0));
    /* Bad host pointers fail the copy instead of crashing the process. */
    static const char read_only[64] = "constant";
    CHECK_RESULT(cuMemcpyHtoD(p, GARBAGE, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpyDtoH(GARBAGE, p, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpyDtoH((void *)read_only, p, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpy((CUdeviceptr)GARBAGE, (CUdeviceptr)buf, 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemcpy((CUdeviceptr)0x10, (CUdeviceptr)0x20, 64), CUDA_ERROR_INVALID_VALUE);
    for (int i = 0; i < 64; i++)
        buf[i] = (unsigned char)i;
    CHECK(cuMemcpy((CUdeviceptr)buf, (CUdeviceptr)(buf + 4), 32)); /* overlapping host ranges */
    for (int i = 0; i < 32; i++)
        CHECK_EQ(buf[i], (unsigned char)(i + 4));
    CHECK(cuMemcpy((CUdeviceptr)(buf + 8), (CUdeviceptr)buf, 32));
    for (int i = 0; i < 32; i++)
        CHECK_EQ(buf[8 + i], (unsigned char)(i + 4));
    CUDA_MEMCPY2D c2;
    memset(&c2, 0, sizeof(c2));
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = GARBAGE;
    c2.srcPitch = 16;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = p;
    c2.dstPitch = 16;
    c2.WidthInBytes = 16;
    c2.Height = 4;
    CHECK_RESULT(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    c2.srcHost = buf;
    CHECK(cuMemcpy2D(&c2));
    c2.Height = 5; /* one row past the allocation */
    CHECK_RESULT(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    size_t pitch;
    CHECK_RESULT(cuMemAllocPitch(&q, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemAllocManaged(&q, 64, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemGetAddressRange(&q, NULL, (CUdeviceptr)GARBAGE), CUDA_ERROR_NOT_FOUND);
    unsigned int type;
    CHECK_RESULT(
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)GARBAGE),
        CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(p));
    CHECK_RESULT(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* double free */
    CHECK_RESULT(cuMemFreeHost(GARBAGE), CUDA_ERROR_INVALID_VALUE);
    /* Registering memory that is not mapped fails instead of crashing a later copy. */
    void *hole = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, 8192);
    CHECK_RESULT(cuMemHostRegister(hole, 8192, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemHostRegister(buf, 64, 0x40), CUDA_ERROR_INVALID_VALUE);
}

static void vmm(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CHECK_RESULT(cuMemCreate(&h, MIB, &prop, 0), CUDA_ERROR_INVALID_VALUE); /* granularity */
    prop.location.id = 3;
    CHECK_RESULT(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
    prop.location.id = 0;
    CHECK(cuMemCreate(&h, 2 * MIB, &prop, 0));
    CHECK_RESULT(cuMemAddressReserve(&va, 3 * MIB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
    CHECK_RESULT(cuMemMap(va + 4096, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemMap(va, 4 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* larger than h */
    CHECK_RESULT(cuMemMap(va, 2 * MIB, 0, (CUmemGenericAllocationHandle)0x1234, 0),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemMap(va, 2 * MIB, 0, h, 0));
    CHECK_RESULT(cuMemMap(va, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
    CUmemAccessDesc access = {.location = prop.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK_RESULT(cuMemSetAccess(va, 4 * MIB, &access, 1), CUDA_ERROR_INVALID_VALUE);
    unsigned char b = 1;
    CHECK_RESULT(cuMemcpyHtoD(va, &b, 1), CUDA_ERROR_INVALID_VALUE); /* no access yet */
    CHECK_RESULT(cuMemUnmap(va, 4 * MIB), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemUnmap(va, 2 * MIB));
    CHECK(cuMemRelease(h));
    CHECK_RESULT(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuMemAddressFree(va, 2 * MIB), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAddressFree(va, 4 * MIB));
}

static void streams_events(void)
{
    CUstream s;
    CUevent e1, e2;
    float ms;
    CHECK_RESULT(cuStreamSynchronize(GARBAGE), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuStreamQuery(GARBAGE), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuStreamDestroy(GARBAGE), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuStreamDestroy(s));
    CHECK_RESULT(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE); /* destroyed */
    CHECK_RESULT(cuEventRecord(GARBAGE, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuEventCreate(&e1, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuEventCreate(&e1, 0));
    CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
    CHECK_RESULT(cuEventElapsedTime(&ms, e1, e1), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
    CHECK(cuEventQuery(e1)); /* an unrecorded event is complete */
    CHECK(cuEventRecord(e1, NULL));
    CHECK(cuEventRecord(e2, NULL));
    CHECK(cuEventSynchronize(e2));
    CHECK_RESULT(cuEventElapsedTime(&ms, e1, e2), CUDA_ERROR_INVALID_HANDLE); /* no timing */
    CHECK_RESULT(cuEventElapsedTime(NULL, e1, e1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuEventDestroy(e1));
    CHECK(cuEventDestroy(e2));
    CHECK_RESULT(cuEventDestroy(e2), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuStreamWaitEvent(NULL, GARBAGE, 0), CUDA_ERROR_INVALID_HANDLE);
}

static void modules_and_launch(void)
{
    static const char bad[] = "gpusim-module 1\nkernel k fast\n";
    static const char good[] = "gpusim-module 1\nkernel k 1us\n";
    static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    CUmodule m;
    CUfunction f;
    char log[256] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof(log)};
    CHECK_RESULT(cuModuleLoadDataEx(&m, bad, 2, opts, vals), CUDA_ERROR_INVALID_IMAGE);
    CHECK_TRUE(strstr(log, "line 2") != NULL);
    CHECK_RESULT(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuModuleLoad(&m, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
    CHECK_RESULT(cuModuleGetFunction(&f, GARBAGE, "k"), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuModuleLoadData(&m, good));
    CHECK_RESULT(cuModuleGetFunction(&f, m, "missing"), CUDA_ERROR_NOT_FOUND);
    CHECK(cuModuleGetFunction(&f, m, "k"));
    CHECK_RESULT(cuLaunchKernel(GARBAGE, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 65536, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 300000, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    void *params[] = {NULL}, *extra[] = {CU_LAUNCH_PARAM_END};
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, GARBAGE, NULL, NULL),
                 CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuLaunchCooperativeKernel(f, 100000, 1, 1, 1024, 1, 1, 0, NULL, NULL),
                 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    CHECK(cuLaunchCooperativeKernel(f, 132, 1, 1, 1024, 1, 1, 0, NULL, NULL));
    CHECK(cuModuleUnload(m));
    CHECK_RESULT(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    CHECK_RESULT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_HANDLE); /* its module is gone */
    /* An image gpusim cannot read is accepted: every name resolves at the default cost. */
    CHECK(cuModuleLoadData(&m, cubin));
    CHECK(cuModuleGetFunction(&f, m, "_Z6vecAddPfS_S_i"));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuModuleUnload(m));
}

int main(void)
{
    before_init();
    error_names();
    CHECK(cuInit(0));
    CHECK(cuInit(0)); /* idempotent */
    no_context();
    devices();
    contexts();
    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
    memory();
    vmm();
    streams_events();
    modules_and_launch();
    CHECK(cuCtxSynchronize());
    size_t f = 0, t = 0;
    CHECK(cuMemGetInfo(&f, &t));
    CHECK_EQ(f, t - H100_CONTEXT); /* nothing leaked by the failed calls */
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
