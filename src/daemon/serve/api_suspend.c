/* SPDX-License-Identifier: Apache-2.0 */
/* suspend and resume (issue 40): the lease's user or root suspends a lease, whose CUDA processes
 * are checkpointed to host memory (gpu/checkpoint.h) and whose capacity goes back to the pool
 * (core/suspend.c), then resumes it when its capacity fits again: at once, or by itself at the
 * first schedule that finds room (a resume that waits).
 *
 * The checkpoint calls run on the checkpoint worker, never on the event loop: a request submits
 * a job and its reply leaves when the job is done (gs__api_ckpt_done; the requester's further
 * requests wait unread meanwhile, so that replies stay in order; a requester gone by then is
 * answered by nobody, and the result applies all the same). Meanwhile the lease is busy: a
 * second suspend or resume of it is refused with one line. A release (or a disconnect, or a
 * time limit) meanwhile is not held up: the lease ends as it would; a suspend that then
 * completes is undone (its processes restored and unlocked, the lease never shows suspended),
 * a resume that fails leaves an ending lease's capacity in the pool. Runs on the event loop. */
#include "api.h"

#include "gpu/gpu.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>

static json_t *reply_for(const char *op, const gs__lease_t *lease, unsigned processes)
{
    return json_pack("{s:b, s:s, s:I, s:s, s:i}", "ok", 1, "op", op, "lease",
                     (json_int_t)lease->rec.id, "state",
                     lease->rec.suspended ? "suspended" : "active", "processes", (int)processes);
}

/* The job not done yet for lease id, NULL when none. */
static gs__ckpt_job_t *job_of(const gs__daemon_t *d, uint64_t id)
{
    for (gs__ckpt_job_t *job = gs__ckpt_pending(d); job != NULL; job = job->pending) {
        if (job->lease == id)
            return job;
    }
    return NULL;
}

/* The lease, if it may be suspended (want 0) or resumed (want 1); else replies why. */
static gs__lease_t *lease_in(gs__daemon_t *d, gs__conn_t *conn, const char *op, uint64_t id,
                             int want)
{
    gs__lease_t *lease = gs__api_lease_for(d, conn, op, id);
    const gs__ckpt_job_t *job = lease != NULL ? job_of(d, id) : NULL;
    char why[160];
    if (lease == NULL)
        return NULL;
    if (lease->rec.state == GS__LEASE_ENDING || lease->rec.damaged[0] != '\0') {
        snprintf(why, sizeof(why), "lease %llu %s", (unsigned long long)id,
                 lease->rec.damaged[0] != '\0'
                     ? "has a damaged ledger row: only root may release it"
                     : "is ending");
        gs__conn_send(conn, gs__api_error(op, GS_WIRE_ENDED, why));
        return NULL;
    }
    if (job != NULL) {
        snprintf(why, sizeof(why), "lease %llu is being %s now: try again when that is done",
                 (unsigned long long)id, job->op == GS__CKPT_SUSPEND ? "suspended" : "resumed");
        gs__conn_send(conn, gs__api_error(op, GS_WIRE_BAD_REQUEST, why));
        return NULL;
    }
    if (lease->rec.suspended != want) {
        snprintf(why, sizeof(why), "lease %llu is %s", (unsigned long long)id,
                 lease->rec.suspended ? "suspended already" : "not suspended");
        gs__conn_send(conn, gs__api_error(op, GS_WIRE_BAD_REQUEST, why));
        return NULL;
    }
    return lease;
}

static gs_wire_error_t wire_code(int result)
{
    return result == GS_EAGAIN ? GS_WIRE_NO_FIT : GS_WIRE_GPU_FAILED;
}

/* Hands a job for lease to the worker; procs is moved into it. Returns 0, or -1 after telling
 * conn (when given) why not. */
static int submit(gs__daemon_t *d, gs__conn_t *conn, gs__ckpt_op_t op, uint64_t lease,
                  gs__proc_refs_t *procs)
{
    gs__ckpt_job_t *job = calloc(1, sizeof(*job));
    if (job != NULL) {
        job->op = op;
        job->lease = lease;
        job->requester = conn;
        job->procs = *procs;
    }
    if (job == NULL || gs__ckpt_submit(d, job) != 0) {
        free(job);
        if (conn != NULL)
            gs__conn_send(conn, gs__api_error(op == GS__CKPT_SUSPEND ? "suspend" : "resume",
                                              GS_WIRE_INTERNAL,
                                              "gpushared's checkpoint worker is not running"));
        return -1;
    }
    *procs = (gs__proc_refs_t){0};
    if (conn != NULL)
        gs__conn_hold(conn, 1); /* its next requests wait for this one's answer */
    return 0;
}

