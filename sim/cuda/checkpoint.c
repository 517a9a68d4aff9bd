/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API (cuda.h of CUDA 13, "CUDA Checkpointing"): cuCheckpointProcessGetState,
 * ...GetRestoreThreadId, ...Lock, ...Checkpoint, ...Restore, ...Unlock, called by one process on
 * another, named by its pid. The caller (which must have called cuInit) checks the arguments and
 * the state each operation needs (else CUDA_ERROR_ILLEGAL_STATE), posts the operation to the
 * target's node slot and waits until the target's checkpoint thread has done it
 * (checkpoint_target.c). A pid that is no live CUDA process of the node is CUDA_ERROR_INVALID_VALUE
 * (also when it dies meanwhile), as is a GPU pair that names an unknown GPU or one of another
 * model, or that leaves out a checkpointed GPU. These calls never block on the caller's own
 * checkpoint gate.
 * Faults: GPUSIM_CUDA_FAULTS names a file of lines "FUNCTION CODE" ('#' starts a comment), read
 * at each checkpoint or restore call; when it names cuCheckpointProcessCheckpoint or
 * cuCheckpointProcessRestore, that call fails with CODE (a CUresult) and leaves the target
 * CU_PROCESS_STATE_FAILED. NVIDIA's driver has no such hook (like GPUSIM_NVML_FAULTS, it lets the
 * error paths of the API's users be tested). Thread-safe. */
#include "cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 100 /* how often a waiting caller checks that its target still lives */

/* The CUresult GPUSIM_CUDA_FAULTS gives function, or 0. */
static int injected_fault(const char *function)
{
    const char *path = getenv("GPUSIM_CUDA_FAULTS");
    FILE *f = path != NULL && path[0] != '\0' ? fopen(path, "re") : NULL;
    if (f == NULL)
        return 0;
    char line[256], name[128];
    int code = 0, found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "#")] = '\0';
        found = sscanf(line, "%127s %d", name, &code) == 2 && strcmp(name, function) == 0;
    }
    fclose(f);
    return found ? code : 0;
}

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

/* An operation to post: what it needs and how it fills the slot (with the node lock held). */
typedef struct post {
    uint32_t op;
    CUprocessState needs;
    CUresult (*fill)(gsim_node_t *node, gsim_proc_t *target, const void *args);
    const void *args;
} post_t;

/* Checks the target's state and posts p. Sets *slot, *key and *request. Lock held. */
static CUresult post_locked(gsim_node_t *node, int pid, const post_t *p, int *slot, int32_t *key,
                            uint32_t *request)
{
    *slot = gsim_ckpt_find_locked(node, pid);
    if (*slot < 0)
        return CUDA_ERROR_INVALID_VALUE;
    gsim_proc_t *target = &node->procs[*slot];
    if (target->ckpt.restore_tid == 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (atomic_load(&target->ckpt.request) != atomic_load(&target->ckpt.done) ||
        target->ckpt.state != (uint32_t)p->needs)
        return CUDA_ERROR_ILLEGAL_STATE;
    CUresult result = p->fill != NULL ? p->fill(node, target, p->args) : CUDA_SUCCESS;
    if (result != CUDA_SUCCESS)
        return result;
    target->ckpt.op = p->op;
    *key = target->pid;
    *request = atomic_fetch_add(&target->ckpt.request, 1) + 1;
    return CUDA_SUCCESS;
}

/* Waits for the target to complete request; CUDA_ERROR_INVALID_VALUE when it is gone. */
static CUresult wait_done(gsim_node_t *node, int slot, int32_t key, uint32_t request)
{
    gsim_proc_t *target = &node->procs[slot];
    for (;;) {
        uint32_t done = atomic_load(&target->ckpt.done);
        if (done == request)
            return (CUresult)target->ckpt.result;
        gsim_ckpt_wait(&target->ckpt.done, done, POLL_MS);
        gsim_node_lock(node);
        gsim_node_reap_locked(node);
        int alive = target->pid == key;
        gsim_node_unlock(node);
        if (!alive)
            return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult run(int pid, const post_t *p)
{
    CUresult result = gsim_cu_init_state();
    if (result != CUDA_SUCCESS)
        return result;
    gsim_node_t *node = gsim_cu_node();
    int slot = -1;
    int32_t key = 0;
    uint32_t request = 0;
    gsim_node_lock(node);
    result = post_locked(node, pid, p, &slot, &key, &request);
    gsim_node_unlock(node);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_ckpt_wake(&node->procs[slot].ckpt.request);
    return wait_done(node, slot, key, request);
}

/* Reads a field of the slot of pid. */
static CUresult query(int pid, int *out, int tid)
{
    CUresult result = gsim_cu_init_state();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(out);
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    int slot = gsim_ckpt_find_locked(node, pid);
    if (slot < 0) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        const gsim_ckpt_t *c = &node->procs[slot].ckpt;
        *out = tid ? c->restore_tid : (int)c->state;
        result = c->restore_tid != 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    }
    gsim_node_unlock(node);
    return result;
}

GSIM_CU_API CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
    return query(pid, tid, 1);
}

GSIM_CU_API CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
    int value = 0;
    CUresult result = query(pid, state != NULL ? &value : NULL, 0);
    if (result == CUDA_SUCCESS)
        *state = (CUprocessState)value;
    return result;
}

