/* SPDX-License-Identifier: Apache-2.0 */
/* A client connection of the API server: its buffers, its replies (with a descriptor passed
 * along, SCM_RIGHTS), its flow control and its place in the server's lists. Private to
 * server.c and conn.c. */
#ifndef GS_DAEMON_CONN_H
#define GS_DAEMON_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"
#include "core/core.h"

struct server;

struct gs__conn {
    struct gs__conn *prev, *next;           /* every connection */
    struct gs__conn *idle_prev, *idle_next; /* by last activity, oldest first */
    struct gs__conn *next_pending;          /* connections with output to write */
    struct server *server;
    int fd;
    gs__cred_t cred;
    gs__user_t *user; /* its user's counters */
    char *in;         /* GS_PROTO_LINE_MAX bytes, allocated at the first read */
    size_t in_len;
    char *out;
    size_t out_len, out_cap;
    int pass_fd; /* a descriptor to send with the byte at out[pass_at], -1 = none */
    size_t pass_at;
    int64_t last_active_ms;
    int closing;         /* close once the output is written */
    int dead;            /* gone: free at the end of the iteration */
    int pending;         /* in the list of connections with output to write */
    unsigned events;     /* the epoll events asked for now */
    unsigned leases;     /* leases held through this connection */
    void *waiter;        /* its queued request */
    uint64_t lease_only; /* taken on a keyed lease's socket: serves that lease only, else 0 */
    int lease_foreign;   /* ... from a process that lease does not serve: every request
                            refused (lease_socket.h) */
    int64_t deferred_ms; /* its next request waits its turn until then (its user's share of
                            history work is spent; not read meanwhile), 0 = none */
    int held;            /* a request of it is answered later (gs__conn_hold): not read */
    int unheld;          /* let go since the last flush: serve what it buffered meanwhile */
};

/* Nonzero while the connection must not be read: replies unread, a descriptor to pass, a
 * request waiting its turn, or one answered later (held). */
int gs__conn_paused(const gs__conn_t *conn);

/* Writes what the connection's output holds, as far as the socket takes it. Returns 0, or -1
 * when the connection is gone (the caller drops it). */
int gs__conn_flush(gs__conn_t *conn);

/* Frees the connection's memory and its descriptor to pass (not its socket). */
void gs__conn_free(gs__conn_t *conn);

/* The server's side of gs__conn_send: puts conn in the list of connections to flush. */
void gs__server_pending(struct server *s, gs__conn_t *conn);

/* The server's limit of unread output per connection, in bytes. */
size_t gs__server_out_max(const struct server *s);

/* The server's limit of unread output of all of one user's connections, in bytes. */
unsigned gs__server_user_out_max(const struct server *s);

#endif
