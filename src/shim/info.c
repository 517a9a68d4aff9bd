/* SPDX-License-Identifier: Apache-2.0 */
/* What the application sees of memory: its lease's slice, never more than the device has. */
#include "shim.h"

#include <limits.h>

/* Narrows the driver's free/total of ordinal dev to the lease: total is the limit (at most the
 * device's), free is what the lease has left (never negative, at most the device's free). */
static void lease_view(int dev, size_t *free_bytes, size_t *total_bytes)
{
    if (!gs__accounting() || dev < 0 || dev >= GS_MAX_DEVICES)
        return;
    uint64_t limit = gs__limit((unsigned)dev);
    if (limit == 0)
        return;
    uint64_t total = *total_bytes < limit ? *total_bytes : limit;
    uint64_t used = gs_region_used(gs__region(), (unsigned)dev);
    uint64_t left = used < total ? total - used : 0;
    *total_bytes = total;
    *free_bytes = left < *free_bytes ? left : *free_bytes;
}

GS_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemGetInfo_v2 == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuMemGetInfo_v2(free, total);
    if (result == CUDA_SUCCESS && free != NULL && total != NULL)
        lease_view(gs__current_device(), free, total);
    return result;
}

static unsigned int clamp_uint(size_t v)
{
    return v > UINT_MAX ? UINT_MAX : (unsigned int)v;
}

GS_EXPORT CUresult CUDAAPI cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemGetInfo_v2 == NULL || free == NULL || total == NULL)
        return real->cuMemGetInfo != NULL ? real->cuMemGetInfo(free, total)
                                          : CUDA_ERROR_NOT_SUPPORTED;
    size_t f = 0, t = 0;
    result = real->cuMemGetInfo_v2(&f, &t);
    if (result == CUDA_SUCCESS) {
        lease_view(gs__current_device(), &f, &t);
        *free = clamp_uint(f);
        *total = clamp_uint(t);
    }
    return result;
}

static void lease_total(CUdevice dev, size_t *bytes)
{
    size_t unused = SIZE_MAX;
    lease_view(dev, &unused, bytes);
}

GS_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuDeviceTotalMem_v2 == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuDeviceTotalMem_v2(bytes, dev);
    if (result == CUDA_SUCCESS && bytes != NULL)
        lease_total(dev, bytes);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuDeviceTotalMem_v2 == NULL || bytes == NULL)
        return real->cuDeviceTotalMem != NULL ? real->cuDeviceTotalMem(bytes, dev)
                                              : CUDA_ERROR_NOT_SUPPORTED;
    size_t t = 0;
    result = real->cuDeviceTotalMem_v2(&t, dev);
    if (result == CUDA_SUCCESS) {
        lease_total(dev, &t);
        *bytes = clamp_uint(t);
    }
    return result;
}
