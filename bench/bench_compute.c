/* SPDX-License-Identifier: Apache-2.0 */
/* The launch hook's cost with compute control active, side by side with the uncontrolled hook,
 * on gpusim: ns per cuLaunchKernel of a kernel that takes no device time, in a process under the
 * shim without a share (the hook is two predictable branches) and in one of a gpushared lease
 * with --compute 50 holding its GPU (the hook passes the launch gate: two atomic operations and a
 * load). Method: PAIRS pairs of fresh processes, alternately uncontrolled and controlled; each
 * times LAUNCHES launches after a warm-up (CLOCK_MONOTONIC); the figures are the medians over the
 * pairs, and the added cost the median of the pairwise differences.
 * usage: bench_compute (env: GS_BENCH_SHIM = the shim, GS_BENCH_GPUSHARE = the gpushare CLI of a
 * running gpushared, GPUSHARE_SOCKET its socket; bench/compute.sh sets them) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAIRS     15
#define LAUNCHES  500000
#define TARGET_NS 100.0

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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
    double t0 = now_ns();
    for (int i = 0; i < LAUNCHES; i++)
        cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    double t1 = now_ns();
    cuCtxSynchronize();
    return (t1 - t0) / LAUNCHES;
}

/* Runs one worker process (controlled or not); returns its ns per launch, or -1. */
static double run_worker(const char *self, int controlled)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        const char *cli = getenv("GS_BENCH_GPUSHARE");
        if (controlled) {
            execl(cli, cli, "run", "--gpu-memory", "1G", "--compute", "50", "--", self, "worker",
                  (char *)NULL);
        } else {
            setenv("LD_PRELOAD", getenv("GS_BENCH_SHIM"), 1);
            setenv("GPUSHARE_MEMORY_LIMIT", "1G", 1);
            execl(self, self, "worker", (char *)NULL);
        }
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
    double plain[PAIRS], gated[PAIRS], added[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        plain[i] = run_worker(argv[0], 0);
        gated[i] = run_worker(argv[0], 1);
        if (plain[i] < 0 || gated[i] < 0) {
            fprintf(stderr, "bench_compute: a worker failed\n");
            return 1;
        }
        added[i] = gated[i] - plain[i];
    }
    double add = median(added, PAIRS);
    printf("launch hook, %d launches of a kernel without device time per process, %d pairs of "
           "processes (medians):\n",
           LAUNCHES, PAIRS);
    printf("  %-44s %8.1f ns\n", "cuLaunchKernel, shim without a share", median(plain, PAIRS));
    printf("  %-44s %8.1f ns\n", "cuLaunchKernel, shim with a share (gate open)",
           median(gated, PAIRS));
    printf("  %-44s %8.1f ns   target <= %.0f ns: %s\n", "added by compute control", add, TARGET_NS,
           add <= TARGET_NS ? "met" : "NOT met");
    return 0;
}
