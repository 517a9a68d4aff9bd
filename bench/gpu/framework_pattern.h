/* SPDX-License-Identifier: Apache-2.0 */
/* The launch pattern of the framework-like workload (issue 20): one training step as a framework
 * such as PyTorch issues it through the driver — cuLaunchKernelEx, a main stream and two side
 * streams, kernels from 20 us (elementwise) to 10 ms (large products), and a synchronization
 * every FW_SYNC_EVERY launches (a loss read back, an optimizer step). Shared by the real-GPU
 * program (bench/gpu/framework.cu, a kernel whose duration an argument sets) and gpusim's worker
 * (tests/shim/compute_worker.c --framework, kernels of these durations in its module image), so
 * both run the same sequence. Plain C: included by C and CUDA C++. */
#ifndef GS_BENCH_FRAMEWORK_PATTERN_H
#define GS_BENCH_FRAMEWORK_PATTERN_H

/* One launch: its kernel's duration alone on the GPU, and its stream (0 main, 1 and 2 side
 * streams; a side-stream kernel waits for the main stream's work launched before it, and runs
 * beside what the main stream launches after it). */
typedef struct fw_launch {
    unsigned us;
    unsigned stream;
} fw_launch_t;

/* 24 launches, 27 ms of kernels: elementwise kernels of 20 and 50 us, reductions of 200 us,
 * products of 1, 2, 5 and 10 ms; four launches on side streams. */
static const fw_launch_t fw_step[] = {
    {20, 0},   {50, 0},   {1000, 0}, {20, 0},    {200, 1},  {2000, 0}, {20, 0},   {50, 0},
    {5000, 0}, {20, 2},   {20, 0},   {10000, 0}, {200, 0},  {50, 1},   {2000, 0}, {20, 0},
    {20, 0},   {1000, 2}, {50, 0},   {20, 0},    {5000, 0}, {200, 0},  {20, 0},   {20, 0},
};

#define FW_STEP_LAUNCHES (sizeof(fw_step) / sizeof(fw_step[0]))
#define FW_STREAMS       3
#define FW_SYNC_EVERY    8 /* launches between two synchronizations (the default) */

/* The distinct kernel durations of the step, in us (the module image declares one kernel each). */
static const unsigned fw_durations_us[] = {20, 50, 200, 1000, 2000, 5000, 10000};
#define FW_DURATIONS (sizeof(fw_durations_us) / sizeof(fw_durations_us[0]))

#endif
