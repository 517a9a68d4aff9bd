/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of src/k8s's HTTP: the chunked decoder fed in every split, the server (keep-alive,
 * pipelining, chunked bodies, Expect: 100-continue, 413, malformed heads, 404), the client
 * (Content-Length, chunked and close-delimited bodies, a peer that never answers, refused
 * connections, a stop). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "http_internal.h"

typedef struct sink {
    char data[4096];
    size_t len;
    size_t stop_after; /* 0: never */
} sink_t;

static int collect(void *ctx, const char *data, size_t len)
{
    sink_t *s = ctx;
    if (s->len + len < sizeof(s->data)) {
        memcpy(s->data + s->len, data, len);
        s->len += len;
        s->data[s->len] = '\0';
    }
    return s->stop_after > 0 && s->len >= s->stop_after;
}

static void test_chunks(void **state)
{
    (void)state;
    static const char in[] = "4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n"
                             "Trailer: x\r\n\r\nNEXT";
    /* Every split of the input into two feeds gives the same data and stops at the end. */
    for (size_t cut = 0; cut < sizeof(in) - 1; cut++) {
        gs__khttp_chunks_t d = {0};
        sink_t s = {.len = 0};
        size_t used1 = 0, used2 = 0;
        int a = gs__khttp_chunks(&d, in, cut, collect, &s, &used1);
        int b =
            a == 2 ? 2 : gs__khttp_chunks(&d, in + cut, sizeof(in) - 1 - cut, collect, &s, &used2);
        assert_int_equal(b, 2);
        assert_string_equal(s.data, "Wikipedia in\r\n\r\nchunks.");
        assert_int_equal(used1 + used2, sizeof(in) - 1 - 4); /* "NEXT" is not the body's */
    }
    static const char *const bad[] = {"x\r\n", "4\r\nWikiX\r\n", "\r\n", "10000000000000000\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gs__khttp_chunks_t d = {0};
        sink_t s = {.len = 0};
        size_t used;
        assert_int_equal(gs__khttp_chunks(&d, bad[i], strlen(bad[i]), collect, &s, &used),
                         GS_EPROTO);
    }
}

/* The server's handler: echoes the method, path and body. */
static char *echo(void *ctx, const char *method, const char *path, const char *body, size_t len,
                  int *status, const char **type)
{
    (void)ctx;
    if (strcmp(path, "/missing") == 0) {
        *status = 404;
        *type = "text/plain";
        return strdup("no\n");
    }
    char *out = malloc(len + 64);
    snprintf(out, len + 64, "%s %s [%.*s]", method, path, (int)len, body);
    return out;
}

/* Sends raw bytes to the server and reads what comes back until it closes (or 2 s). */
static void raw(uint16_t port, const char *req, size_t reqlen, char *out, size_t outlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(send(fd, req, reqlen, MSG_NOSIGNAL), (ssize_t)reqlen);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < outlen && (r = recv(fd, out + n, outlen - 1 - n, 0)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fd);
}

#define OK_HEAD(len) "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " len

