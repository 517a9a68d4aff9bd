/* SPDX-License-Identifier: Apache-2.0 */
/* The API server: unix socket, epoll loop, accepting under per-user limits, line framing, idle
 * connections. */
#include "server.h"
#include "api.h"
#include "conn.h"
#include "lease_socket.h"
#include "metrics.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define TICK_MS    100  /* queue timeouts and idle connections */
#define REAP_MS    250  /* the reaper */
#define REFRESH_MS 1000 /* NVML figures, the metrics snapshot, the ledger's file */
#define MAX_EVENTS 64
#define ACCEPT_MAX 1024 /* connections taken per wake-up */
/* Connections waiting to be taken: everyone's, first come first served. A short queue bounds
 * how long a caller waits behind another user's flood of connections (each is refused in a few
 * microseconds); a caller that finds it full waits in connect() for its turn. */
#define LISTEN_BACKLOG 128

typedef struct server {
    gs__daemon_t *d;
    gs__metrics_t *metrics; /* NULL: metrics off */
    int epfd;
    int listen_fd;
    int signal_fd;
    int stop;
    gs__conn_t *conns;
    gs__conn_t *idle_head, *idle_tail; /* by last activity, oldest first */
    gs__conn_t *pending;               /* connections with output to write */
    unsigned n_conns;
    unsigned n_deferred;     /* connections whose request waits its turn (conn->deferred_ms) */
    int spare_fd;            /* kept open to refuse connections cleanly when out of descriptors */
    uint64_t refused;        /* connections refused for want of descriptors, not yet logged */
    int64_t refused_said_ms; /* when that was last logged */
} server_t;

/* Tags for epoll: the special descriptors (the checkpoint worker's too); connections are their own
 * pointers. */
static char listen_tag, signal_tag, ckpt_tag;

void gs__server_pending(server_t *s, gs__conn_t *conn)
{
    if (conn->pending)
        return;
    conn->pending = 1;
    conn->next_pending = s->pending;
    s->pending = conn;
}

size_t gs__server_out_max(const server_t *s)
{
    return s->d->cfg.max_output_per_connection;
}

unsigned gs__server_user_out_max(const server_t *s)
{
    return s->d->cfg.max_output_per_user;
}

static void idle_remove(server_t *s, gs__conn_t *conn)
{
    if (conn->idle_prev != NULL)
        conn->idle_prev->idle_next = conn->idle_next;
    else if (s->idle_head == conn)
        s->idle_head = conn->idle_next;
    if (conn->idle_next != NULL)
        conn->idle_next->idle_prev = conn->idle_prev;
    else if (s->idle_tail == conn)
        s->idle_tail = conn->idle_prev;
    conn->idle_prev = conn->idle_next = NULL;
}

/* Marks conn active now: it moves to the end of the idle list. */
static void touch(server_t *s, gs__conn_t *conn, int64_t now)
{
    conn->last_active_ms = now;
    idle_remove(s, conn);
    conn->idle_prev = s->idle_tail;
    if (s->idle_tail != NULL)
        s->idle_tail->idle_next = conn;
    else
        s->idle_head = conn;
    s->idle_tail = conn;
}

/* Answers a connection that is not taken with one error line (if its socket has room) and
 * closes it; the log says so at most every 5 s per user. */
static void turn_away(server_t *s, int fd, gs__user_t *user, const gs__cred_t *cred)
{
    char line[256];
    int n = snprintf(line, sizeof(line),
                     "{\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":\"user %s already has "
                     "%u connections to gpushared, the most one user may have "
                     "(max_connections_per_user)\"}}\n",
                     gs_wire_error_name(GS_WIRE_BUSY), cred->user, user->conns);
    if (n > 0 && (size_t)n < sizeof(line))
        send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    if (gs__users_warn_due(user, GS__WARN_CONNS, gs__now_ms()))
        gs_warn("user %s has %u connections (max_connections_per_user): refused another%s",
                cred->user, user->conns, gs__users_suppressed(user, GS__WARN_CONNS));
    (void)s;
}

/* A connection refused for want of descriptors: said at most every 5 s, with how many were
 * refused meanwhile (a flood is one line). */
static void note_no_fds(server_t *s)
{
    int64_t now = gs__now_ms();
    s->refused++;
    if (now - s->refused_said_ms < 5000)
        return;
    gs_warn("out of file descriptors (%u connections): refused %llu connection%s", s->n_conns,
            (unsigned long long)s->refused, s->refused == 1 ? "" : "s");
    s->refused_said_ms = now;
    s->refused = 0;
}

/* Reads who is calling; refuses a user at their connection limit, and a caller whose process is
 * gone (a zombie that connected: its pid names nothing the daemon may ever signal, and may
 * soon be another user's). Returns 0 or -1 (fd closed). A refusal costs a few system calls: a
 * flood of connections delays the others behind it in the socket's queue as little as
 * possible. */
