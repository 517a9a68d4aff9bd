/* SPDX-License-Identifier: Apache-2.0 */
/* The API's requests: parse, authorise by SO_PEERCRED, act, reply; the wait queue's service. */
#include "api.h"
#include "gpu/gpu.h"
#include "lease_socket.h"
#include "views.h"

#include "gpushare/version.h"
#include "gpushare/error.h"
#include "gpushare/log.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Core's callbacks (gs__lease_events_t): a lease's holder is its connection. */
static void held(struct gs__conn *conn, int delta)
{
    gs__conn_count_lease(conn, delta);
}

static void stop_job(const gs__daemon_t *d, const gs__lease_t *lease, const char *event,
                     const char *by)
{
    json_t *msg =
        json_pack("{s:s, s:I, s:s, s:I}", "event", event, "lease", (json_int_t)lease->rec.id, "by",
                  by, "grace_ms", (json_int_t)d->cfg.kill_grace_ms);
    if (msg != NULL && lease->expired)
        json_object_set_new(msg, "time_limit_ms",
                            json_integer((json_int_t)lease->rec.request.time_limit_ms));
    /* Out now, before core signals the job: the holder reads who stopped it before it sees its
     * job die. */
    gs__conn_send_now(lease->conn, msg);
}

/* The watchdog kills one of the lease's processes: its holder (gpushare run) is told who and why,
 * before the signal, and prints it on the job's stderr. */
static void killing(const gs__daemon_t *d, const gs__lease_t *lease, pid_t pid, const char *command,
                    const char *why)
{
    (void)d;
    if (lease->conn == NULL)
        return;
    json_t *msg = json_pack("{s:s, s:I, s:I, s:s, s:s, s:s}", "event", "killed", "lease",
                            (json_int_t)lease->rec.id, "pid", (json_int_t)pid, "command", command,
                            "reason", why, "enforce", "kill");
    gs__conn_send_now(lease->conn, msg);
}

/* The lease ends: its processes leave the GPUs' compute schedulers. */
static void ending(gs__daemon_t *d, gs__lease_t *lease)
{
    gs__compute_sched_drop(d, lease);
    gs__lease_socket_close(lease, 1);
}

void gs__api_attach(gs__daemon_t *d)
{
    d->events.held = held;
    d->events.stop_job = stop_job;
    d->events.killing = killing;
    d->events.ending = ending;
}

json_t *gs__api_error(const char *op, gs_wire_error_t code, const char *message)
{
    json_t *reply = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code",
                              gs_wire_error_name(code), "message", message);
    if (reply != NULL && op != NULL)
        json_object_set_new(reply, "op", json_string(op));
    return reply;
}

static json_t *ok_reply(const char *op)
{
    return json_pack("{s:b, s:s}", "ok", 1, "op", op);
}

static gs__waiter_t *find_waiter(const gs__daemon_t *d, const gs__conn_t *conn)
{
    (void)d;
    return gs__conn_waiter(conn);
}

int gs__api_conn_busy(const gs__daemon_t *d, const gs__conn_t *conn)
{
    if (gs__api_ckpt_waits(d, conn))
        return 1;
    return gs__conn_leases(conn) > 0 || find_waiter(d, conn) != NULL;
}

/* w joins the queue: its connection waits for it, its user has one more request waiting. */
static void enqueue(gs__daemon_t *d, gs__waiter_t *w)
{
    gs__queue_push(&d->queue, w);
    gs__conn_set_waiter(w->owner, w);
    gs__conn_user(w->owner)->queued++;
}

/* w leaves the queue (the caller frees it). */
static void unqueue(gs__daemon_t *d, gs__waiter_t *w)
{
    gs__queue_remove(&d->queue, w);
    gs__conn_set_waiter(w->owner, NULL);
    gs__user_t *user = gs__conn_user(w->owner);
    if (user->queued > 0)
        user->queued--;
}

/* Whom a lease is for: the caller, or the user root asked for (req->owner, already resolved by
 * resolve_owner); the holder process stays the caller. */
