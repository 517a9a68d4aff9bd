/* SPDX-License-Identifier: Apache-2.0 */
/* Physical exhaustion: device 0 holds exactly its model's memory as CUDA shows it (the argument:
 * h100 or a100, see check.h), less the context's own; one byte more is CUDA_ERROR_OUT_OF_MEMORY
 * for every allocation family, and freeing makes room again. */
#include <string.h>

#include "check.h"

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    CHECK(cuMemGetInfo(&f, &t));
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "h100") != 0 && strcmp(argv[1], "a100") != 0))
        return 2;
    int h100 = strcmp(argv[1], "h100") == 0;
    unsigned long long expected = h100 ? H100_TOTAL : A100_TOTAL;
    unsigned long long context = h100 ? H100_CONTEXT : A100_CONTEXT;
    CHECK(cuInit(0));
    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
    size_t total = 0;
    CHECK(cuDeviceTotalMem(&total, 0));
    CHECK_EQ(total, expected);
    size_t avail = total - context;
    CHECK_EQ(free_now(), avail);
    CUdeviceptr p;
    CHECK_RESULT(cuMemAlloc(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr chunk[16];
    unsigned long long n = avail / (8 * GIB);
    for (unsigned long long i = 0; i < n; i++)
        CHECK(cuMemAlloc(&chunk[i], 8 * GIB));
    CHECK_EQ(free_now(), avail - n * 8 * GIB);
    size_t rest = avail - n * 8 * GIB;
    CUdeviceptr last = 0;
    if (rest > 0)
        CHECK(cuMemAlloc(&last, rest));
    CHECK_EQ(free_now(), 0);
    /* Every family now fails with OOM. */
    size_t pitch;
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK_RESULT(cuMemAlloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_RESULT(cuMemAllocPitch(&p, &pitch, 64, 2, 4), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_RESULT(cuMemAllocManaged(&p, 1, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_RESULT(cuMemAllocAsync(&p, 1, s), CUDA_ERROR_OUT_OF_MEMORY);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CHECK_RESULT(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CUDA_ARRAY_DESCRIPTOR d = {
        .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    CHECK_RESULT(cuArrayCreate(&a, &d), CUDA_ERROR_OUT_OF_MEMORY);
    /* Host memory is not device memory. */
    void *host;
    CHECK(cuMemAllocHost(&host, MIB));
    CHECK(cuMemFreeHost(host));
    /* Freeing 8 GiB lets exactly 8 GiB in again. */
    CHECK(cuMemFree(chunk[0]));
    CHECK_EQ(free_now(), 8 * GIB);
    CHECK_RESULT(cuMemAlloc(&p, 8 * GIB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(cuMemAlloc(&chunk[0], 8 * GIB));
    for (unsigned long long i = 0; i < n; i++)
        CHECK(cuMemFree(chunk[i]));
    if (last != 0)
        CHECK(cuMemFree(last));
    CHECK_EQ(free_now(), avail);
    CHECK(cuStreamDestroy(s));
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
