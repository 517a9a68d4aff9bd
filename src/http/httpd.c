/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server's thread (httpd.h): epoll, the connection table and its eviction, each
 * connection's phases and their deadlines, reading requests and writing replies. */
#include "httpd.h"
#include "chunks.h"
#include "httpd_internal.h"

#include "gpushare/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EVENTS     64
#define ACCEPTS    64  /* connections taken per wake-up: a flood never starves the replies */
#define ADOPT_MAX  16  /* handed over at once by gs__httpd_adopt */
#define TICK_MS    100 /* how often deadlines are looked at */
#define LINGER_MS  1000
#define IN_FIRST   4096
#define PEERS_SEEN 64

/* A connection's phase. WAIT: no byte of a request yet; HEAD: reading the head; BODY: the
 * body; REPLY: writing the answer; LINGER: answered and closing, its input discarded. */
typedef enum { C_FREE = 0, C_WAIT, C_HEAD, C_BODY, C_REPLY, C_LINGER } phase_t;

typedef struct conn {
    int fd;
    phase_t phase;
    uint32_t events; /* what epoll waits for on fd */
    int eof;         /* the peer shut its side */
    int answered;    /* requests answered on it */
    uint64_t peer;
    int64_t since_ms; /* accepted: the eviction order */
    int64_t deadline_ms;
    char *in; /* received and not used yet */
    size_t in_len, in_cap;
    gs__httpd_head_t *head; /* of the request being read (BODY) */
    gs__http_chunks_t chunks;
    char *body; /* the request's body so far */
    size_t body_len, body_cap;
    int closing; /* the connection ends after the reply */
    char *out;   /* the reply */
    size_t out_len, sent;
} conn_t;

struct gs__httpd {
    gs__httpd_opts_t o;
    int listen_fd, epfd, wake_fd;
    atomic_int stop;
    pthread_t thread;
    pthread_mutex_t lock; /* adopted[] */
    int adopted[ADOPT_MAX];
    unsigned n_adopted;
    unsigned used; /* connections in the table */
    conn_t *conns;
};

static char listen_tag, wake_tag;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void watch(gs__httpd_t *h, conn_t *c, uint32_t events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

static void request_done(conn_t *c)
{
    free(c->head);
    c->head = NULL;
    free(c->body);
    c->body = NULL;
    c->body_len = c->body_cap = 0;
    free(c->out);
    c->out = NULL;
    c->out_len = c->sent = 0;
}

static void drop(gs__httpd_t *h, conn_t *c)
{
    if (c->phase == C_FREE)
        return;
    epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    request_done(c);
    free(c->in);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    h->used--;
}

/* ---- the table ---- */

/* How readily a connection gives its slot up: done ones first, then those with no request
 * under way, then those sending one; one being answered never (-1). */
static int rank(const conn_t *c)
{
    switch (c->phase) {
    case C_LINGER:
        return 0;
    case C_WAIT:
        return 1;
    case C_HEAD:
    case C_BODY:
        return 2;
    default:
        return -1;
    }
}

/* The connection of peer (any peer: all) to evict: the lowest rank, then the oldest. */
static conn_t *victim_of(gs__httpd_t *h, int any, uint64_t peer)
{
    conn_t *best = NULL;
    for (unsigned i = 0; i < h->o.max_conns; i++) {
        conn_t *c = &h->conns[i];
        if (c->phase == C_FREE || rank(c) < 0 || (!any && c->peer != peer))
            continue;
        if (best == NULL || rank(c) < rank(best) ||
            (rank(c) == rank(best) && c->since_ms < best->since_ms))
            best = c;
    }
    return best;
}

typedef struct peer_count {
    uint64_t peer;
    unsigned n;
} peer_count_t;

/* The peer holding the most evictable connections (of the first PEERS_SEEN peers seen), and
 * how many connections `peer` holds. */
static uint64_t heaviest(const gs__httpd_t *h, uint64_t peer, unsigned *of_peer)
{
    peer_count_t seen[PEERS_SEEN];
    unsigned n_seen = 0, best = 0;
    uint64_t who = peer;
    *of_peer = 0;
    for (unsigned i = 0; i < h->o.max_conns; i++) {
        const conn_t *c = &h->conns[i];
        if (c->phase == C_FREE)
            continue;
        *of_peer += c->peer == peer;
        if (rank(c) < 0)
            continue;
        unsigned k = 0;
        while (k < n_seen && seen[k].peer != c->peer)
            k++;
        if (k == n_seen && n_seen < PEERS_SEEN)
            seen[n_seen++] = (peer_count_t){.peer = c->peer, .n = 0};
        if (k < n_seen && ++seen[k].n > best) {
            best = seen[k].n;
            who = seen[k].peer;
        }
    }
    return who;
}

/* A free slot for a new connection of peer, made by evicting where the peer is at its limit
 * or the table is full; NULL when every candidate is being answered. */
static conn_t *slot_for(gs__httpd_t *h, uint64_t peer)
{
    unsigned of_peer;
    uint64_t heavy = heaviest(h, peer, &of_peer);
    conn_t *evict = NULL;
    if (of_peer >= h->o.per_peer)
        evict = victim_of(h, 0, peer);
    else if (h->used == h->o.max_conns)
        evict = victim_of(h, 0, heavy);
    if (evict == NULL && (of_peer >= h->o.per_peer || h->used == h->o.max_conns))
        return NULL;
    if (evict != NULL)
        drop(h, evict);
    for (unsigned i = 0; i < h->o.max_conns; i++)
        if (h->conns[i].phase == C_FREE)
            return &h->conns[i];
    return NULL;
}

static uint64_t peer_address(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0 || ss.ss_family != AF_INET)
        return 0;
    return ((struct sockaddr_in *)&ss)->sin_addr.s_addr;
}

