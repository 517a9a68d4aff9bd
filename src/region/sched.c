/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler region's storage: a System V shared memory segment named by a key file, the
 * file's lock, membership (join/leave) and the lease table for status.
 *
 * The state lives in a SysV segment, not in a mapped file: other users' processes write it, and
 * a segment's size is fixed at creation, so nobody can truncate it under a member (a mapped file
 * could be, and the member would die of SIGBUS). The key file (mode 0644, written once by its
 * creator) holds the segment's id; the segment itself is mode 0666. Members hold shared OFD
 * locks on bytes of the key file as their liveness. */
#include "sched_internal.h"

#include "gpushare/error.h"
#include "gpushare/spinlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KEY_FORMAT "gpushare-sched %u shmid %d\n"
#define KEY_MAX    128

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gs_sched_path(const char *dir, const char *uuid, char *buf, size_t len)
{
    if (uuid == NULL || *uuid == '\0' || strchr(uuid, '/') != NULL || strcmp(uuid, ".") == 0 ||
        strcmp(uuid, "..") == 0)
        return GS_EINVAL;
    int n = snprintf(buf, len, "%s/gpushare-sched-%s", dir, uuid);
    return n < 0 || (size_t)n >= len ? GS_ERANGE : 0;
}

/* Reads the segment id from the key file fd. Returns it, or GS_EVERSION. */
static int read_key(int fd)
{
    char text[KEY_MAX];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    if (n <= 0)
        return GS_EVERSION;
    text[n] = '\0';
    unsigned version = 0;
    int shmid = -1, used = 0;
    if (sscanf(text, "gpushare-sched %u shmid %d\n%n", &version, &shmid, &used) != 2 ||
        version != SCHED_VERSION || shmid < 0 || used != n)
        return GS_EVERSION;
    return shmid;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

/* Attaches segment shmid after checking that it is a scheduler region of this version, made for
 * the key file named name. */
static int attach_segment(int shmid, const char *name, sched_layout_t **out)
{
    struct shmid_ds ds;
    if (shmctl(shmid, IPC_STAT, &ds) != 0)
        return errno == EINVAL || errno == EIDRM ? GS_EVERSION : -errno;
    if (ds.shm_segsz != sizeof(sched_layout_t))
        return GS_EVERSION;
    void *p = shmat(shmid, NULL, 0);
    if (p == (void *)-1)
        return errno == EINVAL || errno == EIDRM ? GS_EVERSION : -errno;
    sched_layout_t *map = p;
    if (memcmp(map->magic, SCHED_MAGIC, sizeof(map->magic)) != 0 ||
        SLOAD(&map->version) != SCHED_VERSION || SLOAD(&map->size) != sizeof(sched_layout_t) ||
        strncmp(map->name, name, sizeof(map->name)) != 0) {
        shmdt(p);
        return GS_EVERSION;
    }
    *out = map;
    return 0;
}

static int wrap(sched_layout_t *map, int fd, gs_sched_t **out)
{
    gs_sched_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        shmdt(map);
        close(fd);
        return GS_ENOMEM;
    }
    s->map = map;
    s->fd = fd;
    s->self = -1;
    s->pid = getpid();
    *out = s;
    return 0;
}

int gs_sched_open(const char *path, gs_sched_t **out)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? GS_EVERSION : -errno;
    struct stat st;
    int result = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read_key(fd) : GS_EVERSION;
    sched_layout_t *map = NULL;
    if (result >= 0)
        result = attach_segment(result, base_name(path), &map);
    if (result != 0) {
        close(fd);
        return result;
    }
    return wrap(map, fd, out);
}

/* Makes and initialises a new segment (mode 0666) for the key file named name. Returns its id or
 * -errno. */
