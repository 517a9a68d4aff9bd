/* SPDX-License-Identifier: Apache-2.0 */
/* A CUDA driver-API process for the footprint and watchdog tests: it creates a context and holds
 * device memory until it is killed, with or without the shim.
 *
 *   gs-gpu-hog hold GIB   holds GIB GiB (0: only its context), prints "held BYTES PID", waits
 *   gs-gpu-hog pair       two processes, each: a context, then (once both have one) allocates
 *                         what cuMemGetInfo says is free; prints "pair PID1 HELD1 PID2 HELD2"
 *                         and waits; the children die with it
 *
 * Exit status: 2 usage, 3 a CUDA error (printed). */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define GIB (1ull << 30)

static void check(CUresult rc, const char *what)
{
    if (rc == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    fprintf(stderr, "gs-gpu-hog: %s failed: %s\n", what, name != NULL ? name : "?");
    exit(3);
}

static void context(void)
{
    CUdevice dev;
    CUcontext ctx;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

/* Allocates what cuMemGetInfo says is free, again while another process takes some first.
 * Returns the bytes held. */
static unsigned long long fill(void)
{
    unsigned long long held = 0;
    for (;;) {
        size_t free_bytes = 0, total = 0;
        check(cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
        CUdeviceptr p;
        CUresult rc = free_bytes > 0 ? cuMemAlloc(&p, free_bytes) : CUDA_ERROR_OUT_OF_MEMORY;
        if (rc == CUDA_SUCCESS)
            held += free_bytes;
        else if (rc != CUDA_ERROR_OUT_OF_MEMORY)
            check(rc, "cuMemAlloc");
        if (rc != CUDA_SUCCESS || free_bytes == 0)
            return held;
    }
}

static void wait_forever(void)
{
    for (;;)
        pause();
}

/* One member of the pair: a context, 'r' on ready, EOF on go, fill, "PID HELD" on report. */
static void member(int ready, int go, int report)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    context();
    char c = 'r';
    if (write(ready, &c, 1) != 1)
        exit(3);
    while (read(go, &c, 1) > 0)
        ;
    char line[64];
    int n = snprintf(line, sizeof(line), "%d %llu\n", (int)getpid(), fill());
    if (write(report, line, (size_t)n) != n)
        exit(3);
    wait_forever();
}

static int pair(void)
{
    int ready[2], go[2], report[2];
    if (pipe(ready) != 0 || pipe(go) != 0 || pipe(report) != 0)
        return 3;
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 3;
        if (pid == 0) {
            close(go[1]);
            member(ready[1], go[0], report[1]);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(report[1]);
    char c;
    for (int i = 0; i < 2; i++) {
        if (read(ready[0], &c, 1) != 1)
            return 3;
    }
    close(go[1]); /* both have their context: allocate */
    FILE *f = fdopen(report[0], "r");
    int pid[2];
    unsigned long long held[2];
    for (int i = 0; i < 2; i++) {
        if (f == NULL || fscanf(f, "%d %llu", &pid[i], &held[i]) != 2)
            return 3;
    }
    printf("pair %d %llu %d %llu\n", pid[0], held[0], pid[1], held[1]);
    fflush(stdout);
    wait_forever();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hold") == 0) {
        unsigned long long bytes = strtoull(argv[2], NULL, 10) * GIB;
        context();
        CUdeviceptr p;
        if (bytes > 0)
            check(cuMemAlloc(&p, bytes), "cuMemAlloc");
        printf("held %llu %d\n", bytes, (int)getpid());
        fflush(stdout);
        wait_forever();
    }
    if (argc == 2 && strcmp(argv[1], "pair") == 0)
        return pair();
    fprintf(stderr, "usage: gs-gpu-hog hold GIB | gs-gpu-hog pair\n");
    return 2;
}
