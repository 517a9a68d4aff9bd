/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of a GPU's compute scheduler (gpushare/sched.h): slots follow the weights, the
 * members of a lease run together, caps are token buckets, overruns are paid back, idle leases
 * give their time away and come back without credit (short pauses keep their place), members
 * that leave and stuck holders are passed over, and no sequence of what members may say makes an
 * operation crash or loop. Times are passed in, so the policy is checked exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/sched.h"
#include "sched_internal.h"

#define MS INT64_C(1000000)

static gs_sched_gpu_t *gpu;
static int64_t t0;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A fresh GPU for each test. */
static gs_sched_gpu_t *fresh(void)
{
    assert_int_equal(gs_sched_gpu_new(&gpu), 0);
    t0 = mono_ns();
    return gpu;
}

static gs_sched_t *member(const char *key, uint32_t guarantee, uint32_t cap)
{
    gs_sched_t *s = NULL;
    assert_int_equal(gs_sched_open(gpu, &s), 0);
    assert_int_equal(gs_sched_join(s, key, (gs_sched_share_t){guarantee, cap}), 0);
    return s;
}

static void destroy(gs_sched_gpu_t *g)
{
    gs_sched_gpu_free(g);
    gpu = NULL;
}

/* Joining: bad keys, a second join, full tables. */
static void test_joining(void **state)
{
    (void)state;
    gs_sched_gpu_t *g = fresh();
    gs_sched_t *s = NULL;
    assert_int_equal(gs_sched_open(g, &s), 0);
    char long_key[GS_SCHED_KEY_MAX + 1];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    assert_int_equal(gs_sched_join(s, "", (gs_sched_share_t){0, 0}), GS_EINVAL);
    assert_int_equal(gs_sched_join(s, long_key, (gs_sched_share_t){0, 0}), GS_EINVAL);
    assert_int_equal(gs_sched_join(s, "k", (gs_sched_share_t){0, 0}), 0);
    assert_int_equal(gs_sched_join(s, "k", (gs_sched_share_t){0, 0}), GS_EBUSY);
    gs_sched_close(s);
    /* 256 processes fill the process table; 64 leases the lease table. */
    gs_sched_t *m[GS_SCHED_MAX_PROCS + 1];
    char key[16];
    for (int i = 0; i <= GS_SCHED_MAX_PROCS; i++) {
        assert_int_equal(gs_sched_open(g, &m[i]), 0);
        snprintf(key, sizeof(key), "l%d", i % GS_SCHED_MAX_LEASES);
        assert_int_equal(gs_sched_join(m[i], key, (gs_sched_share_t){0, 0}),
                         i < GS_SCHED_MAX_PROCS ? 0 : GS_ENOSPC);
    }
    gs_sched_t *extra = NULL;
    assert_int_equal(gs_sched_open(g, &extra), 0);
    gs_sched_leave(m[0], 0);
    assert_int_equal(gs_sched_join(extra, "another", (gs_sched_share_t){0, 0}), GS_ENOSPC);
    for (int i = 0; i <= GS_SCHED_MAX_PROCS; i++)
        gs_sched_close(m[i]);
    assert_int_equal(gs_sched_join(extra, "another", (gs_sched_share_t){0, 0}), 0);
    gs_sched_close(extra);
    destroy(g);
}

/* The member a holds the GPU; returns its grant. */
static gs_sched_grant_t want(gs_sched_t *s, int64_t at)
{
    gs_sched_grant_t g;
    assert_int_equal(gs_sched_want(s, t0 + at, &g), 0);
    return g;
}

