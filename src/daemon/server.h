/* The API server: the unix socket, its epoll event loop and the client connections.
 *
 * One JSON object per line in both directions. A request line is at most GS_PROTO_LINE_MAX
 * bytes: a longer one gets a "too_long" error and the connection is closed. A connection that
 * holds no lease and no queued request and sends no complete line for idle_timeout is closed
 * with an "idle_timeout" error. Callers are identified by SO_PEERCRED. Replies are written after
 * the ledger commit of the loop iteration that produced them (group commit). */
#ifndef GS_DAEMON_SERVER_H
#define GS_DAEMON_SERVER_H

#include <jansson.h>
#include <stddef.h>

#include "daemon.h"

typedef struct gs__conn gs__conn_t;

/* The caller's credentials (from SO_PEERCRED when it connected). */
const gs__cred_t *gs__conn_cred(const gs__conn_t *conn);

/* Queues msg (stolen; NULL is ignored) for the connection, as one line. Messages to a closed
 * connection are dropped. */
void gs__conn_send(gs__conn_t *conn, json_t *msg);

/* Counts the leases held through the connection (delta +1 or -1), and reads the count: a
 * connection holding a lease is never idle. */
void gs__conn_count_lease(gs__conn_t *conn, int delta);
unsigned gs__conn_leases(const gs__conn_t *conn);

/* Closes the connection once its pending output is written. */
void gs__conn_close(gs__conn_t *conn);

/* Creates the socket (mode 0666: SO_PEERCRED authenticates) and runs the loop until SIGTERM or
 * SIGINT. Returns 0 after a clean stop, or -errno with one line in err when the socket cannot
 * be set up (another gpushared listening on it is an error). */
int gs__server_run(gs__daemon_t *d, char *err, size_t errlen);

#endif
