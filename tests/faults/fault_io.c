/* SPDX-License-Identifier: Apache-2.0 */
/* libgs_fault_io.so: the fault-injection suite's interposer (LD_PRELOAD into gpushared), driven
 * by files in $GS_FAULT_DIR that the suite writes and removes while the daemon runs:
 *
 *   eio     while it exists, writes, syncs and truncations of files under $GS_FAULT_STATE (the
 *           daemon's state directory: the ledger, its WAL, the marker) fail with EIO;
 *   clock   a number of milliseconds added to CLOCK_REALTIME (clock_gettime, gettimeofday, time):
 *           a jump of the wall clock as the daemon sees it, in either direction. (Linux time
 *           namespaces offset CLOCK_MONOTONIC and CLOCK_BOOTTIME only: the wall clock cannot be
 *           moved for one process but this way.)
 *
 * The files are looked at every 20 ms at most (CLOCK_MONOTONIC).
 *
 * What took effect is reported in the same directory, so that the suite counts a fault only once
 * it was seen to fire: one byte is appended to fired.eio when a write of the state directory was
 * failed with EIO, to fired.enospc when one failed with ENOSPC (the filesystem full: the kernel's
 * error, passed on), to fired.clock when a shifted CLOCK_REALTIME was returned; each at most once
 * per look (20 ms), so the files grow by 150 bytes a second at most. Test code: never installed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define GS_FAULT_EXPORT __attribute__((visibility("default")))

enum { FIRED_EIO = 1, FIRED_ENOSPC = 2, FIRED_CLOCK = 4 };

static struct {
    pthread_mutex_t lock;
    int64_t next_look_ns;
    int eio;
    int64_t clock_ms;
    unsigned fired; /* FIRED_ bits reported since the last look */
} state = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t mono_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t read_number(const char *dir, const char *name, int *there)
{
    char path[4096], buf[64] = "";
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    *there = fd >= 0;
    if (fd < 0)
        return 0;
    ssize_t n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
    buf[n > 0 ? n : 0] = '\0';
    return strtoll(buf, NULL, 10);
}

/* Looks at the trigger files when due. */
static void look(void)
{
    const char *dir = getenv("GS_FAULT_DIR");
    if (dir == NULL)
        return;
    int64_t now = mono_ns();
    pthread_mutex_lock(&state.lock);
    if (now >= state.next_look_ns) {
        int there = 0;
        read_number(dir, "eio", &there);
        state.eio = there;
        state.clock_ms = read_number(dir, "clock", &there);
        state.next_look_ns = now + 20 * 1000 * 1000;
        state.fired = 0;
    }
    pthread_mutex_unlock(&state.lock);
}

/* Reports that a fault took effect: a byte appended to $GS_FAULT_DIR/fired.<kind>, once a look.
 * Raw system calls: the wrappers below must not see these writes. errno is kept. */
static void fired(unsigned bit)
{
    static const char *const names[] = {
        [FIRED_EIO] = "eio", [FIRED_ENOSPC] = "enospc", [FIRED_CLOCK] = "clock"};
    const char *dir = getenv("GS_FAULT_DIR");
    if (dir == NULL)
        return;
    pthread_mutex_lock(&state.lock);
    int report = (state.fired & bit) == 0;
    state.fired |= bit;
    pthread_mutex_unlock(&state.lock);
    if (!report)
        return;
    int saved = errno;
    char path[4096];
    snprintf(path, sizeof(path), "%s/fired.%s", dir, names[bit]);
    int fd =
        (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        syscall(SYS_write, fd, "x", 1);
        syscall(SYS_close, fd);
    }
    errno = saved;
}

/* Whether fd is a file of the state directory. */
static int in_state(int fd)
{
    const char *dir = getenv("GS_FAULT_STATE");
    if (dir == NULL)
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return strncmp(path, dir, strlen(dir)) == 0;
}

/* Whether a write to fd fails now: the EIO trigger is there and fd is a file of the state
 * directory (reported as fired). */
static int fails(int fd)
{
    look();
    if (!state.eio || !in_state(fd))
        return 0;
    fired(FIRED_EIO);
    return 1;
}

/* The real call's result, its ENOSPC on a file of the state directory reported. */
static long passed(int fd, long rc)
{
    if (rc < 0 && (errno == ENOSPC || errno == EDQUOT) && in_state(fd))
        fired(FIRED_ENOSPC);
    return rc;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

GS_FAULT_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return passed(fd, NEXT(write)(fd, buf, len));
}

GS_FAULT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return passed(fd, NEXT(pwrite)(fd, buf, len, off));
}

GS_FAULT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return passed(fd, NEXT(pwrite64)(fd, buf, len, off));
}

GS_FAULT_EXPORT int fsync(int fd)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return (int)passed(fd, NEXT(fsync)(fd));
}

GS_FAULT_EXPORT int fdatasync(int fd)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return (int)passed(fd, NEXT(fdatasync)(fd));
}

GS_FAULT_EXPORT int ftruncate(int fd, off_t len)
{
    if (fails(fd)) {
        errno = EIO;
        return -1;
    }
    return (int)passed(fd, NEXT(ftruncate)(fd, len));
}

GS_FAULT_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = NEXT(clock_gettime)(id, ts);
    if (rc != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
        return rc;
    look();
    if (state.clock_ms != 0)
        fired(FIRED_CLOCK);
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + state.clock_ms * 1000000;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
    return 0;
}

GS_FAULT_EXPORT int gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    (void)tz;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

GS_FAULT_EXPORT time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
