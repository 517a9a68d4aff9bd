/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the extender's HTTP on arbitrary bytes, both ways, over socket pairs (no TCP
 * port per input). The bytes are requests to src/http's server as the extender runs it (which
 * must answer HTTP or close, never crash or hang), its head parser alone, a response to the
 * API client (a status or an error, and no more body than it got), and chunked transfer coding
 * for the decoder. */
#include "http/httpd.h"
#include "http/httpd_internal.h"
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

static void answer(void *ctx, const gs__httpd_request_t *request, gs__httpd_reply_t *reply)
{
    (void)ctx, (void)request;
    reply->body = strdup("{}");
    reply->len = 2;
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

/* The bytes as requests: every answer starts "HTTP/1.1 ", and the server closes the connection
 * once the input has ended (within the 5 s the peer waits). */
static void as_request(gs__httpd_t *s, const uint8_t *data, size_t size)
{
    int fds[2];
    pair_with(data, size, fds);
    if (fcntl_nonblock(fds[1]) != 0 || gs__httpd_adopt(s, fds[1]) != 0)
        abort();
    char out[512];
    ssize_t n = recv(fds[0], out, sizeof(out), 0);
    if ((n < 0 && errno != ECONNRESET) || (n > 0 && (n < 9 || memcmp(out, "HTTP/1.1 ", 9) != 0)))
        abort();
    while (n > 0)
        n = recv(fds[0], out, sizeof(out), 0);
    if (n < 0 && errno != ECONNRESET)
        abort(); /* not closed within 5 s */
    close(fds[0]);
}

/* The bytes as a head alone: parsed or refused with a status the server sends. */
static void as_head(const uint8_t *data, size_t size)
{
    gs__httpd_head_t head;
    int status = gs__httpd_parse_head((const char *)data, size, &head);
    if (status != 0 && strcmp(gs__httpd_reason(status), "Unknown") == 0)
        abort();
    if (status == 0 &&
        (head.method[0] == '\0' || head.target[0] == '\0' || (head.chunked && head.length > 0)))
        abort();
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
    static gs__httpd_t *server; /* its listening socket is never used */
    gs__httpd_opts_t o = {.addr = "127.0.0.1", .handler = answer, .max_body = 4096};
    if (server == NULL && gs__httpd_start(&o, &server, NULL) != 0)
        abort();
    if (size > 65536)
        return 0;
    as_request(server, data, size);
    as_head(data, size);
    as_response(data, size);
    gs__http_chunks_t d = {0};
    size_t used = 0, got = 0;
    int state = gs__http_chunks(&d, (const char *)data, size, count, &got, &used);
    if (used > size || got > size || state == 1)
        abort();
    return 0;
}