static void lease_cred(const gs__conn_t *conn, const gs_lease_request_t *req, gs__cred_t *out)
{
    *out = *gs__conn_cred(conn);
    if (!req->owner.set)
        return;
    out->uid = req->owner.uid;
    out->gid = req->owner.gid;
    snprintf(out->user, sizeof(out->user), "%s", req->owner.user);
}

static void grant(gs__daemon_t *d, gs__conn_t *conn, const gs_lease_request_t *req,
                  int64_t submitted_at_ms, const gs__alloc_t *alloc)
{
    gs__cred_t owner;
    lease_cred(conn, req, &owner);
    const gs__cred_t *cred = &owner;
    gs__lease_t *lease = NULL;
    char err[GS__PATH_MAX + 128];
    int result =
        gs__lease_grant(d, conn, cred, req, submitted_at_ms, alloc, &lease, err, sizeof(err));
    if (result != 0) {
        gs_error("cannot grant a lease to user %s: %s", cred->user, err);
        gs__conn_send(conn, gs__api_error("acquire",
                                          result == GS_EGPU ? GS_WIRE_GPU_FAILED : GS_WIRE_INTERNAL,
                                          err));
        return;
    }
    json_t *reply = ok_reply("acquire");
    json_object_set_new(reply, "state", json_string("granted"));
    json_object_set_new(reply, "lease", gs__view_lease(d, lease));
    json_object_set_new(reply, "env", gs__view_env(d, lease));
    json_t *paths = gs__view_env_paths(d);
    if (json_object_size(paths) > 0)
        json_object_set_new(reply, "env_prepend", paths);
    else
        json_decref(paths);
    if (d->cfg.shim[0] != '\0')
        json_object_set_new(reply, "preload", json_string(d->cfg.shim));
    if (gs__lease_keyed(lease))
        gs__api_keyed_reply(d, conn, lease, reply, 0);
    gs__conn_send(conn, reply);
    char what[128] = "";
    if (gs_log_enabled(GS_LOG_INFO))
        gs__lease_describe(d, lease, what, sizeof(what));
    gs_info("lease %llu granted to user %s (pid %d%s): %s, command \"%s\"",
            (unsigned long long)lease->rec.id, cred->user, (int)cred->pid,
            req->owner.set ? ", asked by root" : "", what, req->command);
}

/* The scheduler's grant: the waiter leaves the queue with its lease. */
static void grant_waiter(gs__daemon_t *d, gs__waiter_t *w, const gs__alloc_t *alloc)
{
    unqueue(d, w);
    /* When it was asked for, on the wall clock (the queue keeps the monotonic one). */
    int64_t submitted = gs__wall_ms() - (gs__now_ms() - w->queued_ms);
    grant(d, w->owner, &w->req, submitted, alloc);
    free(w);
}

/* Refuses a request that cannot start now and may not wait, saying why. */
static void refuse_no_fit(gs__daemon_t *d, gs__conn_t *conn, gs__waiter_t *w)
{
    char why[512], reason[448];
    d->counters.rejected_no_fit++;
    gs__reason_wait(d, w, reason, sizeof(reason));
    snprintf(why, sizeof(why), "no room for this lease now: %s", reason);
    gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_NO_FIT, why));
}

/* Tells the caller its request waits: where in the queue and why. */
static void reply_queued(gs__daemon_t *d, gs__conn_t *conn, const gs__waiter_t *w)
{
    char reason[448];
    gs__reason_wait(d, w, reason, sizeof(reason));
    d->counters.queued++;
    json_t *reply = ok_reply("acquire");
    json_object_set_new(reply, "state", json_string("queued"));
    json_object_set_new(reply, "position", json_integer(w->wait.position));
    json_object_set_new(reply, "queue_length", json_integer(d->queue.length));
    json_object_set_new(reply, "reason", json_string(reason));
    gs__conn_send(conn, reply);
    gs__cred_t owner;
    lease_cred(conn, &w->req, &owner);
    gs_info("user %s (pid %d%s) waits for a lease (position %u of %u: %s): command \"%s\"",
            owner.user, (int)owner.pid, w->req.owner.set ? ", asked by root" : "", w->wait.position,
            d->queue.length, reason, w->req.command);
}

