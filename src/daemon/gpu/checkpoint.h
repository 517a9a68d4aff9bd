/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API for gpushared (issue 40): suspending a lease's CUDA processes to host
 * memory and resuming them (cuCheckpointProcessLock, ...Checkpoint, ...Restore, ...Unlock of
 * cuda.h, driver 570 and later; gpusim models them). The daemon loads libcuda.so.1 (beside the
 * configured nvml_library when that is a path, else the loader's) and calls cuInit at the first
 * suspend; it never creates a context. The event loop's; each call may block it for at most the
 * lock timeout (GS__CKPT_LOCK_MS) per process. d->cuda is owned here (gs__ckpt_close). */
#ifndef GS_DAEMON_GPU_CHECKPOINT_H
#define GS_DAEMON_GPU_CHECKPOINT_H

#include <stddef.h>

#include "core/core.h"

/* How long a lock waits for a process's running kernels. */
#define GS__CKPT_LOCK_MS 2000

/* Locks and checkpoints every CUDA process of procs (the others are dropped from it), all or
 * none: when one fails, those done are restored and unlocked again. Returns the number
 * suspended (0: none is a CUDA process), or GS_EAGAIN (a kernel ran past the lock timeout),
 * GS_ENOTSUP (no checkpoint API) or GS_EIO, with one line in err. */
int gs__ckpt_suspend(gs__daemon_t *d, gs__proc_refs_t *procs, char *err, size_t errlen);

/* Restores and unlocks every process of procs (checkpointed by gs__ckpt_suspend), all or none:
 * when one fails, those restored are checkpointed again. Returns 0, GS_EAGAIN (it does not fit
 * on the GPU) or GS_EIO with one line in err. */
int gs__ckpt_resume(gs__daemon_t *d, const gs__proc_refs_t *procs, char *err, size_t errlen);

/* Unloads the API (daemon shutdown). */
void gs__ckpt_close(gs__daemon_t *d);

#endif
