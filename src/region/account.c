/* SPDX-License-Identifier: Apache-2.0 */
/* Lock-free, exact accounting of a lease's memory (see region_internal.h for the protocol). */
#include "region_internal.h"

#include "gpushare/error.h"

#include <unistd.h>

static uint64_t tag_of(int slot, uint64_t seq)
{
    return ((uint64_t)(slot + 1) << SEQ_BITS) | (seq & SEQ_MASK);
}

/* Announces operation (seq, dev, delta) in slot's record. Only the slot's owner (or its reaper)
 * writes here; readers follow the seqlock protocol of read_pending. The compare-and-swap that
 * publishes the operation is a full barrier, so the announcement is visible before it. */
static void arm(region_proc_t *proc, uint64_t seq, unsigned dev, int64_t delta)
{
    /* Release stores: whoever reads the new fields also sees seq 0 (or the new seq) after. */
    __atomic_store_n(&proc->pending.seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&proc->pending.dev, dev, __ATOMIC_RELEASE);
    __atomic_store_n(&proc->pending.delta, delta, __ATOMIC_RELEASE);
    __atomic_store_n(&proc->pending.seq, seq, __ATOMIC_RELEASE);
}

static void disarm(region_proc_t *proc)
{
    __atomic_store_n(&proc->pending.seq, 0, __ATOMIC_RELEASE);
}

/* Reads slot's pending operation if it is operation seq; returns 0 when it is not (anymore). */
static int read_pending(region_proc_t *proc, uint64_t seq, unsigned *dev, int64_t *delta)
{
    if (__atomic_load_n(&proc->pending.seq, __ATOMIC_ACQUIRE) != seq)
        return 0;
    /* Acquire loads keep the second read of seq after the fields (no fence: ThreadSanitizer
     * understands these). */
    *dev = __atomic_load_n(&proc->pending.dev, __ATOMIC_ACQUIRE);
    *delta = __atomic_load_n(&proc->pending.delta, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&proc->pending.seq, __ATOMIC_RELAXED) == seq;
}

/* Reads a 128-bit word without a locked instruction. It may be torn; callers only use it as
 * the expected value of a compare-and-swap, which then fails and returns the true value, or
 * (help) act on a tag that really was in the word, whose operation did complete. */
static u128 peek128(const u128 *p)
{
    const uint64_t *half = (const uint64_t *)p;
    uint64_t low = __atomic_load_n(&half[0], __ATOMIC_ACQUIRE);
    uint64_t high = __atomic_load_n(&half[1], __ATOMIC_ACQUIRE);
    return make128(low, high);
}

/* Applies operation seq of slot to its record on dev, once, whoever gets there first (giving up
 * after tries attempts: only a process rewriting the record in a loop makes that happen). */
static void apply(region_proc_t *proc, uint64_t seq, unsigned dev, int64_t delta, unsigned tries)
{
    for (unsigned i = 0; i < tries; i++) {
        u128 r = load128(&proc->used[dev]);
        if ((high64(r) & SEQ_MASK) >= seq)
            return;
        if (cas128(&proc->used[dev], r, make128(low64(r) + (uint64_t)delta, seq)))
            return;
    }
}

/* Makes sure the operation that wrote device word g is in its process's record. An operation is
 * still announced when its device word is visible: its owner disarms only after applying it. */
static void help(region_layout_t *map, unsigned dev, u128 g, unsigned tries)
{
    uint64_t tag = high64(g);
    if (tag == 0)
        return;
    int slot = (int)(tag >> SEQ_BITS) - 1;
    uint64_t seq = tag & SEQ_MASK;
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS)
        return;
    region_proc_t *proc = &map->procs[slot];
    unsigned pdev;
    int64_t delta;
    if (read_pending(proc, seq, &pdev, &delta) && pdev == dev)
        apply(proc, seq, dev, delta, tries);
}

