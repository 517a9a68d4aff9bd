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
 * Everything read from the region is clamped first. */
#include "sched_internal.h"

#include "gpushare/error.h"

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
    uint32_t l = SLOAD(&p->lease);
    return l < GS_SCHED_MAX_LEASES ? l : 0;
}

/* Fills d with the leases that have work (with all, every lease with a member). */
static void scan_members(const sched_layout_t *map, demand_t *d, int all)
{
    memset(d, 0, sizeof(*d));
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &map->procs[i];
        if (SLOAD(&p->pid) != 0 && (all || SLOAD(&p->state) != PROC_IDLE))
            d->waiting[lease_of(p)]++;
    }
    for (int l = 0; l < GS_SCHED_MAX_LEASES; l++) {
        if (d->waiting[l] == 0)
            continue;
        uint32_t g = clamp_permille(map->leases[l].guarantee);
        d->guaranteed += g;
        d->best_effort += g == 0;
    }
}

static void scan_demand(const sched_layout_t *map, demand_t *d)
{
    scan_members(map, d, 0);
}

/* A lease's weight: its guarantee, or for a best-effort lease its part of what the guarantees
 * of the leases with work leave. */
static uint64_t weight_of(const sched_layout_t *map, const demand_t *d, uint32_t l)
{
    uint32_t g = clamp_permille(map->leases[l].guarantee);
    if (g > 0)
        return g;
    uint64_t left = d->guaranteed < 1000 ? 1000 - d->guaranteed : 0;
    uint64_t w = left / (d->best_effort > 0 ? d->best_effort : 1);
    return w < MIN_WEIGHT ? MIN_WEIGHT : w;
}

static uint64_t total_weight(const sched_layout_t *map, const demand_t *d)
{
    uint64_t total = 0;
    for (int l = 0; l < GS_SCHED_MAX_LEASES; l++)
        total += d->waiting[l] > 0 ? weight_of(map, d, (uint32_t)l) : 0;
    return total;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
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

static void charge(sched_lease_t *lease, uint64_t weight, int64_t start, int64_t end)
{
    int64_t used = end - start;
    if (used <= 0)
        return;
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
}

/* ---- picking and granting ---- */

/* One round's virtual time: what a whole slot adds to a lease's (the same for every lease, as
 * slots follow the weights). */
static uint64_t round_vt(const sched_layout_t *map)
{
    demand_t all;
    scan_members(map, &all, 1);
    uint64_t total = total_weight(map, &all);
    return (uint64_t)GS_SCHED_PERIOD_NS * 1000 / (total > 0 ? total : 1000);
}

/* The smallest virtual time of a lease with a waiting member that could run now (floor: the
 * smallest so far), UINT64_MAX when none. */
static uint64_t min_waiting_vt(const sched_layout_t *map, int64_t now, uint64_t floor)
{
    uint64_t least = floor;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &map->procs[i];
        const sched_lease_t *lease = &map->leases[lease_of(p)];
        if (SLOAD(&p->pid) != 0 && SLOAD(&p->state) == PROC_WAITING && cap_allows(lease, now) &&
            lease->vtime < least)
            least = lease->vtime;
    }
    return least;
}

/* Nonzero when member p waits, could run now and its lease is within half a round of the least
 * virtual time (eligible): among the eligible leases, the GPU goes round robin. */
static int eligible(const sched_layout_t *map, const sched_proc_t *p, int64_t now, uint64_t least,
                    uint64_t window)
{
    const sched_lease_t *lease = &map->leases[lease_of(p)];
    return SLOAD(&p->pid) != 0 && SLOAD(&p->state) == PROC_WAITING && cap_allows(lease, now) &&
           lease->vtime <= sat_add(least, window);
}

/* Frees the dead waiting members of lease l; returns how many live ones wait. */
static int live_waiting(gs_sched_t *s, uint32_t l)
{
    int live = 0;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &s->map->procs[i];
        if (SLOAD(&p->pid) == 0 || SLOAD(&p->state) != PROC_WAITING || lease_of(p) != l)
            continue;
        if (gs__sched_alive(s, i))
            live++;
        else
            gs__sched_free_proc(s->map, i);
    }
    return live;
}

/* The lease that should run next, or -1: of the eligible leases, the one that ran least
 * recently. A lease ahead by more than half a round (it overran: a long kernel, a deep queue)
 * waits until the others have caught up; within that the order is round robin, so a lease waits
 * about a round at most, whatever the phase of the others' overruns. Dead members found on the
 * way are freed. */
