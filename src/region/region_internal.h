/* SPDX-License-Identifier: Apache-2.0 */
/* The region's private header: the shared layout and the 128-bit atomics its accounting uses.
 *
 * Accounting is lock-free and exact. Each device has one 128-bit word: the lease's use in bytes
 * and a tag naming the operation that last changed it (process slot + that slot's operation
 * sequence number). Each process record keeps, per device, a 128-bit word: its own use and the
 * sequence number of its last operation applied there. An operation is announced in the
 * record ("pending"), made visible with one compare-and-swap of the device word, then applied to
 * the record. Before anyone replaces a device word, it first applies the operation that wrote it
 * to that process's record ("helping"). So every operation that reached the device word is, or
 * will be, in exactly one record, whatever instant a process dies at; a dead process's record is
 * then exact and its use is given back by operations run on its behalf.
 *
 * Liveness: a process holds an OFD lock on its record's byte of the region file (one fcntl at
 * attach); the kernel drops it when the process is gone, so another process tells a dead record
 * with one F_OFD_GETLK, and a reused pid cannot fool it. Records of a private region (no file)
 * fall back to pid + start time read from /proc. A process takes its record's lock before it
 * claims the record, so a record in use whose lock nobody holds belongs to a process that died or
 * closed its descriptors.
 *
 * Membership: every process that maps a region as one of the lease's processes holds a shared
 * OFD lock on one more byte (MEMBER_LOCK), taken through the open file description its mapping
 * was made through. A mapping keeps that description (and so the lock) alive until it is
 * unmapped, whatever descriptors the process closes, and a forked child that inherits the
 * mapping keeps it too: the lock is held exactly while some process maps the region. The daemon
 * asks the kernel about it (gs_region_in_use) and never believes the region's content for it.
 *
 * Everything in the shared layout may have been written by a hostile process of the lease:
 * readers bound every loop (records, retries of a compare-and-swap) and never index with a value
 * read from it unchecked. */
#ifndef GS_REGION_INTERNAL_H
#define GS_REGION_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "gpushare/region.h"
#include "gpushare/spinlock.h"

#define REGION_MAGIC   "GSREGION"
#define REGION_VERSION 8u

typedef unsigned __int128 u128;

#define SEQ_BITS 48
#define SEQ_MASK ((UINT64_C(1) << SEQ_BITS) - 1)

/* An operation a process has in flight (a seqlock: seq 0 while it is being rewritten). */
typedef struct region_pending {
    uint64_t seq; /* the operation's sequence number, 0 = none */
    uint32_t dev;
    uint32_t pad;
    int64_t delta; /* bytes added (allocation) or removed (free) */
} region_pending_t;

typedef struct region_proc {
    u128 used[GS_MAX_DEVICES]; /* low: bytes held; high: seq of the last op applied */
    region_pending_t pending;
    uint64_t seq;        /* last sequence number used by this slot (kept across owners) */
    int32_t pid;         /* 0 = free; claimed by CAS */
    int32_t locked;      /* the owner holds an OFD lock on the slot's byte of the region file */
    uint64_t generation; /* bumped by every attach: tells one owner of the slot from the next */
    uint64_t reaper;     /* token of the process reclaiming this dead slot, 0 = none */
    uint64_t start_time; /* 0 while the owner is still filling the record */
    uint64_t allocs;     /* written by the owner */
    uint64_t frees;
    uint64_t ooms;
} __attribute__((aligned(64))) region_proc_t;

typedef struct region_layout {
    char magic[8];
    uint32_t version;
    uint32_t compute_share;
    uint64_t size;
    uint32_t attached; /* upper bound of records in use: 0 = none, nothing to scan */
    uint32_t reserved;
    uint64_t limit[GS_MAX_DEVICES];
    char lease_id[GS_REGION_LEASE_MAX];
    u128 device[GS_MAX_DEVICES] __attribute__((aligned(64))); /* low: used; high: tag */
    uint64_t peak[GS_MAX_DEVICES] __attribute__((aligned(64)));
    uint64_t retired_allocs; /* counters of records already freed */
    uint64_t retired_frees;
    uint64_t retired_ooms;
    uint64_t reclaimed_bytes;
    int64_t last_reap_ns __attribute__((aligned(64)));
    /* Context footprints (gs_region_footprint): key << 40 | bytes / 4096, 0 = none. Once the
     * compute controller's words (zeroed by every version that had none). */
    uint64_t footprint[GS_REGION_FOOTPRINTS];
    region_proc_t procs[GS_REGION_MAX_PROCS];
} region_layout_t;

