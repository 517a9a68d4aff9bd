/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual memory management: cuMemCreate / cuMemRelease (physical memory, charged to the node),
 * cuMemAddressReserve / cuMemAddressFree (address space only), cuMemMap / cuMemUnmap and access.
 * Physical allocations are memfds, mapped MAP_SHARED|MAP_FIXED into the reserved ranges, so data
 * written through one mapping is read through any other. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GRAN GSIM_CU_VMM_GRANULARITY

typedef struct vmm_alloc {
    gsim_cu_obj_t obj;
    int ordinal;
    int fd;
    int imported; /* imported from another process: that process holds the charge */
    size_t size;
    int handle_refs; /* cuMemCreate / cuMemRetainAllocationHandle minus cuMemRelease */
    int map_refs;    /* live mappings */
    CUmemAllocationProp prop;
} vmm_alloc_t;

typedef struct mapping {
    uintptr_t base;
    size_t size;
    vmm_alloc_t *alloc;
    CUmemAccess_flags access;
} mapping_t;

typedef struct reservation {
    uintptr_t base;
    size_t size;
    mapping_t *maps;
    size_t n_maps, cap_maps;
    struct reservation *next;
} reservation_t;

/* One lock for all of VMM: reservations, mappings and reference counts. */
static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static reservation_t *reservations;

static vmm_alloc_t *alloc_of(CUmemGenericAllocationHandle handle)
{
    vmm_alloc_t *a = (vmm_alloc_t *)(uintptr_t)handle;
    return gsim_cu_obj_valid(a, GSIM_CU_VMM) && a->handle_refs > 0 ? a : NULL;
}

/* Drops one reference; the physical memory goes when none is left. Call with vmm_mu held. */
static void unref_locked(vmm_alloc_t *a, int mapping)
{
    if (mapping)
        a->map_refs--;
    else
        a->handle_refs--;
    if (a->handle_refs > 0 || a->map_refs > 0)
        return;
    close(a->fd);
    if (!a->imported)
        gsim_cu_uncharge(a->ordinal, a->size);
    gsim_cu_obj_free(a);
}

static reservation_t *find_reservation_locked(uintptr_t addr)
{
    for (reservation_t *r = reservations; r != NULL; r = r->next) {
        if (addr >= r->base && addr - r->base < r->size)
            return r;
    }
    return NULL;
}

/* Returns the index of the mapping containing addr, or -1. */
static long find_mapping(const reservation_t *r, uintptr_t addr)
{
    for (size_t i = 0; i < r->n_maps; i++) {
        if (addr >= r->maps[i].base && addr - r->maps[i].base < r->maps[i].size)
            return (long)i;
    }
    return -1;
}

/* Checks that [addr, addr + n) is covered by contiguous mappings; with need_access, that each
 * one is accessible. Call with vmm_mu held. */
static int covered_locked(const reservation_t *r, uintptr_t addr, size_t n, int need_access)
{
    uintptr_t end = addr + (n != 0 ? n : 1);
    while (addr < end) {
        long i = find_mapping(r, addr);
        if (i < 0 || (need_access && r->maps[i].access == CU_MEM_ACCESS_FLAGS_PROT_NONE))
            return 0;
        addr = r->maps[i].base + r->maps[i].size;
    }
    return 1;
}

CUresult gsim_cu_vmm_range(const gsim_cu_alloc_t *entry, uintptr_t addr, size_t n)
{
    if (n > entry->base + entry->size - addr)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked(addr);
    int ok = r != NULL && covered_locked(r, addr, n, 1);
    pthread_mutex_unlock(&vmm_mu);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult gsim_cu_vmm_address_range(const gsim_cu_alloc_t *entry, uintptr_t addr, CUdeviceptr *pbase,
                                   size_t *psize)
{
    (void)entry;
    CUresult result = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked(addr);
    long i = r != NULL ? find_mapping(r, addr) : -1;
    if (i >= 0) {
        if (pbase != NULL)
            *pbase = (CUdeviceptr)r->maps[i].base;
        if (psize != NULL)
            *psize = r->maps[i].size;
        result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_mu);
    return result;
}

/* ---- physical allocations ---- */

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_device(prop->location.id) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

static CUresult alloc_new(int ordinal, int fd, size_t size, int imported,
                          const CUmemAllocationProp *prop, CUmemGenericAllocationHandle *handle)
{
    vmm_alloc_t *a = gsim_cu_obj_new(GSIM_CU_VMM);
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->ordinal = ordinal;
    a->fd = fd;
    a->size = size;
    a->imported = imported;
    a->handle_refs = 1;
    a->prop = *prop;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (handle == NULL || flags != 0 || size == 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    result = check_prop(prop);
    if (result != CUDA_SUCCESS)
        return result;
    int ordinal = prop->location.id;
    result = gsim_cu_charge(ordinal, size);
    if (result != CUDA_SUCCESS)
        return result;
    int fd = memfd_create("gpusim-vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        if (fd >= 0)
            close(fd);
        gsim_cu_uncharge(ordinal, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    result = alloc_new(ordinal, fd, size, 0, prop, handle);
    if (result != CUDA_SUCCESS) {
        close(fd);
        gsim_cu_uncharge(ordinal, size);
    }
    return result;
}

GSIM_CU_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&vmm_mu);
    vmm_alloc_t *a = alloc_of(handle);
    if (a != NULL)
        unref_locked(a, 0);
    pthread_mutex_unlock(&vmm_mu);
    return a != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSIM_CU_API CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                   const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    result = check_prop(prop);
    if (result == CUDA_SUCCESS)
        *granularity = GRAN;
    return result;
}

GSIM_CU_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                            CUmemGenericAllocationHandle handle)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(prop);
    pthread_mutex_lock(&vmm_mu);
    vmm_alloc_t *a = alloc_of(handle);
    if (a != NULL)
        *prop = a->prop;
    pthread_mutex_unlock(&vmm_mu);
    return a != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSIM_CU_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(handle);
    result = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked((uintptr_t)addr);
    long i = r != NULL ? find_mapping(r, (uintptr_t)addr) : -1;
    if (i >= 0 && r->maps[i].alloc->handle_refs + r->maps[i].alloc->map_refs > 0) {
        vmm_alloc_t *a = r->maps[i].alloc;
        a->handle_refs++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)a;
        result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_mu);
    return result;
}

