/* SPDX-License-Identifier: Apache-2.0 */
/* The agent thread of a scheduled GPU: takes the GPU from the scheduler when the process has
 * work, runs its slots in rounds of launches, drains at their ends and hands the GPU on.
 *
 * A round admits as many launches as their estimated device time fits in the rest of the slot
 * (at most ROUND_NS), so that the work left queued when the slot ends — what the next holder
 * waits for — stays short whatever the application queues. When the round's time is up the next
 * round opens without stopping anything; when its launches are spent before (the application
 * queues ahead of the GPU), the gate closes until they have drained (which tells exactly how long
 * they took). The estimate (device time per launch) is learnt from each drain, over the launches
 * since the gate opened and the time since then (rounds that rolled on included: learnt over the
 * last round's time alone, each roll lowered it and slots overran by 10-18 ms); it follows a
 * drop at once and a rise by eighths, since the measure includes the application's own gaps. The
 * holder gives the GPU up early when it has been idle (no launch for IDLE_NS, nothing left
 * running) while others wait, and when a lease coming back from idle asks it to. */
#include "compute.h"
#include "shim.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/log.h"

#ifndef GS_AGENT_ROUND_NS
#define GS_AGENT_ROUND_NS INT64_C(50000000)
#endif
#define ROUND_NS     GS_AGENT_ROUND_NS
#define POLL_NS      INT64_C(1000000)
#define IDLE_NS      INT64_C(2000000)  /* no launch for this long: maybe idle */
#define GRACE_NS     INT64_C(3000000)  /* after the drain, a launch within this is not idle */
#define RELEASE_NS   INT64_C(50000000) /* idle this long: give the GPU up even if nobody waits */
#define MIN_RUN_NS   INT64_C(1000000)  /* a slot runs at least this long before preemption */
#define QUEUED_NS    INT64_C(200000)   /* a drain this long found work the process waits for */
#define FIRST_BUDGET 8u
#define MAX_BUDGET   (1u << 24)

typedef struct slot {
    gs_sched_grant_t grant;
    int waiting;         /* after the slot: our record still waits for the GPU */
    int started;         /* the scheduler was told when the slot's first launch went */
    int64_t gate_start;  /* when the gate last opened (launches are counted from then) */
    int64_t round_start; /* when the round began */
    int64_t round_span;  /* the device time its launches were sized for */
    uint32_t limit;      /* launches the round admits */
    uint32_t seen;       /* the gate's activity at the last poll (gs__gate_activity) */
    int64_t last_launch; /* when the count last moved */
} slot_t;

/* Waits up to timeout_ns for a thread at the gate or a word from gpushared (read into the
 * member's state). A broken channel marks the device lost. */
static void agent_wait(gs__sched_dev_t *dev, int64_t timeout_ns)
{
    int woken = gs_smember_wait(dev->member, dev->gate.wake_fd, timeout_ns);
    if (woken == 1) {
        uint64_t count;
        if (read(dev->gate.wake_fd, &count, sizeof(count)) < 0)
            count = 0; /* (a spurious wake: nothing to take) */
    } else if (woken < 0) {
        dev->lost = 1;
    }
}

/* Launches whose estimated device time fits span. */
static uint32_t budget(const gs__sched_dev_t *dev, int64_t span)
{
    if (dev->cost_ns == 0)
        return FIRST_BUDGET;
    int64_t n = span / (int64_t)dev->cost_ns;
    return n < 1 ? 1u : n > MAX_BUDGET ? MAX_BUDGET : (uint32_t)n;
}

/* Learns the device time per launch from a round: launches, drained took after its start. */
static void learn(gs__sched_dev_t *dev, uint32_t launches, int64_t took)
{
    if (launches == 0 || took <= 0)
        return;
    uint64_t cost = (uint64_t)took / launches;
    if (dev->cost_ns == 0 || cost < dev->cost_ns)
        dev->cost_ns = cost > 0 ? cost : 1;
    else
        dev->cost_ns += (cost - dev->cost_ns) / 8;
}

/* The device time a round's launches are sized for: what is left of the slot, at most
 * ROUND_NS. */
static int64_t span_at(const slot_t *slot, int64_t now)
{
    int64_t span = slot->grant.end_ns - now;
    return span < ROUND_NS ? span : ROUND_NS;
}

static void open_round(gs__sched_dev_t *dev, slot_t *slot, int64_t now)
{
    slot->round_span = span_at(slot, now);
    slot->limit = budget(dev, slot->round_span);
    slot->round_start = now;
    slot->gate_start = now;
    slot->last_launch = now;
    gs__gate_open(&dev->gate, slot->limit);
    slot->seen = gs__gate_activity(&dev->gate);
}

/* A new round without a drain: the gate stays open and admits a new budget on top of the
 * launches so far. */
