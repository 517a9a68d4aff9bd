/* SPDX-License-Identifier: Apache-2.0 */
/* The reasons of refusals and waits, each naming what stands in the way (reasons.h). */
#include "reasons.h"
#include "place.h"

#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A line being written: appends are cut at its size. */
typedef struct line {
    char *buf;
    size_t len, off;
} line_t;

static void put(line_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(line_t *l, const char *fmt, ...)
{
    if (l->len == 0 || l->off + 1 >= l->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->off, l->len - l->off, fmt, ap);
    va_end(ap);
    l->off = n < 0 ? l->off : l->off + (size_t)n < l->len ? l->off + (size_t)n : l->len - 1;
}

static line_t line_of(char *buf, size_t len)
{
    if (len > 0)
        buf[0] = '\0';
    return (line_t){.buf = buf, .len = len, .off = 0};
}

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

static unsigned overprovision_of(const gs__gpu_t *gpu)
{
    return gpu->overprovision >= 1 ? gpu->overprovision : 1;
}

/* ---- what holds a GPU's memory or compute ---- */

/* The leases on one GPU as a viewer may see them: theirs by id (root: all, with users), other
 * users' as a count, each with what it holds. */
typedef struct holding {
    unsigned n_listed, n_other;
    uint64_t listed, other; /* bytes, or thousandths of compute */
    char ids[256];
} holding_t;

static void amount_text(uint64_t amount, int compute, char *buf, size_t len)
{
    if (compute)
        snprintf(buf, len, "%llu%%", (unsigned long long)(amount + 5) / 10);
    else
        gs_qty_format_human(amount, buf, len);
}

/* Lists the lease ("4 (20 GiB)"; for root "4 (alice, 20 GiB)") or counts it among others'. */
static void add_lease(holding_t *h, const gs__lease_t *lease, uint32_t uid, uint64_t amount,
                      int compute)
{
    if (uid != 0 && lease->rec.uid != uid) {
        h->n_other++;
        h->other += amount;
        return;
    }
    char what[32];
    amount_text(amount, compute, what, sizeof(what));
    size_t off = strlen(h->ids);
    if (h->n_listed < 4 && off < sizeof(h->ids))
        snprintf(h->ids + off, sizeof(h->ids) - off, "%s%llu (%s%s%s)", h->n_listed > 0 ? ", " : "",
                 (unsigned long long)lease->rec.id, uid == 0 ? lease->rec.user : "",
                 uid == 0 ? ", " : "", what);
    else if (h->n_listed == 4 && off < sizeof(h->ids))
        snprintf(h->ids + off, sizeof(h->ids) - off, ", ...");
    h->n_listed++;
    h->listed += amount;
}

/* "your lease 4 (20 GiB), 1 lease of another user (10 GiB), processes of no lease (6 GiB)":
 * what holds GPU g's memory (or compute). Nothing is written when nothing does. */
static void holders(const gs__daemon_t *d, unsigned g, uint32_t uid, int compute, line_t *l)
{
    holding_t h;
    memset(&h, 0, sizeof(h));
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        for (unsigned i = 0; i < lease->alloc.n; i++) {
            const gs__part_t *part = &lease->alloc.part[i];
            if (part->gpu == g && (compute ? part->compute : part->memory) > 0)
                add_lease(&h, lease, uid, compute ? part->compute : part->memory, compute);
        }
    }
    char amount[32];
    const char *sep = "";
    if (h.n_listed == 0 && h.n_other == 0 && d->gpus[g].n_leases > 0) {
        /* Parts counted on the GPU that no lease in the list has (never in the daemon). */
        const gs__gpu_t *gpu = &d->gpus[g];
        amount_text(compute ? gpu->compute_leased : gpu->mem_leased, compute, amount,
                    sizeof(amount));
        put(l, "%u lease%s (%s)", gpu->n_leases, plural(gpu->n_leases), amount);
        sep = ", ";
    }
    if (h.n_listed > 0) {
        put(l, "%slease%s %s", uid == 0 ? "" : "your ", plural(h.n_listed), h.ids);
        sep = ", ";
    }
    if (h.n_other > 0) {
        amount_text(h.other, compute, amount, sizeof(amount));
        put(l, "%s%u lease%s of %s (%s)", sep, h.n_other, plural(h.n_other),
            h.n_other == 1 ? "another user" : "other users", amount);
        sep = ", ";
    }
    if (!compute && d->gpus[g].outside > 0) {
        gs_qty_format_human(d->gpus[g].outside, amount, sizeof(amount));
        put(l, "%sprocesses of no lease (%s, gpushare status --processes)", sep, amount);
    }
}

