/* SPDX-License-Identifier: Apache-2.0 */
/* Prints "<free> <total>" of device 0 as cuMemGetInfo reports them, in bytes. */
#include "check.h"

int main(void)
{
    CHECK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    size_t free_bytes = 0, total = 0;
    CHECK(cuMemGetInfo(&free_bytes, &total));
    printf("%zu %zu\n", free_bytes, total);
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