static void roll_round(gs__sched_dev_t *dev, slot_t *slot, int64_t now)
{
    slot->round_span = span_at(slot, now);
    if (dev->cost_ns != 0 && slot->round_span < (int64_t)dev->cost_ns)
        return; /* no launch fits before the slot's end any more */
    slot->limit = gs__gate_launches(&dev->gate) + budget(dev, slot->round_span);
    slot->round_start = now;
    gs__gate_extend(&dev->gate, slot->limit);
}

/* Closes the gate, lets launches in progress finish, drains and learns. Returns the drain's end. */
static int64_t close_and_drain(gs__sched_dev_t *dev, slot_t *slot)
{
    gs__gate_close(&dev->gate);
    gs__gate_quiesce(&dev->gate);
    uint32_t launches = gs__gate_launches(&dev->gate);
    int64_t drained = gs__drain(dev->device);
    learn(dev, launches < slot->limit ? launches : slot->limit, drained - slot->gate_start);
    return drained;
}

/* Waits until a thread of the process waits at the gate. */
static void wait_for_work(gs__sched_dev_t *dev)
{
    while (!dev->lost && __atomic_load_n(&dev->gate.blocked, __ATOMIC_SEQ_CST) == 0)
        agent_wait(dev, INT64_C(1000000000));
}

/* Waits for the GPU (the member stays waiting meanwhile). Returns with grant->held, or with the
 * device lost. */
static void acquire(gs__sched_dev_t *dev, gs_sched_grant_t *grant)
{
    while (!dev->lost) {
        if (gs_smember_want(dev->member, grant) != 0) {
            dev->lost = 1;
            return;
        }
        if (grant->held) {
            gs_debug("compute: t=%.1f slot %llu of %s for %.2f ms", (double)grant->start_ns / 1e6,
                     (unsigned long long)grant->epoch, dev->uuid,
                     (double)(grant->end_ns - grant->start_ns) / 1e6);
            return;
        }
        agent_wait(dev, grant->wait_ns);
    }
}

/* Leaves the slot at drained (its work drained then); wants: more work waits. The GPU comes back
 * as a new grant, if at all. */
static void hand_on(gs__sched_dev_t *dev, slot_t *slot, int64_t drained, int wants)
{
    gs_debug("compute: slot %llu of %s held %.2f ms (drained %.2f ms after its end), wants %d",
             (unsigned long long)slot->grant.epoch, dev->uuid,
             (double)(drained - slot->grant.start_ns) / 1e6,
             (double)(drained - slot->grant.end_ns) / 1e6, wants);
    if (gs_smember_yield(dev->member, slot->grant.epoch, wants) != 0)
        dev->lost = 1;
    slot->waiting = wants;
    slot->grant.held = 0;
}

/* Whether the process still has work when its slot ends at now (drained then): a thread waits at
 * the gate, it launched a moment ago, or its work was still running, which a thread waits for
 * (a synchronization between batches is not idleness: a lease reported idle there lost its
 * place in line). */
static int still_busy(const gs__sched_dev_t *dev, const slot_t *slot, int64_t now, int64_t drained)
{
    return __atomic_load_n(&dev->gate.blocked, __ATOMIC_SEQ_CST) > 0 ||
           now - slot->last_launch < IDLE_NS || drained - now > QUEUED_NS;
}

/* The deadline of the slot: renewed when nobody waits, else the GPU is handed on. Returns 1 to go
 * on with the slot, 0 when it ended. */
static int at_deadline(gs__sched_dev_t *dev, slot_t *slot, int64_t now)
{
    int renewed = gs_smember_renew(dev->member, slot->grant.epoch, &slot->grant);
    if (renewed == 1) {
        roll_round(dev, slot, now);
        return 1;
    }
    dev->lost |= renewed < 0;
    int64_t drained = close_and_drain(dev, slot);
    hand_on(dev, slot, drained, still_busy(dev, slot, now, drained));
    return 0;
}

/* The process may be idle: drain with the gate open, then give the GPU up if no launch came. */
static int idle_check(gs__sched_dev_t *dev, slot_t *slot)
{
    int64_t done = gs__drain(dev->device); /* the lease's use ends here if no launch comes */
    agent_wait(dev, GRACE_NS);
    if (gs__gate_activity(&dev->gate) != slot->seen ||
        __atomic_load_n(&dev->gate.blocked, __ATOMIC_SEQ_CST) > 0) {
        slot->last_launch = gs__mono_ns();
        return 1;
    }
    gs__gate_close(&dev->gate);
    gs__gate_quiesce(&dev->gate);
    int wants = gs__gate_activity(&dev->gate) != slot->seen;
    int64_t drained = gs__drain(dev->device);
    hand_on(dev, slot, wants ? drained : done, wants);
    return 0;
}

/* The round's launches are spent: drains, and opens another round when the slot has time left.
 * Returns 1 to go on, 0 when the slot ended. */
