/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler's policy: who gets the GPU next, for how long, and what a slot costs.
 *
 * Stride scheduling over leases: each lease has a virtual time that grows by the device time it
 * used divided by its weight; the GPU goes to the waiting lease with the smallest, and all its
 * members with work run in its slot together (the GPU time-slices a lease's own processes, and
 * the lease pays one hand-over a round however many processes it has). A slot lasts
 * GS_SCHED_PERIOD_NS times the lease's part of the weights of the leases with members, so in a
 * round every lease with work runs once, and a lease that overran its slot (a long kernel, a
 * deep queue) waits until the others have caught up. The slot ends when its last running member
 * has drained. Caps are token buckets refilled at the cap's rate, GS_SCHED_PERIOD_NS deep.
 * Indices are clamped wherever they are used. */
#include "sched_internal.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <string.h>

#define MIN_WEIGHT    10                /* per mille: a best-effort lease always progresses */
#define PAUSE_NS      INT64_C(10000000) /* an idle period this long is a pause, not a gap */
#define MAX_CHARGE_NS (GS_SCHED_PERIOD_NS * 100)
#define POLL_NS       INT64_C(50000000) /* a waiter looks at the holder at least this often */

/* Which leases have work, and what their weights add up to. */
typedef struct demand {
    uint32_t waiting[GS_SCHED_MAX_LEASES]; /* waiting or running members per lease */
    uint64_t guaranteed;                   /* per mille of the leases with work */
    uint32_t best_effort;                  /* leases with work and no guarantee */
} demand_t;

static uint32_t clamp_permille(uint32_t v)
{
    return v > 1000 ? 1000 : v;
}

static uint32_t lease_of(const sched_proc_t *p)
{
    uint32_t l = p->lease;
    return l < GS_SCHED_MAX_LEASES ? l : 0;
}

/* Fills d with the leases that have work (with all, every lease with a member). */
static void scan_members(const gs_sched_gpu_t *g, demand_t *d, int all)
{
    memset(d, 0, sizeof(*d));
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        if (p->id != 0 && (all || p->state != PROC_IDLE))
            d->waiting[lease_of(p)]++;
    }
    for (int l = 0; l < GS_SCHED_MAX_LEASES; l++) {
        if (d->waiting[l] == 0)
            continue;
        uint32_t guarantee = clamp_permille(g->leases[l].guarantee);
        d->guaranteed += guarantee;
        d->best_effort += guarantee == 0;
    }
}

static void scan_demand(const gs_sched_gpu_t *g, demand_t *d)
{
    scan_members(g, d, 0);
}

/* A lease's weight: its guarantee, or for a best-effort lease its part of what the guarantees
 * of the leases with work leave. */
static uint64_t weight_of(const gs_sched_gpu_t *g, const demand_t *d, uint32_t l)
{
    uint32_t guarantee = clamp_permille(g->leases[l].guarantee);
    if (guarantee > 0)
        return guarantee;
    uint64_t left = d->guaranteed < 1000 ? 1000 - d->guaranteed : 0;
    uint64_t w = left / (d->best_effort > 0 ? d->best_effort : 1);
    return w < MIN_WEIGHT ? MIN_WEIGHT : w;
}

