/* SPDX-License-Identifier: Apache-2.0 */
/* Streams, events and host callbacks in simulated time (run with GPUSIM_TIME_SCALE=10): stream
 * order, the legacy default stream's synchronization with blocking streams, per-thread default
 * streams, cuStreamWaitEvent, queries before completion, callbacks after the work before them. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const char image[] = "gpusim-module 1\n"
                            "kernel gate 2s\n"
                            "kernel k100 100ms\n"
                            "kernel k500 500ms\n"
                            "kernel k1000 1s\n";

static CUfunction gate, k100, k500, k1000;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void launch(CUfunction f, CUstream s)
{
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

/* Keeps s busy for 200 ms of wall time, so that what is queued after it is timed exactly even
 * when this process is descheduled for a while: work queued behind running work starts when it
 * ends, never at the wall time the host got around to launching it. */
static void gate_stream(CUstream s)
{
    launch(gate, s);
}

static float elapsed(CUevent a, CUevent b)
{
    float ms = -1;
    CHECK(cuEventSynchronize(a));
    CHECK(cuEventSynchronize(b));
    CHECK(cuEventElapsedTime(&ms, a, b));
    return ms;
}

static CUevent event(void)
{
    CUevent e;
    CHECK(cuEventCreate(&e, 0));
    return e;
}

/* Work queued behind running work starts when it ends: elapsed times are exact. */
static void stream_order(void)
{
    CUstream a;
    CHECK(cuStreamCreate(&a, 0));
    CUevent e1 = event(), e2 = event();
    gate_stream(a);
    CHECK(cuEventRecord(e1, a));
    launch(k100, a);
    launch(k100, a);
    CHECK(cuEventRecord(e2, a));
    CHECK(cuStreamSynchronize(a));
    CHECK_TRUE(fabsf(elapsed(e1, e2) - 200.0f) < 0.01f);
    CHECK(cuStreamDestroy(a));
    CHECK(cuEventDestroy(e1));
    CHECK(cuEventDestroy(e2));
}

