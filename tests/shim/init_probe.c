/* SPDX-License-Identifier: Apache-2.0 */
/* Prints what cuInit returns ("cuInit=N") and, when it succeeds, the lease's view of memory. */
#include <cuda.h>
#include <stdio.h>

int main(void)
{
    CUresult result = cuInit(0);
    printf("cuInit=%d\n", (int)result);
    if (result != CUDA_SUCCESS)
        return 0;
    CUdevice dev;
    CUcontext ctx;
    size_t free_bytes = 0, total = 0;
    if (cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0 || cuMemGetInfo(&free_bytes, &total) != 0)
        return 1;
    printf("total=%zu free=%zu\n", total, free_bytes);
    return 0;
}
