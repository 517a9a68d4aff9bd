/* SPDX-License-Identifier: Apache-2.0 */
/* Physical memory accounting: charges device memory to the node and enforces MPS pinned limits. */
#include "cuda_internal.h"

/* Bytes this process holds per CUDA ordinal, for the MPS pinned device memory limit. */
static _Atomic uint64_t held[GSIM_MAX_DEVICES];

/* Reserves bytes against the pinned limit of ordinal with a compare-and-swap, so concurrent
 * threads can never exceed it together. Returns 0 or -1. */
static int reserve_pinned(int ordinal, uint64_t bytes)
{
    uint64_t limit = gsim_cu_pinned_limit(ordinal);
    uint64_t cur = atomic_load(&held[ordinal]);
    for (;;) {
        if (limit != 0 && (bytes > limit || cur > limit - bytes))
            return -1;
        if (atomic_compare_exchange_weak(&held[ordinal], &cur, cur + bytes))
            return 0;
    }
}

CUresult gsim_cu_charge(int ordinal, uint64_t bytes)
{
    const gsim_cu_device_t *dev = gsim_cu_device(ordinal);
    if (dev == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if (bytes == 0)
        return CUDA_SUCCESS;
    if (reserve_pinned(ordinal, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (gsim_mem_charge(gsim_cu_node(), dev->domain, bytes) != 0) {
        atomic_fetch_sub(&held[ordinal], bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

void gsim_cu_uncharge(int ordinal, uint64_t bytes)
{
    const gsim_cu_device_t *dev = gsim_cu_device(ordinal);
    if (dev == NULL || bytes == 0)
        return;
    gsim_mem_uncharge(gsim_cu_node(), dev->domain, bytes);
    atomic_fetch_sub(&held[ordinal], bytes);
}

CUresult gsim_cu_charge_context(CUcontext ctx, int ordinal)
{
    const gsim_cu_device_t *dev = gsim_cu_device(ordinal);
    if (dev == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    uint64_t bytes = gsim_context_bytes(dev->model, dev->sms);
    if (bytes > 0 && reserve_pinned(ordinal, bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (bytes > 0 && gsim_mem_charge(gsim_cu_node(), dev->domain, bytes) != 0) {
        atomic_fetch_sub(&held[ordinal], bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx->footprint = bytes;
    return CUDA_SUCCESS;
}

void gsim_cu_uncharge_context(CUcontext ctx)
{
    if (ctx->footprint == 0)
        return;
    gsim_mem_uncharge(gsim_cu_node(), ctx->domain, ctx->footprint);
    atomic_fetch_sub(&held[ctx->ordinal], ctx->footprint);
    ctx->footprint = 0;
}

uint64_t gsim_cu_pinned_left(int ordinal)
{
    uint64_t limit = gsim_cu_pinned_limit(ordinal);
    uint64_t cur = atomic_load(&held[ordinal]);
    if (limit == 0)
        return UINT64_MAX;
    return cur < limit ? limit - cur : 0;
}