/* Queues req and runs the scheduler: it starts now if it fits without delaying a request ahead
 * of it, else it waits (or, without wait, is refused). */
static void admit(gs__daemon_t *d, gs__conn_t *conn, const gs_lease_request_t *req)
{
    gs__waiter_t *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_INTERNAL, "out of memory"));
        return;
    }
    int64_t now = gs__now_ms();
    gs__cred_t owner;
    lease_cred(conn, req, &owner);
    w->owner = conn;
    w->uid = owner.uid;
    w->req = *req;
    w->queued_ms = now;
    w->deadline_ms = req->timeout_ms != 0 ? now + req->timeout_ms : 0;
    enqueue(d, w);
    gs__queue_pass(d, now, grant_waiter);
    if (find_waiter(d, conn) == NULL)
        return; /* granted */
    if (req->wait) {
        reply_queued(d, conn, w);
        return;
    }
    unqueue(d, w);
    refuse_no_fit(d, conn, w);
    free(w);
}

/* Completes req->owner (uid, gid and name) from the passwd database: a name gives the uid, a
 * uid gives the name (its number when it has no entry), and either gives the primary group
 * unless a gid was given. Returns 0, or GS_EINVAL with the reason in why. */
static int resolve_owner(gs_lease_owner_t *owner, char *why, size_t whylen)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (owner->has_uid)
        getpwuid_r((uid_t)owner->uid, &pw, buf, sizeof(buf), &found);
    else
        getpwnam_r(owner->user, &pw, buf, sizeof(buf), &found);
    if (found == NULL && !owner->has_uid)
        return gs_fail(why, whylen, GS_EINVAL, "no user \"%s\" on this node", owner->user);
    if (found == NULL && !owner->has_gid)
        return gs_fail(why, whylen, GS_EINVAL,
                       "uid %u has no passwd entry on this node: give its \"gid\"", owner->uid);
    if (found != NULL && owner->has_uid && owner->user[0] != '\0' &&
        strcmp(owner->user, found->pw_name) != 0)
        return gs_fail(why, whylen, GS_EINVAL, "uid %u is user \"%s\", not \"%s\"", owner->uid,
                       found->pw_name, owner->user);
    if (found != NULL) {
        owner->uid = (uint32_t)found->pw_uid;
        if (!owner->has_gid)
            owner->gid = (uint32_t)found->pw_gid;
        snprintf(owner->user, sizeof(owner->user), "%s", found->pw_name);
    } else {
        snprintf(owner->user, sizeof(owner->user), "%u", owner->uid);
    }
    owner->has_uid = owner->has_gid = 1;
    return 0;
}

/* Checks what only root may ask: a priority above 0, a lease for another user (which it then
 * resolves). Returns 0, or nonzero after sending the error reply. */
static int authorise(gs__daemon_t *d, gs__conn_t *conn, gs_lease_request_t *req)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    char why[256];
    if (req->priority > 0 && cred->uid != 0) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_PERMISSION_DENIED,
                                          "only root may ask for a priority above 0"));
        return -1;
    }
    if (req->owner.set && !gs__api_admin(d, cred)) {
        gs__user_t *user = gs__conn_user(conn);
        if (gs__users_warn_due(user, GS__WARN_DENIED, gs__now_ms()))
            gs_warn("user %s (pid %d) asked for a lease on behalf of another user: refused%s",
                    cred->user, (int)cred->pid, gs__users_suppressed(user, GS__WARN_DENIED));
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_PERMISSION_DENIED,
                                          "only root or lease_admin_group may ask for a lease on "
                                          "behalf of another user (\"uid\", \"gid\", \"user\")"));
        return -1;
    }
    if (req->owner.set && resolve_owner(&req->owner, why, sizeof(why)) != 0) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_BAD_REQUEST, why));
        return -1;
    }
    return 0;
}

