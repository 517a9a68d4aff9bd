/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API for gpushared (issue 40): suspending a lease's CUDA processes to host
 * memory and resuming them (cuCheckpointProcessLock, ...Checkpoint, ...Restore, ...Unlock of
 * cuda.h, driver 570 and later; gpusim models them). The daemon loads libcuda.so.1 (beside the
 * configured nvml_library when that is a path, else the loader's) and calls cuInit at the first
 * job; it never creates a context.
 *
 * Threads: the calls block (a lock waits up to GS__CKPT_LOCK_MS per process for running
 * kernels, a checkpoint copies the process's GPU memory), so they run on one worker thread of
 * their own, never on the event loop. The loop hands it a job (gs__ckpt_submit) and learns that
 * jobs are done from a descriptor it watches (gs__ckpt_fd), then takes them back
 * (gs__ckpt_done). The worker touches nothing of the daemon: only the job it runs (its op,
 * procs, result and err) and its own state (d->cuda, the API and its queues, behind its mutex).
 * Jobs run one at a time, in the order submitted. d->cuda is owned here (gs__ckpt_start,
 * gs__ckpt_close). */
#ifndef GS_DAEMON_GPU_CHECKPOINT_H
#define GS_DAEMON_GPU_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* How long a lock waits for a process's running kernels. */
#define GS__CKPT_LOCK_MS 2000

typedef enum gs__ckpt_op { GS__CKPT_SUSPEND = 1, GS__CKPT_RESUME = 2 } gs__ckpt_op_t;

/* One suspend or resume of a lease's processes, all or none. A suspend locks and checkpoints
 * every CUDA process of procs (the others are dropped from it; when one fails, those done are
 * restored and unlocked again): result is the number suspended (0: none is a CUDA process), or
 * GS_EAGAIN (a kernel ran past the lock timeout), GS_ENOTSUP (no checkpoint API) or GS_EIO. A
 * resume restores and unlocks every process of procs (when one fails, those restored are
 * checkpointed again): result is 0, GS_EAGAIN (it does not fit on the GPU) or GS_EIO. A failure
 * has one line in err. Owned by the worker from gs__ckpt_submit until
 * gs__ckpt_done hands it back; meanwhile the loop may read every field but procs, result and
 * err, and write only requester and wanted (the worker never reads those). */
typedef struct gs__ckpt_job {
    struct gs__ckpt_job *next;    /* the worker's queues (under its mutex) */
    struct gs__ckpt_job *pending; /* the loop's list of jobs not handed back (gs__ckpt_pending) */
    gs__ckpt_op_t op;
    uint64_t lease;        /* the lease it is for (found again by id when done), 0: none */
    void *requester;       /* the loop's: whom to answer (serve's connection), NULL: nobody */
    int wanted;            /* the loop's: a resume that waited for room (gs__api_resume_waiting) */
    gs__proc_refs_t procs; /* the processes (the job's own); a suspend keeps the CUDA ones */
    int result;            /* gs__ckpt_suspend's or gs__ckpt_resume's, set by the worker */
    char err[256];
} gs__ckpt_job_t;

/* Starts the worker (d->cuda) before the loop runs. Returns 0 or -errno. */
int gs__ckpt_start(gs__daemon_t *d);

/* The descriptor the loop watches (readable when a job is done), -1 before gs__ckpt_start. */
int gs__ckpt_fd(const gs__daemon_t *d);

/* Queues job (taken: the worker owns it until gs__ckpt_done returns it). Returns 0, or
 * GS_ENOTSUP when no worker runs (the job is not taken). */
int gs__ckpt_submit(gs__daemon_t *d, gs__ckpt_job_t *job);

/* Takes back the jobs done since the last call (a list through next; the caller owns them and
 * frees them with gs__ckpt_free), NULL when none. */
gs__ckpt_job_t *gs__ckpt_done(gs__daemon_t *d);

/* The jobs submitted and not handed back yet (a list through pending), for the loop to look at:
 * which lease is busy, whom a job answers. */
gs__ckpt_job_t *gs__ckpt_pending(const gs__daemon_t *d);

/* Frees a job handed back, with its procs. */
void gs__ckpt_free(gs__ckpt_job_t *job);

/* Stops the worker (daemon shutdown): waits for the job it runs, drops those it has not begun,
 * and undoes a suspend done that the loop never applied (its processes restored: nothing stays
 * checkpointed that the ledger does not call suspended); then unloads the API. */
void gs__ckpt_close(gs__daemon_t *d);

#endif
