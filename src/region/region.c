/* SPDX-License-Identifier: Apache-2.0 */
/* The lease accounting region: process records, liveness, reaping, snapshots, compute pause. */
#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region_internal.h"

/* A coarse clock (a few ms of resolution, no system call) is plenty for reaping intervals. */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A zombie thread-group leader whose other threads still run is a live process: its status
 * counts more than one thread. */
size_t gs_proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

static int zombie_has_threads(pid_t pid)
{
    char buf[2048];
    if (gs_proc_read(pid, "status", buf, sizeof(buf)) == 0)
        return 0;
    const char *threads = strstr(buf, "\nThreads:");
    return threads != NULL && strtol(threads + 9, NULL, 10) > 1;
}

int gs_proc_alive(pid_t pid, uint64_t *start_time)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : 1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields restart after the last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return 1;
    p += 2;
    if (*p == 'X' || (*p == 'Z' && !zombie_has_threads(pid)))
        return 0;
    for (int field = 3; field < 22 && p != NULL; field++) {
        p = strchr(p, ' ');
        if (p != NULL)
            p++;
    }
    if (p == NULL)
        return 1;
    *start_time = strtoull(p, NULL, 10);
    return 1;
}

/* Takes (or, with unlock, drops) the liveness lock of record i. Returns 0 or -errno. */
static int slot_lock(const gs_region_t *region, int i, int unlock)
{
    struct flock fl = {.l_type = unlock ? F_UNLCK : F_WRLCK,
                       .l_whence = SEEK_SET,
                       .l_start = SLOT_LOCK_BASE + i,
                       .l_len = 1};
    return fcntl(region->fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

/* Fills record i, just claimed by the calling process (its liveness lock already taken). */
static void take_record(gs_region_t *region, int i)
{
    region_proc_t *proc = &region->map->procs[i];
    /* With a liveness lock the start time (a /proc read, the slowest part of attaching) is
     * only a fallback: it is filled in at the first reservation (1 = not known yet). */
    uint64_t start = 1;
    region->start_known = region->fd < 0;
    if (region->fd < 0) {
        gs_proc_alive(getpid(), &start);
        if (start == 0)
            start = 1; /* never 0: 0 marks a record being filled */
    }
    /* used[] is already 0 bytes (the record was drained before it was freed); its applied
     * sequence numbers stay, as the slot's sequence carries on. */
    ADD(&proc->generation, 1);
    STORE(&proc->locked, region->fd >= 0);
    STORE(&proc->allocs, 0);
    STORE(&proc->frees, 0);
    STORE(&proc->ooms, 0);
    STORE(&proc->start_time, start);
}

/* Claims free record i for pid: its liveness lock first (held: its previous owner is between
 * freeing it and unlocking, or another process is claiming it), then the record itself. So a
 * record in use whose lock nobody holds has an owner that died or closed its descriptors. */
static int claim_record(gs_region_t *region, int i, int32_t pid)
{
    region_proc_t *proc = &region->map->procs[i];
    if (LOAD(&proc->pid) != 0 || (region->fd >= 0 && slot_lock(region, i, 0) != 0))
        return 0;
    int32_t expected = 0;
    if (__atomic_compare_exchange_n(&proc->pid, &expected, pid, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return 1;
    if (region->fd >= 0)
        slot_lock(region, i, 1);
    return 0;
}

int gs_region_attach(gs_region_t *region, int *slot)
{
    region_layout_t *map = region->map;
    pid_t pid = getpid();
    int first = (int)((unsigned)pid % GS_REGION_MAX_PROCS);
    /* Counted before a record is claimed: a process dying in between leaves the count too high
     * (scans still happen), never too low. */
    ADD(&map->attached, 1);
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < GS_REGION_MAX_PROCS; k++) {
            int i = (first + k) % GS_REGION_MAX_PROCS;
            if (!claim_record(region, i, (int32_t)pid))
                continue;
            take_record(region, i);
            gs_spin_lock(&region->ops);
            region->owned_slot = i;
            gs_spin_unlock(&region->ops);
            *slot = i;
            return 0;
        }
        gs_region_reap(region); /* full: make room from the dead, then try once more */
    }
    region_uncount(map);
    return GS_ENOSPC;
}

void gs_region_detach(gs_region_t *region, int slot)
{
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS)
        return;
    gs_spin_lock(&region->ops);
    if (region->owned_slot == slot) {
        region->owned_slot = -1;
        uint64_t bytes;
        gs__region_drain(region->map, slot, CAS_TRIES, &bytes);
        gs__region_free_slot(region->map, slot, 0);
        /* Unlocked only once free: a reaper never sees this record unlocked while in use. */
        if (region->fd >= 0)
            slot_lock(region, slot, 1);
    }
    gs_spin_unlock(&region->ops);
}

/* Returns nonzero when record i's owner is gone. A held liveness lock means alive (it is taken
 * before the record is claimed). Otherwise (a process that closed its descriptors, or a record
 * that was rewritten) the pid decides: gone or a zombie, or now another process's (by start
 * time, once known). A record whose start time is not known yet (0 or 1) is trusted while its
 * pid lives. */
static int record_is_dead(const gs_region_t *region, int i, int32_t pid, uint64_t recorded)
{
    if (region->fd >= 0) {
        struct flock fl = {
            .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SLOT_LOCK_BASE + i, .l_len = 1};
        if (fcntl(region->fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
            return 0;
    }
    uint64_t actual = 0;
    if (!gs_proc_alive(pid, &actual))
        return 1;
    return recorded > 1 && actual != 0 && actual != recorded;
}

/* This process's reaper token: its pid and (the low half of) its start time, so a reaper that
 * died cannot be mistaken for a later process that got its pid. Never 0. */
static uint64_t my_token(void)
{
    uint64_t start = 0;
    pid_t pid = getpid();
    gs_proc_alive(pid, &start);
    return ((uint64_t)(uint32_t)pid << 32) | (start & 0xffffffffu) | 1u;
}

static int token_alive(uint64_t token)
{
    uint64_t start = 0;
    if (!gs_proc_alive((pid_t)(token >> 32), &start))
        return 0;
    return ((start & 0xffffffffu) | 1u) == (token & 0xffffffffu);
}

/* Takes the right to reclaim a dead slot: unclaimed, or claimed by a reaper that died itself.
 * Within a process the reap lock ensures only one thread ever holds a token's claims. */
static int claim_for_reaping(region_proc_t *proc, uint64_t me)
{
    uint64_t holder = LOAD(&proc->reaper);
    if (holder == me || (holder != 0 && token_alive(holder)))
        return 0;
    return __atomic_compare_exchange_n(&proc->reaper, &holder, me, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

/* Reclaims slot i if it still holds the identity judged dead; gives the claim up otherwise. */
static int reclaim(region_layout_t *map, int i, int32_t pid, uint64_t start, uint64_t gen,
                   uint64_t me)
{
    region_proc_t *proc = &map->procs[i];
    uint64_t bytes = 0;
    if (LOAD(&proc->pid) == pid && LOAD(&proc->start_time) == start &&
        LOAD(&proc->generation) == gen && gs__region_drain(map, i, CAS_TRIES_REAPER, &bytes) == 0) {
        ADD(&map->reclaimed_bytes, bytes);
        gs__region_free_slot(map, i, me);
        return 1;
    }
    ADD(&map->reclaimed_bytes, bytes); /* a partial drain is kept: the next pass finishes it */
    __atomic_compare_exchange_n(&proc->reaper, &me, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return 0;
}

/* Reaps from record *cursor on, one unit of *budget per record in use, until the budget or the
 * table ends (*cursor is then where to go on, or 0). */
static int reap_range(gs_region_t *region, unsigned *cursor, unsigned *budget)
{
    region_layout_t *map = region->map;
    if (!gs_spin_trylock(&region->reap))
        return 0; /* another thread of this process is reaping */
    int reaped = 0;
    uint64_t me = 0;
    unsigned i = *cursor < GS_REGION_MAX_PROCS ? *cursor : 0;
    for (; LOAD(&map->attached) != 0 && i<GS_REGION_MAX_PROCS && * budget> 0; i++) {
        region_proc_t *proc = &map->procs[i];
        int32_t pid = LOAD(&proc->pid);
        if (pid == 0 || (int)i == region->owned_slot)
            continue;
        (*budget)--;
        uint64_t gen = LOAD(&proc->generation);
        uint64_t start = LOAD(&proc->start_time);
        if (!record_is_dead(region, (int)i, pid, start))
            continue;
        if (me == 0)
            me = my_token();
        if (claim_for_reaping(proc, me))
            reaped += reclaim(map, (int)i, pid, start, gen, me);
    }
    *cursor = i < GS_REGION_MAX_PROCS && LOAD(&map->attached) != 0 ? i : 0;
    gs_spin_unlock(&region->reap);
    return reaped;
}

int gs_region_reap(gs_region_t *region)
{
    unsigned cursor = 0, budget = UINT32_MAX;
    return reap_range(region, &cursor, &budget);
}

int gs_region_reap_some(gs_region_t *region, unsigned *cursor, unsigned *budget)
{
    return reap_range(region, cursor, budget);
}

int gs_region_reap_if_due(gs_region_t *region, unsigned interval_ms)
{
    region_layout_t *map = region->map;
    int64_t now = now_ns();
    int64_t last = LOAD(&map->last_reap_ns);
    /* A stamp from the future (another boot or time namespace) counts as long ago. */
    if (last <= now && now - last < (int64_t)interval_ms * 1000000)
        return 0;
    if (!__atomic_compare_exchange_n(&map->last_reap_ns, &last, now, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 0;
    return gs_region_reap(region);
}

void gs_region_set_limit(gs_region_t *region, unsigned dev, uint64_t limit)
{
    if (dev < GS_MAX_DEVICES)
        __atomic_store_n(&region->map->limit[dev], limit, __ATOMIC_RELEASE);
}

uint64_t gs_region_limit(const gs_region_t *region, unsigned dev)
{
    return dev < GS_MAX_DEVICES ? region->map->limit[dev] : 0;
}

uint64_t gs_region_used(const gs_region_t *region, unsigned dev)
{
    return dev < GS_MAX_DEVICES ? low64(load128(&region->map->device[dev])) : 0;
}

uint32_t gs_region_attached(const gs_region_t *region)
{
    return LOAD(&region->map->attached);
}

#define FOOTPRINT_PAGE  12 /* bytes are kept in 4 KiB units */
#define FOOTPRINT_SHIFT 40 /* the key's bits above them */
#define FOOTPRINT_KEY   UINT64_C(0xffffff)

static uint64_t footprint_key(uint64_t key)
{
    key &= FOOTPRINT_KEY;
    return key != 0 ? key : 1; /* a word of 0 is no figure */
}

uint64_t gs_region_footprint(const gs_region_t *region, uint64_t key)
{
    uint64_t want = footprint_key(key);
    for (unsigned i = 0; i < GS_REGION_FOOTPRINTS; i++) {
        uint64_t word = __atomic_load_n(&region->map->footprint[i], __ATOMIC_ACQUIRE);
        if (word >> FOOTPRINT_SHIFT == want)
            return (word & ((UINT64_C(1) << FOOTPRINT_SHIFT) - 1)) << FOOTPRINT_PAGE;
    }
    return 0;
}

void gs_region_set_footprint(gs_region_t *region, uint64_t key, uint64_t bytes)
{
    uint64_t pages = bytes >> FOOTPRINT_PAGE, k = footprint_key(key);
    if (bytes == 0 || bytes % (UINT64_C(1) << FOOTPRINT_PAGE) != 0 || pages >> FOOTPRINT_SHIFT != 0)
        return;
    /* The entry of the same key, else a free one, else the one the key's low bit names. */
    unsigned slot = (unsigned)(k % GS_REGION_FOOTPRINTS);
    for (unsigned i = GS_REGION_FOOTPRINTS; i-- > 0;) {
        uint64_t word = __atomic_load_n(&region->map->footprint[i], __ATOMIC_RELAXED);
        if (word == 0 || word >> FOOTPRINT_SHIFT == k)
            slot = i;
        if (word >> FOOTPRINT_SHIFT == k)
            break;
    }
    __atomic_store_n(&region->map->footprint[slot], k << FOOTPRINT_SHIFT | pages, __ATOMIC_RELEASE);
}

uint32_t gs_region_compute_share(const gs_region_t *region)
{
    return region->map->compute_share;
}

int gs_region_snapshot(gs_region_t *region, gs_region_stats_t *stats)
{
    region_layout_t *map = region->map;
    memset(stats, 0, sizeof(*stats));
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        stats->limit[d] = map->limit[d];
        stats->used[d] = low64(load128(&map->device[d]));
        stats->peak[d] = LOAD(&map->peak[d]);
    }
    stats->reclaimed_bytes = LOAD(&map->reclaimed_bytes);
    stats->alloc_count = LOAD(&map->retired_allocs);
    stats->free_count = LOAD(&map->retired_frees);
    stats->oom_events = LOAD(&map->retired_ooms);
    /* With no record in use the process table is not read (nor faulted in). */
    for (int i = 0; LOAD(&map->attached) != 0 && i < GS_REGION_MAX_PROCS; i++) {
        region_proc_t *proc = &map->procs[i];
        if (LOAD(&proc->pid) == 0)
            continue;
        stats->n_procs++;
        stats->alloc_count += LOAD(&proc->allocs);
        stats->free_count += LOAD(&proc->frees);
        stats->oom_events += LOAD(&proc->ooms);
    }
    stats->compute_share = map->compute_share;
    memcpy(stats->lease_id, map->lease_id, sizeof(stats->lease_id));
    stats->lease_id[sizeof(stats->lease_id) - 1] = '\0'; /* the region may hold anything */
    return 0;
}

int gs_region_processes(gs_region_t *region, gs_region_process_t *out, int max)
{
    region_layout_t *map = region->map;
    int n = 0;
    for (int i = 0; LOAD(&map->attached) != 0 && i < GS_REGION_MAX_PROCS && n < max; i++) {
        region_proc_t *proc = &map->procs[i];
        int32_t pid = LOAD(&proc->pid);
        if (pid == 0)
            continue;
        out[n].pid = pid;
        out[n].start_time = LOAD(&proc->start_time);
        for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
            out[n].used[d] = low64(load128(&proc->used[d]));
        n++;
    }
    return n;
}