static void handle_acquire(gs__daemon_t *d, gs__conn_t *conn, gs_lease_request_t *req)
{
    gs__cred_t owner;
    char why[256];
    if (authorise(d, conn, req) != 0)
        return;
    lease_cred(conn, req, &owner);
    const gs__cred_t *cred = &owner;
    if (req->capability[0] != '\0') {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_BAD_REQUEST,
                                          "\"capability\" is gpushared's to choose"));
        return;
    }
    if (req->key[0] != '\0' && gs__api_keyed_acquire(d, conn, req, cred->uid) != 0)
        return;
    if (find_waiter(d, conn) != NULL) {
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_BAD_REQUEST,
                                          "this connection already waits for a lease"));
        return;
    }
    /* A user (root excepted) holds at most max_leases_per_user leases: each maps a region (a
     * memfd of 384 KiB) in the daemon. */
    const gs__user_t *holder = gs__users_get(&d->users, cred->uid);
    if (cred->uid != 0 && holder != NULL && holder->leases >= d->cfg.max_leases_per_user) {
        snprintf(why, sizeof(why),
                 "user %s already holds %u leases, the most one user may hold "
                 "(max_leases_per_user)",
                 cred->user, holder->leases);
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_TOO_MANY, why));
        return;
    }
    const gs__user_t *caller = gs__conn_user(conn);
    if (req->wait && gs__conn_cred(conn)->uid != 0 &&
        caller->queued >= d->cfg.max_queued_per_user) {
        snprintf(why, sizeof(why),
                 "user %s already has %u requests waiting, the most one user may have "
                 "(max_queued_per_user)",
                 gs__conn_cred(conn)->user, caller->queued);
        gs__conn_send(conn, gs__api_error("acquire", GS_WIRE_TOO_MANY, why));
        return;
    }
    int possible = gs__place_possible(d->gpus, d->n_gpus, req, why, sizeof(why));
    if (possible != 0) {
        d->counters.rejected_never++;
        gs__user_t *user = gs__conn_user(conn);
        if (gs__users_warn_due(user, GS__WARN_REFUSED, gs__now_ms()))
            gs_info("user %s (pid %d): refused: %s%s", cred->user, (int)cred->pid, why,
                    gs__users_suppressed(user, GS__WARN_REFUSED));
        gs_wire_error_t code = possible == GS_EAGAIN  ? GS_WIRE_UNAVAILABLE
                               : possible == GS_EPERM ? GS_WIRE_NEEDS_ADMIN
                                                      : GS_WIRE_NEVER_FITS;
        gs__conn_send(conn, gs__api_error("acquire", code, why));
        return;
    }
    admit(d, conn, req);
    if (!req->wait)
        d->need_schedule = 1; /* a refused request held GPUs during the pass */
}

gs__lease_t *gs__api_lease_for(gs__daemon_t *d, gs__conn_t *conn, const char *op, uint64_t id)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    gs__lease_t *lease = gs__lease_find(d, id);
    char msg[128];
    if (lease == NULL) {
        snprintf(msg, sizeof(msg), "no lease %llu", (unsigned long long)id);
        gs__conn_send(conn, gs__api_error(op, GS_WIRE_NOT_FOUND, msg));
        return NULL;
    }
    if (gs__conn_lease_only(conn) == id) {
        /* Through the lease's own socket: the capability is the connection, whoever calls. */
        gs_info("lease %llu: %s by pid %d (uid %u) through its socket", (unsigned long long)id, op,
                (int)cred->pid, (unsigned)cred->uid);
        return lease;
    }
    if (cred->uid != 0 && cred->uid != lease->rec.uid) {
        snprintf(msg, sizeof(msg), "lease %llu belongs to another user", (unsigned long long)id);
        gs__user_t *user = gs__conn_user(conn);
        if (gs__users_warn_due(user, GS__WARN_DENIED, gs__now_ms()))
            gs_warn("user %s (pid %d) tried to %s lease %llu of user %s%s", cred->user,
                    (int)cred->pid, op, (unsigned long long)id, lease->rec.user,
                    gs__users_suppressed(user, GS__WARN_DENIED));
        gs__conn_send(conn, gs__api_error(op, GS_WIRE_PERMISSION_DENIED, msg));
        return NULL;
    }
    return lease;
}

