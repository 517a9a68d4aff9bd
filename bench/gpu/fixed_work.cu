/* SPDX-License-Identifier: Apache-2.0 */
// A fixed-work CUDA program for measuring compute shares on a real GPU (bench/gpu/run.sh): the
// kernel of data/gpu-facts/h100-measurements.md (FMA chains, 1056 blocks x 256 threads), whose
// work does not depend on time (a clock-spinning kernel would finish on wall-clock time even while
// its context is switched out, and measure nothing), so throughput in kernels/s relative to one
// process alone is the share of the GPU a process got.
//
// usage: gpu_fixed_work [--iters N] [--batch N] [--threads T] [--graph] [--light MS]
//                       [--measure W,S] | --calibrate MS
//   --calibrate MS  prints the --iters that make one kernel take MS ms on this GPU (run alone)
//   --batch N       N launches, then an event synchronization (default 4, as the facts)
//   --threads T     T threads, each with its own stream
//   --graph         each batch is one launch of a graph of N kernels (captured once)
//   --light MS      one kernel every MS ms; prints "latency_us p50 P p99 Q n N" at the end
//   --measure W,S   prints "rate R" (kernels completed per second from W to W+S s) and exits
// SIGUSR1 pauses the launches, SIGUSR2 resumes them (a co-tenant that stops and returns).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kBlocks = 1056;
constexpr int kThreads = 256;

struct Options {
    long iters = 20000;
    int batch = 4;
    int threads = 1;
    bool graph = false;
    int light_ms = 0;
    double warmup = 0, window = 0;
    double calibrate_ms = 0;
};

Options opt;
std::atomic<long> completed{0};
volatile sig_atomic_t paused = 0;

__global__ void fixed_work(float *out, long iters)
{
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 1e-4f;
    for (long i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
        b = fmaf(b, a, -c);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b; // keeps the chain from being removed
}

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "gpu_fixed_work: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

double now_s()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void on_signal(int sig)
{
    paused = sig == SIGUSR1;
}

void saturate(float *out)
{
    cudaStream_t stream;
    cudaEvent_t done;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    cudaGraphExec_t exec = nullptr;
    if (opt.graph) {
        cudaGraph_t graph;
        check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
        for (int i = 0; i < opt.batch; i++)
            fixed_work<<<kBlocks, kThreads, 0, stream>>>(out, opt.iters);
        check(cudaStreamEndCapture(stream, &graph), "capture end");
        check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    }
    for (;;) {
        if (paused) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        if (exec != nullptr) {
            check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
        } else {
            for (int i = 0; i < opt.batch; i++)
                fixed_work<<<kBlocks, kThreads, 0, stream>>>(out, opt.iters);
            check(cudaGetLastError(), "launch");
        }
        check(cudaEventRecord(done, stream), "cudaEventRecord");
        check(cudaEventSynchronize(done), "cudaEventSynchronize");
        completed += opt.batch;
    }
}

void light(float *out)
{
    std::vector<double> samples;
    double end = now_s() + opt.warmup + opt.window;
    while (opt.window <= 0 || now_s() < end) {
        if (!paused) {
            double t0 = now_s();
            fixed_work<<<kBlocks, kThreads>>>(out, opt.iters);
            check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            samples.push_back((now_s() - t0) * 1e6);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(opt.light_ms));
    }
    std::sort(samples.begin(), samples.end());
    size_t n = samples.size();
    if (n > 0)
        std::printf("latency_us p50 %.0f p99 %.0f n %zu\n", samples[n / 2], samples[n * 99 / 100],
                    n);
    std::exit(0);
}

void calibrate(float *out)
{
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    long iters = 1000;
    for (;;) {
        fixed_work<<<kBlocks, kThreads>>>(out, iters); // warm
        check(cudaEventRecord(a), "record");
        for (int i = 0; i < 5; i++)
            fixed_work<<<kBlocks, kThreads>>>(out, iters);
        check(cudaEventRecord(b), "record");
        check(cudaEventSynchronize(b), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a, b), "elapsed");
        ms /= 5;
        if (ms > opt.calibrate_ms / 4 || iters > (1L << 40)) {
            std::printf("%ld\n", (long)(iters * opt.calibrate_ms / ms));
            std::exit(0);
        }
        iters *= 4;
    }
}

void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!std::strcmp(argv[i], "--iters"))
            opt.iters = std::atol(v), i++;
        else if (!std::strcmp(argv[i], "--batch"))
            opt.batch = std::atoi(v), i++;
        else if (!std::strcmp(argv[i], "--threads"))
            opt.threads = std::atoi(v), i++;
        else if (!std::strcmp(argv[i], "--graph"))
            opt.graph = true;
        else if (!std::strcmp(argv[i], "--light"))
            opt.light_ms = std::atoi(v), i++;
        else if (!std::strcmp(argv[i], "--calibrate"))
            opt.calibrate_ms = std::atof(v), i++;
        else if (!std::strcmp(argv[i], "--measure") &&
                 std::sscanf(v, "%lf,%lf", &opt.warmup, &opt.window) == 2)
            i++;
        else {
            std::fprintf(stderr, "gpu_fixed_work: bad argument %s\n", argv[i]);
            std::exit(2);
        }
    }
    if (opt.iters < 1 || opt.batch < 1 || opt.threads < 1 || opt.threads > 64) {
        std::fprintf(stderr, "gpu_fixed_work: bad --iters, --batch or --threads\n");
        std::exit(2);
    }
}

} // namespace

int main(int argc, char **argv)
{
    parse(argc, argv);
    std::signal(SIGUSR1, on_signal);
    std::signal(SIGUSR2, on_signal);
    float *out = nullptr;
    check(cudaMalloc(&out, sizeof(float) * kBlocks * kThreads), "cudaMalloc");
    if (opt.calibrate_ms > 0)
        calibrate(out);
    if (opt.light_ms > 0)
        light(out);
    for (int t = 0; t < opt.threads; t++)
        std::thread(saturate, out).detach();
    if (opt.window <= 0) {
        for (;;)
            std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(opt.warmup));
    long first = completed;
    double t0 = now_s();
    std::this_thread::sleep_for(std::chrono::duration<double>(opt.window));
    std::printf("rate %.1f\n", (completed - first) / (now_s() - t0));
    std::fflush(stdout);
    std::_Exit(0);
}
