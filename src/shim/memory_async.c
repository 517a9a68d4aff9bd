/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync, pools.
 * Charged when allocated and returned when freed (not when the pool trims), so the limit holds
 * whatever the pool's release threshold. Allocations made while a stream is being captured
 * become graph memory and are charged when the graph is launched (graph.c). */
#include "shim.h"

typedef CUresult (*async_alloc_fn)(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                   CUstream stream);

static int stream_capturing(CUstream stream, int ptsz)
{
    const gs__real_t *real = gs__real();
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    __typeof__(real->cuStreamIsCapturing) fn = ptsz && real->cuStreamIsCapturing_ptsz
                                                   ? real->cuStreamIsCapturing_ptsz
                                                   : real->cuStreamIsCapturing;
    if (fn != NULL && fn(stream, &status) != CUDA_SUCCESS)
        return 0;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

static int copy_pool_device(gs__alloc_t *entry, void *arg)
{
    *(int *)arg = (int)entry->dev;
    return 0;
}

/* The device of pool: recorded when the shim saw it created, else the current device. */
static int pool_device(CUmemoryPool pool)
{
    int dev = -1;
    gs__alloc_t unused;
    if (pool != NULL && gs__track_update(GS_KIND_POOL, (uint64_t)(uintptr_t)pool, copy_pool_device,
                                         &dev, &unused) == 0)
        return dev;
    return -1;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream,
                            int ptsz, async_alloc_fn fn, const char *what)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (fn == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    gs__charge_t charge = {0};
    if (gs__accounting() && !stream_capturing(stream, ptsz)) {
        result = gs__charge_begin(pool_device(pool), bytes, what, &charge);
        if (result != CUDA_SUCCESS)
            return result;
    }
    result = fn(dptr, bytes, pool, stream);
    if (result != CUDA_SUCCESS)
        gs__charge_abort(&charge);
    else
        gs__charge_commit(&charge, GS_KIND_LINEAR, (uint64_t)*dptr);
    return result;
}

static CUresult call_alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                 CUstream stream)
{
    (void)pool;
    return gs__real()->cuMemAllocAsync(dptr, bytes, stream);
}

static CUresult call_alloc_async_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                      CUstream stream)
{
    (void)pool;
    return gs__real()->cuMemAllocAsync_ptsz(dptr, bytes, stream);
}

GS_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, hStream, 0,
                       gs__real()->cuMemAllocAsync ? call_alloc_async : NULL, "cuMemAllocAsync");
}

GS_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, hStream, 1,
                       gs__real()->cuMemAllocAsync_ptsz ? call_alloc_async_ptsz : NULL,
                       "cuMemAllocAsync");
}

GS_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                   CUmemoryPool pool, CUstream hStream)
{
    return alloc_async(dptr, bytesize, pool, hStream, 0, gs__real()->cuMemAllocFromPoolAsync,
                       "cuMemAllocFromPoolAsync");
}

GS_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                        CUmemoryPool pool, CUstream hStream)
{
    return alloc_async(dptr, bytesize, pool, hStream, 1, gs__real()->cuMemAllocFromPoolAsync_ptsz,
                       "cuMemAllocFromPoolAsync");
}

typedef struct free_async_args {
    CUdeviceptr dptr;
    CUstream stream;
    __typeof__(&cuMemFreeAsync) fn;
} free_async_args_t;

static CUresult call_free_async(void *arg)
{
    free_async_args_t *a = arg;
    return a->fn != NULL ? a->fn(a->dptr, a->stream) : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    free_async_args_t args = {dptr, hStream, gs__real()->cuMemFreeAsync};
    return gs__free_tracked(GS_KIND_LINEAR, (uint64_t)dptr, call_free_async, &args);
}

GS_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    free_async_args_t args = {dptr, hStream, gs__real()->cuMemFreeAsync_ptsz};
    return gs__free_tracked(GS_KIND_LINEAR, (uint64_t)dptr, call_free_async, &args);
}

/* Remembers which device pool's memory is on (GS_MAX_DEVICES: not a device, not charged). */
static void note_pool(CUmemoryPool pool, const CUmemLocation *location)
{
    if (!gs__accounting() || pool == NULL || location == NULL)
        return;
    int on_device = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id >= 0;
    gs__alloc_t entry = {.kind = GS_KIND_POOL,
                         .key = (uint64_t)(uintptr_t)pool,
                         .dev = on_device ? (unsigned)location->id : GS_MAX_DEVICES};
    gs__track_insert(&entry, NULL);
}

GS_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    REAL_OR_FAIL(cuMemPoolCreate);
    CUresult result = gs__real()->cuMemPoolCreate(pool, poolProps);
    if (result == CUDA_SUCCESS && poolProps != NULL)
        note_pool(*pool, &poolProps->location);
    return result;
}

/* Device pools handed out by the driver: their allocations are charged to that device. */
GS_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    REAL_OR_FAIL(cuDeviceGetDefaultMemPool);
    CUresult result = gs__real()->cuDeviceGetDefaultMemPool(pool_out, dev);
    CUmemLocation where = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    if (result == CUDA_SUCCESS)
        note_pool(*pool_out, &where);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    REAL_OR_FAIL(cuDeviceGetMemPool);
    CUresult result = gs__real()->cuDeviceGetMemPool(pool, dev);
    CUmemLocation where = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    if (result == CUDA_SUCCESS)
        note_pool(*pool, &where);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                                  CUmemAllocationType type)
{
    REAL_OR_FAIL(cuMemGetDefaultMemPool);
    CUresult result = gs__real()->cuMemGetDefaultMemPool(pool_out, location, type);
    if (result == CUDA_SUCCESS)
        note_pool(*pool_out, location);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                           CUmemAllocationType type)
{
    REAL_OR_FAIL(cuMemGetMemPool);
    CUresult result = gs__real()->cuMemGetMemPool(pool, location, type);
    if (result == CUDA_SUCCESS)
        note_pool(*pool, location);
    return result;
}
