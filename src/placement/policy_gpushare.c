/* gpushare's placement policy: FGD's decision rule with a fragmentation measure that also counts
 * the GPU capacity tasks cannot reach because CPU, host memory or free GPUs run out first
 * (docs/placement.md explains the design and the measurements). */
#include "placement_internal.h"

/* The capacity of a node's GPUs in decreasing order and its prefix sums: top[i] is the room on
 * the i GPUs with the most room. */
typedef struct profile {
    uint32_t left[GS_PLACE_MAX_GPUS];
    uint32_t top[GS_PLACE_MAX_GPUS + 1];
    uint32_t n;
} profile_t;

static void make_profile(const gs__node_t *node, profile_t *p)
{
    p->n = node->ngpu;
    for (uint32_t i = 0; i < p->n; i++) { /* insertion sort: at most 16 GPUs */
        uint32_t v = node->gpu_left[i], j = i;
        for (; j > 0 && p->left[j - 1] < v; j--)
            p->left[j] = p->left[j - 1];
        p->left[j] = v;
    }
    p->top[0] = 0;
    for (uint32_t i = 0; i < p->n; i++)
        p->top[i + 1] = p->top[i] + p->left[i];
}

/* GPU capacity of the node that tasks of shape m can actually reach: the room on the GPUs they
 * can occupy. A GPU is eligible when it has room for one task (as in FGD); of the eligible GPUs,
 * only as many as the tasks that fit the node's free CPU and memory can take are reachable (the
 * roomiest ones). Zero when m cannot run there at all. */
static uint32_t reachable(const gs__node_t *node, const gs_place_request_t *m, const profile_t *p)
{
    if (m->model_mask != 0 && (m->model_mask & node->model_bit) == 0)
        return 0;
    uint32_t fit = 0;
    while (fit < p->n && p->left[fit] >= m->gpu_milli)
        fit++;
    if (fit < m->num_gpu)
        return 0;
    uint64_t copies = UINT64_MAX;
    if (m->cpu_milli > 0)
        copies = node->cpu_left / m->cpu_milli;
    if (m->mem_mib > 0 && node->mem_left / m->mem_mib < copies)
        copies = node->mem_left / m->mem_mib;
    uint64_t gpus = copies >= fit ? fit : copies * m->num_gpu;
    return p->top[gpus < fit ? gpus : fit];
}

/* F_n(M) = sum over GPU shapes m of p_m * (capacity left on n that m cannot reach). Shapes that
 * take no GPU contribute nothing: no GPU capacity is lost to them. */
static double gpushare_frag(const gs_place_engine_t *e, const gs__node_t *node)
{
    if (node->milli_left == 0)
        return 0;
    profile_t p;
    make_profile(node, &p);
    double f = 0;
    for (size_t i = 0; i < e->nshapes; i++) {
        const gs_place_request_t *m = &e->shapes[i].req;
        if (m->num_gpu > 0)
            f += e->shapes[i].weight * (node->milli_left - reachable(node, m, &p));
    }
    return f;
}

const gs__policy_ops_t gs__policy_gpushare = {
    .name = "gpushare",
    .label = "07-gpushare",
    .score = gs__frag_score,
    .choose = gs__frag_choose,
    .frag = gpushare_frag,
    .cacheable = 1,
    .uses_workload = 1,
};
