/* The API server: unix socket, epoll loop, line framing, idle timeouts, group-committed replies. */
#include "server.h"
#include "api.h"
#include "metrics.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define TICK_MS    100                 /* queue timeouts and idle connections */
#define REAP_MS    250                 /* the reaper */
#define REFRESH_MS 1000                /* NVML figures and the metrics snapshot */
#define OUT_MAX    (64u * 1024 * 1024) /* a client that reads nothing is cut off here */
#define MAX_EVENTS 64

struct server;

struct gs__conn {
    struct gs__conn *prev, *next;
    struct server *server;
    int fd;
    gs__cred_t cred;
    char *in;
    size_t in_len;
    char *out;
    size_t out_len, out_cap;
    int64_t last_active_ms;
    int closing; /* close once the output is written */
    int dead;    /* gone: free at the end of the iteration */
    int pending; /* in the list of connections with output to write */
    int watching_out;
    unsigned leases; /* leases held through this connection */
    struct gs__conn *next_pending;
};

typedef struct server {
    gs__daemon_t *d;
    int epfd;
    int listen_fd;
    int signal_fd;
    int stop;
    gs__conn_t *conns;
    gs__conn_t *pending; /* connections with output, written after the commit */
    unsigned n_conns;
    int spare_fd; /* kept open to refuse connections cleanly when out of descriptors */
} server_t;

/* Tags for epoll: the two special descriptors; connections are their own pointers. */
static char listen_tag, signal_tag;

const gs__cred_t *gs__conn_cred(const gs__conn_t *conn)
{
    return &conn->cred;
}

static int reserve_out(gs__conn_t *conn, size_t extra)
{
    if (conn->out_len + extra <= conn->out_cap)
        return 0;
    if (conn->out_len + extra > OUT_MAX)
        return GS_ENOSPC;
    size_t cap = conn->out_cap ? conn->out_cap : 4096;
    while (cap < conn->out_len + extra)
        cap *= 2;
    char *grown = realloc(conn->out, cap);
    if (grown == NULL)
        return GS_ENOMEM;
    conn->out = grown;
    conn->out_cap = cap;
    return 0;
}

void gs__conn_send(gs__conn_t *conn, json_t *msg)
{
    if (msg == NULL)
        return;
    char *text = conn->dead ? NULL : json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text == NULL)
        return;
    size_t len = strlen(text);
    if (reserve_out(conn, len + 1) != 0) {
        gs_warn("client pid %d reads nothing: closing its connection", (int)conn->cred.pid);
        conn->dead = 1;
    } else {
        memcpy(conn->out + conn->out_len, text, len);
        conn->out[conn->out_len + len] = '\n';
        conn->out_len += len + 1;
        if (!conn->pending) {
            conn->pending = 1;
            conn->next_pending = conn->server->pending;
            conn->server->pending = conn;
        }
    }
    free(text);
}

void gs__conn_count_lease(gs__conn_t *conn, int delta)
{
    if (delta < 0 && conn->leases > 0)
        conn->leases--;
    else if (delta > 0)
        conn->leases++;
}

unsigned gs__conn_leases(const gs__conn_t *conn)
{
    return conn->leases;
}

void gs__conn_close(gs__conn_t *conn)
{
    conn->closing = 1;
}

static void lookup_user(gs__cred_t *cred)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(cred->uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(cred->user, sizeof(cred->user), "%s", found->pw_name);
    else
        snprintf(cred->user, sizeof(cred->user), "%u", (unsigned)cred->uid);
}

static void accept_one(server_t *s, int fd)
{
    struct ucred uc;
    socklen_t len = sizeof(uc);
    gs__conn_t *conn = calloc(1, sizeof(*conn));
    if (conn == NULL || (conn->in = malloc(GS_PROTO_LINE_MAX)) == NULL ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) {
        gs_error("cannot take a connection: %s", gs_strerror(conn ? -errno : GS_ENOMEM));
        if (conn != NULL)
            free(conn->in);
        free(conn);
        close(fd);
        return;
    }
    conn->fd = fd;
    conn->server = s;
    conn->cred.uid = uc.uid;
    conn->cred.gid = uc.gid;
    conn->cred.pid = uc.pid;
    if (!gs_proc_alive(uc.pid, &conn->cred.start))
        conn->cred.start = 0;
    lookup_user(&conn->cred);
    conn->last_active_ms = gs__now_ms();
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = conn};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(conn->in);
        free(conn);
        close(fd);
        return;
    }
    conn->next = s->conns;
    if (s->conns != NULL)
        s->conns->prev = conn;
    s->conns = conn;
    s->n_conns++;
    gs_debug("connection from pid %d (user %s)", (int)uc.pid, conn->cred.user);
}

/* Out of file descriptors, a pending connection would wake the (level-triggered) loop forever:
 * give up the spare descriptor, take the connection and close it at once. */
static void refuse_one(server_t *s)
{
    if (s->spare_fd >= 0)
        close(s->spare_fd);
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        close(fd);
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    gs_warn("out of file descriptors (%u connections): refused a connection", s->n_conns);
}

