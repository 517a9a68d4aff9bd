/* SPDX-License-Identifier: Apache-2.0 */
/* Draining a process's work on one device: the contexts the process holds there (created, or
 * its retained primary context) are each synchronized from the agent thread. The registry keeps
 * a drain from racing with the application destroying or releasing a context: that waits for
 * the drain of that context to finish, and a drain does not start on a context being destroyed,
 * released or reset (the registry's mutex is never held across a driver call). A primary
 * context's release is marked in the registry for as long as the driver's release runs: a drain
 * that looked at its state before could otherwise push it while it goes (issue 25). */
#include "compute.h"
#include "shim.h"

#include <pthread.h>

#include "gpushare/log.h"

#define MAX_CONTEXTS 64

typedef struct ctx_entry {
    CUcontext ctx; /* NULL = free */
    CUdevice device;
    int primary;
    int busy;      /* drains in progress on it */
    int releasing; /* primary: releases or resets in progress on it (no drain starts) */
} ctx_entry_t;

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t idle;
    ctx_entry_t entries[MAX_CONTEXTS];
} registry = {.mutex = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

void gs__ctx_note(CUcontext ctx, CUdevice device, int primary)
{
    if (ctx == NULL || gs__compute_dev(device) == NULL)
        return;
    pthread_mutex_lock(&registry.mutex);
    ctx_entry_t *slot = NULL;
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        ctx_entry_t *e = &registry.entries[i];
        if (e->ctx == ctx || (e->ctx == NULL && slot == NULL))
            slot = e;
        if (e->ctx == ctx)
            break;
    }
    if (slot != NULL) {
        slot->ctx = ctx;
        slot->device = device;
        slot->primary = primary;
    }
    pthread_mutex_unlock(&registry.mutex);
    if (slot == NULL)
        gs_warn("compute: more than %d contexts; the work of context %p is not drained at the "
                "end of its slots",
                MAX_CONTEXTS, (void *)ctx);
}

/* Waits until no drain runs on the entries that match (mutex held). */
static void wait_idle(int (*match)(const ctx_entry_t *e, const void *arg), const void *arg)
{
    for (;;) {
        int busy = 0;
        for (int i = 0; i < MAX_CONTEXTS; i++)
            busy |= registry.entries[i].ctx != NULL && match(&registry.entries[i], arg) &&
                    registry.entries[i].busy > 0;
        if (!busy)
            return;
        pthread_cond_wait(&registry.idle, &registry.mutex);
    }
}

static int is_ctx(const ctx_entry_t *e, const void *arg)
{
    return e->ctx == (CUcontext)arg;
}

static int is_primary_of(const ctx_entry_t *e, const void *arg)
{
    return e->primary && e->device == *(const CUdevice *)arg;
}

void gs__ctx_forget(CUcontext ctx)
{
    if (ctx == NULL)
        return;
    pthread_mutex_lock(&registry.mutex);
    wait_idle(is_ctx, ctx);
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        if (registry.entries[i].ctx == ctx && !registry.entries[i].primary)
            registry.entries[i].ctx = NULL;
    }
    pthread_mutex_unlock(&registry.mutex);
}

void gs__ctx_primary_begin(CUdevice device)
{
    pthread_mutex_lock(&registry.mutex);
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        if (registry.entries[i].ctx != NULL && is_primary_of(&registry.entries[i], &device))
            registry.entries[i].releasing++;
    }
    wait_idle(is_primary_of, &device);
    pthread_mutex_unlock(&registry.mutex);
}

void gs__ctx_primary_end(CUdevice device)
{
    pthread_mutex_lock(&registry.mutex);
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        if (registry.entries[i].ctx != NULL && is_primary_of(&registry.entries[i], &device) &&
            registry.entries[i].releasing > 0)
            registry.entries[i].releasing--;
    }
    pthread_mutex_unlock(&registry.mutex);
}

/* Synchronizes one context from this (the agent) thread: made current, synchronized, popped. */
static void sync_one(const ctx_entry_t *e)
{
    const gs__real_t *real = gs__real();
    if (e->primary) {
        unsigned int flags = 0;
        int active = 0;
        if (real->cuDevicePrimaryCtxGetState == NULL ||
            real->cuDevicePrimaryCtxGetState(e->device, &flags, &active) != CUDA_SUCCESS || !active)
            return;
    }
    if (real->cuCtxPushCurrent_v2 == NULL || real->cuCtxSynchronize == NULL ||
        real->cuCtxPopCurrent_v2 == NULL || real->cuCtxPushCurrent_v2(e->ctx) != CUDA_SUCCESS)
        return;
    real->cuCtxSynchronize();
    CUcontext popped;
    real->cuCtxPopCurrent_v2(&popped);
}

int64_t gs__drain(CUdevice device)
{
    int marked[MAX_CONTEXTS];
    ctx_entry_t copies[MAX_CONTEXTS];
    int n = 0;
    pthread_mutex_lock(&registry.mutex);
    for (int i = 0; i < MAX_CONTEXTS; i++) {
        ctx_entry_t *e = &registry.entries[i];
        if (e->ctx != NULL && e->device == device && e->releasing == 0) {
            e->busy++;
            marked[n] = i;
            copies[n++] = *e;
        }
    }
    pthread_mutex_unlock(&registry.mutex);
    for (int k = 0; k < n; k++)
        sync_one(&copies[k]);
    pthread_mutex_lock(&registry.mutex);
    for (int k = 0; k < n; k++)
        registry.entries[marked[k]].busy--;
    pthread_cond_broadcast(&registry.idle);
    pthread_mutex_unlock(&registry.mutex);
    return gs__mono_ns();
}
