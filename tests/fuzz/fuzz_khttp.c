/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: src/k8s's HTTP on arbitrary bytes, both ways, over socket pairs (no TCP
 * port per input). The bytes are a request to the extender's server (which must answer HTTP or
 * close, never crash or hang), a response to the API client (a status or an error, and no more
 * body than it got), and chunked transfer coding for the decoder. */
#include "http_internal.h"

#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *answer(void *ctx, const char *method, const char *path, const char *body, size_t len,
                    int *status, const char **type)
{
    (void)ctx, (void)method, (void)path, (void)body, (void)len, (void)status, (void)type;
    return strdup("{}");
}

static int fcntl_nonblock(int fd)
{
    return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1 ? -1 : 0;
}

/* A connected pair: [0] the peer (blocking), [1] ours (non-blocking), the bytes written to [0]
 * and its writing end shut. */
static void pair_with(const uint8_t *data, size_t size, int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        abort();
    if (send(fds[0], data, size, MSG_NOSIGNAL) != (ssize_t)size)
        abort(); /* inputs are small: the socket buffer takes them */
    shutdown(fds[0], SHUT_WR);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* The bytes as requests: every answer starts "HTTP/1.1 ", and the server stops at the end. */
static void as_request(gs__khttp_server_t *s, const uint8_t *data, size_t size)
{
    int fds[2];
    pair_with(data, size, fds);
    if (fcntl_nonblock(fds[1]) != 0)
        abort();
    gs__khttp_serve_fd(s, fds[1]);
    close(fds[1]);
    char out[512];
    ssize_t n = recv(fds[0], out, sizeof(out), 0);
    if ((n < 0 && errno != ECONNRESET) || (n > 0 && (n < 9 || memcmp(out, "HTTP/1.1 ", 9) != 0)))
        abort();
    close(fds[0]);
}

static int count(void *ctx, const char *data, size_t len)
{
    (void)data;
    *(size_t *)ctx += len;
    return 0;
}

/* The bytes as a response: a status or an error with its reason, at most the body given. */
static void as_response(const uint8_t *data, size_t size)
{
    int fds[2];
    pair_with(data, size, fds);
    if (fcntl_nonblock(fds[1]) != 0)
        abort();
    gs__khttp_conn_t c = {.fd = fds[1], .deadline = gs__khttp_now_ms() + 5000};
    char err[256] = "";
    size_t got = 0;
    long status = 0;
    int result = gs__khttp_response(&c, count, &got, &status, err, sizeof(err));
    if (got > size || (result == 0 && status < 100) || (result != 0 && err[0] == '\0') ||
        result == GS_ETIMEDOUT)
        abort();
    close(fds[0]);
    close(fds[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gs__khttp_server_t *server; /* its listening socket is never used */
    static uint16_t port;
    if (server == NULL &&
        gs__khttp_serve("127.0.0.1", 0, 1, 4096, answer, NULL, &server, &port) != 0)
        abort();
    if (size > 65536)
        return 0;
    as_request(server, data, size);
    as_response(data, size);
    gs__khttp_chunks_t d = {0};
    size_t used = 0, got = 0;
    int state = gs__khttp_chunks(&d, (const char *)data, size, count, &got, &used);
    if (used > size || got > size || state == 1)
        abort();
    return 0;
}
