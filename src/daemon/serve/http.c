/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint's HTTP server: epoll thread, fixed connection table, eviction. */
#include "http.h"
#include "tcp_owner.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_CONNS    1024 /* connections at once; beyond, the oldest idle one goes */
#define HTTP_REQUEST  2048 /* bytes of a request's line and headers */
#define HTTP_HEAD     256
#define HTTP_IDLE_MS  5000  /* to send a whole request */
#define HTTP_STALL_MS 10000 /* for the client to take some of the reply */
#define HTTP_EVENTS   64
#define HTTP_ACCEPTS  64 /* connections taken per wake-up: a flood never starves the replies */

/* A published document, shared by the replies that send it. */
typedef struct doc {
    unsigned refs; /* under the server's lock */
    size_t len;
    char *body;
} doc_t;

typedef struct http_conn {
    int fd;           /* -1: a free slot */
    uid_t owner;      /* the local user at the other end (GS__TCP_OWNER_NONE: remote) */
    int64_t since_ms; /* accepted, or last progress of the reply */
    int replying;
    size_t in_len;
    char in[HTTP_REQUEST];
    char head[HTTP_HEAD];
    size_t head_len, sent; /* sent counts the head, then the body */
    doc_t *doc;            /* NULL: no body (HEAD, errors) */
    const char *extra;     /* a static body instead of doc */
    size_t extra_len;
} http_conn_t;

struct gs__http {
    int listen_fd, epfd, wake_fd;
    pthread_t thread;
    pthread_mutex_t lock;
    doc_t *doc; /* the latest, under lock */
    char path[64];
    char content_type[96];
    gs__tcp_owner_t owners;
    http_conn_t conns[HTTP_CONNS];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void doc_put(gs__http_t *h, doc_t *doc)
{
    if (doc == NULL)
        return;
    pthread_mutex_lock(&h->lock);
    int last = --doc->refs == 0;
    pthread_mutex_unlock(&h->lock);
    if (last) {
        free(doc->body);
        free(doc);
    }
}

static doc_t *doc_get(gs__http_t *h)
{
    pthread_mutex_lock(&h->lock);
    doc_t *doc = h->doc;
    if (doc != NULL)
        doc->refs++;
    pthread_mutex_unlock(&h->lock);
    return doc;
}

static void drop(gs__http_t *h, http_conn_t *c)
{
    if (c->fd < 0)
        return;
    epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    doc_put(h, c->doc);
    c->doc = NULL;
}

typedef struct owner_count {
    uid_t uid;
    unsigned n;
} owner_count_t;

/* The owner holding the most connections that have not sent their request yet (the one a full
 * table takes a slot from). */
static uid_t heaviest(const gs__http_t *h)
{
    owner_count_t seen[64];
    unsigned n_seen = 0, best = 0;
    uid_t who = GS__TCP_OWNER_NONE;
    for (unsigned i = 0; i < HTTP_CONNS; i++) {
        const http_conn_t *c = &h->conns[i];
        if (c->fd < 0 || c->replying)
            continue;
        unsigned k = 0;
        while (k < n_seen && seen[k].uid != c->owner)
            k++;
        if (k == n_seen && n_seen < 64)
            seen[n_seen++] = (owner_count_t){.uid = c->owner, .n = 0};
        if (k < n_seen && ++seen[k].n > best) {
            best = seen[k].n;
            who = seen[k].uid;
        }
    }
    return who;
}

/* A free slot, or the one of the oldest connection that has not sent its request yet of the
 * owner holding the most such connections: a user (or the network) flooding the endpoint takes
 * its own slots, never a scrape's of another. NULL when every connection is being answered. */
static http_conn_t *slot_for_new(gs__http_t *h)
{
    uid_t victim = GS__TCP_OWNER_NONE;
    int full = 1;
    for (unsigned i = 0; i < HTTP_CONNS && full; i++)
        full = h->conns[i].fd >= 0;
    if (full)
        victim = heaviest(h);
    http_conn_t *oldest = NULL;
    for (unsigned i = 0; i < HTTP_CONNS; i++) {
        http_conn_t *c = &h->conns[i];
        if (c->fd < 0)
            return c;
        if (!c->replying && c->owner == victim &&
            (oldest == NULL || c->since_ms < oldest->since_ms))
            oldest = c;
    }
    if (oldest != NULL)
        drop(h, oldest);
    return oldest;
}

static void accept_all(gs__http_t *h)
{
    for (unsigned taken = 0; taken < HTTP_ACCEPTS; taken++) {
        int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or out of descriptors: the next wake-up tries again */
        uid_t owner = gs__tcp_owner_of(&h->owners, fd);
        http_conn_t *c = slot_for_new(h);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (c == NULL || epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->owner = owner;
        c->since_ms = now_ms();
        c->replying = 0;
        c->in_len = 0;
        c->head_len = c->sent = 0;
        c->doc = NULL;
        c->extra = NULL;
        c->extra_len = 0;
    }
}

/* Prepares the reply to a complete request held in c->in. */
static void answer(gs__http_t *h, http_conn_t *c)
{
    static const char not_found[] = "gpushared: metrics are at /metrics\n";
    static const char bad[] = "only GET and HEAD are served\n";
    char method[8] = "", target[128] = "";
    sscanf(c->in, "%7s %127s", method, target);
    int head = strcmp(method, "HEAD") == 0, get = strcmp(method, "GET") == 0;
    unsigned status = 200;
    const char *type = h->content_type, *reason = "OK";
    size_t len = 0;
    if (!get && !head) {
        status = 405, reason = "Method Not Allowed", type = "text/plain";
        c->extra = bad, c->extra_len = len = sizeof(bad) - 1;
    } else if (strcmp(target, h->path) != 0) {
        status = strcmp(target, "/") == 0 ? 200 : 404;
        reason = status == 200 ? "OK" : "Not Found", type = "text/plain";
        c->extra = not_found, c->extra_len = len = sizeof(not_found) - 1;
    } else {
        c->doc = doc_get(h);
        len = c->doc != NULL ? c->doc->len : 0;
    }
    int n = snprintf(c->head, sizeof(c->head),
                     "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, reason, type, len);
    c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
    if (head) {
        doc_put(h, c->doc);
        c->doc = NULL;
        c->extra_len = 0;
    }
    c->replying = 1;
    c->since_ms = now_ms();
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void read_request(gs__http_t *h, http_conn_t *c)
{
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop(h, c);
        return;
    }
    c->in_len += (size_t)n;
    c->in[c->in_len] = '\0';
    if (strstr(c->in, "\r\n\r\n") != NULL || strstr(c->in, "\n\n") != NULL)
        answer(h, c);
    else if (c->in_len == sizeof(c->in) - 1)
        drop(h, c); /* a request this large is not one of ours */
}

static void write_reply(gs__http_t *h, http_conn_t *c)
{
    const char *body = c->doc != NULL ? c->doc->body : c->extra;
    size_t body_len = c->doc != NULL ? c->doc->len : c->extra_len;
    while (c->sent < c->head_len + body_len) {
        const char *p = c->sent < c->head_len ? c->head + c->sent : body + (c->sent - c->head_len);
        size_t len =
            c->sent < c->head_len ? c->head_len - c->sent : body_len - (c->sent - c->head_len);
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0)
            break;
        c->sent += (size_t)n;
        c->since_ms = now_ms();
    }
    drop(h, c);
}

/* Closes connections that sent no request, or took none of the reply, for too long. */
static void expire(gs__http_t *h, int64_t now)
{
    for (unsigned i = 0; i < HTTP_CONNS; i++) {
        http_conn_t *c = &h->conns[i];
        if (c->fd >= 0 && now - c->since_ms > (c->replying ? HTTP_STALL_MS : HTTP_IDLE_MS))
            drop(h, c);
    }
}

static char listen_tag, wake_tag;

static void *serve(void *arg)
{
    gs__http_t *h = arg;
    struct epoll_event events[HTTP_EVENTS];
    int64_t next_expire = now_ms() + 1000;
    for (;;) {
        int n = epoll_wait(h->epfd, events, HTTP_EVENTS, 1000);
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &wake_tag)
                return NULL;
            if (tag == &listen_tag) {
                accept_all(h);
                continue;
            }
            http_conn_t *c = tag;
            if (c->fd < 0)
                continue;
            if (c->replying)
                write_reply(h, c);
            else
                read_request(h, c);
        }
        int64_t now = now_ms();
        if (now >= next_expire) {
            expire(h, now);
            next_expire = now + 1000;
        }
    }
}