static CUresult fill_lock(gsim_node_t *node, gsim_proc_t *target, const void *args)
{
    (void)node;
    const CUcheckpointLockArgs *a = args;
    target->ckpt.timeout_ms = a != NULL ? a->timeoutMs : 0;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
    if (args != NULL &&
        (args->reserved0 != 0 || !all_zero(args->reserved1, sizeof(args->reserved1))))
        return CUDA_ERROR_INVALID_VALUE;
    post_t p = {GSIM_CKPT_LOCK, CU_PROCESS_STATE_RUNNING, fill_lock, args};
    return run(pid, &p);
}

static CUresult fill_fault(gsim_node_t *node, gsim_proc_t *target, const void *args)
{
    (void)node;
    target->ckpt.fault = injected_fault(args);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
    if (args != NULL && !all_zero(args, sizeof(*args)))
        return CUDA_ERROR_INVALID_VALUE;
    post_t p = {GSIM_CKPT_CHECKPOINT, CU_PROCESS_STATE_LOCKED, fill_fault,
                "cuCheckpointProcessCheckpoint"};
    return run(pid, &p);
}

/* Returns the node GPU whose UUID is uuid, or -1. */
static int gpu_of_uuid(const gsim_node_t *node, const CUuuid *uuid)
{
    for (uint32_t d = 0; d < node->n_devices; d++) {
        CUuuid u;
        gsim_cu_uuid_bytes(node->dev[d].uuid, &u);
        if (memcmp(u.bytes, uuid->bytes, sizeof(u.bytes)) == 0)
            return (int)d;
    }
    return -1;
}

/* Applies one GPU pair to the target's remap table. */
static CUresult pair_locked(const gsim_node_t *node, gsim_proc_t *target,
                            const CUcheckpointGpuPair *pair, unsigned char *named)
{
    int from = gpu_of_uuid(node, &pair->oldUuid), to = gpu_of_uuid(node, &pair->newUuid);
    if (from < 0 || to < 0 || node->dev[from].model_index != node->dev[to].model_index)
        return CUDA_ERROR_INVALID_VALUE;
    if (from != to && target->ckpt.saved[from] != 0 && target->ckpt.saved_gi[from] >= 0)
        return CUDA_ERROR_NOT_SUPPORTED; /* a MIG instance restores where it was */
    target->ckpt.remap[from] = to;
    named[from] = 1;
    return CUDA_SUCCESS;
}

static CUresult fill_restore(gsim_node_t *node, gsim_proc_t *target, const void *args)
{
    const CUcheckpointRestoreArgs *a = args;
    unsigned char named[GSIM_MAX_DEVICES] = {0};
    for (int d = 0; d < GSIM_MAX_DEVICES; d++)
        target->ckpt.remap[d] = d;
    unsigned count = a != NULL ? a->gpuPairsCount : 0;
    for (unsigned i = 0; i < count; i++) {
        CUresult result = pair_locked(node, target, &a->gpuPairs[i], named);
        if (result != CUDA_SUCCESS)
            return result;
    }
    for (uint32_t d = 0; count > 0 && d < node->n_devices; d++)
        if (target->ckpt.saved[d] != 0 && !named[d])
            return CUDA_ERROR_INVALID_VALUE; /* "must contain every checkpointed GPU" */
    return fill_fault(node, target, "cuCheckpointProcessRestore");
}

GSIM_CU_API CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
    if (args != NULL &&
        (!all_zero(args->reserved, sizeof(args->reserved)) || args->reserved1 != 0 ||
         (args->gpuPairsCount > 0 && args->gpuPairs == NULL) ||
         args->gpuPairsCount > GSIM_MAX_DEVICES))
        return CUDA_ERROR_INVALID_VALUE;
    post_t p = {GSIM_CKPT_RESTORE, CU_PROCESS_STATE_CHECKPOINTED, fill_restore, args};
    return run(pid, &p);
}

GSIM_CU_API CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
    if (args != NULL && !all_zero(args, sizeof(*args)))
        return CUDA_ERROR_INVALID_VALUE;
    post_t p = {GSIM_CKPT_UNLOCK, CU_PROCESS_STATE_LOCKED, NULL, NULL};
    return run(pid, &p);
}
