/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of libgpushare.so's cost on gpusim, side by side with the bare driver in one run:
 * per-call cost of cuLaunchKernel and of cuMemAlloc+cuMemFree (1 and 8 processes), the first
 * context (cuInit + cuCtxCreate: its latency and CPU time, 1, 16 and 64 processes released
 * together), and cuInit latency percentiles with 1, 16, 64 and 256 processes from a barrier.
 * With GS_BENCH_SHIM_BEFORE set (another build's libgpushare.so) the first context is measured
 * with it too, in the same rounds, so that a change is seen side by side with what it replaces.
 *
 * The lease's region is created before the workers start (as the daemon does) on tmpfs.
 * cuInit is measured twice: with default scheduling, where with more processes than CPUs the tail
 * is the run queue's (a worker preempted inside cuInit waits a time slice), and with each worker
 * SCHED_FIFO (root only), where it is cuInit's own work and contention.
 * Method: every case runs in fresh processes, alternately without and with the shim, REPEATS
 * (cuInit: enough runs for 64 processes per side, at least REPEATS)
 * times; a figure is the median over the repeats (per-call costs: total time / calls in one
 * process, median over processes and repeats; cuInit: percentiles over all processes of one
 * repeat, then the median of each percentile over repeats). Timings use CLOCK_MONOTONIC. */
#include <cuda.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/region.h"

#define REPEATS       5
#define PER_CALL_RUNS 15
#define INIT_RUNS_MAX 64
#define LAUNCHES      200000
#define ALLOCS        100000
#define MAX_WORKERS   256
#define CTX_SIDES     3 /* bare, the shim, GS_BENCH_SHIM_BEFORE */

typedef struct shared {
    int go; /* the barrier: 0 until released */
    int ready;
    double value[MAX_WORKERS]; /* one figure per worker */
    double cpu[MAX_WORKERS];   /* cuInit: CPU time the worker thread spent in it */
} shared_t;

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int context_up(void)
{
    CUdevice dev;
    CUcontext ctx;
    return cuInit(0) == 0 && cuDeviceGet(&dev, 0) == 0 &&
                   cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && cuCtxSetCurrent(ctx) == 0
               ? 0
               : -1;
}

static void wait_barrier(shared_t *sh)
{
    __atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, &sh->go, FUTEX_WAIT, 0, NULL, NULL, 0);
}

/* Worker: ns per cuLaunchKernel of a zero-cost kernel. */
static double run_launch(void)
{
    static const char image[] = "gpusim-module 1\nkernel noop 0us\n";
    CUmodule module;
    CUfunction fn;
    if (context_up() != 0 || cuModuleLoadData(&module, image) != 0 ||
        cuModuleGetFunction(&fn, module, "noop") != 0)
        return -1;
    for (int i = 0; i < 1000; i++)
        cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    double t0 = now_ns();
    for (int i = 0; i < LAUNCHES; i++)
        cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    double t1 = now_ns();
    cuCtxSynchronize();
    return (t1 - t0) / LAUNCHES;
}

/* Worker: ns per cuMemAlloc(4 KiB) + cuMemFree pair, after the barrier. */
/* Worker: ns per cuMemAlloc(4 KiB) + cuMemFree pair, after the barrier; also the CPU time per
 * pair (with more processes than CPUs, wall time also counts waiting for a CPU). */
static double run_alloc(shared_t *sh, int index)
{
    CUdeviceptr p;
    if (context_up() != 0)
        return -1;
    for (int i = 0; i < 1000; i++) {
        cuMemAlloc(&p, 4096);
        cuMemFree(p);
    }
    wait_barrier(sh);
    double c0 = thread_cpu_ns();
    double t0 = now_ns();
    for (int i = 0; i < ALLOCS; i++) {
        if (cuMemAlloc(&p, 4096) != 0 || cuMemFree(p) != 0)
            return -1;
    }
    double wall = (now_ns() - t0) / ALLOCS;
    sh->cpu[index] = (thread_cpu_ns() - c0) / ALLOCS;
    return wall;
}

