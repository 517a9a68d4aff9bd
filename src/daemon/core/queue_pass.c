/* SPDX-License-Identifier: Apache-2.0 */
/* The wait queue's service: order by priority with aging, backfill behind held GPUs. */
#include "queue_pass.h"
#include "mode_ops.h"
#include "place.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aging never lifts a request by more than this many points. */
#define AGING_MAX 10000

typedef struct ranked {
    gs__waiter_t *w;
    int64_t priority;
} ranked_t;

/* The most users whose requests hold GPUs in one pass (beyond, a request holds nothing). */
#define PASS_HOLDERS 256

/* The state of one pass: which GPUs are held, and for whom (a position in the order); the users
 * one of whose requests holds GPUs already (one request per user holds: what one user's waiting
 * requests hold is bounded by one request's shape, as Slurm's backfill bounds reservations). */
typedef struct pass {
    uint32_t held;
    int holder[GS_MAX_DEVICES];
    uint32_t users[PASS_HOLDERS];
    unsigned n_users;
} pass_t;

static uint32_t bit(unsigned i)
{
    return UINT32_C(1) << i;
}

int64_t gs__queue_priority(const gs__daemon_t *d, const gs__waiter_t *w, int64_t now_ms)
{
    int64_t bonus = 0;
    if (d->cfg.queue_aging_ms > 0 && now_ms > w->queued_ms)
        bonus = (now_ms - w->queued_ms) / (int64_t)d->cfg.queue_aging_ms;
    return w->req.priority + (bonus < AGING_MAX ? bonus : AGING_MAX);
}

static int by_rank(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->w->seq < y->w->seq ? -1 : x->w->seq > y->w->seq;
}

/* The queue in service order, or NULL when out of memory (the caller then keeps arrival order
 * within priority, the list's own order). */
static ranked_t *rank(const gs__daemon_t *d, int64_t now_ms)
{
    ranked_t *order = calloc(d->queue.length + 1, sizeof(*order));
    if (order == NULL)
        return NULL;
    size_t n = 0;
    for (gs__waiter_t *w = d->queue.head; w != NULL && n < d->queue.length; w = w->next) {
        order[n].w = w;
        order[n].priority = gs__queue_priority(d, w, now_ms);
        n++;
    }
    qsort(order, n, sizeof(*order), by_rank);
    return order;
}

/* How far gpu is from giving part now: the memory it lacks, then the compute (thousandths),
 * then the slots, as one number to compare (0: it fits). */
static unsigned __int128 shortfall(const gs__gpu_t *gpu, gs_lease_kind_t kind,
                                   const gs__part_t *part)
{
    uint64_t leasable = gs__gpu_leasable(gpu);
    /* A GPU whose mode gives it to one lease at a time has nothing free while leased. */
    int whole = !(gs_gpu_mode_flags(gpu->mode) & GS_MODE_SHARES_GPU);
    uint64_t leased = whole && gpu->n_leases > 0 ? leasable : gs__gpu_taken(gpu);
    uint64_t free_mem = leasable > leased ? leasable - leased : 0;
    uint64_t memory = part->memory > free_mem ? part->memory - free_mem : 0;
    uint32_t free_compute = gpu->compute_leased < 1000 ? 1000 - gpu->compute_leased : 0;
    uint32_t compute = part->compute > free_compute ? part->compute - free_compute : 0;
    unsigned k = gpu->overprovision >= 1 ? gpu->overprovision : 1;
    unsigned free_slots = k > gpu->slots_leased ? k - gpu->slots_leased : 0;
    unsigned slots =
        kind == GS_LEASE_GPUS && part->slots > free_slots ? part->slots - free_slots : 0;
    unsigned __int128 cost =
        ((unsigned __int128)memory << 48) | ((unsigned __int128)compute << 16) | (slots & 0xFFFF);
    return cost + (gs__gpu_fits(gpu, kind, part) ? 0 : 1);
}

/* Whether w could ever be served by gpu (its mode asked, as if nothing were leased there), with
 * slots logical GPUs on it; fills *part with what it would take. */