/* ---- why a GPU cannot give a request now ---- */

/* A --gpus request that takes the GPU whole. */
static int takes_whole(const gs__gpu_t *gpu, const gs_lease_request_t *req, const gs__part_t *p)
{
    return req->kind == GS_LEASE_GPUS && (!(gs_gpu_mode_flags(gpu->mode) & GS_MODE_SHARES_GPU) ||
                                          p->slots >= overprovision_of(gpu));
}

/* What the GPU's pool (memory, compute, slots) lacks for part. */
static void pool_reason(const gs__daemon_t *d, unsigned g, const gs_lease_request_t *req,
                        uint32_t uid, const gs__part_t *part, line_t *l)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    uint64_t free_mem = gs__gpu_mem_free(gpu); /* what is held outside the leases is not free */
    uint32_t free_compute = gpu->compute_leased < 1000 ? 1000 - gpu->compute_leased : 0;
    char have[32], need[32];
    put(l, "GPU %u (%s) ", gpu->index, gs__gpu_model(gpu));
    if (takes_whole(gpu, req, part) && (gpu->n_leases > 0 || gpu->outside > 0)) {
        put(l, "is in use by ");
        holders(d, g, uid, 0, l);
        return;
    }
    if (req->kind == GS_LEASE_GPUS && gs__gpu_free_slots(gpu) < part->slots) {
        put(l, "has %u of the %u logical GPUs it needs free; held by ", gs__gpu_free_slots(gpu),
            part->slots);
        holders(d, g, uid, 0, l);
        return;
    }
    gs_qty_format_human(free_mem, have, sizeof(have));
    gs_qty_format_human(part->memory, need, sizeof(need));
    if (part->memory > free_mem) {
        put(l, "has %s free of the %s it needs; held by ", have, need);
        holders(d, g, uid, 0, l);
    } else if (part->compute > free_compute) {
        put(l, "has %u%% compute unpromised of the %u%% it needs; promised to ", free_compute / 10,
            part->compute / 10);
        holders(d, g, uid, 1, l);
    } else {
        put(l, "cannot take it now");
    }
}

void gs__reason_gpu(const gs__daemon_t *d, unsigned g, const gs_lease_request_t *req, uint32_t uid,
                    unsigned slots, char *buf, size_t len)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    gs__ask_t ask = {.req = req, .uid = uid, .slots = slots, .idle = 0};
    gs__part_t part;
    int result = gs__gpu_admit(gpu, &ask, &part);
    line_t l = line_of(buf, len);
    /* The mode first: another mode, MPS serving another user, MIG instances in the way. */
    gs__gpu_why_not(gpu, &ask, buf, len);
    if (buf[0] != '\0')
        return;
    if (result == 0) {
        put(&l, "GPU %u (%s) has room for it", gpu->index, gs__gpu_model(gpu));
        return;
    }
    gs__part_for(gpu, req, slots, &part);
    pool_reason(d, g, req, uid, &part, &l);
}

/* ---- why a request waits ---- */

/* How many logical GPUs w takes on each GPU, on an idle node among candidates (0: not --gpus). */
static unsigned slots_of(const gs__daemon_t *d, const gs__waiter_t *w, uint32_t candidates)
{
    gs__alloc_t alloc;
    if (w->req.kind != GS_LEASE_GPUS ||
        gs__place_ever(d->gpus, d->n_gpus, &w->req, candidates, &alloc) != 0)
        return w->req.kind == GS_LEASE_GPUS ? 1 : 0;
    return alloc.part[0].slots;
}

/* Nothing ahead holds a GPU for it, and no GPU could be held: the GPU of its models it is
 * closest to getting (the first that does not fit now), described. */
static void describe_blocked(const gs__daemon_t *d, const gs__waiter_t *w, char *buf, size_t len)
{
    uint32_t eligible = gs__place_eligible(d->gpus, d->n_gpus, &w->req);
    unsigned slots = slots_of(d, w, eligible);
    for (unsigned i = 0; i < d->n_gpus && i < GS_MAX_DEVICES; i++) {
        gs__ask_t ask = {.req = &w->req, .uid = w->uid, .slots = slots, .idle = 0};
        gs__part_t part;
        if ((eligible & (UINT32_C(1) << i)) && gs__gpu_admit(&d->gpus[i], &ask, &part) != 0) {
            gs__reason_gpu(d, i, &w->req, w->uid, slots, buf, len);
            return;
        }
    }
    snprintf(buf, len, "waiting for its GPUs");
}