static uint64_t total_weight(const gs_sched_gpu_t *g, const demand_t *d)
{
    uint64_t total = 0;
    for (int l = 0; l < GS_SCHED_MAX_LEASES; l++)
        total += d->waiting[l] > 0 ? weight_of(g, d, (uint32_t)l) : 0;
    return total;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static int64_t sat_add_ns(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* ---- caps: a token bucket of GS_SCHED_PERIOD_NS at the cap's rate ----
 * cap_tat is when the bucket is full again. A capped lease waits until it is half full and then
 * runs what it holds: a grant that comes late (a busy host) finds the bucket fuller, so the
 * lateness is not lost, and a lease alone at its cap runs in bursts of about half a period. */

static uint32_t cap_of(const sched_lease_t *lease)
{
    uint32_t cap = lease->cap;
    return cap >= 1000 ? 0 : cap;
}

/* Device time the lease may use from now on (INT64_MAX without a cap; negative in debt). */
static int64_t cap_tokens(const sched_lease_t *lease, int64_t now)
{
    uint32_t cap = cap_of(lease);
    if (cap == 0)
        return INT64_MAX;
    int64_t bucket = GS_SCHED_PERIOD_NS * cap / 1000;
    int64_t behind = lease->cap_tat - now;
    if (behind <= 0)
        return bucket;
    if (behind > 1000 * GS_SCHED_PERIOD_NS)
        return -bucket; /* garbage */
    return bucket - behind * cap / 1000;
}

static int cap_allows(const sched_lease_t *lease, int64_t now)
{
    uint32_t cap = cap_of(lease);
    return cap == 0 || cap_tokens(lease, now) >= GS_SCHED_PERIOD_NS * cap / 2000;
}

/* When the lease's bucket is half full (now when it already is). */
static int64_t cap_ready(const sched_lease_t *lease, int64_t now)
{
    int64_t ready = lease->cap_tat - GS_SCHED_PERIOD_NS / 2;
    return ready > now ? ready : now;
}

/* Charges lease for [start, end) at weight; returns what it charged (ns). */
static int64_t charge(sched_lease_t *lease, uint64_t weight, int64_t start, int64_t end)
{
    int64_t used = end - start;
    if (used <= 0)
        return 0;
    if (used > MAX_CHARGE_NS)
        used = MAX_CHARGE_NS;
    weight = weight == 0 || weight > 1000 ? 1000 : weight;
    lease->used_ns = sat_add(lease->used_ns, (uint64_t)used);
    lease->vtime = sat_add(lease->vtime, (uint64_t)used * 1000 / weight);
    uint32_t cap = cap_of(lease);
    if (cap != 0) {
        int64_t tat = lease->cap_tat;
        if (tat < end - used || tat > end + 1000 * GS_SCHED_PERIOD_NS)
            tat = end - used; /* the bucket was full (or the field is garbage) */
        lease->cap_tat = tat + used * 1000 / cap;
    }
    return used;
}

/* ---- picking and granting ---- */

/* One round's virtual time: what a whole slot adds to a lease's (the same for every lease, as
 * slots follow the weights). */
static uint64_t round_vt(const gs_sched_gpu_t *g)
{
    demand_t all;
    scan_members(g, &all, 1);
    uint64_t total = total_weight(g, &all);
    return (uint64_t)GS_SCHED_PERIOD_NS * 1000 / (total > 0 ? total : 1000);
}

/* The smallest virtual time of a lease with a waiting member that could run now (floor: the
 * smallest so far), UINT64_MAX when none. */
static uint64_t min_waiting_vt(const gs_sched_gpu_t *g, int64_t now, uint64_t floor)
{
    uint64_t least = floor;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        const sched_lease_t *lease = &g->leases[lease_of(p)];
        if (p->id != 0 && p->state == PROC_WAITING && cap_allows(lease, now) &&
            lease->vtime < least)
            least = lease->vtime;
    }
    return least;
}

/* Nonzero when member p waits, could run now and its lease is within half a round of the least
 * virtual time (eligible): among the eligible leases, the GPU goes round robin. */
static int eligible(const gs_sched_gpu_t *g, const sched_proc_t *p, int64_t now, uint64_t least,
                    uint64_t window)
{
    const sched_lease_t *lease = &g->leases[lease_of(p)];
    return p->id != 0 && p->state == PROC_WAITING && cap_allows(lease, now) &&
           lease->vtime <= sat_add(least, window);
}

/* The lease that should run next, or -1: of the eligible leases, the one that ran least
 * recently. A lease ahead by more than half a round (it overran: a long kernel, a deep queue)
 * waits until the others have caught up; within that the order is round robin, so a lease waits
 * about a round at most, whatever the phase of the others' overruns. */
static int pick(const gs_sched_gpu_t *g, int64_t now, demand_t *d)
{
    scan_demand(g, d);
    uint64_t least = min_waiting_vt(g, now, UINT64_MAX), window = round_vt(g) / 2;
    int best = -1;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        int l = (int)lease_of(p);
        if (eligible(g, p, now, least, window) &&
            (best < 0 || g->leases[l].last_run_ns < g->leases[best].last_run_ns))
            best = l;
    }
    return best;
}

/* The slot of lease l: its part of a round among every lease with members (whether they have
 * work now or not), and no more than its cap's tokens. A lease alone renews short slots without
 * a hand-over; sizing them by the leases that have work now would give a small lease a long
 * slot while others pause, and a long wait when they come back (its virtual time runs at its
 * small weight). */
