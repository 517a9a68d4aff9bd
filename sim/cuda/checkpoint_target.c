/* SPDX-License-Identifier: Apache-2.0 */
/* The target process's side of CUDA checkpoints: the gate its CUDA calls pass, and its checkpoint
 * thread (the "restore thread" cuCheckpointProcessGetRestoreThreadId names), started at cuInit,
 * which serves the operations another process posts to this process's node slot (gsim_ckpt_t):
 *   lock        closes the gate (new CUDA calls block), then waits until the process's kernels
 *               are done, at most timeoutMs (else the gate opens again: CUDA_ERROR_NOT_READY);
 *   checkpoint  copies device data to host memory, releases the device copies and the process's
 *               whole device memory charge (contexts included) on every GPU;
 *   restore     charges it again, all or none (CUDA_ERROR_OUT_OF_MEMORY: stays checkpointed), on
 *               the same GPUs or those of the GPU pairs, whose CUDA ordinals then show the new GPU,
 *               and copies the data back to the same addresses;
 *   unlock      opens the gate.
 * An injected fault (gsim_ckpt_t.fault) makes checkpoint or restore fail with it and leaves the
 * process FAILED: nothing moves, and its CUDA calls return CUDA_ERROR_ILLEGAL_STATE.
 * Threading: the gate is process-wide (mutex and condition); the thread's work runs with the gate
 * closed, so no other thread of the process is inside a CUDA call started after the lock (a call
 * already running when the lock is taken finishes concurrently). */
#include "cuda_internal.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

enum { GATE_OPEN = 0, GATE_CLOSED, GATE_FAILED };

static struct {
    pthread_mutex_t mu;
    pthread_cond_t opened;
    _Atomic int gate;
} target = {.mu = PTHREAD_MUTEX_INITIALIZER, .opened = PTHREAD_COND_INITIALIZER};

static _Thread_local int on_checkpoint_thread;

CUresult gsim_cu_checkpoint_gate(void)
{
    if (atomic_load_explicit(&target.gate, memory_order_acquire) == GATE_OPEN ||
        on_checkpoint_thread)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&target.mu);
    while (atomic_load(&target.gate) == GATE_CLOSED)
        pthread_cond_wait(&target.opened, &target.mu);
    int gate = atomic_load(&target.gate);
    pthread_mutex_unlock(&target.mu);
    return gate == GATE_FAILED ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
}

static void set_gate(int gate)
{
    pthread_mutex_lock(&target.mu);
    atomic_store(&target.gate, gate);
    pthread_cond_broadcast(&target.opened);
    pthread_mutex_unlock(&target.mu);
}

static void set_state(gsim_proc_t *self, CUprocessState state)
{
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    self->ckpt.state = (uint32_t)state;
    gsim_node_unlock(node);
}

/* Nonzero while kernels of this process are queued or running on one of its devices. */
static int device_busy(void)
{
    gsim_node_t *node = gsim_cu_node();
    int64_t now = gsim_now_ns(), future = 0;
    gsim_node_lock(node);
    for (int ord = 0; ord < gsim_cu_device_count(); ord++) {
        gsim_timeline_t *tl = gsim_domain_timeline(node, gsim_cu_device(ord)->domain);
        if (tl != NULL)
            future += gsim_timeline_future_ns(tl, gsim_cu_pid(), now);
    }
    gsim_node_unlock(node);
    return future > 0;
}

static CUresult do_lock(gsim_proc_t *self)
{
    uint32_t timeout_ms = self->ckpt.timeout_ms;
    int64_t deadline = gsim_now_ns() + (int64_t)timeout_ms * 1000000;
    set_gate(GATE_CLOSED);
    while (device_busy()) {
        if (timeout_ms != 0 && gsim_now_ns() >= deadline) {
            set_gate(GATE_OPEN);
            return CUDA_ERROR_NOT_READY;
        }
        gsim_sleep_until(gsim_now_ns() + 1000000);
    }
    set_state(self, CU_PROCESS_STATE_LOCKED);
    return CUDA_SUCCESS;
}

static CUresult fail(gsim_proc_t *self)
{
    set_state(self, CU_PROCESS_STATE_FAILED);
    set_gate(GATE_FAILED);
    return (CUresult)self->ckpt.fault;
}