/* A lease whose ledger row could not be read whole: root decides, and its release ends it at
 * once (nothing is known of its processes but what the row said). */
static void release_damaged(gs__daemon_t *d, gs__conn_t *conn, gs__lease_t *lease)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    char msg[256];
    uint64_t id = lease->rec.id;
    if (cred->uid != 0) {
        snprintf(msg, sizeof(msg),
                 "lease %llu's ledger row is damaged (%.120s): only root may release it",
                 (unsigned long long)id, lease->rec.damaged);
        gs__conn_send(conn, gs__api_error("release", GS_WIRE_PERMISSION_DENIED, msg));
        return;
    }
    gs_info("lease %llu (damaged row) released by %s", (unsigned long long)id, cred->user);
    int ended = gs__lease_end(d, lease, "its damaged row released by root") == 0;
    json_t *reply = ok_reply("release");
    json_object_set_new(reply, "lease", json_integer((json_int_t)id));
    json_object_set_new(reply, "state", json_string(ended ? "ended" : "ending"));
    gs__conn_send(conn, reply);
}

static void handle_release(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    if (req->force && cred->uid != 0) {
        gs__conn_send(conn, gs__api_error("release", GS_WIRE_PERMISSION_DENIED,
                                          "only root may release a lease by force"));
        return;
    }
    gs__lease_t *lease = NULL;
    if (req->key[0] != '\0' && (lease = gs__lease_find_key(d, req->key)) == NULL &&
        !gs__api_admin(d, cred)) {
        char why[GS_LEASE_KEY_MAX + 64];
        snprintf(why, sizeof(why), "no lease of yours has the key %s", req->key);
        gs__conn_send(conn, gs__api_error("release", GS_WIRE_NOT_FOUND, why));
        return;
    }
    if (req->key[0] != '\0' && lease == NULL) {
        json_t *none = ok_reply("release"); /* released already: unprepare is repeated */
        json_object_set_new(none, "key", json_string(req->key));
        json_object_set_new(none, "state", json_string("none"));
        gs__conn_send(conn, none);
        return;
    }
    uint64_t id = req->key[0] != '\0' ? lease->rec.id : req->lease_id;
    if ((lease = gs__api_lease_for(d, conn, "release", id)) == NULL)
        return;
    if (lease->rec.damaged[0] != '\0') {
        release_damaged(d, conn, lease);
        return;
    }
    int ended;
    if (req->job_end.known)
        lease->job_end = req->job_end;
    if (req->force)
        ended = gs__lease_force(d, lease, cred);
    else if (lease->conn == conn || gs__lease_is_holder(lease, cred))
        ended = gs__lease_let_go(d, lease, lease->expired ? "time limit" : "released");
    else
        ended = gs__lease_revoke(d, lease, cred);
    json_t *reply = ok_reply("release");
    json_object_set_new(reply, "lease", json_integer((json_int_t)id));
    json_object_set_new(reply, "state", json_string(ended ? "ended" : "ending"));
    if (!ended)
        json_object_set_new(reply, "kill_grace_ms", json_integer(d->cfg.kill_grace_ms));
    gs__conn_send(conn, reply);
}

/* A process of the lease asks for its region (gs_region_join): the sealed memfd travels with
 * the reply. Only the lease's user (or root) gets it, and only while the lease is active. */