static int ever_fits(const gs__gpu_t *gpu, const gs__waiter_t *w, unsigned slots, gs__part_t *part)
{
    /* (Idle: what processes of no lease hold is left out too, gs__gpu_fits_idle: a GPU they
     * fill is still one to hold for the request, else it would wait behind nothing.) */
    gs__ask_t ask = {.req = &w->req, .uid = GS__UID_ANY, .slots = slots, .idle = 1};
    return gs__gpu_admit(gpu, &ask, part) == 0;
}

/* The GPUs w may use (its models, its pinning) whose mode could ever serve it. */
static uint32_t serving(const gs__daemon_t *d, const gs__waiter_t *w)
{
    uint32_t mask = gs__place_eligible(d->gpus, d->n_gpus, &w->req);
    unsigned slots = w->req.kind == GS_LEASE_GPUS ? 1 : 0;
    for (unsigned i = 0; i < d->n_gpus && i < GS_MAX_DEVICES; i++) {
        gs__part_t part;
        if ((mask & bit(i)) && !ever_fits(&d->gpus[i], w, slots, &part))
            mask &= ~bit(i);
    }
    return mask;
}

/* The shape w takes on an idle node among candidates: how many GPUs, how many slots on each. */
static int shape(const gs__daemon_t *d, const gs__waiter_t *w, uint32_t candidates, unsigned *count,
                 unsigned *slots)
{
    gs__alloc_t alloc;
    if (gs__place_ever(d->gpus, d->n_gpus, &w->req, candidates, &alloc) != 0)
        return GS_ENOFIT;
    *count = alloc.n;
    *slots = alloc.part[0].slots;
    return 0;
}

/* Chooses the GPUs to hold for w among candidates: the ones it is closest to fitting on.
 * Returns their mask (0 when it could never fit on the candidates). */
static uint32_t choose_hold(const gs__daemon_t *d, const gs__waiter_t *w, uint32_t candidates)
{
    const gs_lease_request_t *req = &w->req;
    if (req->n_pinned > 0)
        return candidates == serving(d, w) ? candidates : 0;
    unsigned count = 1, slots = 0;
    if (shape(d, w, candidates, &count, &slots) != 0)
        return 0;
    uint32_t hold = 0;
    for (unsigned c = 0; c < count; c++) {
        int best = -1;
        unsigned __int128 best_cost = 0;
        for (unsigned i = 0; i < d->n_gpus; i++) {
            gs__part_t part;
            if (!(candidates & bit(i)) || (hold & bit(i)) ||
                !ever_fits(&d->gpus[i], w, slots, &part))
                continue;
            unsigned __int128 cost = shortfall(&d->gpus[i], req->kind, &part);
            if (best < 0 || cost < best_cost) {
                best = (int)i;
                best_cost = cost;
            }
        }
        if (best < 0)
            return 0;
        hold |= bit((unsigned)best);
    }
    return hold;
}

/* How many distinct requests ahead hold GPUs among mask. */
static unsigned holders_among(const pass_t *p, unsigned n_gpus, uint32_t mask)
{
    unsigned count = 0;
    for (unsigned i = 0; i < n_gpus; i++) {
        if (!(mask & p->held & bit(i)))
            continue;
        int first = 1;
        for (unsigned j = 0; j < i && first; j++)
            first = !((mask & p->held & bit(j)) && p->holder[j] == p->holder[i]);
        count += first;
    }
    return count;
}

/* Whether w would fit among candidates now but for its own user's leases: it waits on itself,
 * and holding GPUs for it would only keep them from other users for as long as it likes. Asked
 * of a copy of the GPUs without that user's leases, best fit (the engine learns nothing). */
static int waits_on_own(const gs__daemon_t *d, const gs__waiter_t *w, uint32_t candidates)
{
    gs__gpu_t gpus[GS_MAX_DEVICES];
    int mine = 0;
    memcpy(gpus, d->gpus, d->n_gpus * sizeof(gpus[0]));
    for (const gs__lease_t *l = d->leases; l != NULL; l = l->next) {
        if (l->rec.uid != w->uid)
            continue;
        for (unsigned i = 0; i < l->alloc.n; i++) {
            gs__gpu_give(&gpus[l->alloc.part[i].gpu], &l->alloc.part[i]);
            mine |= (candidates >> l->alloc.part[i].gpu) & 1;
        }
    }
    gs__alloc_t alloc;
    return mine && gs__place_within(gpus, d->n_gpus, &w->req, w->uid, GS__POLICY_BESTFIT,
                                    candidates, &alloc) == 0;
}