static conn_t *take(gs__httpd_t *h, int fd)
{
    uint64_t peer = h->o.peer != NULL ? h->o.peer(h->o.peer_ctx, fd) : peer_address(fd);
    conn_t *c = slot_for(h, peer);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (c == NULL || epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->phase = C_WAIT;
    c->events = EPOLLIN;
    c->peer = peer;
    c->since_ms = now_ms();
    c->deadline_ms = c->since_ms + h->o.head_ms;
    h->used++;
    return c;
}

static void accept_all(gs__httpd_t *h)
{
    for (unsigned taken = 0; taken < ACCEPTS; taken++) {
        int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or out of descriptors: the next wake-up tries again */
        take(h, fd);
    }
}

/* ---- replies ---- */

/* Writes what it can of the reply; at its end the connection waits for the next request,
 * lingers or goes. Returns 0 while the connection stays in the table. */
static int flush(gs__httpd_t *h, conn_t *c)
{
    while (c->sent < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->sent, c->out_len - c->sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            watch(h, c, EPOLLOUT);
            return 0;
        }
        if (n <= 0) {
            drop(h, c);
            return -1;
        }
        c->sent += (size_t)n;
        c->deadline_ms = now_ms() + h->o.stall_ms;
    }
    request_done(c);
    c->answered++;
    if (c->closing && !c->eof) {
        shutdown(c->fd, SHUT_WR); /* read what follows, so that closing sends no reset */
        c->phase = C_LINGER;
        c->deadline_ms = now_ms() + LINGER_MS;
    } else if (c->closing) {
        drop(h, c);
        return -1;
    } else {
        c->phase = c->in_len > 0 ? C_HEAD : C_WAIT;
        c->deadline_ms = now_ms() + (c->in_len > 0 ? h->o.head_ms : h->o.idle_ms);
    }
    watch(h, c, EPOLLIN);
    return 0;
}

/* Queues a reply (body: len bytes, not taken) and starts writing it. */
static int reply(gs__httpd_t *h, conn_t *c, int status, const char *type, const char *body,
                 size_t len, int head_only)
{
    char top[256];
    c->closing |= h->o.close_each || (c->eof && c->in_len == 0); /* nothing more comes */
    int n =
        snprintf(top, sizeof(top),
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Connection: %s\r\n\r\n",
                 status, gs__httpd_reason(status), type, len, c->closing ? "close" : "keep-alive");
    size_t send_len = head_only ? 0 : len;
    c->out = malloc((size_t)n + send_len + 1);
    if (c->out == NULL) {
        drop(h, c);
        return -1;
    }
    memcpy(c->out, top, (size_t)n);
    if (send_len > 0)
        memcpy(c->out + n, body, send_len);
    c->out_len = (size_t)n + send_len;
    c->sent = 0;
    c->phase = C_REPLY;
    c->deadline_ms = now_ms() + h->o.stall_ms;
    return flush(h, c);
}

