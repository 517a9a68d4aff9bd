/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation tracking: what each live allocation of this process was charged, so that every free
 * returns exactly its charge. A hash table split into independently locked stripes. */
#include "shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/spinlock.h"

#define STRIPES     64
#define INITIAL_CAP 64

typedef struct stripe {
    gs_spinlock_t lock;
    size_t cap; /* power of two, 0 before the first insert */
    size_t count;
    gs__alloc_t *slots; /* kind 0 = empty */
} stripe_t;

static stripe_t stripes[STRIPES]; /* zero-initialised: empty and unlocked */

static uint64_t hash_key(gs__kind_t kind, uint64_t key)
{
    uint64_t h = key ^ ((uint64_t)kind << 56);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 33);
}

static stripe_t *stripe_of(uint64_t h)
{
    return &stripes[h % STRIPES];
}

static size_t home_of(const stripe_t *s, uint64_t h)
{
    return (size_t)(h / STRIPES) & (s->cap - 1);
}

/* Finds (kind, key) in s; returns its index or SIZE_MAX. Call with the stripe locked. */
static size_t find(const stripe_t *s, gs__kind_t kind, uint64_t key, uint64_t h)
{
    if (s->cap == 0)
        return SIZE_MAX;
    for (size_t i = home_of(s, h);; i = (i + 1) & (s->cap - 1)) {
        const gs__alloc_t *e = &s->slots[i];
        if (e->kind == 0)
            return SIZE_MAX;
        if (e->kind == kind && e->key == key)
            return i;
    }
}

/* Puts alloc in its slot: the entry with the same key, or the first empty one of its probe run.
 * Returns 1 and copies the entry it replaced to *replaced (when not NULL), else 0. Call with the
 * stripe locked and room to spare. */
static int place(stripe_t *s, const gs__alloc_t *alloc, uint64_t h, gs__alloc_t *replaced)
{
    size_t i = home_of(s, h);
    while (s->slots[i].kind != 0 &&
           !(s->slots[i].kind == alloc->kind && s->slots[i].key == alloc->key))
        i = (i + 1) & (s->cap - 1);
    int found = s->slots[i].kind != 0;
    if (found && replaced != NULL)
        *replaced = s->slots[i];
    s->count += !found;
    s->slots[i] = *alloc;
    return found;
}

static int grow(stripe_t *s)
{
    size_t cap = s->cap ? s->cap * 2 : INITIAL_CAP;
    gs__alloc_t *old = s->slots;
    size_t old_cap = s->cap;
    gs__alloc_t *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return GS_ENOMEM;
    s->slots = slots;
    s->cap = cap;
    s->count = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].kind != 0)
            place(s, &old[i], hash_key(old[i].kind, old[i].key), NULL);
    }
    free(old);
    return 0;
}

/* Removes index i by shifting later members of its probe run back (no tombstones). */
static void erase(stripe_t *s, size_t i)
{
    size_t mask = s->cap - 1;
    for (size_t j = (i + 1) & mask; s->slots[j].kind != 0; j = (j + 1) & mask) {
        size_t home = home_of(s, hash_key(s->slots[j].kind, s->slots[j].key));
        /* Move j into the hole at i when its home is not in (i, j] (cyclically). */
        int home_between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!home_between) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    memset(&s->slots[i], 0, sizeof(s->slots[i]));
    s->count--;
}

static uint64_t next_serial;

int gs__track_insert(const gs__alloc_t *alloc, gs__alloc_t *replaced)
{
    uint64_t h = hash_key(alloc->kind, alloc->key);
    stripe_t *s = stripe_of(h);
    gs__alloc_t entry = *alloc;
    entry.serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
    int result = 0;
    gs_spin_lock(&s->lock);
    if ((s->count + 1) * 4 > s->cap * 3)
        result = grow(s);
    if (result == 0)
        result = place(s, &entry, h, replaced);
    gs_spin_unlock(&s->lock);
    return result;
}

int gs__track_remove(gs__kind_t kind, uint64_t key, gs__alloc_t *out)
{
    uint64_t h = hash_key(kind, key);
    stripe_t *s = stripe_of(h);
    gs_spin_lock(&s->lock);
    size_t i = find(s, kind, key, h);
    if (i != SIZE_MAX) {
        *out = s->slots[i];
        erase(s, i);
    }
    gs_spin_unlock(&s->lock);
    return i != SIZE_MAX ? 0 : GS_ENOENT;
}