/* Liveness locks: one byte per record, far beyond the end of the file; the membership lock on
 * the byte before them. */
#define SLOT_LOCK_BASE (INT64_C(1) << 40)
#define MEMBER_LOCK    (SLOT_LOCK_BASE - 1)

/* How many times an operation retries a compare-and-swap that others keep winning before it
 * gives up: far more than honest contention ever needs (each failure is another process's
 * success), and a bound on what a process writing the region in a loop can make others spin.
 * A reaper, which may be the daemon, gives up much sooner and tries again at its next pass. */
#define CAS_TRIES        (1u << 20)
#define CAS_TRIES_REAPER 256u

struct gs_region {
    region_layout_t *map;
    int fd;             /* the region file (kept open for liveness locks), -1 for a private one */
    char *path;         /* to reopen it in a forked child (NULL for a private one) */
    gs_spinlock_t ops;  /* one operation at a time per process: a record has one pending slot */
    gs_spinlock_t reap; /* one reaping pass at a time per process */
    int owned_slot;     /* the record this process attached (under ops), -1 = none */
    int start_known;    /* the record's start time is filled in (under ops) */
    char lease_id[GS_REGION_LEASE_MAX]; /* a terminated copy (gs_region_lease_id) */
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ADD(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* 16-byte atomics (lock cmpxchg16b, -mcx16): no libatomic, so the shim stays libc-only. */
static inline u128 load128(u128 *p)
{
    return __sync_val_compare_and_swap(p, (u128)0, (u128)0);
}

static inline int cas128(u128 *p, u128 expected, u128 desired)
{
    return __sync_bool_compare_and_swap(p, expected, desired);
}

static inline uint64_t low64(u128 v)
{
    return (uint64_t)v;
}

static inline uint64_t high64(u128 v)
{
    return (uint64_t)(v >> 64);
}

static inline u128 make128(uint64_t low, uint64_t high)
{
    return ((u128)high << 64) | low;
}

/* One record fewer in use (never below zero). */
static inline void region_uncount(region_layout_t *map)
{
    uint32_t n = LOAD(&map->attached);
    for (unsigned tries = 0; n > 0 && tries < CAS_TRIES; tries++) {
        if (__atomic_compare_exchange_n(&map->attached, &n, n - 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return;
    }
}

/* Gives back everything slot holds on behalf of its owner (the owner leaving, or a reaper for a
 * dead owner; the caller has exclusive use of the slot's pending operation), retrying each
 * compare-and-swap at most tries times. Sets *bytes to what it gave back and returns 0, or
 * GS_EAGAIN when something is left (others kept winning): the record must stay as it is. Lock-free.
 * (account.c) */
int gs__region_drain(region_layout_t *map, int slot, unsigned tries, uint64_t *bytes);

/* Frees slot's record after gs__region_drain, folding its counters into the retired ones, then
 * gives up reaper's claim on it (0: the owner leaving). */
void gs__region_free_slot(region_layout_t *map, int slot, uint64_t reaper);

/* ---- asking gpushared over its socket (join.c; libc only) ---- */

/* "gpushared:ID:SOCKET" -> id and the socket path (pointing into spec). Returns 0 or
 * GS_EINVAL. */
int gs__daemon_spec(const char *spec, unsigned long long *id, const char **socket_path);

/* Sends request (one JSON line) to gpushared at socket_path and reads its one-line reply into
 * reply, with the descriptor passed with it in *passed (the caller closes it; -1 when none),
 * until deadline (CLOCK_MONOTONIC ms). Returns 0 for an "ok" reply; GS_EAGAIN when gpushared
 * cannot be reached or is busy; GS_ENOENT when it does not know the lease or the lease ends;
 * GS_EACCES for any other refusal; or -errno; err gets one line. */
int gs__daemon_ask(const char *socket_path, const char *request, char *reply, size_t replylen,
                   int *passed, char *err, size_t errlen, int64_t deadline);

/* gs__daemon_ask, tried again while gpushared is restarting (a few seconds at most); *passed
 * is -1 on failure. */
int gs__daemon_ask_retry(const char *socket_path, const char *request, char *reply, size_t replylen,
                         int *passed, char *err, size_t errlen);

#endif