void gs__api_suspend(gs__daemon_t *d, gs__conn_t *conn, uint64_t id)
{
    gs__lease_t *lease = lease_in(d, conn, "suspend", id, 0);
    char err[256];
    if (lease == NULL)
        return;
    gs__proc_refs_t procs = {0};
    int result = gs__lease_suspend_candidates(lease, &procs);
    if (result < 0)
        snprintf(err, sizeof(err), "its processes could not be listed: %s", gs_strerror(result));
    else if (result == 0)
        snprintf(err, sizeof(err), "lease %llu has no CUDA process to suspend",
                 (unsigned long long)id);
    if (result > 0 && submit(d, conn, GS__CKPT_SUSPEND, id, &procs) == 0)
        return; /* answered when done */
    gs__lease_procs_clear(&procs);
    if (result <= 0)
        gs__conn_send(
            conn,
            gs__api_error("suspend", result == 0 ? GS_WIRE_BAD_REQUEST : wire_code(result), err));
}

/* A suspend is done: the lease shows suspended, its capacity back in the pool; or, when it
 * ended meanwhile, its processes are restored again. */
static void suspend_done(gs__daemon_t *d, gs__lease_t *lease, gs__ckpt_job_t *job)
{
    gs__conn_t *conn = job->requester;
    char why[160];
    if (job->result > 0 && (lease == NULL || lease->rec.state == GS__LEASE_ENDING)) {
        snprintf(why, sizeof(why),
                 "lease %llu ended while it was being suspended: its %u processes are restored",
                 (unsigned long long)job->lease, job->procs.n);
        gs_info("%s", why);
        if (conn != NULL)
            gs__conn_send(conn, gs__api_error("suspend", GS_WIRE_ENDED, why));
        if (submit(d, NULL, GS__CKPT_RESUME, 0, &job->procs) != 0)
            gs_error("lease %llu: its processes stay checkpointed (no worker to restore them)",
                     (unsigned long long)job->lease);
        return;
    }
    if (job->result == 0)
        snprintf(job->err, sizeof(job->err), "lease %llu has no CUDA process to suspend",
                 (unsigned long long)job->lease);
    if (job->result <= 0 || lease == NULL) {
        if (conn != NULL)
            gs__conn_send(
                conn, gs__api_error("suspend",
                                    job->result == 0 ? GS_WIRE_BAD_REQUEST : wire_code(job->result),
                                    job->err));
        return;
    }
    gs__lease_procs_clear(&lease->sleepers);
    lease->sleepers = job->procs;
    job->procs = (gs__proc_refs_t){0};
    gs__lease_mark_suspended(d, lease);
    gs_info("lease %llu (user %s) suspended: %u processes checkpointed, its capacity back",
            (unsigned long long)lease->rec.id, lease->rec.user, lease->sleepers.n);
    if (conn != NULL)
        gs__conn_send(conn, reply_for("suspend", lease, lease->sleepers.n));
}

/* Takes the lease's capacity and hands the restore of its processes to the worker when it fits
 * now. Returns 0 (submitted), GS_EAGAIN (it does not fit: nothing changed, why in err) or
 * GS_EIO (no worker: told). */
static int start_resume(gs__daemon_t *d, gs__conn_t *conn, gs__lease_t *lease, int wanted,
                        char *err, size_t errlen)
{
    int result = gs__lease_fits_back(d, lease, err, errlen);
    if (result != 0)
        return result;
    gs__proc_refs_t procs = lease->sleepers;
    if (submit(d, conn, GS__CKPT_RESUME, lease->rec.id, &procs) != 0)
        return GS_EIO;
    job_of(d, lease->rec.id)->wanted = wanted;
    lease->sleepers = (gs__proc_refs_t){0}; /* the job's while it runs */
    gs__lease_mark_resumed(d, lease);
    return 0;
}