static int open_listener(uint32_t addr, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sin = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(fd, SOMAXCONN) != 0) {
        int result = errno == EADDRINUSE ? GS_EBUSY : -errno;
        close(fd);
        return result;
    }
    return fd;
}

static int add(int epfd, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int gs__http_start(uint32_t addr, uint16_t port, const char *path, const char *content_type,
                   gs__http_t **out)
{
    gs__http_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return GS_ENOMEM;
    for (unsigned i = 0; i < HTTP_CONNS; i++)
        h->conns[i].fd = -1;
    gs__tcp_owner_open(&h->owners);
    snprintf(h->path, sizeof(h->path), "%s", path);
    snprintf(h->content_type, sizeof(h->content_type), "%s", content_type);
    pthread_mutex_init(&h->lock, NULL);
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    h->listen_fd = open_listener(addr, port);
    int result = h->listen_fd < 0 ? h->listen_fd : 0;
    if (result == 0 && (h->epfd < 0 || h->wake_fd < 0))
        result = GS_EIO;
    if (result == 0)
        result = add(h->epfd, h->listen_fd, &listen_tag);
    if (result == 0)
        result = add(h->epfd, h->wake_fd, &wake_tag);
    if (result == 0)
        result = -pthread_create(&h->thread, NULL, serve, h);
    if (result != 0) {
        if (h->listen_fd >= 0)
            close(h->listen_fd);
        if (h->epfd >= 0)
            close(h->epfd);
        if (h->wake_fd >= 0)
            close(h->wake_fd);
        gs__tcp_owner_close(&h->owners);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return result;
    }
    *out = h;
    return 0;
}

void gs__http_publish(gs__http_t *http, char *body, size_t len)
{
    doc_t *doc = malloc(sizeof(*doc));
    if (doc == NULL) {
        free(body);
        return;
    }
    doc->refs = 1;
    doc->len = len;
    doc->body = body;
    pthread_mutex_lock(&http->lock);
    doc_t *old = http->doc;
    http->doc = doc;
    pthread_mutex_unlock(&http->lock);
    doc_put(http, old);
}

void gs__http_stop(gs__http_t *http)
{
    if (http == NULL)
        return;
    uint64_t one = 1;
    if (write(http->wake_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
        pthread_join(http->thread, NULL);
    for (unsigned i = 0; i < HTTP_CONNS; i++)
        drop(http, &http->conns[i]);
    doc_put(http, http->doc);
    close(http->listen_fd);
    close(http->epfd);
    close(http->wake_fd);
    gs__tcp_owner_close(&http->owners);
    pthread_mutex_destroy(&http->lock);
    free(http);
}
