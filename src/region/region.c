/* The lease accounting region: layout, creation, process records, reserve/release, reaping. */
#include "gpushare/region.h"
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

#define REGION_MAGIC   "GSREGION"
#define REGION_VERSION 2u
#define LOCK_TIMEOUT_S 2

/* Fields marked "lock" change only under the region lock; every field is read with atomic loads
 * so lock-free readers (cuMemGetInfo, the daemon) never see torn values. */
typedef struct region_proc {
    int32_t pid; /* 0 = free; claimed by CAS */
    uint32_t pad;
    uint64_t start_time;           /* 0 while the owner is still filling the record */
    uint64_t used[GS_MAX_DEVICES]; /* lock */
} region_proc_t;

typedef struct region_layout {
    char magic[8];
    uint32_t version;
    uint32_t compute_share;
    uint32_t attached; /* upper bound of process records in use (0: none, nothing to scan) */
    uint32_t reserved;
    uint64_t size;
    pthread_mutex_t lock;
    uint64_t limit[GS_MAX_DEVICES];
    uint64_t used[GS_MAX_DEVICES]; /* lock */
    uint64_t peak[GS_MAX_DEVICES]; /* lock */
    uint64_t oom_events;
    uint64_t alloc_count;
    uint64_t free_count;
    uint64_t reclaimed_bytes; /* lock */
    int64_t last_reap_ns;
    char lease_id[GS_REGION_LEASE_MAX];
    region_proc_t procs[GS_REGION_MAX_PROCS];
} region_layout_t;

struct gs_region {
    region_layout_t *map;
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
    if (*p == 'Z' || *p == 'X')
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

static void init_layout(region_layout_t *map, const gs_region_config_t *cfg, int shared_file)
{
    (void)shared_file;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&map->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    memcpy(map->limit, cfg->limit, sizeof(map->limit));
    map->compute_share = cfg->compute_share;
    snprintf(map->lease_id, sizeof(map->lease_id), "%s", cfg->lease_id);
    map->size = sizeof(region_layout_t);
    map->version = REGION_VERSION;
    memcpy(map->magic, REGION_MAGIC, sizeof(map->magic));
}

static int wrap(region_layout_t *map, gs_region_t **out)
{
    gs_region_t *region = malloc(sizeof(*region));
    if (region == NULL) {
        munmap(map, sizeof(*map));
        return GS_ENOMEM;
    }
    region->map = map;
    *out = region;
    return 0;
}

static int map_file(int fd, region_layout_t **map)
{
    void *p = mmap(NULL, sizeof(region_layout_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    *map = p;
    return 0;
}

int gs_region_create(const char *path, const gs_region_config_t *cfg, mode_t mode,
                     gs_region_t **out)
{
    char tmp[4200];
    int n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return GS_ERANGE;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    region_layout_t *map = NULL;
    int result = 0;
    if (fchmod(fd, mode) != 0 || ftruncate(fd, sizeof(region_layout_t)) != 0) {
        result = -errno;
        goto out;
    }
    result = map_file(fd, &map);
    if (result != 0)
        goto out;
    init_layout(map, cfg, 1);
    /* link() publishes the finished file atomically and fails if another process won. */
    if (link(tmp, path) != 0)
        result = -errno;
out:
    unlink(tmp);
    close(fd);
    if (result == 0)
        return wrap(map, out);
    if (map != NULL)
        munmap(map, sizeof(*map));
    return result;
}

int gs_region_open(const char *path, gs_region_t **out)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    region_layout_t *map = NULL;
    int result = fstat(fd, &st) == 0 ? 0 : -errno;
    if (result == 0 && (size_t)st.st_size != sizeof(region_layout_t))
        result = GS_EVERSION;
    if (result == 0)
        result = map_file(fd, &map);
    close(fd);
    if (result != 0)
        return result;
    if (memcmp(map->magic, REGION_MAGIC, sizeof(map->magic)) != 0 ||
        map->version != REGION_VERSION || map->size != sizeof(region_layout_t)) {
        munmap(map, sizeof(*map));
        return GS_EVERSION;
    }
    return wrap(map, out);
}

int gs_region_open_or_create(const char *path, const gs_region_config_t *cfg, gs_region_t **out,
                             int *created)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        int result = gs_region_open(path, out);
        if (result != GS_ENOENT) {
            if (created != NULL)
                *created = 0;
            return result;
        }
        result = gs_region_create(path, cfg, 0600, out);
        if (result != GS_EEXIST) {
            if (created != NULL)
                *created = result == 0;
            return result;
        }
    }
    return GS_EAGAIN;
}

