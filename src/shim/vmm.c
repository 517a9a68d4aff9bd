/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual memory management: cuMemCreate charges the physical allocation; the charge returns
 * when its last reference (creation and each cuMemRetainAllocationHandle, each ended by a
 * cuMemRelease) and its last mapping are gone, as the driver frees it. */
#include "shim.h"

GS_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemCreate == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    gs__charge_t charge = {0};
    if (prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        result = gs__charge_begin(prop->location.id, size, "cuMemCreate", &charge);
        if (result != CUDA_SUCCESS)
            return result;
    }
    result = real->cuMemCreate(handle, size, prop, flags);
    if (result != CUDA_SUCCESS)
        gs__charge_abort(&charge);
    else
        gs__charge_commit(&charge, GS_KIND_VMM, (uint64_t)*handle);
    return result;
}

static int add_mapping(gs__alloc_t *entry, void *arg)
{
    (void)arg;
    entry->maps++;
    return 0;
}

/* Ends one mapping; the entry goes (returned for uncharging) when nothing else holds it. */
static int drop_mapping(gs__alloc_t *entry, void *arg)
{
    (void)arg;
    if (entry->maps > 0)
        entry->maps--;
    return entry->maps == 0 && entry->refs == 0;
}

static int add_reference(gs__alloc_t *entry, void *arg)
{
    (void)arg;
    entry->refs++;
    return 0;
}

static int drop_reference(gs__alloc_t *entry, void *arg)
{
    (void)arg;
    if (entry->refs > 0)
        entry->refs--;
    return entry->maps == 0 && entry->refs == 0;
}

GS_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemMap == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuMemMap(ptr, size, offset, handle, flags);
    gs__alloc_t unused;
    if (result == CUDA_SUCCESS && gs__accounting() &&
        gs__track_update(GS_KIND_VMM, (uint64_t)handle, add_mapping, NULL, &unused) == 0) {
        gs__alloc_t map = {
            .kind = GS_KIND_MAP, .key = (uint64_t)ptr, .parent = (uint64_t)handle, .span = size};
        gs__alloc_t gone;
        if (gs__track_insert(&map, NULL) < 0 &&
            gs__track_update(GS_KIND_VMM, (uint64_t)handle, drop_mapping, NULL, &gone) == 1)
            gs__uncharge(&gone); /* cannot follow this mapping: do not wait for its unmap */
    }
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemUnmap == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuMemUnmap(ptr, size);
    if (result != CUDA_SUCCESS || !gs__accounting())
        return result;
    /* The range may cover several contiguous mappings. */
    uint64_t at = (uint64_t)ptr, end = (uint64_t)ptr + size;
    gs__alloc_t map, handle;
    while (at < end && gs__track_remove(GS_KIND_MAP, at, &map) == 0) {
        if (gs__track_update(GS_KIND_VMM, map.parent, drop_mapping, NULL, &handle) == 1)
            gs__uncharge(&handle);
        at += map.span != 0 ? map.span : size;
    }
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemRelease == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuMemRelease(handle);
    gs__alloc_t entry;
    if (result == CUDA_SUCCESS && gs__accounting() &&
        gs__track_update(GS_KIND_VMM, (uint64_t)handle, drop_reference, NULL, &entry) == 1)
        gs__uncharge(&entry);
    return result;
}

GS_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                       void *addr)
{
    CUresult result = gs__ensure_init();
    if (result != CUDA_SUCCESS)
        return result;
    const gs__real_t *real = gs__real();
    if (real->cuMemRetainAllocationHandle == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    result = real->cuMemRetainAllocationHandle(handle, addr);
    gs__alloc_t unused;
    if (result == CUDA_SUCCESS && gs__accounting())
        gs__track_update(GS_KIND_VMM, (uint64_t)*handle, add_reference, NULL, &unused);
    return result;
}