static void test_server(void **state)
{
    (void)state;
    gs__khttp_server_t *s;
    uint16_t port;
    char out[4096];
    assert_int_equal(gs__khttp_serve("127.0.0.1", 0, 2, 16, echo, NULL, &s, &port), 0);
    /* Two pipelined requests on one connection, the second closing it; a chunked body. */
    static const char two[] = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
                              "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close"
                              "\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
    raw(port, two, sizeof(two) - 1, out, sizeof(out));
    assert_string_equal(out,
                        OK_HEAD("13") "\r\nConnection: keep-alive\r\n\r\nPOST /a [xyz]" OK_HEAD(
                            "12") "\r\nConnection: close\r\n\r\nPOST /b [hi]");
    /* Expect: 100-continue is answered before the body; HTTP/1.0 closes. */
    static const char expect[] = "POST /c HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n"
                                 "\r\nz";
    raw(port, expect, sizeof(expect) - 1, out, sizeof(out));
    assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n" OK_HEAD(
                                 "11") "\r\nConnection: close\r\n\r\nPOST /c [z]");
    /* A body over the limit (16 bytes here), a malformed head, another status. */
    static const char big[] = "POST /d HTTP/1.1\r\nContent-Length: 17\r\n\r\n";
    raw(port, big, sizeof(big) - 1, out, sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 413 Content Too Large\r\n"));
    raw(port, "HELLO\r\n\r\n", 9, out, sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
    static const char missing[] = "GET /missing HTTP/1.1\r\nConnection: close\r\n\r\n";
    raw(port, missing, sizeof(missing) - 1, out, sizeof(out));
    assert_string_equal(out, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 3\r\nConnection: close\r\n\r\nno\n");
    gs__khttp_stop(s);
}

/* A peer for the client: accepts one connection, reads the request, answers `reply` (NULL:
 * nothing, holding the connection `hold_ms`), then closes. */
typedef struct peer {
    int lfd;
    uint16_t port;
    const char *reply;
    int hold_ms;
    char request[2048];
    pthread_t thread;
} peer_t;

static void *peer_run(void *p)
{
    peer_t *x = p;
    int fd = accept(x->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof(x->request) && strstr(x->request, "\r\n\r\n") == NULL &&
           (r = recv(fd, x->request + n, sizeof(x->request) - 1 - n, 0)) > 0) {
        n += (size_t)r;
        x->request[n] = '\0';
    }
    if (x->reply != NULL)
        send(fd, x->reply, strlen(x->reply), MSG_NOSIGNAL);
    usleep((useconds_t)x->hold_ms * 1000);
    close(fd);
    return NULL;
}

static void peer_start(peer_t *x, const char *reply, int hold_ms)
{
    memset(x, 0, sizeof(*x));
    x->reply = reply;
    x->hold_ms = hold_ms;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    x->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(x->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(x->lfd, 1), 0);
    getsockname(x->lfd, (struct sockaddr *)&sa, &len);
    x->port = ntohs(sa.sin_port);
    pthread_create(&x->thread, NULL, peer_run, x);
}

static void peer_stop(peer_t *x)
{
    pthread_join(x->thread, NULL);
    close(x->lfd);
}

static int get(peer_t *x, const gs__khttp_client_t *c, sink_t *s, long *status, char *err)
{
    char url[64];
    const char *headers[] = {"Authorization: Bearer t"};
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/nodes?limit=1", x->port);
    return gs__khttp_request(c, "GET", url, headers, 1, NULL, 0, collect, s, status, err, 256);
}

static void test_client(void **state)
{
    (void)state;
    gs__khttp_client_t c = {.connect_ms = 2000, .total_ms = 5000, .idle_ms = 2000};
    peer_t x;
    sink_t s = {.len = 0};
    long status;
    char err[256];
    peer_start(&x, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA", 0);
    assert_int_equal(get(&x, &c, &s, &status, err), 0);
    peer_stop(&x);
    assert_int_equal(status, 200);
    assert_string_equal(s.data, "hello");
    assert_non_null(strstr(x.request, "GET /api/v1/nodes?limit=1 HTTP/1.1\r\nHost: 127.0.0.1:"));
    assert_non_null(strstr(x.request, "\r\nAuthorization: Bearer t\r\n"));
    /* Chunked, and a body that ends with the connection; a sink that stops early. */
    s.len = 0;
    peer_start(
        &x, "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nno!\r\n0\r\n\r\n", 0);
    assert_int_equal(get(&x, &c, &s, &status, err), 0);
    peer_stop(&x);
    assert_int_equal(status, 403);
    assert_string_equal(s.data, "no!");
    s = (sink_t){.stop_after = 2};
    peer_start(&x, "HTTP/1.0 200 OK\r\n\r\nstreamed to the end", 1000);
    assert_int_equal(get(&x, &c, &s, &status, err), 0);
    peer_stop(&x);
    assert_string_equal(s.data, "streamed to the end"); /* stopped after the first read */
    /* A peer that accepts and never answers: timed out by idle_ms, not later. */
    c.idle_ms = 300;
    s.len = 0;
    peer_start(&x, NULL, 1500);
    double t0 = gs__khttp_now_ms();
    assert_int_equal(get(&x, &c, &s, &status, err), GS_ETIMEDOUT);
    assert_true(gs__khttp_now_ms() - t0 < 1200);
    peer_stop(&x);
    /* Nothing listening; not HTTP; a stop asked. */
    peer_start(&x, "SSH-2.0-nope\r\n\r\n", 0);
    assert_int_equal(get(&x, &c, &s, &status, err), GS_EPROTO);
    peer_stop(&x);
    x.port = 1;
    assert_int_equal(get(&x, &c, &s, &status, err), GS_ECONNREFUSED);
    atomic_int stop;
    atomic_init(&stop, 1);
    c.stop = &stop;
    peer_start(&x, NULL, 500);
    assert_int_equal(get(&x, &c, &s, &status, err), GS_EAGAIN);
    peer_stop(&x);
    assert_int_equal(gs__khttp_request(&c, "GET", "ftp://x/", NULL, 0, NULL, 0, collect, &s,
                                       &status, err, sizeof(err)),
                     GS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
