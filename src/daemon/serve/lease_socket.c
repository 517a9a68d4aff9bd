/* SPDX-License-Identifier: Apache-2.0 */
/* A keyed lease's own socket, served to the lease's processes only (see lease_socket.h). */
#include "lease_socket.h"
#include "api.h"
#include "core/lease_procs.h"
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

/* Whether the process that connected (uc, from SO_PEERCRED) is one that lease serves: with a
 * cgroup (named by root or lease_admin_group: the container's), a process in it or below,
 * whatever its uid; without one yet, a process of the lease's user or root. Returns 1, 0, or
 * -EMFILE / -ENFILE when the daemon is out of descriptors to look. */
static int serves(const gs__lease_t *lease, int fd, const struct ucred *uc)
{
    if (lease->rec.request.cgroup[0] != '\0')
        return gs__proc_peer_in_cgroup(fd, uc->pid, lease->rec.request.cgroup);
    return uc->uid == 0 || uc->uid == lease->rec.uid;
}

/* The log's line for a connection the lease does not serve, rate-limited per user. */
static void say_foreign(gs__daemon_t *d, const gs__lease_t *lease, const struct ucred *uc)
{
    gs__user_t *user = gs__users_get(&d->users, uc->uid);
    if (user == NULL || !gs__users_warn_due(user, GS__WARN_DENIED, gs__now_ms()))
        return;
    const char *cgroup = lease->rec.request.cgroup;
    gs_warn("user %s (pid %d) on lease %llu's socket: %s%s; its requests are refused%s", user->name,
            (int)uc->pid, (unsigned long long)lease->rec.id,
            cgroup[0] != '\0' ? "not a process of its cgroup "
                              : "not its user's and no cgroup attached",
            cgroup, gs__users_suppressed(user, GS__WARN_DENIED));
}

/* Takes one connection accepted on ls's socket, telling whether the lease serves its process.
 * Out of descriptors to look, it is closed (its client retries). */
static void take(gs__lease_socket_t *ls, int fd)
{
    gs__daemon_t *d = gs__server_daemon(ls->s);
    const gs__lease_t *lease = gs__lease_find(d, ls->lease_id);
    struct ucred uc;
    socklen_t len = sizeof(uc);
    int served = lease != NULL && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0
                     ? serves(lease, fd, &uc)
                     : -ENOENT;
    if (served < 0) {
        close(fd);
        return;
    }
    if (!served)
        say_foreign(d, lease, &uc);
    gs__server_take(ls->s, fd, ls->lease_id, !served);
}

int gs__lease_socket_refuse(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req)
{
    if (!gs__conn_lease_foreign(conn))
        return 0;
    const gs__lease_t *lease = gs__lease_find(d, gs__conn_lease_only(conn));
    char why[160];
    snprintf(why, sizeof(why), "lease %llu's socket serves only %s",
             (unsigned long long)gs__conn_lease_only(conn),
             lease != NULL && lease->rec.request.cgroup[0] == '\0'
                 ? "its user's processes (no container is attached to it yet)"
                 : "the processes of its container (the lease's cgroup)");
    gs__conn_send(conn, gs__api_error(gs_op_name(req->op), GS_WIRE_PERMISSION_DENIED, why));
    return -1;
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
        take(ls, fd);
    }
}