static int new_segment(const char *name)
{
    int shmid = shmget(IPC_PRIVATE, sizeof(sched_layout_t), IPC_CREAT | IPC_EXCL | 0666);
    if (shmid < 0)
        return -errno;
    sched_layout_t *map = shmat(shmid, NULL, 0);
    if (map == (void *)-1) {
        int result = -errno;
        shmctl(shmid, IPC_RMID, NULL);
        return result;
    }
    memset(map, 0, sizeof(*map)); /* a new segment is zeroed; made explicit */
    map->version = SCHED_VERSION;
    map->size = sizeof(sched_layout_t);
    snprintf(map->name, sizeof(map->name), "%s", name);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(map->magic, SCHED_MAGIC, sizeof(map->magic));
    shmdt(map);
    return shmid;
}

/* Writes the key file for shmid at path atomically (a complete file or none). */
static int publish_key(const char *path, int shmid, mode_t mode)
{
    char tmp[4200], text[KEY_MAX];
    int n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return GS_ERANGE;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int len = snprintf(text, sizeof(text), KEY_FORMAT, SCHED_VERSION, shmid);
    int result = 0;
    if (fchmod(fd, mode) != 0 || write(fd, text, (size_t)len) != len)
        result = -errno;
    close(fd);
    if (result == 0 && link(tmp, path) != 0)
        result = -errno;
    unlink(tmp);
    return result;
}

int gs_sched_create(const char *path, mode_t mode, gs_sched_t **out)
{
    int shmid = new_segment(base_name(path));
    if (shmid < 0)
        return shmid;
    int result = publish_key(path, shmid, mode);
    if (result == 0)
        result = gs_sched_open(path, out);
    /* Marked for removal, a segment lives while it is attached (Linux lets members attach it
     * still): the last member leaving takes it away, and the key file is then stale. Nothing
     * is left behind, and a restarted gpushared finds the segment its jobs still use. */
    shmctl(shmid, IPC_RMID, NULL);
    return result;
}

/* Removes the key file at path when it is ours and names a segment that is gone. */
static int remove_stale(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int shmid = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read_key(fd) : GS_EVERSION;
    close(fd);
    struct shmid_ds ds;
    if (shmid < 0 || st.st_uid != geteuid() || shmctl(shmid, IPC_STAT, &ds) == 0 ||
        (errno != EINVAL && errno != EIDRM))
        return GS_EVERSION;
    return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

int gs_sched_open_or_create(const char *path, gs_sched_t **out)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        int result = gs_sched_open(path, out);
        if (result == GS_EVERSION)
            result = remove_stale(path) == 0 ? GS_ENOENT : GS_EVERSION;
        if (result != GS_ENOENT)
            return result;
        result = gs_sched_create(path, 0644, out);
        if (result != GS_EEXIST)
            return result;
    }
    return GS_EAGAIN;
}

void gs_sched_close(gs_sched_t *s)
{
    if (s == NULL)
        return;
    gs_sched_leave(s);
    shmdt(s->map);
    close(s->fd);
    free(s);
}

/* ---- the lock ---- */

static uint64_t lock_token(pid_t pid, int64_t now)
{
    return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)(now / 1000000) | 1u;
}

/* A lock word that is old, or whose owner is gone, may be taken over. */
static int lock_stale(uint64_t seen, int64_t now, int64_t waited)
{
    uint32_t age_ms = (uint32_t)(now / 1000000) - (uint32_t)seen;
    if ((int64_t)age_ms * 1000000 > GS_SCHED_LOCK_STALE_NS || waited > 2 * GS_SCHED_LOCK_STALE_NS)
        return 1;
    pid_t owner = (pid_t)(seen >> 32);
    return owner <= 0 || (kill(owner, 0) != 0 && errno == ESRCH);
}

