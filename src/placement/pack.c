/* SPDX-License-Identifier: Apache-2.0 */
/* Packing values for gpushare's policy: what a GPU share and a GPU's room are worth in GPUs of an
 * optimal packing of the target workload (LP dual prices, and a CPU-aware completion table). */
#include "placement_internal.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>

#define ROOMS (GS_PLACE_MILLI + 1)
#define CORES (GS__PACK_CORES + 1)

/* A task size the completion table may fill room with. */
typedef struct item {
    uint32_t milli, cores;
    double price;
} item_t;

/* Per share size: the workload's demand (frequency) and the fewest cores a task of it takes. */
typedef struct sizes {
    double demand[ROOMS];
    uint32_t cores[ROOMS];
    uint32_t whole_cores; /* per GPU, for whole-GPU tasks; CORES when the workload has none */
} sizes_t;

/* Whole cores for milli-CPU, rounded up: a task never looks smaller than it is. */
static uint32_t cores_of(uint64_t milli)
{
    uint64_t c = (milli + 999) / 1000;
    return c > GS__PACK_CORES ? CORES : (uint32_t)c;
}

static void collect(const gs__shape_t *shapes, size_t n, sizes_t *s)
{
    memset(s->demand, 0, sizeof(s->demand));
    for (uint32_t m = 0; m < ROOMS; m++)
        s->cores[m] = CORES;
    s->whole_cores = CORES;
    for (size_t i = 0; i < n; i++) {
        const gs_place_request_t *r = &shapes[i].req;
        if (r->num_gpu == 0)
            continue;
        if (r->gpu_milli == GS_PLACE_MILLI) {
            uint32_t c = cores_of((r->cpu_milli + (uint64_t)r->num_gpu - 1) / r->num_gpu);
            s->whole_cores = c < s->whole_cores ? c : s->whole_cores;
            continue;
        }
        s->demand[r->gpu_milli] += shapes[i].weight;
        uint32_t c = cores_of(r->cpu_milli);
        s->cores[r->gpu_milli] = c < s->cores[r->gpu_milli] ? c : s->cores[r->gpu_milli];
    }
}

/* Keeps size m among the GS__PACK_SIZES most demanded so far (size[], demand[] by demand). */
static void keep_top(uint32_t *size, double *demand, uint32_t *n, uint32_t m, double d)
{
    if (*n == GS__PACK_SIZES && d <= demand[*n - 1])
        return;
    uint32_t i = *n < GS__PACK_SIZES ? (*n)++ : *n - 1;
    for (; i > 0 && demand[i - 1] < d; i--) {
        size[i] = size[i - 1];
        demand[i] = demand[i - 1];
    }
    size[i] = m;
    demand[i] = d;
}

/* The LP's prices of the workload's most demanded shares, into pack->price and pack->known (the
 * LP's cost grows fast with its rows; rarer sizes are valued by the room they take). */
static int price_shares(const sizes_t *s, gs__pack_t *pack)
{
    uint32_t size[GS__PACK_SIZES], n = 0;
    double demand[GS__PACK_SIZES], price[GS__PACK_SIZES];
    for (uint32_t m = 1; m < GS_PLACE_MILLI; m++) {
        if (s->demand[m] > 0)
            keep_top(size, demand, &n, m, s->demand[m]);
    }
    int result = gs__pack_lp_prices(size, demand, n, price);
    if (result != 0)
        return result;
    for (uint32_t i = 0; i < n; i++) {
        pack->price[size[i]] = price[i];
        pack->known[size[i]] = 1;
    }
    pack->price[GS_PLACE_MILLI] = 1;
    pack->known[GS_PLACE_MILLI] = 1;
    return 0;
}

/* value[room][cores]: the most valuable set of items fitting both (an unbounded knapsack). */
static void complete(const item_t *items, size_t n, float *value)
{
    for (uint32_t r = 0; r < ROOMS; r++) {
        for (uint32_t c = 0; c < CORES; c++) {
            float best = 0;
            if (r > 0 && value[(r - 1) * CORES + c] > best)
                best = value[(r - 1) * CORES + c];
            if (c > 0 && value[r * CORES + c - 1] > best)
                best = value[r * CORES + c - 1];
            for (size_t i = 0; i < n; i++) {
                if (items[i].milli > r || items[i].cores > c)
                    continue;
                float v = value[(r - items[i].milli) * CORES + c - items[i].cores] +
                          (float)items[i].price;
                best = v > best ? v : best;
            }
            value[r * CORES + c] = best;
        }
    }
}

/* The items of the completion table: the priced shares, and whole GPUs when the workload has
 * whole-GPU tasks. Returns their count. */
static size_t make_items(const sizes_t *s, const gs__pack_t *pack, item_t *items)
{
    size_t n = 0;
    for (uint32_t m = 1; m < GS_PLACE_MILLI; m++) {
        if (pack->known[m] && pack->price[m] > 0 && s->cores[m] < CORES)
            items[n++] = (item_t){m, s->cores[m], pack->price[m]};
    }
    if (s->whole_cores < CORES)
        items[n++] = (item_t){GS_PLACE_MILLI, s->whole_cores, 1.0};
    return n;
}

int gs__pack_build(const gs__shape_t *shapes, size_t n, gs__pack_t **out)
{
    gs__pack_t *pack = calloc(1, sizeof(*pack));
    sizes_t *s = malloc(sizeof(*s));
    item_t *items = malloc(ROOMS * sizeof(*items));
    int result = GS_ENOMEM;
    if (pack == NULL || s == NULL || items == NULL)
        goto out;
    pack->value = calloc((size_t)ROOMS * CORES, sizeof(float));
    if (pack->value == NULL)
        goto out;
    collect(shapes, n, s);
    if ((result = price_shares(s, pack)) != 0)
        goto out;
    complete(items, make_items(s, pack, items), pack->value);
    *out = pack;
    pack = NULL;
out:
    gs__pack_free(pack);
    free(s);
    free(items);
    return result;
}

void gs__pack_free(gs__pack_t *pack)
{
    if (pack == NULL)
        return;
    free(pack->value);
    free(pack);
}

/* The node's GPUs share its CPU: each GPU's room is valued with the share of the cores left that
 * matches its share of the room left, and the node is worth at least its best GPU given all the
 * cores (a split is only an estimate of how the tasks to come will share them). */
double gs__pack_node_value(const gs__pack_t *pack, const gs__node_t *node)
{
    double v = 0, one = 0;
    if (node->milli_left == 0)
        return 0;
    uint64_t all = node->cpu_left / 1000;
    all = all > GS__PACK_CORES ? GS__PACK_CORES : all;
    for (uint32_t g = 0; g < node->ngpu; g++) {
        uint64_t cores = (uint64_t)node->cpu_left * node->gpu_left[g] / node->milli_left / 1000;
        cores = cores > GS__PACK_CORES ? GS__PACK_CORES : cores;
        v += pack->value[node->gpu_left[g] * CORES + cores];
        double o = pack->value[node->gpu_left[g] * CORES + all];
        one = o > one ? o : one;
    }
    return v > one ? v : one;
}

double gs__pack_request_price(const gs__pack_t *pack, const gs_place_request_t *req)
{
    if (req->num_gpu == 0)
        return 0;
    if (req->gpu_milli == GS_PLACE_MILLI)
        return req->num_gpu;
    if (pack->known[req->gpu_milli])
        return pack->price[req->gpu_milli];
    return pack->value[req->gpu_milli * CORES + GS__PACK_CORES];
}
