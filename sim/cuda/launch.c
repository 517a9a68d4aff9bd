/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel launches: cuLaunchKernel, cuLaunchKernelEx, cooperative launches and occupancy. A launch
 * occupies the device for the kernel's duration (divided by GPUSIM_TIME_SCALE), in stream order
 * and time-sliced with the other processes on the device. */
#include "cuda_internal.h"

#define MAX_BLOCK_THREADS 1024u
#define MAX_BLOCK_Z       64u
#define MAX_GRID_YZ       65535u
#define MAX_GRID_X        2147483647u
#define STATIC_SMEM       49152u

static CUresult check_dims(const gsim_cu_launch_t *l)
{
    for (int i = 0; i < 3; i++) {
        if (l->grid[i] == 0 || l->block[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (l->grid[0] > MAX_GRID_X || l->grid[1] > MAX_GRID_YZ || l->grid[2] > MAX_GRID_YZ)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->block[0] > MAX_BLOCK_THREADS || l->block[1] > MAX_BLOCK_THREADS ||
        l->block[2] > MAX_BLOCK_Z)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    if (threads > MAX_BLOCK_THREADS)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->params != NULL && l->extra != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A cooperative grid must fit on the device at once. */
static CUresult check_cooperative(const gsim_cu_launch_t *l, int ordinal)
{
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    int per_sm = 32, threads_per_sm = 2048;
    cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, ordinal);
    cuDeviceGetAttribute(&threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                         ordinal);
    uint64_t fit = (uint64_t)threads_per_sm / threads;
    if (fit > (uint64_t)per_sm)
        fit = (uint64_t)per_sm;
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    if (blocks > fit * gsim_cu_device(ordinal)->sms)
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_launch_on(const gsim_cu_launch_t *l, gsim_cu_stream_t *s)
{
    CUcontext ctx = s->ctx;
    CUresult result = check_dims(l);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_launchable_t fn;
    result = gsim_cu_function_launchable(l->f, ctx, &fn);
    if (result != CUDA_SUCCESS)
        return result;
    if (l->shared_mem > STATIC_SMEM && l->shared_mem > (unsigned)fn.max_dyn_smem)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->cooperative) {
        result = check_cooperative(l, ctx->ordinal);
        if (result != CUDA_SUCCESS)
            return result;
    }
    return gsim_cu_stream_submit(s, gsim_cu_sim_to_wall(fn.duration_ns), NULL);
}

/* Resolves the stream and checks it belongs to the current context. */
static CUresult launch_stream(CUstream hStream, int per_thread, gsim_cu_stream_t **s)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    result = gsim_cu_stream_resolve(hStream, per_thread, s);
    if (result == CUDA_SUCCESS && (*s)->ctx != ctx)
        result = CUDA_ERROR_INVALID_HANDLE;
    return result;
}

static CUresult launch(CUfunction f, const unsigned int grid[3], const unsigned int block[3],
                       unsigned int smem, CUstream hStream, void **params, void **extra,
                       int cooperative, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = launch_stream(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_launch_t l = {.f = f,
                          .grid = {grid[0], grid[1], grid[2]},
                          .block = {block[0], block[1], block[2]},
                          .shared_mem = smem,
                          .cooperative = cooperative,
                          .params = params,
                          .extra = extra};
    return gsim_cu_launch_on(&l, s);
}

GSIM_CU_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, 0, 0);
}

GSIM_CU_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                         unsigned int gridDimZ, unsigned int blockDimX,
                                         unsigned int blockDimY, unsigned int blockDimZ,
                                         unsigned int sharedMemBytes, CUstream hStream,
                                         void **kernelParams, void **extra)
{
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, 0, 1);
}

GSIM_CU_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams)
{
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, NULL, 1, 0);
}

GSIM_CU_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                    unsigned int gridDimY, unsigned int gridDimZ,
                                                    unsigned int blockDimX, unsigned int blockDimY,
                                                    unsigned int blockDimZ,
                                                    unsigned int sharedMemBytes, CUstream hStream,
                                                    void **kernelParams)
{
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, NULL, 1, 1);
}

