/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler extender's HTTP server against its peers (issue 34, item 5): with 100 idle and
 * 100 slow (a byte a second) connections held, every /prioritize is answered; a request with
 * both Content-Length and Transfer-Encoding is refused (400) and its connection closed; Expect:
 * 100-continue is answered at once; connections that keep a pipelined exchange open, or wait
 * after 100 Continue without their body, never hold up another client's request. The server
 * runs in this process on 127.0.0.1, port 0; the peers are bound to 127.0.0.2 and 127.0.0.3 so
 * that they are other peers than the client whose requests must be answered (one test puts
 * them on the client's own address). Deadlines here are generous (2 s an answer): the latency
 * itself is bench/bench_extender.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "extender.h"
#include "http_peer.h"

#include "gpushare/log.h"

#define HELD     100
#define DEADLINE 2000 /* ms for an answer while the peers are held */

static const char prioritize[] = "{\"pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\","
                                 "\"uid\":\"u1\"}},\"nodenames\":[\"gpu-a\",\"gpu-b\"]}";

typedef struct fixture {
    gs_k8s_model_t *model;
    gs_ext_server_t *server;
    uint16_t port;
} fixture_t;

static int setup(void **state)
{
    static fixture_t f;
    gs_k8s_model_opts_t o = {.policy = GS_PLACE_GPUSHARE, .seed = 42};
    char err[GS_K8S_ERR_MAX];
    memset(&f, 0, sizeof(f));
    if (gs_k8s_model_new(&o, &f.model, err, sizeof(err)) != 0 ||
        gs_ext_server_start("127.0.0.1", 0, f.model, &f.server, &f.port) != 0)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    gs_ext_server_stop(f->server);
    gs_k8s_model_free(f->model);
    return 0;
}

static char *post(const char *path, const char *body, const char *extra)
{
    static char text[2048];
    snprintf(text, sizeof(text),
             "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
             "Content-Length: %zu\r\n\r\n%s",
             path, extra, strlen(body), body);
    return text;
}

/* A /prioritize on a new connection from 127.0.0.1, answered 200 within DEADLINE ms. */
static void prioritize_answers(uint16_t port)
{
    char out[4096];
    int fd = gs_test_dial(port, "127.0.0.1");
    double t0 = gs_test_now_ms();
    gs_test_put(fd, post("/prioritize", prioritize, "Connection: close\r\n"));
    int got = gs_test_response(fd, out, sizeof(out), DEADLINE);
    if (got != 0 || strncmp(out, "HTTP/1.1 200 OK\r\n", 17) != 0)
        fail_msg("/prioritize not answered within %d ms (%.0f ms, got \"%.40s\")", DEADLINE,
                 gs_test_now_ms() - t0, out);
    assert_non_null(
        strstr(out, "[{\"host\":\"gpu-a\",\"score\":0},{\"host\":\"gpu-b\",\"score\":0}]"));
    close(fd);
}

/* The slow peers: each sends one byte of a request head a second, never finishing it; a
 * connection the server closes is opened again, as an attacker would. */
typedef struct slow {
    uint16_t port;
    const char *from;
    int fds[HELD];
    size_t sent[HELD];
    unsigned reopened;
    atomic_int stop;
    pthread_t thread;
} slow_t;

static const char slow_head[] = "POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                "X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

static void *slow_run(void *p)
{
    slow_t *s = p;
    while (!atomic_load(&s->stop)) {
        for (int i = 0; i < HELD; i++) {
            char c = slow_head[s->sent[i] % (sizeof(slow_head) - 1)];
            if (send(s->fds[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 && errno != EAGAIN) {
                close(s->fds[i]);
                s->fds[i] = gs_test_dial(s->port, s->from);
                s->sent[i] = 0;
                s->reopened++;
                continue;
            }
            s->sent[i]++;
        }
        for (int t = 0; t < 10 && !atomic_load(&s->stop); t++)
            usleep(100 * 1000);
    }
    return NULL;
}

static void hold(uint16_t port, int idle[HELD], slow_t *s, const char *idle_from,
                 const char *slow_from)
{
    for (int i = 0; i < HELD; i++)
        idle[i] = gs_test_dial(port, idle_from);
    memset(s, 0, sizeof(*s));
    s->port = port;
    s->from = slow_from;
    for (int i = 0; i < HELD; i++)
        s->fds[i] = gs_test_dial(port, slow_from);
    atomic_init(&s->stop, 0);
    assert_int_equal(pthread_create(&s->thread, NULL, slow_run, s), 0);
}

static void release(int idle[HELD], slow_t *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    for (int i = 0; i < HELD; i++) {
        close(idle[i]);
        close(s->fds[i]);
    }
}

/* Holds 100 idle connections from idle_from and 100 slow ones from slow_from while `requests`
 * prioritize calls, each on its own connection, are answered (150 ms apart: over 1.5-3 s of the
 * slow peers' trickle). */
static void held_while(uint16_t port, const char *idle_from, const char *slow_from, int requests)
{
    int idle[HELD];
    slow_t s;
    hold(port, idle, &s, idle_from, slow_from);
    usleep(200 * 1000);
    for (int i = 0; i < requests; i++) {
        prioritize_answers(port);
        usleep(150 * 1000);
    }
    release(idle, &s);
}

/* The idle and slow peers are other peers than the client. */
static void test_held_by_others(void **state)
{
    held_while(((fixture_t *)*state)->port, "127.0.0.2", "127.0.0.3", 20);
}

/* The same peers on the client's own address (an attacker beside kube-scheduler). */
static void test_held_by_same_peer(void **state)
{
    held_while(((fixture_t *)*state)->port, "127.0.0.1", "127.0.0.1", 10);
}

/* Content-Length with Transfer-Encoding (RFC 9112 6.1: a smuggling attempt): 400, closed, and
 * the handler never sees it; so are the other framings a proxy could read otherwise. */
static void test_ambiguous_framing(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *request, *status;
    } bad[] = {
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
         "Content-Length: 5\r\n\r\n0\r\n\r\n",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
         "\r\n123456",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n[]",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n[]",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\n X-Folded: y\r\nContent-Length: 2\r\n\r\n[]",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
         "HTTP/1.1 400 Bad Request\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
         "0\r\n\r\n",
         "HTTP/1.1 501 Not Implemented\r\n"},
        {"POST /prioritize HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n",
         "HTTP/1.1 417 Expectation Failed\r\n"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char out[4096] = "";
        int fd = gs_test_dial(f->port, "127.0.0.1");
        gs_test_put(fd, bad[i].request);
        int closed = gs_test_read_until(fd, out, sizeof(out), NULL, DEADLINE);
        if (strncmp(out, bad[i].status, strlen(bad[i].status)) != 0 || !closed)
            fail_msg("request %zu: wanted %.30s and a close, got \"%.60s\" (%s)", i, bad[i].status,
                     out, closed ? "closed" : "still open");
        assert_non_null(strstr(out, "Connection: close\r\n"));
        close(fd);
    }
}

/* Expect: 100-continue gets its 100 at once; nine peers that got theirs and never send the body
 * (the old server had eight threads) hold nobody up. */
static void test_expect_continue(void **state)
{
    fixture_t *f = *state;
    char out[4096] = "";
    static const char head[] = "POST /prioritize HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                               "Content-Length: 80\r\n\r\n";
    int waiting[9];
    for (int i = 0; i < 9; i++) {
        waiting[i] = gs_test_dial(f->port, "127.0.0.2");
        gs_test_put(waiting[i], head);
        out[0] = '\0';
        gs_test_read_until(waiting[i], out, sizeof(out), "\r\n\r\n", DEADLINE);
        if (strcmp(out, "HTTP/1.1 100 Continue\r\n\r\n") != 0)
            fail_msg("peer %d: no 100 Continue within %d ms (got \"%.40s\")", i, DEADLINE, out);
    }
    prioritize_answers(f->port);
    /* And the exchange itself: 100, then the body, then the answer. */
    char text[512];
    snprintf(text, sizeof(text),
             "POST /prioritize HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
             "Content-Length: %zu\r\n\r\n",
             strlen(prioritize));
    int fd = gs_test_dial(f->port, "127.0.0.1");
    gs_test_put(fd, text);
    out[0] = '\0';
    gs_test_read_until(fd, out, sizeof(out), "\r\n\r\n", DEADLINE);
    assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n");
    gs_test_put(fd, prioritize);
    assert_int_equal(gs_test_response(fd, out, sizeof(out), DEADLINE), 0);
    assert_int_equal(strncmp(out, "HTTP/1.1 200 OK\r\n", 17), 0);
    close(fd);
    for (int i = 0; i < 9; i++)
        close(waiting[i]);
}

/* Two pipelined requests are both answered at once; sixteen connections that did so and stay
 * open hold nobody up. */
static void test_pipelined(void **state)
{
    fixture_t *f = *state;
    char two[4096], out[8192];
    snprintf(two, sizeof(two), "%sGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
             post("/prioritize", prioritize, ""));
    int kept[16];
    for (int i = 0; i < 16; i++) {
        kept[i] = gs_test_dial(f->port, "127.0.0.2");
        gs_test_put(kept[i], two);
        out[0] = '\0';
        gs_test_read_until(kept[i], out, sizeof(out), "\"synced\":", DEADLINE);
        const char *first = strstr(out, "HTTP/1.1 200 OK\r\n");
        if (first == NULL || strstr(first + 1, "HTTP/1.1 200 OK\r\n") == NULL)
            fail_msg("connection %d: not both pipelined requests answered within %d ms", i,
                     DEADLINE);
    }
    prioritize_answers(f->port);
    for (int i = 0; i < 16; i++)
        close(kept[i]);
}

int main(void)
{
    gs_log_init("test_extender_server", GS_LOG_ERROR);
    if (getenv("GS_TEST_ONLY") != NULL) /* one test alone: GS_TEST_ONLY=test_pipelined */
        cmocka_set_test_filter(getenv("GS_TEST_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ambiguous_framing), cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_pipelined),         cmocka_unit_test(test_held_by_others),
        cmocka_unit_test(test_held_by_same_peer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