int gs_region_create_private(const gs_region_config_t *cfg, gs_region_t **out)
{
    void *p = mmap(NULL, sizeof(region_layout_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    init_layout(p, cfg, 0);
    return wrap(p, out);
}

void gs_region_close(gs_region_t *region)
{
    if (region == NULL)
        return;
    munmap(region->map, sizeof(*region->map));
    free(region);
}

/* After an owner died inside the lock, the per-process records are the truth. */
static void repair_locked(region_layout_t *map)
{
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        uint64_t sum = 0;
        for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
            if (LOAD(&map->procs[i].pid) != 0)
                sum += LOAD(&map->procs[i].used[d]);
        }
        STORE(&map->used[d], sum);
    }
}

static int lock_region(region_layout_t *map)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += LOCK_TIMEOUT_S;
    int rc = pthread_mutex_timedlock(&map->lock, &deadline);
    if (rc == EOWNERDEAD) {
        repair_locked(map);
        pthread_mutex_consistent(&map->lock);
        rc = 0;
    }
    return rc == 0 ? 0 : (rc == ETIMEDOUT ? GS_ETIMEDOUT : -rc);
}

static void unlock_region(region_layout_t *map)
{
    pthread_mutex_unlock(&map->lock);
}

/* One record fewer in use; never below zero. */
static void uncount(region_layout_t *map)
{
    uint32_t n = LOAD(&map->attached);
    while (n > 0 && !__atomic_compare_exchange_n(&map->attached, &n, n - 1, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
    }
}

uint32_t gs_region_attached(const gs_region_t *region)
{
    return LOAD(&region->map->attached);
}

int gs_region_attach(gs_region_t *region, int *slot)
{
    region_layout_t *map = region->map;
    pid_t pid = getpid();
    uint64_t start = 0;
    gs_proc_alive(pid, &start);
    if (start == 0)
        start = 1; /* never 0: 0 marks a record being filled */
    int first = (int)((unsigned)pid % GS_REGION_MAX_PROCS);
    /* Counted before the record is claimed: a process dying in between leaves the count too
     * high (scans still happen), never too low. */
    __atomic_fetch_add(&map->attached, 1, __ATOMIC_ACQ_REL);
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < GS_REGION_MAX_PROCS; k++) {
            int i = (first + k) % GS_REGION_MAX_PROCS;
            region_proc_t *proc = &map->procs[i];
            int32_t expected = 0;
            if (LOAD(&proc->pid) != 0 ||
                !__atomic_compare_exchange_n(&proc->pid, &expected, (int32_t)pid, 0,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                continue;
            for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
                STORE(&proc->used[d], 0);
            STORE(&proc->start_time, start);
            *slot = i;
            return 0;
        }
        gs_region_reap(region); /* full: make room from the dead, then try once more */
    }
    uncount(map);
    return GS_ENOSPC;
}

/* Takes back slot's charge and frees the record; call with the lock held. Returns the bytes. */
static uint64_t clear_slot_locked(region_layout_t *map, int slot)
{
    region_proc_t *proc = &map->procs[slot];
    if (LOAD(&proc->pid) != 0)
        uncount(map);
    uint64_t total = 0;
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        uint64_t held = LOAD(&proc->used[d]);
        uint64_t used = LOAD(&map->used[d]);
        STORE(&map->used[d], used - (held < used ? held : used));
        STORE(&proc->used[d], 0);
        total += held;
    }
    STORE(&proc->start_time, 0);
    STORE(&proc->pid, 0);
    return total;
}

void gs_region_detach(gs_region_t *region, int slot)
{
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS)
        return;
    if (lock_region(region->map) != 0)
        return;
    clear_slot_locked(region->map, slot);
    unlock_region(region->map);
}

int gs_region_reap(gs_region_t *region)
{
    region_layout_t *map = region->map;
    int reaped = 0;
    if (LOAD(&map->attached) == 0)
        return 0; /* no record: do not touch (and fault in) the process table */
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        region_proc_t *proc = &map->procs[i];
        int32_t pid = LOAD(&proc->pid);
        if (pid == 0)
            continue;
        uint64_t recorded = LOAD(&proc->start_time), actual = 0;
        int alive = gs_proc_alive(pid, &actual);
        /* Alive with the recorded start time: the same process. A record still being filled (0)
         * or made without a readable start time (1) is trusted while its pid lives. */
        if (alive && (recorded <= 1 || actual == 0 || actual == recorded))
            continue;
        if (lock_region(map) != 0)
            return reaped;
        /* The liveness check ran without the lock: reclaim only the identity we judged. */
        if (LOAD(&proc->pid) == pid && LOAD(&proc->start_time) == recorded) {
            uint64_t bytes = clear_slot_locked(map, i);
            STORE(&map->reclaimed_bytes, LOAD(&map->reclaimed_bytes) + bytes);
            reaped++;
        }
        unlock_region(map);
    }
    return reaped;
}

