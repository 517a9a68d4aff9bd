/* SPDX-License-Identifier: Apache-2.0 */
/* Graph memory: the allocations of graph memory nodes, and the device's graph memory attributes.
 * An allocation node's address is fixed when the node is added; launching the graph backs it
 * with memory charged to the node; a free node, cuMemFree or cuMemFreeAsync returns it. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct gsim_cu_graph_alloc {
    uintptr_t base;
    size_t size, map_len;
    uint64_t charged;
    int ordinal;
    int refs;
    int allocated;
    int allocating; /* claimed by a launch that is charging it */
    struct gsim_cu_graph_alloc *next;
};

typedef struct graph_mem_stats {
    uint64_t used, used_high;
} graph_mem_stats_t;

static pthread_mutex_t graph_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static gsim_cu_graph_alloc_t *allocs; /* every live record, to validate table entries' owners */
static graph_mem_stats_t stats[GSIM_MAX_DEVICES];

static int is_live_locked(const gsim_cu_graph_alloc_t *a)
{
    for (const gsim_cu_graph_alloc_t *p = allocs; p != NULL; p = p->next) {
        if (p == a)
            return 1;
    }
    return 0;
}

CUresult gsim_cu_graph_alloc_create(int ordinal, size_t size, gsim_cu_graph_alloc_t **out,
                                    CUdeviceptr *dptr)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size == 0 || size > SIZE_MAX - page)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_graph_alloc_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->size = size;
    a->map_len = (size + page - 1) / page * page;
    a->charged = (size + GSIM_CU_ALLOC_ALIGN - 1) / GSIM_CU_ALLOC_ALIGN * GSIM_CU_ALLOC_ALIGN;
    a->ordinal = ordinal;
    a->refs = 1;
    void *p = gsim_cu_map_anon(a->map_len, PROT_NONE);
    if (p == NULL) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->base = (uintptr_t)p;
    gsim_cu_alloc_t entry = {
        .base = a->base, .size = size, .kind = GSIM_CU_MEM_GRAPH, .ordinal = ordinal, .owner = a};
    CUresult result = gsim_cu_table_insert(&entry);
    if (result != CUDA_SUCCESS) {
        munmap(p, a->map_len);
        free(a);
        return result;
    }
    pthread_mutex_lock(&graph_mem_mu);
    a->next = allocs;
    allocs = a;
    pthread_mutex_unlock(&graph_mem_mu);
    *out = a;
    *dptr = (CUdeviceptr)a->base;
    return CUDA_SUCCESS;
}

/* Unlinks and frees a record with no reference and no memory. Call with graph_mem_mu held;
 * returns the record to destroy outside the lock, or NULL. */
static gsim_cu_graph_alloc_t *reap_locked(gsim_cu_graph_alloc_t *a)
{
    if (a->refs > 0 || a->allocated || a->allocating)
        return NULL;
    for (gsim_cu_graph_alloc_t **pp = &allocs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            return a;
        }
    }
    return NULL;
}

static void destroy(gsim_cu_graph_alloc_t *a)
{
    if (a == NULL)
        return;
    gsim_cu_table_remove(a->base, NULL);
    munmap((void *)a->base, a->map_len);
    free(a);
}

void gsim_cu_graph_alloc_ref(gsim_cu_graph_alloc_t *a)
{
    pthread_mutex_lock(&graph_mem_mu);
    a->refs++;
    pthread_mutex_unlock(&graph_mem_mu);
}

void gsim_cu_graph_alloc_unref(gsim_cu_graph_alloc_t *a)
{
    pthread_mutex_lock(&graph_mem_mu);
    a->refs--;
    gsim_cu_graph_alloc_t *gone = reap_locked(a);
    pthread_mutex_unlock(&graph_mem_mu);
    destroy(gone);
}

int gsim_cu_graph_alloc_allocated(gsim_cu_graph_alloc_t *a)
{
    pthread_mutex_lock(&graph_mem_mu);
    int allocated = a->allocated;
    pthread_mutex_unlock(&graph_mem_mu);
    return allocated;
}

CUdeviceptr gsim_cu_graph_alloc_ptr(const gsim_cu_graph_alloc_t *a)
{
    return (CUdeviceptr)a->base;
}

CUresult gsim_cu_graph_alloc_allocate(gsim_cu_graph_alloc_t *a)
{
    /* Claim first: two launches racing on one allocation node must not both charge. */
    pthread_mutex_lock(&graph_mem_mu);
    int busy = a->allocated || a->allocating;
    if (!busy)
        a->allocating = 1;
    pthread_mutex_unlock(&graph_mem_mu);
    if (busy)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = gsim_cu_charge(a->ordinal, a->charged);
    if (result == CUDA_SUCCESS &&
        mprotect((void *)a->base, a->map_len, PROT_READ | PROT_WRITE) != 0) {
        gsim_cu_uncharge(a->ordinal, a->charged);
        result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&graph_mem_mu);
    a->allocating = 0;
    if (result == CUDA_SUCCESS) {
        a->allocated = 1;
        graph_mem_stats_t *st = &stats[a->ordinal];
        st->used += a->charged;
        if (st->used > st->used_high)
            st->used_high = st->used;
    }
    gsim_cu_graph_alloc_t *gone = reap_locked(a);
    pthread_mutex_unlock(&graph_mem_mu);
    destroy(gone);
    return result;
}

int gsim_cu_graph_mem_live(const gsim_cu_alloc_t *entry)
{
    pthread_mutex_lock(&graph_mem_mu);
    const gsim_cu_graph_alloc_t *a = entry->owner;
    int live = is_live_locked(a) && a->allocated;
    pthread_mutex_unlock(&graph_mem_mu);
    return live;
}

CUresult gsim_cu_graph_mem_free(uintptr_t dptr)
{
    gsim_cu_alloc_t entry;
    if (gsim_cu_table_find(dptr, &entry) != 0 || entry.kind != GSIM_CU_MEM_GRAPH ||
        entry.base != dptr)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_graph_alloc_t *a = entry.owner;
    int ordinal = entry.ordinal;
    uint64_t charged = 0;
    pthread_mutex_lock(&graph_mem_mu);
    int ok = is_live_locked(a) && a->allocated;
    gsim_cu_graph_alloc_t *gone = NULL;
    if (ok) {
        a->allocated = 0;
        charged = a->charged;
        stats[a->ordinal].used -= charged;
        /* Drop the pages so the host memory goes with the charge; the range stays reserved. */
        mprotect((void *)a->base, a->map_len, PROT_NONE);
        madvise((void *)a->base, a->map_len, MADV_DONTNEED);
        gone = reap_locked(a);
    }
    pthread_mutex_unlock(&graph_mem_mu);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_uncharge(ordinal, charged);
    destroy(gone);
    return CUDA_SUCCESS;
}

/* ---- device graph memory attributes ---- */

GSIM_CU_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                  void *value)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_device(device) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    GSIM_CU_CHECK_PTR(value);
    uint64_t v;
    pthread_mutex_lock(&graph_mem_mu);
    const graph_mem_stats_t *st = &stats[device];
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        v = st->used;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        v = st->used_high;
        break;
    default:
        result = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&graph_mem_mu);
    if (result == CUDA_SUCCESS)
        memcpy(value, &v, sizeof(v));
    return result;
}

GSIM_CU_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                  void *value)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_device(device) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    GSIM_CU_CHECK_PTR(value);
    uint64_t v;
    memcpy(&v, value, sizeof(v));
    if (v != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_mem_mu);
    stats[device].used_high = stats[device].used;
    pthread_mutex_unlock(&graph_mem_mu);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_device(device) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
