/* SPDX-License-Identifier: Apache-2.0 */
/* Streams and simulated time: stream order, the legacy and per-thread default streams, and the
 * reservation of kernel time on the device's timeline in the node. */
#include "cuda_internal.h"

#include <errno.h>

#define PRIORITY_LEAST    0
#define PRIORITY_GREATEST (-5)

/* The per-thread default streams of the calling thread, one per context it used. */
#define PT_CACHE 8

typedef struct pt_entry {
    CUcontext ctx;
    uint32_t ctx_serial;
    uint64_t generation;
    gsim_cu_stream_t *stream;
    uint32_t stream_serial;
} pt_entry_t;

static _Thread_local pt_entry_t pt_cache[PT_CACHE];
static _Thread_local unsigned pt_next;
static _Atomic unsigned long long next_stream_id = 3; /* 1, 2: legacy and per-thread handles */

void gsim_cu_stream_init_legacy(CUcontext ctx)
{
    gsim_cu_stream_t *s = &ctx->legacy;
    s->ctx = ctx;
    s->type = GSIM_CU_STREAM_LEGACY;
    s->flags = 0;
    s->priority = PRIORITY_LEAST;
    s->id = 1;
    s->tail = 0;
    s->pending_callbacks = 0;
}

static gsim_cu_stream_t *stream_new(CUcontext ctx, int type, unsigned int flags, int priority)
{
    gsim_cu_stream_t *s = gsim_cu_obj_new(GSIM_CU_STREAM);
    if (s == NULL)
        return NULL;
    s->ctx = ctx;
    s->type = type;
    s->flags = flags;
    s->priority = priority;
    s->id = atomic_fetch_add(&next_stream_id, 1);
    pthread_mutex_lock(&ctx->mu);
    s->ctx_generation = ctx->generation;
    pthread_mutex_unlock(&ctx->mu);
    return s;
}

/* Returns the calling thread's per-thread default stream of ctx, creating it on first use. */
static gsim_cu_stream_t *per_thread_stream(CUcontext ctx)
{
    for (unsigned i = 0; i < PT_CACHE; i++) {
        pt_entry_t *e = &pt_cache[i];
        if (e->ctx == ctx && e->ctx_serial == ctx->obj.serial && e->generation == ctx->generation &&
            gsim_cu_obj_valid(e->stream, GSIM_CU_STREAM) &&
            e->stream->obj.serial == e->stream_serial)
            return e->stream;
    }
    gsim_cu_stream_t *s = stream_new(ctx, GSIM_CU_STREAM_PER_THREAD, 0, PRIORITY_LEAST);
    if (s == NULL)
        return NULL;
    pt_cache[pt_next % PT_CACHE] = (pt_entry_t){.ctx = ctx,
                                                .ctx_serial = ctx->obj.serial,
                                                .generation = s->ctx_generation,
                                                .stream = s,
                                                .stream_serial = s->obj.serial};
    pt_next++;
    return s;
}

static int stream_alive(const gsim_cu_stream_t *s)
{
    return gsim_cu_obj_valid(s, GSIM_CU_STREAM) && gsim_cu_ctx_check(s->ctx) == CUDA_SUCCESS &&
           s->ctx_generation == s->ctx->generation;
}

CUresult gsim_cu_stream_resolve(CUstream handle, int per_thread, gsim_cu_stream_t **out)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    int special = handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
    if (!special) {
        if (!stream_alive(handle))
            return CUDA_ERROR_INVALID_HANDLE;
        *out = handle;
        return CUDA_SUCCESS;
    }
    CUcontext ctx;
    result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (handle == CU_STREAM_PER_THREAD || (handle == NULL && per_thread)) {
        *out = per_thread_stream(ctx);
        return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = &ctx->legacy;
    return CUDA_SUCCESS;
}

