/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts: their lifecycle, the per-thread context stack, and created contexts. */
#include "cuda_internal.h"

#include <string.h>
#include <time.h>

#define CTX_STACK_MAX 64

/* The valid context flags (scheduling, map host, lmem resize, coredump, sync memops). */
#define CTX_FLAGS_ALLOWED 0xFFu

typedef struct ctx_ref {
    CUcontext ctx;
    uint32_t serial;
} ctx_ref_t;

static _Thread_local ctx_ref_t ctx_stack[CTX_STACK_MAX];
static _Thread_local int ctx_depth;

static _Atomic unsigned long long next_ctx_id = 1;

int gsim_cu_ctx_flags_valid(unsigned int flags)
{
    unsigned int sched = flags & CU_CTX_SCHED_MASK;
    return (flags & ~CTX_FLAGS_ALLOWED) == 0 &&
           (sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN ||
            sched == CU_CTX_SCHED_YIELD || sched == CU_CTX_SCHED_BLOCKING_SYNC);
}

void gsim_cu_ctx_default_limits(CUcontext ctx)
{
    memset(ctx->limits, 0, sizeof(ctx->limits));
    ctx->limits[CU_LIMIT_STACK_SIZE] = 1024;
    ctx->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1u << 20;
    ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8u << 20;
    ctx->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    ctx->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    ctx->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
    ctx->limits[CU_LIMIT_SHMEM_SIZE] = 0;
    ctx->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    ctx->shmem_config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
}

/* Initialises the context's lock and condition variable (once per context object). */
void gsim_cu_ctx_init_sync(CUcontext ctx)
{
    pthread_mutex_init(&ctx->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ctx->cond, &attr);
    pthread_condattr_destroy(&attr);
}

/* Makes ctx a fresh, active context on ordinal. */
void gsim_cu_ctx_start(CUcontext ctx, int ordinal, unsigned int flags, int is_primary)
{
    const gsim_cu_device_t *dev = gsim_cu_device(ordinal);
    ctx->ordinal = ordinal;
    ctx->domain = dev->domain;
    ctx->flags = flags;
    ctx->primary = is_primary;
    ctx->id = atomic_fetch_add(&next_ctx_id, 1);
    ctx->blocking_tail = ctx->max_tail = 0;
    ctx->pending_callbacks = 0;
    gsim_cu_stream_init_legacy(ctx);
    memset(ctx->peer, 0, sizeof(ctx->peer));
    gsim_cu_ctx_default_limits(ctx);
    atomic_store(&ctx->active, 1);
}

/* Destroys everything the context owns: what cuCtxDestroy and a primary reset do. */
void gsim_cu_ctx_release_resources(CUcontext ctx)
{
    gsim_cu_stream_destroy_all(ctx);
    gsim_cu_event_destroy_all(ctx);
    gsim_cu_module_destroy_all(ctx);
    gsim_cu_array_destroy_all(ctx);
    gsim_cu_mem_free_ctx(ctx);
    pthread_mutex_lock(&ctx->mu);
    ctx->generation++;
    ctx->blocking_tail = ctx->max_tail = 0;
    gsim_cu_stream_init_legacy(ctx);
    pthread_mutex_unlock(&ctx->mu);
}

static ctx_ref_t ref_of(CUcontext ctx)
{
    return (ctx_ref_t){.ctx = ctx, .serial = ctx != NULL ? ctx->obj.serial : 0};
}

static int ref_alive(ctx_ref_t ref)
{
    return ref.ctx != NULL && gsim_cu_obj_valid(ref.ctx, GSIM_CU_CTX) &&
           ref.ctx->obj.serial == ref.serial;
}

CUresult gsim_cu_ctx_current(CUcontext *ctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0 || ctx_stack[ctx_depth - 1].ctx == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_ref_t ref = ctx_stack[ctx_depth - 1];
    if (!ref_alive(ref))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!atomic_load(&ref.ctx->active))
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = ref.ctx;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_ctx_check(CUcontext ctx)
{
    if (!gsim_cu_obj_valid(ctx, GSIM_CU_CTX) || !atomic_load(&ctx->active))
        return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_ctx_resolve(CUcontext ctx, CUcontext *out)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx == NULL)
        return gsim_cu_ctx_current(out);
    result = gsim_cu_ctx_check(ctx);
    if (result == CUDA_SUCCESS)
        *out = ctx;
    return result;
}

