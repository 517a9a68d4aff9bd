/* SPDX-License-Identifier: Apache-2.0 */
/* Context queries and settings: device, synchronization, flags, limits, caches, peer access. */
#include "cuda_internal.h"

GSIM_CU_API CUresult cuCtxGetDevice(CUdevice *device)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(device);
    *device = ctx->ordinal;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(device);
    *device = ctx->ordinal;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxSynchronize(void)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result == CUDA_SUCCESS)
        gsim_cu_ctx_sync(ctx);
    return result;
}

GSIM_CU_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result == CUDA_SUCCESS)
        gsim_cu_ctx_sync(ctx);
    return result;
}

GSIM_CU_API CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(flags);
    *flags = ctx->flags;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxSetFlags(unsigned int flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (!gsim_cu_ctx_flags_valid(flags))
        return CUDA_ERROR_INVALID_VALUE;
    ctx->flags = flags;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(ctxId);
    *ctxId = ctx->id;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult result = gsim_cu_ctx_resolve(ctx, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(version);
    *version = 3020;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (pvalue == NULL || (unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pvalue = ctx->limits[limit];
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED)
        return CUDA_ERROR_INVALID_VALUE;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
        return CUDA_ERROR_INVALID_VALUE;
    ctx->limits[limit] = value;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pconfig);
    *pconfig = ctx->cache_config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    ctx->cache_config = config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pConfig);
    *pConfig = ctx->shmem_config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    ctx->shmem_config = config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (leastPriority != NULL)
        *leastPriority = 0;
    if (greatestPriority != NULL)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxResetPersistingL2Cache(void)
{
    CUcontext ctx;
    return gsim_cu_ctx_current(&ctx);
}

GSIM_CU_API CUresult cuCtxGetExecAffinity(CUexecAffinityParam *pExecAffinity,
                                          CUexecAffinityType type)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (pExecAffinity == NULL || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    pExecAffinity->type = type;
    pExecAffinity->param.smCount.val = gsim_cu_device(ctx->ordinal)->sms;
    return CUDA_SUCCESS;
}

/* ---- peer access ---- */

static CUresult peer_args(CUcontext peerContext, unsigned int flags, CUcontext *ctx)
{
    CUresult result = gsim_cu_ctx_current(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_ctx_check(peerContext) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peerContext->ordinal == (*ctx)->ordinal)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUcontext ctx;
    CUresult result = peer_args(peerContext, Flags, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->peer[peerContext->ordinal])
        result = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    ctx->peer[peerContext->ordinal] = 1;
    pthread_mutex_unlock(&ctx->mu);
    return result;
}

GSIM_CU_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    CUcontext ctx;
    CUresult result = peer_args(peerContext, 0, &ctx);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&ctx->mu);
    if (!ctx->peer[peerContext->ordinal])
        result = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    ctx->peer[peerContext->ordinal] = 0;
    pthread_mutex_unlock(&ctx->mu);
    return result;
}
