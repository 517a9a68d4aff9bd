/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of src/http's server (http/httpd.h) on loopback, port 0, with short deadlines and a
 * small table: exchanges byte for byte (keep-alive, pipelining, chunked bodies, Expect:
 * 100-continue, HEAD, 404, 413, 431, malformed heads, a missing Host), the head parser alone,
 * each phase's deadline (a silent connection, a slow head, a kept-alive one, a body that stops),
 * and the table's eviction (a peer at its limit loses its own oldest, a full table the heaviest
 * peer's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/httpd.h"
#include "http/httpd_internal.h"
#include "http_peer.h"

#define HEAD_MS 300
#define IDLE_MS 400
#define BODY_MS 300

/* Echoes the method, target and body; /missing is a 404. */
static void echo(void *ctx, const gs__httpd_request_t *rq, gs__httpd_reply_t *rp)
{
    (void)ctx;
    if (strcmp(rq->target, "/missing") == 0) {
        rp->status = 404;
        rp->type = "text/plain";
        rp->body = strdup("no\n");
        rp->len = 3;
        return;
    }
    rp->body = malloc(rq->len + 64);
    snprintf(rp->body, rq->len + 64, "%s %s [%.*s]", rq->method, rq->target, (int)rq->len,
             rq->body);
    rp->len = strlen(rp->body);
}

/* A server on a free port; max_conns and per_peer 0: the defaults, with the short deadlines
 * above (the eviction test keeps the defaults, 5 s and more, so that nothing expires). */
static gs__httpd_t *start(uint16_t *port, unsigned max_conns, unsigned per_peer)
{
    int quick = max_conns == 0;
    gs__httpd_opts_t o = {.addr = "127.0.0.1",
                          .handler = echo,
                          .max_body = 16,
                          .max_conns = max_conns,
                          .per_peer = per_peer,
                          .head_ms = quick ? HEAD_MS : 0,
                          .idle_ms = quick ? IDLE_MS : 0,
                          .body_ms = quick ? BODY_MS : 0};
    gs__httpd_t *h = NULL;
    assert_int_equal(gs__httpd_start(&o, &h, port), 0);
    return h;
}

/* Sends req on a new connection and reads until the server closes it (or 2 s). */
static void exchange(uint16_t port, const char *req, char *out, size_t cap)
{
    int fd = gs_test_dial(port, "127.0.0.1");
    gs_test_put(fd, req);
    out[0] = '\0';
    assert_int_equal(gs_test_read_until(fd, out, cap, NULL, 2000), 1);
    close(fd);
}

#define OK_HEAD(len) "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " len

