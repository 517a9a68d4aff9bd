/* SPDX-License-Identifier: Apache-2.0 */
/* A small HTTP/1.1 server (http.h): an accepting thread, a queue of 64 connections, worker
 * threads that read a request (Content-Length or chunked, Expect: 100-continue), answer it from
 * the handler and keep the connection for the next one. */
#include "http_internal.h"
#include "k8s.h"

#include "gpushare/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define QUEUE       64
#define HEAD_MAX    (16u << 10)
#define IDLE_MS     30000 /* a kept connection with no new request */
#define REQUEST_MS  30000 /* to receive a whole request once it has begun */
#define THREADS_MAX 64

struct gs__khttp_server {
    int lfd;
    atomic_int stop;
    int accepting; /* the acceptor thread was started */
    pthread_t acceptor;
    pthread_t workers[THREADS_MAX];
    int nworkers;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    int queue[QUEUE];
    size_t head, count;
    size_t max_body;
    gs__khttp_handler_t handler;
    void *ctx;
};

/* A request as parsed from its head. */
typedef struct request {
    char method[16];
    char path[4096];
    int http10, close, chunked, expect;
    size_t length; /* Content-Length */
} request_t;

/* The value of header name in head (the lines after the first), or NULL; *len its length. */
static const char *header(const char *head, const char *name, size_t *len)
{
    size_t n = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p, "\r\n")) {
        p += 2;
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1, *end = strstr(v, "\r\n");
            while (*v == ' ' || *v == '\t')
                v++;
            *len = end != NULL ? (size_t)(end - v) : strlen(v);
            return v;
        }
    }
    return NULL;
}

static int header_is(const char *head, const char *name, const char *value)
{
    size_t len;
    const char *v = header(head, name, &len);
    return v != NULL && len >= strlen(value) && strncasecmp(v, value, strlen(value)) == 0;
}

/* Parses the request line and the headers that matter. Returns 0 or an HTTP status. */
static int parse_head(const char *head, request_t *r, size_t max_body)
{
    char version[16];
    memset(r, 0, sizeof(*r));
    if (sscanf(head, "%15s %4095s %15s", r->method, r->path, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0)
        return 400;
    r->http10 = strcmp(version, "HTTP/1.0") == 0;
    r->close = header_is(head, "Connection", "close") ||
               (r->http10 && !header_is(head, "Connection", "keep-alive"));
    r->chunked = header_is(head, "Transfer-Encoding", "chunked");
    r->expect = header_is(head, "Expect", "100-continue");
    size_t len;
    const char *cl = header(head, "Content-Length", &len);
    if (cl != NULL && !r->chunked) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (end == cl || (size_t)(end - cl) != len)
            return 400;
        if (v > max_body)
            return 413;
        r->length = (size_t)v;
    }
    return 0;
}

/* A connection being served, and the bytes read from it not used yet. */
typedef struct session {
    gs__khttp_server_t *s;
    gs__khttp_conn_t conn;
    gs__k8s_buf_t in;
} session_t;

static int read_more(session_t *x)
{
    char chunk[16384];
    ssize_t n = gs__khttp_read(&x->conn, chunk, sizeof(chunk));
    if (n <= 0)
        return n == 0 ? GS_ENOENT : (int)n;
    return gs__k8s_buf_add(&x->in, chunk, (size_t)n);
}

/* Waits for a whole request head; returns its length, or an error code (GS_ELIMIT: too long). */
static long read_head(session_t *x)
{
    x->conn.deadline = gs__khttp_now_ms() + IDLE_MS;
    for (;;) {
        char *end = x->in.len > 0 ? memmem(x->in.data, x->in.len, "\r\n\r\n", 4) : NULL;
        if (end != NULL)
            return (long)(end - x->in.data) + 4;
        if (x->in.len > HEAD_MAX)
            return GS_ELIMIT;
        int result = read_more(x);
        if (result != 0)
            return result;
        if (x->in.len > 0 && x->conn.deadline - gs__khttp_now_ms() > REQUEST_MS)
            x->conn.deadline = gs__khttp_now_ms() + REQUEST_MS;
    }
}

static int append(void *ctx, const char *data, size_t len)
{
    return gs__k8s_buf_add(ctx, data, len) != 0;
}

static void consume(session_t *x, size_t used)
{
    memmove(x->in.data, x->in.data + used, x->in.len - used);
    x->in.len -= used;
    x->in.data[x->in.len] = '\0';
}

/* Moves the request's body from x->in to body. Returns 0 or an error code (GS_ELIMIT: over
 * the server's limit). */
static int read_body(session_t *x, const request_t *r, gs__k8s_buf_t *body)
{
    gs__khttp_chunks_t d = {0};
    x->conn.deadline = gs__khttp_now_ms() + REQUEST_MS;
    for (;;) {
        size_t used = 0;
        int done;
        if (r->chunked) {
            int state = gs__khttp_chunks(&d, x->in.data, x->in.len, append, body, &used);
            if (state < 0 || state == 1)
                return state < 0 ? state : GS_ELIMIT;
            done = state == 2;
        } else {
            done = x->in.len >= r->length;
            used = done ? r->length : 0;
            if (done && used > 0 && gs__k8s_buf_add(body, x->in.data, used) != 0)
                return GS_ELIMIT;
        }
        if (used > 0)
            consume(x, used);
        if (done)
            return 0;
        int result = read_more(x);
        if (result != 0)
            return result;
    }
}