/* Reads the launch attributes gpusim honours (cooperative) and rejects unknown ones. */
static CUresult config_attrs(const CUlaunchConfig *config, int *cooperative)
{
    *cooperative = 0;
    if (config->numAttrs > 0 && config->attrs == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            *cooperative = a->value.cooperative != 0;
        else if ((int)a->id < 0 || a->id >= CU_LAUNCH_ATTRIBUTE_MAX)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra, int per_thread)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(config);
    int cooperative;
    result = config_attrs(config, &cooperative);
    if (result != CUDA_SUCCESS)
        return result;
    const unsigned int grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned int block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return launch(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams, extra,
                  cooperative, per_thread);
}

GSIM_CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}

GSIM_CU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}

/* ---- occupancy ---- */

static CUresult occupancy_args(CUfunction func, int *ordinal)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_launchable_t fn;
    result = gsim_cu_function_launchable(func, ctx, &fn);
    *ordinal = ctx->ordinal;
    return result;
}

/* Blocks of blockSize threads and dynSmem bytes that fit on one SM of ordinal's device. */
static int blocks_per_sm(int ordinal, int blockSize, size_t dynSmem)
{
    int per_sm = 32, threads = 2048, smem = 233472;
    cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, ordinal);
    cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, ordinal);
    cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, ordinal);
    int warps = (blockSize + 31) / 32;
    int fit = threads / (warps * 32);
    if (fit > per_sm)
        fit = per_sm;
    if (dynSmem > 0 && (size_t)fit * (dynSmem + 1024) > (size_t)smem)
        fit = (int)((size_t)smem / (dynSmem + 1024));
    return fit;
}

static CUresult max_active_blocks(int *numBlocks, CUfunction func, int blockSize,
                                  size_t dynamicSMemSize, unsigned int flags)
{
    int ordinal;
    CUresult result = occupancy_args(func, &ordinal);
    if (result != CUDA_SUCCESS)
        return result;
    if (numBlocks == NULL || blockSize <= 0 || blockSize > (int)MAX_BLOCK_THREADS ||
        (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *numBlocks = blocks_per_sm(ordinal, blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                 int blockSize,
                                                                 size_t dynamicSMemSize)
{
    return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

GSIM_CU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
    return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
                                     CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                     size_t dynamicSMemSize, int blockSizeLimit)
{
    int ordinal;
    CUresult result = occupancy_args(func, &ordinal);
    if (result != CUDA_SUCCESS)
        return result;
    if (minGridSize == NULL || blockSize == NULL || blockSizeLimit < 0)
        return CUDA_ERROR_INVALID_VALUE;
    int limit = blockSizeLimit == 0 || blockSizeLimit > (int)MAX_BLOCK_THREADS
                    ? (int)MAX_BLOCK_THREADS
                    : blockSizeLimit;
    int best = 32, best_threads = 0;
    for (int size = 32; size <= limit; size += 32) {
        size_t smem =
            blockSizeToDynamicSMemSize != NULL ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
        int threads = blocks_per_sm(ordinal, size, smem) * size;
        if (threads >= best_threads) {
            best_threads = threads;
            best = size;
        }
    }
    size_t smem =
        blockSizeToDynamicSMemSize != NULL ? blockSizeToDynamicSMemSize(best) : dynamicSMemSize;
    *blockSize = best;
    *minGridSize = blocks_per_sm(ordinal, best, smem) * (int)gsim_cu_device(ordinal)->sms;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                      CUfunction func,
                                                      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                      size_t dynamicSMemSize, int blockSizeLimit)
{
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                dynamicSMemSize, blockSizeLimit);
}

GSIM_CU_API CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags)
{
    if ((flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                dynamicSMemSize, blockSizeLimit);
}

GSIM_CU_API CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize,
                                                             CUfunction func, int numBlocks,
                                                             int blockSize)
{
    int ordinal;
    CUresult result = occupancy_args(func, &ordinal);
    if (result != CUDA_SUCCESS)
        return result;
    if (dynamicSmemSize == NULL || numBlocks <= 0 || blockSize <= 0 ||
        blockSize > (int)MAX_BLOCK_THREADS)
        return CUDA_ERROR_INVALID_VALUE;
    int smem = 233472, optin = 232448;
    cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, ordinal);
    cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ordinal);
    size_t per_block = (size_t)smem / (size_t)numBlocks;
    per_block = per_block > 1024 ? per_block - 1024 : 0;
    *dynamicSmemSize = per_block < (size_t)optin ? per_block : (size_t)optin;
    return CUDA_SUCCESS;
}