static void handle_join(gs__daemon_t *d, gs__conn_t *conn, uint64_t id)
{
    gs__lease_t *lease = gs__api_lease_for(d, conn, "join", id);
    if (lease == NULL)
        return;
    char msg[160];
    if (lease->rec.state != GS__LEASE_ACTIVE || lease->kill_at_ms != 0 || lease->expired ||
        lease->region == NULL || lease->rec.damaged[0] != '\0') {
        snprintf(msg, sizeof(msg), "lease %llu %s: no process may join it", (unsigned long long)id,
                 lease->region == NULL ? "has no region" : "is ending");
        gs__conn_send(conn, gs__api_error("join", GS_WIRE_ENDED, msg));
        return;
    }
    json_t *reply = ok_reply("join");
    json_object_set_new(reply, "lease", json_integer((json_int_t)id));
    gs__lease_add_member(lease, gs__conn_cred(conn));
    int result = gs__conn_send_fd(conn, reply, gs_region_fd(lease->region));
    if (result != 0) {
        snprintf(msg, sizeof(msg), "cannot pass the region of lease %llu: %s",
                 (unsigned long long)id, gs_strerror(result));
        gs__conn_send(conn, gs__api_error("join", GS_WIRE_INTERNAL, msg));
    }
}

/* The lease's part on the GPU with UUID uuid (its own, or its MIG instance's), or -1. */
static int part_on(const gs__daemon_t *d, const gs__lease_t *lease, const char *uuid)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        if (strcmp(d->gpus[part->gpu].uuid, uuid) == 0 || strcmp(part->instance, uuid) == 0)
            return (int)i;
    }
    return -1;
}

/* A process of the lease asks to take part in the compute scheduler of one of its GPUs
 * (gs_smember_join): where the GPU's mode has the shim schedule launches, the reply carries the
 * lease's share and the process's own channel; elsewhere it says that launches are not
 * scheduled there. Who may ask is who may join the lease's region. */
static void handle_compute_join(gs__daemon_t *d, gs__conn_t *conn, const gs_request_t *req)
{
    gs__lease_t *lease = gs__api_lease_for(d, conn, "compute_join", req->lease_id);
    if (lease == NULL)
        return;
    char msg[256];
    int part = part_on(d, lease, req->gpu_uuid);
    if (lease->rec.state != GS__LEASE_ACTIVE || lease->kill_at_ms != 0 || lease->expired ||
        lease->rec.damaged[0] != '\0') {
        snprintf(msg, sizeof(msg), "lease %llu is ending: no process may join it",
                 (unsigned long long)lease->rec.id);
        gs__conn_send(conn, gs__api_error("compute_join", GS_WIRE_ENDED, msg));
        return;
    }
    if (part < 0) {
        snprintf(msg, sizeof(msg), "GPU %s is not one of lease %llu's", req->gpu_uuid,
                 (unsigned long long)lease->rec.id);
        gs__conn_send(conn, gs__api_error("compute_join", GS_WIRE_BAD_REQUEST, msg));
        return;
    }
    json_t *reply = ok_reply("compute_join");
    json_object_set_new(reply, "lease", json_integer((json_int_t)lease->rec.id));
    gs__lease_add_member(lease, gs__conn_cred(conn));
    if (!gs__lease_shim_compute(d, lease)) {
        json_object_set_new(reply, "gate", json_false());
        gs__conn_send(conn, reply);
        return;
    }
    int fd = -1;
    uint32_t guarantee = 0, cap = 0;
    int result = gs__compute_sched_add(d, lease, (unsigned)part, req->cap_pct, &fd, &guarantee,
                                       &cap, msg, sizeof(msg));
    if (result != 0) {
        json_decref(reply);
        gs__conn_send(conn, gs__api_error("compute_join",
                                          result == GS_ELIMIT ? GS_WIRE_TOO_MANY : GS_WIRE_INTERNAL,
                                          msg));
        return;
    }
    json_object_set_new(reply, "gate", json_true());
    json_object_set_new(reply, "guarantee", json_integer(guarantee));
    json_object_set_new(reply, "cap", json_integer(cap));
    result = gs__conn_send_fd(conn, reply, fd);
    close(fd);
    if (result != 0) {
        snprintf(msg, sizeof(msg), "cannot pass the channel of lease %llu: %s",
                 (unsigned long long)lease->rec.id, gs_strerror(result));
        gs__conn_send(conn, gs__api_error("compute_join", GS_WIRE_INTERNAL, msg));
    }
}

