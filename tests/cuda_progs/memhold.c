/* SPDX-License-Identifier: Apache-2.0 */
/* Holds device memory until killed: allocates the GiB given as argument on device 0, prints
 * "held <bytes> <child pid>" and waits. With "fork" as second argument it first forks a child
 * that never calls CUDA and waits too (its pid is printed, else 0). Used by the multi-process
 * tests (the holder is SIGKILLed). */
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char **argv)
{
    if (argc != 2 && (argc != 3 || strcmp(argv[2], "fork") != 0))
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
    pid_t child = 0;
    if (argc == 3) {
        child = fork();
        CHECK_TRUE(child >= 0);
        if (child == 0) {
            for (;;)
                pause();
        }
    }
    printf("held %llu %d\n", gib * GIB, (int)child);
    fflush(stdout);
    for (;;)
        pause();
}