static int admit(server_t *s, int fd, gs__cred_t *cred, gs__user_t **user)
{
    struct ucred uc;
    socklen_t len = sizeof(uc);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0 ||
        (*user = gs__users_get(&s->d->users, uc.uid)) == NULL) {
        close(fd);
        return -1;
    }
    memset(cred, 0, sizeof(*cred));
    cred->uid = uc.uid;
    cred->gid = uc.gid;
    cred->pid = uc.pid;
    snprintf(cred->user, sizeof(cred->user), "%s", (*user)->name);
    if (uc.uid != 0 && (*user)->conns >= s->d->cfg.max_connections_per_user) {
        turn_away(s, fd, *user, cred);
        return -1;
    }
    int peer = gs__proc_peer(fd, uc.pid, uc.uid, &cred->start);
    if (peer == -EMFILE || peer == -ENFILE) {
        close(fd);
        note_no_fds(s);
        return -1;
    }
    if (peer != 0) {
        close(fd);
        if (gs__users_warn_due(*user, GS__WARN_DENIED, gs__now_ms()))
            gs_warn("user %s: refused a connection from pid %d: that process is gone%s", cred->user,
                    (int)uc.pid, gs__users_suppressed(*user, GS__WARN_DENIED));
        return -1;
    }
    return 0;
}

static void accept_one(server_t *s, int fd, uint64_t lease_only, int foreign)
{
    gs__cred_t cred;
    gs__user_t *user = NULL;
    if (admit(s, fd, &cred, &user) != 0)
        return;
    gs__conn_t *conn = calloc(1, sizeof(*conn));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = conn};
    if (conn == NULL || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        gs_error("cannot take a connection: %s", gs_strerror(conn ? -errno : GS_ENOMEM));
        free(conn);
        close(fd);
        return;
    }
    conn->fd = fd;
    conn->pass_fd = -1;
    conn->server = s;
    conn->cred = cred;
    conn->user = user;
    conn->events = EPOLLIN;
    conn->lease_only = lease_only;
    conn->lease_foreign = foreign;
    user->conns++;
    conn->next = s->conns;
    if (s->conns != NULL)
        s->conns->prev = conn;
    s->conns = conn;
    s->n_conns++;
    touch(s, conn, gs__now_ms());
    gs_debug("connection from pid %d (user %s)", (int)cred.pid, cred.user);
}

void gs__server_refuse(server_t *s, int listen_fd)
{
    if (s->spare_fd >= 0)
        close(s->spare_fd);
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        close(fd);
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    note_no_fds(s);
}

static void accept_all(server_t *s)
{
    for (int i = 0; i < ACCEPT_MAX; i++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            gs__server_refuse(s, s->listen_fd);
            return;
        }
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                gs_warn("accept: %s", gs_strerror(-errno));
            return;
        }
        accept_one(s, fd, 0, 0);
    }
}

void gs__server_take(server_t *s, int fd, uint64_t lease_only, int foreign)
{
    accept_one(s, fd, lease_only, foreign);
}

int gs__server_watch(server_t *s, int fd, uintptr_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

void gs__server_unwatch(server_t *s, int fd)
{
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
}

gs__daemon_t *gs__server_daemon(server_t *s)
{
    return s->d;
}

uint64_t gs__conn_lease_only(const gs__conn_t *conn)
{
    return conn->lease_only;
}

int gs__conn_lease_foreign(const gs__conn_t *conn)
{
    return conn->lease_foreign;
}

struct server *gs__conn_server(const gs__conn_t *conn)
{
    return conn->server;
}

/* The connection ended: let the API drop its queued request and leases now; the memory goes at
 * the end of the iteration (epoll events of this iteration may still point at it). */
static void conn_gone(server_t *s, gs__conn_t *conn)
{
    if (conn->fd < 0)
        return;
    conn->dead = 1;
    if (!s->stop)
        gs__api_conn_closed(s->d, conn); /* at shutdown leases stay for the next start */
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    close(conn->fd);
    conn->fd = -1;
}

/* Asks epoll for what the connection needs now: input unless paused, output while any. */
static void set_events(server_t *s, gs__conn_t *conn)
{
    unsigned want =
        (gs__conn_paused(conn) || conn->closing ? 0 : EPOLLIN) | (conn->out_len > 0 ? EPOLLOUT : 0);
    if (conn->fd < 0 || want == conn->events)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = conn};
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, conn->fd, &ev);
    conn->events = want;
}

