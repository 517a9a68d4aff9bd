/* SPDX-License-Identifier: Apache-2.0 */
/* One gpushared per node: POSIX locks on pid files in the state and runtime directories. */
#include "claim.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE "gpushared.pid"

void gs__claim_init(gs__claim_t *claim)
{
    claim->state_fd = -1;
    for (unsigned i = 0; i < GS_MAX_DEVICES; i++)
        claim->gpu_fd[i] = -1;
    claim->n_gpus = 0;
    claim->sim_fd = -1;
}

/* mkdir -p path (0755 for what is missing). Returns 0 or -errno. */
static int make_dirs(const char *path)
{
    char buf[GS__PATH_MAX + 16];
    if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
        return GS_ERANGE;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = c;
        if (c == '\0')
            return 0;
    }
}

static struct flock whole_file(short type)
{
    struct flock lk;
    memset(&lk, 0, sizeof(lk));
    lk.l_type = type;
    lk.l_whence = SEEK_SET;
    return lk;
}

pid_t gs__claim_holder(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    struct flock lk = whole_file(F_WRLCK);
    pid_t pid = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK ? lk.l_pid : 0;
    close(fd);
    return pid;
}

/* Nonzero while path is still the file open at fd (a daemon leaving unlinks its files: a lock
 * taken on a file unlinked meanwhile claims nothing). */
static int still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Opens path and locks it. Returns the descriptor (>= 0), GS_EBUSY with the holder's pid in
 * *holder, or -errno. */
static int lock_file(const char *path, pid_t *holder)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
            return -errno;
        struct flock lk = whole_file(F_WRLCK);
        if (fcntl(fd, F_SETLK, &lk) != 0) {
            int result = errno == EAGAIN || errno == EACCES ? GS_EBUSY : -errno;
            struct flock who = whole_file(F_WRLCK);
            if (result == GS_EBUSY && fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
                *holder = who.l_pid;
            close(fd);
            return result;
        }
        if (still_there(fd, path))
            return fd;
        close(fd);
    }
    return GS_EBUSY;
}

/* Takes the lock on path and writes our pid there, then what (a line, NULL none). Returns the
 * descriptor (>= 0), GS_EBUSY with the holder's pid in *holder, or -errno. */
static int take(const char *path, const char *what, pid_t *holder)
{
    *holder = 0;
    int fd = lock_file(path, holder);
    if (fd < 0)
        return fd;
    char text[GS__CLAIM_PATH_MAX + 32];
    int n = snprintf(text, sizeof(text), "%d\n%s%s", (int)getpid(), what != NULL ? what : "",
                     what != NULL ? "\n" : "");
    n = n > 0 && (size_t)n < sizeof(text) ? n : 0;
    if (ftruncate(fd, 0) != 0 || write(fd, text, (size_t)n) != n)
        gs_warn("cannot write the pid into %s: %s", path, gs_strerror(-errno));
    return fd;
}

int gs__claim_state(gs__claim_t *claim, const gs__config_t *cfg, char *err, size_t errlen)
{
    char path[GS__CLAIM_PATH_MAX];
    int result = make_dirs(cfg->state_dir);
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot create the state directory %s: %s",
                       cfg->state_dir, gs_strerror(result));
    snprintf(path, sizeof(path), "%s/%s", cfg->state_dir, STATE_FILE);
    pid_t holder = 0;
    int fd = take(path, NULL, &holder);
    if (fd == GS_EBUSY)
        return gs_fail(err, errlen, GS_EBUSY,
                       "gpushared already running (pid %d): it holds the state directory %s",
                       (int)holder, cfg->state_dir);
    if (fd < 0)
        return gs_fail(err, errlen, fd, "cannot claim the state directory: %s: %s", path,
                       gs_strerror(fd));
    claim->state_fd = fd;
    snprintf(claim->state_path, sizeof(claim->state_path), "%s", path);
    return 0;
}

/* Unlinks path, held at fd (still ours: the lock is held until the close), and closes fd. */
static void let_go(int fd, const char *path)
{
    if (still_there(fd, path))
        unlink(path);
    close(fd);
}

static void release_gpus(gs__claim_t *claim)
{
    for (unsigned i = 0; i < claim->n_gpus; i++) {
        if (claim->gpu_fd[i] >= 0)
            let_go(claim->gpu_fd[i], claim->gpu_path[i]);
        claim->gpu_fd[i] = -1;
    }
    claim->n_gpus = 0;
}