static void test_slots_follow_weights(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 300, 0), *b = member("b", 700, 0);
    gs_sched_grant_t ga = want(a, 0), gb = want(b, 0);
    assert_true(ga.held);
    assert_false(gb.held);
    assert_true(gb.wait_ns > 0);
    /* a's part of a round among the leases with members, although b has no work yet. */
    assert_int_equal(ga.end_ns - ga.start_ns, 30 * MS);
    assert_int_equal(gs_sched_slot_end(a, ga.epoch), ga.start_ns + 30 * MS);
    assert_int_equal(gs_sched_slot_end(b, ga.epoch), 0);
    assert_true(gs_sched_others_waiting(a));
    /* a ends early (its first 10 ms): b gets 70 % of a round, then a 30 %. */
    assert_int_equal(gs_sched_yield(a, ga.epoch, t0 + 10 * MS, 1, &ga), 0);
    assert_false(ga.held);
    gb = want(b, 10 * MS);
    assert_true(gb.held);
    assert_int_equal(gb.end_ns - gb.start_ns, 70 * MS);
    assert_int_equal(gs_sched_renew(b, gb.epoch, t0 + 80 * MS, &gb), 0); /* a waits */
    assert_int_equal(gs_sched_yield(b, gb.epoch, t0 + 80 * MS, 1, &gb), 0);
    ga = want(a, 80 * MS);
    assert_true(ga.held);
    assert_int_equal(ga.end_ns - ga.start_ns, 30 * MS);
    /* Alone now (b idle): a renews its slot at the deadline. */
    assert_int_equal(gs_sched_yield(b, gb.epoch, t0 + 80 * MS, 0, &gb), 0);
    assert_int_equal(gs_sched_renew(a, ga.epoch, t0 + 110 * MS, &ga), 1);
    assert_true(ga.held);
    gs_sched_lease_info_t info[4];
    assert_int_equal(gs_sched_leases(gpu, info, 4), 2);
    assert_string_equal(info[0].key, "a");
    assert_int_equal(info[0].used_ns, 10 * MS + 30 * MS);
    assert_int_equal(info[0].share.guarantee, 300);
    assert_int_equal(info[1].used_ns, 70 * MS);
    assert_int_equal(info[1].waiting, 0);
    gs_sched_close(a);
    gs_sched_close(b);
    destroy(creator);
}

/* Runs a and b (both always waiting) for rounds of the period, each using its whole slot plus
 * over_a of overrun for a; returns a's part of the device time in per mille. */
static int64_t share_of_a(gs_sched_t *a, gs_sched_t *b, int64_t over_a, int rounds, int64_t now)
{
    int64_t used_a = 0, used_b = 0;
    gs_sched_grant_t g;
    want(a, now);
    want(b, now);
    for (int i = 0; i < 2 * rounds; i++) {
        gs_sched_t *who = NULL;
        gs_sched_grant_t ga = want(a, now), gb = want(b, now);
        who = ga.held ? a : b;
        g = ga.held ? ga : gb;
        int64_t used = g.end_ns - g.start_ns + (who == a ? over_a : 0);
        now += used;
        *(who == a ? &used_a : &used_b) += used;
        assert_int_equal(gs_sched_yield(who, g.epoch, t0 + now, 1, &g), 0);
    }
    return used_a * 1000 / (used_a + used_b);
}

static void test_overruns_are_paid_back(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 100, 0), *b = member("b", 900, 0);
    /* a's kernels run 25 ms past each of its 10 ms slots: it still gets 10 %. */
    int64_t share = share_of_a(a, b, 25 * MS, 60, 0);
    assert_true(share >= 95 && share <= 105);
    gs_sched_close(a);
    gs_sched_close(b);
    destroy(creator);
}

