/* Contexts: destroying a context or resetting a primary one frees its memory in the driver, so
 * the lease gets that charge back here. Creation fails closed on a bad lease configuration.
 * Contexts on scheduled GPUs are registered for the drains of compute shares (drain.c). */
#include "compute.h"
#include "shim.h"

#include <pthread.h>

/* The primary context seen for each ordinal (cuDevicePrimaryCtxRetain). */
static CUcontext primary[GS_MAX_DEVICES];
static pthread_mutex_t primary_mutex = PTHREAD_MUTEX_INITIALIZER;

#define REAL_OR_FAIL(fn)                                                                           \
    do {                                                                                           \
        CUresult init_result = gs__ensure_init();                                                  \
        if (init_result != CUDA_SUCCESS)                                                           \
            return init_result;                                                                    \
        if (gs__real()->fn == NULL)                                                                \
            return CUDA_ERROR_NOT_SUPPORTED;                                                       \
    } while (0)

static CUresult created(CUresult result, CUcontext *pctx, CUdevice dev)
{
    if (result == CUDA_SUCCESS && pctx != NULL)
        gs__ctx_note(*pctx, dev, 0);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate);
    return created(gs__real()->cuCtxCreate(pctx, flags, dev), pctx, dev);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v2);
    return created(gs__real()->cuCtxCreate_v2(pctx, flags, dev), pctx, dev);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                          int numParams, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v3);
    return created(gs__real()->cuCtxCreate_v3(pctx, paramsArray, numParams, flags, dev), pctx, dev);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                          unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v4);
    return created(gs__real()->cuCtxCreate_v4(pctx, ctxCreateParams, flags, dev), pctx, dev);
}

static CUresult after_destroy(CUresult result, CUcontext ctx)
{
    if (result == CUDA_SUCCESS && gs__accounting() && ctx != NULL)
        gs__track_drop_gone();
    return result;
}

GS_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    REAL_OR_FAIL(cuCtxDestroy_v2);
    gs__ctx_forget(ctx);
    return after_destroy(gs__real()->cuCtxDestroy_v2(ctx), ctx);
}

GS_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    REAL_OR_FAIL(cuCtxDestroy);
    gs__ctx_forget(ctx);
    return after_destroy(gs__real()->cuCtxDestroy(ctx), ctx);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRetain);
    CUresult result = gs__real()->cuDevicePrimaryCtxRetain(pctx, dev);
    if (result == CUDA_SUCCESS && dev >= 0 && dev < GS_MAX_DEVICES) {
        pthread_mutex_lock(&primary_mutex);
        primary[dev] = *pctx;
        pthread_mutex_unlock(&primary_mutex);
        gs__ctx_note(*pctx, dev, 1);
    }
    return result;
}

static CUcontext primary_of(CUdevice dev)
{
    if (dev < 0 || dev >= GS_MAX_DEVICES)
        return NULL;
    pthread_mutex_lock(&primary_mutex);
    CUcontext ctx = primary[dev];
    pthread_mutex_unlock(&primary_mutex);
    return ctx;
}

/* A primary context whose last reference is released is destroyed with its memory. */
static CUresult after_release(CUresult result, CUdevice dev)
{
    const gs__real_t *real = gs__real();
    unsigned int flags = 0;
    int active = 1;
    if (result == CUDA_SUCCESS && real->cuDevicePrimaryCtxGetState != NULL &&
        real->cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active)
        after_destroy(CUDA_SUCCESS, primary_of(dev));
    return result;
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRelease_v2);
    gs__ctx_primary_wait(dev);
    return after_release(gs__real()->cuDevicePrimaryCtxRelease_v2(dev), dev);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRelease);
    gs__ctx_primary_wait(dev);
    return after_release(gs__real()->cuDevicePrimaryCtxRelease(dev), dev);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxReset_v2);
    gs__ctx_primary_wait(dev);
    return after_destroy(gs__real()->cuDevicePrimaryCtxReset_v2(dev), primary_of(dev));
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxReset);
    gs__ctx_primary_wait(dev);
    return after_destroy(gs__real()->cuDevicePrimaryCtxReset(dev), primary_of(dev));
}
