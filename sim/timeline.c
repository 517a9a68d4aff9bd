/* SPDX-License-Identifier: Apache-2.0 */
/* Device timelines: when simulated kernels run, who shares the SMs, and how busy a GPU was. */
#include "node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t gsim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void gsim_sleep_until(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
    if (deadline_ns <= 0)
        return;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* A process's kernels separated by less than this idle time share one history entry (its busy
 * time stays exact), so the history spans seconds of back-to-back launches, not just its last
 * GSIM_HISTORY kernels. */
#define MERGE_GAP_NS INT64_C(2000000)

int64_t gsim_interval_busy_within(const gsim_interval_t *iv, int64_t from, int64_t to)
{
    int64_t a = iv->start_ns > from ? iv->start_ns : from;
    int64_t b = iv->end_ns < to ? iv->end_ns : to;
    int64_t span = iv->end_ns - iv->start_ns;
    if (b <= a || span <= 0)
        return 0;
    if (iv->busy_ns >= span)
        return b - a;
    return (int64_t)((__int128)iv->busy_ns * (b - a) / span);
}

static void push_history(gsim_timeline_t *tl, const gsim_interval_t *iv)
{
    if (tl->history_count > 0) {
        gsim_interval_t *last = &tl->history[(tl->history_next + GSIM_HISTORY - 1) % GSIM_HISTORY];
        if (last->pid == iv->pid && last->pct == iv->pct && last->mps_pct == iv->mps_pct &&
            iv->start_ns >= last->start_ns && iv->start_ns <= last->end_ns + MERGE_GAP_NS) {
            int64_t overlap = 0;
            if (last->end_ns > iv->start_ns)
                overlap = (iv->end_ns < last->end_ns ? iv->end_ns : last->end_ns) - iv->start_ns;
            last->busy_ns += iv->busy_ns - (overlap < iv->busy_ns ? overlap : iv->busy_ns);
            if (iv->submit_ns < last->submit_ns)
                last->submit_ns = iv->submit_ns;
            if (iv->end_ns > last->end_ns)
                last->end_ns = iv->end_ns;
            return;
        }
    }
    tl->history[tl->history_next] = *iv;
    tl->history_next = (tl->history_next + 1) % GSIM_HISTORY;
    if (tl->history_count < GSIM_HISTORY)
        tl->history_count++;
}

/* Moves intervals that ended by now into the history. */
static void prune(gsim_timeline_t *tl, int64_t now)
{
    for (uint32_t i = 0; i < tl->n_reserved;) {
        if (tl->reserved[i].end_ns <= now) {
            push_history(tl, &tl->reserved[i]);
            tl->reserved[i] = tl->reserved[--tl->n_reserved];
        } else {
            i++;
        }
    }
}

/* Returns the total pct of other processes' work running at instant t. */
static uint32_t load_at(const gsim_timeline_t *tl, int32_t pid, int64_t t)
{
    uint32_t load = 0;
    for (uint32_t i = 0; i < tl->n_reserved; i++) {
        const gsim_interval_t *r = &tl->reserved[i];
        if (r->pid != pid && r->start_ns <= t && t < r->end_ns)
            load += r->pct;
    }
    return load;
}

/* The load is piecewise constant and only rises where an interval starts, so checking t and the
 * starts inside (t, t + dur) covers every instant of [t, t + dur). */
static int fits_at(const gsim_timeline_t *tl, int32_t pid, uint32_t pct, int64_t t, int64_t dur)
{
    if (load_at(tl, pid, t) + pct > 100)
        return 0;
    for (uint32_t i = 0; i < tl->n_reserved; i++) {
        const gsim_interval_t *r = &tl->reserved[i];
        if (r->pid != pid && r->start_ns > t && r->start_ns < t + dur &&
            load_at(tl, pid, r->start_ns) + pct > 100)
            return 0;
    }
    return 1;
}

/* Returns the earliest end of another process's interval after t (INT64_MAX when none). */
static int64_t next_end_after(const gsim_timeline_t *tl, int32_t pid, int64_t t)
{
    int64_t next = INT64_MAX;
    for (uint32_t i = 0; i < tl->n_reserved; i++) {
        const gsim_interval_t *r = &tl->reserved[i];
        if (r->pid != pid && r->end_ns > t && r->end_ns < next)
            next = r->end_ns;
    }
    return next;
}

/* What other processes have pending at now: whether any time-sliced work, and the sum of the
 * active thread percentages of the MPS clients (each counted once). */
typedef struct contention {
    int sliced;
    uint32_t mps_sum;
} contention_t;