static void raise_peak(region_layout_t *map, unsigned dev, uint64_t used)
{
    uint64_t peak = LOAD(&map->peak[dev]);
    for (unsigned i = 0; used > peak && i < CAS_TRIES; i++) {
        if (__atomic_compare_exchange_n(&map->peak[dev], &peak, used, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return;
    }
}

/* Runs one operation of slot: delta bytes on dev, refused (GS_ELIMIT) when an increase would
 * pass the limit, or given up (GS_EAGAIN, nothing changed) after tries lost compare-and-swaps.
 * The caller owns slot's pending operation (one at a time), so until the operation is published
 * nobody else writes the record's word for dev. */
static int run_op(region_layout_t *map, int slot, unsigned dev, int64_t delta, unsigned tries)
{
    region_proc_t *proc = &map->procs[slot];
    /* 2^48 operations per slot (a million a second for nine years) before the sequence would
     * wrap; 0 is never used, it means "no operation". */
    uint64_t seq = (proc->seq + 1) & SEQ_MASK;
    if (seq == 0)
        seq = 1;
    STORE(&proc->seq, seq);
    u128 mine = peek128(&proc->used[dev]);
    arm(proc, seq, dev, delta);
    uint64_t limit = map->limit[dev];
    u128 g = peek128(&map->device[dev]), next;
    for (unsigned i = 0;; i++) {
        if (i == tries) {
            disarm(proc);
            return GS_EAGAIN;
        }
        help(map, dev, g, tries);
        uint64_t used = low64(g);
        if (delta > 0 && limit != 0 &&
            ((uint64_t)delta > limit || used > limit - (uint64_t)delta)) {
            disarm(proc);
            return GS_ELIMIT;
        }
        next = make128(used + (uint64_t)delta, tag_of(slot, seq));
        u128 seen = __sync_val_compare_and_swap(&map->device[dev], g, next);
        if (seen == g)
            break;
        g = seen;
    }
    /* Published; apply it to our record unless a helper already has. */
    cas128(&proc->used[dev], mine, make128(low64(mine) + (uint64_t)delta, seq));
    disarm(proc);
    if (delta > 0)
        raise_peak(map, dev, low64(next));
    return 0;
}

/* Records this process's start time in its record (once): the fallback identity for when its
 * liveness lock is gone (a process that closed all its descriptors). */
static void note_start_time(gs_region_t *region, int slot)
{
    uint64_t start = 0;
    gs_proc_alive(getpid(), &start);
    if (start > 1)
        STORE(&region->map->procs[slot].start_time, start);
    region->start_known = 1;
}

/* Counts one more in a counter of this process's own record, with region->ops held: only its
 * owner writes it while it lives (its reaper after), so a store does, not a locked addition. */
static void count(uint64_t *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

int gs_region_reserve(gs_region_t *region, int slot, unsigned dev, uint64_t bytes)
{
    region_layout_t *map = region->map;
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS || dev >= GS_MAX_DEVICES)
        return GS_EINVAL;
    gs_spin_lock(&region->ops);
    if (!region->start_known && slot == region->owned_slot)
        note_start_time(region, slot);
    /* Only the record this process attached (a thread racing the exit-time detach finds it
     * gone). No device holds 8 EiB: such a request is simply more than the lease has. */
    int result = slot != region->owned_slot    ? GS_EINVAL
                 : bytes > (uint64_t)INT64_MAX ? GS_ELIMIT
                                               : run_op(map, slot, dev, (int64_t)bytes, CAS_TRIES);
    if (result == 0)
        count(&map->procs[slot].allocs);
    gs_spin_unlock(&region->ops);
    /* At the limit, charge held by dead processes may be what is missing. */
    if (result == GS_ELIMIT && bytes <= (uint64_t)INT64_MAX &&
        gs_region_reap_if_due(region, 50) > 0) {
        gs_spin_lock(&region->ops);
        result = slot == region->owned_slot ? run_op(map, slot, dev, (int64_t)bytes, CAS_TRIES)
                                            : GS_EINVAL;
        if (result == 0)
            count(&map->procs[slot].allocs);
        gs_spin_unlock(&region->ops);
    }
    if (result == GS_ELIMIT)
        ADD(&map->procs[slot].ooms, 1);
    return result;
}

void gs_region_release(gs_region_t *region, int slot, unsigned dev, uint64_t bytes, int is_free)
{
    region_layout_t *map = region->map;
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS || dev >= GS_MAX_DEVICES)
        return;
    region_proc_t *proc = &map->procs[slot];
    gs_spin_lock(&region->ops);
    uint64_t held = slot == region->owned_slot ? low64(peek128(&proc->used[dev])) : 0;
    uint64_t take = bytes < held ? bytes : held;
    if (take > (uint64_t)INT64_MAX)
        take = (uint64_t)INT64_MAX; /* only a rewritten record holds that much */
    if (take > 0)
        run_op(map, slot, dev, -(int64_t)take, CAS_TRIES);
    if (is_free && slot == region->owned_slot)
        count(&proc->frees);
    gs_spin_unlock(&region->ops);
}

void gs_region_count_oom(gs_region_t *region, int slot)
{
    if (slot >= 0 && slot < GS_REGION_MAX_PROCS)
        ADD(&region->map->procs[slot].ooms, 1);
}

int gs__region_drain(region_layout_t *map, int slot, unsigned tries, uint64_t *bytes)
{
    region_proc_t *proc = &map->procs[slot];
    /* First every operation of this slot that reached a device word is put in its record. */
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
        help(map, d, load128(&map->device[d]), tries);
    int result = 0;
    *bytes = 0;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        uint64_t held = low64(load128(&proc->used[d]));
        if (held > (uint64_t)INT64_MAX)
            held = (uint64_t)INT64_MAX; /* only a rewritten record holds that much */
        int step = held > 0 ? run_op(map, slot, d, -(int64_t)held, tries) : 0;
        if (step == 0)
            *bytes += held;
        else
            result = GS_EAGAIN;
    }
    disarm(proc);
    return result;
}

void gs__region_free_slot(region_layout_t *map, int slot, uint64_t reaper)
{
    region_proc_t *proc = &map->procs[slot];
    ADD(&map->retired_allocs, LOAD(&proc->allocs));
    ADD(&map->retired_frees, LOAD(&proc->frees));
    ADD(&map->retired_ooms, LOAD(&proc->ooms));
    STORE(&proc->allocs, 0);
    STORE(&proc->frees, 0);
    STORE(&proc->ooms, 0);
    STORE(&proc->start_time, 0);
    /* The record is free once pid is 0; only then is the claim given up, so no second reaper
     * can take a slot that is half freed. (A new owner may attach first: it ignores reaper.) */
    STORE(&proc->pid, 0);
    if (reaper != 0)
        __atomic_compare_exchange_n(&proc->reaper, &reaper, 0, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    region_uncount(map);
}
