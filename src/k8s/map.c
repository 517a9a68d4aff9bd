/* SPDX-License-Identifier: Apache-2.0 */
/* Containers of src/k8s: a string-keyed map with open addressing and linear probing (the
 * extender's objects), and a capped growing buffer (HTTP bodies, watch streams). */
#include "k8s.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>

char gs__k8s_tomb[1];

/* FNV-1a. */
static uint64_t hash_of(const char *key)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *key != '\0'; key++)
        h = (h ^ (unsigned char)*key) * UINT64_C(1099511628211);
    return h;
}

/* The slot holding key, or (insert) the first free or deleted slot where it would go. */
static gs__k8s_slot_t *find(const gs__k8s_map_t *m, const char *key, uint64_t h, int insert)
{
    gs__k8s_slot_t *tomb = NULL;
    for (size_t i = 0; i < m->cap; i++) {
        gs__k8s_slot_t *s = &m->slots[(h + i) & (m->cap - 1)];
        if (s->key == NULL)
            return insert ? (tomb != NULL ? tomb : s) : NULL;
        if (s->key == GS__K8S_TOMB) {
            tomb = tomb != NULL ? tomb : s;
            continue;
        }
        if (s->hash == h && strcmp(s->key, key) == 0)
            return s;
    }
    return insert ? tomb : NULL;
}

static int grow(gs__k8s_map_t *m)
{
    size_t cap = 64; /* live entries fill at most half: after deletions this may not grow */
    while (cap < (m->count + 1) * 2)
        cap *= 2;
    gs__k8s_slot_t *slots = calloc(cap, sizeof(*slots)), *old = m->slots;
    if (slots == NULL)
        return GS_ENOMEM;
    size_t oldcap = m->cap;
    m->slots = slots;
    m->cap = cap;
    m->used = m->count;
    for (size_t i = 0; i < oldcap; i++) {
        if (GS__K8S_LIVE(&old[i]))
            *find(m, old[i].key, old[i].hash, 1) = old[i];
    }
    free(old);
    return 0;
}

void *gs__k8s_map_get(const gs__k8s_map_t *map, const char *key)
{
    if (map->cap == 0)
        return NULL;
    gs__k8s_slot_t *s = find(map, key, hash_of(key), 0);
    return s != NULL ? s->value : NULL;
}

int gs__k8s_map_put(gs__k8s_map_t *map, const char *key, void *value, void **old)
{
    uint64_t h = hash_of(key);
    if (old != NULL)
        *old = NULL;
    gs__k8s_slot_t *s = map->cap ? find(map, key, h, 0) : NULL;
    if (s != NULL) {
        if (old != NULL)
            *old = s->value;
        s->value = value;
        return 0;
    }
    if ((map->used + 1) * 4 >= map->cap * 3 && grow(map) != 0)
        return GS_ENOMEM;
    char *copy = strdup(key);
    if (copy == NULL)
        return GS_ENOMEM;
    s = find(map, key, h, 1);
    map->used += s->key == NULL;
    *s = (gs__k8s_slot_t){.key = copy, .value = value, .hash = h};
    map->count++;
    return 0;
}

void *gs__k8s_map_del(gs__k8s_map_t *map, const char *key)
{
    gs__k8s_slot_t *s = map->cap ? find(map, key, hash_of(key), 0) : NULL;
    if (s == NULL)
        return NULL;
    void *value = s->value;
    free(s->key);
    s->key = GS__K8S_TOMB;
    s->value = NULL;
    map->count--;
    return value;
}

void gs__k8s_map_free(gs__k8s_map_t *map, void (*free_value)(void *))
{
    for (size_t i = 0; i < map->cap; i++) {
        if (GS__K8S_LIVE(&map->slots[i])) {
            if (free_value != NULL)
                free_value(map->slots[i].value);
            free(map->slots[i].key);
        }
    }
    free(map->slots);
    memset(map, 0, sizeof(*map));
}

int gs__k8s_buf_add(gs__k8s_buf_t *b, const char *data, size_t n)
{
    if (b->len + n + 1 > b->max)
        return GS_ELIMIT;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (grown == NULL)
            return GS_ENOMEM;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}
