/* SPDX-License-Identifier: Apache-2.0 */
/* Joining a lease's region: a file by path, or a lease's region asked of gpushared over its
 * socket (the sealed descriptor comes back with SCM_RIGHTS). libc only: the shim links it. */
#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "region_internal.h"

#define JOIN_PREFIX  "gpushared:"
#define JOIN_WAIT_MS 5000 /* how long a daemon being restarted (or busy) is waited for */
#define REPLY_MAX    1024

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(int ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};
    nanosleep(&ts, NULL);
}

int gs__daemon_spec(const char *spec, unsigned long long *id, const char **socket_path)
{
    const char *p = spec + strlen(JOIN_PREFIX);
    char *end = NULL;
    if (*p < '0' || *p > '9')
        return GS_EINVAL;
    errno = 0;
    *id = strtoull(p, &end, 10);
    if (errno != 0 || *end != ':' || end[1] == '\0' ||
        strlen(end + 1) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return GS_EINVAL;
    *socket_path = end + 1;
    return 0;
}

/* Connects to the daemon's socket. Returns the descriptor or -errno. */
static int connect_to(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int result = -errno;
        close(fd);
        return result;
    }
    return fd;
}

/* Keeps the first descriptor a message carried in *passed and closes any other. */
static void take_fds(struct msghdr *msg, int *passed)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*passed < 0)
                *passed = fd;
            else
                close(fd);
        }
    }
}

/* Reads one reply line (and the descriptor sent with it) until deadline. Returns 0, or -errno. */
static int receive(int fd, char *line, size_t len, int *passed, int64_t deadline)
{
    size_t have = 0;
    while (have + 1 < len && memchr(line, '\n', have) == NULL) {
        int64_t left = deadline - now_ms();
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            return GS_ETIMEDOUT;
        union {
            char buf[CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } control;
        struct iovec iov = {.iov_base = line + have, .iov_len = len - 1 - have};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? GS_ECONNREFUSED : -errno;
        take_fds(&msg, passed);
        have += (size_t)n;
        line[have] = '\0';
    }
    return 0;
}

/* Copies the reply's "message" (JSON string, simple escapes undone) into err. */
static void message_of(const char *line, char *err, size_t errlen)
{
    const char *p = strstr(line, "\"message\":\"");
    size_t n = 0;
    for (p = p != NULL ? p + 11 : ""; *p != '\0' && *p != '"' && n + 1 < errlen; p++) {
        if (*p == '\\' && p[1] != '\0')
            p++;
        err[n++] = *p;
    }
    err[n] = '\0';
    if (n == 0)
        snprintf(err, errlen, "gpushared gave no answer");
}

int gs__daemon_ask(const char *socket_path, const char *request, char *reply, size_t replylen,
                   int *passed, char *err, size_t errlen, int64_t deadline)
{
    int fd = connect_to(socket_path);
    if (fd == GS_ENOENT || fd == GS_ECONNREFUSED || fd == GS_EAGAIN)
        return gs_fail(err, errlen, GS_EAGAIN, "cannot reach gpushared at %s: %s", socket_path,
                       gs_strerror(fd));
    if (fd < 0)
        return gs_fail(err, errlen, fd, "cannot reach gpushared at %s: %s", socket_path,
                       gs_strerror(fd));
    size_t n = strlen(request);
    int result = send(fd, request, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -errno;
    if (result == 0)
        result = receive(fd, reply, replylen, passed, deadline);
    close(fd);
    if (result != 0)
        return gs_fail(err, errlen, result == GS_ECONNREFUSED ? GS_EAGAIN : result,
                       "no answer from gpushared at %s: %s", socket_path, gs_strerror(result));
    if (strstr(reply, "\"ok\":true") != NULL)
        return 0;
    message_of(reply, err, errlen);
    if (strstr(reply, "\"code\":\"busy\"") != NULL)
        return GS_EAGAIN;
    if (strstr(reply, "\"code\":\"not_found\"") != NULL ||
        strstr(reply, "\"code\":\"ended\"") != NULL)
        return GS_ENOENT;
    return GS_EACCES;
}

int gs__daemon_ask_retry(const char *socket_path, const char *request, char *reply, size_t replylen,
                         int *passed, char *err, size_t errlen)
{
    int64_t deadline = now_ms() + JOIN_WAIT_MS;
    int result;
    while ((result = gs__daemon_ask(socket_path, request, reply, replylen, passed, err, errlen,
                                    deadline)) == GS_EAGAIN &&
           now_ms() < deadline) {
        if (*passed >= 0)
            close(*passed);
        *passed = -1;
        nap_ms(20);
    }
    if (result != 0 && *passed >= 0) {
        close(*passed);
        *passed = -1;
    }
    return result;
}

static int join_daemon(const char *spec, gs_region_t **out, char *err, size_t errlen)
{
    unsigned long long id;
    const char *socket_path;
    if (gs__daemon_spec(spec, &id, &socket_path) != 0)
        return gs_fail(err, errlen, GS_EINVAL, "expected gpushared:LEASE_ID:SOCKET");
    char request[64], reply[REPLY_MAX];
    snprintf(request, sizeof(request), "{\"op\":\"join\",\"lease\":%llu}\n", id);
    int passed = -1;
    int result =
        gs__daemon_ask_retry(socket_path, request, reply, sizeof(reply), &passed, err, errlen);
    if (result == 0 && passed < 0)
        return gs_fail(err, errlen, GS_EPROTO, "gpushared sent no region");
    if (result != 0)
        return result;
    result = gs_region_adopt(passed, GS_REGION_SEALED | GS_REGION_MEMBER, out);
    if (result != 0)
        return gs_fail(err, errlen, result, "the region gpushared sent is unusable: %s",
                       gs_strerror(result));
    char want[32];
    snprintf(want, sizeof(want), "%llu", id);
    if (strcmp(gs_region_lease_id(*out), want) != 0) {
        gs_region_close(*out);
        *out = NULL;
        return gs_fail(err, errlen, GS_EPROTO, "gpushared sent the region of another lease");
    }
    return 0;
}

int gs_region_join(const char *spec, gs_region_t **out, char *err, size_t errlen)
{
    if (strncmp(spec, JOIN_PREFIX, strlen(JOIN_PREFIX)) == 0)
        return join_daemon(spec, out, err, errlen);
    int result = gs_region_open(spec, out);
    if (result != 0)
        return gs_fail(err, errlen, result, "%s", gs_strerror(result));
    return 0;
}
