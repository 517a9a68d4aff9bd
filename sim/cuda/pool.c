/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-ordered allocation: memory pools, cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync. A pool charges the node when it allocates (so limits apply exactly) and keeps
 * freed blocks reserved until it is trimmed: by cuMemPoolTrimTo, or at the next synchronization
 * down to its release threshold, as NVIDIA's pools do. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct block {
    uintptr_t base;
    size_t size;
    uint64_t charged;
    size_t map_len;
} block_t;

struct CUmemPoolHandle_st {
    gsim_cu_obj_t obj;
    pthread_mutex_t mu;
    int ordinal;
    int is_default;
    int destroyed; /* destroyed while allocations were outstanding */
    CUmemPoolProps props;
    uint64_t release_threshold;
    int reuse[3];
    uint64_t reserved, reserved_high, used, used_high;
    block_t *cache;
    size_t n_cache, cap_cache;
    unsigned char access[GSIM_MAX_DEVICES]; /* CUmemAccess_flags of peer devices */
};

_Static_assert(sizeof(struct CUmemPoolHandle_st) <= GSIM_CU_OBJ_SLOT, "pool fits a slot");

static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static CUmemoryPool default_pool[GSIM_MAX_DEVICES];
static CUmemoryPool current_pool[GSIM_MAX_DEVICES];

static uint64_t round_charge(size_t size)
{
    return (size + GSIM_CU_ALLOC_ALIGN - 1) / GSIM_CU_ALLOC_ALIGN * GSIM_CU_ALLOC_ALIGN;
}

static CUmemoryPool pool_new(int ordinal, const CUmemPoolProps *props, int is_default)
{
    CUmemoryPool pool = gsim_cu_obj_new(GSIM_CU_POOL);
    if (pool == NULL)
        return NULL;
    pthread_mutex_init(&pool->mu, NULL);
    pool->ordinal = ordinal;
    pool->is_default = is_default;
    pool->props = *props;
    pool->reuse[0] = pool->reuse[1] = pool->reuse[2] = 1;
    pool->access[ordinal] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return pool;
}

/* Returns the device's default pool, creating it on first use; NULL when out of handles. */
static CUmemoryPool default_of(int ordinal)
{
    pthread_mutex_lock(&pools_mu);
    if (default_pool[ordinal] == NULL) {
        CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = ordinal}};
        default_pool[ordinal] = pool_new(ordinal, &props, 1);
    }
    CUmemoryPool pool = default_pool[ordinal];
    pthread_mutex_unlock(&pools_mu);
    return pool;
}

static CUmemoryPool current_of(int ordinal)
{
    pthread_mutex_lock(&pools_mu);
    CUmemoryPool pool = current_pool[ordinal];
    pthread_mutex_unlock(&pools_mu);
    return pool != NULL ? pool : default_of(ordinal);
}

static void release_block(int ordinal, const block_t *b)
{
    gsim_cu_backing_free(b->base, b->map_len);
    gsim_cu_uncharge(ordinal, b->charged);
}

/* Releases cached blocks until the pool reserves at most keep bytes. Takes pool->mu. */
static void trim(CUmemoryPool pool, uint64_t keep)
{
    pthread_mutex_lock(&pool->mu);
    while (pool->reserved > keep && pool->n_cache > 0) {
        block_t b = pool->cache[--pool->n_cache];
        pool->reserved -= b.charged;
        release_block(pool->ordinal, &b);
    }
    pthread_mutex_unlock(&pool->mu);
}

static void free_pool_object(CUmemoryPool pool)
{
    free(pool->cache);
    pthread_mutex_destroy(&pool->mu);
    gsim_cu_obj_free(pool);
}

static void trim_to_threshold(void *obj, void *arg)
{
    (void)arg;
    CUmemoryPool pool = obj;
    trim(pool, pool->release_threshold);
}

void gsim_cu_pool_trim_all(void)
{
    gsim_cu_obj_foreach(GSIM_CU_POOL, trim_to_threshold, NULL);
}

/* Takes a cached block of exactly the charge from the pool. Call with pool->mu held. */
static int take_cached_locked(CUmemoryPool pool, uint64_t charged, block_t *out)
{
    for (size_t i = pool->n_cache; i-- > 0;) {
        if (pool->cache[i].charged == charged) {
            *out = pool->cache[i];
            pool->cache[i] = pool->cache[--pool->n_cache];
            return 1;
        }
    }
    return 0;
}

static void note_use_locked(CUmemoryPool pool, uint64_t charged)
{
    pool->used += charged;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
}

/* Reserves charged bytes against the pool's maximum, trimming its cache once when over; the check
 * and the reservation happen under one hold of pool->mu. Returns 1 when reserved. */