static int pick(gs_sched_t *s, int64_t now, demand_t *d)
{
    sched_layout_t *map = s->map;
    for (int attempt = 0; attempt < GS_SCHED_MAX_LEASES; attempt++) {
        scan_demand(map, d);
        uint64_t least = min_waiting_vt(map, now, UINT64_MAX), window = round_vt(map) / 2;
        int best = -1;
        for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
            const sched_proc_t *p = &map->procs[i];
            int l = (int)lease_of(p);
            if (eligible(map, p, now, least, window) &&
                (best < 0 || map->leases[l].last_run_ns < map->leases[best].last_run_ns))
                best = l;
        }
        if (best < 0 || live_waiting(s, (uint32_t)best) > 0)
            return best;
    }
    return -1;
}

/* The slot of lease l: its part of a round among every lease with members (whether they have
 * work now or not), and no more than its cap's tokens. A lease alone renews short slots without
 * a hand-over; sizing them by the leases that have work now would give a small lease a long
 * slot while others pause, and a long wait when they come back (its virtual time runs at its
 * small weight). */
static int64_t slot_length(const sched_layout_t *map, uint32_t l, int64_t now)
{
    demand_t all;
    scan_members(map, &all, 1);
    uint64_t total = total_weight(map, &all);
    uint64_t w = weight_of(map, &all, l);
    int64_t slot = (int64_t)((uint64_t)GS_SCHED_PERIOD_NS * w / (total > w ? total : w));
    int64_t tokens = cap_tokens(&map->leases[l], now);
    if (slot > tokens)
        slot = tokens;
    if (slot < GS_SCHED_MIN_SLOT_NS)
        slot = GS_SCHED_MIN_SLOT_NS;
    return slot > GS_SCHED_PERIOD_NS ? GS_SCHED_PERIOD_NS : slot;
}

/* Moves lease l's live waiting members into the running slot. */
static void start_members(gs_sched_t *s, uint32_t l)
{
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &s->map->procs[i];
        if (SLOAD(&p->pid) != 0 && SLOAD(&p->state) == PROC_WAITING && lease_of(p) == l &&
            gs__sched_alive(s, i))
            gs__sched_set_state(s->map, p, PROC_RUNNING);
    }
}

static void grant(gs_sched_t *s, uint32_t l, const demand_t *d, int64_t now)
{
    sched_layout_t *map = s->map;
    int64_t slot = slot_length(map, l, now);
    start_members(s, l);
    SSTORE(&map->slot_start, now);
    SSTORE(&map->slot_end, now + slot);
    SSTORE(&map->slot_weight, weight_of(map, d, l));
    SSTORE(&map->vclock, map->leases[l].vtime);
    SSTORE(&map->slot_drained, 0);
    SSTORE(&map->slot_started, 0);
    SSTORE(&map->preempt, 0);
    __atomic_fetch_add(&map->epoch, 1, __ATOMIC_ACQ_REL);
    SSTORE(&map->holder, l + 1);
}

/* Gives a free GPU to the next lease in line, and wakes everyone. */
static void schedule(gs_sched_t *s, int64_t now)
{
    demand_t d;
    if (SLOAD(&s->map->holder) == 0) {
        int next = pick(s, now, &d);
        if (next >= 0)
            grant(s, (uint32_t)next, &d, now);
    }
    gs__sched_wake(s->map);
}

/* Live members of lease l in its running slot, but skip. */
static int running(const gs_sched_t *s, uint32_t l, int skip)
{
    int n = 0;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &s->map->procs[i];
        if (i != skip && SLOAD(&p->pid) != 0 && SLOAD(&p->state) == PROC_RUNNING &&
            lease_of(p) == l && gs__sched_alive(s, i))
            n++;
    }
    return n;
}

/* Ends the holder lease's slot at end: charges the lease, and members still in it (dead, or
 * passed over as stuck) stop running (lock held). */
static void end_slot(sched_layout_t *map, int64_t end, int64_t now)
{
    uint32_t h = SLOAD(&map->holder);
    SSTORE(&map->holder, 0);
    if (h == 0 || h > GS_SCHED_MAX_LEASES)
        return;
    int64_t start = SLOAD(&map->slot_start);
    if (start > now || start < now - MAX_CHARGE_NS)
        start = now; /* garbage: charge nothing rather than anything */
    if (end > now)
        end = now;
    sched_lease_t *lease = &map->leases[h - 1];
    charge(lease, SLOAD(&map->slot_weight), start, end);
    lease->last_run_ns = end;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &map->procs[i];
        if (SLOAD(&p->state) == PROC_RUNNING && lease_of(p) == h - 1)
            gs__sched_set_state(map, p, PROC_IDLE);
    }
}

