/* SPDX-License-Identifier: Apache-2.0 */
/* Unified addressing: pointer attributes, and the managed-memory hints (advise, prefetch), which
 * are validated and otherwise free since every device pointer is already host-accessible. */
#include "cuda_internal.h"

#include <string.h>

static int is_host_kind(const gsim_cu_alloc_t *a)
{
    return a->kind == GSIM_CU_MEM_HOST || a->kind == GSIM_CU_MEM_REGISTERED;
}

static int is_mapped(const gsim_cu_alloc_t *a, uintptr_t ptr)
{
    if (a->kind == GSIM_CU_MEM_VMM)
        return gsim_cu_vmm_range(a, ptr, 1) == CUDA_SUCCESS;
    if (a->kind == GSIM_CU_MEM_GRAPH)
        return gsim_cu_graph_mem_live(a);
    return 1;
}

#define PUT(type, value)                                                                           \
    do {                                                                                           \
        type v_ = (value);                                                                         \
        memcpy(data, &v_, sizeof(v_));                                                             \
    } while (0)

/* Writes attribute attr of ptr (inside allocation a) to data. */
static CUresult put_attribute(const gsim_cu_alloc_t *a, CUpointer_attribute attr, uintptr_t ptr,
                              void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        PUT(CUcontext, a->kind == GSIM_CU_MEM_VMM ? NULL : a->ctx);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        PUT(unsigned int, is_host_kind(a) ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        PUT(CUdeviceptr, (CUdeviceptr)ptr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!is_host_kind(a) && a->kind != GSIM_CU_MEM_MANAGED)
            return CUDA_ERROR_INVALID_VALUE;
        PUT(void *, (void *)ptr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        PUT(unsigned int, (unsigned int)a->sync_memops);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        PUT(unsigned long long, a->buffer_id);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        PUT(unsigned int, a->kind == GSIM_CU_MEM_MANAGED);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        PUT(int, a->ordinal);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        PUT(unsigned int, a->kind == GSIM_CU_MEM_DEVICE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        PUT(CUdeviceptr, (CUdeviceptr)a->base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        PUT(size_t, a->size);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        PUT(unsigned int, (unsigned int)is_mapped(a, ptr));
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        PUT(unsigned long long, a->kind == GSIM_CU_MEM_VMM
                                    ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                    : CU_MEM_HANDLE_TYPE_NONE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        PUT(unsigned int, 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        PUT(unsigned int, is_mapped(a, ptr) ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                                            : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        PUT(CUmemoryPool, a->kind == GSIM_CU_MEM_POOL ? (CUmemoryPool)a->owner : NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

GSIM_CU_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                           CUdeviceptr ptr)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(data);
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)ptr, &a) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return put_attribute(&a, attribute, (uintptr_t)ptr, data);
}

/* The value cuPointerGetAttributes reports for a pointer gpusim does not know. */
static void put_unknown(CUpointer_attribute attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        PUT(void *, NULL);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        PUT(unsigned long long, 0);
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        PUT(size_t, 0);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        PUT(int, -2);
        break;
    default:
        PUT(unsigned int, 0);
    }
}

GSIM_CU_API CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                            CUpointer_attribute *attributes, void **data,
                                            CUdeviceptr ptr)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (numAttributes == 0 || attributes == NULL || data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_alloc_t a;
    int known = gsim_cu_table_find((uintptr_t)ptr, &a) == 0;
    for (unsigned int i = 0; i < numAttributes; i++) {
        if (data[i] == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        if (!known) {
            put_unknown(attributes[i], data[i]);
            continue;
        }
        result = put_attribute(&a, attributes[i], (uintptr_t)ptr, data[i]);
        if (result == CUDA_ERROR_INVALID_VALUE &&
            attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
            put_unknown(attributes[i], data[i]);
        else if (result != CUDA_SUCCESS)
            return result;
    }
    return CUDA_SUCCESS;
}

static void set_sync_memops(gsim_cu_alloc_t *entry, void *arg)
{
    entry->sync_memops = *(const unsigned int *)arg != 0;
}

GSIM_CU_API CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
                                           CUdeviceptr ptr)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (value == NULL || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)ptr, &a) != 0 || is_host_kind(&a))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int v;
    memcpy(&v, value, sizeof(v));
    return gsim_cu_table_update(a.base, set_sync_memops, &v) == 0 ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
}

/* ---- managed memory hints ---- */

/* Checks that [p, p + count) is managed memory. */
static CUresult managed_range(CUdeviceptr p, size_t count)
{
    gsim_cu_alloc_t a;
    if (count == 0 || gsim_cu_table_find((uintptr_t)p, &a) != 0 || a.kind != GSIM_CU_MEM_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    if (count > a.base + a.size - (uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult check_location(CUmemLocation location)
{
    switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return gsim_cu_device(location.id) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUmemLocation location_of(CUdevice device)
{
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device};
    if (device == CU_DEVICE_CPU)
        loc = (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    return loc;
}

static CUresult advise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation loc)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    result = managed_range(devPtr, count);
    return result != CUDA_SUCCESS ? result : check_location(loc);
}

GSIM_CU_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                 CUdevice device)
{
    return advise(devPtr, count, advice, location_of(device));
}

GSIM_CU_API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                    CUmemLocation location)
{
    return advise(devPtr, count, advice, location);
}

static CUresult prefetch(CUdeviceptr devPtr, size_t count, CUmemLocation loc, unsigned int flags,
                         CUstream hStream, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    result = managed_range(devPtr, count);
    return result != CUDA_SUCCESS ? result : check_location(loc);
}

GSIM_CU_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                        CUstream hStream)
{
    return prefetch(devPtr, count, location_of(dstDevice), 0, hStream, 0);
}

GSIM_CU_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                             CUstream hStream)
{
    return prefetch(devPtr, count, location_of(dstDevice), 0, hStream, 1);
}

GSIM_CU_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                           unsigned int flags, CUstream hStream)
{
    return prefetch(devPtr, count, location, flags, hStream, 0);
}

GSIM_CU_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                                CUmemLocation location, unsigned int flags,
                                                CUstream hStream)
{
    return prefetch(devPtr, count, location, flags, hStream, 1);
}