static int reserve_within_max(CUmemoryPool pool, uint64_t charged)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        pthread_mutex_lock(&pool->mu);
        uint64_t max = pool->props.maxSize;
        int over = max != 0 && (charged > max || pool->reserved > max - charged);
        if (!over) {
            pool->reserved += charged;
            if (pool->reserved > pool->reserved_high)
                pool->reserved_high = pool->reserved;
        }
        pthread_mutex_unlock(&pool->mu);
        if (!over)
            return 1;
        if (attempt == 0)
            trim(pool, max > charged ? max - charged : 0);
    }
    return 0;
}

static void unreserve(CUmemoryPool pool, uint64_t charged)
{
    pthread_mutex_lock(&pool->mu);
    pool->reserved -= charged < pool->reserved ? charged : pool->reserved;
    pthread_mutex_unlock(&pool->mu);
}

/* Makes a new block: reserves within the pool's maximum, charges the node (trimming the pool's
 * cache once when the device is full), and maps the memory. The backing covers the whole charge,
 * so a later request of any size with the same charge can reuse the block. */
static CUresult new_block(CUmemoryPool pool, size_t size, uint64_t charged, block_t *b)
{
    if (!reserve_within_max(pool, charged))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = gsim_cu_charge(pool->ordinal, charged);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
        trim(pool, 0);
        result = gsim_cu_charge(pool->ordinal, charged);
    }
    if (result != CUDA_SUCCESS) {
        unreserve(pool, charged);
        return result;
    }
    b->size = size;
    b->charged = charged;
    void *p = gsim_cu_backing_alloc((size_t)charged, &b->map_len);
    if (p == NULL) {
        gsim_cu_uncharge(pool->ordinal, charged);
        unreserve(pool, charged);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    b->base = (uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult pool_alloc(CUmemoryPool pool, CUcontext ctx, size_t size, CUdeviceptr *dptr)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > SIZE_MAX - 2 * GSIM_CU_ALLOC_ALIGN)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t charged = round_charge(size);
    block_t b;
    pthread_mutex_lock(&pool->mu);
    int cached = take_cached_locked(pool, charged, &b);
    if (cached)
        note_use_locked(pool, charged);
    pthread_mutex_unlock(&pool->mu);
    if (!cached) {
        CUresult result = new_block(pool, size, charged, &b);
        if (result != CUDA_SUCCESS)
            return result;
        pthread_mutex_lock(&pool->mu);
        note_use_locked(pool, charged);
        pthread_mutex_unlock(&pool->mu);
    }
    gsim_cu_alloc_t a = {.base = b.base,
                         .size = size,
                         .charged = b.charged,
                         .map_len = b.map_len,
                         .kind = GSIM_CU_MEM_POOL,
                         .ordinal = pool->ordinal,
                         .ctx = ctx,
                         .owner = pool};
    CUresult result = gsim_cu_table_insert(&a);
    if (result != CUDA_SUCCESS) {
        gsim_cu_pool_free_entry(&a);
        return result;
    }
    *dptr = (CUdeviceptr)b.base;
    return CUDA_SUCCESS;
}

void gsim_cu_pool_free_entry(const gsim_cu_alloc_t *a)
{
    CUmemoryPool pool = a->owner;
    block_t b = {.base = a->base, .size = a->size, .charged = a->charged, .map_len = a->map_len};
    pthread_mutex_lock(&pool->mu);
    pool->used -= b.charged < pool->used ? b.charged : pool->used;
    int keep = !pool->destroyed;
    if (keep && pool->n_cache == pool->cap_cache) {
        size_t cap = pool->cap_cache != 0 ? pool->cap_cache * 2 : 16;
        block_t *cache = realloc(pool->cache, cap * sizeof(*cache));
        if (cache != NULL) {
            pool->cache = cache;
            pool->cap_cache = cap;
        } else {
            keep = 0;
        }
    }
    if (keep)
        pool->cache[pool->n_cache++] = b;
    else
        pool->reserved -= b.charged < pool->reserved ? b.charged : pool->reserved;
    int gone = pool->destroyed && pool->used == 0;
    pthread_mutex_unlock(&pool->mu);
    if (!keep)
        release_block(pool->ordinal, &b);
    if (gone)
        free_pool_object(pool);
}

/* ---- the pool API ---- */

static CUresult pool_arg(CUmemoryPool pool)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!gsim_cu_obj_valid(pool, GSIM_CU_POOL) || pool->destroyed)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pool_out);
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = default_of(dev);
    return *pool_out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GSIM_CU_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pool);
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = current_of(dev);
    return *pool != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GSIM_CU_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult result = pool_arg(pool);
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if (pool->ordinal != dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools_mu);
    current_pool[dev] = pool;
    pthread_mutex_unlock(&pools_mu);
    return CUDA_SUCCESS;
}

/* The CUDA 13 location-based pool getters: gpusim has device-located pinned pools only. */
static CUresult location_device(const CUmemLocation *location, CUmemAllocationType type,
                                int *ordinal)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (location == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (gsim_cu_device(location->id) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *ordinal = location->id;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                            CUmemAllocationType type)
{
    int ordinal;
    CUresult result = location_device(location, type, &ordinal);
    return result != CUDA_SUCCESS ? result : cuDeviceGetDefaultMemPool(pool_out, ordinal);
}

GSIM_CU_API CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                     CUmemAllocationType type)
{
    int ordinal;
    CUresult result = location_device(location, type, &ordinal);
    return result != CUDA_SUCCESS ? result : cuDeviceGetMemPool(pool, ordinal);
}