static void handle_hello(gs__daemon_t *d, gs__conn_t *conn)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    json_t *reply = ok_reply("hello");
    json_object_set_new(reply, "version", json_integer(GS_PROTO_VERSION));
    json_object_set_new(reply, "server", json_string("gpushared " GS_VERSION));
    json_object_set_new(reply, "uid", json_integer(cred->uid));
    json_object_set_new(reply, "user", json_string(cred->user));
    json_object_set_new(reply, "gpus", json_integer(d->n_gpus));
    json_object_set_new(reply, "simulated", json_boolean(gs__inventory_simulated(d->inv)));
    gs__conn_send(conn, reply);
}

static void handle_list(gs__daemon_t *d, gs__conn_t *conn)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    json_t *leases = json_array();
    uint64_t only = gs__conn_lease_only(conn);
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (only == 0 && (cred->uid == 0 || cred->uid == lease->rec.uid))
            json_array_append_new(leases, gs__view_lease(d, lease));
        else if (only == lease->rec.id)
            json_array_append_new(leases, gs__view_lease_inside(d, lease));
    }
    json_t *reply = ok_reply("list");
    json_object_set_new(reply, "leases", leases);
    /* On a lease's own socket the caller is its capability, not its uid: no one's requests. */
    json_object_set_new(reply, "pending", only == 0 ? gs__view_pending(d, cred) : json_array());
    gs__conn_send(conn, reply);
}

/* history: root sees everyone's (or one user's), others only their own. */
static void handle_history(gs__daemon_t *d, gs__conn_t *conn, const gs_history_query_t *q)
{
    const gs__cred_t *cred = gs__conn_cred(conn);
    if (cred->uid != 0 && q->user[0] != '\0' && strcmp(q->user, cred->user) != 0) {
        gs__conn_send(conn, gs__api_error("history", GS_WIRE_PERMISSION_DENIED,
                                          "only root may see the history of other users"));
        return;
    }
    json_t *leases = NULL;
    int64_t uid = cred->uid == 0 ? -1 : (int64_t)cred->uid;
    const char *user = cred->uid == 0 && q->user[0] != '\0' ? q->user : NULL;
    gs_history_query_t next;
    int more = 0;
    if (gs__ledger_history(d->ledger, q, uid, user, &leases, &next, &more) != 0) {
        gs__conn_send(conn, gs__api_error("history", GS_WIRE_INTERNAL, "cannot read the history"));
        return;
    }
    json_t *reply = ok_reply("history");
    json_object_set_new(reply, "leases", leases);
    /* A page: the rest is asked for with "before" (docs/api.md). */
    if (more)
        json_object_set_new(reply, "next",
                            json_pack("{s:[I, I], s:I}", "before", (json_int_t)next.before_ms,
                                      (json_int_t)next.before_id, "limit", (json_int_t)next.limit));
    gs__conn_send(conn, reply);
}

static void handle_status(gs__daemon_t *d, gs__conn_t *conn, int processes)
{
    json_t *reply = gs__view_status(d, gs__conn_cred(conn), processes);
    json_object_set_new(reply, "ok", json_true());
    json_object_set_new(reply, "op", json_string("status"));
    gs__conn_send(conn, reply);
}

/* A history request within its user's share of the daemon's time (root: always), charged with
 * what it cost; else the ms it must wait. */
static int64_t history_turn(gs__daemon_t *d, gs__conn_t *conn, const gs_history_query_t *q)
{
    gs__user_t *user = gs__conn_user(conn);
    int64_t wait = gs__conn_cred(conn)->uid != 0 ? gs__users_history_wait(user, gs__now_ms()) : 0;
    if (wait > 0)
        return wait;
    int64_t t0 = gs__now_us();
    handle_history(d, conn, q);
    gs__users_history_spent(user, gs__now_us() - t0);
    return 0;
}