static void accept_all(server_t *s)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            refuse_one(s);
            return;
        }
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                gs_warn("accept: %s", gs_strerror(-errno));
            return;
        }
        accept_one(s, fd);
    }
}

/* The connection ended: let the API drop its queued request and leases now; the memory goes at
 * the end of the iteration (epoll events of this iteration may still point at it). */
static void conn_gone(server_t *s, gs__conn_t *conn)
{
    if (conn->dead && conn->fd < 0)
        return;
    conn->dead = 1;
    if (!s->stop)
        gs__api_conn_closed(s->d, conn); /* at shutdown leases stay for the next start */
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    close(conn->fd);
    conn->fd = -1;
}

static void handle_lines(server_t *s, gs__conn_t *conn)
{
    size_t start = 0;
    while (!conn->closing && !conn->dead) {
        char *nl = memchr(conn->in + start, '\n', conn->in_len - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (conn->in + start));
        conn->last_active_ms = gs__now_ms();
        gs__api_request(s->d, conn, conn->in + start, len);
        start += len + 1;
    }
    memmove(conn->in, conn->in + start, conn->in_len - start);
    conn->in_len -= start;
    if (conn->in_len == GS_PROTO_LINE_MAX && !conn->closing) {
        char msg[128];
        snprintf(msg, sizeof(msg), "request line longer than %d bytes: closing the connection",
                 GS_PROTO_LINE_MAX);
        gs__conn_send(conn, gs__api_error(NULL, "too_long", msg));
        gs_warn("client pid %d (user %s) sent a line longer than %d bytes: closed",
                (int)conn->cred.pid, conn->cred.user, GS_PROTO_LINE_MAX);
        s->d->counters.bad_requests++;
        gs__conn_close(conn);
    }
}

static void read_conn(server_t *s, gs__conn_t *conn)
{
    if (conn->closing) {
        char sink[4096]; /* discard: the connection is closing */
        ssize_t n = recv(conn->fd, sink, sizeof(sink), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            conn_gone(s, conn);
        return;
    }
    ssize_t n = recv(conn->fd, conn->in + conn->in_len, GS_PROTO_LINE_MAX - conn->in_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        conn_gone(s, conn);
        return;
    }
    conn->in_len += (size_t)n;
    handle_lines(s, conn);
}

static void watch_out(server_t *s, gs__conn_t *conn, int on)
{
    if (conn->watching_out == on || conn->fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = conn};
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, conn->fd, &ev);
    conn->watching_out = on;
}

static void flush_conn(server_t *s, gs__conn_t *conn)
{
    size_t done = 0;
    while (!conn->dead && done < conn->out_len) {
        ssize_t n =
            send(conn->fd, conn->out + done, conn->out_len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n < 0) {
            conn_gone(s, conn);
            return;
        }
        done += (size_t)n;
    }
    memmove(conn->out, conn->out + done, conn->out_len - done);
    conn->out_len -= done;
    watch_out(s, conn, conn->out_len > 0);
    if (conn->out_len == 0 && conn->closing)
        conn_gone(s, conn);
}

static void flush_pending(server_t *s)
{
    while (s->pending != NULL) {
        gs__conn_t *conn = s->pending;
        s->pending = conn->next_pending;
        conn->pending = 0;
        if (!conn->dead)
            flush_conn(s, conn);
    }
}

static void free_dead(server_t *s)
{
    gs__conn_t *next;
    for (gs__conn_t *conn = s->conns; conn != NULL; conn = next) {
        next = conn->next;
        if (!conn->dead)
            continue;
        if (conn->fd >= 0)
            conn_gone(s, conn);
        if (conn->prev != NULL)
            conn->prev->next = conn->next;
        else
            s->conns = conn->next;
        if (conn->next != NULL)
            conn->next->prev = conn->prev;
        s->n_conns--;
        free(conn->in);
        free(conn->out);
        free(conn);
    }
}

static void close_idle(server_t *s, int64_t now)
{
    for (gs__conn_t *conn = s->conns; conn != NULL; conn = conn->next) {
        if (conn->dead || conn->closing ||
            now - conn->last_active_ms < (int64_t)s->d->cfg.idle_timeout_ms ||
            gs__api_conn_busy(s->d, conn))
            continue;
        char msg[128];
        snprintf(msg, sizeof(msg), "no request within %.1f s: closing the connection",
                 s->d->cfg.idle_timeout_ms / 1000.0);
        gs__conn_send(conn, gs__api_error(NULL, "idle_timeout", msg));
        gs_info("client pid %d (user %s) sent nothing for %.1f s: closed", (int)conn->cred.pid,
                conn->cred.user, s->d->cfg.idle_timeout_ms / 1000.0);
        gs__conn_close(conn);
    }
}