GSIM_CU_API CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                     CUmemoryPool pool)
{
    int ordinal;
    CUresult result = location_device(location, type, &ordinal);
    return result != CUDA_SUCCESS ? result : cuDeviceSetMemPool(ordinal, pool);
}

GSIM_CU_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (pool == NULL || poolProps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (gsim_cu_device(poolProps->location.id) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((poolProps->handleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    *pool = pool_new(poolProps->location.id, poolProps, 0);
    return *pool != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GSIM_CU_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult result = pool_arg(pool);
    if (result != CUDA_SUCCESS)
        return result;
    if (pool->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pools_mu);
    if (current_pool[pool->ordinal] == pool)
        current_pool[pool->ordinal] = NULL;
    pthread_mutex_unlock(&pools_mu);
    trim(pool, 0);
    pthread_mutex_lock(&pool->mu);
    pool->destroyed = 1;
    int gone = pool->used == 0;
    pthread_mutex_unlock(&pool->mu);
    if (gone)
        free_pool_object(pool);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult result = pool_arg(pool);
    if (result == CUDA_SUCCESS)
        trim(pool, minBytesToKeep);
    return result;
}

static CUresult set_attr_locked(CUmemoryPool pool, CUmemPool_attribute attr, const void *value)
{
    uint64_t v64;
    int v;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        memcpy(&v, value, sizeof(v));
        pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = v != 0;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        memcpy(&v64, value, sizeof(v64));
        pool->release_threshold = v64;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        memcpy(&v64, value, sizeof(v64));
        if (v64 != 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
            pool->reserved_high = pool->reserved;
        else
            pool->used_high = pool->used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

GSIM_CU_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult result = pool_arg(pool);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(value);
    pthread_mutex_lock(&pool->mu);
    result = set_attr_locked(pool, attr, value);
    pthread_mutex_unlock(&pool->mu);
    return result;
}

static CUresult get_attr_locked(const CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    uint64_t v64;
    int v;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        v = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        memcpy(value, &v, sizeof(v));
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        v64 = pool->release_threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        v64 = pool->reserved;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        v64 = pool->reserved_high;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        v64 = pool->used;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        v64 = pool->used_high;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(value, &v64, sizeof(v64));
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult result = pool_arg(pool);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(value);
    pthread_mutex_lock(&pool->mu);
    result = get_attr_locked(pool, attr, value);
    pthread_mutex_unlock(&pool->mu);
    return result;
}

GSIM_CU_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    CUresult result = pool_arg(pool);
    if (result != CUDA_SUCCESS)
        return result;
    if (map == NULL && count > 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            gsim_cu_device(map[i].location.id) == NULL ||
            (unsigned)map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        if (map[i].location.id == pool->ordinal &&
            map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE; /* the owning device always has access */
    }
    pthread_mutex_lock(&pool->mu);
    for (size_t i = 0; i < count; i++)
        pool->access[map[i].location.id] = (unsigned char)map[i].flags;
    pthread_mutex_unlock(&pool->mu);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                        CUmemLocation *location)
{
    CUresult result = pool_arg(memPool);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
        gsim_cu_device(location->id) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&memPool->mu);
    *flags = (CUmemAccess_flags)memPool->access[location->id];
    pthread_mutex_unlock(&memPool->mu);
    return CUDA_SUCCESS;
}

/* ---- stream-ordered allocation ---- */

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream,
                            int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(dptr);
    if (pool == NULL) {
        pool = current_of(s->ctx->ordinal);
        if (pool == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    } else if (pool_arg(pool) != CUDA_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return pool_alloc(pool, s->ctx, bytesize, dptr);
}

GSIM_CU_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, hStream, 0);
}

GSIM_CU_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, hStream, 1);
}

GSIM_CU_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream)
{
    if (pool == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    return alloc_async(dptr, bytesize, pool, hStream, 0);
}

GSIM_CU_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream hStream)
{
    if (pool == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    return alloc_async(dptr, bytesize, pool, hStream, 1);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream, int per_thread)
{
    gsim_cu_stream_t *s;
    CUresult result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS || dptr == 0)
        return result;
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)dptr, &a) != 0 || a.base != (uintptr_t)dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (a.kind == GSIM_CU_MEM_GRAPH)
        return gsim_cu_graph_mem_free((uintptr_t)dptr);
    if (a.kind != GSIM_CU_MEM_POOL && (a.kind != GSIM_CU_MEM_DEVICE || a.owner != NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_table_remove(a.base, &a) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_mem_release(&a);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream, 0);
}

GSIM_CU_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream, 1);
}