static int joined(const gs_sched_t *s)
{
    return s->self >= 0 && SLOAD(&s->map->procs[s->self].pid) == (int32_t)s->pid;
}

/* The caller leaves the slot at end (its work drained then) in state: the slot ends with its
 * last running member (lock held). */
static void leave_slot(gs_sched_t *s, int64_t end, int64_t now, uint32_t state)
{
    sched_layout_t *map = s->map;
    sched_proc_t *me = &map->procs[s->self];
    uint32_t l = lease_of(me);
    int was_running = SLOAD(&me->state) == PROC_RUNNING;
    gs__sched_set_state(map, me, state);
    if (!was_running || SLOAD(&map->holder) != l + 1)
        return;
    int64_t drained = SLOAD(&map->slot_drained);
    if (end > drained && end <= now)
        SSTORE(&map->slot_drained, drained = end);
    /* The latest drain (another member's may be later than the caller's clock reading). */
    if (running(s, l, s->self) == 0)
        end_slot(map, drained > 0 ? drained : now, drained > now ? drained : now);
}

void gs__sched_leave_slot(gs_sched_t *s, int64_t now)
{
    if (!joined(s))
        return;
    leave_slot(s, now, now, PROC_IDLE);
    schedule(s, now);
}

/* ---- what a member sees ---- */

static void fill_grant(const gs_sched_t *s, int64_t now, gs_sched_grant_t *grant)
{
    const sched_layout_t *map = s->map;
    const sched_proc_t *me = &map->procs[s->self];
    memset(grant, 0, sizeof(*grant));
    grant->epoch = SLOAD(&map->epoch);
    grant->held = SLOAD(&map->holder) == lease_of(me) + 1 && SLOAD(&me->state) == PROC_RUNNING;
    grant->start_ns = SLOAD(&map->slot_start);
    grant->end_ns = SLOAD(&map->slot_end);
    if (grant->held) {
        /* Ours, so written by us: still, never longer than a round from now. */
        if (grant->end_ns > now + GS_SCHED_PERIOD_NS || grant->end_ns < grant->start_ns)
            grant->end_ns = now + GS_SCHED_PERIOD_NS;
        return;
    }
    grant->wait_ns = POLL_NS;
    const sched_lease_t *mine = &map->leases[lease_of(me)];
    if (SLOAD(&map->holder) == 0 && !cap_allows(mine, now)) {
        int64_t until = cap_ready(mine, now) - now;
        grant->wait_ns = until < POLL_NS ? until : POLL_NS;
    }
}

/* The GPU's virtual time at v plus what a slot of weight that ran for ran adds. */
static uint64_t advance(uint64_t v, int64_t ran, uint64_t weight)
{
    ran = ran < 0 ? 0 : ran > MAX_CHARGE_NS ? MAX_CHARGE_NS : ran; /* garbage cannot stall us */
    return sat_add(v, (uint64_t)ran * 1000 / (weight == 0 || weight > 1000 ? 1000 : weight));
}

/* Nonzero when the holder lease h (+ 1) has no live member running, or kept the GPU (across
 * slots) for longer than a slot and the grace while we waited and our lease is not ahead of it.
 * A slot of our own lease is stuck only when its members are gone or past the grace. */
static int holder_stuck(gs_sched_t *s, uint32_t h, int64_t now)
{
    sched_layout_t *map = s->map;
    uint32_t mine = lease_of(&map->procs[s->self]);
    if (running(s, h - 1, s->self) == 0)
        return 1;
    if (h == mine + 1)
        return now > SLOAD(&map->slot_end) + GS_SCHED_OVERDUE_NS;
    if (s->watched != h) {
        s->watched = h;
        s->watch_since = now;
        return 0;
    }
    /* The holder's lease is ahead by what it ran in this slot too (its vtime is charged only at
     * the slot's end): the GPU's virtual time now, so a holder stuck for good falls behind every
     * waiter eventually, while a waiter still paying back an overrun waits its turn. */
    uint64_t my_vt = map->leases[mine].vtime;
    uint64_t holder_vt = map->leases[h - 1].vtime;
    uint64_t vclock =
        advance(SLOAD(&map->vclock), now - SLOAD(&map->slot_start), SLOAD(&map->slot_weight));
    return now - s->watch_since > GS_SCHED_PERIOD_NS + GS_SCHED_OVERDUE_NS &&
           my_vt <= (vclock > holder_vt ? vclock : holder_vt);
}