int gs_region_reap_if_due(gs_region_t *region, unsigned interval_ms)
{
    region_layout_t *map = region->map;
    int64_t now = now_ns();
    int64_t last = LOAD(&map->last_reap_ns);
    if (now - last < (int64_t)interval_ms * 1000000)
        return 0;
    if (!__atomic_compare_exchange_n(&map->last_reap_ns, &last, now, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return 0;
    return gs_region_reap(region);
}

/* Charges bytes if they fit; call with the lock held. Returns 0 or GS_ELIMIT. */
static int charge_locked(region_layout_t *map, int slot, unsigned dev, uint64_t bytes)
{
    uint64_t limit = map->limit[dev];
    uint64_t used = LOAD(&map->used[dev]);
    if (limit != 0 && (bytes > limit || used > limit - bytes))
        return GS_ELIMIT;
    STORE(&map->used[dev], used + bytes);
    STORE(&map->procs[slot].used[dev], LOAD(&map->procs[slot].used[dev]) + bytes);
    if (used + bytes > LOAD(&map->peak[dev]))
        STORE(&map->peak[dev], used + bytes);
    return 0;
}

int gs_region_reserve(gs_region_t *region, int slot, unsigned dev, uint64_t bytes)
{
    region_layout_t *map = region->map;
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS || dev >= GS_MAX_DEVICES)
        return GS_EINVAL;
    int result = lock_region(map);
    if (result != 0)
        return result;
    result = charge_locked(map, slot, dev, bytes);
    unlock_region(map);
    /* At the limit, charge held by dead processes may be what is missing. */
    if (result == GS_ELIMIT && gs_region_reap_if_due(region, 50) > 0) {
        result = lock_region(map);
        if (result == 0) {
            result = charge_locked(map, slot, dev, bytes);
            unlock_region(map);
        }
    }
    if (result == 0)
        __atomic_fetch_add(&map->alloc_count, 1, __ATOMIC_RELAXED);
    else if (result == GS_ELIMIT)
        __atomic_fetch_add(&map->oom_events, 1, __ATOMIC_RELAXED);
    return result;
}

void gs_region_release(gs_region_t *region, int slot, unsigned dev, uint64_t bytes, int is_free)
{
    region_layout_t *map = region->map;
    if (slot < 0 || slot >= GS_REGION_MAX_PROCS || dev >= GS_MAX_DEVICES)
        return;
    if (lock_region(map) != 0)
        return;
    region_proc_t *proc = &map->procs[slot];
    uint64_t held = LOAD(&proc->used[dev]);
    uint64_t take = bytes < held ? bytes : held;
    uint64_t used = LOAD(&map->used[dev]);
    STORE(&proc->used[dev], held - take);
    STORE(&map->used[dev], used - (take < used ? take : used));
    unlock_region(map);
    if (is_free)
        __atomic_fetch_add(&map->free_count, 1, __ATOMIC_RELAXED);
}

void gs_region_count_oom(gs_region_t *region)
{
    __atomic_fetch_add(&region->map->oom_events, 1, __ATOMIC_RELAXED);
}

uint64_t gs_region_limit(const gs_region_t *region, unsigned dev)
{
    return dev < GS_MAX_DEVICES ? region->map->limit[dev] : 0;
}

uint64_t gs_region_used(const gs_region_t *region, unsigned dev)
{
    return dev < GS_MAX_DEVICES ? LOAD(&region->map->used[dev]) : 0;
}

uint32_t gs_region_compute_share(const gs_region_t *region)
{
    return region->map->compute_share;
}

int gs_region_snapshot(gs_region_t *region, gs_region_stats_t *stats)
{
    region_layout_t *map = region->map;
    int result = lock_region(map);
    if (result != 0)
        return result;
    memset(stats, 0, sizeof(*stats));
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        stats->limit[d] = map->limit[d];
        stats->used[d] = LOAD(&map->used[d]);
        stats->peak[d] = LOAD(&map->peak[d]);
    }
    stats->reclaimed_bytes = LOAD(&map->reclaimed_bytes);
    for (int i = 0; LOAD(&map->attached) != 0 && i < GS_REGION_MAX_PROCS; i++)
        stats->n_procs += LOAD(&map->procs[i].pid) != 0;
    unlock_region(map);
    stats->oom_events = LOAD(&map->oom_events);
    stats->alloc_count = LOAD(&map->alloc_count);
    stats->free_count = LOAD(&map->free_count);
    stats->compute_share = map->compute_share;
    memcpy(stats->lease_id, map->lease_id, sizeof(stats->lease_id));
    return 0;
}

int gs_region_processes(gs_region_t *region, gs_region_process_t *out, int max)
{
    region_layout_t *map = region->map;
    int n = 0;
    if (LOAD(&map->attached) == 0 || lock_region(map) != 0)
        return 0;
    for (int i = 0; i < GS_REGION_MAX_PROCS && n < max; i++) {
        region_proc_t *proc = &map->procs[i];
        if (LOAD(&proc->pid) == 0)
            continue;
        out[n].pid = LOAD(&proc->pid);
        out[n].start_time = LOAD(&proc->start_time);
        for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
            out[n].used[d] = LOAD(&proc->used[d]);
        n++;
    }
    unlock_region(map);
    return n;
}