static int64_t slot_length(const gs_sched_gpu_t *g, uint32_t l, int64_t now)
{
    demand_t all;
    scan_members(g, &all, 1);
    uint64_t total = total_weight(g, &all);
    uint64_t w = weight_of(g, &all, l);
    int64_t slot = (int64_t)((uint64_t)GS_SCHED_PERIOD_NS * w / (total > w ? total : w));
    int64_t tokens = cap_tokens(&g->leases[l], now);
    if (slot > tokens)
        slot = tokens;
    if (slot < GS_SCHED_MIN_SLOT_NS)
        slot = GS_SCHED_MIN_SLOT_NS;
    return slot > GS_SCHED_PERIOD_NS ? GS_SCHED_PERIOD_NS : slot;
}

/* Moves lease l's waiting members into the running slot. */
static void start_members(gs_sched_gpu_t *g, uint32_t l)
{
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &g->procs[i];
        if (p->id != 0 && p->state == PROC_WAITING && lease_of(p) == l)
            gs__sched_set_state(g, p, PROC_RUNNING);
    }
}

static void grant(gs_sched_gpu_t *g, uint32_t l, const demand_t *d, int64_t now)
{
    int64_t slot = slot_length(g, l, now);
    start_members(g, l);
    g->slot_start = now;
    g->slot_granted = now;
    g->slot_charged = 0;
    g->slot_end = now + slot;
    g->slot_weight = weight_of(g, d, l);
    g->vclock = g->leases[l].vtime;
    g->slot_drained = 0;
    g->slot_started = 0;
    g->preempt = 0;
    g->epoch++;
    g->holder = l + 1;
}

/* Gives a free GPU to the next lease in line. */
static void schedule(gs_sched_gpu_t *g, int64_t now)
{
    demand_t d;
    if (g->holder != 0)
        return;
    int next = pick(g, now, &d);
    if (next >= 0)
        grant(g, (uint32_t)next, &d, now);
}

/* Members of lease l in its running slot, but skip. */
static int running(const gs_sched_gpu_t *g, uint32_t l, int skip)
{
    int n = 0;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        n += i != skip && p->id != 0 && p->state == PROC_RUNNING && lease_of(p) == l;
    }
    return n;
}

/* Charges lease l for [start, end) of the current slot: at the slot's weight up to its end, and
 * what ran past it at the weight the lease has now. A best-effort lease granted while the others
 * paused has their part as its weight; once they wait again its overrun (a long kernel, or a
 * stall until it is passed over) costs it at the weight it has then, the least. */
static void charge_slot(gs_sched_gpu_t *g, uint32_t l, int64_t start, int64_t end)
{
    int64_t split = g->slot_end < start ? start : g->slot_end > end ? end : g->slot_end;
    int64_t charged = charge(&g->leases[l], g->slot_weight, start, split);
    if (end > split) {
        demand_t d;
        scan_demand(g, &d);
        charged += charge(&g->leases[l], weight_of(g, &d, l), split, end);
    }
    g->slot_charged = sat_add_ns(g->slot_charged, charged);
}

/* A grant is charged at least the shortest slot, and one its lease left early (not asked to)
 * the whole time from the grant on, whatever its members said of their first launch: a lease
 * that answers its grants with nothing (churn) pays for what each hand-over takes from the
 * others, and its first launch's allowance (the wake-up of a process in a slot it then uses) buys
 * it nothing. An honest holder seldom pays more than it used: the shim keeps a slot until it has
 * been idle GS_SCHED_MIN_SLOT_NS, and uses its slots to their end while it has work. */
static void charge_floor(gs_sched_gpu_t *g, uint32_t l, int64_t end)
{
    int early = end < g->slot_end && g->preempt != g->epoch;
    int64_t floor = early ? end - g->slot_granted : 0;
    if (floor < GS_SCHED_MIN_SLOT_NS || floor > GS_SCHED_PERIOD_NS)
        floor = GS_SCHED_MIN_SLOT_NS;
    if (g->slot_charged >= floor)
        return;
    int64_t from = end - (floor - g->slot_charged);
    g->slot_charged = floor;
    charge(&g->leases[l], g->slot_weight, from, end);
}

