/* SPDX-License-Identifier: Apache-2.0 */
/* The launch gate (compute.c) against a fake driver and scheduler, driven by the test in place
 * of the agent: launcher threads pass it as fast as they can (most launches on tickets, without
 * an atomic operation), while the test opens it for rounds of a few launches or of many, closes
 * it and waits for launches in progress (gs__gate_quiesce). After a quiesce no launch is in
 * progress and none starts until the gate opens again; no round admits more launches than its
 * limit; the quiesce ends because entries and launches done meet, not at its time limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute.h"
#include "shim.h"

#define LAUNCHERS 4
#define ROUNDS    300

static int inside;            /* launches between enter and leave */
static int closed;            /* the test closed and quiesced the gate */
static int escaped;           /* launches seen in progress while closed */
static unsigned round_starts; /* launches that began in the current round */
static int stop;

/* ---- the fake driver and scheduler ---- */

static CUresult fake_count(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

static CUresult fake_get(CUdevice *dev, int ordinal)
{
    *dev = ordinal;
    return CUDA_SUCCESS;
}

static CUresult fake_uuid(CUuuid *u, CUdevice dev)
{
    (void)dev;
    memset(u, 0x5a, sizeof(*u));
    return CUDA_SUCCESS;
}

static gs__real_t table;

const gs__real_t *gs__real(void)
{
    return &table;
}

static int member_storage;

int gs_smember_join(const char *spec, const char *uuid, uint32_t cap_pct, gs_smember_t **out,
                    gs_smember_terms_t *terms, char *err, size_t errlen)
{
    (void)spec, (void)uuid, (void)cap_pct, (void)err, (void)errlen;
    memset(terms, 0, sizeof(*terms));
    terms->gate = 1;
    *out = (gs_smember_t *)&member_storage;
    return 0;
}

void gs_smember_free(gs_smember_t *m)
{
    (void)m;
}

void gs_smember_forget(gs_smember_t *m)
{
    (void)m;
}

int gs__agent_start(gs__sched_dev_t *dev)
{
    (void)dev;
    return 1; /* the test is the agent */
}

/* ---- launchers ---- */

static void *launcher(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        struct gs__gate *gate = gs__compute_enter();
        __atomic_fetch_add(&inside, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&round_starts, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&closed, __ATOMIC_SEQ_CST))
            __atomic_fetch_add(&escaped, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_sub(&inside, 1, __ATOMIC_SEQ_CST);
        gs__compute_leave(gate);
    }
    return NULL;
}

static void pause_us(long us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    table.cuDeviceGetCount = fake_count;
    table.cuDeviceGet = fake_get;
    table.cuDeviceGetUuid_v2 = fake_uuid;
    setenv("GPUSHARE_REGION", "gpushared:test:/nonexistent", 1);
    if (gs__compute_config(0) != CUDA_SUCCESS || gs__compute_setup() != CUDA_SUCCESS)
        return -1;
    return gs__compute_dev(0) != NULL ? 0 : -1;
}

/* Rounds of a few launches (every one through the gate's counter) and of many (on tickets). */
static void test_rounds(void **state)
{
    (void)state;
    gs__gate_t *gate = &gs__compute_dev(0)->gate;
    gs__gate_close(gate);
    pthread_t threads[LAUNCHERS];
    for (int i = 0; i < LAUNCHERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, launcher, NULL), 0);
    unsigned activity = gs__gate_activity(gate), moved = 0, over = 0, slow = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint32_t limit = r % 3 == 0 ? 5 : 100000;
        __atomic_store_n(&round_starts, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&closed, 0, __ATOMIC_SEQ_CST);
        gs__gate_open(gate, limit);
        pause_us(r % 2 ? 300 : 50);
        gs__gate_close(gate);
        int64_t t0 = gs__mono_ns();
        gs__gate_quiesce(gate);
        slow += gs__mono_ns() - t0 >= 90 * 1000 * 1000; /* its 100 ms limit, not the launches */
        __atomic_store_n(&closed, 1, __ATOMIC_SEQ_CST);
        assert_int_equal(__atomic_load_n(&inside, __ATOMIC_SEQ_CST), 0);
        over += __atomic_load_n(&round_starts, __ATOMIC_SEQ_CST) > limit;
        pause_us(100); /* closed: nobody may start meanwhile */
        unsigned now = gs__gate_activity(gate);
        moved += now != activity;
        activity = now;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&closed, 0, __ATOMIC_SEQ_CST);
    gs__gate_open(gate, UINT32_MAX);
    for (int i = 0; i < LAUNCHERS; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(escaped, 0);
    assert_int_equal(over, 0);
    assert_true(slow <= 2);          /* the counts agree: entries and dones meet at every quiesce */
    assert_true(moved > ROUNDS / 2); /* launches on tickets move the activity count too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
