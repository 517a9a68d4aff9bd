/* SPDX-License-Identifier: Apache-2.0 */
/* The MIG planner: the profile a request gets, and where one more GPU instance goes. */
#include "gpushare/mig.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static uint32_t slot_mask(const gs_mig_profile_t *p, uint32_t start)
{
    uint32_t bits = p->size >= 32 ? UINT32_MAX : (UINT32_C(1) << p->size) - 1;
    return start >= 32 ? 0 : bits << start;
}

/* What the instances of layout not in skip (bits of layout indexes) take. */
typedef struct usage {
    uint32_t slots;   /* memory slots taken */
    uint32_t compute; /* compute slices taken */
    unsigned count[GS_MIG_PROFILES_MAX];
} usage_t;

static void usage_of(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, uint32_t skip,
                     usage_t *u)
{
    memset(u, 0, sizeof(*u));
    for (unsigned i = 0; i < layout->n; i++) {
        const gs_mig_instance_t *in = &layout->inst[i];
        if ((skip >> i) & 1)
            continue;
        const gs_mig_profile_t *p = &cat->profiles[in->profile];
        u->slots |= slot_mask(p, in->start);
        u->compute += p->compute;
        u->count[in->profile]++;
    }
}

static int start_valid(const gs_mig_catalog_t *cat, const gs_mig_profile_t *p, uint32_t start)
{
    return start < 32 && ((p->starts >> start) & 1) && start + p->size <= cat->memory_slots;
}

static int fits_usage(const gs_mig_catalog_t *cat, const usage_t *u, int p, uint32_t start)
{
    const gs_mig_profile_t *prof = &cat->profiles[p];
    return start_valid(cat, prof, start) && (u->slots & slot_mask(prof, start)) == 0 &&
           u->compute + prof->compute <= cat->compute_slices && u->count[p] < prof->max_instances;
}

static void usage_add(const gs_mig_catalog_t *cat, usage_t *u, int p, uint32_t start)
{
    u->slots |= slot_mask(&cat->profiles[p], start);
    u->compute += cat->profiles[p].compute;
    u->count[p]++;
}

static int valid_layout(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout)
{
    if (layout->n > GS_MIG_INSTANCES_MAX || cat->n_profiles > GS_MIG_PROFILES_MAX)
        return 0;
    for (unsigned i = 0; i < layout->n; i++) {
        if (layout->inst[i].profile < 0 || (unsigned)layout->inst[i].profile >= cat->n_profiles)
            return 0;
    }
    return 1;
}

int gs_mig_fits_at(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                   uint32_t start)
{
    if (p < 0 || (unsigned)p >= cat->n_profiles || !valid_layout(cat, layout))
        return 0;
    usage_t u;
    usage_of(cat, layout, 0, &u);
    return fits_usage(cat, &u, p, start);
}

/* Greedy count of further instances of p on top of u, each at its lowest free start. */
static unsigned room_of(const gs_mig_catalog_t *cat, usage_t u, int p)
{
    unsigned n = 0;
    for (uint32_t s = 0; s < cat->memory_slots && s < 32; s++) {
        while (fits_usage(cat, &u, p, s)) {
            usage_add(cat, &u, p, s);
            n++;
        }
    }
    return n;
}

unsigned gs_mig_room(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p)
{
    if (p < 0 || (unsigned)p >= cat->n_profiles || !valid_layout(cat, layout))
        return 0;
    usage_t u;
    usage_of(cat, layout, 0, &u);
    return room_of(cat, u, p);
}

/* Nonzero when profile a ranks as larger than b (memory slots, then compute, then memory). */
static int larger(const gs_mig_profile_t *a, const gs_mig_profile_t *b)
{
    if (a->size != b->size)
        return a->size > b->size;
    if (a->compute != b->compute)
        return a->compute > b->compute;
    return a->memory_bytes > b->memory_bytes;
}

/* What a layout still offers: for each non-media profile from the largest down, how many more
 * instances of it alone would fit. Compared lexicographically: keeping one large profile
 * possible beats any number of small ones. */
typedef struct score {
    unsigned n;
    unsigned room[GS_MIG_PROFILES_MAX];
} score_t;