/* Adds r to c when it is another process's work pending at now (time-sliced work), or an MPS
 * client's that ran within MERGE_GAP_NS of now (a client between two launches keeps its SMs). */
static void count_contender(contention_t *c, const gsim_interval_t *r, int32_t pid, int64_t now,
                            int32_t *counted, uint32_t *n)
{
    if (r->pid == pid || r->end_ns <= now - (r->mps_pct != 0 ? MERGE_GAP_NS : 0))
        return;
    if (r->mps_pct == 0) {
        c->sliced |= r->end_ns > now;
        return;
    }
    for (uint32_t k = 0; k < *n; k++) {
        if (counted[k] == r->pid)
            return;
    }
    if (*n < GSIM_MAX_RESERVATIONS + GSIM_HISTORY) {
        counted[(*n)++] = r->pid;
        c->mps_sum += r->mps_pct;
    }
}

static contention_t contention_at(const gsim_timeline_t *tl, int32_t pid, int64_t now)
{
    contention_t c = {0, 0};
    int32_t counted[GSIM_MAX_RESERVATIONS + GSIM_HISTORY];
    uint32_t n = 0;
    for (uint32_t i = 0; i < tl->n_reserved; i++)
        count_contender(&c, &tl->reserved[i], pid, now, counted, &n);
    for (uint32_t i = 0; i < tl->history_count; i++)
        count_contender(&c, &tl->history[i], pid, now, counted, &n);
    return c;
}

/* The wall time w's kernel takes and the SM share it runs at, by the time model in node.h. */
static int64_t kernel_wall_ns(const gsim_timeline_t *tl, const gsim_work_t *w, int64_t now,
                              uint32_t *pct)
{
    contention_t c = contention_at(tl, w->pid, now);
    double speed = 1.0;
    *pct = 100;
    if (w->mps_pct != 0) {
        uint32_t sum = c.mps_sum + w->mps_pct;
        *pct = w->mps_pct;
        if (sum > 100) {
            *pct = w->mps_pct * 100 / sum > 0 ? w->mps_pct * 100 / sum : 1;
            speed *= GSIM_MPS_CONCURRENCY;
        }
        speed *= *pct / 100.0;
    }
    /* Time-sliced against any other context: other time-sliced processes, or the MPS server. */
    if (c.sliced || (w->mps_pct == 0 && c.mps_sum > 0))
        speed *= GSIM_SLICE_EFFICIENCY;
    double wall = (double)w->work_ns / speed + 0.5;
    return wall >= 9.0e18 ? INT64_C(9000000000000000000) : (int64_t)wall;
}

/* Extends pid's interval that ends exactly at t with the same shares; returns 1 when it did. */
static int extend(gsim_timeline_t *tl, const gsim_work_t *w, uint32_t pct, int64_t t, int64_t dur)
{
    for (uint32_t i = 0; i < tl->n_reserved; i++) {
        gsim_interval_t *r = &tl->reserved[i];
        if (r->pid == w->pid && r->pct == pct && r->mps_pct == w->mps_pct && r->end_ns == t) {
            r->end_ns = t + dur;
            r->busy_ns += dur;
            return 1;
        }
    }
    return 0;
}

int gsim_timeline_reserve(gsim_timeline_t *tl, const gsim_work_t *w, int64_t *start_ns,
                          int64_t *end_ns)
{
    int64_t now = gsim_now_ns();
    prune(tl, now);
    uint32_t pct = 100;
    int64_t dur = w->work_ns > 0 ? kernel_wall_ns(tl, w, now, &pct) : 0;
    int64_t t = w->ready_ns > now ? w->ready_ns : now;
    while (dur > 0 && !fits_at(tl, w->pid, pct, t, dur)) {
        int64_t next = next_end_after(tl, w->pid, t);
        if (next == INT64_MAX)
            break;
        t = next;
    }
    *start_ns = t;
    *end_ns = t + dur;
    if (dur == 0 || extend(tl, w, pct, t, dur))
        return 0;
    if (tl->n_reserved == GSIM_MAX_RESERVATIONS) {
        int64_t earliest = INT64_MAX;
        for (uint32_t i = 0; i < tl->n_reserved; i++) {
            if (tl->reserved[i].end_ns < earliest)
                earliest = tl->reserved[i].end_ns;
        }
        *start_ns = earliest;
        return -EAGAIN;
    }
    tl->reserved[tl->n_reserved++] = (gsim_interval_t){.start_ns = t,
                                                       .end_ns = t + dur,
                                                       .busy_ns = dur,
                                                       .submit_ns = now,
                                                       .pid = w->pid,
                                                       .pct = pct,
                                                       .mps_pct = w->mps_pct};
    return 0;
}