GSIM_CU_API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                  CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType handleType,
                                                  unsigned long long flags)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (shareableHandle == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&vmm_mu);
    vmm_alloc_t *a = alloc_of(handle);
    int fd = -1;
    if (a == NULL)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (!(a->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        result = CUDA_ERROR_NOT_PERMITTED;
    else if ((fd = dup(a->fd)) < 0)
        result = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&vmm_mu);
    if (result == CUDA_SUCCESS)
        memcpy(shareableHandle, &fd, sizeof(fd));
    return result;
}

GSIM_CU_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                    void *osHandle,
                                                    CUmemAllocationHandleType shHandleType)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(handle);
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    int fd = (int)(intptr_t)osHandle;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 || (size_t)st.st_size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int own = dup(fd);
    if (own < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    result = alloc_new(0, own, (size_t)st.st_size, 1, &prop, handle);
    if (result != CUDA_SUCCESS)
        close(own);
    return result;
}

/* ---- address reservations ---- */

GSIM_CU_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (ptr == NULL || flags != 0 || size == 0 || size % GRAN != 0 ||
        (alignment & (alignment - 1)) != 0 || size > (SIZE_MAX >> 2))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < GRAN)
        alignment = GRAN;
    if (alignment > (size_t)1 << 40)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *raw = mmap((void *)(uintptr_t)addr, size + alignment, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + alignment - 1) / alignment * alignment;
    if (base > (uintptr_t)raw)
        munmap(raw, base - (uintptr_t)raw);
    size_t tail = (uintptr_t)raw + size + alignment - (base + size);
    if (tail > 0)
        munmap((void *)(base + size), tail);
    reservation_t *r = calloc(1, sizeof(*r));
    gsim_cu_alloc_t entry = {
        .base = base, .size = size, .kind = GSIM_CU_MEM_VMM, .owner = r, .ordinal = -1};
    result = r != NULL ? gsim_cu_table_insert(&entry) : CUDA_ERROR_OUT_OF_MEMORY;
    if (result != CUDA_SUCCESS) {
        free(r);
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->base = base;
    r->size = size;
    pthread_mutex_lock(&vmm_mu);
    r->next = reservations;
    reservations = r;
    pthread_mutex_unlock(&vmm_mu);
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

/* Restores [base, base + size) to reserved, inaccessible address space. */
static void unmap_range(uintptr_t base, size_t size)
{
    mmap((void *)base, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
         0);
}

/* Removes mapping i of r. Call with vmm_mu held. */
static void drop_mapping_locked(reservation_t *r, size_t i)
{
    mapping_t m = r->maps[i];
    unmap_range(m.base, m.size);
    r->maps[i] = r->maps[--r->n_maps];
    unref_locked(m.alloc, 1);
}

static void unlink_reservation_locked(reservation_t *r)
{
    for (reservation_t **pp = &reservations; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            return;
        }
    }
}

GSIM_CU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_alloc_t entry;
    if (gsim_cu_table_find((uintptr_t)ptr, &entry) != 0 || entry.kind != GSIM_CU_MEM_VMM ||
        entry.base != (uintptr_t)ptr || entry.size != size ||
        gsim_cu_table_remove(entry.base, &entry) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    reservation_t *r = entry.owner;
    pthread_mutex_lock(&vmm_mu);
    while (r->n_maps > 0)
        drop_mapping_locked(r, r->n_maps - 1);
    unlink_reservation_locked(r);
    pthread_mutex_unlock(&vmm_mu);
    munmap((void *)r->base, r->size);
    free(r->maps);
    free(r);
    return CUDA_SUCCESS;
}

