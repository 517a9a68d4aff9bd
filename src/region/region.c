/* The lease accounting region: layout, creation, process records, reserve/release, reaping. */
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
static int zombie_has_threads(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
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

static void init_layout(region_layout_t *map, const gs_region_config_t *cfg)
{
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++)
        map->limit[d] = cfg->limit[d];
    map->compute_share = cfg->compute_share;
    snprintf(map->lease_id, sizeof(map->lease_id), "%s", cfg->lease_id);
    map->size = sizeof(region_layout_t);
    map->version = REGION_VERSION;
    memcpy(map->magic, REGION_MAGIC, sizeof(map->magic));
}

/* Returns a new open file description of fd's file for the liveness locks, closing fd; on
 * failure (no /proc) returns fd itself. A mapping holds a reference to the description it was
 * made through, and a forked child inherits the mapping: locks taken through that description
 * would outlive a SIGKILLed parent for as long as any child lives. */
static int lock_description(int fd)
{
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    int own = open(self, O_RDWR | O_CLOEXEC);
    if (own < 0)
        return fd;
    close(fd);
    return own;
}

/* Wraps a mapping in a handle; takes ownership of fd (may be -1) whatever happens. */
static int wrap(region_layout_t *map, int fd, const char *path, gs_region_t **out)
{
    if (fd >= 0)
        fd = lock_description(fd);
    gs_region_t *region = calloc(1, sizeof(*region));
    char *copy = path != NULL ? strdup(path) : NULL;
    if (region == NULL || (path != NULL && copy == NULL)) {
        free(region);
        free(copy);
        if (fd >= 0)
            close(fd);
        munmap(map, sizeof(*map));
        return GS_ENOMEM;
    }
    region->map = map;
    region->fd = fd;
    region->path = copy;
    gs_spin_reset(&region->ops);
    gs_spin_reset(&region->reap);
    region->owned_slot = -1;
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

/* Opens an unnamed file in path's directory (O_TMPFILE) to be linked in once complete; falls
 * back to a named temporary (tmp holds its name) where the filesystem lacks O_TMPFILE. */
static int open_unnamed(const char *path, mode_t mode, char *tmp, size_t len)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    tmp[0] = '\0';
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd >= 0 ? fd : -errno;
    int n = snprintf(tmp, len, "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= len)
        return GS_ERANGE;
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, mode) != 0) {
        int result = -errno;
        close(fd);
        unlink(tmp);
        return result;
    }
    return fd;
}

/* Gives the finished file its name; fails with GS_EEXIST when another process won. */
static int publish(int fd, const char *tmp, const char *path)
{
    if (tmp[0] != '\0')
        return link(tmp, path) == 0 ? 0 : -errno;
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

int gs_region_create(const char *path, const gs_region_config_t *cfg, mode_t mode,
                     gs_region_t **out)
{
    char tmp[4200];
    int fd = open_unnamed(path, mode, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    region_layout_t *map = NULL;
    int result = 0;
    if (ftruncate(fd, sizeof(region_layout_t)) != 0) {
        result = -errno;
        goto out;
    }
    result = map_file(fd, &map);
    if (result != 0)
        goto out;
    init_layout(map, cfg);
    /* Linking publishes the finished file atomically and fails if another process won. */
    result = publish(fd, tmp, path);
out:
    if (tmp[0] != '\0')
        unlink(tmp);
    if (result == 0)
        return wrap(map, fd, path, out);
    close(fd);
    if (map != NULL)
        munmap(map, sizeof(*map));
    return result;
}

int gs_region_recycle(gs_region_t *region, const gs_region_config_t *cfg)
{
    region_layout_t *map = region->map;
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        if (LOAD(&map->procs[i].pid) != 0)
            return GS_EBUSY;
    }
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        if (low64(load128(&map->device[d])) != 0)
            return GS_EBUSY;
    }
    /* No record is in use: a count left high by a process that died while attaching is reset. */
    STORE(&map->attached, 0);
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        STORE(&map->peak[d], 0);
        map->limit[d] = cfg->limit[d];
    }
    STORE(&map->retired_allocs, 0);
    STORE(&map->retired_frees, 0);
    STORE(&map->retired_ooms, 0);
    STORE(&map->reclaimed_bytes, 0);
    STORE(&map->last_reap_ns, 0);
    map->compute_share = cfg->compute_share;
    snprintf(map->lease_id, sizeof(map->lease_id), "%s", cfg->lease_id);
    return 0;
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
    if (result == 0 && (memcmp(map->magic, REGION_MAGIC, sizeof(map->magic)) != 0 ||
                        map->version != REGION_VERSION || map->size != sizeof(region_layout_t)))
        result = GS_EVERSION;
    if (result != 0) {
        if (map != NULL)
            munmap(map, sizeof(*map));
        close(fd);
        return result;
    }
    return wrap(map, fd, path, out);
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
    init_layout(p, cfg);
    return wrap(p, -1, NULL, out);
}

