/* SPDX-License-Identifier: Apache-2.0 */
/* The placement engine (src/placement) behind the daemon's gpushare and fgd policies: which of
 * the node's GPUs a one-GPU lease goes to, fragmentation-aware. */
#include "place_engine.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/placement.h"

#include <stdint.h>
#include <string.h>

/* The engine sees each GPU as a node of its own (so GPUs of different models can share a
 * daemon) with unlimited CPU and memory; it is rebuilt when the GPUs or the policy change. */
typedef struct engine_cache {
    gs_place_cluster_t *cluster;
    gs_place_engine_t *engine;
    unsigned n;
    gs__policy_t policy;
} engine_cache_t;

static engine_cache_t cache; /* the daemon's event loop is its only user */

static void drop_engine(void)
{
    gs_place_engine_free(cache.engine);
    gs_place_cluster_free(cache.cluster);
    memset(&cache, 0, sizeof(cache));
}

static int build_engine(const gs__gpu_t *gpus, unsigned n, gs__policy_t policy)
{
    drop_engine();
    if (gs_place_cluster_new(&cache.cluster) != 0)
        return GS_ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        gs_place_node_spec_t spec = {.name = gpus[i].uuid,
                                     .cpu_milli = UINT32_MAX,
                                     .mem_mib = UINT64_MAX,
                                     .num_gpu = 1,
                                     .model = gpus[i].name,
                                     .gpu_mem_bytes = gs__gpu_leasable(&gpus[i])};
        if (gs_place_cluster_add_node(cache.cluster, &spec, NULL) != 0) {
            drop_engine();
            return GS_EINVAL;
        }
    }
    gs_place_policy_t p = policy == GS__POLICY_FGD ? GS_PLACE_FGD : GS_PLACE_GPUSHARE;
    if (gs_place_engine_new(cache.cluster, p, NULL, 42, &cache.engine) != 0) {
        drop_engine();
        return GS_ENOMEM;
    }
    cache.n = n;
    cache.policy = policy;
    return 0;
}

/* Thousandths of a GPU that bytes of its leasable memory are, rounded down (used) or up
 * (wanted), so a request that fits by bytes also fits in thousandths. */
static uint32_t milli_of(uint64_t bytes, uint64_t leasable, int round_up)
{
    if (leasable == 0)
        return 1000;
    unsigned __int128 m = (unsigned __int128)bytes * 1000 + (round_up ? leasable - 1 : 0);
    uint64_t milli = (uint64_t)(m / leasable);
    return milli > 1000 ? 1000 : (uint32_t)milli;
}

/* Tells the engine what is left on each GPU now (nothing on those that cannot take the
 * request). */
static void sync_state(const gs__gpu_t *gpus, unsigned n, const int *fits)
{
    for (unsigned i = 0; i < n; i++) {
        gs_place_node_state_t state;
        if (gs_place_node_get(cache.cluster, (int)i, &state) != 0)
            continue;
        uint64_t leasable = gs__gpu_leasable(&gpus[i]);
        uint32_t used = milli_of(gs__gpu_taken(&gpus[i]), leasable, 0);
        if (gpus[i].compute_leased > used)
            used = gpus[i].compute_leased > 1000 ? 1000 : gpus[i].compute_leased;
        state.gpu_left[0] = fits[i] ? 1000 - used : 0;
        state.gpu_mem_left[0] = fits[i] ? gs__gpu_mem_free(&gpus[i]) : 0;
        gs_place_node_set(cache.cluster, (int)i, &state);
    }
}

int gs__place_engine_pick(const gs__gpu_t *gpus, unsigned n, const gs__part_t *parts,
                          const int *fits, gs__policy_t policy)
{
    if (n == 0 || (cache.engine != NULL && (cache.n != n || cache.policy != policy)))
        drop_engine();
    if (cache.engine == NULL && (n == 0 || build_engine(gpus, n, policy) != 0))
        return -1;
    sync_state(gpus, n, fits);
    /* The request as the engine measures it: the larger of its memory and compute shares. */
    int any = -1;
    for (unsigned i = 0; i < n && any < 0; i++)
        any = fits[i] ? (int)i : -1;
    if (any < 0)
        return -1;
    uint64_t leasable = gs__gpu_leasable(&gpus[any]);
    uint32_t milli = milli_of(parts[any].memory, leasable, 1);
    if (parts[any].compute > milli)
        milli = parts[any].compute > 1000 ? 1000 : parts[any].compute;
    gs_place_request_t req = {
        .num_gpu = 1, .gpu_milli = milli > 0 ? milli : 1, .gpu_mem_bytes = parts[any].memory};
    gs_place_decision_t where;
    if (gs_place_select(cache.engine, &req, &where) != 0 || where.node < 0 ||
        (unsigned)where.node >= n || !fits[where.node])
        return -1;
    return where.node;
}

void gs__place_engine_free(void)
{
    drop_engine();
}