/* Claims one GPU into claim->gpu_fd[i]. Returns 0, GS_EBUSY or -errno with one line in err. */
static int claim_gpu(gs__claim_t *claim, const char *dir, const gs__gpu_t *gpu, unsigned i,
                     char *err, size_t errlen)
{
    char *path = claim->gpu_path[i];
    if ((size_t)snprintf(path, GS__CLAIM_PATH_MAX, "%s/%s.pid", dir, gpu->uuid) >=
            GS__CLAIM_PATH_MAX ||
        strchr(gpu->uuid, '/') != NULL)
        return gs_fail(err, errlen, GS_EINVAL, "GPU %u: UUID \"%s\" cannot name a file", gpu->index,
                       gpu->uuid);
    pid_t holder = 0;
    int fd = take(path, NULL, &holder);
    if (fd == GS_EBUSY)
        return gs_fail(err, errlen, GS_EBUSY,
                       "gpushared already running (pid %d): it holds GPU %u (%s)", (int)holder,
                       gpu->index, gpu->uuid);
    if (fd < 0)
        return gs_fail(err, errlen, fd, "cannot claim GPU %u: %s: %s", gpu->index, path,
                       gs_strerror(fd));
    claim->gpu_fd[i] = fd;
    return 0;
}

int gs__claim_gpus(gs__claim_t *claim, const gs__gpu_t *gpus, unsigned n, char *err, size_t errlen)
{
    const char *dir = GS__CLAIM_GPU_DIR;
    int result = make_dirs(dir);
    if (result != 0 && geteuid() != 0) {
        gs_warn("cannot create %s (%s): this daemon of uid %u claims no GPU of the node", dir,
                gs_strerror(result), (unsigned)geteuid());
        return 0;
    }
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot create %s: %s", dir, gs_strerror(result));
    for (unsigned i = 0; i < n && i < GS_MAX_DEVICES; i++) {
        claim->n_gpus = i + 1;
        result = claim_gpu(claim, dir, &gpus[i], i, err, errlen);
        if (result != 0) {
            release_gpus(claim);
            return result;
        }
    }
    return 0;
}

/* The second line of the claim file at path (what the holder wrote after its pid), "" when none. */
static void claim_note(const char *path, char *out, size_t len)
{
    char text[GS__CLAIM_PATH_MAX + 32] = "";
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    if (fd >= 0)
        close(fd);
    text[n > 0 ? n : 0] = '\0';
    char *line = strchr(text, '\n');
    if (line != NULL)
        snprintf(out, len, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
}

int gs__claim_sim(gs__claim_t *claim, const char *node, char *err, size_t errlen)
{
    const char *dir = GS__CLAIM_GPU_DIR;
    int result = make_dirs(dir);
    if (result != 0 && geteuid() != 0) {
        gs_warn("cannot create %s (%s): this daemon of uid %u does not claim the host's simulated "
                "node",
                dir, gs_strerror(result), (unsigned)geteuid());
        return 0;
    }
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot create %s: %s", dir, gs_strerror(result));
    snprintf(claim->sim_path, sizeof(claim->sim_path), "%s/gpusim.pid", dir);
    pid_t holder = 0;
    int fd = take(claim->sim_path, node, &holder);
    if (fd == GS_EBUSY) {
        char theirs[GS__CLAIM_PATH_MAX];
        claim_note(claim->sim_path, theirs, sizeof(theirs));
        return gs_fail(err, errlen, GS_EBUSY,
                       "gpushared already running (pid %d): it simulates this host's GPUs "
                       "(gpusim node %s)",
                       (int)holder, theirs[0] != '\0' ? theirs : "unknown");
    }
    if (fd < 0)
        return gs_fail(err, errlen, fd, "cannot claim the host's simulated node: %s: %s",
                       claim->sim_path, gs_strerror(fd));
    claim->sim_fd = fd;
    return 0;
}

void gs__claim_release(gs__claim_t *claim)
{
    if (claim->sim_fd >= 0)
        let_go(claim->sim_fd, claim->sim_path);
    claim->sim_fd = -1;
    release_gpus(claim);
    if (claim->state_fd >= 0)
        let_go(claim->state_fd, claim->state_path);
    claim->state_fd = -1;
}
