/* SPDX-License-Identifier: Apache-2.0 */
/* What an MPS client sees at its pinned device memory limit (bench/gpu/node.sh): with
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT set, it allocates GIB GiB, then MORE GiB, then 64 MiB, and
 * prints each call's result and cuMemGetInfo after each — whether going past the limit is an
 * out-of-memory error, and whether the context is still usable afterwards.
 *
 *   gs-mps-probe GIB MORE     prints "step NAME RESULT free FREE total TOTAL" lines
 * Exit status: 0 when every step ran (whatever their results), 2 usage, 3 no context. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static const char *name_of(CUresult rc)
{
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    return name != NULL ? name : "?";
}

static void step(const char *what, size_t bytes)
{
    CUdeviceptr p = 0;
    CUresult rc = cuMemAlloc(&p, bytes);
    size_t free_b = 0, total = 0;
    CUresult info = cuMemGetInfo(&free_b, &total);
    printf("step %s(%zu) %s free %zu total %zu (cuMemGetInfo %s)\n", what, bytes, name_of(rc),
           free_b, total, name_of(info));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gs-mps-probe GIB MORE\n");
        return 2;
    }
    size_t gib = strtoull(argv[1], NULL, 10) << 30, more = strtoull(argv[2], NULL, 10) << 30;
    CUdevice dev;
    CUcontext ctx;
    CUresult rc = cuInit(0);
    if (rc == CUDA_SUCCESS)
        rc = cuDeviceGet(&dev, 0);
    if (rc == CUDA_SUCCESS)
        rc = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (rc == CUDA_SUCCESS)
        rc = cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "gs-mps-probe: no context: %s\n", name_of(rc));
        return 3;
    }
    step("first", gib);
    step("more", more);
    step("small", 64u << 20);
    return 0;
}
