/* SPDX-License-Identifier: Apache-2.0 */
/* Handle arenas: every CUDA handle object lives in a per-kind slab, so handles validate safely. */
#include "cuda_internal.h"

#include <string.h>
#include <sys/mman.h>

/* Slots per kind. The arena is address space reserved without swap, touched as used. */
#define ARENA_SLOTS (1u << 18)

/* Under LeakSanitizer, objects in the arenas hold the only pointers to some heap blocks: the used
 * part of each arena is registered as a root region, one chunk of slots at a time. */
#define ROOT_CHUNK_SLOTS 64u
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));

typedef struct free_slot {
    gsim_cu_obj_t obj;
    struct free_slot *next;
} free_slot_t;

typedef struct arena {
    pthread_mutex_t mu;
    _Atomic(unsigned char *) base; /* NULL until the first object of the kind */
    _Atomic size_t used;           /* slots handed out at least once */
    free_slot_t *free_head;        /* FIFO of freed slots, reused once the arena is full */
    free_slot_t *free_tail;
} arena_t;

static arena_t arenas[GSIM_CU_KIND_COUNT];
static pthread_once_t arenas_once = PTHREAD_ONCE_INIT;

static void init_arenas(void)
{
    for (int k = 0; k < GSIM_CU_KIND_COUNT; k++)
        pthread_mutex_init(&arenas[k].mu, NULL);
}

static void *take_slot(arena_t *a)
{
    unsigned char *base = atomic_load(&a->base);
    if (base == NULL) {
        base = gsim_cu_map_anon((size_t)ARENA_SLOTS * GSIM_CU_OBJ_SLOT, PROT_READ | PROT_WRITE);
        if (base == NULL)
            return NULL;
        atomic_store(&a->base, base);
    }
    size_t used = atomic_load(&a->used);
    if (used < ARENA_SLOTS) {
        if (used % ROOT_CHUNK_SLOTS == 0 && __lsan_register_root_region != NULL)
            __lsan_register_root_region(base + used * GSIM_CU_OBJ_SLOT,
                                        ROOT_CHUNK_SLOTS * GSIM_CU_OBJ_SLOT);
        atomic_store(&a->used, used + 1);
        return base + used * GSIM_CU_OBJ_SLOT;
    }
    free_slot_t *slot = a->free_head;
    if (slot != NULL) {
        a->free_head = slot->next;
        if (a->free_head == NULL)
            a->free_tail = NULL;
    }
    return slot;
}

void *gsim_cu_obj_new(gsim_cu_kind_t kind)
{
    pthread_once(&arenas_once, init_arenas);
    arena_t *a = &arenas[kind];
    pthread_mutex_lock(&a->mu);
    gsim_cu_obj_t *obj = take_slot(a);
    pthread_mutex_unlock(&a->mu);
    if (obj == NULL)
        return NULL;
    uint32_t serial = obj->serial + 1;
    memset((char *)obj + sizeof(*obj), 0, GSIM_CU_OBJ_SLOT - sizeof(*obj));
    obj->serial = serial;
    atomic_store(&obj->live, (uint32_t)kind);
    return obj;
}

void gsim_cu_obj_free(void *p)
{
    gsim_cu_obj_t *obj = p;
    uint32_t kind = atomic_exchange(&obj->live, 0);
    if (kind == 0 || kind >= GSIM_CU_KIND_COUNT)
        return;
    arena_t *a = &arenas[kind];
    free_slot_t *slot = p;
    pthread_mutex_lock(&a->mu);
    slot->next = NULL;
    if (a->free_tail != NULL)
        a->free_tail->next = slot;
    else
        a->free_head = slot;
    a->free_tail = slot;
    pthread_mutex_unlock(&a->mu);
}

int gsim_cu_obj_valid(const void *p, gsim_cu_kind_t kind)
{
    if (kind <= 0 || kind >= GSIM_CU_KIND_COUNT)
        return 0;
    arena_t *a = &arenas[kind];
    const unsigned char *base = atomic_load(&a->base);
    uintptr_t addr = (uintptr_t)p;
    if (base == NULL || addr < (uintptr_t)base)
        return 0;
    uintptr_t off = addr - (uintptr_t)base;
    if (off >= (uintptr_t)ARENA_SLOTS * GSIM_CU_OBJ_SLOT || off % GSIM_CU_OBJ_SLOT != 0)
        return 0;
    gsim_cu_obj_t *obj = (gsim_cu_obj_t *)(uintptr_t)addr;
    return atomic_load(&obj->live) == (uint32_t)kind;
}

void gsim_cu_obj_foreach(gsim_cu_kind_t kind, void (*fn)(void *obj, void *arg), void *arg)
{
    if (kind <= 0 || kind >= GSIM_CU_KIND_COUNT)
        return;
    arena_t *a = &arenas[kind];
    unsigned char *base = atomic_load(&a->base);
    if (base == NULL)
        return;
    size_t used = atomic_load(&a->used);
    for (size_t i = 0; i < used; i++) {
        gsim_cu_obj_t *obj = (gsim_cu_obj_t *)(base + i * GSIM_CU_OBJ_SLOT);
        if (atomic_load(&obj->live) == (uint32_t)kind)
            fn(obj, arg);
    }
}