static void reply_waiting(gs__conn_t *conn, const gs__lease_t *lease, const char *why)
{
    json_t *reply = reply_for("resume", lease, lease->sleepers.n);
    json_object_set_new(reply, "resume", json_string("waiting"));
    json_object_set_new(reply, "reason", json_string(why));
    gs__conn_send(conn, reply);
}

void gs__api_resume(gs__daemon_t *d, gs__conn_t *conn, uint64_t id)
{
    gs__lease_t *lease = lease_in(d, conn, "resume", id, 1);
    char err[256];
    if (lease == NULL)
        return;
    if (start_resume(d, conn, lease, 0, err, sizeof(err)) != GS_EAGAIN)
        return;               /* answered when done (or told already) */
    lease->resume_wanted = 1; /* by itself once its capacity is free */
    gs_info("lease %llu: resume waits for room (%s)", (unsigned long long)id, err);
    reply_waiting(conn, lease, err);
}

/* A resume is done: the lease runs again; or it failed and stays suspended, its capacity back
 * in the pool (a restore that did not fit on the GPU waits for room as a waiting resume). */
static void resume_done(gs__daemon_t *d, gs__lease_t *lease, gs__ckpt_job_t *job)
{
    gs__conn_t *conn = job->requester;
    if (lease == NULL) {
        if (job->result != 0)
            gs_warn("%s (its lease %llu is gone)", job->err, (unsigned long long)job->lease);
        return;
    }
    if (job->result == 0) {
        gs_info("lease %llu (user %s) resumed: %u processes restored",
                (unsigned long long)lease->rec.id, lease->rec.user, job->procs.n);
        if (conn != NULL)
            gs__conn_send(conn, reply_for("resume", lease, job->procs.n));
        return;
    }
    gs__lease_procs_clear(&lease->sleepers);
    lease->sleepers = job->procs;
    job->procs = (gs__proc_refs_t){0};
    gs__lease_mark_suspended(d, lease);
    if (job->result == GS_EAGAIN && lease->rec.state != GS__LEASE_ENDING) {
        lease->resume_wanted = 1;
        if (conn != NULL)
            reply_waiting(conn, lease, job->err);
        return;
    }
    gs_warn("lease %llu: its %sresume failed, it stays suspended: %s",
            (unsigned long long)lease->rec.id, job->wanted ? "waiting " : "", job->err);
    if (conn != NULL)
        gs__conn_send(conn, gs__api_error("resume", wire_code(job->result), job->err));
}

void gs__api_ckpt_done(gs__daemon_t *d)
{
    gs__ckpt_job_t *next;
    for (gs__ckpt_job_t *job = gs__ckpt_done(d); job != NULL; job = next) {
        next = job->next;
        gs__lease_t *lease = job->lease != 0 ? gs__lease_find(d, job->lease) : NULL;
        if (job->lease == 0 && job->result != 0) /* the undo of a suspend of an ended lease */
            gs_warn("the processes of an ended lease could not be restored: %s", job->err);
        else if (job->lease != 0 && job->op == GS__CKPT_SUSPEND)
            suspend_done(d, lease, job);
        else if (job->lease != 0)
            resume_done(d, lease, job);
        if (job->requester != NULL)
            gs__conn_hold(job->requester, 0); /* answered: its next requests are served */
        gs__ckpt_free(job);
    }
}

void gs__api_ckpt_conn_closed(gs__daemon_t *d, const gs__conn_t *conn)
{
    for (gs__ckpt_job_t *job = gs__ckpt_pending(d); job != NULL; job = job->pending) {
        if (job->requester == conn)
            job->requester = NULL; /* the result still applies */
    }
}

int gs__api_ckpt_waits(const gs__daemon_t *d, const gs__conn_t *conn)
{
    for (const gs__ckpt_job_t *job = gs__ckpt_pending(d); job != NULL; job = job->pending) {
        if (job->requester == conn)
            return 1;
    }
    return 0;
}

void gs__api_resume_waiting(gs__daemon_t *d)
{
    char err[256];
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (!lease->rec.suspended || !lease->resume_wanted ||
            lease->rec.state == GS__LEASE_ENDING || job_of(d, lease->rec.id) != NULL)
            continue;
        if (start_resume(d, NULL, lease, 1, err, sizeof(err)) == GS_EIO)
            lease->resume_wanted = 0; /* said once; gpushare resume may try again */
    }
}