static int is_blocking(const gsim_cu_stream_t *s)
{
    return s->type != GSIM_CU_STREAM_LEGACY && !(s->flags & CU_STREAM_NON_BLOCKING);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* When new work on s may start: after s's own work, and after the legacy default stream's (for
 * blocking streams) or every blocking stream's (for the legacy stream). ctx->mu held. */
static int64_t ready_locked(const gsim_cu_stream_t *s)
{
    const CUcontext ctx = s->ctx;
    if (s->type == GSIM_CU_STREAM_LEGACY)
        return max64(s->tail, ctx->blocking_tail);
    if (is_blocking(s))
        return max64(s->tail, ctx->legacy.tail);
    return s->tail;
}

static void advance_locked(gsim_cu_stream_t *s, int64_t end)
{
    CUcontext ctx = s->ctx;
    s->tail = max64(s->tail, end);
    if (is_blocking(s))
        ctx->blocking_tail = max64(ctx->blocking_tail, end);
    ctx->max_tail = max64(ctx->max_tail, end);
}

/* Reserves a kernel of dur wall ns (with the device to itself) from ready on the context's domain.
 * Returns 0, -EAGAIN (the timeline is full: *start is when to retry) or -ENODEV (the domain is
 * gone). The process's and the device's busy time grow by the time it occupies the device. */
static int reserve_time(CUcontext ctx, int64_t ready, int64_t dur, int64_t *start, int64_t *end)
{
    gsim_node_t *node = gsim_cu_node();
    gsim_work_t work = {
        .pid = gsim_cu_pid(), .mps_pct = gsim_cu_mps_pct(), .ready_ns = ready, .work_ns = dur};
    gsim_node_lock(node);
    int rc = gsim_node_reserve_locked(node, ctx->domain, &work, start, end);
    gsim_node_unlock(node);
    return rc;
}

CUresult gsim_cu_stream_submit(gsim_cu_stream_t *s, int64_t dur_ns, int64_t *end_ns)
{
    CUcontext ctx = s->ctx;
    for (;;) {
        pthread_mutex_lock(&ctx->mu);
        int64_t start = ready_locked(s), end = start;
        int rc = dur_ns > 0 ? reserve_time(ctx, start, dur_ns, &start, &end) : 0;
        if (rc == 0)
            advance_locked(s, end);
        pthread_mutex_unlock(&ctx->mu);
        if (rc == -EAGAIN) {
            gsim_sleep_until(start);
            continue;
        }
        if (rc != 0)
            return CUDA_ERROR_DEVICE_UNAVAILABLE;
        if (end_ns != NULL)
            *end_ns = end;
        return CUDA_SUCCESS;
    }
}

int64_t gsim_cu_stream_mark(gsim_cu_stream_t *s)
{
    int64_t now = gsim_now_ns();
    pthread_mutex_lock(&s->ctx->mu);
    int64_t t = max64(ready_locked(s), now);
    advance_locked(s, t);
    pthread_mutex_unlock(&s->ctx->mu);
    return t;
}

void gsim_cu_stream_wait_until(gsim_cu_stream_t *s, int64_t t_ns)
{
    pthread_mutex_lock(&s->ctx->mu);
    advance_locked(s, t_ns);
    pthread_mutex_unlock(&s->ctx->mu);
}

void gsim_cu_stream_wait_idle(gsim_cu_stream_t *s)
{
    pthread_mutex_lock(&s->ctx->mu);
    int64_t t = ready_locked(s);
    pthread_mutex_unlock(&s->ctx->mu);
    gsim_sleep_until(t);
}

void gsim_cu_stream_sync(gsim_cu_stream_t *s)
{
    pthread_mutex_lock(&s->ctx->mu);
    int64_t t = s->type == GSIM_CU_STREAM_LEGACY ? ready_locked(s) : s->tail;
    pthread_mutex_unlock(&s->ctx->mu);
    gsim_sleep_until(t);
    gsim_cu_wait_host_calls(s->ctx, s);
    gsim_cu_pool_trim_all();
}

void gsim_cu_ctx_sync(CUcontext ctx)
{
    pthread_mutex_lock(&ctx->mu);
    int64_t t = ctx->max_tail;
    pthread_mutex_unlock(&ctx->mu);
    gsim_sleep_until(t);
    gsim_cu_wait_host_calls(ctx, NULL);
    gsim_cu_pool_trim_all();
}

static void stream_free(gsim_cu_stream_t *s)
{
    gsim_cu_wait_host_calls(s->ctx, s);
    gsim_cu_obj_free(s);
}

static void destroy_if_in_ctx(void *obj, void *arg)
{
    gsim_cu_stream_t *s = obj;
    if (s->ctx == arg)
        stream_free(s);
}

void gsim_cu_stream_destroy_all(CUcontext ctx)
{
    gsim_cu_obj_foreach(GSIM_CU_STREAM, destroy_if_in_ctx, ctx);
    gsim_cu_wait_host_calls(ctx, &ctx->legacy);
}

/* ---- the stream API ---- */

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (phStream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (priority > PRIORITY_LEAST)
        priority = PRIORITY_LEAST;
    if (priority < PRIORITY_GREATEST)
        priority = PRIORITY_GREATEST;
    gsim_cu_stream_t *s = stream_new(ctx, GSIM_CU_STREAM_USER, flags, priority);
    if (s == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phStream = s;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, PRIORITY_LEAST);
}

GSIM_CU_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                int priority)
{
    return stream_create(phStream, flags, priority);
}

static CUresult stream_destroy(CUstream hStream)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!gsim_cu_obj_valid(hStream, GSIM_CU_STREAM) || hStream->type != GSIM_CU_STREAM_USER)
        return CUDA_ERROR_INVALID_HANDLE;
    stream_free(hStream);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuStreamDestroy(CUstream hStream)
{
    return stream_destroy(hStream);
}

GSIM_CU_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    return stream_destroy(hStream);
}

static CUresult stream_synchronize(CUstream hStream, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result == CUDA_SUCCESS)
        gsim_cu_stream_sync(s);
    return result;
}

