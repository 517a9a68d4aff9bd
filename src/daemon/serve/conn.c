/* SPDX-License-Identifier: Apache-2.0 */
/* A client connection: queued replies, descriptors passed with them, writing, flow control. */
#include "conn.h"
#include "api.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const gs__cred_t *gs__conn_cred(const gs__conn_t *conn)
{
    return &conn->cred;
}

gs__user_t *gs__conn_user(const gs__conn_t *conn)
{
    return conn->user;
}

static int reserve_out(gs__conn_t *conn, size_t extra)
{
    if (conn->out_len + extra <= conn->out_cap)
        return 0;
    if (conn->out_len + extra > gs__server_out_max(conn->server))
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

/* The reply that takes the place of one the user's budget of unread output cannot hold. */
static char *over_budget(gs__conn_t *conn, const json_t *msg, size_t len)
{
    gs__user_t *user = conn->user;
    const char *op = json_string_value(json_object_get(msg, "op"));
    char why[256];
    snprintf(why, sizeof(why),
             "user %s has %zu bytes of replies unread, the most one user may have with this "
             "reply of %zu bytes is %u (max_output_per_user): read them first",
             conn->cred.user, user->output, len, gs__server_user_out_max(conn->server));
    if (gs__users_warn_due(user, GS__WARN_OUTPUT, gs__now_ms()))
        gs_warn("user %s does not read its replies (%zu bytes waiting): a reply of %zu bytes to "
                "pid %d refused%s",
                conn->cred.user, user->output, len, (int)conn->cred.pid,
                gs__users_suppressed(user, GS__WARN_OUTPUT));
    json_t *error = gs__api_error(op, GS_WIRE_TOO_MANY, why);
    char *text = error != NULL ? json_dumps(error, JSON_COMPACT) : NULL;
    json_decref(error);
    return text;
}

/* Appends msg (stolen) as one line. Returns 0, or -1 when the connection cannot take it. */
static int append(gs__conn_t *conn, json_t *msg)
{
    if (msg == NULL)
        return -1;
    char *text = conn->dead ? NULL : json_dumps(msg, JSON_COMPACT);
    size_t len = text != NULL ? strlen(text) : 0;
    /* What all of a user's connections hold unread is bounded (root excepted): a reply beyond
     * it is refused with one line, the connection stays. */
    if (text != NULL && conn->cred.uid != 0 &&
        conn->user->output + len + 1 > gs__server_user_out_max(conn->server)) {
        free(text);
        text = over_budget(conn, msg, len);
        len = text != NULL ? strlen(text) : 0;
    }
    json_decref(msg);
    if (text == NULL)
        return -1;
    int result = reserve_out(conn, len + 1);
    if (result != 0) {
        if (gs__users_warn_due(conn->user, GS__WARN_OUTPUT, gs__now_ms()))
            gs_warn("client pid %d (user %s) does not read its replies (%zu bytes waiting): "
                    "closing its connection%s",
                    (int)conn->cred.pid, conn->cred.user, conn->out_len,
                    gs__users_suppressed(conn->user, GS__WARN_OUTPUT));
        conn->dead = 1;
    } else {
        memcpy(conn->out + conn->out_len, text, len);
        conn->out[conn->out_len + len] = '\n';
        conn->out_len += len + 1;
        conn->user->output += len + 1;
        gs__server_pending(conn->server, conn);
    }
    free(text);
    return result == 0 ? 0 : -1;
}

void gs__conn_send(gs__conn_t *conn, json_t *msg)
{
    append(conn, msg);
}

void gs__conn_send_now(gs__conn_t *conn, json_t *msg)
{
    if (append(conn, msg) == 0)
        gs__conn_flush(conn);
}

int gs__conn_send_fd(gs__conn_t *conn, json_t *msg, int fd)
{
    if (conn->pass_fd >= 0) {
        json_decref(msg);
        return GS_EBUSY;
    }
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
        json_decref(msg);
        return -errno;
    }
    size_t at = conn->out_len;
    if (append(conn, msg) != 0) {
        close(copy);
        return GS_EIO;
    }
    conn->pass_fd = copy;
    conn->pass_at = at;
    return 0;
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

void gs__conn_set_waiter(gs__conn_t *conn, void *waiter)
{
    conn->waiter = waiter;
}

void *gs__conn_waiter(const gs__conn_t *conn)
{
    return conn->waiter;
}

void gs__conn_hold(gs__conn_t *conn, int on)
{
    if (!on && conn->held)
        conn->unheld = 1;
    conn->held = on != 0;
    gs__server_pending(conn->server, conn); /* its events are set again at the flush */
}

void gs__conn_close(gs__conn_t *conn)
{
    conn->closing = 1;
}

int gs__conn_paused(const gs__conn_t *conn)
{
    return conn->pass_fd >= 0 || conn->out_len > GS__CONN_PAUSE_BYTES || conn->deferred_ms != 0 ||
           conn->held;
}

/* Sends len bytes with the connection's descriptor to pass attached. */
static ssize_t send_with_fd(gs__conn_t *conn, const char *data, size_t len)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &conn->pass_fd, sizeof(int));
    return sendmsg(conn->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Sends from out[done]: up to the byte a descriptor goes with, or from it with the descriptor. */
static ssize_t send_some(gs__conn_t *conn, size_t done)
{
    size_t len = conn->out_len - done;
    if (conn->pass_fd >= 0 && conn->pass_at == done) {
        ssize_t n = send_with_fd(conn, conn->out + done, len);
        if (n > 0) {
            close(conn->pass_fd);
            conn->pass_fd = -1;
        }
        return n;
    }
    if (conn->pass_fd >= 0 && conn->pass_at > done)
        len = conn->pass_at - done;
    return send(conn->fd, conn->out + done, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int gs__conn_flush(gs__conn_t *conn)
{
    if (conn->dead || conn->fd < 0)
        return -1;
    size_t done = 0;
    while (done < conn->out_len) {
        ssize_t n = send_some(conn, done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    if (done > 0) /* out may be NULL when nothing was queued */
        memmove(conn->out, conn->out + done, conn->out_len - done);
    conn->out_len -= done;
    conn->user->output -= done <= conn->user->output ? done : conn->user->output;
    if (conn->pass_fd >= 0)
        conn->pass_at -= done;
    /* A buffer grown for one large reply is given back once it is written. */
    if (conn->out_len == 0 && conn->out_cap > GS__CONN_PAUSE_BYTES) {
        free(conn->out);
        conn->out = NULL;
        conn->out_cap = 0;
    }
    return 0;
}

void gs__conn_free(gs__conn_t *conn)
{
    conn->user->output -= conn->out_len <= conn->user->output ? conn->out_len : conn->user->output;
    if (conn->pass_fd >= 0)
        close(conn->pass_fd);
    free(conn->in);
    free(conn->out);
    free(conn);
}
