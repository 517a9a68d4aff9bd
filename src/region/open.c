/* SPDX-License-Identifier: Apache-2.0 */
/* The lease accounting region's memory: files, gpushared's sealed memfds, private regions;
 * membership, recycling, forks. */
#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "region_internal.h"

/* What nobody may do to a region of gpushared once it is handed out: shrink it (its mappings
 * would fault), grow it (it would take memory), or change these seals. */
#define REGION_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

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

/* Returns a new open file description of fd's file, closing fd; or -errno (fd closed too). */
static int reopen_own(int fd)
{
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    int own = open(self, O_RDWR | O_CLOEXEC);
    int result = own >= 0 ? own : -errno;
    close(fd);
    return result;
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

/* Takes the membership lock through fd, the description the mapping was made through (see
 * region_internal.h). Returns 0 or -errno. */
static int member_lock(int fd)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = MEMBER_LOCK, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

/* Allocates the whole file now, so that no later access can fault for want of space (a sparse
 * file on a full filesystem would SIGBUS whoever touches a missing page). */
static int allocate(int fd)
{
    int rc = posix_fallocate(fd, 0, (off_t)sizeof(region_layout_t));
    return rc == 0 ? 0 : -rc;
}

static int layout_ok(const region_layout_t *map)
{
    return memcmp(map->magic, REGION_MAGIC, sizeof(map->magic)) == 0 &&
           map->version == REGION_VERSION && map->size == sizeof(region_layout_t);
}

/* Maps the region file behind fd after checking it (flags: GS_REGION_SEALED, GS_REGION_MEMBER);
 * takes ownership of fd whatever happens. */
static int map_checked(int fd, unsigned flags, const char *path, gs_region_t **out)
{
    struct stat st;
    region_layout_t *map = NULL;
    int result = fstat(fd, &st) == 0 ? 0 : -errno;
    if (result == 0 && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != sizeof(region_layout_t)))
        result = GS_EVERSION;
    if (result == 0 && (flags & GS_REGION_SEALED)) {
        /* A file that cannot carry seals (EINVAL) is as unsealed as one that has none. */
        int seals = fcntl(fd, F_GET_SEALS);
        result = seals < 0 && errno != EINVAL                           ? -errno
                 : seals >= 0 && (seals & REGION_SEALS) == REGION_SEALS ? 0
                                                                        : GS_EPERM;
    }
    if (result == 0)
        result = map_file(fd, &map);
    if (result == 0 && !layout_ok(map))
        result = GS_EVERSION;
    if (result == 0 && (flags & GS_REGION_MEMBER))
        result = member_lock(fd);
    if (result != 0) {
        if (map != NULL)
            munmap(map, sizeof(*map));
        close(fd);
        return result;
    }
    return wrap(map, fd, path, out);
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
    int result = allocate(fd);
    if (result == 0)
        result = map_file(fd, &map);
    if (result != 0)
        goto out;
    init_layout(map, cfg);
    result = member_lock(fd);
    /* Linking publishes the finished file atomically and fails if another process won. */
    if (result == 0)
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

int gs_region_create_sealed(const gs_region_config_t *cfg, gs_region_t **out)
{
    int fd = memfd_create(GS_REGION_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    region_layout_t *map = NULL;
    /* Readable and writable through /proc/PID/fd/N by whoever may reach the processes that hold
     * it (their user and root), never executable. */
    int result = fchmod(fd, 0666) == 0 ? 0 : -errno;
    if (result == 0)
        result = allocate(fd);
    if (result == 0)
        result = map_file(fd, &map);
    if (result == 0) {
        init_layout(map, cfg);
        if (fcntl(fd, F_ADD_SEALS, REGION_SEALS) != 0)
            result = -errno;
    }
    if (result != 0) {
        if (map != NULL)
            munmap(map, sizeof(*map));
        close(fd);
        return result;
    }
    return wrap(map, fd, NULL, out);
}

int gs_region_adopt(int fd, unsigned flags, gs_region_t **out)
{
    if (fd < 0)
        return GS_EINVAL;
    /* A member's lock must be on a description of its own: a descriptor received from gpushared
     * shares the daemon's, where the daemon could not see it. */
    if (flags & GS_REGION_MEMBER) {
        fd = reopen_own(fd);
        if (fd < 0)
            return fd;
    }
    return map_checked(fd, flags, NULL, out);
}

int gs_region_open(const char *path, gs_region_t **out)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    return map_checked(fd, GS_REGION_MEMBER, path, out);
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

int gs_region_fd(const gs_region_t *region)
{
    return region->fd;
}

int gs_region_in_use(const gs_region_t *region)
{
    if (region->fd < 0)
        return LOAD(&region->map->attached) != 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = MEMBER_LOCK, .l_len = 1};
    if (fcntl(region->fd, F_OFD_GETLK, &fl) != 0)
        return -errno;
    return fl.l_type != F_UNLCK;
}

/* Whether a private region (no membership lock to ask) still has a process or a charge in it. */
static int private_busy(region_layout_t *map)
{
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        if (LOAD(&map->procs[i].pid) != 0)
            return 1;
    }
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        if (low64(load128(&map->device[d])) != 0)
            return 1;
    }
    return 0;
}

int gs_region_recycle(gs_region_t *region, const gs_region_config_t *cfg)
{
    region_layout_t *map = region->map;
    int busy = region->fd >= 0 ? gs_region_in_use(region) : private_busy(map);
    if (busy != 0)
        return busy < 0 ? busy : GS_EBUSY;
    /* Nobody maps it: whatever its records say (a process that died while attaching, or one
     * that rewrote them) is stale. Records in use start again from zero; a free one is zero
     * unless a process of the same lease wrote it, and regions go back only to their user. */
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        if (map->procs[i].pid != 0)
            memset(&map->procs[i], 0, sizeof(map->procs[i]));
    }
    for (unsigned d = 0; d < GS_MAX_DEVICES; d++) {
        map->device[d] = 0;
        map->peak[d] = 0;
        map->limit[d] = cfg->limit[d];
    }
    map->attached = 0;
    map->retired_allocs = 0;
    map->retired_frees = 0;
    map->retired_ooms = 0;
    map->reclaimed_bytes = 0;
    map->last_reap_ns = 0;
    for (unsigned i = 0; i < GS_REGION_FOOTPRINTS; i++)
        map->footprint[i] = 0;
    map->compute_share = cfg->compute_share;
    snprintf(map->lease_id, sizeof(map->lease_id), "%s", cfg->lease_id);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return 0;
}

void gs_region_after_fork(gs_region_t *region)
{
    if (region == NULL)
        return;
    gs_spin_reset(&region->ops);
    gs_spin_reset(&region->reap);
    region->owned_slot = -1; /* the parent's record */
    /* The inherited descriptor shares the parent's liveness locks: the child needs its own
     * description of the same file (through /proc, which also works for a memfd). */
    if (region->fd >= 0) {
        char self[64];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", region->fd);
        int fd = open(self, O_RDWR | O_CLOEXEC);
        if (fd < 0 && region->path != NULL)
            fd = open(region->path, O_RDWR | O_CLOEXEC);
        close(region->fd);
        region->fd = fd;
    }
}

const char *gs_region_lease_id(gs_region_t *region)
{
    memcpy(region->lease_id, region->map->lease_id, sizeof(region->lease_id));
    region->lease_id[sizeof(region->lease_id) - 1] = '\0';
    return region->lease_id;
}