/* Ends the holder lease's slot at end: charges the lease, and members still in it (passed over
 * as stuck) stop running. */
static void end_slot(gs_sched_gpu_t *g, int64_t end, int64_t now)
{
    uint32_t h = g->holder;
    g->holder = 0;
    if (h == 0 || h > GS_SCHED_MAX_LEASES)
        return;
    int64_t start = g->slot_start;
    if (start > now || start < now - MAX_CHARGE_NS)
        start = now;
    if (end > now)
        end = now;
    sched_lease_t *lease = &g->leases[h - 1];
    charge_slot(g, h - 1, start, end);
    charge_floor(g, h - 1, end);
    lease->last_run_ns = end;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &g->procs[i];
        if (p->state == PROC_RUNNING && lease_of(p) == h - 1)
            gs__sched_set_state(g, p, PROC_IDLE);
    }
}

static int joined(const gs_sched_t *s)
{
    return s->self >= 0 && s->gpu->procs[s->self].id == s->id;
}

/* The caller leaves the slot at end (its work drained then) in state: the slot ends with its
 * last running member. */
static void leave_slot(gs_sched_t *s, int64_t end, int64_t now, uint32_t state)
{
    gs_sched_gpu_t *g = s->gpu;
    sched_proc_t *me = &g->procs[s->self];
    uint32_t l = lease_of(me);
    int was_running = me->state == PROC_RUNNING;
    gs__sched_set_state(g, me, state);
    if (!was_running || g->holder != l + 1)
        return;
    if (end > g->slot_drained && end <= now)
        g->slot_drained = end;
    /* The latest drain (another member's may be later than the caller's clock reading). */
    int64_t drained = g->slot_drained;
    if (running(g, l, s->self) == 0)
        end_slot(g, drained > 0 ? drained : now, drained > now ? drained : now);
}

void gs__sched_leave_slot(gs_sched_t *s, int64_t now)
{
    if (!joined(s))
        return;
    leave_slot(s, now, now, PROC_IDLE);
    schedule(s->gpu, now);
}

/* ---- what a member sees ---- */

static void fill_grant(const gs_sched_t *s, int64_t now, gs_sched_grant_t *grant)
{
    const gs_sched_gpu_t *g = s->gpu;
    const sched_proc_t *me = &g->procs[s->self];
    memset(grant, 0, sizeof(*grant));
    grant->epoch = g->epoch;
    grant->held = g->holder == lease_of(me) + 1 && me->state == PROC_RUNNING;
    grant->start_ns = g->slot_start;
    grant->end_ns = g->slot_end;
    if (grant->held)
        return;
    grant->wait_ns = POLL_NS;
    const sched_lease_t *mine = &g->leases[lease_of(me)];
    if (g->holder == 0 && !cap_allows(mine, now)) {
        int64_t until = cap_ready(mine, now) - now;
        grant->wait_ns = until < POLL_NS ? until : POLL_NS;
    }
}

/* The GPU's virtual time at v plus what a slot of weight that ran for ran adds. */
static uint64_t advance(uint64_t v, int64_t ran, uint64_t weight)
{
    ran = ran < 0 ? 0 : ran > MAX_CHARGE_NS ? MAX_CHARGE_NS : ran;
    return sat_add(v, (uint64_t)ran * 1000 / (weight == 0 || weight > 1000 ? 1000 : weight));
}

/* Nonzero when the holder lease h (+ 1) has no member running, or keeps the GPU past its slot's
 * end by more than the grace: its work does not drain (a stopped or hung process, a kernel far
 * longer than the slot). The slot's end is the scheduler's own, so nothing a member says moves
 * it; a lease that holds slot after slot by the rules (paying back another's overrun) is not
 * stuck. */
static int holder_stuck(const gs_sched_t *s, uint32_t h, int64_t now)
{
    const gs_sched_gpu_t *g = s->gpu;
    return running(g, h - 1, s->self) == 0 || now > g->slot_end + GS_SCHED_OVERDUE_NS;
}

/* Takes the GPU from the holder lease (stuck): charged to now, and for what its members keep
 * the GPU after, when they tell (gs_sched_yield). */