static void test_small_shares_wait_little(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *m[4] = {member("a", 50, 0), member("b", 50, 0), member("c", 50, 0),
                        member("d", 850, 0)};
    int64_t now = 0, last_end[4] = {0, 0, 0, 0}, longest[4] = {0, 0, 0, 0}, used[4] = {0};
    for (int i = 0; i < 4; i++)
        want(m[i], 0);
    for (int turn = 0; turn < 200; turn++) {
        int who = -1;
        gs_sched_grant_t g;
        for (int i = 0; i < 4 && who < 0; i++) {
            g = want(m[i], now);
            who = g.held ? i : -1;
        }
        assert_true(who >= 0);
        /* Kernels of 2 ms: the small leases run the two that fit their 5 ms slot, the large
         * one its slot and a kernel more (a round rarely ends on a kernel's end). */
        int64_t start = now;
        now += who < 3 ? 4 * MS : g.end_ns - g.start_ns + 2 * MS;
        used[who] += now - start;
        if (turn > 20 && start - last_end[who] > longest[who])
            longest[who] = start - last_end[who];
        last_end[who] = now;
        assert_int_equal(gs_sched_yield(m[who], g.epoch, t0 + now, 1, &g), 0);
    }
    for (int i = 0; i < 3; i++) {
        print_message("lease %c: longest wait %lld ms, %lld per mille\n", 'a' + i,
                      (long long)(longest[i] / MS), (long long)(used[i] * 1000 / now));
        assert_true(longest[i] <= 150 * MS);
        assert_true(used[i] * 1000 / now >= 40 && used[i] * 1000 / now <= 60);
    }
    for (int i = 0; i < 4; i++)
        gs_sched_close(m[i]);
    destroy(creator);
}

/* Small leases that had the GPU to themselves while a large one paused do not wait long when it
 * comes back: their slots stayed their part of a round, so they owe nothing. */
static void test_pause_of_a_large_lease(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *m[3] = {member("a", 50, 0), member("b", 50, 0), member("c", 900, 0)};
    int64_t now = 0, last_end[2] = {0, 0}, longest = 0;
    want(m[0], 0);
    want(m[1], 0);
    for (int turn = 0; turn < 120; turn++) {
        if (turn == 20)
            want(m[2], now); /* c was idle until now */
        int who = -1;
        gs_sched_grant_t g;
        for (int i = 0; i < 3 && who < 0; i++) {
            if (i == 2 && turn < 20)
                break;
            g = want(m[i], now);
            who = g.held ? i : -1;
        }
        assert_true(who >= 0);
        int64_t start = now;
        now += g.end_ns - g.start_ns;
        if (who < 2) {
            if (turn > 20 && start - last_end[who] > longest)
                longest = start - last_end[who];
            last_end[who] = now;
        }
        assert_int_equal(gs_sched_yield(m[who], g.epoch, t0 + now, 1, &g), 0);
    }
    print_message("longest wait of a small lease after the large one came back: %lld ms\n",
                  (long long)(longest / MS));
    assert_true(longest <= 150 * MS);
    for (int i = 0; i < 3; i++)
        gs_sched_close(m[i]);
    destroy(creator);
}

static void test_best_effort_gets_the_rest(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 300, 0), *b = member("b", 0, 0);
    int64_t share = share_of_a(a, b, 0, 40, 0);
    assert_true(share >= 290 && share <= 310);
    gs_sched_close(a);
    gs_sched_close(b);
    destroy(creator);
}

static void test_cap_is_a_token_bucket(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 0, 300);
    /* Alone, capped at 30 %: a full bucket (30 ms) at once, then half a bucket (15 ms) each
     * time the bucket is half full again, so 30 % over time. */
    gs_sched_grant_t g = want(a, 0);
    assert_true(g.held);
    assert_int_equal(g.end_ns - g.start_ns, 30 * MS);
    assert_int_equal(gs_sched_renew(a, g.epoch, t0 + 30 * MS, &g), 0);
    assert_int_equal(gs_sched_yield(a, g.epoch, t0 + 30 * MS, 1, &g), 0);
    assert_false(g.held);
    assert_true(g.wait_ns > 0 && g.wait_ns <= 50 * MS);
    int64_t used = 30 * MS, now = 30 * MS;
    while (now < 5000 * MS) {
        g = want(a, now);
        if (!g.held) {
            now += MS;
            continue;
        }
        int64_t slot = g.end_ns - g.start_ns;
        now += slot;
        used += slot;
        assert_int_equal(gs_sched_yield(a, g.epoch, t0 + now, 1, &g), 0);
    }
    assert_true(used * 1000 / now >= 290 && used * 1000 / now <= 310);
    gs_sched_close(a);
    destroy(creator);
}

