/* SPDX-License-Identifier: Apache-2.0 */
/* Many threads share one context: allocations, copies, launches, events, stream-ordered memory
 * and lookups from all of them at once leave consistent accounting (free == total at the end). */
#include <pthread.h>
#include <string.h>

#include "check.h"

#define THREADS    4
#define ITERATIONS 200

static CUcontext ctx;
static CUfunction kernel;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    CHECK(cuCtxSetCurrent(ctx));
    CUstream s;
    CUevent e;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    unsigned char in[512], out[512];
    for (int i = 0; i < ITERATIONS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t size = 512 + (seed >> 8) % (1u << 20);
        CUdeviceptr p, q;
        CHECK(cuMemAlloc(&p, size));
        CHECK(cuMemAllocAsync(&q, size, s));
        memset(in, (int)(seed & 0xff), sizeof(in));
        CHECK(cuMemcpyHtoDAsync(p + size - sizeof(in), in, sizeof(in), s));
        CHECK(cuMemcpyDtoDAsync(q, p + size - sizeof(in), sizeof(in), s));
        CHECK(cuLaunchKernel(kernel, 1, 1, 1, 64, 1, 1, 0, s, NULL, NULL));
        CHECK(cuMemcpyDtoHAsync(out, q, sizeof(out), s));
        CHECK(cuEventRecord(e, s));
        CHECK(cuEventSynchronize(e));
        CHECK_TRUE(memcmp(in, out, sizeof(in)) == 0);
        CHECK(cuMemFreeAsync(q, s));
        CHECK(cuMemFree(p));
        void *fn;
        CUdriverProcAddressQueryResult st;
        CHECK(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &st));
    }
    CHECK(cuStreamSynchronize(s));
    CHECK(cuEventDestroy(e));
    CHECK(cuStreamDestroy(s));
    return NULL;
}

int main(void)
{
    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUmodule m;
    CHECK(cuModuleLoadData(&m, "gpusim-module 1\nkernel k 100us\n"));
    CHECK(cuModuleGetFunction(&kernel, m, "k"));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK(cuCtxSynchronize());
    size_t f = 0, total = 0;
    CHECK(cuMemGetInfo(&f, &total));
    CHECK_EQ(f, total - H100_CONTEXT);
    CHECK(cuModuleUnload(m));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
