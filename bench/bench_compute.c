/* SPDX-License-Identifier: Apache-2.0 */
/* The launch hook's cost with compute control active, side by side with the uncontrolled hook,
 * on gpusim: ns per cuLaunchKernel of a kernel that takes no device time, bare (no shim), in a
 * process under the shim with a limit alone (a region of its own, no scheduler: the hook is two
 * predictable branches), in a gpushared lease without a share and in one with --compute 50
 * holding its GPU (both pass the launch gate). Method: ROUNDS rounds of fresh processes, the four
 * kinds one after another in each; each times LAUNCHES launches after a warm-up in WINDOWS windows
 * (CLOCK_MONOTONIC) and reports the median window (on a loaded machine a preempted window says
 * nothing of the hook); the figures are the medians over the rounds, and each added cost the
 * median of the differences within a round. With GS_BENCH_SHIM_BEFORE (another build's
 * libgpushare.so) the three shim kinds run with it too, in the same rounds. usage: bench_compute
 * (env: GS_BENCH_SHIM = the shim, GS_BENCH_GPUSHARE = the gpushare CLI of a running gpushared,
 * GPUSHARE_SOCKET its socket; bench/compute.sh sets them) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS    15
#define LAUNCHES  500000
#define WINDOWS   40 /* a process's figure: the median of its windows (a preempted one is out) */
#define TARGET_NS 100.0

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), compare);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* In the worker: ns per launch. */
static double time_launches(void)
{
    static const char image[] = "gpusim-module 1\nkernel noop 0us\n";
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction fn;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0 || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        cuCtxSetCurrent(ctx) != 0 || cuModuleLoadData(&module, image) != 0 ||
        cuModuleGetFunction(&fn, module, "noop") != 0)
        return -1;
    for (int i = 0; i < 20000; i++)
        cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    double window[WINDOWS];
    for (int w = 0; w < WINDOWS; w++) {
        double t0 = now_ns();
        for (int i = 0; i < LAUNCHES / WINDOWS; i++)
            cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
        window[w] = (now_ns() - t0) / (LAUNCHES / WINDOWS);
    }
    cuCtxSynchronize();
    return median(window, WINDOWS);
}

enum { BARE, REGION, LEASE, SHARE, KINDS_AFTER, KINDS = 2 * KINDS_AFTER - 1 };

/* Runs one worker process of kind (KINDS_AFTER and on: REGION, LEASE, SHARE with
 * GS_BENCH_SHIM_BEFORE); returns its ns per launch, or -1. */
static double run_worker(const char *self, int kind)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        const char *cli = getenv("GS_BENCH_GPUSHARE");
        const char *shim = getenv("GS_BENCH_SHIM");
        if (kind >= KINDS_AFTER) {
            shim = getenv("GS_BENCH_SHIM_BEFORE");
            setenv("GPUSHARE_SHIM", shim, 1); /* what gpushare run preloads */
            kind -= KINDS_AFTER - 1;
        }
        if (kind == SHARE)
            execl(cli, cli, "run", "--gpu-memory", "1G", "--compute", "50", "--", self, "worker",
                  (char *)NULL);
        if (kind == LEASE)
            execl(cli, cli, "run", "--gpu-memory", "1G", "--", self, "worker", (char *)NULL);
        if (kind == REGION) {
            setenv("LD_PRELOAD", shim, 1);
            setenv("GPUSHARE_MEMORY_LIMIT", "1G", 1);
        }
        execl(self, self, "worker", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[64] = "";
    FILE *f = fdopen(fds[0], "r");
    if (f == NULL || fgets(line, sizeof(line), f) == NULL)
        line[0] = '\0';
    if (f != NULL)
        fclose(f);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? atof(line) : -1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "worker") == 0) {
        double ns = time_launches();
        printf("%.2f\n", ns);
        return ns < 0;
    }
    if (getenv("GS_BENCH_SHIM") == NULL || getenv("GS_BENCH_GPUSHARE") == NULL) {
        fprintf(stderr, "bench_compute: set GS_BENCH_SHIM and GS_BENCH_GPUSHARE (run "
                        "bench/compute.sh)\n");
        return 2;
    }
    static const char *const names[KINDS] = {"bare (no shim)",
                                             "shim, a limit alone",
                                             "shim in a gpushared lease, no share",
                                             "shim in a lease with --compute 50 (gate open)",
                                             "before: a limit alone",
                                             "before: a lease, no share",
                                             "before: a lease with --compute 50"};
    int kinds = getenv("GS_BENCH_SHIM_BEFORE") != NULL ? KINDS : KINDS_AFTER;
    double ns[KINDS][ROUNDS], added[KINDS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < kinds; k++) {
            ns[k][r] = run_worker(argv[0], k);
            if (ns[k][r] < 0) {
                fprintf(stderr, "bench_compute: a worker failed (%s)\n", names[k]);
                return 1;
            }
        }
        for (int k = 0; k < kinds; k++)
            added[k][r] = ns[k][r] - ns[BARE][r];
    }
    printf("launch hook, %d launches of a kernel without device time per process, %d rounds of "
           "processes (medians; added: over bare, within a round):\n",
           LAUNCHES, ROUNDS);
    double over_region[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        over_region[r] = ns[SHARE][r] - ns[REGION][r];
    for (int k = 0; k < kinds; k++)
        printf("  %-46s %8.1f ns   %+6.1f ns\n", names[k], median(ns[k], ROUNDS),
               median(added[k], ROUNDS));
    double add = median(over_region, ROUNDS);
    printf("  %-46s %8.1f ns   target <= %.0f ns: %s\n", "added by compute control (share - limit)",
           add, TARGET_NS, add <= TARGET_NS ? "met" : "NOT met");
    return 0;
}