static void test_idle_lease_gives_its_time_and_comes_back(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 500, 0), *b = member("b", 500, 0);
    gs_sched_grant_t ga = want(a, 0), gb;
    /* b is idle for 10 s while a runs alone, renewing its slots. */
    int64_t now = 0;
    while (now < 10000 * MS) {
        now = ga.end_ns - t0;
        assert_int_equal(gs_sched_renew(a, ga.epoch, t0 + now, &ga), 1);
    }
    /* b comes back: no debt for a, and a little credit: a is asked to end its slot. */
    gb = want(b, now + 5 * MS);
    assert_false(gb.held);
    assert_true(gs_sched_preempted(a, ga.epoch));
    assert_int_equal(gs_sched_yield(a, ga.epoch, t0 + now + 6 * MS, 1, &ga), 0);
    gb = want(b, now + 6 * MS);
    assert_true(gb.held);
    assert_int_equal(gb.end_ns - gb.start_ns, 50 * MS);
    /* Then they alternate: b's past idleness bought it no run of many slots. */
    int64_t share = share_of_a(a, b, 0, 20, now + 56 * MS);
    print_message("a's part after b came back: %lld per mille\n", (long long)share);
    assert_true(share >= 450 && share <= 550);
    gs_sched_close(a);
    gs_sched_close(b);
    destroy(creator);
}

/* The members of a lease run in its slot together: the slot ends when the last of them drained,
 * and the lease is charged once for it (one hand-over a round, whatever its processes). */
static void test_members_of_a_lease_run_together(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *m1 = member("a", 300, 0), *m2 = member("a", 300, 0), *b = member("b", 700, 0);
    gs_sched_grant_t g1 = want(m1, 0), gb = want(b, 0), g2 = want(m2, MS);
    assert_true(g1.held);
    assert_false(gb.held);
    assert_true(g2.held);
    assert_int_equal(g2.epoch, g1.epoch);
    assert_int_equal(g1.end_ns - g1.start_ns, 30 * MS); /* not split between its members */
    /* m1 drained at 10 ms: the slot goes on for m2. */
    assert_int_equal(gs_sched_yield(m1, g1.epoch, t0 + 10 * MS, 1, &g1), 0);
    assert_false(g1.held);
    gb = want(b, 11 * MS);
    assert_false(gb.held);
    /* m1 wants again while the slot has time left: it runs in it again. */
    g1 = want(m1, 12 * MS);
    assert_true(g1.held);
    /* At the end both leave; the lease is charged to the later drain, once. */
    assert_int_equal(gs_sched_renew(m2, g2.epoch, t0 + 30 * MS, &g2), 0);
    assert_int_equal(gs_sched_yield(m2, g2.epoch, t0 + 32 * MS, 1, &g2), 0);
    assert_int_equal(gs_sched_yield(m1, g1.epoch, t0 + 31 * MS, 1, &g1), 0);
    gb = want(b, 32 * MS);
    assert_true(gb.held);
    gs_sched_lease_info_t info[4];
    assert_int_equal(gs_sched_leases(gpu, info, 4), 2);
    assert_string_equal(info[0].key, "a");
    assert_int_equal(info[0].used_ns, 32 * MS);
    assert_int_equal(info[0].procs, 2);
    /* A member that dies in the slot does not keep it: the others end it. */
    gs_sched_close(m2);
    assert_int_equal(gs_sched_yield(b, gb.epoch, t0 + 102 * MS, 1, &gb), 0);
    g1 = want(m1, 102 * MS);
    assert_true(g1.held);
    gs_sched_close(m1);
    gs_sched_close(b);
    destroy(creator);
}

/* A lease whose process now and then pauses between batches (every other slot of it ends idle,
 * and it comes back a few ms later while the other lease runs) keeps its place: it is still owed
 * what it was behind, up to a round, so the other lease's overruns are paid back to it. Coming
 * back at the GPU's virtual time forgave them each time (the 30 % lease got 33 % on a busy host,
 * issue 26). */
