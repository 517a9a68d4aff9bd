/* SPDX-License-Identifier: Apache-2.0 */
// The framework-like workload on a real GPU (issue 20): one training step's launches as a framework
// such as PyTorch issues them (bench/gpu/framework_pattern.h, the sequence gpusim's worker runs
// with --framework): every launch through the driver API's cuLaunchKernelEx, a main stream and
// two side streams (a side-stream kernel waits for the main stream's earlier work through an
// event), kernels of 20 us to 10 ms, cuCtxSynchronize every --sync launches. The kernel is the
// fixed-work FMA chain of fixed_work.cu on one block per SM (132 x 256 on an H100); its duration
// is set by its iteration count, from --per-ms (what --calibrate printed, run alone).
//
// usage: gpu_framework --calibrate | --per-ms N [--sync N] [--measure W,S]
//   --calibrate    prints the iterations one kernel runs per millisecond on this GPU (run alone)
//   --per-ms N     iterations per millisecond (the kernel of U us runs U * N / 1000 iterations)
//   --sync N       launches between two synchronizations (default FW_SYNC_EVERY, 8)
//   --measure W,S  prints "rate R" (launches completed per second from W to W+S s) and exits;
//                  without it the program runs until killed
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "framework_pattern.h"

namespace {

constexpr int kThreads = 256;

struct Options {
    double per_ms = 0;
    int sync = FW_SYNC_EVERY;
    double warmup = 0, window = 0;
    bool calibrate = false;
};

Options opt;
std::atomic<long> completed{0};
int blocks = 132;

__global__ void fw_work(float *out, long iters)
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
        std::fprintf(stderr, "gpu_framework: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

void check_cu(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        std::fprintf(stderr, "gpu_framework: %s: %s\n", what, name);
        std::exit(1);
    }
}

double now_s()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// One launch through cuLaunchKernelEx, as frameworks' kernels are launched today.
void launch(CUfunction fn, CUstream stream, float *out, long iters)
{
    void *args[] = {&out, &iters};
    CUlaunchConfig config = {};
    config.gridDimX = blocks;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = kThreads;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream;
    check_cu(cuLaunchKernelEx(&config, fn, args, nullptr), "cuLaunchKernelEx");
}

void calibrate(CUfunction fn, float *out)
{
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    long iters = 1000;
    for (;;) {
        launch(fn, nullptr, out, iters); // warm
        check(cudaEventRecord(a), "record");
        for (int i = 0; i < 5; i++)
            launch(fn, nullptr, out, iters);
        check(cudaEventRecord(b), "record");
        check(cudaEventSynchronize(b), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a, b), "elapsed");
        ms /= 5;
        if (ms > 5 || iters > (1L << 40)) {
            std::printf("%.1f\n", iters / ms);
            std::exit(0);
        }
        iters *= 4;
    }
}

void run(CUfunction fn, float *out)
{
    CUstream streams[FW_STREAMS];
    cudaEvent_t handoff;
    for (int i = 0; i < FW_STREAMS; i++)
        check(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t *>(&streams[i]),
                                        cudaStreamNonBlocking),
              "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&handoff, cudaEventDisableTiming), "cudaEventCreate");
    long since_sync = 0;
    for (size_t i = 0;; i = (i + 1) % FW_STEP_LAUNCHES) {
        const fw_launch_t &l = fw_step[i];
        CUstream s = streams[l.stream];
        if (l.stream != 0) {
            check(cudaEventRecord(handoff, streams[0]), "cudaEventRecord");
            check(cudaStreamWaitEvent(s, handoff, 0), "cudaStreamWaitEvent");
        }
        launch(fn, s, out, static_cast<long>(l.us * opt.per_ms / 1000.0));
        if (++since_sync == opt.sync) {
            check_cu(cuCtxSynchronize(), "cuCtxSynchronize");
            completed += since_sync;
            since_sync = 0;
        }
    }
}

void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!std::strcmp(argv[i], "--calibrate"))
            opt.calibrate = true;
        else if (!std::strcmp(argv[i], "--per-ms"))
            opt.per_ms = std::atof(v), i++;
        else if (!std::strcmp(argv[i], "--sync"))
            opt.sync = std::atoi(v), i++;
        else if (!std::strcmp(argv[i], "--measure") &&
                 std::sscanf(v, "%lf,%lf", &opt.warmup, &opt.window) == 2)
            i++;
        else {
            std::fprintf(stderr, "gpu_framework: bad argument %s\n", argv[i]);
            std::exit(2);
        }
    }
    if ((!opt.calibrate && opt.per_ms <= 0) || opt.sync < 1) {
        std::fprintf(stderr, "gpu_framework: need --calibrate or --per-ms N (and --sync >= 1)\n");
        std::exit(2);
    }
}

} // namespace

int main(int argc, char **argv)
{
    parse(argc, argv);
    float *out = nullptr;
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
    blocks = sms > 0 ? sms : blocks;
    check(cudaMalloc(&out, sizeof(float) * blocks * kThreads), "cudaMalloc");
    cudaFunction_t rt_fn;
    check(cudaGetFuncBySymbol(&rt_fn, reinterpret_cast<const void *>(fw_work)), "function");
    CUfunction fn = reinterpret_cast<CUfunction>(rt_fn);
    if (opt.calibrate)
        calibrate(fn, out);
    std::thread(run, fn, out).detach();
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
