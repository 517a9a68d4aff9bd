/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API for gpushared (checkpoint.h): libcuda.so.1 by dlopen, the suspend and
 * resume of a lease's processes, all or none. */
#include "checkpoint.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/log.h"

typedef struct gs__cuda_ckpt {
    void *lib;
    CUresult (*get_state)(int pid, CUprocessState *state);
    CUresult (*lock)(int pid, CUcheckpointLockArgs *args);
    CUresult (*checkpoint)(int pid, CUcheckpointCheckpointArgs *args);
    CUresult (*restore)(int pid, CUcheckpointRestoreArgs *args);
    CUresult (*unlock)(int pid, CUcheckpointUnlockArgs *args);
    CUresult (*error_name)(CUresult error, const char **name);
} gs__cuda_ckpt_t;

/* libcuda.so.1 beside the configured NVML library (gpusim's directory), else the loader's. */
static void *open_libcuda(const gs__daemon_t *d)
{
    char path[GS__PATH_MAX + 16];
    const char *slash = strrchr(d->cfg.nvml_library, '/');
    if (slash != NULL) {
        snprintf(path, sizeof(path), "%.*s/libcuda.so.1", (int)(slash - d->cfg.nvml_library),
                 d->cfg.nvml_library);
        if (access(path, R_OK) == 0)
            return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

static int resolve(gs__cuda_ckpt_t *c)
{
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(c->lib, "cuInit");
    *(void **)&c->get_state = dlsym(c->lib, "cuCheckpointProcessGetState");
    *(void **)&c->lock = dlsym(c->lib, "cuCheckpointProcessLock");
    *(void **)&c->checkpoint = dlsym(c->lib, "cuCheckpointProcessCheckpoint");
    *(void **)&c->restore = dlsym(c->lib, "cuCheckpointProcessRestore");
    *(void **)&c->unlock = dlsym(c->lib, "cuCheckpointProcessUnlock");
    *(void **)&c->error_name = dlsym(c->lib, "cuGetErrorName");
    if (init == NULL || c->get_state == NULL || c->lock == NULL || c->checkpoint == NULL ||
        c->restore == NULL || c->unlock == NULL || c->error_name == NULL)
        return -1;
    return init(0) == CUDA_SUCCESS ? 0 : -1;
}

static gs__cuda_ckpt_t *load(gs__daemon_t *d, char *err, size_t errlen)
{
    if (d->cuda != NULL)
        return d->cuda;
    gs__cuda_ckpt_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        gs_fail(err, errlen, GS_ENOMEM, "out of memory loading CUDA");
        return NULL;
    }
    c->lib = open_libcuda(d);
    if (c->lib == NULL || resolve(c) != 0) {
        gs_fail(err, errlen, GS_ENOTSUP,
                "this node's CUDA driver has no usable checkpoint API (libcuda.so.1 of driver "
                "570 or later, cuInit in gpushared)");
        if (c->lib != NULL)
            dlclose(c->lib);
        free(c);
        return NULL;
    }
    d->cuda = c;
    return c;
}

static const char *name_of(const gs__cuda_ckpt_t *c, CUresult r)
{
    const char *name = NULL;
    return c->error_name(r, &name) == CUDA_SUCCESS && name != NULL ? name : "?";
}

/* Keeps the processes of procs that are CUDA processes (their state can be read). */
static void keep_cuda(const gs__cuda_ckpt_t *c, gs__proc_refs_t *procs)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < procs->n; i++) {
        CUprocessState state;
        if (c->get_state(procs->v[i].pid, &state) == CUDA_SUCCESS)
            procs->v[kept++] = procs->v[i];
    }
    procs->n = kept;
}

static CUresult suspend_one(const gs__cuda_ckpt_t *c, int pid)
{
    CUcheckpointLockArgs args = {.timeoutMs = GS__CKPT_LOCK_MS};
    CUresult r = c->lock(pid, &args);
    if (r != CUDA_SUCCESS)
        return r;
    r = c->checkpoint(pid, NULL);
    if (r != CUDA_SUCCESS)
        c->unlock(pid, NULL);
    return r;
}

/* Restores (when checkpointed) and unlocks (when locked) one process; one that is gone or
 * running (not one of the suspend's: found again after a restart) is left alone. */
static CUresult resume_one(const gs__cuda_ckpt_t *c, int pid)
{
    CUprocessState state;
    if (c->get_state(pid, &state) != CUDA_SUCCESS || state == CU_PROCESS_STATE_RUNNING)
        return CUDA_SUCCESS;
    CUresult r = state == CU_PROCESS_STATE_CHECKPOINTED ? c->restore(pid, NULL) : CUDA_SUCCESS;
    return r != CUDA_SUCCESS ? r : c->unlock(pid, NULL);
}

int gs__ckpt_suspend(gs__daemon_t *d, gs__proc_refs_t *procs, char *err, size_t errlen)
{
    gs__cuda_ckpt_t *c = load(d, err, errlen);
    if (c == NULL)
        return GS_ENOTSUP;
    keep_cuda(c, procs);
    for (unsigned i = 0; i < procs->n; i++) {
        CUresult r = suspend_one(c, procs->v[i].pid);
        if (r == CUDA_SUCCESS)
            continue;
        for (unsigned j = i; j-- > 0;)
            resume_one(c, procs->v[j].pid);
        return gs_fail(err, errlen, r == CUDA_ERROR_NOT_READY ? GS_EAGAIN : GS_EIO,
                       "process %d could not be suspended (%s%s): nothing was",
                       (int)procs->v[i].pid, name_of(c, r),
                       r == CUDA_ERROR_NOT_READY ? ": a kernel ran longer than the lock timeout"
                                                 : "");
    }
    return (int)procs->n;
}

int gs__ckpt_resume(gs__daemon_t *d, const gs__proc_refs_t *procs, char *err, size_t errlen)
{
    gs__cuda_ckpt_t *c = load(d, err, errlen);
    if (c == NULL)
        return GS_ENOTSUP;
    for (unsigned i = 0; i < procs->n; i++) {
        CUresult r = resume_one(c, procs->v[i].pid);
        if (r == CUDA_SUCCESS)
            continue;
        for (unsigned j = i; j-- > 0;)
            suspend_one(c, procs->v[j].pid);
        return gs_fail(err, errlen, r == CUDA_ERROR_OUT_OF_MEMORY ? GS_EAGAIN : GS_EIO,
                       "process %d could not be restored (%s): the lease stays suspended",
                       (int)procs->v[i].pid, name_of(c, r));
    }
    return 0;
}

void gs__ckpt_close(gs__daemon_t *d)
{
    if (d->cuda == NULL)
        return;
    dlclose(d->cuda->lib);
    free(d->cuda);
    d->cuda = NULL;
}