static void test_short_pauses_keep_the_place(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 300, 0), *b = member("b", 700, 0);
    int64_t now = 0, used_a = 0, used_b = 0;
    want(a, 0);
    want(b, 0);
    for (int turn = 0, b_slots = 0; turn < 300; turn++) {
        gs_sched_grant_t ga = want(a, now), gb = want(b, now);
        int b_holds = gb.held;
        gs_sched_grant_t g = b_holds ? gb : ga;
        assert_true(g.held);
        /* a's slots run 12 ms past their end (its kernels in flight), which it pays back. */
        int64_t used = g.end_ns - g.start_ns + (b_holds ? 0 : 12) * MS;
        now += used;
        *(b_holds ? &used_b : &used_a) += used;
        int pause = b_holds && b_slots++ % 2 == 1;
        assert_int_equal(gs_sched_yield(b_holds ? b : a, g.epoch, t0 + now, !pause, &g), 0);
        if (pause)
            want(b, now + 2 * MS); /* b's next batch, 2 ms later */
    }
    int64_t part = used_b * 1000 / (used_a + used_b);
    print_message("b's part with a pause after every other slot: %lld per mille\n",
                  (long long)part);
    assert_true(part >= 690 && part <= 710);
    gs_sched_close(a);
    gs_sched_close(b);
    destroy(creator);
}

static void test_dead_and_stuck_holders_are_passed_over(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 500, 0), *b = member("b", 500, 0);
    gs_sched_grant_t ga = want(a, 0), gb = want(b, 0);
    assert_true(ga.held);
    /* a stays alive but never ends its 50 ms slot: b takes over once the slot is the grace past
     * its end, not before. */
    assert_int_equal(ga.end_ns - ga.start_ns, 50 * MS);
    gb = want(b, GS_SCHED_PERIOD_NS);
    assert_false(gb.held);
    gb = want(b, 50 * MS + GS_SCHED_OVERDUE_NS);
    assert_false(gb.held);
    const int64_t taken = 50 * MS + GS_SCHED_OVERDUE_NS + MS;
    gb = want(b, taken);
    assert_true(gb.held);
    /* a's late yield does not take the GPU back, and its lease is charged for what it kept the
     * GPU after the takeover (50 ms), once. */
    const uint64_t old = ga.epoch;
    assert_int_equal(gs_sched_yield(a, old, t0 + taken + 50 * MS, 1, &ga), 0);
    assert_false(ga.held);
    assert_int_equal(gs_sched_yield(a, old, t0 + taken + 50 * MS, 1, &ga), 0);
    gs_sched_lease_info_t info[2];
    assert_int_equal(gs_sched_leases(gpu, info, 2), 2);
    assert_int_equal(info[0].used_ns, taken + 50 * MS);
    /* b could not use the GPU before a's drain: it is charged from then (10 ms, not 60). */
    assert_int_equal(gs_sched_yield(b, gb.epoch, t0 + taken + 60 * MS, 1, &gb), 0);
    assert_int_equal(gs_sched_leases(gpu, info, 2), 2);
    assert_int_equal(info[1].used_ns, 10 * MS);
    gb = want(b, taken + 60 * MS);
    /* b leaves (its process is gone: gpushared saw its channel close): a gets the GPU at once. */
    gs_sched_leave(b, t0 + taken + 70 * MS);
    ga = want(a, taken + 70 * MS);
    assert_true(ga.held);
    gs_sched_close(b);
    gs_sched_close(a);
    destroy(creator);
}

/* A holder whose slot ended long ago (stopped, hung) is passed over at once by a lease that
 * arrives later; also after a very long hold. */
static void test_stuck_holder_is_passed_over_by_newcomers(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 500, 0);
    gs_sched_grant_t ga = want(a, 0);
    assert_true(ga.held);
    const int64_t late = 5 * GS_SCHED_PERIOD_NS;
    gs_sched_t *b = member("b", 500, 0);
    gs_sched_grant_t gb = want(b, late);
    assert_true(gb.held);
    /* b now stalls too, for longer than any charge counts; c arrives later still. */
    const int64_t later = late + 300 * GS_SCHED_PERIOD_NS;
    gs_sched_t *c = member("c", 500, 0);
    gs_sched_grant_t gc = want(c, later);
    assert_true(gc.held);
    gs_sched_close(c);
    gs_sched_close(b);
    gs_sched_close(a);
    destroy(creator);
}