static void take_over(gs_sched_gpu_t *g, int64_t now)
{
    if (g->holder != 0 && g->holder <= GS_SCHED_MAX_LEASES)
        gs_debug("compute: %s passed over, %.1f ms past its slot", g->leases[g->holder - 1].key,
                 (double)(now - g->slot_end) / 1e6);
    g->taken_epoch = g->epoch;
    g->taken_lease = g->holder;
    g->taken_at = now;
    end_slot(g, now, now);
}

uint64_t gs__sched_vclock(const gs_sched_gpu_t *g, int64_t now)
{
    int64_t ran = now - g->slot_start;
    if (g->holder == 0 || ran <= 0 || ran > MAX_CHARGE_NS)
        return g->vclock;
    return advance(g->vclock, ran, g->slot_weight);
}

/* A member back from idle: if its lease ran within the last round (its processes pause between
 * batches, which a busy host stretches), the lease keeps what it is owed, up to a round, so that
 * the others' overruns are still paid back to it; after a longer pause it starts at the GPU's
 * virtual time (its idle time is not owed to it). If its lease had used less than its share
 * meanwhile (it was behind) and it paused at least PAUSE_NS, the holder is asked to end its slot
 * early: a lightly loaded lease waits little. */
static void come_back(gs_sched_gpu_t *g, const sched_proc_t *me, int64_t now)
{
    uint32_t l = lease_of(me);
    sched_lease_t *lease = &g->leases[l];
    uint64_t vclock = gs__sched_vclock(g, now);
    int64_t idle = now - lease->last_run_ns;
    uint64_t credit = idle >= 0 && idle < GS_SCHED_PERIOD_NS ? round_vt(g) : 0;
    int behind = lease->vtime < vclock && (idle < 0 || idle >= PAUSE_NS);
    uint64_t floor = vclock > credit ? vclock - credit : 0;
    if (lease->vtime < floor)
        lease->vtime = floor;
    uint32_t h = g->holder;
    if (h == 0 || h > GS_SCHED_MAX_LEASES || h == l + 1)
        return;
    if (behind)
        g->preempt = g->epoch;
    /* A lease that joined makes the holder's part of a round shorter (never ending before now
     * plus the shortest slot). */
    int64_t end = g->slot_start + slot_length(g, h - 1, now);
    if (end < now + GS_SCHED_MIN_SLOT_NS)
        end = now + GS_SCHED_MIN_SLOT_NS;
    if (end < g->slot_end)
        g->slot_end = end;
}

/* Nonzero when the caller may join its lease's running slot now: it is not about to end. */
static int may_join(const gs_sched_gpu_t *g, uint32_t l, int64_t now)
{
    return g->holder == l + 1 && now < g->slot_end - GS_SCHED_MIN_SLOT_NS && g->preempt != g->epoch;
}

int gs_sched_want(gs_sched_t *s, int64_t now, gs_sched_grant_t *grant)
{
    if (!joined(s))
        return GS_EINVAL;
    gs_sched_gpu_t *g = s->gpu;
    sched_proc_t *me = &g->procs[s->self];
    uint32_t l = lease_of(me);
    if (me->state == PROC_IDLE) {
        gs__sched_set_state(g, me, PROC_WAITING);
        come_back(g, me, now);
    }
    uint32_t h = g->holder;
    if (h > GS_SCHED_MAX_LEASES)
        end_slot(g, now, now);
    else if (h != 0 && me->state == PROC_WAITING && holder_stuck(s, h, now))
        take_over(g, now);
    if (me->state == PROC_WAITING && may_join(g, l, now))
        gs__sched_set_state(g, me, PROC_RUNNING);
    schedule(g, now);
    fill_grant(s, now, grant);
    return 0;
}

/* A member of a lease whose slot was taken from it kept the GPU until drained: its lease is
 * charged for that too (once), and the holder since then is not. */
static void charge_late(gs_sched_t *s, uint64_t epoch, int64_t drained)
{
    gs_sched_gpu_t *g = s->gpu;
    uint32_t l = lease_of(&g->procs[s->self]);
    if (epoch != g->taken_epoch || g->taken_lease != l + 1 || drained <= g->taken_at)
        return;
    demand_t d;
    scan_demand(g, &d);
    charge(&g->leases[l], weight_of(g, &d, l), g->taken_at, drained);
    g->taken_at = drained;
    /* The lease that holds the GPU now could not use it until then (its work queued behind):
     * its slot is charged from the drain. */
    if (g->holder != 0 && g->slot_start < drained)
        g->slot_start = drained;
}

