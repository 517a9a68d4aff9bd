/* SPDX-License-Identifier: Apache-2.0 */
/* Host functions on streams (cuLaunchHostFunc, cuStreamAddCallback): one callback thread per
 * process runs them in stream order once the work queued before them is complete. */
#include "cuda_internal.h"

#include <stdlib.h>
#include <time.h>

typedef struct host_item {
    int64_t due; /* wall time the stream's preceding work ends */
    uint64_t seq;
    gsim_cu_host_call_t call;
    gsim_cu_stream_t *stream;
    struct host_item *next;
} host_item_t;

typedef struct host_queue {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int started;
    uint64_t next_seq;
    host_item_t *head; /* sorted by (due, seq) */
} host_queue_t;

static host_queue_t queue = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t queue_once = PTHREAD_ONCE_INIT;

static void init_queue(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&queue.cond, &attr);
    pthread_condattr_destroy(&attr);
}

static void insert_sorted_locked(host_item_t *item)
{
    host_item_t **pp = &queue.head;
    while (*pp != NULL &&
           ((*pp)->due < item->due || ((*pp)->due == item->due && (*pp)->seq < item->seq)))
        pp = &(*pp)->next;
    item->next = *pp;
    *pp = item;
}

static void run_item(host_item_t *item)
{
    if (item->call.host_fn != NULL)
        item->call.host_fn(item->call.user);
    else
        item->call.stream_cb(item->call.handle, CUDA_SUCCESS, item->call.user);
    gsim_cu_stream_t *s = item->stream;
    CUcontext ctx = s->ctx;
    pthread_mutex_lock(&ctx->mu);
    s->pending_callbacks--;
    ctx->pending_callbacks--;
    pthread_cond_broadcast(&ctx->cond);
    pthread_mutex_unlock(&ctx->mu);
    free(item);
}

static void wait_until_locked(int64_t due)
{
    struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
    pthread_cond_timedwait(&queue.cond, &queue.mu, &ts);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&queue.mu);
    for (;;) {
        host_item_t *item = queue.head;
        if (item == NULL) {
            pthread_cond_wait(&queue.cond, &queue.mu);
            continue;
        }
        if (item->due > gsim_now_ns()) {
            wait_until_locked(item->due);
            continue;
        }
        queue.head = item->next;
        pthread_mutex_unlock(&queue.mu);
        run_item(item);
        pthread_mutex_lock(&queue.mu);
    }
    return NULL;
}

/* Starts the callback thread on first use. Call with queue.mu held. Returns 0 or -1. */
static int start_worker_locked(void)
{
    if (queue.started)
        return 0;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&thread, &attr, worker, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    queue.started = 1;
    return 0;
}

CUresult gsim_cu_stream_host_call(gsim_cu_stream_t *s, const gsim_cu_host_call_t *call)
{
    pthread_once(&queue_once, init_queue);
    host_item_t *item = calloc(1, sizeof(*item));
    if (item == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    item->call = *call;
    item->stream = s;
    CUcontext ctx = s->ctx;
    pthread_mutex_lock(&ctx->mu);
    s->pending_callbacks++;
    ctx->pending_callbacks++;
    pthread_mutex_unlock(&ctx->mu);
    item->due = gsim_cu_stream_mark(s);
    pthread_mutex_lock(&queue.mu);
    int rc = start_worker_locked();
    if (rc == 0) {
        item->seq = queue.next_seq++;
        insert_sorted_locked(item);
        pthread_cond_broadcast(&queue.cond);
    }
    pthread_mutex_unlock(&queue.mu);
    if (rc == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&ctx->mu);
    s->pending_callbacks--;
    ctx->pending_callbacks--;
    pthread_mutex_unlock(&ctx->mu);
    free(item);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

void gsim_cu_wait_host_calls(CUcontext ctx, gsim_cu_stream_t *s)
{
    pthread_mutex_lock(&ctx->mu);
    while ((s != NULL ? s->pending_callbacks : ctx->pending_callbacks) > 0)
        pthread_cond_wait(&ctx->cond, &ctx->mu);
    pthread_mutex_unlock(&ctx->mu);
}