static CUresult push_ctx(CUcontext ctx)
{
    if (ctx_depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ref_of(ctx);
    return CUDA_SUCCESS;
}

/* Removes ctx from the calling thread's stack top when it is there (cuCtxDestroy). */
static void pop_if_current(CUcontext ctx)
{
    if (ctx_depth > 0 && ctx_stack[ctx_depth - 1].ctx == ctx)
        ctx_depth--;
}

/* ---- created contexts ---- */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pctx);
    if (!gsim_cu_ctx_flags_valid(flags))
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    result = gsim_cu_mps_connect();
    if (result == CUDA_SUCCESS)
        result = gsim_cu_mps_attach(dev);
    if (result != CUDA_SUCCESS)
        return result;
    CUcontext ctx = gsim_cu_obj_new(GSIM_CU_CTX);
    if (ctx == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gsim_cu_ctx_init_sync(ctx);
    gsim_cu_ctx_start(ctx, dev, flags, 0);
    ctx->refcount = 1;
    result = gsim_cu_charge_context(ctx, dev);
    if (result == CUDA_SUCCESS)
        result = push_ctx(ctx);
    if (result != CUDA_SUCCESS) {
        gsim_cu_uncharge_context(ctx);
        pthread_cond_destroy(&ctx->cond);
        pthread_mutex_destroy(&ctx->mu);
        gsim_cu_obj_free(ctx);
        return result;
    }
    *pctx = ctx;
    return CUDA_SUCCESS;
}

static CUresult ctx_destroy(CUcontext ctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!gsim_cu_obj_valid(ctx, GSIM_CU_CTX) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    pop_if_current(ctx);
    atomic_store(&ctx->active, 0);
    gsim_cu_ctx_release_resources(ctx);
    gsim_cu_uncharge_context(ctx);
    pthread_cond_destroy(&ctx->cond);
    pthread_mutex_destroy(&ctx->mu);
    gsim_cu_obj_free(ctx);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

GSIM_CU_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

GSIM_CU_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                    int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && paramsArray == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < numParams; i++) {
        if (paramsArray[i].type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return ctx_create(pctx, flags, dev);
}

GSIM_CU_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                    unsigned int flags, CUdevice dev)
{
    if (ctxCreateParams != NULL && ctxCreateParams->cigParams != NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (ctxCreateParams != NULL)
        return cuCtxCreate_v3(pctx, ctxCreateParams->execAffinityParams,
                              ctxCreateParams->numExecAffinityParams, flags, dev);
    return ctx_create(pctx, flags, dev);
}

GSIM_CU_API CUresult cuCtxDestroy(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

GSIM_CU_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

GSIM_CU_API CUresult cuCtxAttach(CUcontext *pctx, unsigned int flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (pctx == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT; /* primary contexts count retains instead */
    pthread_mutex_lock(&ctx->mu);
    ctx->refcount++;
    pthread_mutex_unlock(&ctx->mu);
    *pctx = ctx;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxDetach(CUcontext ctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_ctx_check(ctx) != CUDA_SUCCESS || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&ctx->mu);
    int left = --ctx->refcount;
    pthread_mutex_unlock(&ctx->mu);
    return left > 0 ? CUDA_SUCCESS : ctx_destroy(ctx);
}

/* ---- the context stack ---- */

static CUresult ctx_push(CUcontext ctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    result = gsim_cu_ctx_check(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    return push_ctx(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_ref_t ref = ctx_stack[--ctx_depth];
    if (pctx != NULL)
        *pctx = ref_alive(ref) ? ref.ctx : NULL;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return ctx_push(ctx);
}

GSIM_CU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    return ctx_push(ctx);
}

GSIM_CU_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

GSIM_CU_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

GSIM_CU_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx == NULL) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    result = gsim_cu_ctx_check(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0)
        return push_ctx(ctx);
    ctx_stack[ctx_depth - 1] = ref_of(ctx);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pctx);
    *pctx = NULL;
    if (ctx_depth > 0 && ref_alive(ctx_stack[ctx_depth - 1]))
        *pctx = ctx_stack[ctx_depth - 1].ctx;
    return CUDA_SUCCESS;
}
