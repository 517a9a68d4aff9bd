/* SPDX-License-Identifier: Apache-2.0 */
/* A keyed lease's own socket, its capability (see lease_socket.h). */
#include "lease_socket.h"
#include "server.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LEASE_BACKLOG 64

struct gs__lease_socket {
    struct server *s;
    int fd;
    uint64_t lease_id;
    char dir[GS__PATH_MAX];
    char path[GS__PATH_MAX];
};

int gs__lease_socket_path(const gs__daemon_t *d, const gs__lease_t *lease, int dir, char *buf,
                          size_t len)
{
    const char *main_socket = d->cfg.socket, *slash = strrchr(main_socket, '/');
    int rundir = slash != NULL ? (int)(slash - main_socket) : 1;
    const char *base = slash != NULL ? main_socket : ".";
    int n = snprintf(buf, len, "%.*s/leases/%s%s", rundir, base, lease->rec.request.capability,
                     dir ? "" : "/lease.sock");
    return n < 0 || (size_t)n >= len ? GS_ERANGE : 0;
}

/* Makes RUNDIR/leases (0711: not listable) and the lease's directory (0755). */
static int make_dirs(const char *dir)
{
    char parent[GS__PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        return GS_EINVAL;
    *slash = '\0';
    if ((mkdir(parent, 0711) != 0 && errno != EEXIST) || chmod(parent, 0711) != 0)
        return -errno;
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || chmod(dir, 0755) != 0)
        return -errno;
    return 0;
}

static int listen_at(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path))
        return GS_ERANGE;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    unlink(path); /* a socket left by a gpushared that was killed */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || chmod(path, 0666) != 0 ||
        listen(fd, LEASE_BACKLOG) != 0) {
        int result = -errno;
        close(fd);
        unlink(path);
        return result;
    }
    return fd;
}

int gs__lease_socket_open(struct server *s, gs__lease_t *lease, char *err, size_t errlen)
{
    if (lease->serve_data != NULL)
        return 0;
    gs__daemon_t *d = gs__server_daemon(s);
    gs__lease_socket_t *ls = calloc(1, sizeof(*ls));
    int result = ls == NULL ? GS_ENOMEM : 0;
    if (result == 0 && (gs__lease_socket_path(d, lease, 1, ls->dir, sizeof(ls->dir)) != 0 ||
                        gs__lease_socket_path(d, lease, 0, ls->path, sizeof(ls->path)) != 0))
        result = GS_ERANGE;
    if (result == 0)
        result = make_dirs(ls->dir);
    ls->fd = result == 0 ? listen_at(ls->path) : -1;
    if (result == 0 && ls->fd < 0)
        result = ls->fd;
    if (result == 0)
        result = gs__server_watch(s, ls->fd, (uintptr_t)ls | 1u);
    if (result != 0) {
        if (ls != NULL && ls->fd >= 0)
            close(ls->fd);
        free(ls);
        return gs_fail(err, errlen, result, "cannot listen on lease %llu's socket: %s",
                       (unsigned long long)lease->rec.id, gs_strerror(result));
    }
    ls->s = s;
    ls->lease_id = lease->rec.id;
    lease->serve_data = ls;
    return 0;
}

void gs__lease_socket_close(gs__lease_t *lease, int remove)
{
    gs__lease_socket_t *ls = lease->serve_data;
    if (ls == NULL)
        return;
    lease->serve_data = NULL;
    gs__server_unwatch(ls->s, ls->fd);
    close(ls->fd);
    if (remove) {
        unlink(ls->path);
        rmdir(ls->dir);
    }
    free(ls);
}

void gs__lease_socket_accept(gs__lease_socket_t *ls)
{
    for (int i = 0; i < LEASE_BACKLOG; i++) {
        int fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            gs__server_refuse(ls->s, ls->fd);
            return;
        }
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                gs_warn("lease %llu's socket: accept: %s", (unsigned long long)ls->lease_id,
                        gs_strerror(-errno));
            return;
        }
        gs__server_take(ls->s, fd, ls->lease_id);
    }
}