/* Worker: cuInit latency in ns, released with the others from the barrier; also the CPU time
 * its thread spent in cuInit (which waiting for a CPU does not inflate). */
/* In the real-time variant a worker runs its cuInit without being preempted by the others
 * (SCHED_FIFO), so the latency is cuInit's own, contention included, not the run queue's. A
 * CPU-time limit guards the machine against a runaway real-time process. */
static void maybe_real_time(void)
{
    if (getenv("GS_BENCH_FIFO") == NULL)
        return;
    struct rlimit cap = {.rlim_cur = 500000, .rlim_max = 500000}; /* us of real-time CPU */
    struct sched_param param = {.sched_priority = 1};
    if (setrlimit(RLIMIT_RTTIME, &cap) != 0 || sched_setscheduler(0, SCHED_FIFO, &param) != 0)
        _exit(3);
}

static double run_init(shared_t *sh, int index)
{
    maybe_real_time();
    wait_barrier(sh);
    double c0 = thread_cpu_ns();
    double t0 = now_ns();
    CUresult result = cuInit(0);
    double t1 = now_ns();
    sh->cpu[index] = thread_cpu_ns() - c0;
    return result == CUDA_SUCCESS ? t1 - t0 : -1;
}

/* Worker: cuInit + cuCtxCreate latency in ns (the first context of a process), released with
 * the others from the barrier; also the CPU time its thread spent. */
static double run_first_context(shared_t *sh, int index)
{
    CUdevice dev;
    CUcontext ctx;
    maybe_real_time();
    wait_barrier(sh);
    double c0 = thread_cpu_ns();
    double t0 = now_ns();
    CUresult result = cuInit(0);
    if (result == CUDA_SUCCESS)
        result = cuDeviceGet(&dev, 0);
    if (result == CUDA_SUCCESS)
        result = cuCtxCreate(&ctx, NULL, 0, dev); /* cuCtxCreate_v4 at CUDA 13 */
    double t1 = now_ns();
    sh->cpu[index] = thread_cpu_ns() - c0;
    return result == CUDA_SUCCESS ? t1 - t0 : -1;
}

static int worker(const char *mode, const char *path, int index)
{
    int fd = open(path, O_RDWR);
    shared_t *sh = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd < 0 || sh == MAP_FAILED)
        return 1;
    double v = strcmp(mode, "launch") == 0  ? run_launch()
               : strcmp(mode, "alloc") == 0 ? run_alloc(sh, index)
               : strcmp(mode, "ctx") == 0   ? run_first_context(sh, index)
                                            : run_init(sh, index);
    sh->value[index] = v;
    return v < 0 ? 1 : 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(double), compare_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

/* Creates the lease's region up front, as gpushared does when it grants a lease, so that
 * cuInit measures joining a lease rather than making one. */
static int make_region(const char *path)
{
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    for (int d = 0; d < GS_MAX_DEVICES; d++)
        cfg.limit[d] = UINT64_C(64) << 30;
    gs_region_t *region = NULL;
    int result = gs_region_create(path, &cfg, 0600, &region);
    gs_region_close(region);
    return result;
}

/* Starts worker index of mode, bare (with_shim 0), with the shim (1) or with
 * GS_BENCH_SHIM_BEFORE (2), in the lease of region. */
static pid_t spawn(const char *self, const char *mode, const char *path, const char *region,
                   int with_shim, int index)
{
    char count[16];
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (with_shim) {
        setenv("LD_PRELOAD", getenv(with_shim == 2 ? "GS_BENCH_SHIM_BEFORE" : "GS_BENCH_SHIM"), 1);
        setenv("GPUSHARE_REGION", region, 1);
        setenv("GPUSHARE_MEMORY_LIMIT", "64G", 1);
    } else {
        unsetenv("LD_PRELOAD");
    }
    snprintf(count, sizeof(count), "%d", index);
    execl(self, self, "--worker", mode, path, count, (char *)NULL);
    _exit(127);
}

/* Mode "ctx-later": one process of the lease makes its first context before the n timed ones
 * (which run "ctx"): they are later processes of a lease, as in a job that starts many. */