/* A refusal by the server itself: text/plain, and the connection closed. */
static int refuse(gs__httpd_t *h, conn_t *c, int status, const char *why)
{
    c->closing = 1;
    return reply(h, c, status, "text/plain", why, strlen(why), 0);
}

static int answer(gs__httpd_t *h, conn_t *c)
{
    gs__httpd_head_t *hd = c->head;
    gs__httpd_request_t rq = {.method = hd->method,
                              .target = hd->target,
                              .body = c->body != NULL ? c->body : "",
                              .len = c->body_len};
    gs__httpd_reply_t rp = {.status = 200, .type = "application/json"};
    c->closing |= hd->close;
    h->o.handler(h->o.ctx, &rq, &rp);
    int head_only = strcmp(hd->method, "HEAD") == 0;
    int result;
    if (rp.body == NULL)
        result = reply(h, c, 500, "text/plain", "internal error\n", 15, head_only);
    else
        result = reply(h, c, rp.status > 0 ? rp.status : 200,
                       rp.type != NULL ? rp.type : "application/json", rp.body, rp.len, head_only);
    free(rp.body);
    return result;
}

/* ---- requests ---- */

static void consume(conn_t *c, size_t used)
{
    memmove(c->in, c->in + used, c->in_len - used);
    c->in_len -= used;
}

static int body_add(void *ctx, const char *data, size_t len)
{
    conn_t *c = ctx;
    if (len > c->body_cap - c->body_len) {
        size_t cap = c->body_cap ? c->body_cap : 4096;
        while (cap - c->body_len < len)
            cap *= 2;
        char *grown = realloc(c->body, cap + 1);
        if (grown == NULL)
            return 1;
        c->body = grown;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, data, len);
    c->body_len += len;
    c->body[c->body_len] = '\0';
    return 0;
}

/* The head is in: refuse it, or go on to the body. Returns 1 to go on, 0 to wait for more,
 * -1 when the connection is gone or answered. */