/* A best-effort lease granted while the guaranteed one (100 %) paused, so with all of the GPU as
 * its weight, that then stalls past its slot is charged the overrun at the weight it has once the
 * other waits: the least (1 %). It does not get the GPU again for a long while (it did after
 * 0.3 s when the whole stall was charged at its weight at the grant). */
static void test_a_stalling_best_effort_lease_pays_at_its_least_weight(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 1000, 0), *h = member("h", 0, 0);
    gs_sched_grant_t gh = want(h, 0), ga;
    assert_true(gh.held); /* a has no work: h's weight is 1000 - 0 */
    ga = want(a, 5 * MS); /* a is back and waits */
    const int64_t taken = gh.end_ns - t0 + GS_SCHED_OVERDUE_NS + MS;
    ga = want(a, taken);
    assert_true(ga.held); /* h never ended its slot: passed over */
    /* 2 s of a's slots: h (wanting all along) gets none of them. */
    int64_t now = taken;
    for (int i = 0; i < 20; i++) {
        ga = want(a, now);
        gh = want(h, now);
        assert_true(ga.held);
        assert_false(gh.held);
        now += ga.end_ns - ga.start_ns;
        assert_int_equal(gs_sched_yield(a, ga.epoch, t0 + now, 1, &ga), 0);
    }
    gs_sched_close(a);
    gs_sched_close(h);
    destroy(creator);
}

/* A member saying anything it may say, in any order, with any epoch and any time (a process
 * can send whatever its channel carries): every operation stays bounded and consistent, and
 * an honest lease beside it still gets the GPU. */
static void test_any_sequence_is_survived(void **state)
{
    (void)state;
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *a = member("a", 300, 200), *b = member("b", 0, 0), *c = member("c", 700, 0);
    unsigned seed = 12345;
    int64_t start = mono_ns(), now = 0;
    for (int round = 0; round < 20000; round++) {
        gs_sched_t *who = rand_r(&seed) % 2 ? a : b;
        now += (int64_t)(rand_r(&seed) % 3000) * 1000;
        int64_t at =
            rand_r(&seed) % 8 == 0 ? (int64_t)(rand_r(&seed) % 4000) * MS - 2000 * MS : now;
        uint64_t epoch = rand_r(&seed) % 4 == 0 ? (uint64_t)rand_r(&seed) : creator->epoch;
        gs_sched_grant_t g = {0};
        gs_sched_lease_info_t info[GS_SCHED_MAX_LEASES];
        switch (rand_r(&seed) % 7) {
        case 0:
            gs_sched_want(who, t0 + at, &g);
            break;
        case 1:
            gs_sched_yield(who, epoch, t0 + at, rand_r(&seed) % 2, &g);
            break;
        case 2:
            gs_sched_renew(who, epoch, t0 + at, &g);
            break;
        case 3:
            assert_true(gs_sched_leases(gpu, info, GS_SCHED_MAX_LEASES) <= GS_SCHED_MAX_LEASES);
            break;
        case 4:
            gs_sched_started(who, epoch, t0 + at);
            gs_sched_others_waiting(who);
            gs_sched_preempted(who, epoch);
            break;
        case 5: /* c, honest: wants, and ends its slots */
            if (gs_sched_want(c, t0 + now, &g) == 0 && g.held)
                gs_sched_yield(c, g.epoch, t0 + now, 1, &g);
            break;
        default:
            gs_sched_leave(who, t0 + at);
            gs_sched_join(who, who == a ? "a" : "b", (gs_sched_share_t){300, 200});
            break;
        }
        assert_true(g.held || g.wait_ns >= 0);
        assert_true(creator->holder <= GS_SCHED_MAX_LEASES);
    }
    gs_sched_lease_info_t info[GS_SCHED_MAX_LEASES];
    int n = gs_sched_leases(gpu, info, GS_SCHED_MAX_LEASES);
    int64_t c_used = 0;
    for (int i = 0; i < n; i++)
        c_used = strcmp(info[i].key, "c") == 0 ? (int64_t)info[i].used_ns : c_used;
    print_message("c (honest) was charged %lld ms\n", (long long)(c_used / MS));
    assert_true(c_used > 0);
    assert_true(mono_ns() - start < 20000 * MS);
    gs_sched_close(a);
    gs_sched_close(b);
    gs_sched_close(c);
    destroy(creator);
}