void gs__sched_lock(gs_sched_t *s)
{
    int64_t start = mono_ns();
    for (unsigned spins = 0;; spins++) {
        uint64_t seen = SLOAD(&s->map->lock);
        int64_t now = spins % 64 == 63 || seen == 0 ? mono_ns() : start;
        uint64_t mine = lock_token(s->pid, now);
        if ((seen == 0 || (spins % 64 == 63 && lock_stale(seen, now, now - start))) &&
            __atomic_compare_exchange_n(&s->map->lock, &seen, mine, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            s->lock_token = mine;
            return;
        }
        if (spins < 16)
            gs_spin_pause();
        else if (spins < 256)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
    }
}

void gs__sched_unlock(gs_sched_t *s)
{
    uint64_t mine = s->lock_token;
    __atomic_compare_exchange_n(&s->map->lock, &mine, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* ---- membership ---- */

static int proc_lock(const gs_sched_t *s, int i, short type)
{
    struct flock fl = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = SCHED_LOCK_BASE + i, .l_len = 1};
    return fcntl(s->fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

int gs__sched_alive(const gs_sched_t *s, int i)
{
    if (i == s->self)
        return 1;
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SCHED_LOCK_BASE + i, .l_len = 1};
    if (fcntl(s->fd, F_OFD_GETLK, &fl) != 0)
        return 1; /* cannot tell: keep it */
    return fl.l_type != F_UNLCK;
}

void gs__sched_set_state(sched_layout_t *map, sched_proc_t *p, uint32_t state)
{
    uint32_t old = SLOAD(&p->state);
    uint32_t waiting = SLOAD(&map->n_waiting);
    if (old == PROC_WAITING && state != PROC_WAITING)
        SSTORE(&map->n_waiting, waiting > 0 ? waiting - 1 : 0);
    else if (old != PROC_WAITING && state == PROC_WAITING)
        SSTORE(&map->n_waiting, waiting < GS_SCHED_MAX_PROCS ? waiting + 1 : waiting);
    SSTORE(&p->state, state);
}

void gs__sched_free_proc(sched_layout_t *map, int i)
{
    sched_proc_t *p = &map->procs[i];
    gs__sched_set_state(map, p, PROC_IDLE);
    SSTORE(&p->pid, 0);
}

void gs__sched_wake(sched_layout_t *map)
{
    __atomic_fetch_add(&map->turn, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &map->turn, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Marks in used[] the leases that have a live member (lock held). */
static void leases_in_use(const gs_sched_t *s, uint8_t used[GS_SCHED_MAX_LEASES])
{
    memset(used, 0, GS_SCHED_MAX_LEASES);
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &s->map->procs[i];
        uint32_t l = SLOAD(&p->lease);
        if (SLOAD(&p->pid) != 0 && l < GS_SCHED_MAX_LEASES && !used[l] && gs__sched_alive(s, i))
            used[l] = 1;
    }
}

/* Finds lease key, or makes it in a free (or no longer used) entry. Returns its index or
 * GS_ENOSPC (lock held). */
static int find_lease(gs_sched_t *s, const char *key, gs_sched_share_t share)
{
    sched_layout_t *map = s->map;
    int free_entry = -1;
    for (int l = 0; l < GS_SCHED_MAX_LEASES; l++) {
        if (strncmp(map->leases[l].key, key, GS_SCHED_KEY_MAX) == 0)
            free_entry = -2 - l;
        else if (free_entry == -1 && map->leases[l].key[0] == '\0')
            free_entry = l;
    }
    if (free_entry <= -2) {
        sched_lease_t *lease = &map->leases[-2 - free_entry];
        lease->guarantee = share.guarantee;
        lease->cap = share.cap;
        return -2 - free_entry;
    }
    if (free_entry < 0) {
        uint8_t used[GS_SCHED_MAX_LEASES];
        leases_in_use(s, used);
        for (int l = 0; free_entry < 0 && l < GS_SCHED_MAX_LEASES; l++)
            free_entry = used[l] ? -1 : l;
    }
    if (free_entry < 0)
        return GS_ENOSPC;
    sched_lease_t *lease = &map->leases[free_entry];
    memset(lease, 0, sizeof(*lease));
    snprintf(lease->key, sizeof(lease->key), "%s", key);
    lease->guarantee = share.guarantee;
    lease->cap = share.cap;
    lease->vtime = gs__sched_vclock(map, mono_ns());
    return free_entry;
}

/* Claims a process record for the caller (lock held). Returns its index or GS_ENOSPC. */
static int claim_proc(gs_sched_t *s, uint32_t lease)
{
    sched_layout_t *map = s->map;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
            sched_proc_t *p = &map->procs[i];
            if (SLOAD(&p->pid) != 0) {
                if (pass == 0 || gs__sched_alive(s, i))
                    continue;
                gs__sched_free_proc(map, i); /* its owner is gone */
            }
            if (proc_lock(s, i, F_RDLCK) != 0)
                continue;
            memset(p, 0, sizeof(*p));
            p->lease = lease;
            SSTORE(&p->pid, (int32_t)s->pid);
            return i;
        }
    }
    return GS_ENOSPC;
}

int gs_sched_join(gs_sched_t *s, const char *key, gs_sched_share_t share)
{
    if (key == NULL || *key == '\0')
        return GS_EINVAL;
    gs__sched_lock(s);
    if (s->self >= 0) {
        if (SLOAD(&s->map->procs[s->self].pid) == (int32_t)s->pid) {
            gs__sched_unlock(s);
            return GS_EBUSY;
        }
        proc_lock(s, s->self, F_UNLCK); /* our record was taken from us: take a new one */
        s->self = -1;
    }
    int lease = find_lease(s, key, share);
    int slot = lease >= 0 ? claim_proc(s, (uint32_t)lease) : lease;
    gs__sched_unlock(s);
    if (slot < 0)
        return slot;
    s->self = slot;
    return 0;
}

void gs_sched_leave(gs_sched_t *s)
{
    if (s->self < 0)
        return;
    int64_t now = mono_ns();
    gs__sched_lock(s);
    gs__sched_leave_slot(s, now);
    if (SLOAD(&s->map->procs[s->self].pid) == (int32_t)s->pid)
        gs__sched_free_proc(s->map, s->self);
    gs__sched_unlock(s);
    proc_lock(s, s->self, F_UNLCK);
    s->self = -1;
}

void gs_sched_after_fork(gs_sched_t *s)
{
    if (s == NULL)
        return;
    /* The child shares the parent's open file description (and its liveness locks): it must
     * neither release them nor pass for the parent. */
    s->self = -1;
    s->pid = getpid();
}

/* ---- hints, waiting and status ---- */

int gs_sched_others_waiting(const gs_sched_t *s)
{
    return SLOAD(&s->map->n_waiting) > 0;
}

int gs_sched_preempted(const gs_sched_t *s, uint64_t epoch)
{
    return SLOAD(&s->map->preempt) == epoch;
}

uint32_t gs_sched_turn(const gs_sched_t *s)
{
    return SLOAD(&s->map->turn);
}

void gs_sched_wait(const gs_sched_t *s, uint32_t seen, int64_t timeout_ns)
{
    if (timeout_ns <= 0)
        return;
    struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
    syscall(SYS_futex, &s->map->turn, FUTEX_WAIT, seen, &ts, NULL, 0);
}

int gs_sched_leases(gs_sched_t *s, gs_sched_lease_info_t *out, int max)
{
    gs_sched_lease_info_t all[GS_SCHED_MAX_LEASES];
    memset(all, 0, sizeof(all));
    gs__sched_lock(s);
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &s->map->procs[i];
        uint32_t l = SLOAD(&p->lease);
        if (SLOAD(&p->pid) == 0 || l >= GS_SCHED_MAX_LEASES || !gs__sched_alive(s, i))
            continue;
        all[l].procs++;
        all[l].waiting += SLOAD(&p->state) != PROC_IDLE;
    }
    int n = 0;
    for (int l = 0; l < GS_SCHED_MAX_LEASES && n < max; l++) {
        const sched_lease_t *lease = &s->map->leases[l];
        if (all[l].procs == 0)
            continue;
        out[n] = all[l];
        memcpy(out[n].key, lease->key, sizeof(out[n].key));
        out[n].key[GS_SCHED_KEY_MAX - 1] = '\0';
        out[n].share = (gs_sched_share_t){lease->guarantee, lease->cap};
        out[n].used_ns = lease->used_ns;
        n++;
    }
    gs__sched_unlock(s);
    return n;
}
