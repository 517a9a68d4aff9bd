/* Holds device memory until killed: allocates the GiB given as argument on device 0, prints
 * "held <bytes>" and waits. Used by the multi-process tests (the holder is SIGKILLed). */
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    unsigned long long gib = strtoull(argv[1], NULL, 10);
    CHECK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, gib * GIB));
    printf("held %llu\n", gib * GIB);
    fflush(stdout);
    for (;;)
        pause();
}