/* Removes (kind, key) into *out only if it is still the entry with serial. */
static int remove_if_serial(gs__kind_t kind, uint64_t key, uint64_t serial, gs__alloc_t *out)
{
    uint64_t h = hash_key(kind, key);
    stripe_t *s = stripe_of(h);
    gs_spin_lock(&s->lock);
    size_t i = find(s, kind, key, h);
    int found = i != SIZE_MAX && s->slots[i].serial == serial;
    if (found) {
        *out = s->slots[i];
        erase(s, i);
    }
    gs_spin_unlock(&s->lock);
    return found ? 0 : GS_ENOENT;
}

int gs__track_update(gs__kind_t kind, uint64_t key, int (*fn)(gs__alloc_t *entry, void *arg),
                     void *arg, gs__alloc_t *removed)
{
    uint64_t h = hash_key(kind, key);
    stripe_t *s = stripe_of(h);
    int result = GS_ENOENT;
    gs_spin_lock(&s->lock);
    size_t i = find(s, kind, key, h);
    if (i != SIZE_MAX) {
        result = fn(&s->slots[i], arg) ? 1 : 0;
        if (result == 1) {
            *removed = s->slots[i];
            erase(s, i);
        }
    }
    gs_spin_unlock(&s->lock);
    return result;
}

/* Asks the driver whether an allocation still exists (without any lock held). Entries that
 * carry no charge of their own are kept. */
static int still_exists(const gs__alloc_t *e)
{
    const gs__real_t *real = gs__real();
    unsigned int memory_type;
    CUDA_ARRAY_DESCRIPTOR desc;
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    switch (e->kind) {
    case GS_KIND_LINEAR:
        return real->cuPointerGetAttribute == NULL ||
               real->cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           (CUdeviceptr)e->key) == CUDA_SUCCESS;
    case GS_KIND_ARRAY:
        return real->cuArrayGetDescriptor_v2 == NULL ||
               real->cuArrayGetDescriptor_v2(&desc, (CUarray)(uintptr_t)e->key) == CUDA_SUCCESS;
    case GS_KIND_MIPMAP:
        return real->cuMipmappedArrayGetMemoryRequirements == NULL ||
               real->cuMipmappedArrayGetMemoryRequirements(
                   &req, (CUmipmappedArray)(uintptr_t)e->key, (CUdevice)e->dev) == CUDA_SUCCESS;
    default:
        /* Physical (VMM) allocations belong to the process, not to a context: they end with
         * their last release and unmap, which vmm.c follows. */
        return 1;
    }
}

/* Copies the charged entries of stripe k into a new array (*n of them); NULL when none. */
static gs__alloc_t *copy_charged(int k, size_t *n)
{
    stripe_t *s = &stripes[k];
    gs_spin_lock(&s->lock);
    gs__alloc_t *copy = s->count > 0 ? malloc(s->count * sizeof(*copy)) : NULL;
    *n = 0;
    for (size_t i = 0; copy != NULL && i < s->cap; i++) {
        if (s->slots[i].kind != 0 && s->slots[i].bytes != 0)
            copy[(*n)++] = s->slots[i];
    }
    gs_spin_unlock(&s->lock);
    return copy;
}

int gs__track_drop_gone(void)
{
    int dropped = 0;
    for (int k = 0; k < STRIPES; k++) {
        size_t n;
        gs__alloc_t *copy = copy_charged(k, &n);
        for (size_t i = 0; i < n; i++) {
            gs__alloc_t gone;
            if (!still_exists(&copy[i]) &&
                remove_if_serial(copy[i].kind, copy[i].key, copy[i].serial, &gone) == 0) {
                gs__uncharge(&gone);
                dropped++;
            }
        }
        free(copy);
    }
    return dropped;
}

void gs__track_after_fork(void)
{
    for (int k = 0; k < STRIPES; k++) {
        gs_spin_reset(&stripes[k].lock);
        free(stripes[k].slots);
        stripes[k].slots = NULL;
        stripes[k].cap = 0;
        stripes[k].count = 0;
    }
}
