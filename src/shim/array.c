/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA arrays and mipmapped arrays: charged with the driver's own memory requirement. */
#include "shim.h"

/* Bytes per channel of an array format; formats not listed are charged by the driver's figure
 * (cuArrayGetMemoryRequirements) after an estimate of one byte per element. */
static uint64_t format_bytes(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 1;
    }
}

static uint64_t at_least_one(uint64_t v)
{
    return v != 0 ? v : 1;
}

static uint64_t estimate(size_t width, size_t height, size_t depth, CUarray_format format,
                         unsigned int channels)
{
    return (uint64_t)width * at_least_one(height) * at_least_one(depth) * format_bytes(format) *
           at_least_one(channels);
}

/* Settles the charge on the driver's exact requirement; destroys the array when the extra does
 * not fit. */
static CUresult settle(gs__charge_t *charge, uint64_t exact, CUresult (*destroy)(void *),
                       void *handle)
{
    if (gs__charge_resize(charge, exact, "cuArrayCreate") == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    destroy(handle);
    gs__charge_abort(charge);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult destroy_array(void *handle)
{
    return gs__real()->cuArrayDestroy(*(CUarray *)handle);
}

static CUresult finish_array(gs__charge_t *charge, CUresult result, CUarray *array)
{
    if (result != CUDA_SUCCESS) {
        gs__charge_abort(charge);
        return result;
    }
    const gs__real_t *real = gs__real();
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    if (charge->active && real->cuArrayGetMemoryRequirements != NULL &&
        real->cuArrayGetMemoryRequirements(&req, *array, (CUdevice)charge->dev) == CUDA_SUCCESS) {
        result = settle(charge, req.size, destroy_array, array);
        if (result != CUDA_SUCCESS)
            return result;
    }
    gs__charge_commit(charge, GS_KIND_ARRAY, (uint64_t)(uintptr_t)*array);
    return CUDA_SUCCESS;
}

/* Creates through call (one of the driver's array constructors) with an estimated charge. */
static CUresult create_array(CUarray *array, uint64_t bytes, const char *what,
                             CUresult (*call)(CUarray *, const void *), const void *desc)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    gs__charge_t charge;
    result = gs__charge_begin(-1, bytes, what, &charge);
    if (result != CUDA_SUCCESS)
        return result;
    return finish_array(&charge, call(array, desc), array);
}

static CUresult call_array_v2(CUarray *a, const void *d)
{
    const gs__real_t *real = gs__real();
    return real->cuArrayCreate_v2 ? real->cuArrayCreate_v2(a, d) : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult call_array_v1(CUarray *a, const void *d)
{
    const gs__real_t *real = gs__real();
    return real->cuArrayCreate ? real->cuArrayCreate(a, d) : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult call_array3d_v2(CUarray *a, const void *d)
{
    const gs__real_t *real = gs__real();
    return real->cuArray3DCreate_v2 ? real->cuArray3DCreate_v2(a, d) : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult call_array3d_v1(CUarray *a, const void *d)
{
    const gs__real_t *real = gs__real();
    return real->cuArray3DCreate ? real->cuArray3DCreate(a, d) : CUDA_ERROR_NOT_SUPPORTED;
}

GS_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle,
                                            const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return call_array_v2(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
    return create_array(pHandle, estimate(d->Width, d->Height, 1, d->Format, d->NumChannels),
                        "cuArrayCreate", call_array_v2, d);
}

GS_EXPORT CUresult CUDAAPI cuArrayCreate(CUarray *pHandle,
                                         const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return call_array_v1(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR_v1 *d = pAllocateArray;
    return create_array(pHandle, estimate(d->Width, d->Height, 1, d->Format, d->NumChannels),
                        "cuArrayCreate", call_array_v1, d);
}

GS_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle,
                                              const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return call_array3d_v2(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
    return create_array(pHandle, estimate(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                        "cuArray3DCreate", call_array3d_v2, d);
}

GS_EXPORT CUresult CUDAAPI cuArray3DCreate(CUarray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return call_array3d_v1(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR_v1 *d = pAllocateArray;
    return create_array(pHandle, estimate(d->Width, d->Height, d->Depth, d->Format, d->NumChannels),
                        "cuArray3DCreate", call_array3d_v1, d);
}

GS_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (gs__real()->cuArrayDestroy == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    return gs__free_tracked(GS_KIND_ARRAY, (uint64_t)(uintptr_t)hArray, destroy_array, &hArray);
}

static CUresult destroy_mipmap(void *handle)
{
    return gs__real()->cuMipmappedArrayDestroy(*(CUmipmappedArray *)handle);
}

/* Sum of the levels' estimates: each level halves every dimension (at least 1). */
static uint64_t mipmap_estimate(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
    uint64_t total = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned int l = 0; l < levels; l++) {
        total += estimate(w, h, z, d->Format, d->NumChannels);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        z = z > 1 ? z / 2 : z;
    }
    return total;
}

GS_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                                  const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                                  unsigned int numMipmapLevels)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMipmappedArrayCreate == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    gs__charge_t charge = {0};
    if (desc != NULL) {
        result = gs__charge_begin(-1, mipmap_estimate(desc, numMipmapLevels),
                                  "cuMipmappedArrayCreate", &charge);
        if (result != CUDA_SUCCESS)
            return result;
    }
    result = real->cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels);
    if (result != CUDA_SUCCESS) {
        gs__charge_abort(&charge);
        return result;
    }
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    if (charge.active && real->cuMipmappedArrayGetMemoryRequirements != NULL &&
        real->cuMipmappedArrayGetMemoryRequirements(&req, *pHandle, (CUdevice)charge.dev) ==
            CUDA_SUCCESS) {
        result = settle(&charge, req.size, destroy_mipmap, pHandle);
        if (result != CUDA_SUCCESS)
            return result;
    }
    gs__charge_commit(&charge, GS_KIND_MIPMAP, (uint64_t)(uintptr_t)*pHandle);
    return CUDA_SUCCESS;
}

GS_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (gs__real()->cuMipmappedArrayDestroy == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    return gs__free_tracked(GS_KIND_MIPMAP, (uint64_t)(uintptr_t)hMipmappedArray, destroy_mipmap,
                            &hMipmappedArray);
}