void gs__reason_wait(const gs__daemon_t *d, const gs__waiter_t *w, char *buf, size_t len)
{
    const gs__wait_t *wait = &w->wait;
    char gpu[320] = "";
    if (wait->gpu >= 0 && (unsigned)wait->gpu < d->n_gpus)
        gs__reason_gpu(d, (unsigned)wait->gpu, &w->req, w->uid, slots_of(d, w, wait->held), gpu,
                       sizeof(gpu));
    switch (wait->kind) {
    case GS__WAIT_NO_ROOM:
        snprintf(buf, len, "%s", gpu);
        return;
    case GS__WAIT_BEHIND:
        snprintf(buf, len, "it fits now only on GPUs held for %u request%s ahead of it%s%s",
                 wait->ahead, plural(wait->ahead), gpu[0] != '\0' ? "; " : "", gpu);
        return;
    case GS__WAIT_HELD:
        if (wait->ahead == 0)
            describe_blocked(d, w, buf, len);
        else
            snprintf(buf, len, "behind %u request%s ahead of it holding the GPUs it may use",
                     wait->ahead, plural(wait->ahead));
        return;
    case GS__WAIT_OWN: /* it holds nothing; what stands in the way names the user's leases */
        describe_blocked(d, w, buf, len);
        return;
    case GS__WAIT_SECOND:
        snprintf(buf, len,
                 "an earlier waiting request of its user holds GPUs (it holds none meanwhile)");
        return;
    case GS__WAIT_NEW:
        break;
    }
    snprintf(buf, len, "waiting");
}

/* ---- why a request can never be served ---- */

/* Admission of req on an idle gpu with slots logical GPUs. */
static int admit_idle(const gs__gpu_t *gpu, const gs_lease_request_t *req, unsigned slots,
                      gs__part_t *part)
{
    gs__ask_t ask = {.req = req, .uid = GS__UID_ANY, .slots = slots, .idle = 1};
    return gs__gpu_admit(gpu, &ask, part);
}

static void why_not_idle(const gs__gpu_t *gpu, const gs_lease_request_t *req, unsigned slots,
                         char *why, size_t whylen)
{
    gs__ask_t ask = {.req = req, .uid = GS__UID_ANY, .slots = slots, .idle = 1};
    gs__gpu_why_not(gpu, &ask, why, whylen);
}

static int find_index(const gs__gpu_t *gpus, unsigned n, unsigned index)
{
    for (unsigned i = 0; i < n; i++) {
        if (gpus[i].index == index)
            return (int)i;
    }
    return -1;
}

/* The reason the first GPU that would serve req but cannot now gives (GS_EAGAIN), in why.
 * Returns 1 when there is one, 2 when that GPU's problem is the administrator's to fix. */
static int unavailable(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, char *why,
                       size_t whylen)
{
    for (unsigned i = 0; i < n; i++) {
        gs__part_t part;
        int pinned = req->n_pinned == 0;
        for (unsigned k = 0; k < req->n_pinned; k++)
            pinned |= req->pinned[k] == gpus[i].index;
        if (!pinned || (req->n_pinned > 1 && (gpus[i].ops->flags & GS__MODE_ONE_GPU)))
            continue; /* it could not serve this request even when it is ready */
        if (admit_idle(&gpus[i], req, req->kind == GS_LEASE_GPUS ? 1 : 0, &part) != GS_EAGAIN)
            continue;
        why_not_idle(&gpus[i], req, 0, why, whylen);
        return gs__gpu_needs_admin(&gpus[i]) ? 2 : 1;
    }
    return 0;
}

/* The article of a model's name as it is read: "an A100", "an H100", "a T4". */
static const char *article(const char *model)
{
    return model[0] != '\0' && strchr("AEFHILMNORSX", model[0]) != NULL ? "an" : "a";
}

/* "an A100 or a T4" */
static void types_text(const gs_lease_request_t *req, line_t *l)
{
    for (unsigned t = 0; t < req->n_gpu_types; t++)
        put(l, "%s%s %s", t == 0 ? "" : " or ", article(req->gpu_types[t]), req->gpu_types[t]);
}

/* No GPU of the asked models (or none at all) has the asked mode: says which modes they have. */
static void describe_mode(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                          gs_gpu_mode_t mode, char *why, size_t whylen)
{
    line_t l = line_of(why, whylen);
    if (req->n_gpu_types == 0) {
        put(&l, "no GPU on this node is mode %s", gs_gpu_mode_name(mode));
    } else {
        /* Other GPUs may have the mode: the models it names do not. */
        put(&l, "no GPU of this node that is ");
        types_text(req, &l);
        put(&l, " is mode %s", gs_gpu_mode_name(mode));
        for (unsigned i = 0; i < n; i++)
            put(&l, "%sGPU %u (%s) is mode %s", i == 0 ? ": " : ", ", empty[i].index,
                gs__gpu_model(&empty[i]), gs_gpu_mode_name(empty[i].mode));
    }
    if (req->kind == GS_LEASE_MIG)
        put(&l, " (--mig-profile needs one)");
}