static int earlier_process(const char *self, shared_t *sh, const char *path, const char *region,
                           int with_shim)
{
    int status;
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    pid_t pid = spawn(self, "ctx", path, region, with_shim, 0);
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    memset(sh, 0, sizeof(*sh));
    return 0;
}

/* Runs n workers of mode, bare (with_shim 0), with the shim (1) or with GS_BENCH_SHIM_BEFORE
 * (2); fills values[0..n) (and cpu[0..n) when cpu is not NULL). Returns 0 or -1. */
static int run_case(const char *self, const char *mode, int n, int with_shim, double *values,
                    double *cpu, const char *dir, int round)
{
    char path[512], region[512];
    snprintf(path, sizeof(path), "%s/shared", dir);
    snprintf(region, sizeof(region), "%s/lease-%s-%d-%d.region", dir, mode, n, round);
    if (with_shim && make_region(region) != 0)
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(shared_t)) != 0)
        return -1;
    shared_t *sh = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    int later = strcmp(mode, "ctx-later") == 0;
    if (later && earlier_process(self, sh, path, region, with_shim) != 0)
        return -1;
    pid_t pids[MAX_WORKERS];
    for (int i = 0; i < n; i++)
        pids[i] = spawn(self, later ? "ctx" : mode, path, region, with_shim, i);
    if (strcmp(mode, "launch") != 0) {
        while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < n)
            usleep(1000);
        usleep(20000);
        __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &sh->go, FUTEX_WAKE, MAX_WORKERS, NULL, NULL, 0);
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        values[i] = sh->value[i];
        if (cpu != NULL)
            cpu[i] = sh->cpu[i];
    }
    munmap(sh, sizeof(*sh));
    unlink(region);
    return bad ? -1 : 0;
}

static double median(double *v, int n)
{
    return percentile(v, n, 0.5);
}

/* Per-call cost: median over processes and repeats, without and with the shim. */
/* Per-call cost: PER_CALL_RUNS pairs of runs (bare, then shim); each run's figure is the median
 * over its processes; the table shows the medians of the bare and shim runs and the median of
 * the pairwise differences (robust to slow drifts of the machine). */
static int per_call(const char *self, const char *dir, const char *mode, int procs,
                    const char *label)
{
    double wall[CTX_SIDES][PER_CALL_RUNS], cpu_of[CTX_SIDES][PER_CALL_RUNS];
    double diff[CTX_SIDES][PER_CALL_RUNS], cdiff[CTX_SIDES][PER_CALL_RUNS];
    double vals[8], cpu[8];
    int sides = getenv("GS_BENCH_SHIM_BEFORE") != NULL ? CTX_SIDES : 2;
    for (int r = 0; r < PER_CALL_RUNS; r++) {
        for (int side = 0; side < sides; side++) {
            if (run_case(self, mode, procs, side, vals, cpu, dir, r) != 0)
                return -1;
            wall[side][r] = median(vals, procs);
            cpu_of[side][r] = median(cpu, procs);
            diff[side][r] = wall[side][r] - wall[0][r];
            cdiff[side][r] = cpu_of[side][r] - cpu_of[0][r];
        }
    }
    for (int side = 1; side < sides; side++) {
        printf("%-34s %10.1f %10.1f %+10.1f",
               side == 1 ? label : "  (before: GS_BENCH_SHIM_BEFORE)",
               median(wall[0], PER_CALL_RUNS), median(wall[side], PER_CALL_RUNS),
               median(diff[side], PER_CALL_RUNS));
        if (strcmp(mode, "alloc") == 0)
            printf("   CPU %7.1f %7.1f %+7.1f", median(cpu_of[0], PER_CALL_RUNS),
                   median(cpu_of[side], PER_CALL_RUNS), median(cdiff[side], PER_CALL_RUNS));
        printf("\n");
    }
    return 0;
}