static void score_of(const gs_mig_catalog_t *cat, const usage_t *u, score_t *out)
{
    int order[GS_MIG_PROFILES_MAX];
    unsigned n = 0;
    for (unsigned i = 0; i < cat->n_profiles; i++) {
        if (cat->profiles[i].media)
            continue;
        unsigned k = n++;
        while (k > 0 && larger(&cat->profiles[i], &cat->profiles[order[k - 1]])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = (int)i;
    }
    out->n = n;
    for (unsigned k = 0; k < n; k++)
        out->room[k] = room_of(cat, *u, order[k]);
}

/* > 0 when a offers more than b, < 0 when less, 0 when the same. */
static int score_cmp(const score_t *a, const score_t *b)
{
    for (unsigned k = 0; k < a->n && k < b->n; k++) {
        if (a->room[k] != b->room[k])
            return a->room[k] > b->room[k] ? 1 : -1;
    }
    return 0;
}

/* A candidate placement: what it costs (instances destroyed, their slots) and leaves. */
typedef struct candidate {
    uint32_t start;
    uint32_t evict;
    unsigned n_evicted;
    unsigned evicted_slots;
    score_t score;
} candidate_t;

/* Nonzero when a is the better candidate: fewer destroyed, fewer slots destroyed, more left,
 * then the lower start. */
static int better(const candidate_t *a, const candidate_t *b)
{
    if (a->n_evicted != b->n_evicted)
        return a->n_evicted < b->n_evicted;
    if (a->evicted_slots != b->evicted_slots)
        return a->evicted_slots < b->evicted_slots;
    int c = score_cmp(&a->score, &b->score);
    if (c != 0)
        return c > 0;
    return a->start < b->start;
}

static int popcount(uint32_t v)
{
    return __builtin_popcount(v);
}

/* Adds to *evict idle instances outside it, smallest compute first, until p's compute fits.
 * Returns 0 or GS_ENOFIT. */
static int evict_for_compute(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                             uint32_t *evict)
{
    for (;;) {
        usage_t u;
        usage_of(cat, layout, *evict, &u);
        if (u.compute + cat->profiles[p].compute <= cat->compute_slices)
            return 0;
        int pick = -1;
        for (unsigned i = 0; i < layout->n; i++) {
            const gs_mig_instance_t *in = &layout->inst[i];
            if (in->busy || ((*evict >> i) & 1))
                continue;
            if (pick < 0 || cat->profiles[in->profile].compute <
                                cat->profiles[layout->inst[pick].profile].compute)
                pick = (int)i;
        }
        if (pick < 0)
            return GS_ENOFIT;
        *evict |= UINT32_C(1) << pick;
    }
}

/* The candidate at start, destroying only idle instances when allow_evict. Returns 0 or
 * GS_ENOFIT. */
static int candidate_at(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                        uint32_t start, int allow_evict, candidate_t *out)
{
    const gs_mig_profile_t *prof = &cat->profiles[p];
    if (!start_valid(cat, prof, start))
        return GS_ENOFIT;
    memset(out, 0, sizeof(*out));
    out->start = start;
    for (unsigned i = 0; i < layout->n; i++) {
        const gs_mig_instance_t *in = &layout->inst[i];
        if ((slot_mask(&cat->profiles[in->profile], in->start) & slot_mask(prof, start)) == 0)
            continue;
        if (in->busy || !allow_evict)
            return GS_ENOFIT;
        out->evict |= UINT32_C(1) << i;
    }
    if (allow_evict && evict_for_compute(cat, layout, p, &out->evict) != 0)
        return GS_ENOFIT;
    usage_t u;
    usage_of(cat, layout, out->evict, &u);
    if (!fits_usage(cat, &u, p, start))
        return GS_ENOFIT;
    usage_add(cat, &u, p, start);
    score_of(cat, &u, &out->score);
    out->n_evicted = (unsigned)popcount(out->evict);
    for (unsigned i = 0; i < layout->n; i++) {
        if ((out->evict >> i) & 1)
            out->evicted_slots += cat->profiles[layout->inst[i].profile].size;
    }
    return 0;
}

int gs_mig_plan(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                gs_mig_plan_t *out)
{
    if (p < 0 || (unsigned)p >= cat->n_profiles || !valid_layout(cat, layout))
        return GS_EINVAL;
    out->reuse = -1;
    out->start = 0;
    out->evict = 0;
    for (unsigned i = 0; i < layout->n; i++) {
        if (layout->inst[i].profile == p && !layout->inst[i].busy &&
            (out->reuse < 0 || layout->inst[i].start < layout->inst[out->reuse].start))
            out->reuse = (int)i;
    }
    if (out->reuse >= 0)
        return 0;
    /* Free placements first; destroying idle instances only when there is none. */
    for (int allow_evict = 0; allow_evict <= 1; allow_evict++) {
        candidate_t best = {0}, c;
        int found = 0;
        for (uint32_t s = 0; s < cat->memory_slots && s < 32; s++) {
            if (candidate_at(cat, layout, p, s, allow_evict, &c) != 0)
                continue;
            if (!found || better(&c, &best))
                best = c;
            found = 1;
        }
        if (found) {
            out->start = best.start;
            out->evict = best.evict;
            return 0;
        }
    }
    return GS_ENOFIT;
}

int gs_mig_plan_at(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, int p,
                   uint32_t start, gs_mig_plan_t *out)
{
    if (p < 0 || (unsigned)p >= cat->n_profiles || !valid_layout(cat, layout) ||
        !start_valid(cat, &cat->profiles[p], start))
        return GS_EINVAL;
    *out = (gs_mig_plan_t){.reuse = -1, .start = start};
    for (unsigned i = 0; i < layout->n; i++) {
        if (layout->inst[i].profile == p && !layout->inst[i].busy &&
            layout->inst[i].start == start) {
            out->reuse = (int)i;
            return 0;
        }
    }
    candidate_t c;
    for (int allow_evict = 0; allow_evict <= 1; allow_evict++) {
        if (candidate_at(cat, layout, p, start, allow_evict, &c) == 0) {
            out->evict = c.evict;
            return 0;
        }
    }
    return GS_ENOFIT;
}

int gs_mig_apply(gs_mig_layout_t *layout, int p, const gs_mig_plan_t *plan)
{
    if (plan->reuse >= 0) {
        if ((unsigned)plan->reuse >= layout->n)
            return GS_EINVAL;
        layout->inst[plan->reuse].busy = 1;
        return plan->reuse;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < layout->n; i++) {
        if (!((plan->evict >> i) & 1))
            layout->inst[n++] = layout->inst[i];
    }
    layout->n = n;
    if (n == GS_MIG_INSTANCES_MAX)
        return GS_ENOSPC;
    layout->inst[n] = (gs_mig_instance_t){.profile = p, .start = plan->start, .busy = 1};
    layout->n++;
    return (int)n;
}

int gs_mig_profile_find(const gs_mig_catalog_t *cat, const char *name)
{
    if (strncasecmp(name, "MIG ", 4) == 0)
        name += 4;
    for (unsigned i = 0; i < cat->n_profiles; i++) {
        if (strcasecmp(cat->profiles[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

int gs_mig_profile_for(const gs_mig_catalog_t *cat, uint64_t memory, uint32_t compute_pct)
{
    /* compute_pct of the slices, rounded up: 30 % of 7 slices needs 3. */
    uint64_t need = ((uint64_t)compute_pct * cat->compute_slices + 99) / 100;
    int best = -1;
    for (unsigned i = 0; i < cat->n_profiles; i++) {
        const gs_mig_profile_t *p = &cat->profiles[i];
        if (p->media || p->memory_bytes < memory || p->compute < need)
            continue;
        if (best < 0 || p->memory_bytes < cat->profiles[best].memory_bytes ||
            (p->memory_bytes == cat->profiles[best].memory_bytes &&
             p->compute < cat->profiles[best].compute))
            best = (int)i;
    }
    return best;
}

uint32_t gs_mig_compute_percent(const gs_mig_catalog_t *cat, int p)
{
    if (p < 0 || (unsigned)p >= cat->n_profiles || cat->compute_slices == 0)
        return 0;
    return (cat->profiles[p].compute * 100 + cat->compute_slices / 2) / cat->compute_slices;
}

/* The instance of layout that starts at slot s, or -1. */
static int starting_at(const gs_mig_layout_t *layout, uint32_t s)
{
    for (unsigned i = 0; i < layout->n; i++) {
        if (layout->inst[i].start == s)
            return (int)i;
    }
    return -1;
}

void gs_mig_draw(const gs_mig_catalog_t *cat, const gs_mig_layout_t *layout, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (uint32_t s = 0; s < cat->memory_slots && off < len;) {
        int at = starting_at(layout, s);
        uint32_t end = s;
        const char *what = "free", *idle = "";
        if (at < 0) {
            while (end + 1 < cat->memory_slots && starting_at(layout, end + 1) < 0)
                end++; /* free slots run together */
        } else {
            const gs_mig_profile_t *p = &cat->profiles[layout->inst[at].profile];
            end = s + (p->size > 0 ? p->size : 1) - 1;
            what = p->name;
            idle = layout->inst[at].busy ? "" : " idle";
        }
        int n = end > s ? snprintf(buf + off, len - off, "[ %u-%u: %s%s ]", s, end, what, idle)
                        : snprintf(buf + off, len - off, "[ %u: %s%s ]", s, what, idle);
        off += n > 0 ? (size_t)n : 0;
        s = end + 1;
    }
}
