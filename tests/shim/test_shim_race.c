/* SPDX-License-Identifier: Apache-2.0 */
/* 64 processes share one lease region with a limit of 2 GiB beside their contexts' own memory
 * and allocate and free random sizes (1-256 MiB) through the shim for several seconds: the
 * region's use never exceeds the limit, and at the end equals the sum of the allocations still
 * live and the contexts. */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/region.h"

#define MIB      (UINT64_C(1) << 20)
#define PROCS    64
#define CONTEXT  UINT64_C(543162368) /* a context's own memory on an H100-80GB */
#define LIMIT    ((UINT64_C(2) << 30) + PROCS * CONTEXT)
#define HELD_MAX 8
#define SECONDS  3

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A member of the lease: creates its context, says so on ready_fd, waits for the start (EOF on
 * go_fd: every member's context exists), churns for SECONDS, reports what it holds, waits for
 * EOF on hold_fd. */
static int child(int report_fd, int hold_fd, int ready_fd, int go_fd)
{
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0)
        return 10;
    char c;
    if (write(ready_fd, "r", 1) != 1)
        return 14;
    while (read(go_fd, &c, 1) > 0)
        ;
    double deadline = now_s() + SECONDS;
    unsigned seed = (unsigned)getpid();
    CUdeviceptr ptr[HELD_MAX] = {0};
    uint64_t size[HELD_MAX] = {0};
    unsigned long ops = 0, ooms = 0;
    while (now_s() < deadline) {
        int k = rand_r(&seed) % HELD_MAX;
        if (ptr[k] != 0) {
            if (cuMemFree(ptr[k]) != CUDA_SUCCESS)
                return 11;
            ptr[k] = 0;
        } else {
            size[k] = (uint64_t)(1 + rand_r(&seed) % 256) * MIB;
            CUresult r = cuMemAlloc(&ptr[k], size[k]);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                ptr[k] = 0;
                ooms++;
            } else if (r != CUDA_SUCCESS) {
                return 12;
            }
        }
        ops++;
    }
    uint64_t held = 0;
    for (int k = 0; k < HELD_MAX; k++)
        held += ptr[k] != 0 ? size[k] : 0;
    char line[96];
    int n = snprintf(line, sizeof(line), "%llu %lu %lu\n", (unsigned long long)held, ops, ooms);
    if (write(report_fd, line, (size_t)n) != n)
        return 13;
    while (read(hold_fd, &c, 1) > 0)
        ;
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "test_shim_race: FAIL: %s\n", what);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "--child") == 0)
        return child(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    char region_path[4200];
    snprintf(region_path, sizeof(region_path), "%s/lease.region", getenv("GS_TEST_TMP"));
    setenv("GPUSHARE_REGION", region_path, 1);
    char limit[32];
    snprintf(limit, sizeof(limit), "%llu", (unsigned long long)LIMIT);
    setenv("GPUSHARE_MEMORY_LIMIT", limit, 1);
    int report[2], hold[2], ready[2], go[2];
    if (pipe(report) != 0 || pipe(hold) != 0 || pipe(ready) != 0 || pipe(go) != 0)
        return fail("pipe");
    char report_s[16], hold_s[16], ready_s[16], go_s[16];
    snprintf(report_s, sizeof(report_s), "%d", report[1]);
    snprintf(hold_s, sizeof(hold_s), "%d", hold[0]);
    snprintf(ready_s, sizeof(ready_s), "%d", ready[1]);
    snprintf(go_s, sizeof(go_s), "%d", go[0]);
    pid_t kids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            close(hold[1]);
            close(go[1]);
            execl(argv[0], argv[0], "--child", report_s, hold_s, ready_s, go_s, (char *)NULL);
            _exit(127);
        }
    }
    close(report[1]);
    close(hold[0]);
    close(ready[1]);
    close(go[0]);
    /* Every member's context first: they all fit in the lease, then they churn together. */
    char c;
    int n_ready = 0;
    while (n_ready < PROCS && read(ready[0], &c, 1) == 1)
        n_ready++;
    close(go[1]);
    double deadline = now_s() + SECONDS;
    if (n_ready < PROCS)
        return fail("a member could not create its context");
    /* Watch the shared counter while they churn. */
    gs_region_t *region = NULL;
    uint64_t max_seen = 0;
    long samples = 0;
    while (now_s() < deadline + 0.5) {
        if (region == NULL && gs_region_open(region_path, &region) != 0)
            region = NULL;
        if (region != NULL) {
            uint64_t used = gs_region_used(region, 0);
            max_seen = used > max_seen ? used : max_seen;
            samples++;
        }
    }
    FILE *f = fdopen(report[0], "r");
    uint64_t held_total = 0;
    unsigned long ops_total = 0, ooms_total = 0;
    int reports = 0;
    unsigned long long held;
    unsigned long ops, ooms;
    while (reports < PROCS && fscanf(f, "%llu %lu %lu", &held, &ops, &ooms) == 3) {
        held_total += held;
        ops_total += ops;
        ooms_total += ooms;
        reports++;
    }
    if (region == NULL || reports != PROCS)
        return fail("not every process reported");
    gs_region_stats_t stats;
    if (gs_region_snapshot(region, &stats) != 0)
        return fail("snapshot");
    printf("%d processes, %lu allocations/frees, %lu refused at the limit, %ld samples, max "
           "used %llu MiB, peak %llu MiB, limit %llu MiB, held at end %llu MiB\n",
           PROCS, ops_total, ooms_total, samples, (unsigned long long)(max_seen / MIB),
           (unsigned long long)(stats.peak[0] / MIB), (unsigned long long)(LIMIT / MIB),
           (unsigned long long)(held_total / MIB));
    int bad = 0;
    if (max_seen > LIMIT || stats.peak[0] > LIMIT)
        bad = fail("the limit was exceeded");
    if (stats.used[0] != held_total + PROCS * CONTEXT)
        bad = fail("used differs from the sum of live allocations and contexts");
    if (ooms_total == 0)
        bad = fail("the limit was never reached: the test did not contend");
    close(hold[1]);
    for (int i = 0; i < PROCS; i++) {
        int status;
        waitpid(kids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = fail("a member failed");
    }
    if (gs_region_used(region, 0) != 0)
        bad = fail("charge left after every member exited");
    gs_region_close(region);
    return bad;
}
