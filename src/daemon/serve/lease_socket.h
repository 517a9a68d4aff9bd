/* SPDX-License-Identifier: Apache-2.0 */
/* A keyed lease's own socket: its capability (issue 21, docs/containers.md).
 *
 * gpushared listens for every keyed lease on a socket of its own, RUNDIR/leases/CAP/lease.sock
 * (RUNDIR: the main socket's directory; CAP: the lease's 32 random hex digits, kept in its
 * ledger row). RUNDIR/leases is mode 0711 (nobody can list it), CAP's directory and the socket
 * are open to all, so that a container's processes reach it whatever their uid or namespace — a
 * container gets the directory mounted at /run/gpushare. The path is not a secret (issue 34: a
 * container process's mountinfo shows it to every user): a connection is served only when its
 * process is one the lease serves, checked at accept through a pidfd of the peer — a process in
 * the lease's cgroup or below once one is attached (the container's: named by root or
 * lease_admin_group, whatever the process's uid, root's outside it refused too), and before
 * that a process of the lease's user or root. Any other connection is taken (it counts against
 * its user's connections) and every request on it is refused with one line. A connection
 * served there serves that lease only: it may say hello, join its region, take part in its
 * compute schedulers and list that lease (serve/api.c); it cannot see, join or release any
 * other, nor release this one (the orchestrator does, by key, on the main socket). The
 * directory is mounted rather than the socket so that a restarted gpushared's new socket is
 * what containers see.
 *
 * Event loop only. A socket belongs to its lease (lease->serve_data) and goes with it. */
#ifndef GS_DAEMON_LEASE_SOCKET_H
#define GS_DAEMON_LEASE_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "server.h"

typedef struct gs__lease_socket gs__lease_socket_t;

/* Writes the path of the keyed lease's socket (RUNDIR/leases/CAP/lease.sock) into buf, or its
 * directory with dir set. Returns 0 or GS_ERANGE. */
int gs__lease_socket_path(const gs__daemon_t *d, const gs__lease_t *lease, int dir, char *buf,
                          size_t len);

/* Listens on the keyed lease's socket (made anew; a stale one is replaced) through the server's
 * event loop. Returns 0 (also when it listens already) or -errno with one line in err. */
int gs__lease_socket_open(struct server *s, gs__lease_t *lease, char *err, size_t errlen);

/* Stops listening; with remove, also removes the socket and its directory (the lease ended).
 * Without (gpushared stops), the directory stays: containers have it mounted, and the next
 * start's socket appears in it. */
void gs__lease_socket_close(gs__lease_t *lease, int remove);

/* Takes the connections waiting on ls (the event loop saw it readable), each marked with whether
 * the lease serves its process. */
void gs__lease_socket_accept(gs__lease_socket_t *ls);

/* For a connection from a process its lease does not serve: replies req with one
 * permission_denied line and returns -1; 0 for any other connection (nothing sent). */
int gs__lease_socket_refuse(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req);

#endif
