/* SPDX-License-Identifier: Apache-2.0 */
/* Device memory: cuMemAlloc, pitch and managed allocations, cuMemFree, cuMemGetInfo and address
 * ranges. Device pointers are host memory, charged to the node as the device's physical memory. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define SMALL_ALLOC (64u << 10) /* smaller allocations come from malloc, not their own mmap */
#define PITCH_ALIGN 512

static _Atomic unsigned long long next_buffer_id = 1;

static size_t round_up(size_t v, size_t align)
{
    return (v + align - 1) / align * align;
}

void *gsim_cu_map_anon(size_t len, int prot)
{
    void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *gsim_cu_backing_alloc(size_t size, size_t *map_len)
{
    *map_len = 0;
    if (size <= SMALL_ALLOC) {
        void *p = NULL;
        return posix_memalign(&p, GSIM_CU_ALLOC_ALIGN, size) == 0 ? p : NULL;
    }
    size_t len = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
    void *p = gsim_cu_map_anon(len, PROT_READ | PROT_WRITE);
    if (p != NULL)
        *map_len = len;
    return p;
}

void gsim_cu_backing_free(uintptr_t base, size_t map_len)
{
    if (map_len != 0)
        munmap((void *)base, map_len);
    else
        free((void *)base);
}

CUresult gsim_cu_mem_alloc(CUcontext ctx, size_t size, gsim_cu_mem_kind_t kind, void *owner,
                           CUdeviceptr *dptr)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > SIZE_MAX - GSIM_CU_ALLOC_ALIGN - 4096)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t charged = round_up(size, GSIM_CU_ALLOC_ALIGN);
    CUresult result = gsim_cu_charge(ctx->ordinal, charged);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_alloc_t a = {.size = size,
                         .charged = charged,
                         .kind = kind,
                         .ordinal = ctx->ordinal,
                         .ctx = ctx,
                         .owner = owner,
                         .buffer_id = atomic_fetch_add(&next_buffer_id, 1)};
    void *p = gsim_cu_backing_alloc(size, &a.map_len);
    if (p == NULL) {
        gsim_cu_uncharge(ctx->ordinal, charged);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a.base = (uintptr_t)p;
    result = gsim_cu_table_insert(&a);
    if (result != CUDA_SUCCESS) {
        gsim_cu_backing_free(a.base, a.map_len);
        gsim_cu_uncharge(ctx->ordinal, charged);
        return result;
    }
    *dptr = (CUdeviceptr)a.base;
    return CUDA_SUCCESS;
}

void gsim_cu_mem_release(const gsim_cu_alloc_t *a)
{
    switch (a->kind) {
    case GSIM_CU_MEM_POOL:
        gsim_cu_pool_free_entry(a);
        return;
    case GSIM_CU_MEM_REGISTERED:
    case GSIM_CU_MEM_VMM:
    case GSIM_CU_MEM_GRAPH:
        return; /* owned by the caller or by their modules */
    default:
        gsim_cu_backing_free(a->base, a->map_len);
        gsim_cu_uncharge(a->ordinal, a->charged);
    }
}

static int owned_by_ctx(const gsim_cu_alloc_t *a, void *ctx)
{
    return a->ctx == ctx && a->kind != GSIM_CU_MEM_VMM && a->kind != GSIM_CU_MEM_GRAPH;
}

void gsim_cu_mem_free_ctx(CUcontext ctx)
{
    gsim_cu_table_remove_if(owned_by_ctx, ctx, gsim_cu_mem_release);
}

GSIM_CU_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(dptr);
    return gsim_cu_mem_alloc(ctx, bytesize, GSIM_CU_MEM_DEVICE, NULL, dptr);
}

GSIM_CU_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                        size_t Height, unsigned int ElementSizeBytes)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
        return CUDA_ERROR_INVALID_VALUE;
    if (WidthInBytes > SIZE_MAX / 2)
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = round_up(WidthInBytes, PITCH_ALIGN);
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    result = gsim_cu_mem_alloc(ctx, pitch * Height, GSIM_CU_MEM_DEVICE, NULL, dptr);
    if (result == CUDA_SUCCESS)
        *pPitch = pitch;
    return result;
}

GSIM_CU_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(dptr);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return gsim_cu_mem_alloc(ctx, bytesize, GSIM_CU_MEM_MANAGED, NULL, dptr);
}

GSIM_CU_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS || dptr == 0)
        return result; /* like free(NULL), as NVIDIA's driver does */
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)dptr, &a) != 0 || a.base != (uintptr_t)dptr)
        return CUDA_ERROR_INVALID_VALUE;
    switch (a.kind) {
    case GSIM_CU_MEM_DEVICE:
        if (a.owner != NULL)
            return CUDA_ERROR_INVALID_VALUE; /* a module's global */
        break;
    case GSIM_CU_MEM_MANAGED:
    case GSIM_CU_MEM_POOL:
        break;
    case GSIM_CU_MEM_GRAPH:
        return gsim_cu_graph_mem_free((uintptr_t)dptr);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (gsim_cu_table_remove((uintptr_t)dptr, &a) != 0)
        return CUDA_ERROR_INVALID_VALUE; /* another thread freed it first */
    gsim_cu_mem_release(&a);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (free == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t all = 0, used = 0;
    if (gsim_mem_info(gsim_cu_node(), ctx->domain, &all, &used) != 0)
        return CUDA_ERROR_DEVICE_UNAVAILABLE;
    *total = all;
    *free = used < all ? all - used : 0;
    uint64_t pinned = gsim_cu_pinned_left(ctx->ordinal); /* an MPS client sees its limit's rest */
    if (pinned < *free)
        *free = pinned;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)dptr, &a) != 0)
        return CUDA_ERROR_NOT_FOUND;
    if (a.kind == GSIM_CU_MEM_HOST || a.kind == GSIM_CU_MEM_REGISTERED)
        return CUDA_ERROR_NOT_FOUND;
    if (a.kind == GSIM_CU_MEM_GRAPH && !gsim_cu_graph_mem_live(&a))
        return CUDA_ERROR_NOT_FOUND;
    if (a.kind == GSIM_CU_MEM_VMM)
        return gsim_cu_vmm_address_range(&a, (uintptr_t)dptr, pbase, psize);
    if (pbase != NULL)
        *pbase = (CUdeviceptr)a.base;
    if (psize != NULL)
        *psize = a.size;
    return CUDA_SUCCESS;
}
