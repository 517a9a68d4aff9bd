/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API for gpushared (checkpoint.h): libcuda.so.1 by dlopen, the suspend and
 * resume of a lease's processes, all or none, on the worker thread; its queues. */
#include "checkpoint.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/log.h"

typedef struct gs__cuda_ckpt {
    /* The worker's alone (loaded at its first job). */
    void *lib;
    int loaded; /* 1: the API is there, -1: it is not (load_err says why), 0: not tried */
    char load_err[160];
    CUresult (*get_state)(int pid, CUprocessState *state);
    CUresult (*lock)(int pid, CUcheckpointLockArgs *args);
    CUresult (*checkpoint)(int pid, CUcheckpointCheckpointArgs *args);
    CUresult (*restore)(int pid, CUcheckpointRestoreArgs *args);
    CUresult (*unlock)(int pid, CUcheckpointUnlockArgs *args);
    CUresult (*error_name)(CUresult error, const char **name);
    char nvml_library[GS__PATH_MAX]; /* a copy of the configuration's (set before the thread) */
    /* Shared, under mu: the jobs to run and those done. */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    gs__ckpt_job_t *todo, *todo_tail, *done, *done_tail;
    int stop;
    /* Set before the thread starts, then read-only; pending is the loop's alone. */
    pthread_t thread;
    int efd; /* eventfd: counts jobs done */
    gs__ckpt_job_t *pending;
} gs__cuda_ckpt_t;