static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 413:
        return "Content Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

static int respond(session_t *x, int status, const char *type, const char *body, int close)
{
    char head[256];
    size_t len = strlen(body);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nConnection: %s\r\n\r\n",
                     status, reason_of(status), type, len, close ? "close" : "keep-alive");
    x->conn.deadline = gs__khttp_now_ms() + REQUEST_MS;
    int result = gs__khttp_write(&x->conn, head, (size_t)n);
    return result != 0 ? result : gs__khttp_write(&x->conn, body, len);
}

/* One request on the session: 0 to keep the connection, nonzero to close it. */
static int serve_one(session_t *x, gs__k8s_buf_t *body)
{
    long head = read_head(x);
    if (head < 0) {
        if (head == GS_ELIMIT)
            respond(x, 400, "text/plain", "request head too long\n", 1);
        return 1;
    }
    char *text = strndup(x->in.data, (size_t)head);
    request_t r;
    int status = text != NULL ? parse_head(text, &r, x->s->max_body) : 500;
    free(text);
    consume(x, (size_t)head);
    if (status != 0) {
        respond(x, status, "text/plain", status == 413 ? "body too large\n" : "bad request\n", 1);
        return 1;
    }
    if (r.expect && gs__khttp_write(&x->conn, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0)
        return 1;
    body->len = 0;
    int result = read_body(x, &r, body);
    if (result != 0) {
        if (result == GS_ELIMIT)
            respond(x, 413, "text/plain", "body too large\n", 1);
        return 1;
    }
    const char *type = "application/json";
    status = 200;
    char *answer = x->s->handler(x->s->ctx, r.method, r.path, body->data ? body->data : "",
                                 body->len, &status, &type);
    result = respond(x, answer != NULL ? status : 500, answer != NULL ? type : "text/plain",
                     answer != NULL ? answer : "internal error\n", r.close);
    free(answer);
    return result != 0 || r.close;
}

static void serve_connection(gs__khttp_server_t *s, int fd)
{
    session_t x = {.s = s, .conn = {.fd = fd, .stop = &s->stop}};
    gs__k8s_buf_t body = {.max = s->max_body + 1};
    x.in.max = HEAD_MAX + s->max_body + 65536;
    while (!atomic_load(&s->stop) && serve_one(&x, &body) == 0)
        ;
    free(x.in.data);
    free(body.data);
}

void gs__khttp_serve_fd(gs__khttp_server_t *s, int fd)
{
    serve_connection(s, fd);
}

static void *worker(void *p)
{
    gs__khttp_server_t *s = p;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->count == 0 && !atomic_load(&s->stop))
            pthread_cond_wait(&s->ready, &s->lock);
        if (atomic_load(&s->stop)) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        int fd = s->queue[s->head];
        s->head = (s->head + 1) % QUEUE;
        s->count--;
        pthread_mutex_unlock(&s->lock);
        serve_connection(s, fd);
        close(fd);
    }
}

/* Accepts connections into the queue; a full queue sheds the newest (closed at once). */
static void *acceptor(void *p)
{
    gs__khttp_server_t *s = p;
    while (!atomic_load(&s->stop)) {
        struct pollfd pfd = {.fd = s->lfd, .events = POLLIN};
        if (poll(&pfd, 1, GS__KHTTP_SLICE_MS) <= 0)
            continue;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&s->lock);
        if (s->count == QUEUE) {
            close(fd);
        } else {
            s->queue[(s->head + s->count++) % QUEUE] = fd;
            pthread_cond_signal(&s->ready);
        }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static int listen_on(const char *addr, uint16_t port, uint16_t *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t len = sizeof(sa);
    int one = 1;
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return GS_EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return GS_EIO;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        close(fd);
        return e == EADDRINUSE ? GS_EBUSY : GS_EIO;
    }
    if (bound != NULL)
        *bound = ntohs(sa.sin_port);
    return fd;
}

int gs__khttp_serve(const char *addr, uint16_t port, int threads, size_t max_body,
                    gs__khttp_handler_t handler, void *ctx, gs__khttp_server_t **out,
                    uint16_t *bound)
{
    gs__khttp_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GS_ENOMEM;
    s->lfd = listen_on(addr, port, bound);
    if (s->lfd < 0) {
        int result = s->lfd;
        free(s);
        return result;
    }
    atomic_init(&s->stop, 0);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->ready, NULL);
    s->max_body = max_body;
    s->handler = handler;
    s->ctx = ctx;
    threads = threads < 1 ? 1 : threads > THREADS_MAX ? THREADS_MAX : threads;
    int result = pthread_create(&s->acceptor, NULL, acceptor, s);
    s->accepting = result == 0;
    for (; result == 0 && s->nworkers < threads; s->nworkers++)
        result = pthread_create(&s->workers[s->nworkers], NULL, worker, s);
    if (result != 0) {
        gs__khttp_stop(s);
        return GS_ENOMEM;
    }
    *out = s;
    return 0;
}

void gs__khttp_stop(gs__khttp_server_t *s)
{
    if (s == NULL)
        return;
    atomic_store(&s->stop, 1);
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->ready);
    pthread_mutex_unlock(&s->lock);
    if (s->accepting)
        pthread_join(s->acceptor, NULL);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    for (; s->count > 0; s->count--, s->head = (s->head + 1) % QUEUE)
        close(s->queue[s->head]);
    close(s->lfd);
    pthread_cond_destroy(&s->ready);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