static void queries_before_completion(void)
{
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e = event();
    long long t0 = now_ns();
    gate_stream(s); /* 200 ms of wall time at scale 10 */
    CHECK(cuEventRecord(e, s));
    CHECK_RESULT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK_RESULT(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    float ms;
    CHECK_RESULT(cuEventElapsedTime(&ms, e, e), CUDA_ERROR_NOT_READY);
    CHECK(cuEventSynchronize(e));
    CHECK_TRUE(now_ns() - t0 >= 200000000LL);
    CHECK(cuStreamQuery(s));
    CHECK(cuEventQuery(e));
    CHECK(cuStreamDestroy(s));
    CHECK(cuEventDestroy(e));
}

/* The legacy default stream waits for blocking streams; non-blocking streams wait for nothing. */
static void legacy_stream(void)
{
    CUstream blocking, nonblocking;
    CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CUevent ea = event(), el = event(), en = event(), eb = event();
    gate_stream(blocking);
    launch(k500, blocking);
    CHECK(cuEventRecord(ea, blocking));
    CHECK(cuEventRecord(en, nonblocking));
    CHECK(cuEventRecord(el, NULL));
    launch(k100, NULL);
    CHECK(cuEventRecord(eb, blocking)); /* blocking work waits for the legacy stream's kernel */
    CHECK_TRUE(fabsf(elapsed(ea, el)) < 0.01f);
    CHECK_TRUE(elapsed(en, ea) > 0.0f); /* not behind the blocking stream */
    CHECK_TRUE(fabsf(elapsed(el, eb) - 100.0f) < 0.01f);
    CHECK(cuStreamDestroy(blocking));
    CHECK(cuStreamDestroy(nonblocking));
    CHECK(cuEventDestroy(ea));
    CHECK(cuEventDestroy(el));
    CHECK(cuEventDestroy(en));
    CHECK(cuEventDestroy(eb));
}

static void wait_event(void)
{
    CUstream a, b;
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent ea = event(), eb = event();
    gate_stream(a);
    launch(k500, a);
    CHECK(cuEventRecord(ea, a));
    CHECK(cuStreamWaitEvent(b, ea, 0));
    launch(k100, b);
    CHECK(cuEventRecord(eb, b));
    CHECK_TRUE(fabsf(elapsed(ea, eb) - 100.0f) < 0.01f);
    CHECK(cuStreamDestroy(a));
    CHECK(cuStreamDestroy(b));
    CHECK(cuEventDestroy(ea));
    CHECK(cuEventDestroy(eb));
}

typedef struct callback_log {
    long long at[4];
    int n;
    CUstream stream_seen;
    CUresult status_seen;
} callback_log_t;

static void host_fn(void *arg)
{
    callback_log_t *log = arg;
    log->at[log->n++] = now_ns();
}

static void stream_cb(CUstream s, CUresult status, void *arg)
{
    callback_log_t *log = arg;
    log->stream_seen = s;
    log->status_seen = status;
    log->at[log->n++] = now_ns();
}

static void host_callbacks(void)
{
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    callback_log_t log;
    memset(&log, 0, sizeof(log));
    long long t0 = now_ns();
    launch(k500, s); /* 50 ms wall */
    CHECK(cuLaunchHostFunc(s, host_fn, &log));
    launch(k100, s);
    CHECK(cuStreamAddCallback(s, stream_cb, &log, 0));
    CHECK_RESULT(cuStreamAddCallback(s, stream_cb, &log, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuLaunchHostFunc(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamSynchronize(s));
    CHECK_EQ(log.n, 2);
    CHECK_TRUE(log.at[0] - t0 >= 50000000LL);
    CHECK_TRUE(log.at[1] - t0 >= 60000000LL);
    CHECK_TRUE(log.stream_seen == s);
    CHECK_EQ(log.status_seen, CUDA_SUCCESS);
    CHECK(cuStreamDestroy(s));
}

typedef CUresult (*launch_ptsz_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*record_ptsz_t)(CUevent, CUstream);

typedef struct other_thread {
    CUcontext ctx;
    CUevent e;
    record_ptsz_t record;
} other_thread_t;

static void *record_on_own_stream(void *arg)
{
    other_thread_t *t = arg;
    CHECK(cuCtxSetCurrent(t->ctx));
    CHECK(t->record(t->e, NULL)); /* this thread's per-thread stream is idle */
    return NULL;
}

/* Per-thread default streams: through the _ptsz entry points (cuGetProcAddress flag 2) NULL is
 * the calling thread's own stream, which the legacy stream waits for and other threads do not. */
static void per_thread_streams(CUcontext ctx)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress("cuLaunchKernel", &fn, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
    launch_ptsz_t launch_ptsz = (launch_ptsz_t)fn;
    CHECK(cuGetProcAddress("cuEventRecord", &fn, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
    record_ptsz_t record_ptsz = (record_ptsz_t)fn;
    CUevent ep = event(), el = event(), et = event(), eh = event();
    CHECK(launch_ptsz(gate, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(launch_ptsz(k500, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(record_ptsz(ep, NULL));
    CHECK(cuEventRecord(eh, CU_STREAM_PER_THREAD)); /* the same stream by its handle */
    other_thread_t t = {.ctx = ctx, .e = et, .record = record_ptsz};
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, record_on_own_stream, &t), 0);
    CHECK_EQ(pthread_join(thread, NULL), 0);
    CHECK(cuEventRecord(el, CU_STREAM_LEGACY));
    CHECK_TRUE(fabsf(elapsed(ep, eh)) < 0.01f);
    CHECK_TRUE(fabsf(elapsed(ep, el)) < 0.01f);
    CHECK_TRUE(elapsed(et, ep) > 0.0f); /* not behind the other thread's stream */
    CHECK(cuEventDestroy(ep));
    CHECK(cuEventDestroy(el));
    CHECK(cuEventDestroy(et));
    CHECK(cuEventDestroy(eh));
}

static void launch_ex_and_context_sync(void)
{
    CUstream s;
    CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -3));
    int prio = 0, least = 1, greatest = 1;
    unsigned int flags = 0;
    CUcontext owner;
    CUdevice dev = -1;
    unsigned long long id1 = 0, id2 = 0;
    CHECK(cuCtxGetStreamPriorityRange(&least, &greatest));
    CHECK_EQ(least, 0);
    CHECK_TRUE(greatest == -5);
    CHECK(cuStreamGetPriority(s, &prio));
    CHECK_TRUE(prio == -3);
    CHECK(cuStreamGetFlags(s, &flags));
    CHECK_EQ(flags, CU_STREAM_NON_BLOCKING);
    CHECK(cuStreamGetCtx(s, &owner));
    CHECK(cuStreamGetDevice(s, &dev));
    CHECK_EQ(dev, 0);
    CHECK(cuStreamGetId(s, &id1));
    CHECK(cuStreamGetId(NULL, &id2));
    CHECK_TRUE(id1 != id2);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUlaunchConfig config = {.gridDimX = 132,
                             .gridDimY = 1,
                             .gridDimZ = 1,
                             .blockDimX = 256,
                             .blockDimY = 1,
                             .blockDimZ = 1,
                             .hStream = s,
                             .attrs = &attr,
                             .numAttrs = 1};
    CUevent e0 = event(), e1 = event();
    gate_stream(s);
    CHECK(cuEventRecord(e0, s));
    CHECK(cuLaunchKernelEx(&config, k500, NULL, NULL));
    CHECK(cuLaunchCooperativeKernel(k100, 132, 1, 1, 256, 1, 1, 0, s, NULL));
    CHECK(cuEventRecord(e1, s));
    launch(k1000, NULL);
    CHECK(cuCtxSynchronize());
    CHECK(cuStreamQuery(s));
    CHECK(cuStreamQuery(NULL));
    CHECK_TRUE(fabsf(elapsed(e0, e1) - 600.0f) < 0.01f);
    CHECK(cuStreamDestroy(s));
    CHECK(cuEventDestroy(e0));
    CHECK(cuEventDestroy(e1));
}

int main(void)
{
    CHECK(cuInit(0));
    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
    CUmodule mod;
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(&gate, mod, "gate"));
    CHECK(cuModuleGetFunction(&k100, mod, "k100"));
    CHECK(cuModuleGetFunction(&k500, mod, "k500"));
    CHECK(cuModuleGetFunction(&k1000, mod, "k1000"));
    stream_order();
    queries_before_completion();
    legacy_stream();
    wait_event();
    host_callbacks();
    per_thread_streams(ctx);
    launch_ex_and_context_sync();
    CHECK(cuModuleUnload(mod));
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
