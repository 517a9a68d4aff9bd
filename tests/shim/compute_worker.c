/* SPDX-License-Identifier: Apache-2.0 */
/* A saturating (or lightly loaded) CUDA process for the compute-share tests and benchmark,
 * built like a user's driver-API program. Until SIGTERM it launches fixed kernels in batches and
 * synchronizes after each batch, from THREADS threads, each with STREAMS streams of its own
 * (0: the legacy default stream), or one graph of BATCH kernels per batch. SIGUSR1 pauses it (no
 * launches), SIGUSR2 resumes it. On SIGTERM it prints "kernels N" (kernels completed) and, in
 * light mode (one kernel every PERIOD ms, timed from launch to the end of its synchronization),
 * "latency_us p50 P50 p99 P99 n N".
 * Exits with _exit (threads may still be inside the driver).
 * With --measure W,S it instead prints "rate R" (kernels completed per second between W and W+S
 * seconds after start-up) and exits by itself.
 * With --framework SYNC it runs the framework-like workload instead (bench/gpu/framework_pattern.h:
 * a training step's 24 launches through cuLaunchKernelEx on a main and two side streams, kernels
 * of 20 us to 10 ms, cuCtxSynchronize every SYNC launches), the same sequence the real-GPU program
 * bench/gpu/framework.cu runs; --kernel, --batch, --streams and --graph do not apply.
 * With --procs N it runs as N processes (of one lease when started under gpushare run). Each
 * process prints "pid PID ns INODE" first: its pid in its PID namespace, and that namespace.
 * usage: compute_worker [--kernel DUR] [--batch N] [--threads T] [--streams S] [--graph]
 *                       [--light PERIOD_MS] [--framework SYNC] [--measure W,S] [--procs N] */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framework_pattern.h"

#define MAX_THREADS 64
#define MAX_STREAMS 16
#define MAX_SAMPLES 100000

typedef struct options {
    char kernel[32];
    int batch, threads, streams, graph;
    int light_ms;
    int procs;
    int framework;         /* launches between synchronizations; 0: not the framework workload */
    double warmup, window; /* --measure */
} options_t;

static options_t opt = {.kernel = "4ms", .batch = 4, .threads = 1, .streams = 0, .procs = 1};
static volatile sig_atomic_t stop, paused;
static CUcontext context;
static CUfunction kernel;
static CUfunction fw_kernels[FW_DURATIONS]; /* the framework workload's, by duration */
static long completed[MAX_THREADS];
static double samples[MAX_SAMPLES];
static int n_samples;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        paused = 1;
    else if (sig == SIGUSR2)
        paused = 0;
    else
        stop = 1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void fail(const char *what, CUresult result)
{
    fprintf(stderr, "compute_worker: %s failed: %d\n", what, (int)result);
    exit(1);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS && !stop)                                                      \
            fail(#call, result_);                                                                  \
    } while (0)

static CUgraphExec make_graph(CUstream stream)
{
    CUgraph graph;
    CUgraphExec exec;
    CUgraphNode prev = NULL, node;
    CHECK(cuGraphCreate(&graph, 0));
    for (int i = 0; i < opt.batch; i++) {
        CUDA_KERNEL_NODE_PARAMS p = {.func = kernel,
                                     .gridDimX = 1,
                                     .gridDimY = 1,
                                     .gridDimZ = 1,
                                     .blockDimX = 32,
                                     .blockDimY = 1,
                                     .blockDimZ = 1};
        CHECK(cuGraphAddKernelNode(&node, graph, prev != NULL ? &prev : NULL, prev != NULL, &p));
        prev = node;
    }
    (void)stream;
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    return exec;
}

static void batch(CUstream *streams, int n_streams, CUgraphExec exec)
{
    CUstream first = n_streams > 0 ? streams[0] : NULL;
    if (exec != NULL) {
        CHECK(cuGraphLaunch(exec, first));
    } else {
        for (int i = 0; i < opt.batch; i++) {
            CUstream s = n_streams > 0 ? streams[i % n_streams] : NULL;
            CHECK(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        }
    }
    for (int i = 0; i < (n_streams > 0 ? n_streams : 1); i++)
        CHECK(cuStreamSynchronize(n_streams > 0 ? streams[i] : NULL));
}

static CUfunction fw_kernel_of(unsigned us)
{
    for (size_t i = 0; i < FW_DURATIONS; i++) {
        if (fw_durations_us[i] == us)
            return fw_kernels[i];
    }
    return fw_kernels[0];
}

/* One launch of the framework step through cuLaunchKernelEx; a side-stream launch first waits
 * for what the main stream launched before it (an event), as a framework's stream handoff. */
static void fw_launch(const fw_launch_t *l, CUstream *streams, CUevent handoff)
{
    CUstream s = streams[l->stream];
    if (l->stream != 0) {
        CHECK(cuEventRecord(handoff, streams[0]));
        CHECK(cuStreamWaitEvent(s, handoff, 0));
    }
    CUlaunchConfig config = {.gridDimX = 132,
                             .gridDimY = 1,
                             .gridDimZ = 1,
                             .blockDimX = 256,
                             .blockDimY = 1,
                             .blockDimZ = 1,
                             .hStream = s};
    CHECK(cuLaunchKernelEx(&config, fw_kernel_of(l->us), NULL, NULL));
}

/* The framework workload of one thread until stopped: steps without end, a synchronization of
 * the context every opt.framework launches. */
static void framework(long index)
{
    CUstream streams[FW_STREAMS];
    CUevent handoff;
    for (int i = 0; i < FW_STREAMS; i++)
        CHECK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&handoff, CU_EVENT_DISABLE_TIMING));
    long since_sync = 0;
    for (size_t i = 0; !stop; i = (i + 1) % FW_STEP_LAUNCHES) {
        if (paused) {
            usleep(1000);
            continue;
        }
        fw_launch(&fw_step[i], streams, handoff);
        if (++since_sync == opt.framework) {
            CHECK(cuCtxSynchronize());
            __atomic_fetch_add(&completed[index], since_sync, __ATOMIC_RELAXED);
            since_sync = 0;
        }
    }
}

