/* SPDX-License-Identifier: Apache-2.0 */
/* A client connection to gpushared: connect, send a JSON line, receive JSON lines. */
#include "gpushare/client.h"
#include "gpushare/error.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Replies can be large (status of a node with many leases) but never unbounded. */
#define REPLY_MAX ((size_t)GS_PROTO_LINE_MAX * 64)

struct gs_client {
    int fd;
    char *buf; /* received bytes not yet returned */
    size_t len;
    size_t cap;
};

const char *gs_client_socket_path(const char *explicit_path)
{
    if (explicit_path != NULL)
        return explicit_path;
    const char *env = getenv("GPUSHARE_SOCKET");
    return env != NULL && env[0] != '\0' ? env : GS_DEFAULT_SOCKET;
}

int gs_client_connect(const char *path, gs_client_t **out, char *err, size_t errlen)
{
    path = gs_client_socket_path(path);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path))
        return gs_fail(err, errlen, GS_ERANGE, "socket path %s is too long", path);
    strcpy(addr.sun_path, path);
    gs_client_t *client = calloc(1, sizeof(*client));
    if (client == NULL)
        return GS_ENOMEM;
    client->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int result = client->fd < 0 ? -errno : 0;
    if (result == 0 && connect(client->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        result = -errno;
    if (result != 0) {
        gs_client_close(client);
        return gs_fail(err, errlen, result, "cannot connect to gpushared at %s: %s%s", path,
                       gs_strerror(result),
                       result == GS_ENOENT || result == GS_ECONNREFUSED ? " (is gpushared running?)"
                                                                        : "");
    }
    *out = client;
    return 0;
}

void gs_client_close(gs_client_t *client)
{
    if (client == NULL)
        return;
    if (client->fd >= 0)
        close(client->fd);
    free(client->buf);
    free(client);
}

int gs_client_fd(const gs_client_t *client)
{
    return client->fd;
}

int gs_client_send(gs_client_t *client, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text == NULL)
        return GS_EPROTO;
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps leaves room: replace the NUL, send len + 1 bytes */
    int result = 0;
    for (size_t done = 0; done < len + 1;) {
        ssize_t n = send(client->fd, text + done, len + 1 - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            result = -errno;
            break;
        }
        done += (size_t)n;
    }
    free(text);
    return result;
}

/* Takes one complete line out of the buffer, if there is one. Returns 1 with *msg, 0 when no
 * line is complete, or GS_EPROTO. */
static int take_line(gs_client_t *client, json_t **msg)
{
    char *nl = client->len > 0 ? memchr(client->buf, '\n', client->len) : NULL;
    if (nl == NULL)
        return 0;
    size_t line = (size_t)(nl - client->buf);
    json_t *obj = json_loadb(client->buf, line, 0, NULL);
    memmove(client->buf, nl + 1, client->len - line - 1);
    client->len -= line + 1;
    if (!json_is_object(obj)) {
        json_decref(obj);
        return GS_EPROTO;
    }
    *msg = obj;
    return 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what the socket has, waiting up to timeout_ms (< 0 forever). */
static int fill(gs_client_t *client, int timeout_ms)
{
    if (client->len == client->cap) {
        if (client->cap >= REPLY_MAX)
            return GS_EPROTO;
        size_t cap = client->cap ? client->cap * 2 : 4096;
        char *grown = realloc(client->buf, cap);
        if (grown == NULL)
            return GS_ENOMEM;
        client->buf = grown;
        client->cap = cap;
    }
    struct pollfd pfd = {.fd = client->fd, .events = POLLIN};
    int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0)
        return errno == EINTR ? GS_ETIMEDOUT : -errno;
    if (ready == 0)
        return GS_ETIMEDOUT;
    ssize_t n = recv(client->fd, client->buf + client->len, client->cap - client->len, 0);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (n == 0)
        return GS_ECONNREFUSED;
    client->len += (size_t)n;
    return 0;
}

int gs_client_recv(gs_client_t *client, int timeout_ms, json_t **msg)
{
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        int result = take_line(client, msg);
        if (result != 0)
            return result > 0 ? 0 : result;
        int left = -1;
        if (deadline >= 0) {
            int64_t rest = deadline - now_ms();
            left = rest > 0 ? (int)rest : 0;
        }
        result = fill(client, left);
        if (result == GS_ETIMEDOUT && left != 0 && (deadline < 0 || now_ms() < deadline))
            continue; /* interrupted by a signal: try again */
        if (result != 0)
            return result;
    }
}

int gs_client_call(gs_client_t *client, const json_t *msg, int timeout_ms, json_t **reply)
{
    int result = gs_client_send(client, msg);
    while (result == 0) {
        json_t *got = NULL;
        result = gs_client_recv(client, timeout_ms, &got);
        if (result != 0)
            break;
        if (json_object_get(got, "ok") != NULL) {
            *reply = got;
            return 0;
        }
        json_decref(got); /* an asynchronous event: not the reply */
    }
    return result;
}

const char *gs_reply_error(const json_t *reply, const char **message)
{
    if (json_is_true(json_object_get(reply, "ok")))
        return NULL;
    json_t *error = json_object_get(reply, "error");
    const char *code = json_string_value(json_object_get(error, "code"));
    const char *text = json_string_value(json_object_get(error, "message"));
    if (message != NULL)
        *message = text != NULL ? text : "the daemon gave no reason";
    return code != NULL ? code : "unknown";
}

gs_wire_error_t gs_reply_wire_error(const json_t *reply)
{
    const char *code = gs_reply_error(reply, NULL);
    return code == NULL ? GS_WIRE_OK : gs_wire_error_parse(code);
}
