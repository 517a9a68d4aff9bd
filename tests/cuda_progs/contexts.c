/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts and devices on a node of an H100-80GB and an A100-40GB: device properties per model,
 * primary context retain/release/reset, the per-thread context stack, memory per device, peer
 * copies. With the argument "visible" it checks CUDA_VISIBLE_DEVICES=1 (only the A100). */
#include <pthread.h>
#include <string.h>

#include "check.h"

static size_t free_on(CUcontext ctx)
{
    size_t f = 0, t = 0;
    CHECK(cuCtxPushCurrent(ctx));
    CHECK(cuMemGetInfo(&f, &t));
    CHECK(cuCtxPopCurrent(NULL));
    return f;
}

static void check_model(CUdevice dev, const char *name, unsigned long long bytes, int major,
                        int sms)
{
    char buf[64];
    size_t total = 0;
    int cc = 0, n = 0;
    CHECK(cuDeviceGetName(buf, sizeof(buf), dev));
    CHECK_TRUE(strcmp(buf, name) == 0);
    CHECK(cuDeviceTotalMem(&total, dev));
    CHECK_EQ(total, bytes);
    CHECK(cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK_EQ(cc, major);
    CHECK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CHECK_EQ(n, sms);
}

static void devices(void)
{
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    CHECK_EQ(count, 2);
    check_model(0, "NVIDIA H100-80GB", H100_TOTAL, 9, 132);
    check_model(1, "NVIDIA A100-40GB", A100_TOTAL, 8, 108);
    char bus[32];
    CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), 1));
    CHECK_TRUE(strcmp(bus, "0000:28:00.0") == 0);
    CUuuid u0, u1, u1v2;
    CHECK(cuDeviceGetUuid(&u0, 0));
    CHECK(cuDeviceGetUuid(&u1, 1));
    CHECK(cuDeviceGetUuid_v2(&u1v2, 1));
    CHECK_TRUE(memcmp(&u0, &u1, sizeof(u0)) != 0);
    CHECK_TRUE(memcmp(&u1, &u1v2, sizeof(u1)) == 0);
    int can = -1;
    CHECK(cuDeviceCanAccessPeer(&can, 0, 1));
    CHECK_EQ(can, 1);
}

typedef CUresult (*set_flags_v1_t)(CUdevice, unsigned int);

static void primary_contexts(void)
{
    unsigned int flags = 1;
    int active = 1;
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 0);
    CHECK_EQ(flags, 0);
    CUcontext p, q;
    CHECK(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK(cuDevicePrimaryCtxRetain(&q, 0));
    CHECK_TRUE(p == q);
    CHECK(
        cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC)); /* _v2: allowed while active */
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress("cuDevicePrimaryCtxSetFlags", &fn, 7000, 0, &st));
    CHECK_RESULT(((set_flags_v1_t)fn)(0, 0), CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE);
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 1);
    CHECK_EQ(flags, CU_CTX_SCHED_BLOCKING_SYNC);
    /* Reset destroys the context's allocations but keeps it usable. */
    CUdeviceptr d;
    CHECK(cuCtxPushCurrent(p));
    CHECK(cuMemAlloc(&d, GIB));
    CHECK(cuCtxPopCurrent(NULL));
    CHECK_EQ(free_on(p), H100_TOTAL - H100_CONTEXT - GIB);
    CHECK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ(free_on(p), H100_TOTAL - H100_CONTEXT);
    CHECK(cuDevicePrimaryCtxRelease(0));
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 1);
    CHECK(cuDevicePrimaryCtxRelease(0));
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 0);
    CHECK_RESULT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_RESULT(cuCtxPushCurrent(p), CUDA_ERROR_INVALID_CONTEXT); /* inactive */
}

static void *no_context_here(void *arg)
{
    CUcontext ctx = arg, cur = (CUcontext)1;
    CUdevice dev = -1;
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == NULL);
    CHECK_RESULT(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuCtxGetDevice(&dev));
    CHECK_EQ(dev, 1);
    return NULL;
}

static void context_stack(void)
{
    CUcontext a, b, cur;
    CUdevice dev;
    CHECK(cuCtxCreate(&a, NULL, 0, 0));
    CHECK(cuCtxCreate(&b, NULL, 0, 1)); /* pushed on top of a */
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == b);
    CHECK(cuCtxGetDevice(&dev));
    CHECK_EQ(dev, 1);
    CHECK(cuCtxGetDevice_v2(&dev, a));
    CHECK_EQ(dev, 0);
    CHECK(cuCtxPopCurrent(&cur));
    CHECK_TRUE(cur == b);
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == a);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, no_context_here, b), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == a); /* other threads' stacks are their own */
    unsigned long long ida, idb;
    CHECK(cuCtxGetId(a, &ida));
    CHECK(cuCtxGetId(b, &idb));
    CHECK_TRUE(ida != idb);
    size_t stack = 0;
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    CHECK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
    CHECK_EQ(stack, 4096);

    /* Memory is per device; destroying a context frees what it holds. */
    CUdeviceptr d0, d1;
    CHECK(cuMemAlloc(&d0, 2 * GIB));
    CHECK(cuCtxPushCurrent(b));
    CHECK(cuMemAlloc(&d1, 3 * GIB));
    CHECK(cuCtxPopCurrent(NULL));
    CHECK_EQ(free_on(a), H100_TOTAL - H100_CONTEXT - 2 * GIB);
    CHECK_EQ(free_on(b), A100_TOTAL - A100_CONTEXT - 3 * GIB);
    /* Each context has its own footprint: a second one on the H100 takes another. */
    CUcontext c;
    CHECK(cuCtxCreate(&c, NULL, 0, 0));
    CHECK_EQ(free_on(a), H100_TOTAL - 2 * H100_CONTEXT - 2 * GIB);
    CHECK(cuCtxDestroy(c));
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == a);
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (unsigned char)i;
    CHECK(cuMemcpyHtoD(d0, in, sizeof(in)));
    CHECK(cuMemcpyPeer(d1, b, d0, a, sizeof(in)));
    CHECK(cuMemcpyDtoH(out, d1, sizeof(out)));
    CHECK_TRUE(memcmp(in, out, sizeof(in)) == 0);
    CHECK(cuCtxEnablePeerAccess(b, 0));
    CHECK_RESULT(cuCtxEnablePeerAccess(b, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CHECK(cuCtxDisablePeerAccess(b));
    CHECK_RESULT(cuCtxDisablePeerAccess(b), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    CHECK(cuCtxDestroy(b));
    CHECK_EQ(free_on(a), H100_TOTAL - H100_CONTEXT - 2 * GIB);
    CHECK(cuMemFree(d0));
    CHECK(cuCtxDestroy(a));
    CHECK(cuCtxGetCurrent(&cur));
    CHECK_TRUE(cur == NULL);
}

static void only_the_a100(void)
{
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    CHECK_EQ(count, 1);
    check_model(0, "NVIDIA A100-40GB", A100_TOTAL, 8, 108);
}

int main(int argc, char **argv)
{
    CHECK(cuInit(0));
    if (argc > 1 && strcmp(argv[1], "visible") == 0) {
        only_the_a100();
        return 0;
    }
    devices();
    primary_contexts();
    context_stack();
    return 0;
}