static int round_spent(gs__sched_dev_t *dev, slot_t *slot)
{
    int64_t drained = close_and_drain(dev, slot);
    if (drained < slot->grant.end_ns - GS_SCHED_MIN_SLOT_NS &&
        !gs_smember_preempted(dev->member, slot->grant.epoch)) {
        open_round(dev, slot, drained);
        return 1;
    }
    hand_on(dev, slot, drained, 1);
    return 0;
}

/* One poll of a held slot. Returns 1 to go on, 0 when the slot ended. */
static int poll_slot(gs__sched_dev_t *dev, slot_t *slot)
{
    int64_t now = gs__mono_ns();
    int64_t first = __atomic_load_n(&dev->gate.first_ns, __ATOMIC_RELAXED);
    if (!slot->started && first != 0) {
        gs_smember_started(dev->member, slot->grant.epoch, first);
        slot->started = 1;
    }
    uint32_t launches = gs__gate_launches(&dev->gate);
    uint32_t activity = gs__gate_activity(&dev->gate);
    if (activity != slot->seen) {
        slot->seen = activity;
        slot->last_launch = now;
    }
    /* A round rolls over when its time is up: its launches' estimated device time has passed, so
     * little of it is queued. One whose launches are spent before (the application queues ahead
     * of the GPU) waits for them to drain, which also tells how long they took. */
    int64_t elapsed = now - slot->round_start;
    if (now < slot->grant.end_ns &&
        (elapsed >= slot->round_span ||
         (launches >= slot->limit && 2 * elapsed >= slot->round_span))) {
        roll_round(dev, slot, now); /* (spent in the round's second half: at the GPU's pace) */
        return 1;
    }
    if (launches >= slot->limit)
        return round_spent(dev, slot);
    if (gs_smember_preempted(dev->member, slot->grant.epoch) &&
        now - slot->grant.start_ns >= MIN_RUN_NS) {
        int64_t drained = close_and_drain(dev, slot);
        hand_on(dev, slot, drained, still_busy(dev, slot, now, drained));
        return 0;
    }
    int64_t end = gs_smember_slot_end(dev->member, slot->grant.epoch);
    if (end > 0)
        slot->grant.end_ns = end; /* shortened (another lease came back) or renewed */
    if (now >= slot->grant.end_ns)
        return at_deadline(dev, slot, now);
    /* Idle: no launch for a while, and no thread held back by the gate. */
    int64_t idle =
        __atomic_load_n(&dev->gate.blocked, __ATOMIC_SEQ_CST) > 0 ? 0 : now - slot->last_launch;
    if ((idle >= IDLE_NS && gs_smember_others_waiting(dev->member)) || idle >= RELEASE_NS)
        return idle_check(dev, slot);
    return 1;
}

/* Runs the slot granted; returns when it ended. */
static void run_slot(gs__sched_dev_t *dev, slot_t *slot)
{
    slot->started = 0;
    open_round(dev, slot, gs__mono_ns());
    do
        agent_wait(dev, POLL_NS);
    while (!dev->lost && poll_slot(dev, slot));
}

/* The channel to gpushared broke: takes part again (launches go on meanwhile). Returns 0 when it
 * does, nonzero when the device stays unscheduled. */
static int recover(gs__sched_dev_t *dev, slot_t *slot)
{
    if (gs__compute_rejoin(dev) != 0)
        return -1;
    gs__gate_close(&dev->gate);
    memset(slot, 0, sizeof(*slot));
    dev->lost = 0;
    return 0;
}

static void *agent(void *arg)
{
    gs__sched_dev_t *dev = arg;
    const gs__real_t *real = gs__real();
    /* Every wait of this thread is on the GPU's critical path (a drain, a hand-over, the slot's
     * deadline): the kernel's default 50 us of timer slack would be charged to the lease, and
     * a capped lease of short slots lost 10 % of its rate to it. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (real->cuThreadExchangeStreamCaptureMode != NULL) {
        /* Our synchronizations must not invalidate a capture the application runs. */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        real->cuThreadExchangeStreamCaptureMode(&mode);
    }
    slot_t slot;
    memset(&slot, 0, sizeof(slot));
    for (;;) {
        if (dev->lost && recover(dev, &slot) != 0)
            return NULL;
        /* Still waiting after a slot: the scheduler may grant us the GPU at any moment, so we
         * must be there to take it (and give it up if the work is gone). */
        if (!slot.waiting)
            wait_for_work(dev);
        acquire(dev, &slot.grant);
        if (slot.grant.held && !dev->lost)
            run_slot(dev, &slot);
    }
}

int gs__agent_start(gs__sched_dev_t *dev)
{
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&thread, &attr, agent, dev) == 0;
    pthread_attr_destroy(&attr);
    return started;
}
