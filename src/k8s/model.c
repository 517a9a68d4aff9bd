/* SPDX-License-Identifier: Apache-2.0 */
/* The extender's cluster model: objects from the API server, what they take on each node, and
 * the placement cluster built from them (model.h). */
#include "model.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[GS_K8S_KINDS] = {"nodes", "pods", "resourceslices",
                                                     "resourceclaims"};

/* A slice the model follows: which node's it is. */
typedef struct mslice {
    char node[GS_K8S_NAME_MAX];
    int seen;
} mslice_t;

const char *gs_k8s_kind_name(gs_k8s_kind_t kind)
{
    return (int)kind >= 0 && kind < GS_K8S_KINDS ? kind_names[kind] : "?";
}

int gs_k8s_model_new(const gs_k8s_model_opts_t *opts, gs_k8s_model_t **out, char *err,
                     size_t errlen)
{
    if (opts->policy != GS_PLACE_GPUSHARE && opts->policy != GS_PLACE_FGD)
        return gs_fail(err, errlen, GS_EINVAL, "the extender scores with gpushare or fgd");
    gs_k8s_model_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    m->opts = *opts;
    m->opts.workload = NULL;
    if (opts->workload != NULL && opts->workload->count > 0) {
        size_t n = opts->workload->count;
        m->workload.pods = malloc(n * sizeof(*m->workload.pods));
        if (m->workload.pods == NULL) {
            free(m);
            return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
        }
        memcpy(m->workload.pods, opts->workload->pods, n * sizeof(*m->workload.pods));
        m->workload.count = n;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->stale = 1;
    *out = m;
    return 0;
}

static void free_node(void *p)
{
    gs__mnode_t *n = p;
    gs_dra_slice_free(&n->slice);
    free(n);
}

static void free_claim(void *p)
{
    gs__mclaim_t *c = p;
    gs_dra_claim_free(&c->claim);
    free(c);
}

void gs_k8s_model_free(gs_k8s_model_t *m)
{
    if (m == NULL)
        return;
    gs__model_caches_clear(m);
    for (size_t i = 0; i < GS__MODEL_CACHES; i++) {
        free(m->caches[i].version);
        free(m->caches[i].score);
    }
    gs_place_engine_free(m->engine);
    gs_place_cluster_free(m->cluster);
    gs__k8s_map_free(&m->nodes, free_node);
    gs__k8s_map_free(&m->pods, free);
    gs__k8s_map_free(&m->claims, free_claim);
    gs__k8s_map_free(&m->slices, free);
    gs__k8s_map_free(&m->scored, NULL);
    free(m->by_index);
    free(m->shapes);
    free(m->assumed);
    free(m->workload.pods);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

gs__mnode_t *gs__model_node(gs_k8s_model_t *m, const char *name, int create)
{
    gs__mnode_t *n = gs__k8s_map_get(&m->nodes, name);
    if (n != NULL || !create || strlen(name) >= GS_K8S_NAME_MAX)
        return n;
    if ((n = calloc(1, sizeof(*n))) == NULL)
        return NULL;
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->index = -1;
    if (gs__k8s_map_put(&m->nodes, name, n, NULL) != 0) {
        free(n);
        return NULL;
    }
    return n;
}

void gs__usage_add(gs__usage_t *u, int sign)
{
    gs__mnode_t *n = u->node;
    if (n == NULL)
        return;
    n->cpu_used += sign * u->cpu;
    n->mem_used += sign * u->mem;
    for (unsigned i = 0; i < u->ngpu; i++) {
        n->milli_used[u->gpu[i]] += sign * u->milli[i];
        n->bytes_used[u->gpu[i]] += sign * u->bytes[i];
    }
    n->dirty = 1;
}

/* Adds a GPU's share to a usage (the same GPU twice accumulates). */
static void usage_gpu(gs__usage_t *u, unsigned g, int64_t milli, int64_t bytes)
{
    unsigned i = 0;
    while (i < u->ngpu && u->gpu[i] != g)
        i++;
    if (i == u->ngpu) {
        if (u->ngpu == GS_PLACE_MAX_GPUS)
            return;
        u->gpu[u->ngpu++] = (uint8_t)g;
        u->milli[i] = u->bytes[i] = 0;
    }
    u->milli[i] += milli;
    u->bytes[i] += bytes;
}

/* What an allocated claim takes: its gpushare results on the node of its pool. */
static void claim_usage(gs_k8s_model_t *m, gs__mclaim_t *c)
{
    memset(&c->use, 0, sizeof(c->use));
    for (size_t i = 0; c->claim.allocated && i < c->claim.nresults; i++) {
        const gs_dra_result_t *r = &c->claim.results[i];
        gs__mnode_t *n =
            strcmp(r->driver, GS_DRA_DRIVER) == 0 ? gs__model_node(m, r->pool, 0) : NULL;
        if (n == NULL || !n->has_slice || (c->use.node != NULL && c->use.node != n))
            continue;
        for (size_t d = 0; d < n->slice.count; d++) {
            const gs_dra_device_t *dev = &n->slice.devices[d];
            if (n->gpu_of[d] < 0 || strcmp(dev->name, r->device) != 0)
                continue;
            int64_t milli = GS_PLACE_MILLI, bytes = (int64_t)dev->memory.value;
            if (r->consumed && dev->compute.value > 0) {
                milli = (int64_t)((r->compute * GS_PLACE_MILLI + dev->compute.value - 1) /
                                  dev->compute.value);
                bytes = (int64_t)r->memory;
            }
            c->use.node = n;
            usage_gpu(&c->use, (unsigned)n->gpu_of[d], milli, bytes);
        }
    }
}

/* What a pod takes: its requests on its node while it is bound and not finished. */
static void pod_usage(gs_k8s_model_t *m, gs__mpod_t *p)
{
    memset(&p->use, 0, sizeof(p->use));
    if (p->pod.node[0] == '\0' || p->pod.terminal)
        return;
    p->use.node = gs__model_node(m, p->pod.node, 1);
    p->use.cpu = (int64_t)p->pod.cpu_milli;
    p->use.mem = (int64_t)p->pod.mem_bytes;
}

/* ---- assumptions ---- */

void gs__model_assumed_drop(gs_k8s_model_t *m, size_t i)
{
    gs__usage_add(&m->assumed[i].cpu_part, -1);
    gs__usage_add(&m->assumed[i].gpu_part, -1);
    m->assumed[i] = m->assumed[--m->nassumed];
}

void gs__model_assumed_expire(gs_k8s_model_t *m, double now)
{
    for (size_t i = m->nassumed; i-- > 0;) {
        if (m->assumed[i].expires <= now) {
            gs_debug("assumption of pod %s expired", m->assumed[i].uid);
            gs__model_assumed_drop(m, i);
        }
    }
}

/* The API server shows the pod bound (or gone): its assumed CPU goes; gone, all of it. */
static void assumed_pod_seen(gs_k8s_model_t *m, const gs_k8s_pod_t *pod, int gone)
{
    for (size_t i = m->nassumed; i-- > 0;) {
        gs__assumed_t *a = &m->assumed[i];
        if (strcmp(a->uid, pod->uid) != 0)
            continue;
        if (gone) {
            gs__model_assumed_drop(m, i);
        } else if (pod->node[0] != '\0') {
            gs__usage_add(&a->cpu_part, -1);
            memset(&a->cpu_part, 0, sizeof(a->cpu_part));
        }
    }
}

/* The API server shows a claim allocated: assumptions naming it lose their GPU part. */
static void assumed_claim_seen(gs_k8s_model_t *m, const char *key)
{
    for (size_t i = 0; i < m->nassumed; i++) {
        gs__assumed_t *a = &m->assumed[i];
        for (size_t k = 0; k < a->nclaims; k++) {
            if (strcmp(a->claims[k], key) == 0) {
                gs__usage_add(&a->gpu_part, -1);
                memset(&a->gpu_part, 0, sizeof(a->gpu_part));
            }
        }
    }
}

/* ---- events ---- */

static int apply_node(gs_k8s_model_t *m, gs_k8s_event_t ev, const json_t *obj, char *err,
                      size_t errlen)
{
    gs_k8s_node_t node;
    int result = gs_k8s_node_parse(obj, &node, err, errlen);
    if (result != 0)
        return result;
    gs__mnode_t *n = gs__model_node(m, node.name, ev != GS_K8S_DELETED);
    if (n == NULL)
        return ev == GS_K8S_DELETED ? 0 : GS_ENOMEM;
    n->seen = 1;
    if (ev == GS_K8S_DELETED) {
        m->stale |= n->has_node;
        n->has_node = 0;
        return 0;
    }
    if (!n->has_node || n->node.cpu_milli != node.cpu_milli || n->node.mem_bytes != node.mem_bytes)
        m->stale = 1;
    n->node = node;
    n->has_node = 1;
    return 0;
}

/* Whether two slices list the same devices (any order) with the same capacities and modes. */
static int same_devices(const gs_dra_slice_t *a, const gs_dra_slice_t *b)
{
    if (a->count != b->count)
        return 0;
    for (size_t i = 0; i < a->count; i++) {
        size_t j = 0;
        while (j < b->count && strcmp(a->devices[i].name, b->devices[j].name) != 0)
            j++;
        if (j == b->count)
            return 0;
        gs_dra_device_t x = a->devices[i], y = b->devices[j];
        if (memcmp(&x, &y, sizeof(x)) != 0)
            return 0;
    }
    return 1;
}

/* A slice that only reorders the node's devices changes the allocator's first fit, nothing
 * else: the node's order is updated in place. */
static void reorder(gs__mnode_t *n, gs_dra_slice_t *slice)
{
    int8_t gpu_of[GS_DRA_DEVICES];
    for (size_t i = 0; i < slice->count; i++) {
        size_t j = 0;
        while (strcmp(slice->devices[i].name, n->slice.devices[j].name) != 0)
            j++;
        gpu_of[i] = n->gpu_of[j];
    }
    uint32_t k = 0;
    for (size_t i = 0; i < slice->count; i++) {
        if (gpu_of[i] >= 0)
            n->order[k++] = (uint8_t)gpu_of[i];
    }
    memcpy(n->gpu_of, gpu_of, sizeof(gpu_of));
    gs_dra_slice_free(&n->slice);
    n->slice = *slice;
    n->version++;
}

static int slice_remember(gs_k8s_model_t *m, const gs_dra_slice_t *slice)
{
    mslice_t *s = gs__k8s_map_get(&m->slices, slice->name);
    if (s == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL ||
            gs__k8s_map_put(&m->slices, slice->name, s, NULL) != 0) {
            free(s);
            return GS_ENOMEM;
        }
    }
    snprintf(s->node, sizeof(s->node), "%s", slice->pool);
    s->seen = 1;
    return 0;
}

static int apply_slice(gs_k8s_model_t *m, gs_k8s_event_t ev, const json_t *obj, char *err,
                       size_t errlen)
{
    gs_dra_slice_t slice;
    int result = gs_dra_slice_parse(obj, &slice, err, errlen);
    if (result != 0 || strcmp(slice.driver, GS_DRA_DRIVER) != 0) {
        gs_dra_slice_free(&slice);
        return result;
    }
    gs__mnode_t *n = gs__model_node(m, slice.pool, 1);
    if (n == NULL || (result = slice_remember(m, &slice)) != 0) {
        gs_dra_slice_free(&slice);
        return GS_ENOMEM;
    }
    if (ev == GS_K8S_DELETED) {
        free(gs__k8s_map_del(&m->slices, slice.name));
        if (n->has_slice && strcmp(n->slice.name, slice.name) == 0) {
            gs_dra_slice_free(&n->slice);
            n->has_slice = 0;
            m->stale = 1;
        }
        gs_dra_slice_free(&slice);
        return 0;
    }
    if (n->has_slice && strcmp(n->slice.name, slice.name) != 0)
        gs_warn("node %s: slice %s replaces %s (one slice per node is followed)", n->name,
                slice.name, n->slice.name);
    if (n->has_slice && !m->stale && same_devices(&n->slice, &slice)) {
        reorder(n, &slice);
        return 0;
    }
    gs_dra_slice_free(&n->slice);
    n->slice = slice;
    n->has_slice = 1;
    m->stale = 1;
    return 0;
}

static int apply_pod(gs_k8s_model_t *m, gs_k8s_event_t ev, const json_t *obj, char *err,
                     size_t errlen)
{
    gs__mpod_t *p = calloc(1, sizeof(*p)), *old = NULL;
    if (p == NULL)
        return GS_ENOMEM;
    int result = gs_k8s_pod_parse(obj, &p->pod, err, errlen);
    if (result != 0) {
        free(p);
        return result;
    }
    if (ev == GS_K8S_DELETED) {
        old = gs__k8s_map_del(&m->pods, p->pod.uid);
        gs__k8s_map_del(&m->scored, p->pod.uid);
        assumed_pod_seen(m, &p->pod, 1);
        free(p);
    } else {
        pod_usage(m, p);
        p->seen = 1;
        if (gs__k8s_map_put(&m->pods, p->pod.uid, p, (void **)&old) != 0) {
            free(p);
            return GS_ENOMEM;
        }
        gs__usage_add(&p->use, 1);
        assumed_pod_seen(m, &p->pod, p->pod.terminal);
    }
    if (old != NULL)
        gs__usage_add(&old->use, -1);
    free(old);
    return 0;
}

static int apply_claim(gs_k8s_model_t *m, gs_k8s_event_t ev, const json_t *obj, char *err,
                       size_t errlen)
{
    gs__mclaim_t *c = calloc(1, sizeof(*c)), *old = NULL;
    if (c == NULL)
        return GS_ENOMEM;
    int result = gs_dra_claim_parse(obj, &c->claim, err, errlen);
    if (result != 0) {
        free(c);
        return result;
    }
    snprintf(c->key, sizeof(c->key), "%s/%s", c->claim.ns, c->claim.name);
    if (ev == GS_K8S_DELETED) {
        old = gs__k8s_map_del(&m->claims, c->key);
        free_claim(c);
    } else {
        claim_usage(m, c);
        c->seen = 1;
        if (gs__k8s_map_put(&m->claims, c->key, c, (void **)&old) != 0) {
            free_claim(c);
            return GS_ENOMEM;
        }
        gs__usage_add(&c->use, 1);
        if (c->claim.allocated)
            assumed_claim_seen(m, c->key);
    }
    if (old != NULL) {
        gs__usage_add(&old->use, -1);
        free_claim(old);
    }
    return 0;
}

int gs_k8s_model_apply(gs_k8s_model_t *m, gs_k8s_kind_t kind, gs_k8s_event_t event,
                       const json_t *obj, char *err, size_t errlen)
{
    static int (*const apply[GS_K8S_KINDS])(gs_k8s_model_t *, gs_k8s_event_t, const json_t *,
                                            char *, size_t) = {apply_node, apply_pod, apply_slice,
                                                               apply_claim};
    if ((int)kind < 0 || kind >= GS_K8S_KINDS || !json_is_object(obj))
        return gs_fail(err, errlen, GS_EFORMAT, "not an object");
    pthread_mutex_lock(&m->lock);
    int result = apply[kind](m, event, obj, err, errlen);
    pthread_mutex_unlock(&m->lock);
    return result;
}

/* ---- LIST ---- */

static gs__k8s_map_t *map_of(gs_k8s_model_t *m, gs_k8s_kind_t kind)
{
    return kind == GS_K8S_NODES    ? &m->nodes
           : kind == GS_K8S_PODS   ? &m->pods
           : kind == GS_K8S_SLICES ? &m->slices
                                   : &m->claims;
}

void gs_k8s_model_list_begin(gs_k8s_model_t *m, gs_k8s_kind_t kind)
{
    pthread_mutex_lock(&m->lock);
    gs__k8s_map_t *map = map_of(m, kind);
    for (size_t i = 0; i < map->cap; i++) {
        if (!GS__K8S_LIVE(&map->slots[i]))
            continue;
        void *v = map->slots[i].value;
        if (kind == GS_K8S_NODES)
            ((gs__mnode_t *)v)->seen = 0;
        else if (kind == GS_K8S_PODS)
            ((gs__mpod_t *)v)->seen = 0;
        else if (kind == GS_K8S_SLICES)
            ((mslice_t *)v)->seen = 0;
        else
            ((gs__mclaim_t *)v)->seen = 0;
    }
    pthread_mutex_unlock(&m->lock);
}

/* Removes what the LIST of kind did not name. */
static void sweep(gs_k8s_model_t *m, gs_k8s_kind_t kind, gs__k8s_slot_t *s)
{
    if (kind == GS_K8S_NODES) {
        gs__mnode_t *n = s->value;
        m->stale |= n->has_node && !n->seen;
        n->has_node &= n->seen;
    } else if (kind == GS_K8S_PODS && !((gs__mpod_t *)s->value)->seen) {
        gs__mpod_t *p = gs__k8s_map_del(&m->pods, s->key);
        gs__usage_add(&p->use, -1);
        assumed_pod_seen(m, &p->pod, 1);
        free(p);
    } else if (kind == GS_K8S_CLAIMS && !((gs__mclaim_t *)s->value)->seen) {
        gs__mclaim_t *c = gs__k8s_map_del(&m->claims, s->key);
        gs__usage_add(&c->use, -1);
        free_claim(c);
    } else if (kind == GS_K8S_SLICES && !((mslice_t *)s->value)->seen) {
        char name[GS_K8S_NAME_MAX];
        snprintf(name, sizeof(name), "%s", s->key);
        mslice_t *gone = gs__k8s_map_del(&m->slices, name);
        gs__mnode_t *n = gs__model_node(m, gone->node, 0);
        if (n != NULL && n->has_slice && strcmp(n->slice.name, name) == 0) {
            gs_dra_slice_free(&n->slice);
            n->has_slice = 0;
            m->stale = 1;
        }
        free(gone);
    }
}

void gs_k8s_model_list_end(gs_k8s_model_t *m, gs_k8s_kind_t kind)
{
    pthread_mutex_lock(&m->lock);
    gs__k8s_map_t *map = map_of(m, kind);
    for (size_t i = 0; i < map->cap; i++) {
        if (GS__K8S_LIVE(&map->slots[i]))
            sweep(m, kind, &map->slots[i]);
    }
    m->listed[kind] = 1;
    m->broken[kind] = 0;
    pthread_mutex_unlock(&m->lock);
}

void gs_k8s_model_set_synced(gs_k8s_model_t *m, gs_k8s_kind_t kind, int synced)
{
    pthread_mutex_lock(&m->lock);
    m->broken[kind] = !synced;
    pthread_mutex_unlock(&m->lock);
}

int gs_k8s_model_synced(gs_k8s_model_t *m)
{
    pthread_mutex_lock(&m->lock);
    int synced = 1;
    for (int k = 0; k < GS_K8S_KINDS; k++)
        synced &= m->listed[k] && !m->broken[k];
    pthread_mutex_unlock(&m->lock);
    return synced;
}

void gs_k8s_model_stats(gs_k8s_model_t *m, gs_k8s_model_stats_t *st)
{
    pthread_mutex_lock(&m->lock);
    memset(st, 0, sizeof(*st));
    for (size_t i = 0; i < m->nodes.cap; i++) {
        const gs__mnode_t *n = m->nodes.slots[i].value;
        if (!GS__K8S_LIVE(&m->nodes.slots[i]) || !n->has_node)
            continue;
        st->nodes++;
        st->gpu_nodes += n->ngpu > 0;
        st->gpus += n->ngpu;
    }
    st->pods = m->pods.count;
    st->claims = m->claims.count;
    st->assumed = m->nassumed;
    for (int k = 0; k < GS_K8S_KINDS; k++)
        st->synced[k] = m->listed[k] && !m->broken[k];
    st->rebuilds = m->rebuilds;
    st->answers = m->answers;
    st->neutral = m->neutral;
    pthread_mutex_unlock(&m->lock);
}

/* ---- the placement cluster ---- */

static int by_name(const void *a, const void *b)
{
    return strcmp((*(gs__mnode_t *const *)a)->name, (*(gs__mnode_t *const *)b)->name);
}

/* The node's GPUs: the slice's devices other than MIG ones (16 at most), numbered by their
 * index attribute so that a republished order keeps the numbers; order = the slice's order. */
static void map_gpus(gs__mnode_t *n)
{
    size_t pos[GS_DRA_DEVICES], k = 0;
    n->ngpu = 0;
    n->gpu_mem = n->gpu_compute = 0;
    memset(n->gpu_of, -1, sizeof(n->gpu_of));
    for (size_t i = 0; n->has_slice && i < n->slice.count; i++) {
        if (n->slice.devices[i].mode != GS_DRA_MIG)
            pos[k++] = i;
    }
    for (size_t i = 1; i < k; i++) { /* insertion sort by index attribute */
        size_t v = pos[i], j = i;
        for (; j > 0 && n->slice.devices[pos[j - 1]].index > n->slice.devices[v].index; j--)
            pos[j] = pos[j - 1];
        pos[j] = v;
    }
    for (size_t j = 0; j < k && j < GS_PLACE_MAX_GPUS; j++) {
        const gs_dra_device_t *d = &n->slice.devices[pos[j]];
        n->gpu_of[pos[j]] = (int8_t)j;
        n->gpu_mem = j == 0 || d->memory.value < n->gpu_mem ? d->memory.value : n->gpu_mem;
        n->gpu_compute = d->compute.value;
        n->ngpu++;
    }
    if (k > GS_PLACE_MAX_GPUS)
        gs_warn("node %s: %zu GPUs, the first %d are scored", n->name, k, GS_PLACE_MAX_GPUS);
    uint32_t o = 0;
    for (size_t i = 0; n->has_slice && i < n->slice.count; i++) {
        if (n->gpu_of[i] >= 0)
            n->order[o++] = (uint8_t)n->gpu_of[i];
    }
}

static int add_node(gs_k8s_model_t *m, gs__mnode_t *n)
{
    map_gpus(n);
    const char *model = NULL;
    for (size_t i = 0; i < n->slice.count && model == NULL; i++)
        model = n->gpu_of[i] == 0 ? n->slice.devices[i].product : NULL;
    gs_place_node_spec_t spec = {
        .name = n->name,
        .cpu_milli = n->node.cpu_milli >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)n->node.cpu_milli,
        .mem_mib = n->node.mem_bytes >> 20,
        .num_gpu = n->ngpu,
        .model = n->ngpu > 0 ? (model != NULL && model[0] != '\0' ? model : "gpu") : NULL,
        .gpu_mem_bytes = n->gpu_mem};
    int result = gs_place_cluster_add_node(m->cluster, &spec, &n->index);
    if (result == 0)
        m->by_index[n->index] = n;
    return result;
}

