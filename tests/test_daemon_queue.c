/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the scheduler (issue 14): backfill behind held GPUs, GPU types, aging, the
 * reasons a request waits. A node of an A100-40GB and a T4-16GB, no daemon around it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "core/place.h"
#include "gpu/mode.h"
#include "core/queue_pass.h"

#define GIB (UINT64_C(1) << 30)

static gs__daemon_t *d;
static char granted[16]; /* the names of the requests granted, in order */

static void add_gpu(unsigned index, const char *name, uint64_t total)
{
    gs__gpu_t *g = &d->gpus[d->n_gpus++];
    memset(g, 0, sizeof(*g));
    g->index = index;
    snprintf(g->uuid, sizeof(g->uuid), "GPU-%u", index);
    snprintf(g->name, sizeof(g->name), "%s", name);
    g->total = total;
    gs__gpu_set_mode(g, GS_GPU_MODE_SHARED);
    g->overprovision = 1;
}

static int setup(void **state)
{
    (void)state;
    d = calloc(1, sizeof(*d));
    gs__queue_init(&d->queue);
    gs__config_defaults(&d->cfg);
    d->policy = GS__POLICY_BESTFIT;
    add_gpu(0, "NVIDIA A100-40GB", 40 * GIB);
    add_gpu(1, "NVIDIA T4-16GB", 16 * GIB);
    granted[0] = '\0';
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    while (d->queue.head != NULL) {
        gs__waiter_t *w = d->queue.head;
        gs__queue_remove(&d->queue, w);
        free(w);
    }
    free(d);
    return 0;
}

/* Grants: takes the capacity, notes the request's name (its first letter), frees it. */
static void grant(gs__daemon_t *daemon, gs__waiter_t *w, const gs__alloc_t *alloc)
{
    for (unsigned i = 0; i < alloc->n; i++)
        gs__gpu_take(&daemon->gpus[alloc->part[i].gpu], &alloc->part[i]);
    size_t n = strlen(granted);
    granted[n] = w->req.name[0];
    granted[n + 1] = '\0';
    gs__queue_remove(&daemon->queue, w);
    free(w);
}

/* Queues a request named name arriving at ms (a whole GPU of type, or memory bytes). */
static gs__waiter_t *queue(const char *name, uint64_t memory, const char *type, int priority,
                           int64_t ms)
{
    gs__waiter_t *w = calloc(1, sizeof(*w));
    gs_lease_request_init(&w->req);
    w->req.kind = memory != 0 ? GS_LEASE_MEMORY : GS_LEASE_GPUS;
    w->req.memory = memory;
    w->req.gpus = 1;
    w->req.priority = priority;
    snprintf(w->req.name, sizeof(w->req.name), "%s", name);
    if (type != NULL)
        assert_int_equal(gs_lease_add_gpu_types(&w->req, type, NULL, 0), 0);
    w->queued_ms = ms;
    gs__queue_push(&d->queue, w);
    return w;
}

static const char *why(const gs__waiter_t *w)
{
    static char buf[256];
    gs__reason_wait(d, w, buf, sizeof(buf));
    return buf;
}

/* The case: the whole A100 waits, a 1G request starts on the T4, a 5G one for the A100
 * waits behind it; when the A100 frees, the whole-GPU request gets it first. */
static void test_backfill(void **state)
{
    (void)state;
    gs__gpu_t *a100 = &d->gpus[0];
    gs__part_t busy = {.gpu = 0, .memory = 30 * GIB};
    gs__gpu_take(a100, &busy);
    gs__waiter_t *whole = queue("Whole", 0, "A100-40GB", 0, 0);
    gs__queue_pass(d, 0, grant);
    assert_string_equal(granted, "");
    assert_int_equal(whole->wait.kind, GS__WAIT_NO_ROOM);
    assert_int_equal(whole->wait.position, 1);
    assert_int_equal(whole->wait.held, 1); /* the A100 */
    assert_string_equal(why(whole), "GPU 0 (A100-40GB) is in use by 1 lease (30 GiB)");

    queue("small", GIB, NULL, 0, 1);
    gs__waiter_t *five = queue("five", 5 * GIB, "A100", 0, 2);
    gs__queue_pass(d, 10, grant);
    assert_string_equal(granted, "s"); /* on the T4: the A100 is held */
    assert_int_equal(d->gpus[1].mem_leased, GIB);
    assert_int_equal(a100->mem_leased, 30 * GIB);
    assert_int_equal(five->wait.kind, GS__WAIT_BEHIND);
    assert_int_equal(five->wait.position, 2);
    assert_string_equal(why(five), "it fits now only on GPUs held for 1 request ahead of it");

    gs__gpu_give(a100, &busy);
    gs__queue_pass(d, 20, grant);
    assert_string_equal(granted, "sW"); /* the whole A100; five still waits behind it */
    assert_int_equal(a100->mem_leased, 40 * GIB);
    assert_int_equal(five->wait.kind, GS__WAIT_NO_ROOM);
    assert_int_equal(five->wait.position, 1);
    assert_string_equal(
        why(five),
        "GPU 0 (A100-40GB) has 0 B free of the 5 GiB it needs; held by 1 lease (40 GiB)");
}

