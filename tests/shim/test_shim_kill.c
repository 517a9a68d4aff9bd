/* SPDX-License-Identifier: Apache-2.0 */
/* SIGKILL of a lease member holding 512 MiB, at random moments: within 1 s its charge (its
 * context's own memory included) is back (taken back by the other members, no daemon involved),
 * the others go on, nobody blocks. */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/region.h"

#define MIB       (UINT64_C(1) << 20)
#define SURVIVORS 4
#define HOLD      (100 * MIB)
#define VICTIM    (512 * MIB)
#define CONTEXT   UINT64_C(543162368) /* a context's own memory on an H100-80GB */
#define ROUNDS    6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Holds base bytes, then allocates and frees 1 MiB forever, counting rounds in *progress. */
static int member(uint64_t base, volatile unsigned long *progress)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr held, p;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0 || cuMemAlloc(&held, base) != 0)
        _exit(10);
    for (;;) {
        if (cuMemAlloc(&p, MIB) == CUDA_SUCCESS)
            cuMemFree(p);
        __atomic_fetch_add(progress, 1, __ATOMIC_RELAXED);
        usleep(200);
    }
}

static int fail(const char *what)
{
    fprintf(stderr, "test_shim_kill: FAIL: %s\n", what);
    return 1;
}

static uint64_t wait_used_at_least(gs_region_t *r, uint64_t bytes, double timeout)
{
    double end = now_s() + timeout;
    while (gs_region_used(r, 0) < bytes && now_s() < end)
        usleep(1000);
    return gs_region_used(r, 0);
}

int main(void)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/lease.region", getenv("GS_TEST_TMP"));
    setenv("GPUSHARE_REGION", path, 1);
    setenv("GPUSHARE_MEMORY_LIMIT", "6G", 1); /* 5 contexts, 4 holds and the victim's */
    volatile unsigned long *progress =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (progress == MAP_FAILED)
        return fail("mmap");
    pid_t survivors[SURVIVORS];
    for (int i = 0; i < SURVIVORS; i++) {
        survivors[i] = fork();
        if (survivors[i] == 0)
            return member(HOLD, &progress[i]);
    }
    gs_region_t *region = NULL;
    for (int i = 0; i < 500 && gs_region_open(path, &region) != 0; i++)
        usleep(10000);
    if (region == NULL)
        return fail("the region never appeared");
    const uint64_t base = SURVIVORS * (CONTEXT + HOLD);
    unsigned seed = 42;
    int bad = 0;
    for (int round = 0; round < ROUNDS && !bad; round++) {
        pid_t victim = fork();
        if (victim == 0)
            return member(VICTIM, &progress[SURVIVORS]);
        if (wait_used_at_least(region, base + CONTEXT + VICTIM, 10.0) < base + CONTEXT + VICTIM) {
            bad = fail("the victim never got its memory");
            break;
        }
        usleep((useconds_t)(rand_r(&seed) % 200000));
        unsigned long before[SURVIVORS];
        for (int i = 0; i < SURVIVORS; i++)
            before[i] = progress[i];
        double killed_at = now_s();
        kill(victim, SIGKILL);
        waitpid(victim, NULL, 0);
        /* Back to the survivors' hold plus at most their in-flight 1 MiB each. */
        while (gs_region_used(region, 0) > base + SURVIVORS * MIB && now_s() - killed_at < 3.0)
            usleep(1000);
        double took = now_s() - killed_at;
        printf("round %d: charge back %.0f ms after SIGKILL\n", round, took * 1000);
        if (took > 0.25) /* README: "reclaimed within 250 ms by the lease's other processes" */
            bad = fail("the dead member's charge was not back within 250 ms");
        usleep(50000);
        for (int i = 0; i < SURVIVORS; i++) {
            if (progress[i] == before[i])
                bad = fail("a surviving member stopped making progress");
        }
    }
    for (int i = 0; i < SURVIVORS; i++) {
        kill(survivors[i], SIGKILL);
        waitpid(survivors[i], NULL, 0);
    }
    gs_region_close(region);
    return bad;
}
