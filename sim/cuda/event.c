/* SPDX-License-Identifier: Apache-2.0 */
/* Events: record a point of a stream's simulated timeline, query, wait, and measure it. */
#include "cuda_internal.h"

#define EVENT_FLAGS_ALLOWED                                                                        \
    (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

struct CUevent_st {
    gsim_cu_obj_t obj;
    CUcontext ctx;
    unsigned int flags;
    _Atomic int recorded;
    _Atomic int64_t time; /* wall ns at which the recorded work is complete */
};

GSIM_CU_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (phEvent == NULL || (Flags & ~(unsigned)EVENT_FLAGS_ALLOWED) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    CUevent ev = gsim_cu_obj_new(GSIM_CU_EVENT);
    if (ev == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ev->ctx = ctx;
    ev->flags = Flags;
    *phEvent = ev;
    return CUDA_SUCCESS;
}

static CUresult event_check(CUevent ev)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(ev, GSIM_CU_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult gsim_cu_event_record_on(CUevent ev, gsim_cu_stream_t *s)
{
    if (!gsim_cu_obj_valid(ev, GSIM_CU_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if (ev->ctx != s->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    atomic_store(&ev->time, gsim_cu_stream_mark(s));
    atomic_store(&ev->recorded, 1);
    return CUDA_SUCCESS;
}

CUresult gsim_cu_event_time(CUevent ev, int64_t *t_ns)
{
    if (!gsim_cu_obj_valid(ev, GSIM_CU_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    *t_ns = atomic_load(&ev->recorded) ? atomic_load(&ev->time) : 0;
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned int flags, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags != 0 && flags != CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return gsim_cu_event_record_on(hEvent, s);
}

GSIM_CU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0, 0);
}

GSIM_CU_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0, 1);
}

GSIM_CU_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return event_record(hEvent, hStream, flags, 0);
}

GSIM_CU_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                 unsigned int flags)
{
    return event_record(hEvent, hStream, flags, 1);
}

GSIM_CU_API CUresult cuEventQuery(CUevent hEvent)
{
    CUresult result = event_check(hEvent);
    if (result != CUDA_SUCCESS)
        return result;
    if (!atomic_load(&hEvent->recorded))
        return CUDA_SUCCESS;
    return gsim_now_ns() >= atomic_load(&hEvent->time) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

GSIM_CU_API CUresult cuEventSynchronize(CUevent hEvent)
{
    CUresult result = event_check(hEvent);
    if (result != CUDA_SUCCESS)
        return result;
    if (atomic_load(&hEvent->recorded))
        gsim_sleep_until(atomic_load(&hEvent->time));
    gsim_cu_pool_trim_all();
    return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent hEvent)
{
    CUresult result = event_check(hEvent);
    if (result == CUDA_SUCCESS)
        gsim_cu_obj_free(hEvent);
    return result;
}

GSIM_CU_API CUresult cuEventDestroy(CUevent hEvent)
{
    return event_destroy(hEvent);
}

GSIM_CU_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    return event_destroy(hEvent);
}

static CUresult elapsed(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUresult result = gsim_cu_first_error(event_check(hStart), event_check(hEnd));
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pMilliseconds);
    if (!atomic_load(&hStart->recorded) || !atomic_load(&hEnd->recorded))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    int64_t t0 = atomic_load(&hStart->time), t1 = atomic_load(&hEnd->time);
    int64_t now = gsim_now_ns();
    if (now < t0 || now < t1)
        return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float)((double)(t1 - t0) * gsim_time_scale() / 1e6);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return elapsed(pMilliseconds, hStart, hEnd);
}

GSIM_CU_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return elapsed(pMilliseconds, hStart, hEnd);
}

static void destroy_if_in_ctx(void *obj, void *arg)
{
    CUevent ev = obj;
    if (ev->ctx == arg)
        gsim_cu_obj_free(ev);
}

void gsim_cu_event_destroy_all(CUcontext ctx)
{
    gsim_cu_obj_foreach(GSIM_CU_EVENT, destroy_if_in_ctx, ctx);
}
