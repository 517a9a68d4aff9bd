/* SPDX-License-Identifier: Apache-2.0 */
/* Primary contexts: one per device, shared by everything in the process that retains it. */
#include "cuda_internal.h"

static pthread_mutex_t primary_mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[GSIM_MAX_DEVICES];
static unsigned int primary_flags[GSIM_MAX_DEVICES];

static CUresult primary_args(CUdevice dev)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_device(dev) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

GSIM_CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult result = primary_args(dev);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pctx);
    result = gsim_cu_mps_connect();
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&primary_mu);
    CUcontext ctx = primary[dev];
    if (ctx == NULL) {
        ctx = gsim_cu_obj_new(GSIM_CU_CTX);
        if (ctx != NULL)
            gsim_cu_ctx_init_sync(ctx);
        primary[dev] = ctx;
    }
    if (ctx == NULL) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (ctx->refcount == 0) {
        result = gsim_cu_mps_attach(dev); /* creating it: an MPS client asks its server */
        if (result == CUDA_SUCCESS)
            gsim_cu_ctx_start(ctx, dev, primary_flags[dev], 1);
        if (result == CUDA_SUCCESS)
            result = gsim_cu_charge_context(ctx, dev);
        if (result != CUDA_SUCCESS)
            atomic_store(&ctx->active, 0);
    }
    if (result == CUDA_SUCCESS) {
        ctx->refcount++;
        *pctx = ctx;
    }
    pthread_mutex_unlock(&primary_mu);
    return result;
}

static CUresult primary_release(CUdevice dev)
{
    CUresult result = primary_args(dev);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&primary_mu);
    CUcontext ctx = primary[dev];
    if (ctx == NULL || ctx->refcount == 0) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--ctx->refcount == 0) {
        atomic_store(&ctx->active, 0);
        gsim_cu_ctx_release_resources(ctx);
        gsim_cu_uncharge_context(ctx);
    }
    pthread_mutex_unlock(&primary_mu);
    return result;
}

GSIM_CU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return primary_release(dev);
}

GSIM_CU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev);
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags, int fail_if_active)
{
    CUresult result = primary_args(dev);
    if (result != CUDA_SUCCESS)
        return result;
    if (!gsim_cu_ctx_flags_valid(flags))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary_mu);
    CUcontext ctx = primary[dev];
    int active = ctx != NULL && ctx->refcount > 0;
    if (active && fail_if_active) {
        result = CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    } else {
        primary_flags[dev] = flags;
        if (active)
            ctx->flags = flags;
    }
    pthread_mutex_unlock(&primary_mu);
    return result;
}

GSIM_CU_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags, 1);
}

GSIM_CU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags, 0);
}

GSIM_CU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult result = primary_args(dev);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&primary_mu);
    *flags = primary_flags[dev];
    *active = primary[dev] != NULL && primary[dev]->refcount > 0;
    pthread_mutex_unlock(&primary_mu);
    return CUDA_SUCCESS;
}

static CUresult primary_reset(CUdevice dev)
{
    CUresult result = primary_args(dev);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&primary_mu);
    CUcontext ctx = primary[dev];
    if (ctx != NULL && ctx->refcount > 0) {
        gsim_cu_ctx_release_resources(ctx);
        gsim_cu_ctx_default_limits(ctx);
    }
    primary_flags[dev] = 0;
    if (ctx != NULL)
        ctx->flags = 0;
    pthread_mutex_unlock(&primary_mu);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return primary_reset(dev);
}

GSIM_CU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_reset(dev);
}