/* libcuda.so.1 beside the configured NVML library (gpusim's directory), else the loader's. */
static void *open_libcuda(const gs__cuda_ckpt_t *c)
{
    char path[GS__PATH_MAX + 16];
    const char *slash = strrchr(c->nvml_library, '/');
    if (slash != NULL) {
        snprintf(path, sizeof(path), "%.*s/libcuda.so.1", (int)(slash - c->nvml_library),
                 c->nvml_library);
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

/* Loads the API at the first job; returns 0, or GS_ENOTSUP with one line in err. */
static int load(gs__cuda_ckpt_t *c, char *err, size_t errlen)
{
    if (c->loaded == 0) {
        c->lib = open_libcuda(c);
        c->loaded = c->lib != NULL && resolve(c) == 0 ? 1 : -1;
        if (c->loaded < 0 && c->lib != NULL) {
            dlclose(c->lib);
            c->lib = NULL;
        }
    }
    if (c->loaded > 0)
        return 0;
    return gs_fail(err, errlen, GS_ENOTSUP,
                   "this node's CUDA driver has no usable checkpoint API (libcuda.so.1 of driver "
                   "570 or later, cuInit in gpushared)");
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

static int suspend_all(gs__cuda_ckpt_t *c, gs__proc_refs_t *procs, char *err, size_t errlen)
{
    if (load(c, err, errlen) != 0)
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

static int resume_all(gs__cuda_ckpt_t *c, const gs__proc_refs_t *procs, char *err, size_t errlen)
{
    if (load(c, err, errlen) != 0)
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

/* ---- the worker and its queues ---- */

static void run_job(gs__cuda_ckpt_t *c, gs__ckpt_job_t *job)
{
    job->err[0] = '\0';
    job->result = job->op == GS__CKPT_SUSPEND
                      ? suspend_all(c, &job->procs, job->err, sizeof(job->err))
                      : resume_all(c, &job->procs, job->err, sizeof(job->err));
}

static void push(gs__ckpt_job_t **head, gs__ckpt_job_t **tail, gs__ckpt_job_t *job)
{
    job->next = NULL;
    if (*tail != NULL)
        (*tail)->next = job;
    else
        *head = job;
    *tail = job;
}

static void *work(void *arg)
{
    gs__cuda_ckpt_t *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->todo == NULL && !c->stop)
            pthread_cond_wait(&c->wake, &c->mu);
        if (c->stop)
            break;
        gs__ckpt_job_t *job = c->todo;
        c->todo = job->next;
        if (c->todo == NULL)
            c->todo_tail = NULL;
        pthread_mutex_unlock(&c->mu);
        run_job(c, job);
        pthread_mutex_lock(&c->mu);
        push(&c->done, &c->done_tail, job);
        uint64_t one = 1;
        if (write(c->efd, &one, sizeof(one)) < 0)
            gs_warn("checkpoint worker: cannot wake the event loop: %s", gs_strerror(-errno));
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int gs__ckpt_start(gs__daemon_t *d)
{
    gs__cuda_ckpt_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return GS_ENOMEM;
    snprintf(c->nvml_library, sizeof(c->nvml_library), "%s", d->cfg.nvml_library);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->efd < 0) {
        int result = -errno;
        free(c);
        return result;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->wake, NULL);
    /* The worker takes no signal: the loop's signalfd gets them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int result = -pthread_create(&c->thread, NULL, work, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (result != 0) {
        close(c->efd);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->wake);
        free(c);
        return result;
    }
    d->cuda = c;
    return 0;
}

int gs__ckpt_fd(const gs__daemon_t *d)
{
    return d->cuda != NULL ? d->cuda->efd : -1;
}

int gs__ckpt_submit(gs__daemon_t *d, gs__ckpt_job_t *job)
{
    gs__cuda_ckpt_t *c = d->cuda;
    if (c == NULL)
        return GS_ENOTSUP;
    job->pending = c->pending;
    c->pending = job;
    pthread_mutex_lock(&c->mu);
    push(&c->todo, &c->todo_tail, job);
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* Drops job from the loop's list of jobs not handed back. */
static void unpend(gs__cuda_ckpt_t *c, const gs__ckpt_job_t *job)
{
    for (gs__ckpt_job_t **at = &c->pending; *at != NULL; at = &(*at)->pending) {
        if (*at == job) {
            *at = job->pending;
            return;
        }
    }
}

gs__ckpt_job_t *gs__ckpt_done(gs__daemon_t *d)
{
    gs__cuda_ckpt_t *c = d->cuda;
    uint64_t count;
    if (c == NULL)
        return NULL;
    if (read(c->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
        gs_warn("checkpoint worker: cannot read its descriptor: %s", gs_strerror(-errno));
    pthread_mutex_lock(&c->mu);
    gs__ckpt_job_t *jobs = c->done;
    c->done = c->done_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    for (gs__ckpt_job_t *job = jobs; job != NULL; job = job->next)
        unpend(c, job);
    return jobs;
}

gs__ckpt_job_t *gs__ckpt_pending(const gs__daemon_t *d)
{
    return d->cuda != NULL ? d->cuda->pending : NULL;
}

void gs__ckpt_free(gs__ckpt_job_t *job)
{
    if (job == NULL)
        return;
    gs__lease_procs_clear(&job->procs);
    free(job);
}

/* At shutdown: frees a list of jobs, restoring the processes of a suspend that was done. */
static void drop_jobs(gs__cuda_ckpt_t *c, gs__ckpt_job_t *jobs, int done)
{
    gs__ckpt_job_t *next;
    for (gs__ckpt_job_t *job = jobs; job != NULL; job = next) {
        next = job->next;
        if (done && job->op == GS__CKPT_SUSPEND && job->result > 0) {
            gs_warn("lease %llu: its suspend finished as gpushared stopped: restoring its "
                    "processes",
                    (unsigned long long)job->lease);
            resume_all(c, &job->procs, job->err, sizeof(job->err));
        }
        gs__ckpt_free(job);
    }
}

void gs__ckpt_close(gs__daemon_t *d)
{
    gs__cuda_ckpt_t *c = d->cuda;
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    drop_jobs(c, c->todo, 0);
    drop_jobs(c, c->done, 1);
    close(c->efd);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->wake);
    if (c->lib != NULL)
        dlclose(c->lib);
    free(c);
    d->cuda = NULL;
}