static void test_exchanges(void **state)
{
    (void)state;
    uint16_t port;
    char out[4096];
    gs__httpd_t *h = start(&port, 0, 0);
    /* Two pipelined requests on one connection, the second closing it; a chunked body. */
    exchange(port,
             "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
             "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close"
             "\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
             out, sizeof(out));
    assert_string_equal(out,
                        OK_HEAD("13") "\r\nConnection: keep-alive\r\n\r\nPOST /a [xyz]" OK_HEAD(
                            "12") "\r\nConnection: close\r\n\r\nPOST /b [hi]");
    /* Expect: 100-continue with the body already sent: no 100; HTTP/1.0 closes. */
    exchange(port, "POST /c HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz", out,
             sizeof(out));
    assert_string_equal(out, OK_HEAD("11") "\r\nConnection: close\r\n\r\nPOST /c [z]");
    /* HEAD: the length of what GET would send, no body. */
    exchange(port, "HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", out, sizeof(out));
    assert_string_equal(out, OK_HEAD("10") "\r\nConnection: close\r\n\r\n");
    exchange(port, "GET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", out,
             sizeof(out));
    assert_string_equal(out, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 3\r\nConnection: close\r\n\r\nno\n");
    /* Refusals: each closes the connection. */
    exchange(port, "POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n", out, sizeof(out));
    assert_string_equal(out, "HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 15\r\nConnection: close\r\n\r\nbody too large\n");
    exchange(port, "POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n", out,
             sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 413 Content Too Large\r\n"));
    exchange(port, "HELLO\r\n\r\n", out, sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
    exchange(port, "GET / HTTP/1.1\r\n\r\n", out, sizeof(out)); /* no Host */
    assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
    exchange(port, "GET / HTTP/2.0\r\nHost: x\r\n\r\n", out, sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 505 HTTP Version Not Supported\r\n"));
    static char big[GS__HTTPD_HEAD_MAX + 64];
    memset(big, 'a', sizeof(big) - 1);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    exchange(port, big, out, sizeof(out));
    assert_non_null(strstr(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    gs__httpd_stop(h);
}

/* Expect: 100-continue before the body: the 100 at once, then the answer. */
static void test_expect(void **state)
{
    (void)state;
    uint16_t port;
    char out[4096] = "";
    gs__httpd_t *h = start(&port, 0, 0);
    int fd = gs_test_dial(port, "127.0.0.1");
    gs_test_put(fd,
                "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n");
    gs_test_read_until(fd, out, sizeof(out), "\r\n\r\n", 1000);
    assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n");
    gs_test_put(fd, "ok");
    assert_int_equal(gs_test_response(fd, out, sizeof(out), 1000), 0);
    assert_string_equal(out, OK_HEAD("12") "\r\nConnection: keep-alive\r\n\r\nPOST /e [ok]");
    close(fd);
    gs__httpd_stop(h);
}

static void test_parse_head(void **state)
{
    (void)state;
    gs__httpd_head_t hd;
    static const char ok[] = "\r\nPUT /x?y=1 HTTP/1.1\r\nhost: a\r\nconnection: Keep-Alive, Close"
                             "\r\ncontent-length:  12 \r\n\r\n";
    assert_int_equal(gs__httpd_parse_head(ok, sizeof(ok) - 1, &hd), 0);
    assert_string_equal(hd.method, "PUT");
    assert_string_equal(hd.target, "/x?y=1");
    assert_int_equal(hd.length, 12);
    assert_int_equal(hd.close, 1);
    assert_int_equal(hd.http10, 0);
    static const char *const bad[] = {
        "GET / HTTP/1.1\nHost: a\r\n\r\n",      /* bare LF */
        "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", /* bare CR */
        "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",   /* two spaces */
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX\x01: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: b\x7f\x01\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n", /* no empty line */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gs__httpd_parse_head(bad[i], strlen(bad[i]), &hd), 400);
    static const char nul[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
    assert_int_equal(gs__httpd_parse_head(nul, sizeof(nul) - 1, &hd), 400);
    static const char te[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n";
    assert_int_equal(gs__httpd_parse_head(te, sizeof(te) - 1, &hd), 501);
    static const char old[] = "GET / HTTP/1.0\r\n\r\n";
    assert_int_equal(gs__httpd_parse_head(old, sizeof(old) - 1, &hd), 0);
    assert_int_equal(hd.close, 1);
}

/* How long the server takes to close fd (ms), at most 3 s. */
static double closes_after(int fd)
{
    double t0 = gs_test_now_ms();
    assert_int_equal(gs_test_closed_within(fd, 3000), 1);
    return gs_test_now_ms() - t0;
}

static void test_deadlines(void **state)
{
    (void)state;
    uint16_t port;
    char out[4096];
    gs__httpd_t *h = start(&port, 0, 0);
    /* Silent from its accept: closed after HEAD_MS (give or take the 100 ms tick). */
    int fd = gs_test_dial(port, "127.0.0.1");
    double ms = closes_after(fd);
    assert_true(ms > HEAD_MS - 50 && ms < HEAD_MS + 500);
    close(fd);
    /* A head trickled a byte at a time, never whole: closed after HEAD_MS all the same. */
    fd = gs_test_dial(port, "127.0.0.1");
    double t0 = gs_test_now_ms();
    for (int i = 0; i < 20 && gs_test_now_ms() - t0 < HEAD_MS + 500; i++) {
        if (send(fd, "G", 1, MSG_NOSIGNAL) != 1)
            break;
        usleep(50 * 1000);
    }
    assert_int_equal(gs_test_closed_within(fd, 2000), 1);
    assert_true(gs_test_now_ms() - t0 < HEAD_MS + 700);
    close(fd);
    /* Kept alive after an answer: IDLE_MS for the next request. */
    fd = gs_test_dial(port, "127.0.0.1");
    gs_test_put(fd, "GET /k HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(gs_test_response(fd, out, sizeof(out), 1000), 0);
    ms = closes_after(fd);
    assert_true(ms > IDLE_MS - 50 && ms < IDLE_MS + 500);
    close(fd);
    /* A body that stops half way: BODY_MS. */
    fd = gs_test_dial(port, "127.0.0.1");
    gs_test_put(fd, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nabc");
    ms = closes_after(fd);
    assert_true(ms > BODY_MS - 50 && ms < BODY_MS + 500);
    close(fd);
    gs__httpd_stop(h);
}

/* Whether the server has closed fd (it sends nothing to an idle connection). */
static int is_closed(int fd)
{
    return gs_test_closed_within(fd, 300);
}

static void test_eviction(void **state)
{
    (void)state;
    uint16_t port;
    char out[4096];
    gs__httpd_t *h = start(&port, 8, 4);
    int a[5], b[4];
    for (int i = 0; i < 4; i++) {
        a[i] = gs_test_dial(port, "127.0.0.2");
        usleep(20 * 1000); /* an order of age */
    }
    /* The peer's fifth connection takes the place of its oldest. */
    a[4] = gs_test_dial(port, "127.0.0.2");
    assert_int_equal(is_closed(a[0]), 1);
    for (int i = 1; i < 5; i++)
        assert_int_equal(is_closed(a[i]), 0);
    /* Another peer fills the table (4 + 4); a third peer's connection evicts one of the
     * heaviest, never fails, and is answered. */
    for (int i = 0; i < 4; i++)
        b[i] = gs_test_dial(port, "127.0.0.3");
    int c = gs_test_dial(port, "127.0.0.1");
    gs_test_put(c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(gs_test_response(c, out, sizeof(out), 1000), 0);
    assert_string_equal(out, OK_HEAD("9") "\r\nConnection: keep-alive\r\n\r\nGET /c []");
    int closed = is_closed(a[1]) + is_closed(b[0]);
    for (int i = 2; i < 5; i++)
        closed += is_closed(a[i]);
    for (int i = 1; i < 4; i++)
        closed += is_closed(b[i]);
    assert_int_equal(closed, 1);
    for (int i = 0; i < 5; i++)
        close(a[i]);
    for (int i = 0; i < 4; i++)
        close(b[i]);
    close(c);
    gs__httpd_stop(h);
}

static void test_adopt(void **state)
{
    (void)state;
    uint16_t port;
    char out[4096] = "";
    gs__httpd_t *h = start(&port, 0, 0);
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    gs_test_put(fds[0], "GET /u HTTP/1.1\r\nHost: x\r\n\r\n");
    shutdown(fds[0], SHUT_WR);
    assert_int_equal(gs__httpd_adopt(h, fds[1]), 0);
    assert_int_equal(gs_test_read_until(fds[0], out, sizeof(out), NULL, 2000), 1);
    assert_string_equal(out, OK_HEAD("9") "\r\nConnection: close\r\n\r\nGET /u []");
    close(fds[0]);
    gs__httpd_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exchanges),  cmocka_unit_test(test_expect),
        cmocka_unit_test(test_parse_head), cmocka_unit_test(test_deadlines),
        cmocka_unit_test(test_eviction),   cmocka_unit_test(test_adopt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
