/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts: creating one charges its own device memory to the lease (measured, footprint.c);
 * destroying a context or resetting a primary one frees its memory in the driver, so the lease
 * gets that charge back here. Creation fails closed on a bad lease configuration. Contexts on
 * scheduled GPUs are registered for the drains of compute shares (drain.c).
 *
 * The MPS server reset: on an H100 under MPS (driver 580), the first client that connects right
 * after two concurrent clients have exited fails to create its context with
 * CUDA_ERROR_LAUNCH_FAILED while the server resets the device; the next client works
 * (data/gpu-facts/h100-gpushare-checks.md). The job did nothing wrong, so creation is retried
 * once after a pause, with one log line; a second failure is returned as it is. */
#include "compute.h"
#include "gpushare/log.h"
#include "shim.h"

#include <pthread.h>
#include <time.h>

#define MPS_RESET_PAUSE_MS 500 /* the server destroys its context and resets the device first */

/* The primary context seen for each ordinal (cuDevicePrimaryCtxRetain). */
static CUcontext primary[GS_MAX_DEVICES];
static pthread_mutex_t primary_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Whether dev's contexts are MPS client contexts (the driver's own answer). */
static int under_mps(CUdevice dev)
{
    int mps = 0;
    const gs__real_t *real = gs__real();
    return real->cuDeviceGetAttribute != NULL &&
           real->cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, dev) == CUDA_SUCCESS &&
           mps != 0;
}

/* Runs create(pctx, arg); when an MPS client's creation fails with CUDA_ERROR_LAUNCH_FAILED (the
 * MPS server reset above), logs one line, pauses and tries once more. No lock is held. */
static CUresult create_once_more(CUcontext *pctx, CUdevice dev,
                                 CUresult (*create)(CUcontext *pctx, void *arg), void *arg)
{
    CUresult result = create(pctx, arg);
    if (result != CUDA_ERROR_LAUNCH_FAILED || !under_mps(dev))
        return result;
    gs_error("creating a context on device %d failed with CUDA_ERROR_LAUNCH_FAILED: the MPS "
             "server reset after its clients exited; retrying once in %d ms",
             (int)dev, MPS_RESET_PAUSE_MS);
    struct timespec pause = {.tv_sec = 0, .tv_nsec = MPS_RESET_PAUSE_MS * 1000000L};
    while (nanosleep(&pause, &pause) != 0)
        ;
    return create(pctx, arg);
}

/* Creates a context of kind (GS_FOOTPRINT_*) with create(pctx, arg) and charges its own memory
 * to the lease (measured around the creation, or known from this process's first context of
 * that kind); a context that does not fit in the lease is destroyed again. */
static CUresult create_measured(CUcontext *pctx, CUdevice dev, uint64_t kind,
                                CUresult (*create)(CUcontext *pctx, void *arg), void *arg)
{
    gs__footprint_probe_t probe;
    CUresult result = gs__footprint_begin(dev, kind, &probe);
    if (result == CUDA_SUCCESS)
        result = create_once_more(pctx, dev, create, arg);
    if (result != CUDA_SUCCESS || pctx == NULL) {
        gs__footprint_abort(&probe);
        return result;
    }
    result = gs__footprint_commit(&probe, *pctx);
    if (result != CUDA_SUCCESS) {
        gs__real()->cuCtxDestroy_v2(*pctx);
        *pctx = NULL;
        return result;
    }
    gs__ctx_note(*pctx, dev, 0);
    return CUDA_SUCCESS;
}

typedef struct create_args {
    unsigned int flags;
    CUdevice dev;
    CUexecAffinityParam *params;
    int n_params;
    CUctxCreateParams *create_params;
} create_args_t;

static CUresult call_create(CUcontext *pctx, void *arg)
{
    const create_args_t *a = arg;
    return gs__real()->cuCtxCreate(pctx, a->flags, a->dev);
}

static CUresult call_create_v2(CUcontext *pctx, void *arg)
{
    const create_args_t *a = arg;
    return gs__real()->cuCtxCreate_v2(pctx, a->flags, a->dev);
}

static CUresult call_create_v3(CUcontext *pctx, void *arg)
{
    const create_args_t *a = arg;
    return gs__real()->cuCtxCreate_v3(pctx, a->params, a->n_params, a->flags, a->dev);
}