static int init_latency(const char *self, const char *dir, int procs, double *cpu_added)
{
    static double vals[MAX_WORKERS], cpu[MAX_WORKERS];
    /* Fewer processes give fewer samples per run: run more of them (at least 64 processes in
     * all per side), so every row rests on comparable evidence. */
    int runs = procs >= 64 ? REPEATS : 64 / procs;
    if (runs < REPEATS)
        runs = REPEATS;
    if (runs > INIT_RUNS_MAX)
        runs = INIT_RUNS_MAX;
    double p[2][3][INIT_RUNS_MAX], c[2][INIT_RUNS_MAX];
    for (int r = 0; r < runs; r++) {
        for (int shim = 0; shim < 2; shim++) {
            if (run_case(self, "init", procs, shim, vals, cpu, dir, r) != 0)
                return -1;
            p[shim][0][r] = percentile(vals, procs, 0.50) / 1000;
            p[shim][1][r] = percentile(vals, procs, 0.99) / 1000;
            p[shim][2][r] = percentile(vals, procs, 1.00) / 1000;
            c[shim][r] = percentile(cpu, procs, 0.50) / 1000;
        }
    }
    double m[2][3];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++)
            m[s][k] = median(p[s][k], runs);
    printf("%5d %9.1f %9.1f %9.1f   %9.1f %9.1f %9.1f   %+9.1f %+9.1f\n", procs, m[0][0], m[0][1],
           m[0][2], m[1][0], m[1][1], m[1][2], m[1][0] - m[0][0], m[1][1] - m[0][1]);
    *cpu_added = median(c[1], runs) - median(c[0], runs);
    return 0;
}

/* The first context with procs processes: p50 latency and median CPU time per process, bare,
 * with the shim and (GS_BENCH_SHIM_BEFORE) with the build before, interleaved in each round. */
static int first_context(const char *self, const char *dir, const char *mode, int procs)
{
    static double vals[MAX_WORKERS], cpu[MAX_WORKERS];
    int runs = procs >= 64 ? REPEATS : 64 / procs;
    runs = runs < REPEATS ? REPEATS : runs > INIT_RUNS_MAX ? INIT_RUNS_MAX : runs;
    int sides = getenv("GS_BENCH_SHIM_BEFORE") != NULL ? CTX_SIDES : 2;
    double p50[CTX_SIDES][INIT_RUNS_MAX], c50[CTX_SIDES][INIT_RUNS_MAX], m[CTX_SIDES][2];
    for (int r = 0; r < runs; r++) {
        for (int side = 0; side < sides; side++) {
            if (run_case(self, mode, procs, side, vals, cpu, dir, r) != 0)
                return -1;
            p50[side][r] = percentile(vals, procs, 0.50) / 1000;
            c50[side][r] = percentile(cpu, procs, 0.50) / 1000;
        }
    }
    for (int side = 0; side < sides; side++) {
        m[side][0] = median(p50[side], runs);
        m[side][1] = median(c50[side], runs);
    }
    printf("%-6s %5d %9.1f %9.1f   %9.1f %6.2fx %+9.1f",
           strcmp(mode, "ctx") == 0 ? "fresh" : "later", procs, m[0][0], m[0][1], m[1][0],
           m[1][0] / m[0][0], m[1][1] - m[0][1]);
    if (sides == CTX_SIDES)
        printf("   %9.1f %6.2fx %+9.1f", m[2][0], m[2][0] / m[0][0], m[2][1] - m[0][1]);
    printf("\n");
    return 0;
}

/* Switches the bench to SCHED_FIFO workers (root only); returns 0, or -1 with a line. */
static int real_time_workers(void)
{
    struct sched_param param = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
        printf("\n(real-time pass skipped: SCHED_FIFO needs root)\n");
        return -1;
    }
    param.sched_priority = 0;
    sched_setscheduler(0, SCHED_OTHER, &param);
    setenv("GS_BENCH_FIFO", "1", 1);
    return 0;
}

/* The first context, with default scheduling and then (root) with each worker SCHED_FIFO, as
 * cuInit's latency below. */