/* The virtual time of the GPU now: the holder's, counting its slot so far. */
uint64_t gs__sched_vclock(const sched_layout_t *map, int64_t now)
{
    uint64_t vclock = SLOAD(&map->vclock);
    int64_t ran = now - SLOAD(&map->slot_start);
    if (SLOAD(&map->holder) == 0 || ran <= 0 || ran > MAX_CHARGE_NS)
        return vclock;
    return advance(vclock, ran, SLOAD(&map->slot_weight));
}

/* A member back from idle: if its lease ran within the last round (its processes pause between
 * batches, which a busy host stretches), the lease keeps what it is owed, up to a round, so that
 * the others' overruns are still paid back to it; after a longer pause it starts at the GPU's
 * virtual time (its idle time is not owed to it). If its lease had used less than its share
 * meanwhile (it was behind) and it paused at least PAUSE_NS, the holder is asked to end its slot
 * early: a lightly loaded lease waits little. */
static void come_back(sched_layout_t *map, const sched_proc_t *me, int64_t now)
{
    uint32_t l = lease_of(me);
    sched_lease_t *lease = &map->leases[l];
    uint64_t vclock = gs__sched_vclock(map, now);
    int64_t idle = now - lease->last_run_ns;
    uint64_t credit = idle >= 0 && idle < GS_SCHED_PERIOD_NS ? round_vt(map) : 0;
    int behind = lease->vtime < vclock && (idle < 0 || idle >= PAUSE_NS);
    uint64_t floor = vclock > credit ? vclock - credit : 0;
    if (lease->vtime < floor)
        lease->vtime = floor;
    uint32_t h = SLOAD(&map->holder);
    if (h == 0 || h > GS_SCHED_MAX_LEASES || h == l + 1)
        return;
    if (behind)
        SSTORE(&map->preempt, SLOAD(&map->epoch));
    /* A lease that joined makes the holder's part of a round shorter (never ending before now
     * plus the shortest slot). */
    int64_t end = SLOAD(&map->slot_start) + slot_length(map, h - 1, now);
    if (end < now + GS_SCHED_MIN_SLOT_NS)
        end = now + GS_SCHED_MIN_SLOT_NS;
    if (end < SLOAD(&map->slot_end))
        SSTORE(&map->slot_end, end);
}

/* Nonzero when the caller may join its lease's running slot now: it is not about to end. */
static int may_join(const sched_layout_t *map, uint32_t l, int64_t now)
{
    return SLOAD(&map->holder) == l + 1 && now < SLOAD(&map->slot_end) - GS_SCHED_MIN_SLOT_NS &&
           SLOAD(&map->preempt) != SLOAD(&map->epoch);
}

int gs_sched_want(gs_sched_t *s, int64_t now, gs_sched_grant_t *grant)
{
    if (s->self < 0)
        return GS_EINVAL;
    sched_layout_t *map = s->map;
    gs__sched_lock(s);
    if (!joined(s)) {
        gs__sched_unlock(s);
        return GS_EINVAL;
    }
    sched_proc_t *me = &map->procs[s->self];
    uint32_t l = lease_of(me);
    if (SLOAD(&me->state) == PROC_IDLE) {
        gs__sched_set_state(map, me, PROC_WAITING);
        come_back(map, me, now);
        s->watched = 0;
    }
    uint32_t h = SLOAD(&map->holder);
    if (h > GS_SCHED_MAX_LEASES ||
        (h != 0 && SLOAD(&me->state) == PROC_WAITING && holder_stuck(s, h, now)))
        end_slot(map, now, now);
    if (SLOAD(&me->state) == PROC_WAITING && may_join(map, l, now))
        gs__sched_set_state(map, me, PROC_RUNNING);
    if (SLOAD(&map->holder) == 0)
        schedule(s, now);
    fill_grant(s, now, grant);
    gs__sched_unlock(s);
    return 0;
}