/* The device time (per mille of the wall time) an honest lease of weight 500 gets over 5 s
 * beside lease h of weight hw with n members that answer each grant at once with a first launch
 * claimed 1 ms late and a yield still wanting, never launching (churn): each answer takes
 * 20 us of the wall time. */
static int64_t beside_churn(uint32_t hw, int n)
{
    gs_sched_gpu_t *creator = fresh();
    gs_sched_t *v = member("v", 500, 0), *h[GS_SCHED_MAX_PROCS - 1];
    for (int i = 0; i < n; i++)
        h[i] = member("h", hw, 0);
    int64_t now = 0, used = 0;
    gs_sched_grant_t first = want(v, 0);
    for (int i = 0; i < n; i++)
        want(h[i], 0); /* they wait from now on: each yield says it still wants */
    assert_int_equal(gs_sched_yield(v, first.epoch, t0, 1, &first), 0);
    while (now < 5000 * MS) {
        gs_sched_grant_t g = want(v, now);
        if (g.held) {
            now += g.end_ns - (t0 + now) > 0 ? g.end_ns - (t0 + now) : 0;
            used += g.end_ns - g.start_ns;
            assert_int_equal(gs_sched_yield(v, g.epoch, t0 + now, 1, &g), 0);
            continue;
        }
        int answered = 0;
        for (int i = 0; i < n; i++) {
            g = want(h[i], now);
            if (!g.held)
                continue;
            gs_sched_started(h[i], g.epoch, g.start_ns + MS);
            now += 20 * 1000;
            assert_int_equal(gs_sched_yield(h[i], g.epoch, t0 + now, 1, &g), 0);
            answered = 1;
        }
        now += answered ? 0 : MS;
    }
    for (int i = 0; i < n; i++)
        gs_sched_close(h[i]);
    gs_sched_close(v);
    destroy(creator);
    return used * 1000 / now;
}

/* Issue 34: a lease whose members answer every grant with nothing is charged at least the
 * shortest slot for each, so an honest 50 % lease keeps its share beside any number of them. */
static void test_churn_is_charged(void **state)
{
    (void)state;
    const int counts[] = {1, 4, 16, 64, 255};
    for (int c = 0; c < 5; c++) {
        int64_t beside_10 = beside_churn(100, counts[c]), beside_50 = beside_churn(500, counts[c]);
        print_message("churn of %d members: the 50 %% lease gets %lld / %lld per mille beside "
                      "a 10 %% / 50 %% lease\n",
                      counts[c], (long long)beside_10, (long long)beside_50);
        assert_true(beside_10 >= 480);
        assert_true(beside_50 >= 480);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joining),
        cmocka_unit_test(test_slots_follow_weights),
        cmocka_unit_test(test_overruns_are_paid_back),
        cmocka_unit_test(test_small_shares_wait_little),
        cmocka_unit_test(test_pause_of_a_large_lease),
        cmocka_unit_test(test_best_effort_gets_the_rest),
        cmocka_unit_test(test_cap_is_a_token_bucket),
        cmocka_unit_test(test_idle_lease_gives_its_time_and_comes_back),
        cmocka_unit_test(test_members_of_a_lease_run_together),
        cmocka_unit_test(test_short_pauses_keep_the_place),
        cmocka_unit_test(test_dead_and_stuck_holders_are_passed_over),
        cmocka_unit_test(test_stuck_holder_is_passed_over_by_newcomers),
        cmocka_unit_test(test_a_stalling_best_effort_lease_pays_at_its_least_weight),
        cmocka_unit_test(test_any_sequence_is_survived),
        cmocka_unit_test(test_churn_is_charged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