/* ---- mappings ---- */

static int overlaps_mapping(const reservation_t *r, uintptr_t base, size_t size)
{
    for (size_t i = 0; i < r->n_maps; i++) {
        if (base < r->maps[i].base + r->maps[i].size && r->maps[i].base < base + size)
            return 1;
    }
    return 0;
}

static CUresult map_locked(reservation_t *r, uintptr_t base, size_t size, size_t offset,
                           vmm_alloc_t *a)
{
    if (overlaps_mapping(r, base, size))
        return CUDA_ERROR_INVALID_VALUE;
    if (r->n_maps == r->cap_maps) {
        size_t cap = r->cap_maps != 0 ? r->cap_maps * 2 : 4;
        mapping_t *maps = realloc(r->maps, cap * sizeof(*maps));
        if (maps == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        r->maps = maps;
        r->cap_maps = cap;
    }
    void *p = mmap((void *)base, size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd, (off_t)offset);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r->maps[r->n_maps++] = (mapping_t){
        .base = base, .size = size, .alloc = a, .access = CU_MEM_ACCESS_FLAGS_PROT_NONE};
    a->map_refs++;
    return CUDA_SUCCESS;
}

static void set_ordinal(gsim_cu_alloc_t *entry, void *arg)
{
    if (entry->ordinal < 0)
        entry->ordinal = *(const int *)arg;
}

GSIM_CU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (flags != 0 || size == 0 || ptr % GRAN != 0 || size % GRAN != 0 || offset % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int ordinal = -1;
    uintptr_t reservation_base = 0;
    pthread_mutex_lock(&vmm_mu);
    vmm_alloc_t *a = alloc_of(handle);
    reservation_t *r = find_reservation_locked((uintptr_t)ptr);
    if (a == NULL || r == NULL || offset > a->size || size > a->size - offset ||
        size > r->base + r->size - (uintptr_t)ptr) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        result = map_locked(r, (uintptr_t)ptr, size, offset, a);
        ordinal = a->ordinal;
        reservation_base = r->base;
    }
    pthread_mutex_unlock(&vmm_mu);
    if (result == CUDA_SUCCESS)
        gsim_cu_table_update(reservation_base, set_ordinal, &ordinal);
    return result;
}

/* Returns nonzero when whole mappings exactly tile [base, base + size). */
static int tiles_exactly(const reservation_t *r, uintptr_t base, size_t size)
{
    uintptr_t at = base;
    while (at < base + size) {
        long i = find_mapping(r, at);
        if (i < 0 || r->maps[i].base != at)
            return 0;
        at += r->maps[i].size;
    }
    return at == base + size;
}

GSIM_CU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || ptr % GRAN != 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t base = (uintptr_t)ptr;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked(base);
    if (r == NULL || size > r->base + r->size - base || !tiles_exactly(r, base, size)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        /* Dropping swaps the last mapping into the hole, so walk down from the end. */
        for (size_t i = r->n_maps; i-- > 0;) {
            if (r->maps[i].base >= base && r->maps[i].base < base + size)
                drop_mapping_locked(r, i);
        }
    }
    pthread_mutex_unlock(&vmm_mu);
    return result;
}

static int access_prot(CUmemAccess_flags flags)
{
    switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
        return PROT_READ;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        return PROT_READ | PROT_WRITE;
    default:
        return PROT_NONE;
    }
}

static CUresult check_access_desc(const CUmemAccessDesc *desc, size_t count)
{
    if (desc == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            (unsigned)desc[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE || desc[i].flags == 2)
            return CUDA_ERROR_INVALID_VALUE;
        if (gsim_cu_device(desc[i].location.id) == NULL)
            return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                    size_t count)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    result = check_access_desc(desc, count);
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || ptr % GRAN != 0 || size % GRAN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemAccess_flags flags = desc[count - 1].flags;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked((uintptr_t)ptr);
    if (r == NULL || (uintptr_t)ptr + size > r->base + r->size ||
        !covered_locked(r, (uintptr_t)ptr, size, 0)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t i = 0; i < r->n_maps; i++) {
            mapping_t *m = &r->maps[i];
            if (m->base >= (uintptr_t)ptr && m->base < (uintptr_t)ptr + size) {
                m->access = flags;
                mprotect((void *)m->base, m->size, access_prot(flags));
            }
        }
    }
    pthread_mutex_unlock(&vmm_mu);
    return result;
}

GSIM_CU_API CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                    CUdeviceptr ptr)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (flags == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
        gsim_cu_device(location->id) == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    result = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_mu);
    reservation_t *r = find_reservation_locked((uintptr_t)ptr);
    long i = r != NULL ? find_mapping(r, (uintptr_t)ptr) : -1;
    if (i >= 0) {
        *flags = r->maps[i].access;
        result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_mu);
    return result;
}
