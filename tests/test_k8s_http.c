/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of src/k8s's HTTP client: the chunked decoder (src/http's, which the client reads
 * responses with) fed in every split, the client (Content-Length, chunked and close-delimited
 * bodies, a peer that never answers, refused connections, a stop). The server is src/http's:
 * tests/test_httpd.c. */
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
        gs__http_chunks_t d = {0};
        sink_t s = {.len = 0};
        size_t used1 = 0, used2 = 0;
        int a = gs__http_chunks(&d, in, cut, collect, &s, &used1);
        int b =
            a == 2 ? 2 : gs__http_chunks(&d, in + cut, sizeof(in) - 1 - cut, collect, &s, &used2);
        assert_int_equal(b, 2);
        assert_string_equal(s.data, "Wikipedia in\r\n\r\nchunks.");
        assert_int_equal(used1 + used2, sizeof(in) - 1 - 4); /* "NEXT" is not the body's */
    }
    static const char *const bad[] = {"x\r\n", "4\r\nWikiX\r\n", "\r\n", "10000000000000000\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gs__http_chunks_t d = {0};
        sink_t s = {.len = 0};
        size_t used;
        assert_int_equal(gs__http_chunks(&d, bad[i], strlen(bad[i]), collect, &s, &used),
                         GS_EPROTO);
    }
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
        cmocka_unit_test(test_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