static int compare_start(const void *a, const void *b);

int64_t gsim_timeline_future_union_ns(const gsim_timeline_t *tl, int32_t pid, int64_t now_ns)
{
    gsim_interval_t spans[GSIM_MAX_RESERVATIONS];
    size_t n = 0;
    for (uint32_t i = 0; i < tl->n_reserved && i < GSIM_MAX_RESERVATIONS; i++) {
        const gsim_interval_t *r = &tl->reserved[i];
        if (r->pid == pid && r->end_ns > now_ns)
            spans[n++] = (gsim_interval_t){.start_ns = r->start_ns > now_ns ? r->start_ns : now_ns,
                                           .end_ns = r->end_ns};
    }
    qsort(spans, n, sizeof(spans[0]), compare_start);
    int64_t covered = 0, to = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t s = spans[i].start_ns > to ? spans[i].start_ns : to;
        if (spans[i].end_ns > s)
            covered += spans[i].end_ns - s;
        if (spans[i].end_ns > to)
            to = spans[i].end_ns;
    }
    return covered;
}

int64_t gsim_timeline_future_ns(const gsim_timeline_t *tl, int32_t pid, int64_t now_ns)
{
    int64_t future = 0;
    for (uint32_t i = 0; i < tl->n_reserved && i < GSIM_MAX_RESERVATIONS; i++) {
        const gsim_interval_t *r = &tl->reserved[i];
        if (r->pid == pid && r->end_ns > now_ns)
            future += gsim_interval_busy_within(r, now_ns, r->end_ns);
    }
    return future;
}

static int compare_start(const void *a, const void *b)
{
    const gsim_interval_t *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* The union of the spans of the intervals (of pid, or all when pid is 0) within [from, to):
 * from their start, or with from_submit from their launch. */
static int64_t union_within(gsim_timeline_t *tl, int32_t pid, int64_t from_ns, int64_t to_ns,
                            int from_submit)
{
    gsim_interval_t clipped[GSIM_HISTORY + GSIM_MAX_RESERVATIONS];
    size_t n = 0;
    for (uint32_t i = 0; i < tl->history_count + tl->n_reserved; i++) {
        const gsim_interval_t *iv =
            i < tl->history_count ? &tl->history[i] : &tl->reserved[i - tl->history_count];
        if (pid != 0 && iv->pid != pid)
            continue;
        int64_t first = from_submit && iv->submit_ns < iv->start_ns ? iv->submit_ns : iv->start_ns;
        int64_t s = first > from_ns ? first : from_ns;
        int64_t e = iv->end_ns < to_ns ? iv->end_ns : to_ns;
        if (s < e)
            clipped[n++] = (gsim_interval_t){.start_ns = s, .end_ns = e};
    }
    qsort(clipped, n, sizeof(clipped[0]), compare_start);
    int64_t busy = 0, covered_to = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t s = clipped[i].start_ns > covered_to ? clipped[i].start_ns : covered_to;
        if (clipped[i].end_ns > s)
            busy += clipped[i].end_ns - s;
        if (clipped[i].end_ns > covered_to)
            covered_to = clipped[i].end_ns;
    }
    return busy;
}

int64_t gsim_timeline_busy_ns(gsim_timeline_t *tl, int32_t pid, int64_t from, int64_t to)
{
    /* Spans may hold short idle gaps (merged history), and work of several processes may
     * overlap (MPS): the busy time is the smaller of the spans' union and the work's sum. */
    int64_t work = 0;
    for (uint32_t i = 0; i < tl->history_count + tl->n_reserved; i++) {
        const gsim_interval_t *iv =
            i < tl->history_count ? &tl->history[i] : &tl->reserved[i - tl->history_count];
        if (pid == 0 || iv->pid == pid)
            work += gsim_interval_busy_within(iv, from, to);
    }
    int64_t spans = union_within(tl, pid, from, to, 0);
    return work < spans ? work : spans;
}

int64_t gsim_timeline_pending_ns(gsim_timeline_t *tl, int32_t pid, int64_t from, int64_t to)
{
    return union_within(tl, pid, from, to, 1);
}

void gsim_timeline_forget(gsim_timeline_t *tl, int32_t pid)
{
    for (uint32_t i = 0; i < tl->n_reserved;) {
        if (tl->reserved[i].pid == pid)
            tl->reserved[i] = tl->reserved[--tl->n_reserved];
        else
            i++;
    }
}