static int add_nodes(gs_k8s_model_t *m, char *err, size_t errlen)
{
    gs__mnode_t **list = malloc((m->nodes.count ? m->nodes.count : 1) * sizeof(*list));
    m->by_index = calloc(m->nodes.count ? m->nodes.count : 1, sizeof(*m->by_index));
    if (list == NULL || m->by_index == NULL || gs_place_cluster_new(&m->cluster) != 0) {
        free(list);
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < m->nodes.cap; i++) {
        gs__mnode_t *node = m->nodes.slots[i].value;
        if (!GS__K8S_LIVE(&m->nodes.slots[i]))
            continue;
        node->index = -1;
        if (node->has_node)
            list[n++] = node;
    }
    qsort(list, n, sizeof(*list), by_name);
    int result = 0;
    for (size_t i = 0; i < n && result == 0; i++) {
        if ((result = add_node(m, list[i])) != 0)
            gs_fail(err, errlen, result, "node %s: %s", list[i]->name, gs_strerror(result));
    }
    m->nindex = n;
    free(list);
    return result;
}

/* Recounts what every pod and claim takes (GPU numbers may have changed). Assumptions go. */
static void recount(gs_k8s_model_t *m)
{
    m->nassumed = 0;
    for (size_t i = 0; i < m->nodes.cap; i++) {
        gs__mnode_t *n = m->nodes.slots[i].value;
        if (!GS__K8S_LIVE(&m->nodes.slots[i]))
            continue;
        n->cpu_used = n->mem_used = 0;
        memset(n->milli_used, 0, sizeof(n->milli_used));
        memset(n->bytes_used, 0, sizeof(n->bytes_used));
        n->dirty = 1;
    }
    for (size_t i = 0; i < m->pods.cap; i++) {
        if (GS__K8S_LIVE(&m->pods.slots[i]))
            gs__usage_add(&((gs__mpod_t *)m->pods.slots[i].value)->use, 1);
    }
    for (size_t i = 0; i < m->claims.cap; i++) {
        gs__mclaim_t *c = m->claims.slots[i].value;
        if (!GS__K8S_LIVE(&m->claims.slots[i]))
            continue;
        claim_usage(m, c);
        gs__usage_add(&c->use, 1);
    }
}