static void *saturate(void *arg)
{
    long index = (long)arg;
    CUstream streams[MAX_STREAMS];
    CHECK(cuCtxSetCurrent(context));
    if (opt.framework > 0) {
        framework(index);
        return NULL;
    }
    for (int i = 0; i < opt.streams; i++)
        CHECK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
    CUgraphExec exec = opt.graph ? make_graph(opt.streams > 0 ? streams[0] : NULL) : NULL;
    while (!stop) {
        if (paused) {
            usleep(1000);
            continue;
        }
        batch(streams, opt.streams, exec);
        __atomic_fetch_add(&completed[index], opt.batch, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void light(void)
{
    while (!stop) {
        if (!paused) {
            double t0 = now_us();
            CHECK(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
            CHECK(cuCtxSynchronize());
            if (n_samples < MAX_SAMPLES && !stop)
                samples[n_samples++] = now_us() - t0;
            completed[0]++;
        }
        usleep((useconds_t)opt.light_ms * 1000);
    }
}

static long total_completed(void)
{
    long total = 0;
    for (int t = 0; t < MAX_THREADS; t++)
        total += __atomic_load_n(&completed[t], __ATOMIC_RELAXED);
    return total;
}

/* --measure: the rate over the window, then exit. */
static void measure(void)
{
    usleep((useconds_t)(opt.warmup * 1e6));
    long first = total_completed();
    double t0 = now_us();
    usleep((useconds_t)(opt.window * 1e6));
    double rate = (double)(total_completed() - first) / ((now_us() - t0) / 1e6);
    printf("rate %.1f\n", rate);
    fflush(stdout);
    _exit(0);
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(argv[i], "--kernel") == 0)
            snprintf(opt.kernel, sizeof(opt.kernel), "%s", v), i++;
        else if (strcmp(argv[i], "--batch") == 0)
            opt.batch = atoi(v), i++;
        else if (strcmp(argv[i], "--threads") == 0)
            opt.threads = atoi(v), i++;
        else if (strcmp(argv[i], "--streams") == 0)
            opt.streams = atoi(v), i++;
        else if (strcmp(argv[i], "--light") == 0)
            opt.light_ms = atoi(v), i++;
        else if (strcmp(argv[i], "--procs") == 0)
            opt.procs = atoi(v), i++;
        else if (strcmp(argv[i], "--graph") == 0)
            opt.graph = 1;
        else if (strcmp(argv[i], "--framework") == 0)
            opt.framework = atoi(v), i++;
        else if (strcmp(argv[i], "--measure") == 0 &&
                 sscanf(v, "%lf,%lf", &opt.warmup, &opt.window) == 2)
            i++;
        else {
            fprintf(stderr, "compute_worker: unknown argument %s\n", argv[i]);
            exit(2);
        }
    }
    if (opt.batch < 1 || opt.threads < 1 || opt.threads > MAX_THREADS || opt.streams < 0 ||
        opt.streams > MAX_STREAMS || opt.procs < 1 || opt.procs > 16) {
        fprintf(stderr, "compute_worker: bad --batch, --threads, --streams or --procs\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    for (int p = 1; p < opt.procs; p++) {
        if (fork() == 0)
            break; /* the copies do the same work, each a process of its own */
    }
    char ns[64] = "";
    ssize_t ns_len = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    unsigned long long pidns = 0;
    if (ns_len > 0 && (ns[ns_len] = '\0', sscanf(ns, "pid:[%llu]", &pidns) != 1))
        pidns = 0;
    printf("pid %d ns %llu\n", (int)getpid(), pidns); /* its pid in its own PID namespace */
    fflush(stdout);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    char image[512];
    int len = snprintf(image, sizeof(image), "gpusim-module 1\nkernel work %s\n", opt.kernel);
    for (size_t i = 0; i < FW_DURATIONS; i++)
        len += snprintf(image + len, sizeof(image) - (size_t)len, "kernel fw_%u %uus\n",
                        fw_durations_us[i], fw_durations_us[i]);
    CUdevice dev;
    CUmodule module;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, dev));
    CHECK(cuCtxSetCurrent(context));
    CHECK(cuModuleLoadData(&module, image));
    CHECK(cuModuleGetFunction(&kernel, module, "work"));
    for (size_t i = 0; i < FW_DURATIONS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "fw_%u", fw_durations_us[i]);
        CHECK(cuModuleGetFunction(&fw_kernels[i], module, name));
    }
    pthread_t thread;
    if (opt.light_ms > 0) {
        light();
    } else {
        /* The threads are never joined: one may wait at the shim's gate when the signal comes. */
        for (long t = 0; t < opt.threads; t++)
            pthread_create(&thread, NULL, saturate, (void *)t);
        if (opt.window > 0)
            measure();
        while (!stop)
            usleep(10000);
    }
    printf("kernels %ld\n", total_completed());
    if (n_samples > 0) {
        qsort(samples, (size_t)n_samples, sizeof(samples[0]), compare);
        printf("latency_us p50 %.0f p99 %.0f n %d\n", samples[n_samples / 2],
               samples[(n_samples * 99) / 100], n_samples);
    }
    fflush(stdout);
    _exit(0); /* the threads may sit in the driver; nothing to clean */
}
