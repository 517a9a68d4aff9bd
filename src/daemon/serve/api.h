/* SPDX-License-Identifier: Apache-2.0 */
/* The API's requests: hello, acquire (with the wait queue), release, list and status. */
#ifndef GS_DAEMON_API_H
#define GS_DAEMON_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"
#include "server.h"

/* Sets d's lease events (core's callbacks: the holder of a lease is its connection). Call once,
 * before the leases are restored. */
void gs__api_attach(gs__daemon_t *d);

/* Handles one request line from conn; replies (or queues the request) through gs__conn_send.
 * Returns 0, or the ms after which to hand the same line again: a history request of a user
 * whose share of the daemon's time for history is spent (users.h) waits, unanswered, and the
 * connection is not read meanwhile. */
int64_t gs__api_request(gs__daemon_t *d, gs__conn_t *conn, const char *line, size_t len);

/* The connection is gone: its queued request is dropped and its leases are let go. */
void gs__api_conn_closed(gs__daemon_t *d, gs__conn_t *conn);

/* Nonzero when conn holds a lease or a queued request (it is then never idle). */
int gs__api_conn_busy(const gs__daemon_t *d, const gs__conn_t *conn);

/* Serves the queue (core/queue_pass.h): grants what may start, records why the others wait. */
void gs__api_schedule(gs__daemon_t *d);

/* Ends the wait of queued requests whose timeout passed (a "timeout" error each). */
void gs__api_expire(gs__daemon_t *d, int64_t now_ms);

/* Frees the queued requests (shutdown). */
void gs__api_shutdown(gs__daemon_t *d);

/* ---- keyed leases (api_keyed.c) ---- */

/* Nonzero when cred may act for others: root, or a member (primary or supplementary group, by
 * the user database) of the configured lease_admin_group. Such a caller may ask for a lease on
 * behalf of another user and name a lease's cgroup (acquire's "cgroup", attach). */
int gs__api_admin(const gs__daemon_t *d, const gs__cred_t *cred);

/* An acquire with a key, for a lease of user owner: replies with the live lease of that key
 * (whatever its state) when it is owner's, or an error (a key of another user's lease, whoever
 * asks; a k8s/ key from a caller who is not root or lease_admin_group) and returns 1; or checks
 * its cgroup, draws its capability and returns 0 (the acquire goes on as any). */
int gs__api_keyed_acquire(gs__daemon_t *d, gs__conn_t *conn, gs_lease_request_t *req, uid_t owner);

/* Adds a keyed lease's key, socket and "existing" to its acquire reply (its processes join
 * through its own socket) and listens on the socket. */
void gs__api_keyed_reply(gs__daemon_t *d, gs__conn_t *conn, gs__lease_t *lease, json_t *reply,
                         int existing);

/* attach: the keyed lease's processes are a cgroup's (given, or a process's). */
void gs__api_attach_cgroup(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req);

/* A connection on a keyed lease's own socket may ask hello, list and, for that lease, join and
 * compute_join. Returns 0 to serve req, or -1 after refusing it. */
int gs__api_lease_only(gs__conn_t *conn, gs_request_t *req);

/* The lease id names, if the caller may act on it (its user, root, or its own socket);
 * otherwise replies the error for op and returns NULL. */
gs__lease_t *gs__api_lease_for(gs__daemon_t *d, gs__conn_t *conn, const char *op, uint64_t id);

/* ---- suspend and resume (api_suspend.c) ---- */

/* suspend: the lease's CUDA processes are checkpointed to host memory (all or none) and its
 * capacity goes back to the pool. The checkpoint runs on the checkpoint worker
 * (gpu/checkpoint.h): conn is answered when it is done (gs__api_ckpt_done). */
void gs__api_suspend(gs__daemon_t *d, gs__conn_t *conn, uint64_t id);

/* resume: a suspended lease's capacity is taken again when it fits, its processes restored;
 * when it does not fit now, the resume waits (reply "resume": "waiting") and happens by itself
 * once its capacity is free (gs__api_resume_waiting). */
void gs__api_resume(gs__daemon_t *d, gs__conn_t *conn, uint64_t id);

/* The checkpoint worker has jobs done (its descriptor, gs__ckpt_fd, is readable): each is
 * applied to its lease and its requester answered. */
void gs__api_ckpt_done(gs__daemon_t *d);

/* conn is gone: the jobs it asked for answer nobody (their results still apply). */
void gs__api_ckpt_conn_closed(gs__daemon_t *d, const gs__conn_t *conn);

/* Nonzero while conn waits for the answer of a suspend or resume. */
int gs__api_ckpt_waits(const gs__daemon_t *d, const gs__conn_t *conn);

/* Resumes the suspended leases whose resume waits and whose capacity is free now, oldest lease
 * first (the schedule, before the queue: they held that memory before any waiting request). */
void gs__api_resume_waiting(gs__daemon_t *d);

/* Builds an error reply {"ok": false, "op": op, "error": {"code", "message"}} with a code of the
 * table (gpushare/wire_errors.def: the only codes the daemon sends); op may be NULL. */
json_t *gs__api_error(const char *op, gs_wire_error_t code, const char *message);

#endif