int gs__model_rebuild(gs_k8s_model_t *m, char *err, size_t errlen)
{
    gs__model_caches_clear(m);
    gs_place_engine_free(m->engine);
    gs_place_cluster_free(m->cluster);
    free(m->by_index);
    m->engine = NULL;
    m->cluster = NULL;
    m->by_index = NULL;
    m->nindex = 0;
    int result = add_nodes(m, err, errlen);
    if (result != 0)
        return result;
    recount(m);
    gs__model_flush(m);
    if ((result = gs__model_engine(m, err, errlen)) != 0)
        return result;
    m->stale = 0;
    m->rebuilds++;
    gs_info("model rebuilt: %zu nodes, %zu pods, %zu claims", m->nindex, m->pods.count,
            m->claims.count);
    return 0;
}

static uint64_t clamp_sub(uint64_t cap, int64_t used)
{
    return used <= 0 ? cap : (uint64_t)used >= cap ? 0 : cap - (uint64_t)used;
}

void gs__model_flush(gs_k8s_model_t *m)
{
    for (size_t i = 0; i < m->nindex; i++) {
        gs__mnode_t *n = m->by_index[i];
        gs_place_node_state_t st;
        if (!n->dirty || gs_place_node_get(m->cluster, (int)i, &st) != 0)
            continue;
        st.cpu_left = (uint32_t)clamp_sub(st.cpu_milli, n->cpu_used);
        st.mem_left = clamp_sub(st.mem_mib, (n->mem_used + (1 << 20) - 1) >> 20);
        for (uint32_t g = 0; g < st.num_gpu; g++) {
            st.gpu_left[g] = (uint32_t)clamp_sub(GS_PLACE_MILLI, n->milli_used[g]);
            st.gpu_mem_left[g] =
                st.gpu_mem_bytes ? clamp_sub(st.gpu_mem_bytes, n->bytes_used[g]) : 0;
        }
        if (gs_place_node_set(m->cluster, (int)i, &st) != 0)
            gs_warn("node %s: its state does not fit its capacity", n->name);
        n->version++;
        n->dirty = 0;
    }
}