/* Whether a request of uid holds GPUs already in this pass; notes uid as one when not. */
static int user_holds(pass_t *p, uint32_t uid)
{
    for (unsigned i = 0; i < p->n_users; i++) {
        if (p->users[i] == uid)
            return 1;
    }
    if (p->n_users == PASS_HOLDERS)
        return 1;
    p->users[p->n_users++] = uid;
    return 0;
}

/* Records that w waits holding nothing, and why. */
static void wait_unheld(const pass_t *p, const gs__daemon_t *d, gs__waiter_t *w, unsigned pos,
                        uint32_t eligible, gs__wait_kind_t kind)
{
    w->wait.position = pos;
    w->wait.held = 0;
    w->wait.gpu = -1;
    w->wait.ahead = holders_among(p, d->n_gpus, eligible);
    w->wait.kind = kind;
}

/* Looks at one waiter (at position pos of the pass): grants it, or records why it waits and
 * holds GPUs for it (unless it waits on its own user, or its user's earlier request holds). */
static void serve(gs__daemon_t *d, pass_t *p, gs__waiter_t *w, unsigned pos,
                  gs__queue_grant_fn grant)
{
    uint32_t eligible = serving(d, w);
    gs__alloc_t alloc;
    if (gs__place_within(d->gpus, d->n_gpus, &w->req, w->uid, d->policy, eligible & ~p->held,
                         &alloc) == 0) {
        grant(d, w, &alloc);
        return;
    }
    /* Root's own requests (Slurm's) are trusted; a request that may not wait is refused after
     * the pass and says what it lacks. */
    int bounded = w->uid != 0 && w->req.wait;
    if (bounded && waits_on_own(d, w, eligible & ~p->held)) {
        wait_unheld(p, d, w, pos, eligible, GS__WAIT_OWN);
        return;
    }
    if (bounded && user_holds(p, w->uid)) {
        wait_unheld(p, d, w, pos, eligible, GS__WAIT_SECOND);
        return;
    }
    int fits_held =
        (eligible & p->held) != 0 &&
        gs__place_within(d->gpus, d->n_gpus, &w->req, w->uid, d->policy, eligible, &alloc) == 0;
    uint32_t hold = choose_hold(d, w, eligible & ~p->held);
    w->wait.position = pos;
    w->wait.held = hold;
    w->wait.gpu = -1;
    for (unsigned i = 0; i < d->n_gpus && w->wait.gpu < 0; i++)
        w->wait.gpu = (hold & bit(i)) ? (int)i : -1;
    w->wait.ahead = holders_among(p, d->n_gpus, eligible);
    w->wait.kind = fits_held ? GS__WAIT_BEHIND : hold != 0 ? GS__WAIT_NO_ROOM : GS__WAIT_HELD;
    for (unsigned i = 0; i < d->n_gpus; i++) {
        if (hold & bit(i))
            p->holder[i] = (int)pos;
    }
    p->held |= hold;
}

void gs__queue_pass(gs__daemon_t *d, int64_t now_ms, gs__queue_grant_fn grant)
{
    ranked_t *order = rank(d, now_ms);
    size_t n = d->queue.length;
    pass_t p = {.held = 0};
    uint32_t all = d->n_gpus >= 32 ? UINT32_MAX : bit(d->n_gpus) - 1;
    unsigned pos = 1;
    for (size_t i = 0; i < n; i++) {
        gs__waiter_t *w = order != NULL ? order[i].w : NULL;
        if (w == NULL)
            break;
        if (p.held == all && all != 0) {
            /* Every GPU is held for a request ahead: nothing behind can start. */
            w->wait.kind = GS__WAIT_HELD;
            w->wait.position = pos++;
            w->wait.gpu = -1;
            w->wait.held = 0;
            w->wait.ahead = holders_among(&p, d->n_gpus, serving(d, w));
            continue;
        }
        unsigned before = d->queue.length;
        serve(d, &p, w, pos, grant);
        pos += d->queue.length == before; /* a granted request leaves the queue */
    }
    free(order);
}