static int head_in(gs__httpd_t *h, conn_t *c, size_t head_len)
{
    c->head = malloc(sizeof(*c->head));
    int status = c->head != NULL ? gs__httpd_parse_head(c->in, head_len, c->head) : 500;
    consume(c, head_len);
    if (status == 0 && c->head->length > h->o.max_body)
        status = 413;
    if (status != 0) {
        refuse(h, c, status, status == 413 ? "body too large\n" : "bad request\n");
        return -1;
    }
    c->phase = C_BODY;
    c->deadline_ms = now_ms() + h->o.body_ms;
    c->chunks = (gs__http_chunks_t){0};
    int wants_body = c->head->chunked || c->head->length > 0;
    if (c->head->expect && !c->head->http10 && wants_body && c->in_len == 0) {
        static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (send(c->fd, go_on, sizeof(go_on) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(go_on) - 1) {
            drop(h, c);
            return -1;
        }
    }
    return 1;
}

/* Takes the body from c->in. Returns 1 when it is whole, 0 to wait, -1 when gone. */
static int body_in(gs__httpd_t *h, conn_t *c)
{
    if (!c->head->chunked) {
        if (c->in_len < c->head->length)
            return 0;
        int full = c->head->length > 0 && body_add(c, c->in, c->head->length) != 0;
        consume(c, c->head->length);
        if (full)
            refuse(h, c, 500, "out of memory\n");
        return full ? -1 : 1;
    }
    size_t used = 0;
    int state = gs__http_chunks(&c->chunks, c->in, c->in_len, body_add, c, &used);
    consume(c, used);
    /* A chunk's size says what is coming: over the limit is refused before it is sent. */
    uint64_t coming = c->body_len + c->chunks.left;
    if (state >= 0 && state != 1 && coming <= h->o.max_body)
        return state == 2;
    refuse(h, c, state < 0 ? 400 : 413, state < 0 ? "bad chunked body\n" : "body too large\n");
    return -1;
}

/* Works through what c->in holds: heads, bodies, answers, until it needs more bytes or is
 * answering. Returns 0 while the connection stays. */
static int progress(gs__httpd_t *h, conn_t *c)
{
    for (;;) {
        if (c->phase == C_WAIT && c->in_len > 0) {
            c->phase = C_HEAD;
            if (c->answered > 0) /* a new connection's first head keeps its accept's deadline */
                c->deadline_ms = now_ms() + h->o.head_ms;
        }
        if (c->phase == C_HEAD) {
            char *end = c->in_len >= 4 ? memmem(c->in, c->in_len, "\r\n\r\n", 4) : NULL;
            if (end == NULL && c->in_len > GS__HTTPD_HEAD_MAX) {
                refuse(h, c, 431, "request head too long\n");
                return -1;
            }
            if (end == NULL)
                break;
            if (head_in(h, c, (size_t)(end - c->in) + 4) < 0)
                return -1;
        }
        if (c->phase != C_BODY)
            break;
        int whole = body_in(h, c);
        if (whole < 0)
            return -1;
        if (whole == 0)
            break;
        if (answer(h, c) != 0)
            return -1;
        if (c->phase == C_REPLY || c->phase == C_LINGER)
            return 0; /* the rest once the reply is out (flush, then progress again) */
    }
    if (c->eof) { /* nothing more will come to complete it */
        drop(h, c);
        return -1;
    }
    return 0;
}

/* Reads what the socket has. Returns 0 while the connection stays. */
static int take_in(gs__httpd_t *h, conn_t *c)
{
    size_t limit = GS__HTTPD_HEAD_MAX + h->o.max_body + 4096;
    for (;;) {
        if (c->in_len == c->in_cap) {
            if (c->in_cap >= limit)
                return 0; /* full: progress() refuses or answers first */
            size_t cap = c->in_cap ? c->in_cap * 2 : IN_FIRST;
            char *grown = realloc(c->in, cap < limit ? cap : limit);
            if (grown == NULL)
                return 0;
            c->in = grown;
            c->in_cap = cap < limit ? cap : limit;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0) {
            c->eof = 1;
            return 0;
        }
        if (c->phase == C_LINGER)
            continue; /* discarded */
        c->in_len += (size_t)n;
    }
}

static void on_event(gs__httpd_t *h, conn_t *c, uint32_t events)
{
    if (c->phase == C_REPLY) {
        if (flush(h, c) == 0 && (c->phase == C_WAIT || c->phase == C_HEAD))
            progress(h, c); /* pipelined requests already read */
        return;
    }
    if (take_in(h, c) != 0)
        return;
    if (c->phase == C_LINGER) {
        if (c->eof || (events & (EPOLLERR | EPOLLHUP)))
            drop(h, c);
        return;
    }
    progress(h, c);
}

/* ---- the thread ---- */

static void expire(gs__httpd_t *h, int64_t now)
{
    for (unsigned i = 0; i < h->o.max_conns; i++) {
        conn_t *c = &h->conns[i];
        if (c->phase != C_FREE && now >= c->deadline_ms)
            drop(h, c);
    }
}

static void take_adopted(gs__httpd_t *h)
{
    uint64_t count;
    if (read(h->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
        return;
    int fds[ADOPT_MAX];
    pthread_mutex_lock(&h->lock);
    unsigned n = h->n_adopted;
    memcpy(fds, h->adopted, n * sizeof(int));
    h->n_adopted = 0;
    pthread_mutex_unlock(&h->lock);
    for (unsigned i = 0; i < n; i++) {
        conn_t *c = take(h, fds[i]);
        if (c != NULL)
            on_event(h, c, EPOLLIN); /* what it holds already */
    }
}

static void *serve(void *arg)
{
    gs__httpd_t *h = arg;
    struct epoll_event events[EVENTS];
    int64_t next_tick = now_ms() + TICK_MS;
    while (!atomic_load(&h->stop)) {
        int n = epoll_wait(h->epfd, events, EVENTS, TICK_MS);
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &wake_tag)
                take_adopted(h);
            else if (tag == &listen_tag)
                accept_all(h);
            else if (((conn_t *)tag)->phase != C_FREE)
                on_event(h, tag, events[i].events);
        }
        int64_t now = now_ms();
        if (now >= next_tick) {
            expire(h, now);
            next_tick = now + TICK_MS;
        }
    }
    return NULL;
}

/* ---- start, adopt, stop ---- */

static int open_listener(const char *addr, uint16_t port, uint16_t *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t len = sizeof(sa);
    int one = 1;
    if (addr == NULL || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return GS_EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return GS_EIO;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int result = errno == EADDRINUSE ? GS_EBUSY : GS_EIO;
        close(fd);
        return result;
    }
    if (bound != NULL)
        *bound = ntohs(sa.sin_port);
    return fd;
}

static void defaults(gs__httpd_opts_t *o)
{
    o->max_body = o->max_body ? o->max_body : 1u << 20;
    o->max_conns = o->max_conns ? (o->max_conns > 65536 ? 65536 : o->max_conns) : 1024;
    o->per_peer = o->per_peer ? o->per_peer : (o->max_conns + 7) / 8;
    o->head_ms = o->head_ms > 0 ? o->head_ms : 5000;
    o->body_ms = o->body_ms > 0 ? o->body_ms : 10000;
    o->idle_ms = o->idle_ms > 0 ? o->idle_ms : 15000;
    o->stall_ms = o->stall_ms > 0 ? o->stall_ms : 10000;
}

static int add(int epfd, int fd, void *tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : GS_EIO;
}

static void release(gs__httpd_t *h)
{
    if (h->conns != NULL)
        for (unsigned i = 0; i < h->o.max_conns; i++)
            drop(h, &h->conns[i]);
    for (unsigned i = 0; i < h->n_adopted; i++)
        close(h->adopted[i]);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    if (h->epfd >= 0)
        close(h->epfd);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    pthread_mutex_destroy(&h->lock);
    free(h->conns);
    free(h);
}

int gs__httpd_start(const gs__httpd_opts_t *opts, gs__httpd_t **out, uint16_t *bound)
{
    if (opts == NULL || opts->handler == NULL)
        return GS_EINVAL;
    gs__httpd_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return GS_ENOMEM;
    h->o = *opts;
    defaults(&h->o);
    atomic_init(&h->stop, 0);
    pthread_mutex_init(&h->lock, NULL);
    h->conns = calloc(h->o.max_conns, sizeof(conn_t));
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    h->listen_fd = open_listener(h->o.addr, h->o.port, bound);
    int result = h->conns == NULL ? GS_ENOMEM : h->listen_fd < 0 ? h->listen_fd : 0;
    for (unsigned i = 0; h->conns != NULL && i < h->o.max_conns; i++)
        h->conns[i].fd = -1;
    if (result == 0 && (h->epfd < 0 || h->wake_fd < 0))
        result = GS_EIO;
    if (result == 0)
        result = add(h->epfd, h->listen_fd, &listen_tag);
    if (result == 0)
        result = add(h->epfd, h->wake_fd, &wake_tag);
    if (result == 0 && pthread_create(&h->thread, NULL, serve, h) != 0)
        result = GS_ENOMEM;
    if (result != 0) {
        release(h);
        return result;
    }
    *out = h;
    return 0;
}

int gs__httpd_adopt(gs__httpd_t *h, int fd)
{
    uint64_t one = 1;
    pthread_mutex_lock(&h->lock);
    int result = h->n_adopted < ADOPT_MAX ? 0 : GS_EBUSY;
    if (result == 0)
        h->adopted[h->n_adopted++] = fd;
    pthread_mutex_unlock(&h->lock);
    if (result != 0)
        close(fd);
    else if (write(h->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
        result = GS_EIO; /* the eventfd's counter is full: the fd is taken at the next wake */
    return result;
}

void gs__httpd_stop(gs__httpd_t *h)
{
    if (h == NULL)
        return;
    uint64_t one = 1;
    atomic_store(&h->stop, 1);
    if (write(h->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        /* epoll_wait's tick notices the flag within TICK_MS */
    }
    pthread_join(h->thread, NULL);
    release(h);
}