static void too_long(server_t *s, gs__conn_t *conn)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "request line longer than %d bytes: closing the connection",
             GS_PROTO_LINE_MAX);
    gs__conn_send(conn, gs__api_error(NULL, GS_WIRE_TOO_LONG, msg));
    if (gs__users_warn_due(conn->user, GS__WARN_BAD_LINE, gs__now_ms()))
        gs_warn("client pid %d (user %s) sent a line longer than %d bytes: closed%s",
                (int)conn->cred.pid, conn->cred.user, GS_PROTO_LINE_MAX,
                gs__users_suppressed(conn->user, GS__WARN_BAD_LINE));
    s->d->counters.bad_requests++;
    gs__conn_close(conn);
}

/* Handles the complete lines buffered, while the connection is not paused. */
static void handle_lines(server_t *s, gs__conn_t *conn)
{
    size_t start = 0;
    while (!conn->closing && !conn->dead && !gs__conn_paused(conn)) {
        char *nl = memchr(conn->in + start, '\n', conn->in_len - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (conn->in + start));
        int64_t now = gs__now_ms();
        touch(s, conn, now);
        int64_t wait = gs__api_request(s->d, conn, conn->in + start, len);
        if (wait > 0) { /* the same line again once its turn comes (resume_deferred) */
            conn->deferred_ms = now + wait;
            s->n_deferred++;
            break;
        }
        start += len + 1;
    }
    memmove(conn->in, conn->in + start, conn->in_len - start);
    conn->in_len -= start;
    if (conn->in_len == GS_PROTO_LINE_MAX && !conn->closing)
        too_long(s, conn);
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
    if (conn->in == NULL && (conn->in = malloc(GS_PROTO_LINE_MAX)) == NULL) {
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

static void flush_conn(server_t *s, gs__conn_t *conn)
{
    if (conn->dead || conn->fd < 0)
        return;
    int was_paused = gs__conn_paused(conn) || conn->unheld;
    conn->unheld = 0;
    if (gs__conn_flush(conn) != 0) {
        conn_gone(s, conn);
        return;
    }
    if (conn->out_len == 0 && conn->closing) {
        conn_gone(s, conn);
        return;
    }
    /* Caught up: the requests that waited in the buffer are served now. */
    if (was_paused && !gs__conn_paused(conn) && conn->in_len > 0)
        handle_lines(s, conn);
    if (!conn->pending)
        set_events(s, conn);
}

static void flush_pending(server_t *s)
{
    while (s->pending != NULL) {
        gs__conn_t *conn = s->pending;
        s->pending = conn->next_pending;
        conn->pending = 0;
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
        idle_remove(s, conn);
        s->n_deferred -= conn->deferred_ms != 0;
        s->n_conns--;
        conn->user->conns--;
        gs__conn_free(conn);
    }
}

/* Whether the connection sent something not handled yet: a request that waited out a stall of
 * the daemon in the socket's buffer (or a paused connection's buffer) was asked in time. */
static int has_input(const gs__conn_t *conn)
{
    int pending = 0;
    return (conn->in_len > 0 && memchr(conn->in, '\n', conn->in_len) != NULL) ||
           (ioctl(conn->fd, FIONREAD, &pending) == 0 && pending > 0);
}

/* Closes the connections that asked nothing for idle_timeout and hold nothing, from the oldest
 * activity on; one that holds a lease or a queued request is looked at again a timeout later. */
static void close_idle(server_t *s, int64_t now)
{
    int64_t timeout = (int64_t)s->d->cfg.idle_timeout_ms;
    gs__conn_t *conn;
    while ((conn = s->idle_head) != NULL && now - conn->last_active_ms >= timeout) {
        idle_remove(s, conn);
        if (conn->dead || conn->closing)
            continue;
        if (gs__api_conn_busy(s->d, conn) || has_input(conn)) {
            touch(s, conn, now);
            continue;
        }
        if (conn->out_len > 0) {
            conn->dead = 1; /* it reads nothing: its replies are dropped with it */
            continue;
        }
        char msg[128];
        snprintf(msg, sizeof(msg), "no request within %.1f s: closing the connection",
                 timeout / 1000.0);
        gs__conn_send(conn, gs__api_error(NULL, GS_WIRE_IDLE_TIMEOUT, msg));
        if (gs__users_warn_due(conn->user, GS__WARN_IDLE, now))
            gs_info("client pid %d (user %s) sent nothing for %.1f s: closed%s",
                    (int)conn->cred.pid, conn->cred.user, timeout / 1000.0,
                    gs__users_suppressed(conn->user, GS__WARN_IDLE));
        gs__conn_close(conn);
    }
}

/* Hands the requests that waited their turn (handle_lines) to the API again once it came. */
static void resume_deferred(server_t *s, int64_t now)
{
    for (gs__conn_t *conn = s->n_deferred > 0 ? s->conns : NULL; conn != NULL; conn = conn->next) {
        if (conn->deferred_ms == 0 || now < conn->deferred_ms || conn->dead)
            continue;
        conn->deferred_ms = 0;
        s->n_deferred--;
        handle_lines(s, conn);
        if (!conn->dead && !conn->pending)
            set_events(s, conn);
    }
}

/* Periodic work, at most every TICK_MS. */
static void tick(server_t *s, int64_t now, int64_t *next_reap, int64_t *next_refresh)
{
    gs__api_expire(s->d, now);
    resume_deferred(s, now);
    gs__leases_expire(s->d, gs__wall_ms());
    close_idle(s, now);
    if (now >= *next_reap) {
        gs__leases_reap(s->d);
        gs__modes_tick(s->d, now);
        *next_reap = now + REAP_MS;
    }
    if (gs__watchdog_tick(s->d, now))
        gs__metrics_publish(s->metrics, s->d); /* what the scan found is in the metrics at once */
    if (now >= *next_refresh) {
        gs__gpus_refresh_usage(s->d);
        gs__leases_check_ledger(s->d);
        gs__metrics_publish(s->metrics, s->d);
        *next_refresh = now + REFRESH_MS;
    }
}

static void on_signals(server_t *s)
{
    struct signalfd_siginfo si;
    while (read(s->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            gs_info("SIGHUP ignored (restart gpushared to read its configuration again)");
            continue;
        }
        gs_info("%s: stopping (leases stay in the ledger)", strsignal((int)si.ssi_signo));
        s->stop = 1;
    }
}

static void dispatch(server_t *s, struct epoll_event *ev)
{
    if (ev->data.ptr == &listen_tag) {
        accept_all(s);
        return;
    }
    if (ev->data.ptr == &signal_tag) {
        on_signals(s);
        return;
    }
    if (ev->data.ptr == &ckpt_tag) {
        gs__api_ckpt_done(s->d); /* suspends and resumes done (gpu/checkpoint.h) */
        return;
    }
    if (ev->data.u64 & 1u) { /* a keyed lease's socket (lease_socket.c) */
        gs__lease_socket_accept((gs__lease_socket_t *)(uintptr_t)(ev->data.u64 & ~(uint64_t)1));
        return;
    }
    gs__conn_t *conn = ev->data.ptr;
    if (conn->dead)
        return;
    if (ev->events & EPOLLOUT)
        flush_conn(s, conn);
    if (!conn->dead && (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        if ((ev->events & EPOLLIN) || conn->closing || !gs__conn_paused(conn))
            read_conn(s, conn);
        else
            conn_gone(s, conn); /* hung up while paused: nobody will read the replies */
    }
    /* A connection with output is flushed at the end of the iteration, which sets its events
     * then: most replies leave at once, with no epoll_ctl at all. */
    if (!conn->dead && !conn->pending)
        set_events(s, conn);
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
        if (s->d->fatal)
            s->stop = 1;
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
    if (busy)
        return gs_fail(err, errlen, GS_EBUSY, "another gpushared is listening on %s",
                       addr->sun_path);
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
    if (strlen(path) >= sizeof(addr.sun_path))
        return gs_fail(err, errlen, GS_ERANGE, "socket path %s is too long (at most %zu bytes)",
                       path, sizeof(addr.sun_path) - 1);
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
                        chmod(path, 0666) != 0 || listen(fd, LISTEN_BACKLOG) != 0))
        result = -errno;
    if (result != 0) {
        if (fd >= 0)
            close(fd);
        return gs_fail(err, errlen, result, "cannot listen on %s: %s", path, gs_strerror(result));
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

/* The keyed leases restored from the ledger listen on their sockets again. */
static void open_lease_sockets(server_t *s)
{
    char err[GS__PATH_MAX + 128];
    for (gs__lease_t *lease = s->d->leases; lease != NULL; lease = lease->next) {
        if (gs__lease_keyed(lease) && gs__lease_socket_open(s, lease, err, sizeof(err)) != 0)
            gs_error("%s", err);
    }
}

int gs__server_run(gs__daemon_t *d, gs__metrics_t *metrics, char *err, size_t errlen)
{
    server_t s = {
        .d = d, .metrics = metrics, .epfd = -1, .listen_fd = -1, .signal_fd = -1, .spare_fd = -1};
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
        add_fd(&s, s.signal_fd, &signal_tag) != 0 ||
        (gs__ckpt_fd(d) >= 0 && add_fd(&s, gs__ckpt_fd(d), &ckpt_tag) != 0)) {
        result = -errno;
        gs_fail(err, errlen, result, "cannot set up the event loop: %s", gs_strerror(result));
        goto out;
    }
    gs_info("listening on %s", d->cfg.socket);
    open_lease_sockets(&s);
    loop(&s);
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next)
        gs__lease_socket_close(lease, 0); /* listening again at the next start */
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