GSIM_CU_API CUresult cuStreamSynchronize(CUstream hStream)
{
    return stream_synchronize(hStream, 0);
}

GSIM_CU_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_synchronize(hStream, 1);
}

static CUresult stream_query(CUstream hStream, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&s->ctx->mu);
    int64_t t = s->type == GSIM_CU_STREAM_LEGACY ? ready_locked(s) : s->tail;
    int pending = s->pending_callbacks;
    pthread_mutex_unlock(&s->ctx->mu);
    return gsim_now_ns() >= t && pending == 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

GSIM_CU_API CUresult cuStreamQuery(CUstream hStream)
{
    return stream_query(hStream, 0);
}

GSIM_CU_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return stream_query(hStream, 1);
}

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int Flags,
                                  int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (Flags != 0 && Flags != CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    int64_t t;
    result = gsim_cu_event_time(hEvent, &t);
    if (result == CUDA_SUCCESS)
        gsim_cu_stream_wait_until(s, t);
    return result;
}

GSIM_CU_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags, 0);
}

GSIM_CU_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags, 1);
}

static CUresult add_callback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (callback == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_host_call_t call = {.stream_cb = callback, .user = userData, .handle = hStream};
    return gsim_cu_stream_host_call(s, &call);
}

GSIM_CU_API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                         void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags, 0);
}

GSIM_CU_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                              void *userData, unsigned int flags)
{
    return add_callback(hStream, callback, userData, flags, 1);
}

static CUresult launch_host_func(CUstream hStream, CUhostFn fn, void *userData, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(fn);
    gsim_cu_host_call_t call = {.host_fn = fn, .user = userData, .handle = hStream};
    return gsim_cu_stream_host_call(s, &call);
}

GSIM_CU_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host_func(hStream, fn, userData, 0);
}

GSIM_CU_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return launch_host_func(hStream, fn, userData, 1);
}

/* ---- stream queries ---- */

/* Resolves hStream for a query whose out-pointer must not be NULL. */
static CUresult query_args(CUstream hStream, int per_thread, const void *out, gsim_cu_stream_t **s)
{
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, s);
    if (result == CUDA_SUCCESS && out == NULL)
        result = CUDA_ERROR_INVALID_VALUE;
    return result;
}

#define STREAM_QUERY(name, type, arg, expr)                                                        \
    static CUresult name##_impl(CUstream hStream, type *arg, int per_thread)                       \
    {                                                                                              \
        gsim_cu_stream_t *s;                                                                       \
        CUresult result = query_args(hStream, per_thread, arg, &s);                                \
        if (result == CUDA_SUCCESS)                                                                \
            *arg = (expr);                                                                         \
        return result;                                                                             \
    }                                                                                              \
    GSIM_CU_API CUresult name(CUstream hStream, type *arg)                                         \
    {                                                                                              \
        return name##_impl(hStream, arg, 0);                                                       \
    }                                                                                              \
    GSIM_CU_API CUresult name##_ptsz(CUstream hStream, type *arg)                                  \
    {                                                                                              \
        return name##_impl(hStream, arg, 1);                                                       \
    }

STREAM_QUERY(cuStreamGetPriority, int, priority, s->priority)
STREAM_QUERY(cuStreamGetFlags, unsigned int, flags, s->flags)
STREAM_QUERY(cuStreamGetCtx, CUcontext, pctx, s->ctx)
STREAM_QUERY(cuStreamGetId, unsigned long long, streamId,
             s->type == GSIM_CU_STREAM_PER_THREAD ? 2 : s->id)
STREAM_QUERY(cuStreamGetDevice, CUdevice, device, s->ctx->ordinal)

static CUresult get_ctx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = query_args(hStream, per_thread, pCtx, &s);
    if (result == CUDA_SUCCESS && pGreenCtx == NULL)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        *pCtx = s->ctx;
        *pGreenCtx = NULL;
    }
    return result;
}

GSIM_CU_API CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    return get_ctx_v2(hStream, pCtx, pGreenCtx, 0);
}

GSIM_CU_API CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx,
                                            CUgreenCtx *pGreenCtx)
{
    return get_ctx_v2(hStream, pCtx, pGreenCtx, 1);
}

static CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *captureStatus, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = query_args(hStream, per_thread, captureStatus, &s);
    if (result == CUDA_SUCCESS)
        *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    return result;
}

GSIM_CU_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus, 0);
}

GSIM_CU_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                              CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus, 1);
}

static CUresult attach_mem(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags,
                           int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
        flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find(dptr, &a) != 0 || a.kind != GSIM_CU_MEM_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    if (length != 0 && (dptr != a.base || length != a.size))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                            unsigned int flags)
{
    return attach_mem(hStream, dptr, length, flags, 0);
}

GSIM_CU_API CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                                 unsigned int flags)
{
    return attach_mem(hStream, dptr, length, flags, 1);
}