/* Periodic work, at most every TICK_MS. */
static void tick(server_t *s, int64_t now, int64_t *next_reap, int64_t *next_refresh)
{
    gs__api_expire(s->d, now);
    gs__leases_expire(s->d, gs__wall_ms());
    close_idle(s, now);
    if (now >= *next_reap) {
        gs__leases_reap(s->d);
        *next_reap = now + REAP_MS;
    }
    if (now >= *next_refresh) {
        gs__daemon_refresh_usage(s->d);
        gs__metrics_publish(s->d);
        *next_refresh = now + REFRESH_MS;
    }
}

static void dispatch(server_t *s, struct epoll_event *ev)
{
    if (ev->data.ptr == &listen_tag) {
        accept_all(s);
        return;
    }
    if (ev->data.ptr == &signal_tag) {
        struct signalfd_siginfo si;
        while (read(s->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            if (si.ssi_signo == SIGHUP) {
                gs_info("SIGHUP ignored (restart gpushared to read its configuration again)");
                continue;
            }
            gs_info("%s: stopping (leases stay in the ledger)", strsignal((int)si.ssi_signo));
            s->stop = 1;
        }
        return;
    }
    gs__conn_t *conn = ev->data.ptr;
    if (conn->dead)
        return;
    if (ev->events & EPOLLOUT)
        flush_conn(s, conn);
    if (!conn->dead && (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        read_conn(s, conn);
}

static void loop(server_t *s)
{
    struct epoll_event events[MAX_EVENTS];
    int64_t now = gs__now_ms();
    int64_t next_tick = now, next_reap = now, next_refresh = now;
    while (!s->stop) {
        int timeout = (int)(next_tick > now ? next_tick - now : 0);
        int n = epoll_wait(s->epfd, events, MAX_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            gs_error("epoll_wait: %s", gs_strerror(-errno));
            break;
        }
        for (int i = 0; i < n; i++)
            dispatch(s, &events[i]);
        if (n == 0)
            gs__ledger_checkpoint(s->d->ledger); /* idle: a good moment for the disk work */
        now = gs__now_ms();
        if (now >= next_tick) {
            tick(s, now, &next_reap, &next_refresh);
            next_tick = now + TICK_MS;
        }
        if (s->d->need_schedule) {
            s->d->need_schedule = 0;
            gs__api_schedule(s->d);
        }
        gs__ledger_commit(s->d->ledger); /* before any reply about these changes leaves */
        flush_pending(s);
        free_dead(s);
    }
}

/* Refuses to take over a socket another daemon listens on; removes a stale one. */
static int claim_path(const struct sockaddr_un *addr, char *err, size_t errlen)
{
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
        return -errno;
    int busy = connect(probe, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
    close(probe);
    if (busy) {
        snprintf(err, errlen, "another gpushared is listening on %s", addr->sun_path);
        return GS_EBUSY;
    }
    unlink(addr->sun_path);
    return 0;
}

static int make_parent(const char *path)
{
    char dir[GS__PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int open_socket(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path)) {
        snprintf(err, errlen, "socket path %s is too long (at most %zu bytes)", path,
                 sizeof(addr.sun_path) - 1);
        return GS_ERANGE;
    }
    strcpy(addr.sun_path, path);
    int result = make_parent(path);
    if (result == 0)
        result = claim_path(&addr, err, errlen);
    if (result == GS_EBUSY)
        return result;
    int fd = result == 0 ? socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) : -1;
    if (result == 0 && fd < 0)
        result = -errno;
    if (result == 0 && (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
                        chmod(path, 0666) != 0 || listen(fd, 128) != 0))
        result = -errno;
    if (result != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, gs_strerror(result));
        if (fd >= 0)
            close(fd);
        return result;
    }
    return fd;
}

static int add_fd(server_t *s, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

static int open_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int gs__server_run(gs__daemon_t *d, char *err, size_t errlen)
{
    server_t s = {.d = d, .epfd = -1, .listen_fd = -1, .signal_fd = -1, .spare_fd = -1};
    s.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int result = 0;
    s.listen_fd = open_socket(d->cfg.socket, err, errlen);
    if (s.listen_fd < 0) {
        result = s.listen_fd;
        goto out;
    }
    s.epfd = epoll_create1(EPOLL_CLOEXEC);
    s.signal_fd = open_signals();
    if (s.epfd < 0 || s.signal_fd < 0 || add_fd(&s, s.listen_fd, &listen_tag) != 0 ||
        add_fd(&s, s.signal_fd, &signal_tag) != 0) {
        result = -errno;
        snprintf(err, errlen, "cannot set up the event loop: %s", gs_strerror(result));
        goto out;
    }
    gs_info("listening on %s", d->cfg.socket);
    loop(&s);
    for (gs__conn_t *conn = s.conns; conn != NULL; conn = conn->next)
        conn->dead = 1; /* leases stay: their holders keep them through a restart */
    free_dead(&s);
out:
    if (s.listen_fd >= 0) {
        close(s.listen_fd);
        unlink(d->cfg.socket);
    }
    if (s.signal_fd >= 0)
        close(s.signal_fd);
    if (s.spare_fd >= 0)
        close(s.spare_fd);
    if (s.epfd >= 0)
        close(s.epfd);
    return result;
}
