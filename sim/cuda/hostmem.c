/* SPDX-License-Identifier: Apache-2.0 */
/* Page-locked host memory: cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister and their queries.
 * Host memory is not device memory: it is tracked (for cuMemcpy and pointer queries) but never
 * charged to the node. */
#include "cuda_internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define HOST_ALLOC_FLAGS                                                                           \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
#define HOST_REGISTER_FLAGS                                                                        \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |    \
     CU_MEMHOSTREGISTER_READ_ONLY)

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (pp == NULL || bytesize == 0 || (flags & ~(unsigned)HOST_ALLOC_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytesize > SIZE_MAX - page)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t len = (bytesize + page - 1) / page * page;
    void *p = gsim_cu_map_anon(len, PROT_READ | PROT_WRITE);
    if (p == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gsim_cu_alloc_t a = {.base = (uintptr_t)p,
                         .size = bytesize,
                         .map_len = len,
                         .kind = GSIM_CU_MEM_HOST,
                         .ordinal = ctx->ordinal,
                         .ctx = ctx,
                         .flags = flags};
    result = gsim_cu_table_insert(&a);
    if (result != CUDA_SUCCESS) {
        munmap(p, len);
        return result;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags);
}

GSIM_CU_API CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    return host_alloc(pp, bytesize, 0);
}

GSIM_CU_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0);
}

GSIM_CU_API CUresult cuMemFreeHost(void *p)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS || p == NULL)
        return result; /* like free(NULL), as NVIDIA's driver does */
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)p, &a) != 0 || a.base != (uintptr_t)p ||
        a.kind != GSIM_CU_MEM_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_table_remove(a.base, &a) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_mem_release(&a);
    return CUDA_SUCCESS;
}

/* Returns nonzero when [p, p + size) is mapped in this process (madvise fails with ENOMEM on
 * unmapped pages), so registering garbage fails instead of crashing a later copy. */
static int range_mapped(const void *p, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p / page * page;
    uintptr_t end = (uintptr_t)p + size;
    if (end < (uintptr_t)p)
        return 0;
    return madvise((void *)start, end - start, MADV_NORMAL) == 0 || errno != ENOMEM;
}

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (p == NULL || bytesize == 0 || (Flags & ~(unsigned)HOST_REGISTER_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!range_mapped(p, bytesize))
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_alloc_t a = {.base = (uintptr_t)p,
                         .size = bytesize,
                         .kind = GSIM_CU_MEM_REGISTERED,
                         .ordinal = ctx->ordinal,
                         .ctx = ctx,
                         .flags = Flags};
    result = gsim_cu_table_insert(&a);
    return result == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : result;
}

GSIM_CU_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}

GSIM_CU_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}

GSIM_CU_API CUresult cuMemHostUnregister(void *p)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(p);
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)p, &a) != 0 || a.base != (uintptr_t)p ||
        a.kind != GSIM_CU_MEM_REGISTERED)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    return gsim_cu_table_remove(a.base, NULL) == 0 ? CUDA_SUCCESS
                                                   : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* Finds the host allocation or registration containing p. */
static CUresult find_host(void *p, gsim_cu_alloc_t *a)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (p == NULL || gsim_cu_table_find((uintptr_t)p, a) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->kind != GSIM_CU_MEM_HOST && a->kind != GSIM_CU_MEM_REGISTERED)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    gsim_cu_alloc_t a;
    CUresult result = find_host(p, &a);
    if (result != CUDA_SUCCESS)
        return result;
    if (pdptr == NULL || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    gsim_cu_alloc_t a;
    CUresult result = find_host(p, &a);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pFlags);
    *pFlags = a.flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
}