static CUresult do_checkpoint(gsim_proc_t *self)
{
    if (self->ckpt.fault != 0)
        return fail(self);
    uint64_t host_bytes = 0;
    if (gsim_cu_checkpoint_data_save(&host_bytes) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    gsim_ckpt_release_locked(node, self);
    self->ckpt.host_bytes = host_bytes;
    self->ckpt.state = CU_PROCESS_STATE_CHECKPOINTED;
    gsim_node_unlock(node);
    return CUDA_SUCCESS;
}

typedef struct remap {
    int ord;
    gsim_domain_t domain;
} remap_t;

static void remap_context(void *obj, void *arg)
{
    CUcontext ctx = obj;
    const remap_t *r = arg;
    if (ctx->ordinal == r->ord)
        ctx->domain = r->domain;
}

/* Points the ordinals (and their contexts) of every GPU that moved at its new GPU. Lock held. */
static void remap_devices_locked(const gsim_proc_t *self)
{
    for (int ord = 0; ord < gsim_cu_device_count(); ord++) {
        gsim_domain_t from = gsim_cu_device(ord)->domain;
        int to = self->ckpt.remap[from.dev];
        if (from.gi >= 0 || to == from.dev)
            continue;
        gsim_cu_device_remap_locked(ord, to);
        remap_t r = {.ord = ord, .domain = gsim_cu_device(ord)->domain};
        gsim_cu_obj_foreach(GSIM_CU_CTX, remap_context, &r);
    }
}

static CUresult do_restore(gsim_proc_t *self)
{
    if (self->ckpt.fault != 0)
        return fail(self);
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    int rc = gsim_ckpt_reclaim_locked(node, self);
    if (rc == 0)
        remap_devices_locked(self);
    gsim_node_unlock(node);
    if (rc != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gsim_cu_checkpoint_data_restore();
    gsim_node_lock(node);
    self->ckpt.host_bytes = 0;
    self->ckpt.state = CU_PROCESS_STATE_LOCKED;
    gsim_node_unlock(node);
    return CUDA_SUCCESS;
}

static CUresult do_unlock(gsim_proc_t *self)
{
    set_state(self, CU_PROCESS_STATE_RUNNING);
    set_gate(GATE_OPEN);
    return CUDA_SUCCESS;
}

/* The operations, by GSIM_CKPT_* (the requester checked the state each needs). */
static CUresult (*const operations[])(gsim_proc_t *) = {
    [GSIM_CKPT_LOCK] = do_lock,
    [GSIM_CKPT_CHECKPOINT] = do_checkpoint,
    [GSIM_CKPT_RESTORE] = do_restore,
    [GSIM_CKPT_UNLOCK] = do_unlock,
};

static void *serve(void *arg)
{
    gsim_proc_t *self = arg;
    on_checkpoint_thread = 1;
    for (;;) {
        uint32_t request = atomic_load(&self->ckpt.request);
        if (request == atomic_load(&self->ckpt.done)) {
            gsim_ckpt_wait(&self->ckpt.request, request, -1);
            continue;
        }
        uint32_t op = self->ckpt.op;
        CUresult result = CUDA_ERROR_INVALID_VALUE;
        if (op < sizeof(operations) / sizeof(operations[0]) && operations[op] != NULL)
            result = operations[op](self);
        self->ckpt.result = (int32_t)result;
        atomic_store(&self->ckpt.done, request);
        gsim_ckpt_wake(&self->ckpt.done);
    }
    return NULL;
}

/* Records the thread's id in the slot, where requesters find it. */
static void *thread_main(void *arg)
{
    gsim_proc_t *self = arg;
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    self->ckpt.restore_tid = (int32_t)gettid();
    gsim_node_unlock(node);
    return serve(self);
}

int gsim_cu_checkpoint_start(void)
{
    gsim_node_t *node = gsim_cu_node();
    gsim_node_lock(node);
    gsim_proc_t *self = gsim_node_self(node);
    if (self != NULL) {
        self->ckpt.state = CU_PROCESS_STATE_RUNNING;
        self->ckpt.done = self->ckpt.request;
    }
    gsim_node_unlock(node);
    if (self == NULL)
        return -1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all); /* signals stay with the application's threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, thread_main, self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