int64_t gs__api_request(gs__daemon_t *d, gs__conn_t *conn, const char *line, size_t len)
{
    gs_request_t req;
    char err[GS_CLIENT_ERR_MAX];
    int result = gs_proto_parse_request(line, len, &req, err, sizeof(err));
    if (result != 0) {
        d->counters.bad_requests++;
        gs_debug("bad request from pid %d: %s", (int)gs__conn_cred(conn)->pid, err);
        gs__conn_send(conn,
                      gs__api_error(req.op != 0 ? gs_op_name(req.op) : NULL,
                                    result == GS_EFORMAT ? GS_WIRE_BAD_JSON : GS_WIRE_BAD_REQUEST,
                                    err));
        return 0;
    }
    if (gs__lease_socket_refuse(d, conn, &req) != 0 || gs__api_lease_only(conn, &req) != 0)
        return 0;
    switch (req.op) {
    case GS_OP_HELLO:
        handle_hello(d, conn);
        break;
    case GS_OP_ATTACH:
        gs__api_attach_cgroup(d, conn, &req);
        break;
    case GS_OP_ACQUIRE:
        handle_acquire(d, conn, &req.lease);
        break;
    case GS_OP_RELEASE:
        handle_release(d, conn, &req);
        break;
    case GS_OP_JOIN:
        handle_join(d, conn, req.lease_id);
        break;
    case GS_OP_COMPUTE_JOIN:
        handle_compute_join(d, conn, &req);
        break;
    case GS_OP_LIST:
        handle_list(d, conn);
        break;
    case GS_OP_STATUS:
        handle_status(d, conn, req.processes);
        break;
    case GS_OP_HISTORY:
        return history_turn(d, conn, &req.history);
    case GS_OP_SUSPEND:
        gs__api_suspend(d, conn, req.lease_id);
        break;
    case GS_OP_RESUME:
        gs__api_resume(d, conn, req.lease_id);
        break;
    }
    return 0;
}

void gs__api_conn_closed(gs__daemon_t *d, gs__conn_t *conn)
{
    gs__api_ckpt_conn_closed(d, conn);
    gs__waiter_t *w = find_waiter(d, conn);
    if (w != NULL) {
        d->need_schedule = 1; /* what it held may now go to others */
        unqueue(d, w);
        gs_info("user %s (pid %d) gave up waiting", gs__conn_cred(conn)->user,
                (int)gs__conn_cred(conn)->pid);
        free(w);
    }
    gs__lease_t *next;
    for (gs__lease_t *lease = gs__conn_leases(conn) > 0 ? d->leases : NULL; lease != NULL;
         lease = next) {
        next = lease->next;
        if (lease->conn == conn)
            gs__lease_let_go(d, lease, "its client disconnected");
    }
}

void gs__api_schedule(gs__daemon_t *d)
{
    gs__api_resume_waiting(d);
    if (d->queue.head != NULL)
        gs__queue_pass(d, gs__now_ms(), grant_waiter);
}

void gs__api_expire(gs__daemon_t *d, int64_t now_ms)
{
    gs__waiter_t *w;
    while ((w = gs__queue_first_deadline(&d->queue)) != NULL && now_ms >= w->deadline_ms) {
        d->need_schedule = 1; /* what it held may now go to others */
        char msg[512], reason[448];
        gs__reason_wait(d, w, reason, sizeof(reason));
        unqueue(d, w);
        d->counters.timeouts++;
        snprintf(msg, sizeof(msg), "no room within %.1f s (--timeout): gave up (%s)",
                 w->req.timeout_ms / 1000.0, reason);
        gs__conn_send(w->owner, gs__api_error("acquire", GS_WIRE_TIMEOUT, msg));
        gs_info("user %s (pid %d): %s", gs__conn_cred(w->owner)->user,
                (int)gs__conn_cred(w->owner)->pid, msg);
        free(w);
    }
}

void gs__api_shutdown(gs__daemon_t *d)
{
    while (d->queue.head != NULL) {
        gs__waiter_t *w = d->queue.head;
        gs__queue_remove(&d->queue, w);
        free(w);
    }
}