/* Why no GPU serves req at all (modes that do not take such requests). */
static void describe_unserved(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                              char *why, size_t whylen)
{
    gs_gpu_mode_t mode =
        req->kind == GS_LEASE_MIG ? gs_gpu_mode_with(GS_MODE_MIG_INSTANCES) : req->mode;
    int has_mode = mode == GS_GPU_MODE_ANY;
    for (unsigned i = 0; i < n && !has_mode; i++)
        has_mode = empty[i].mode == mode;
    if (!has_mode) {
        describe_mode(empty, n, req, mode, why, whylen);
        return;
    }
    if ((req->kind == GS_LEASE_FRACTION || req->kind == GS_LEASE_MEMORY) &&
        req->mode == GS_GPU_MODE_ANY) {
        char modes[128];
        snprintf(why, whylen,
                 "no GPU on this node serves fractional leases (they need mode = %s; use --gpus "
                 "for whole GPUs)",
                 gs_gpu_mode_list(GS_MODE_SHARES_GPU, 0, 0, NULL, modes, sizeof(modes)));
        return;
    }
    /* The reason of a GPU of the asked mode first, then any GPU's. */
    why[0] = '\0';
    for (int pass = 0; pass < 2 && why[0] == '\0'; pass++) {
        for (unsigned i = 0; i < n && why[0] == '\0'; i++) {
            if (pass == 1 || empty[i].mode == mode)
                why_not_idle(&empty[i], req, 0, why, whylen);
        }
    }
    if (why[0] == '\0')
        snprintf(why, whylen, "no GPU on this node can serve this request");
}

/* The most logical GPUs one --gpus lease can have: GPUs of one factor k together, or one GPU of
 * a one-GPU mode alone. */
static unsigned most_slots(const gs__gpu_t *empty, unsigned n)
{
    unsigned most = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = overprovision_of(&empty[i]);
        unsigned sum = 0;
        for (unsigned j = 0; j < n; j++)
            sum += overprovision_of(&empty[j]) == k && gs__gpu_free_slots(&empty[j]) > 0 &&
                   !(empty[j].ops->flags & GS__MODE_ONE_GPU);
        sum *= k;
        if (gs__gpu_free_slots(&empty[i]) > 0 && k > sum)
            sum = k;
        most = sum > most ? sum : most;
    }
    return most;
}

/* A memory request larger than the largest GPU's leasable memory: that GPU's memory, less what
 * its driver keeps (what CUDA never sees) and the configuration's reserve, each said only when
 * it is there, so that "reserve = 0" is never blamed for the driver's part. */
static void never_fits_memory(const gs__gpu_t *gpu, const char *want, const char *have, char *why,
                              size_t whylen)
{
    char total[32], driver[32], reserve[32], less[128] = "";
    gs_qty_format_human(gpu->total, total, sizeof(total));
    gs_qty_format_human(gpu->driver_reserved, driver, sizeof(driver));
    gs_qty_format_human(gpu->reserve, reserve, sizeof(reserve));
    if (gpu->driver_reserved > 0 && gpu->reserve > 0)
        snprintf(less, sizeof(less), " less %s its driver keeps and %s of reserve", driver,
                 reserve);
    else if (gpu->driver_reserved > 0)
        snprintf(less, sizeof(less), " less %s its driver keeps", driver);
    else if (gpu->reserve > 0)
        snprintf(less, sizeof(less), " less %s of reserve", reserve);
    if (less[0] == '\0')
        snprintf(why, whylen,
                 "%s of GPU memory can never fit on this node (the largest GPU has %s)", want,
                 have);
    else
        snprintf(why, whylen,
                 "%s of GPU memory can never fit on this node (the largest GPU has %s leasable: "
                 "its %s%s)",
                 want, have, total, less);
}

