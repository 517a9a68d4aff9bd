/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 25, the drain hole, and what a drain does (issue 41): the shim's drain of a primary context
 * never pushes it while the application's release of it runs. drain.c is built here against a fake
 * driver whose release waits for the drain to look at the context's state, and whose state check
 * waits for the release to finish: before the fix the drain pushed the released context (its check
 * and its push straddled the release); now a drain does not start on a context being released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "compute.h"
#include "shim.h"

static int fake_ctx_storage;
static CUcontext ctx = (CUcontext)&fake_ctx_storage;

/* The fake driver's state, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int alive, releasing, state_checked, dead_pushes, pushes, syncs, pops;

/* Waits (lock held) until *flag equals want or 300 ms pass. */
static void wait_for(const int *flag, int want)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 300 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    while (*flag != want && pthread_cond_timedwait(&changed, &lock, &until) == 0)
        ;
}

static CUresult fake_get_state(CUdevice dev, unsigned int *flags, int *active)
{
    (void)dev;
    pthread_mutex_lock(&lock);
    *flags = 0;
    *active = alive;
    state_checked = 1;
    pthread_cond_broadcast(&changed);
    wait_for(&alive, 0); /* the release finishes between the check and the push */
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult fake_push(CUcontext c)
{
    pthread_mutex_lock(&lock);
    pushes++;
    dead_pushes += c == ctx && !alive;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult fake_sync(void)
{
    pthread_mutex_lock(&lock);
    syncs++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult fake_pop(CUcontext *c)
{
    pthread_mutex_lock(&lock);
    pops++;
    pthread_mutex_unlock(&lock);
    *c = ctx;
    return CUDA_SUCCESS;
}

static gs__real_t table;

const gs__real_t *gs__real(void)
{
    return &table;
}

static gs__sched_dev_t dev0;

gs__sched_dev_t *gs__compute_dev(int ordinal)
{
    return ordinal == 0 ? &dev0 : NULL;
}

int64_t gs__mono_ns(void)
{
    return 0;
}

/* The application's release, as context.c makes it: begin, the driver's release, end. */
static void *release(void *arg)
{
    (void)arg;
    gs__ctx_primary_begin(0);
    pthread_mutex_lock(&lock);
    releasing = 1;
    pthread_cond_broadcast(&changed);
    wait_for(&state_checked, 1); /* a drain that started would look now */
    alive = 0;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    gs__ctx_primary_end(0);
    return NULL;
}

static void test_drain_during_release(void **state)
{
    (void)state;
    table.cuDevicePrimaryCtxGetState = fake_get_state;
    table.cuCtxPushCurrent_v2 = fake_push;
    table.cuCtxSynchronize = fake_sync;
    table.cuCtxPopCurrent_v2 = fake_pop;
    alive = 1;
    gs__ctx_note(ctx, 0, 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release, NULL), 0);
    pthread_mutex_lock(&lock);
    wait_for(&releasing, 1);
    pthread_mutex_unlock(&lock);
    gs__drain(0);
    pthread_join(t, NULL);
    assert_int_equal(dead_pushes, 0);
    assert_int_equal(pushes, 0); /* it did not start on the context being released */
    /* Released: the next drain finds it inactive and pushes nothing either. */
    gs__drain(0);
    assert_int_equal(pushes, 0);
}

/* What a drain is for: every live context of the device is synchronized (made current on the
 * drain's thread, synchronized, popped) before gs__drain returns, so that what ran before the
 * drain is done when the slot changes hands. */
static void test_drain_syncs_live_contexts(void **state)
{
    (void)state;
    static int other_storage;
    CUcontext other = (CUcontext)&other_storage; /* a context of cuCtxCreate: not primary */
    gs__ctx_note(other, 0, 0);
    int pushes_before = pushes, syncs_before = syncs, pops_before = pops;
    gs__drain(0);
    assert_int_equal(pushes - pushes_before, 1);
    assert_int_equal(syncs - syncs_before, 1);
    assert_int_equal(pops - pops_before, 1);
    gs__drain(1); /* another device's drain leaves it alone */
    assert_int_equal(syncs - syncs_before, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_drain_during_release),
                                       cmocka_unit_test(test_drain_syncs_live_contexts)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
