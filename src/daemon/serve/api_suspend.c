/* SPDX-License-Identifier: Apache-2.0 */
/* suspend and resume (issue 40): the lease's user or root suspends a lease, whose CUDA processes
 * are checkpointed to host memory (gpu/checkpoint.h) and whose capacity goes back to the pool
 * (core/suspend.c), then resumes it when its capacity fits again: at once, or by itself at the
 * first schedule that finds room (a resume that waits). Runs on the event loop (a suspend may
 * block it for the lock timeout of each process). */
#include "api.h"

#include "gpu/gpu.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>

static json_t *reply_for(const char *op, const gs__lease_t *lease, unsigned processes)
{
    return json_pack("{s:b, s:s, s:I, s:s, s:i}", "ok", 1, "op", op, "lease",
                     (json_int_t)lease->rec.id, "state",
                     lease->rec.suspended ? "suspended" : "active", "processes", (int)processes);
}

/* The lease, if it may be suspended (want 0) or resumed (want 1); else replies why. */
static gs__lease_t *lease_in(gs__daemon_t *d, gs__conn_t *conn, const char *op, uint64_t id,
                             int want)
{
    gs__lease_t *lease = gs__api_lease_for(d, conn, op, id);
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

void gs__api_suspend(gs__daemon_t *d, gs__conn_t *conn, uint64_t id)
{
    gs__lease_t *lease = lease_in(d, conn, "suspend", id, 0);
    char err[256];
    if (lease == NULL)
        return;
    gs__proc_refs_t procs = {0};
    int result = gs__lease_suspend_candidates(lease, &procs);
    if (result >= 0)
        result = gs__ckpt_suspend(d, &procs, err, sizeof(err));
    else
        snprintf(err, sizeof(err), "its processes could not be listed: %s", gs_strerror(result));
    if (result == 0)
        snprintf(err, sizeof(err), "lease %llu has no CUDA process to suspend",
                 (unsigned long long)id);
    if (result <= 0) {
        gs__lease_procs_clear(&procs);
        gs__conn_send(
            conn,
            gs__api_error("suspend", result == 0 ? GS_WIRE_BAD_REQUEST : wire_code(result), err));
        return;
    }
    gs__lease_procs_clear(&lease->sleepers);
    lease->sleepers = procs;
    gs__lease_mark_suspended(d, lease);
    gs_info("lease %llu (user %s) suspended by %s: %u processes checkpointed, its capacity back",
            (unsigned long long)id, lease->rec.user, gs__conn_cred(conn)->user, procs.n);
    gs__conn_send(conn, reply_for("suspend", lease, procs.n));
}

/* Takes the lease's capacity and restores its processes when it fits now. Returns 0, GS_EAGAIN
 * (it does not fit: nothing changed) or another error (it stays suspended), with err. */
static int try_resume(gs__daemon_t *d, gs__lease_t *lease, char *err, size_t errlen)
{
    int result = gs__lease_fits_back(d, lease, err, errlen);
    if (result != 0)
        return result;
    gs__lease_mark_resumed(d, lease);
    result = gs__ckpt_resume(d, &lease->sleepers, err, errlen);
    if (result != 0) {
        gs__lease_mark_suspended(d, lease);
        return result;
    }
    gs_info("lease %llu (user %s) resumed: %u processes restored",
            (unsigned long long)lease->rec.id, lease->rec.user, lease->sleepers.n);
    return 0;
}

void gs__api_resume(gs__daemon_t *d, gs__conn_t *conn, uint64_t id)
{
    gs__lease_t *lease = lease_in(d, conn, "resume", id, 1);
    char err[256];
    if (lease == NULL)
        return;
    int result = try_resume(d, lease, err, sizeof(err));
    if (result != 0 && result != GS_EAGAIN) {
        gs__conn_send(conn, gs__api_error("resume", wire_code(result), err));
        return;
    }
    json_t *reply = reply_for("resume", lease, lease->sleepers.n);
    if (result == GS_EAGAIN) {
        lease->resume_wanted = 1; /* by itself once its capacity is free */
        gs_info("lease %llu: resume waits for room (%s)", (unsigned long long)id, err);
        json_object_set_new(reply, "resume", json_string("waiting"));
        json_object_set_new(reply, "reason", json_string(err));
    } else {
        gs__lease_procs_clear(&lease->sleepers);
    }
    gs__conn_send(conn, reply);
}

void gs__api_resume_waiting(gs__daemon_t *d)
{
    char err[256];
    for (gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (!lease->rec.suspended || !lease->resume_wanted || lease->rec.state == GS__LEASE_ENDING)
            continue;
        int result = try_resume(d, lease, err, sizeof(err));
        if (result == 0)
            gs__lease_procs_clear(&lease->sleepers);
        if (result != 0 && result != GS_EAGAIN)
            lease->resume_wanted = 0; /* said once; gpushare resume may try again */
        if (result != 0 && result != GS_EAGAIN)
            gs_warn("lease %llu: its waiting resume failed, it stays suspended: %s",
                    (unsigned long long)lease->rec.id, err);
    }
}