/* A request that no GPU has room for waits on the GPU it is closest to fitting on; requests
 * behind it that fit elsewhere start. */
static void test_holds_the_closest_gpu(void **state)
{
    (void)state;
    gs__part_t a = {.gpu = 0, .memory = 35 * GIB}, t = {.gpu = 1, .memory = 10 * GIB};
    gs__gpu_take(&d->gpus[0], &a);
    gs__gpu_take(&d->gpus[1], &t);
    gs__waiter_t *big = queue("big", 8 * GIB, NULL, 0, 0); /* T4 lacks 2 GiB, the A100 3 */
    queue("tiny", GIB, NULL, 0, 1);
    gs__queue_pass(d, 5, grant);
    assert_string_equal(granted, "t");
    assert_int_equal(big->wait.held, 2);               /* the T4 */
    assert_int_equal(d->gpus[0].mem_leased, 36 * GIB); /* tiny went to the A100 */
    assert_string_equal(
        why(big), "GPU 1 (T4-16GB) has 6 GiB free of the 8 GiB it needs; held by 1 lease (10 GiB)");
}

/* Aging: one point per queue_aging ms of waiting lifts a low-priority request that waited long
 * enough above a newer one; without aging the priority decides. */
static void test_aging(void **state)
{
    (void)state;
    gs__part_t busy = {.gpu = 0, .memory = 40 * GIB}, t4 = {.gpu = 1, .memory = 16 * GIB};
    gs__gpu_take(&d->gpus[0], &busy);
    gs__gpu_take(&d->gpus[1], &t4);
    gs__waiter_t *low = queue("low", GIB, NULL, -3, 0);
    gs__waiter_t *high = queue("high", GIB, NULL, 0, 4000);
    d->cfg.queue_aging_ms = 0;
    assert_int_equal(gs__queue_priority(d, low, 4000), -3);
    gs__queue_pass(d, 4000, grant);
    assert_int_equal(high->wait.position, 1);
    assert_int_equal(low->wait.position, 2);
    d->cfg.queue_aging_ms = 1000;
    assert_int_equal(gs__queue_priority(d, low, 4000), 1);
    assert_int_equal(gs__queue_priority(d, high, 4000), 0);
    assert_int_equal(gs__queue_priority(d, high, 6500), 2);
    gs__queue_pass(d, 4000, grant);
    assert_int_equal(low->wait.position, 1);
    assert_int_equal(high->wait.position, 2);
    gs__gpu_give(&d->gpus[1], &t4);
    gs__queue_pass(d, 4000, grant);
    assert_string_equal(granted, "lh");
}

/* GPU types: eligibility, and what never fits. */
static void test_gpu_types(void **state)
{
    (void)state;
    gs_lease_request_t req;
    gs_lease_request_init(&req);
    req.kind = GS_LEASE_MEMORY;
    req.memory = GIB;
    assert_int_equal(gs__place_eligible(d->gpus, d->n_gpus, &req), 3);
    assert_int_equal(gs_lease_add_gpu_types(&req, "T4", NULL, 0), 0);
    assert_int_equal(gs__place_eligible(d->gpus, d->n_gpus, &req), 2);
    gs__alloc_t alloc;
    assert_int_equal(gs__place(d->gpus, d->n_gpus, &req, GS__POLICY_BESTFIT, &alloc), 0);
    assert_int_equal(alloc.part[0].gpu, 1);
    req.memory = 20 * GIB;
    char reason[256];
    assert_int_equal(gs__place_possible(d->gpus, d->n_gpus, &req, reason, sizeof(reason)),
                     GS_ENOFIT);
    assert_string_equal(reason, "20 GiB of GPU memory can never fit on this node (the largest GPU "
                                "has 16 GiB)");
    gs_lease_request_init(&req);
    req.kind = GS_LEASE_GPUS;
    req.gpus = 1;
    assert_int_equal(gs_lease_add_gpu_types(&req, "V100,H100", NULL, 0), 0);
    assert_int_equal(gs__place_possible(d->gpus, d->n_gpus, &req, reason, sizeof(reason)),
                     GS_ENOFIT);
    assert_string_equal(reason,
                        "no GPU of this node is a V100 or an H100 (it has NVIDIA A100-40GB, "
                        "NVIDIA T4-16GB)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backfill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holds_the_closest_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_types, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
