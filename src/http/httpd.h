/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare's one HTTP/1.1 server (library gs_http): one thread, epoll, a fixed table of
 * connections, for small request/response exchanges answered at once (the scheduler
 * extender's verbs; the daemon's metrics are the same shape).
 *
 * Why event-driven, and why the eviction: a peer that opens connections and sends nothing, or a
 * byte a second (slowloris), costs a slot of the table and nothing else; no thread waits on it,
 * so a request on any other connection is read, answered and written as soon as its bytes are
 * there. Each phase of a connection has its own short deadline (the head, the body, waiting
 * for the next request, the client taking the reply). A peer (by default its IP address) holds
 * at most `per_peer` connections: one more closes that peer's oldest connection that is not
 * being answered; when the table is full, a new connection closes the oldest such connection of
 * the peer holding the most. A flood therefore displaces only its own connections.
 *
 * Framing is strict (RFC 9112), since a request a proxy in front could read otherwise is a
 * smuggling vector: Content-Length together with Transfer-Encoding, two Content-Lengths, any
 * transfer coding but "chunked" alone, Transfer-Encoding in HTTP/1.0, whitespace before a
 * header's colon, folded lines, bare LF or NUL in the head, an HTTP/1.1 request without one
 * Host: each answered 4xx/501 and the connection closed (after a lingering close, so that the
 * answer is read before the reset). Expect: 100-continue is answered "100 Continue" at once
 * (or the final status when the request is refused by its head). Pipelined requests are
 * answered one after another as soon as each is whole.
 *
 * Threading: the handler runs on the server's thread, one request at a time; it must answer
 * in milliseconds (a slow handler delays every connection). gs__httpd_adopt is thread-safe;
 * start and stop are called by the owner, once each. */
#ifndef GS_HTTP_HTTPD_H
#define GS_HTTP_HTTPD_H

#include <stddef.h>
#include <stdint.h>

typedef struct gs__httpd gs__httpd_t;

/* A whole request, valid during the handler's call. */
typedef struct gs__httpd_request {
    const char *method; /* "GET", "HEAD", "POST", ... (HEAD: the reply's body is not sent) */
    const char *target; /* as sent: the path and the query */
    const char *body;   /* NUL-terminated; "" when the request had none */
    size_t len;
} gs__httpd_request_t;

/* The handler's answer: status (200 when left), type (a static string; "application/json"
 * when left), body (malloc'ed, freed by the server; NULL answers 500) of len bytes. */
typedef struct gs__httpd_reply {
    int status;
    const char *type;
    char *body;
    size_t len;
} gs__httpd_reply_t;

typedef void (*gs__httpd_handler_t)(void *ctx, const gs__httpd_request_t *request,
                                    gs__httpd_reply_t *reply);

/* Who is at the other end of an accepted connection, as the per-peer limit counts peers. */
typedef uint64_t (*gs__httpd_peer_fn_t)(void *ctx, int fd);

/* What to serve and how; zero fields take the defaults given. */
typedef struct gs__httpd_opts {
    const char *addr; /* IPv4 address to listen on ("127.0.0.1") */
    uint16_t port;    /* 0: any free port (gs__httpd_start says which) */
    gs__httpd_handler_t handler;
    void *ctx;
    size_t max_body;          /* larger bodies: 413 and close (0: 1 MiB) */
    unsigned max_conns;       /* the table (0: 1024; at most 65536) */
    unsigned per_peer;        /* connections one peer holds (0: max_conns / 8) */
    int head_ms;              /* to send a whole request head from its first byte, or a new
                               * connection's first head from its accept (0: 5000) */
    int body_ms;              /* to send the body once the head is in (0: 10000) */
    int idle_ms;              /* a kept-alive connection waiting for its next request (0: 15000) */
    int stall_ms;             /* the client taking none of the reply (0: 10000) */
    int close_each;           /* 1: one request per connection ("Connection: close") */
    gs__httpd_peer_fn_t peer; /* NULL: the peer's IPv4 address (0 for other families) */
    void *peer_ctx;
} gs__httpd_opts_t;

/* Listens and starts the server's thread. Returns 0 with *out (and the port in *bound unless
 * NULL), GS_EINVAL (no handler, or addr is not an IPv4 address), GS_EBUSY (the port is taken),
 * GS_EIO (socket, epoll) or GS_ENOMEM. */
int gs__httpd_start(const gs__httpd_opts_t *opts, gs__httpd_t **out, uint16_t *bound);

/* Serves a connected stream socket fd as if it had been accepted (tests and fuzzing: a
 * socketpair); the server owns fd from then on and closes it, also on error. Thread-safe.
 * Returns 0, GS_EBUSY (too many handed over at once: retry) or GS_EIO. */
int gs__httpd_adopt(gs__httpd_t *http, int fd);

/* Stops the thread, closes every connection and frees the server (NULL is fine). */
void gs__httpd_stop(gs__httpd_t *http);

#endif
