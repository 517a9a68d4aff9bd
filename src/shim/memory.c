/* SPDX-License-Identifier: Apache-2.0 */
/* Linear, pitched and managed device memory: cuMemAlloc*, cuMemAllocManaged, cuMemFree*. */
#include "shim.h"

#include <limits.h>

/* The driver's pitch alignment is at most this; reserving with it never under-counts. */
#define PITCH_ALIGN 512u

typedef CUresult (*alloc_fn)(CUdeviceptr *dptr, size_t bytes, void *arg);

/* The common path of every linear allocation: reserve, allocate, commit or roll back. */
static CUresult alloc_linear(CUdeviceptr *dptr, size_t bytes, const char *what, alloc_fn fn,
                             void *arg)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    gs__charge_t charge;
    result = gs__charge_begin(-1, bytes, what, &charge);
    if (result != CUDA_SUCCESS)
        return result;
    result = fn(dptr, bytes, arg);
    if (result != CUDA_SUCCESS)
        gs__charge_abort(&charge);
    else
        gs__charge_commit(&charge, GS_KIND_LINEAR, (uint64_t)*dptr);
    return result;
}

static CUresult call_alloc_v2(CUdeviceptr *dptr, size_t bytes, void *arg)
{
    (void)arg;
    const gs__real_t *real = gs__real();
    return real->cuMemAlloc_v2 ? real->cuMemAlloc_v2(dptr, bytes) : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return alloc_linear(dptr, bytesize, "cuMemAlloc", call_alloc_v2, NULL);
}

static CUresult call_alloc_v1(CUdeviceptr *dptr, size_t bytes, void *arg)
{
    CUdeviceptr_v1 *out = arg;
    const gs__real_t *real = gs__real();
    CUresult result =
        real->cuMemAlloc ? real->cuMemAlloc(out, (unsigned int)bytes) : CUDA_ERROR_NOT_SUPPORTED;
    *dptr = result == CUDA_SUCCESS ? *out : 0;
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    CUdeviceptr wide = 0;
    return alloc_linear(&wide, bytesize, "cuMemAlloc", call_alloc_v1, dptr);
}

static CUresult call_alloc_managed(CUdeviceptr *dptr, size_t bytes, void *arg)
{
    const gs__real_t *real = gs__real();
    return real->cuMemAllocManaged ? real->cuMemAllocManaged(dptr, bytes, *(unsigned int *)arg)
                                   : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    return alloc_linear(dptr, bytesize, "cuMemAllocManaged", call_alloc_managed, &flags);
}

/* Pitched allocations: the driver picks the pitch, so reserve an upper bound and settle on the
 * exact pitch x height once it is known. */
static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem, int v1)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    size_t bound = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN * height;
    gs__charge_t charge;
    result = gs__charge_begin(-1, bound, "cuMemAllocPitch", &charge);
    if (result != CUDA_SUCCESS)
        return result;
    if (v1) {
        CUdeviceptr_v1 p1 = 0;
        unsigned int pitch1 = 0;
        result = real->cuMemAllocPitch ? real->cuMemAllocPitch(&p1, &pitch1, (unsigned int)width,
                                                               (unsigned int)height, elem)
                                       : CUDA_ERROR_NOT_SUPPORTED;
        *dptr = p1;
        *pitch = pitch1;
    } else {
        result = real->cuMemAllocPitch_v2
                     ? real->cuMemAllocPitch_v2(dptr, pitch, width, height, elem)
                     : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (result != CUDA_SUCCESS) {
        gs__charge_abort(&charge);
        return result;
    }
    if (gs__charge_resize(&charge, (uint64_t)*pitch * height, "cuMemAllocPitch") != CUDA_SUCCESS) {
        real->cuMemFree_v2(*dptr);
        gs__charge_abort(&charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    gs__charge_commit(&charge, GS_KIND_LINEAR, (uint64_t)*dptr);
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                              size_t WidthInBytes, size_t Height,
                                              unsigned int ElementSizeBytes)
{
    return alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes, 0);
}

GS_EXPORT CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                           unsigned int WidthInBytes, unsigned int Height,
                                           unsigned int ElementSizeBytes)
{
    CUdeviceptr wide = 0;
    size_t pitch = 0;
    CUresult result = alloc_pitch(&wide, &pitch, WidthInBytes, Height, ElementSizeBytes, 1);
    if (result == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)wide;
        *pPitch = (unsigned int)pitch;
    }
    return result;
}

static CUresult call_free_v2(void *arg)
{
    const gs__real_t *real = gs__real();
    return real->cuMemFree_v2 ? real->cuMemFree_v2(*(CUdeviceptr *)arg) : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    return gs__free_tracked(GS_KIND_LINEAR, (uint64_t)dptr, call_free_v2, &dptr);
}

static CUresult call_free_v1(void *arg)
{
    const gs__real_t *real = gs__real();
    return real->cuMemFree ? real->cuMemFree(*(CUdeviceptr_v1 *)arg) : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    return gs__free_tracked(GS_KIND_LINEAR, (uint64_t)dptr, call_free_v1, &dptr);
}
