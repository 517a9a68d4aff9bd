/* SPDX-License-Identifier: Apache-2.0 */
/* The API server: the unix socket, its epoll event loop and the client connections.
 *
 * One JSON object per line in both directions. A request line is at most GS_PROTO_LINE_MAX
 * bytes: a longer one gets a "too_long" error and the connection is closed. A connection that
 * holds no lease and no queued request and sends no complete line for idle_timeout is closed
 * with an "idle_timeout" error. Callers are identified by SO_PEERCRED.
 *
 * What one user can make the daemon hold is bounded (root is exempt): max_connections_per_user
 * connections (more are answered "busy" and closed at once), max_queued_per_user waiting
 * requests (the API refuses more), and per connection max_output_per_connection bytes of unread
 * replies. A connection whose unread replies pass GS__CONN_PAUSE_BYTES is not read any further
 * until its client reads them: a client that pipelines requests and reads nothing costs one
 * buffer, never a growing one. Periodic work is proportional to what changed: idle connections
 * are found from the oldest activity on, queued requests by their deadline. */
#ifndef GS_DAEMON_SERVER_H
#define GS_DAEMON_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "metrics.h"

#define GS__CONN_PAUSE_BYTES (64u * 1024)

typedef struct gs__conn gs__conn_t;

/* The caller's credentials (from SO_PEERCRED when it connected). */
const gs__cred_t *gs__conn_cred(const gs__conn_t *conn);

/* The counters of the caller's user (never NULL). */
gs__user_t *gs__conn_user(const gs__conn_t *conn);

/* Queues msg (stolen; NULL is ignored) for the connection, as one line. Messages to a closed
 * connection are dropped; a connection whose unread replies would pass
 * max_output_per_connection is cut off. */
void gs__conn_send(gs__conn_t *conn, json_t *msg);

/* Like gs__conn_send, and the connection's output is written now, as far as the socket takes it
 * (the rest, and a connection found gone, wait for the loop's flush): for a message that must
 * reach the client before something else the loop does next. */
void gs__conn_send_now(gs__conn_t *conn, json_t *msg);

/* Like gs__conn_send, and fd (not taken: a duplicate is sent) travels with the line
 * (SCM_RIGHTS). Returns 0, or -errno when fd cannot be duplicated (nothing is queued). The
 * connection reads no further request until the line has left. */
int gs__conn_send_fd(gs__conn_t *conn, json_t *msg, int fd);

/* Counts the leases held through the connection (delta +1 or -1), and reads the count: a
 * connection holding a lease is never idle. */
void gs__conn_count_lease(gs__conn_t *conn, int delta);
unsigned gs__conn_leases(const gs__conn_t *conn);

/* The request the connection has queued (the API's, opaque here), NULL when none. */
void gs__conn_set_waiter(gs__conn_t *conn, void *waiter);
void *gs__conn_waiter(const gs__conn_t *conn);

/* Holds the connection's next requests unread (on) while one of its requests is answered later
 * (a suspend or resume, answered when the checkpoint worker is done: replies stay in order),
 * and lets them go (off): those it sent meanwhile are then served. */
void gs__conn_hold(gs__conn_t *conn, int on);

/* Closes the connection once its pending output is written. */
void gs__conn_close(gs__conn_t *conn);

/* The lease a connection taken on a keyed lease's own socket serves (lease_socket.h), 0 for a
 * connection to the main socket. */
uint64_t gs__conn_lease_only(const gs__conn_t *conn);

/* Nonzero for a connection on a keyed lease's socket from a process that lease does not serve
 * (lease_socket.h): its every request is refused. */
int gs__conn_lease_foreign(const gs__conn_t *conn);

/* The server a connection belongs to; the daemon it serves. */
struct server *gs__conn_server(const gs__conn_t *conn);
gs__daemon_t *gs__server_daemon(struct server *s);

/* For lease_socket.c: watches fd in the loop with tag (its lowest bit set, so that it is told
 * from a connection), stops watching it, and takes a connection accepted on a keyed lease's
 * socket (serving that lease only; with foreign, from a process the lease does not serve). */
int gs__server_watch(struct server *s, int fd, uintptr_t tag);
void gs__server_unwatch(struct server *s, int fd);
void gs__server_take(struct server *s, int fd, uint64_t lease_only, int foreign);

/* Out of file descriptors, a pending connection on listen_fd (the main socket or a keyed
 * lease's) would wake the level-triggered loop forever: gives up the spare descriptor, takes the
 * connection and closes it at once; logged at most every 5 s, with a count. */
void gs__server_refuse(struct server *s, int listen_fd);

/* Creates the socket (mode 0666: SO_PEERCRED authenticates) and runs the loop until SIGTERM or
 * SIGINT, publishing d's metrics on metrics (NULL: off) once a second and after each watchdog
 * scan. Returns 0 after a clean stop, or -errno with one line in err when the socket cannot be
 * set up (another gpushared listening on it is an error). */
int gs__server_run(gs__daemon_t *d, gs__metrics_t *metrics, char *err, size_t errlen);

#endif
