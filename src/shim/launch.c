/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel launches. They are interposed so that every way of reaching them (symbol, dlsym,
 * cuGetProcAddress) lands in the shim: a lease whose configuration is bad launches nothing, and
 * a process that takes part in its GPU's compute scheduler launches only through the gate of
 * its slots (compute.c). Without shares the path is two predictable branches and a call into
 * the driver. */
#include "shim.h"

#define FORWARD(fn, ...)                                                                           \
    do {                                                                                           \
        CUresult init_result = gs__ensure_init();                                                  \
        if (__builtin_expect(init_result != CUDA_SUCCESS, 0))                                      \
            return init_result;                                                                    \
        __typeof__(gs__real()->fn) real_fn = gs__real()->fn;                                       \
        if (real_fn == NULL)                                                                       \
            return CUDA_ERROR_NOT_SUPPORTED;                                                       \
        struct gs__gate *gate = gs__compute_enter();                                               \
        CUresult launched = real_fn(__VA_ARGS__);                                                  \
        gs__compute_leave(gate);                                                                   \
        return launched;                                                                           \
    } while (0)

GS_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams, void **extra)
{
    FORWARD(cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
            sharedMemBytes, hStream, kernelParams, extra);
}

GS_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams, void **extra)
{
    FORWARD(cuLaunchKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
            sharedMemBytes, hStream, kernelParams, extra);
}

GS_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                            void **kernelParams, void **extra)
{
    FORWARD(cuLaunchKernelEx, config, f, kernelParams, extra);
}

GS_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                 void **kernelParams, void **extra)
{
    FORWARD(cuLaunchKernelEx_ptsz, config, f, kernelParams, extra);
}

GS_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                     unsigned int gridDimY, unsigned int gridDimZ,
                                                     unsigned int blockDimX, unsigned int blockDimY,
                                                     unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void **kernelParams)
{
    FORWARD(cuLaunchCooperativeKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
            blockDimZ, sharedMemBytes, hStream, kernelParams);
}

GS_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
{
    FORWARD(cuLaunchCooperativeKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
            blockDimZ, sharedMemBytes, hStream, kernelParams);
}
