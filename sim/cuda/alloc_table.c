/* SPDX-License-Identifier: Apache-2.0 */
/* The process's allocation table: every address range the driver handed out (device, managed,
 * pool, host, registered, VMM reservations, graph allocations), ordered for containment lookups. */
#include "cuda_internal.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
    pthread_rwlock_t lock;
    void *root; /* tsearch tree of gsim_cu_alloc_t *, ordered by address range */
} table_t;

static table_t table = {.lock = PTHREAD_RWLOCK_INITIALIZER, .root = NULL};

static uintptr_t range_end(const gsim_cu_alloc_t *a)
{
    return a->base + (a->size != 0 ? a->size : 1);
}

/* Ranges never overlap in the tree, so "overlaps" is "equal": a lookup key of one byte finds the
 * entry that contains it. */
static int compare(const void *pa, const void *pb)
{
    const gsim_cu_alloc_t *a = pa, *b = pb;
    if (range_end(a) <= b->base)
        return -1;
    if (range_end(b) <= a->base)
        return 1;
    return 0;
}

CUresult gsim_cu_table_insert(const gsim_cu_alloc_t *a)
{
    gsim_cu_alloc_t *entry = malloc(sizeof(*entry));
    if (entry == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *entry = *a;
    CUresult result = CUDA_SUCCESS;
    pthread_rwlock_wrlock(&table.lock);
    void *node = tsearch(entry, &table.root, compare);
    if (node == NULL)
        result = CUDA_ERROR_OUT_OF_MEMORY;
    else if (*(gsim_cu_alloc_t **)node != entry)
        result = CUDA_ERROR_INVALID_VALUE;
    pthread_rwlock_unlock(&table.lock);
    if (result != CUDA_SUCCESS)
        free(entry);
    return result;
}

/* Returns the entry containing addr. Call with the lock held. */
static gsim_cu_alloc_t *find_locked(uintptr_t addr)
{
    gsim_cu_alloc_t key = {.base = addr, .size = 1};
    void *node = tfind(&key, &table.root, compare);
    return node != NULL ? *(gsim_cu_alloc_t **)node : NULL;
}

int gsim_cu_table_remove(uintptr_t base, gsim_cu_alloc_t *out)
{
    pthread_rwlock_wrlock(&table.lock);
    gsim_cu_alloc_t *entry = find_locked(base);
    if (entry != NULL && entry->base == base)
        tdelete(entry, &table.root, compare);
    else
        entry = NULL;
    pthread_rwlock_unlock(&table.lock);
    if (entry == NULL)
        return -1;
    if (out != NULL)
        *out = *entry;
    free(entry);
    return 0;
}

int gsim_cu_table_find(uintptr_t addr, gsim_cu_alloc_t *out)
{
    pthread_rwlock_rdlock(&table.lock);
    gsim_cu_alloc_t *entry = find_locked(addr);
    if (entry != NULL)
        *out = *entry;
    pthread_rwlock_unlock(&table.lock);
    return entry != NULL ? 0 : -1;
}

int gsim_cu_table_update(uintptr_t base, void (*fn)(gsim_cu_alloc_t *entry, void *arg), void *arg)
{
    pthread_rwlock_wrlock(&table.lock);
    gsim_cu_alloc_t *entry = find_locked(base);
    if (entry != NULL && entry->base == base)
        fn(entry, arg);
    else
        entry = NULL;
    pthread_rwlock_unlock(&table.lock);
    return entry != NULL ? 0 : -1;
}

typedef struct collect {
    int (*pick)(const gsim_cu_alloc_t *entry, void *arg);
    void *arg;
    gsim_cu_alloc_t **items;
    size_t n, cap;
    int failed;
} collect_t;

static void collect_visit(const void *node, VISIT which, void *closure)
{
    collect_t *c = closure;
    if (which != postorder && which != leaf)
        return;
    gsim_cu_alloc_t *entry = *(gsim_cu_alloc_t *const *)node;
    if (!c->pick(entry, c->arg))
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap != 0 ? c->cap * 2 : 64;
        gsim_cu_alloc_t **items = realloc(c->items, cap * sizeof(*items));
        if (items == NULL) {
            c->failed = 1;
            return;
        }
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = entry;
}

void gsim_cu_table_remove_if(int (*pick)(const gsim_cu_alloc_t *entry, void *arg), void *arg,
                             void (*release)(const gsim_cu_alloc_t *entry))
{
    collect_t c = {.pick = pick, .arg = arg};
    pthread_rwlock_wrlock(&table.lock);
    twalk_r(table.root, collect_visit, &c);
    for (size_t i = 0; i < c.n; i++)
        tdelete(c.items[i], &table.root, compare);
    pthread_rwlock_unlock(&table.lock);
    for (size_t i = 0; i < c.n; i++) {
        release(c.items[i]);
        free(c.items[i]);
    }
    free(c.items);
}

typedef struct visit {
    void (*fn)(const gsim_cu_alloc_t *entry, void *arg);
    void *arg;
} visit_t;

static void visit_entry(const void *node, VISIT which, void *closure)
{
    const visit_t *v = closure;
    if (which == postorder || which == leaf)
        v->fn(*(gsim_cu_alloc_t *const *)node, v->arg);
}

void gsim_cu_table_foreach(void (*fn)(const gsim_cu_alloc_t *entry, void *arg), void *arg)
{
    visit_t v = {.fn = fn, .arg = arg};
    pthread_rwlock_rdlock(&table.lock);
    twalk_r(table.root, visit_entry, &v);
    pthread_rwlock_unlock(&table.lock);
}

CUresult gsim_cu_mem_range(CUdeviceptr addr, size_t n, void **host)
{
    gsim_cu_alloc_t a;
    if (gsim_cu_table_find((uintptr_t)addr, &a) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = CUDA_SUCCESS;
    if (a.kind == GSIM_CU_MEM_VMM)
        result = gsim_cu_vmm_range(&a, (uintptr_t)addr, n);
    else if (a.kind == GSIM_CU_MEM_GRAPH && !gsim_cu_graph_mem_live(&a))
        result = CUDA_ERROR_INVALID_VALUE;
    else if (n > a.base + a.size - (uintptr_t)addr)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS && host != NULL)
        *host = (void *)(uintptr_t)addr;
    return result;
}