int gs_sched_yield(gs_sched_t *s, uint64_t epoch, int64_t drained_ns, int still_wants,
                   gs_sched_grant_t *grant)
{
    if (!joined(s))
        return GS_EINVAL;
    gs_sched_gpu_t *g = s->gpu;
    int64_t now = drained_ns;
    uint32_t state = still_wants ? PROC_WAITING : PROC_IDLE;
    if (g->epoch == epoch) {
        leave_slot(s, drained_ns, now, state);
    } else {
        charge_late(s, epoch, drained_ns);
        gs__sched_set_state(g, &g->procs[s->self], state);
    }
    schedule(g, now);
    fill_grant(s, now, grant);
    return 0;
}

/* Nonzero when another lease is eligible (see pick): it goes before lease l goes on, having run
 * less recently. */
static int others_first(const gs_sched_gpu_t *g, uint32_t l, int64_t now)
{
    uint64_t least = min_waiting_vt(g, now, g->leases[l].vtime);
    uint64_t window = round_vt(g) / 2;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        if (lease_of(p) != l && eligible(g, p, now, least, window))
            return 1;
    }
    return 0;
}

/* The holder lease goes on: a new slot from now. */
static void extend(gs_sched_gpu_t *g, uint32_t l, int64_t now)
{
    demand_t d;
    scan_demand(g, &d);
    g->slot_end = now + slot_length(g, l, now);
    g->slot_weight = weight_of(g, &d, l);
    g->vclock = g->leases[l].vtime;
    start_members(g, l); /* members that came back meanwhile run too */
}

int gs_sched_renew(gs_sched_t *s, uint64_t epoch, int64_t now, gs_sched_grant_t *grant)
{
    if (!joined(s))
        return GS_EINVAL;
    gs_sched_gpu_t *g = s->gpu;
    uint32_t l = lease_of(&g->procs[s->self]);
    if (g->holder != l + 1 || g->epoch != epoch || g->procs[s->self].state != PROC_RUNNING) {
        fill_grant(s, now, grant);
        return GS_EINVAL;
    }
    int result = 1;
    if (now >= g->slot_end) { /* else another member of the lease renewed it already */
        sched_lease_t *lease = &g->leases[l];
        charge_slot(g, l, g->slot_start > now ? now : g->slot_start, now);
        g->slot_start = now; /* charged up to now: the slot's end charges only the rest */
        g->slot_started = 1;
        if (others_first(g, l, now) || !cap_allows(lease, now))
            result = 0; /* someone else's turn, or a capped lease waits for its bucket */
        else
            extend(g, l, now);
    }
    fill_grant(s, now, grant);
    return result;
}

void gs_sched_started(gs_sched_t *s, uint64_t epoch, int64_t from_ns)
{
    if (!joined(s))
        return;
    gs_sched_gpu_t *g = s->gpu;
    /* The slot's first launch (of any of its members) starts what its lease is charged. */
    if (g->holder == lease_of(&g->procs[s->self]) + 1 && g->epoch == epoch && !g->slot_started &&
        from_ns > g->slot_start && from_ns < g->slot_end) {
        g->slot_start = from_ns;
        g->slot_started = 1;
    }
}

int64_t gs_sched_slot_end(const gs_sched_t *s, uint64_t epoch)
{
    if (!joined(s))
        return 0;
    const gs_sched_gpu_t *g = s->gpu;
    const sched_proc_t *me = &g->procs[s->self];
    if (g->holder != lease_of(me) + 1 || g->epoch != epoch || me->state != PROC_RUNNING)
        return 0;
    return g->slot_end;
}

int gs_sched_held(const gs_sched_t *s, gs_sched_grant_t *grant)
{
    if (!joined(s))
        return 0;
    fill_grant(s, 0, grant);
    return grant->held;
}

int gs_sched_preempted(const gs_sched_t *s, uint64_t epoch)
{
    return s->gpu->preempt == epoch && epoch != 0;
}

int gs_sched_others_waiting(const gs_sched_t *s)
{
    if (!joined(s))
        return 0;
    const gs_sched_gpu_t *g = s->gpu;
    uint32_t l = lease_of(&g->procs[s->self]);
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        if (p->id != 0 && p->state == PROC_WAITING && lease_of(p) != l)
            return 1;
    }
    return 0;
}