static CUresult call_create_v4(CUcontext *pctx, void *arg)
{
    const create_args_t *a = arg;
    return gs__real()->cuCtxCreate_v4(pctx, a->create_params, a->flags, a->dev);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate);
    create_args_t a = {.flags = flags, .dev = dev};
    return create_measured(pctx, dev, flags, call_create, &a);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v2);
    create_args_t a = {.flags = flags, .dev = dev};
    return create_measured(pctx, dev, flags, call_create_v2, &a);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                          int numParams, unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v3);
    create_args_t a = {.flags = flags, .dev = dev, .params = paramsArray, .n_params = numParams};
    uint64_t kind = numParams == 0 ? flags : GS_FOOTPRINT_OWN; /* affinity: its own memory */
    return create_measured(pctx, dev, kind, call_create_v3, &a);
}

GS_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                          unsigned int flags, CUdevice dev)
{
    REAL_OR_FAIL(cuCtxCreate_v4);
    create_args_t a = {.flags = flags, .dev = dev, .create_params = ctxCreateParams};
    uint64_t kind = ctxCreateParams == NULL ? flags : GS_FOOTPRINT_OWN;
    return create_measured(pctx, dev, kind, call_create_v4, &a);
}

/* The context's memory is gone with it (a reset keeps the context itself, and its charge). */
static CUresult after_destroy(CUresult result, CUcontext ctx, int context_gone)
{
    if (result == CUDA_SUCCESS && gs__accounting() && ctx != NULL) {
        gs__track_drop_gone();
        if (context_gone)
            gs__footprint_end(ctx);
    }
    return result;
}

GS_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    REAL_OR_FAIL(cuCtxDestroy_v2);
    gs__ctx_forget(ctx);
    return after_destroy(gs__real()->cuCtxDestroy_v2(ctx), ctx, 1);
}

GS_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    REAL_OR_FAIL(cuCtxDestroy);
    gs__ctx_forget(ctx);
    return after_destroy(gs__real()->cuCtxDestroy(ctx), ctx, 1);
}

/* Nonzero when dev's primary context exists (is retained by someone in this process); sets
 * *flags to the flags it has or will be created with. */
static int primary_active(CUdevice dev, unsigned int *flags)
{
    const gs__real_t *real = gs__real();
    int active = 0;
    *flags = 0;
    return real->cuDevicePrimaryCtxGetState != NULL &&
           real->cuDevicePrimaryCtxGetState(dev, flags, &active) == CUDA_SUCCESS && active;
}

static CUresult call_retain(CUcontext *pctx, void *arg)
{
    return gs__real()->cuDevicePrimaryCtxRetain(pctx, *(const CUdevice *)arg);
}

/* The first retain creates the primary context: its memory is measured and charged then. */
GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRetain);
    gs__footprint_probe_t probe = {.dev = -1};
    CUresult result = CUDA_SUCCESS;
    unsigned int flags = 0;
    if (gs__accounting() && !primary_active(dev, &flags))
        result = gs__footprint_begin(dev, GS_FOOTPRINT_PRIMARY | flags, &probe);
    if (result == CUDA_SUCCESS)
        result = create_once_more(pctx, dev, call_retain, &dev);
    if (result != CUDA_SUCCESS || pctx == NULL) {
        gs__footprint_abort(&probe);
        return result;
    }
    if (dev >= 0 && dev < GS_MAX_DEVICES) {
        pthread_mutex_lock(&primary_mutex);
        primary[dev] = *pctx;
        pthread_mutex_unlock(&primary_mutex);
        gs__ctx_note(*pctx, dev, 1);
    }
    result = gs__footprint_commit(&probe, *pctx);
    if (result != CUDA_SUCCESS)
        cuDevicePrimaryCtxRelease_v2(dev); /* returns whatever it holds */
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
        after_destroy(CUDA_SUCCESS, primary_of(dev), 1);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRelease_v2);
    gs__ctx_primary_begin(dev);
    CUresult result = gs__real()->cuDevicePrimaryCtxRelease_v2(dev);
    gs__ctx_primary_end(dev);
    return after_release(result, dev);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxRelease);
    gs__ctx_primary_begin(dev);
    CUresult result = gs__real()->cuDevicePrimaryCtxRelease(dev);
    gs__ctx_primary_end(dev);
    return after_release(result, dev);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxReset_v2);
    gs__ctx_primary_begin(dev);
    CUresult result = gs__real()->cuDevicePrimaryCtxReset_v2(dev);
    gs__ctx_primary_end(dev);
    return after_destroy(result, primary_of(dev), 0);
}

GS_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    REAL_OR_FAIL(cuDevicePrimaryCtxReset);
    gs__ctx_primary_begin(dev);
    CUresult result = gs__real()->cuDevicePrimaryCtxReset(dev);
    gs__ctx_primary_end(dev);
    return after_destroy(result, primary_of(dev), 0);
}
