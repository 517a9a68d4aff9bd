/* SPDX-License-Identifier: Apache-2.0 */
/* A job that holds device memory with data in it (the lease suspend tests, issue 40): allocates
 * GIB GiB on device 0 (cuMemAlloc, one allocation per GiB), writes a distinct page at the start,
 * the middle and the end of each, and prints "sum HEX": a checksum of those pages and of an
 * unwritten one per allocation, read back through cuMemcpyDtoH. On SIGUSR1 it prints the
 * checksum again; on SIGUSR2 it launches a kernel of 5 s and prints "launched"; with "once" it
 * exits after the first checksum. Usage: sumhold GIB [once] */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define PAGE  4096
#define MAX_N 128

static volatile sig_atomic_t asked, launch;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        asked = 1;
    else
        launch = 1;
}

static const char image[] = "gpusim-module 1\nkernel long 5s\n";

static size_t offset(int k)
{
    static const size_t at[] = {0, GIB / 2, GIB - PAGE, GIB / 4}; /* the last is never written */
    return at[k];
}

static uint64_t checksum(const CUdeviceptr *p, int n)
{
    uint64_t h = 14695981039346656037ull;
    unsigned char page[PAGE];
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 4; k++) {
            CHECK(cuMemcpyDtoH(page, p[i] + offset(k), PAGE));
            for (size_t j = 0; j < PAGE; j++)
                h = (h ^ page[j]) * 1099511628211ull;
        }
    }
    return h;
}

static void fill(CUdeviceptr *p, int n)
{
    unsigned char page[PAGE];
    for (int i = 0; i < n; i++) {
        CHECK(cuMemAlloc(&p[i], GIB));
        for (int k = 0; k < 3; k++) {
            for (size_t j = 0; j < PAGE; j++)
                page[j] = (unsigned char)(i * 131 + k * 17 + j * 7 + 1);
            CHECK(cuMemcpyHtoD(p[i] + offset(k), page, PAGE));
        }
    }
}

int main(int argc, char **argv)
{
    int n = argc >= 2 ? atoi(argv[1]) : 0;
    if (n <= 0 || n > MAX_N || (argc == 3 && strcmp(argv[2], "once") != 0) || argc > 3)
        return 2;
    signal(SIGUSR1, on_signal);
    signal(SIGUSR2, on_signal);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction longk;
    CUdeviceptr p[MAX_N];
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&longk, mod, "long"));
    fill(p, n);
    printf("sum %llx\n", (unsigned long long)checksum(p, n));
    fflush(stdout);
    while (argc == 2) {
        pause();
        if (launch) {
            launch = 0;
            CHECK(cuLaunchKernel(longk, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
            printf("launched\n");
            fflush(stdout);
        }
        if (asked) {
            asked = 0;
            printf("sum %llx\n", (unsigned long long)checksum(p, n));
            fflush(stdout);
        }
    }
    return 0;
}