void gs_region_close(gs_region_t *region)
{
    if (region == NULL)
        return;
    munmap(region->map, sizeof(*region->map));
    if (region->fd >= 0)
        close(region->fd);
    free(region->path);
    free(region);
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

/* Fills a freshly claimed record i for the calling process. Returns 0, or GS_EBUSY when its
 * liveness lock is still held (its previous owner is between freeing it and unlocking). */
static int take_record(gs_region_t *region, int i)
{
    region_proc_t *proc = &region->map->procs[i];
    /* With a liveness lock the start time (a /proc read, the slowest part of attaching) is
     * only a fallback: it is filled in at the first reservation (1 = not known yet). */
    uint64_t start = 1;
    region->start_known = region->fd < 0;
    if (region->fd >= 0) {
        if (slot_lock(region, i, 0) != 0)
            return GS_EBUSY;
    } else {
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
            region_proc_t *proc = &map->procs[i];
            int32_t expected = 0;
            if (LOAD(&proc->pid) != 0 ||
                !__atomic_compare_exchange_n(&proc->pid, &expected, (int32_t)pid, 0,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                continue;
            if (take_record(region, i) != 0) {
                STORE(&proc->pid, 0);
                continue;
            }
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
        gs__region_drain(region->map, slot);
        gs__region_free_slot(region->map, slot, 0);
        /* Unlocked only once free: a reaper never sees this record unlocked while in use. */
        if (region->fd >= 0)
            slot_lock(region, slot, 1);
    }
    gs_spin_unlock(&region->ops);
}

/* Returns nonzero when record i's owner is gone. A held liveness lock means alive. Otherwise
 * (no lock, or a process that closed its descriptors) the pid decides: gone or a zombie, or now
 * another process's (by start time, once known). A record still being filled (start time 0)
 * or whose start time is not known yet (1) is trusted while its pid lives. */
static int record_is_dead(const gs_region_t *region, int i, int32_t pid, uint64_t recorded)
{
    const region_proc_t *proc = &region->map->procs[i];
    if (recorded != 0 && LOAD(&proc->locked) && region->fd >= 0) {
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
    if (LOAD(&proc->pid) == pid && LOAD(&proc->start_time) == start &&
        LOAD(&proc->generation) == gen) {
        uint64_t bytes = gs__region_drain(map, i);
        ADD(&map->reclaimed_bytes, bytes);
        gs__region_free_slot(map, i, me);
        return 1;
    }
    __atomic_compare_exchange_n(&proc->reaper, &me, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return 0;
}

int gs_region_reap(gs_region_t *region)
{
    region_layout_t *map = region->map;
    if (!gs_spin_trylock(&region->reap))
        return 0; /* another thread of this process is reaping */
    int reaped = 0;
    uint64_t me = 0;
    for (int i = 0; LOAD(&map->attached) != 0 && i < GS_REGION_MAX_PROCS; i++) {
        region_proc_t *proc = &map->procs[i];
        int32_t pid = LOAD(&proc->pid);
        if (pid == 0 || i == region->owned_slot)
            continue;
        uint64_t gen = LOAD(&proc->generation);
        uint64_t start = LOAD(&proc->start_time);
        if (!record_is_dead(region, i, pid, start))
            continue;
        if (me == 0)
            me = my_token();
        if (claim_for_reaping(proc, me))
            reaped += reclaim(map, i, pid, start, gen, me);
    }
    gs_spin_unlock(&region->reap);
    return reaped;
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

void gs_region_after_fork(gs_region_t *region)
{
    if (region == NULL)
        return;
    gs_spin_reset(&region->ops);
    gs_spin_reset(&region->reap);
    region->owned_slot = -1; /* the parent's record */
    /* The inherited descriptor shares the parent's liveness locks: the child needs its own. */
    if (region->fd >= 0) {
        int fd = region->path != NULL ? open(region->path, O_RDWR | O_CLOEXEC) : -1;
        close(region->fd);
        region->fd = fd;
    }
}

const char *gs_region_lease_id(const gs_region_t *region)
{
    return region->map->lease_id;
}