static int first_contexts(const char *self, const char *dir)
{
    const int counts[] = {1, 16, 64};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && real_time_workers() != 0)
            break;
        printf("\nfirst context (cuInit + cuCtxCreate, us), processes released together from a "
               "barrier, %s;\np50 over the processes of a run and CPU time of one process "
               "(median), then medians over runs;\nfresh: the lease's first processes; later: "
               "after one process of the lease made its context\n",
               pass == 0 ? "default scheduling" : "each worker SCHED_FIFO");
        printf("%-6s %5s %9s %9s   %9s %7s %9s", "lease", "procs", "bare p50", "CPU", "shim p50",
               "/bare", "+CPU");
        if (getenv("GS_BENCH_SHIM_BEFORE") != NULL)
            printf("   %9s %7s %9s", "before p50", "/bare", "+CPU");
        printf("\n");
        for (int later = 0; later < 2; later++) {
            for (int i = 0; i < 3; i++) {
                if (first_context(self, dir, later ? "ctx-later" : "ctx", counts[i]) != 0)
                    return -1;
            }
        }
    }
    unsetenv("GS_BENCH_FIFO");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--worker") == 0)
        return worker(argv[2], argv[3], atoi(argv[4]));
    if (getenv("GS_BENCH_SHIM") == NULL || getenv("GS_BENCH_DIR") == NULL) {
        fprintf(stderr, "bench_shim: run through bench/shim.sh\n");
        return 2;
    }
    const char *dir = getenv("GS_BENCH_DIR");
    printf("libgpushare.so on gpusim, side by side in fresh processes: per call, %d pairs of runs "
           "(added = median of the pairwise differences);\ncuInit, %d or more runs\n",
           PER_CALL_RUNS, REPEATS);
    /* GS_BENCH_ONLY=ctx or percall: only the first context or the per-call costs. */
    const char *only = getenv("GS_BENCH_ONLY");
    if (only != NULL && strcmp(only, "ctx") == 0)
        return first_contexts(argv[0], dir) != 0;
    printf("%-34s %10s %10s %10s   %s\n", "per call (ns): wall time", "bare", "shim", "added",
           "and CPU time (bare, shim, added)");
    if (only != NULL && strcmp(only, "percall") == 0)
        return per_call(argv[0], dir, "launch", 1, "cuLaunchKernel, 1 process") != 0 ||
               per_call(argv[0], dir, "alloc", 1, "cuMemAlloc+cuMemFree, 1 process") != 0 ||
               per_call(argv[0], dir, "alloc", 8, "cuMemAlloc+cuMemFree, 8 processes") != 0;
    if (per_call(argv[0], dir, "launch", 1, "cuLaunchKernel, 1 process") != 0 ||
        per_call(argv[0], dir, "alloc", 1, "cuMemAlloc+cuMemFree, 1 process") != 0 ||
        per_call(argv[0], dir, "alloc", 8, "cuMemAlloc+cuMemFree, 8 processes") != 0 ||
        first_contexts(argv[0], dir) != 0)
        return 1;
    double cpu_first[4];
    const int counts[] = {1, 16, 64, 256};
    double cpu_added[4];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && real_time_workers() != 0)
            break; /* the real-time pass needs root */
        printf("\ncuInit latency (us), processes released together from a barrier%s\n",
               pass == 0 ? ", default scheduling"
                         : ",\neach worker SCHED_FIFO (no preemption by the others: cuInit's own "
                           "latency)");
        printf("%5s %9s %9s %9s   %9s %9s %9s   %9s %9s\n", "procs", "bare p50", "p99", "max",
               "shim p50", "p99", "max", "added p50", "p99");
        for (int i = 0; i < 4; i++) {
            if (init_latency(argv[0], dir, counts[i], &cpu_added[i]) != 0)
                return 1;
        }
        if (pass == 0)
            memcpy(cpu_first, cpu_added, sizeof(cpu_first));
    }
    memcpy(cpu_added, cpu_first, sizeof(cpu_added));
    printf("\nCPU time the shim adds to one process's cuInit (median over processes, then over "
           "runs;\nwaiting for a CPU does not count, so this is the shim's own work):\n");
    for (int i = 0; i < 4; i++)
        printf("  %3d processes: %+7.1f us\n", counts[i], cpu_added[i]);
    return 0;
}