int gs_sched_yield(gs_sched_t *s, uint64_t epoch, int64_t drained_ns, int still_wants,
                   gs_sched_grant_t *grant)
{
    if (s->self < 0)
        return GS_EINVAL;
    sched_layout_t *map = s->map;
    int64_t now = drained_ns;
    gs__sched_lock(s);
    if (!joined(s)) {
        gs__sched_unlock(s);
        return GS_EINVAL;
    }
    uint32_t state = still_wants ? PROC_WAITING : PROC_IDLE;
    if (SLOAD(&map->epoch) == epoch)
        leave_slot(s, drained_ns, now, state);
    else
        gs__sched_set_state(map, &map->procs[s->self], state); /* a slot taken from us */
    s->watched = 0;
    schedule(s, now);
    fill_grant(s, now, grant);
    gs__sched_unlock(s);
    return 0;
}

/* Nonzero when another lease is eligible (see pick): it goes before lease l goes on, having run
 * less recently. */
static int others_first(const sched_layout_t *map, uint32_t l, int64_t now)
{
    uint64_t least = min_waiting_vt(map, now, map->leases[l].vtime);
    uint64_t window = round_vt(map) / 2;
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &map->procs[i];
        if (lease_of(p) != l && eligible(map, p, now, least, window))
            return 1;
    }
    return 0;
}

/* The holder lease goes on: a new slot from now (lock held). */
static void extend(gs_sched_t *s, uint32_t l, int64_t now)
{
    sched_layout_t *map = s->map;
    demand_t d;
    scan_demand(map, &d);
    SSTORE(&map->slot_end, now + slot_length(map, l, now));
    SSTORE(&map->slot_weight, weight_of(map, &d, l));
    SSTORE(&map->vclock, map->leases[l].vtime);
    start_members(s, l); /* members that came back meanwhile run too */
}

int gs_sched_renew(gs_sched_t *s, uint64_t epoch, int64_t now, gs_sched_grant_t *grant)
{
    if (s->self < 0)
        return GS_EINVAL;
    sched_layout_t *map = s->map;
    gs__sched_lock(s);
    int result = 0;
    uint32_t l = joined(s) ? lease_of(&map->procs[s->self]) : 0;
    if (!joined(s) || SLOAD(&map->holder) != l + 1 || SLOAD(&map->epoch) != epoch ||
        SLOAD(&map->procs[s->self].state) != PROC_RUNNING) {
        result = GS_EINVAL;
        goto out;
    }
    result = 1;
    if (now < SLOAD(&map->slot_end))
        goto out; /* another member of the lease renewed it already */
    sched_lease_t *lease = &map->leases[l];
    int64_t start = SLOAD(&map->slot_start);
    charge(lease, SLOAD(&map->slot_weight), start > now ? now : start, now);
    SSTORE(&map->slot_start, now); /* charged up to now: the slot's end charges only the rest */
    SSTORE(&map->slot_started, 1);
    if (others_first(map, l, now) || !cap_allows(lease, now))
        result = 0; /* someone else's turn, or a capped lease waits for its bucket to fill */
    else
        extend(s, l, now);
out:
    fill_grant(s, now, grant);
    gs__sched_unlock(s);
    return result;
}

void gs_sched_started(gs_sched_t *s, uint64_t epoch, int64_t from_ns)
{
    if (s->self < 0)
        return;
    sched_layout_t *map = s->map;
    gs__sched_lock(s);
    int64_t start = SLOAD(&map->slot_start);
    /* The slot's first launch (of any of its members) starts what its lease is charged. */
    if (joined(s) && SLOAD(&map->holder) == lease_of(&map->procs[s->self]) + 1 &&
        SLOAD(&map->epoch) == epoch && !SLOAD(&map->slot_started) && from_ns > start &&
        from_ns < SLOAD(&map->slot_end)) {
        SSTORE(&map->slot_start, from_ns);
        SSTORE(&map->slot_started, 1);
    }
    gs__sched_unlock(s);
}

int64_t gs_sched_slot_end(const gs_sched_t *s, uint64_t epoch)
{
    const sched_layout_t *map = s->map;
    int64_t end = SLOAD(&map->slot_end);
    if (s->self < 0)
        return 0;
    const sched_proc_t *me = &map->procs[s->self];
    if (SLOAD(&map->holder) != lease_of(me) + 1 || SLOAD(&map->epoch) != epoch ||
        SLOAD(&me->state) != PROC_RUNNING)
        return 0;
    return end;
}