static void describe_largest(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                             char *why, size_t whylen)
{
    const gs__gpu_t *best = NULL;
    uint64_t largest = 0;
    int serving = 0;
    for (unsigned i = 0; i < n; i++) {
        gs__part_t part;
        int result = admit_idle(&empty[i], req, req->kind == GS_LEASE_GPUS ? 1 : 0, &part);
        if (result == GS_ENOTSUP || result == GS_EAGAIN)
            continue;
        serving = 1;
        uint64_t l = gs__gpu_leasable(&empty[i]);
        if (l > largest || best == NULL)
            best = &empty[i];
        largest = l > largest ? l : largest;
    }
    char want[32], have[32];
    gs_qty_format_human(req->memory, want, sizeof(want));
    gs_qty_format_human(largest, have, sizeof(have));
    if (!serving)
        describe_unserved(empty, n, req, why, whylen);
    else if (req->kind == GS_LEASE_GPUS)
        snprintf(why, whylen,
                 "%u logical GPUs can never be given on this node (its GPUs offer at most %u "
                 "in one lease)",
                 req->gpus, most_slots(empty, n));
    else if (req->kind == GS_LEASE_MEMORY && req->memory > largest)
        never_fits_memory(best, want, have, why, whylen);
    else
        snprintf(why, whylen, "this request can never fit on this node's GPUs");
}

/* Why pinned GPU g (position in empty) can never give its part of req. */
static void describe_pinned_gpu(const gs__gpu_t *gpu, const gs_lease_request_t *req, int result,
                                unsigned slots, char *why, size_t whylen)
{
    if (result == GS_ENOTSUP || result == GS_EAGAIN) {
        why_not_idle(gpu, req, slots, why, whylen);
        return;
    }
    if (req->kind == GS_LEASE_GPUS) {
        snprintf(why, whylen,
                 "GPU %u can never give %u logical GPUs to one lease (%s mode, overprovision %u)",
                 gpu->index, slots, gs_gpu_mode_name(gpu->mode), overprovision_of(gpu));
        return;
    }
    char want[32], have[32];
    gs__part_t part;
    gs__part_for(gpu, req, 0, &part);
    gs_qty_format_human(part.memory, want, sizeof(want));
    gs_qty_format_human(gs__gpu_leasable(gpu), have, sizeof(have));
    snprintf(why, whylen,
             "this request can never fit on GPU %u (%s mode, %s leasable; the request takes %s of "
             "it)",
             gpu->index, gs_gpu_mode_name(gpu->mode), have, want);
}

/* Why a pinned request can never fit: a GPU it names is missing, or too small for it. */
static void describe_pinned(const gs__gpu_t *empty, unsigned n, const gs_lease_request_t *req,
                            char *why, size_t whylen)
{
    unsigned slots = req->kind == GS_LEASE_GPUS ? req->gpus / req->n_pinned : 0;
    for (unsigned k = 0; k < req->n_pinned; k++) {
        int g = find_index(empty, n, req->pinned[k]);
        if (g < 0) {
            snprintf(why, whylen, "this node has no GPU %u (\"gpus_at\")", req->pinned[k]);
            return;
        }
        if (req->n_pinned > 1 && (empty[g].ops->flags & GS__MODE_ONE_GPU)) {
            snprintf(why, whylen, "GPU %u is mode %s: a lease holding it holds no other GPU",
                     req->pinned[k], gs_gpu_mode_name(empty[g].mode));
            return;
        }
        gs__part_t part;
        int result = admit_idle(&empty[g], req, slots, &part);
        if (result != 0) {
            describe_pinned_gpu(&empty[g], req, result, slots, why, whylen);
            return;
        }
    }
    snprintf(why, whylen, "this request can never fit on the GPUs of \"gpus_at\"");
}

/* Why no GPU is of the models req names: "no GPU of this node is a V100 (it has A100-40GB,
 * T4)". */
static void describe_types(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                           char *why, size_t whylen)
{
    line_t l = line_of(why, whylen);
    put(&l, "no GPU of this node is ");
    types_text(req, &l);
    for (unsigned i = 0; i < n; i++) {
        int seen = 0;
        for (unsigned j = 0; j < i && !seen; j++)
            seen = strcmp(gpus[j].name, gpus[i].name) == 0;
        if (!seen)
            put(&l, "%s%s", i == 0 ? " (it has " : ", ", gpus[i].name);
    }
    if (n > 0)
        put(&l, ")");
}

int gs__reason_never(const gs__gpu_t *gpus, unsigned n, const gs__gpu_t *empty, unsigned m,
                     const gs_lease_request_t *req, char *why, size_t whylen)
{
    int off = 0;
    if (n == 0)
        snprintf(why, whylen, "this node has no GPU");
    else if (m == 0)
        describe_types(gpus, n, req, why, whylen);
    else if ((off = unavailable(empty, m, req, why, whylen)) != 0)
        return off == 2 ? GS_EPERM : GS_EAGAIN;
    else if (req->n_pinned > 0)
        describe_pinned(empty, m, req, why, whylen);
    else
        describe_largest(empty, m, req, why, whylen);
    return GS_ENOFIT;
}
