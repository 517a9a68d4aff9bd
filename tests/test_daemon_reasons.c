/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the reasons (issue 27, core/reasons.c): a table, each row a node state (leases of
 * the caller, of other users and of root, memory held by processes of no lease, logical GPUs), a
 * request, who asks, and the exact line gpushared gives: why it waits (the queue's pass), or why
 * it can never be served. A node of an A100-40GB (GPU 0) and a T4-16GB (GPU 1), mode shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare/error.h"
#include "core/core.h"
#include "gpu/mode.h"

#define GIB (UINT64_C(1) << 30)
#define ME  1000u /* the caller, unless a row says root */

typedef struct lease_spec {
    unsigned gpu;
    uint64_t memory;
    uint32_t compute; /* thousandths */
    unsigned slots;
    uint32_t uid;
} lease_spec_t;

typedef struct row {
    const char *name;
    lease_spec_t leases[6];
    uint64_t outside[2];       /* held by processes of no lease, per GPU */
    unsigned overprovision[2]; /* 0 = 1 */
    gs_lease_kind_t kind;
    uint64_t memory;  /* --gpu-memory */
    unsigned compute; /* --compute, percent */
    unsigned gpus;    /* --gpus */
    const char *type; /* --gpu-type, NULL none */
    gs_gpu_mode_t mode;
    uint32_t viewer;
    int never; /* the refusal at once (gs__place_possible), else the wait's reason */
    const char *expected;
} row_t;

static const row_t rows[] = {
    {"memory: the caller's lease by id, another user's as a count, processes of no lease",
     {{0, 20 * GIB, 0, 0, ME}, {0, 10 * GIB, 0, 0, 2000}},
     {3 * GIB, 0},
     {0, 0},
     GS_LEASE_MEMORY,
     8 * GIB,
     0,
     0,
     "A100",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 0 (A100-40GB) has 7 GiB free of the 8 GiB it needs; held by your lease 1 (20 GiB), 1 "
     "lease of another user (10 GiB), processes of no lease (3 GiB, gpushare status --processes)"},
    {"memory: root sees every lease with its user",
     {{0, 20 * GIB, 0, 0, ME}, {0, 16 * GIB, 0, 0, 2000}},
     {0, 0},
     {0, 0},
     GS_LEASE_MEMORY,
     8 * GIB,
     0,
     0,
     "A100",
     GS_GPU_MODE_ANY,
     0,
     0,
     "GPU 0 (A100-40GB) has 4 GiB free of the 8 GiB it needs; held by leases 1 (user1000, 20 GiB), "
     "2 (user2000, 16 GiB)"},
    {"memory: more than four of the caller's leases",
     {{0, 8 * GIB, 0, 0, ME},
      {0, 8 * GIB, 0, 0, ME},
      {0, 8 * GIB, 0, 0, ME},
      {0, 8 * GIB, 0, 0, ME},
      {0, 7 * GIB, 0, 0, ME}},
     {0, 0},
     {0, 0},
     GS_LEASE_MEMORY,
     2 * GIB,
     0,
     0,
     "A100",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 0 (A100-40GB) has 1 GiB free of the 2 GiB it needs; held by your leases 1 (8 GiB), 2 "
     "(8 GiB), 3 (8 GiB), 4 (8 GiB), ..."},
    {"compute: the shares promised, by whom",
     {{0, 1 * GIB, 500, 0, ME}, {0, 1 * GIB, 400, 0, 2000}, {0, 1 * GIB, 0, 0, 3000}},
     {0, 0},
     {0, 0},
     GS_LEASE_MEMORY,
     1 * GIB,
     30,
     0,
     "A100",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 0 (A100-40GB) has 10% compute unpromised of the 30% it needs; promised to your lease 1 "
     "(50%), 1 lease of another user (40%)"},
    {"a whole GPU in use by leases",
     {{0, 4 * GIB, 0, 0, 2000}, {0, 4 * GIB, 0, 0, 3000}},
     {0, 0},
     {0, 0},
     GS_LEASE_GPUS,
     0,
     0,
     1,
     "A100",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 0 (A100-40GB) is in use by 2 leases of other users (8 GiB)"},
    {"a whole GPU in use by processes of no lease only (no request ahead)",
     {{0, 0, 0, 0, 0}},
     {0, 6 * GIB},
     {0, 4},
     GS_LEASE_GPUS,
     0,
     0,
     4,
     "T4",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 1 (T4-16GB) is in use by processes of no lease (6 GiB, gpushare status --processes)"},
    {"logical GPUs: the slots free, and what holds the others",
     {{1, 4 * GIB, 250, 1, ME}, {1, 4 * GIB, 250, 1, 2000}},
     {0, 0},
     {0, 4},
     GS_LEASE_GPUS,
     0,
     0,
     3,
     "T4",
     GS_GPU_MODE_ANY,
     ME,
     0,
     "GPU 1 (T4-16GB) has 2 of the 3 logical GPUs it needs free; held by your lease 1 (4 GiB), 1 "
     "lease of another user (4 GiB)"},
    {"a mode only GPUs of other models have",
     {{0, 0, 0, 0, 0}},
     {0, 0},
     {0, 0},
     GS_LEASE_GPUS,
     0,
     0,
     1,
     "A100",
     GS_GPU_MODE_EXCLUSIVE,
     ME,
     1,
     "no GPU of this node that is an A100 is mode exclusive: GPU 0 (A100-40GB) is mode shared"},
    {"a mode no GPU has",
     {{0, 0, 0, 0, 0}},
     {0, 0},
     {0, 0},
     GS_LEASE_GPUS,
     0,
     0,
     1,
     NULL,
     GS_GPU_MODE_EXCLUSIVE,
     ME,
     1,
     "no GPU on this node is mode exclusive"},
    {"more memory than any GPU has",
     {{0, 0, 0, 0, 0}},
     {0, 0},
     {0, 0},
     GS_LEASE_MEMORY,
     64 * GIB,
     0,
     0,
     NULL,
     GS_GPU_MODE_ANY,
     ME,
     1,
     "64 GiB of GPU memory can never fit on this node (the largest GPU has 40 GiB)"},
    {"more logical GPUs than the node has",
     {{0, 0, 0, 0, 0}},
     {0, 0},
     {0, 4},
     GS_LEASE_GPUS,
     0,
     0,
     8,
     NULL,
     GS_GPU_MODE_ANY,
     ME,
     1,
     "8 logical GPUs can never be given on this node (its GPUs offer at most 4 in one lease)"},
    {"models the node does not have",
     {{0, 0, 0, 0, 0}},
     {0, 0},
     {0, 0},
     GS_LEASE_GPUS,
     0,
     0,
     1,
     "H100,L4",
     GS_GPU_MODE_ANY,
     ME,
     1,
     "no GPU of this node is an H100 or an L4 (it has NVIDIA A100-40GB, NVIDIA T4-16GB)"},
};

static gs__daemon_t *d;

static void add_gpu(unsigned index, const char *name, uint64_t total, unsigned k)
{
    gs__gpu_t *g = &d->gpus[d->n_gpus++];
    memset(g, 0, sizeof(*g));
    g->index = index;
    snprintf(g->uuid, sizeof(g->uuid), "GPU-%u", index);
    snprintf(g->name, sizeof(g->name), "%s", name);
    g->total = total;
    gs__gpu_set_mode(g, GS_GPU_MODE_SHARED);
    g->overprovision = k > 0 ? k : 1;
}

/* The node of a row: its GPUs, leases (ids 1, 2, ... in order) and what is held outside them. */
static void set_up(const row_t *r)
{
    d = calloc(1, sizeof(*d));
    assert_non_null(d);
    gs__queue_init(&d->queue);
    gs__config_defaults(&d->cfg);
    d->policy = GS__POLICY_BESTFIT;
    add_gpu(0, "NVIDIA A100-40GB", 40 * GIB, r->overprovision[0]);
    add_gpu(1, "NVIDIA T4-16GB", 16 * GIB, r->overprovision[1]);
    for (unsigned i = 0; i < 2; i++)
        d->gpus[i].outside = r->outside[i];
    for (unsigned i = 0; i < 6 && r->leases[i].memory > 0; i++) {
        gs__lease_t *lease = calloc(1, sizeof(*lease));
        assert_non_null(lease);
        const lease_spec_t *s = &r->leases[i];
        lease->rec.id = i + 1;
        lease->rec.uid = s->uid;
        snprintf(lease->rec.user, sizeof(lease->rec.user), "user%u", (unsigned)s->uid);
        lease->alloc.n = 1;
        lease->alloc.part[0] = (gs__part_t){
            .gpu = s->gpu, .memory = s->memory, .compute = s->compute, .slots = s->slots};
        gs__lease_link(d, lease);
        gs__lease_take(d, &lease->alloc);
    }
}

static void tear_down(void)
{
    while (d->leases != NULL) {
        gs__lease_t *lease = d->leases;
        d->leases = lease->next;
        free(lease);
    }
    while (d->queue.head != NULL) {
        gs__waiter_t *w = d->queue.head;
        gs__queue_remove(&d->queue, w);
        free(w);
    }
    gs__users_free(&d->users); /* the lease counters gs__lease_link made */
    free(d);
}

static void request_of(const row_t *r, gs_lease_request_t *req)
{
    gs_lease_request_init(req);
    req->kind = r->kind;
    req->memory = r->memory;
    req->compute = r->compute;
    req->gpus = r->gpus;
    req->mode = r->mode;
    if (r->type != NULL)
        assert_int_equal(gs_lease_add_gpu_types(req, r->type, NULL, 0), 0);
}

static void never_granted(gs__daemon_t *daemon, gs__waiter_t *w, const gs__alloc_t *alloc)
{
    (void)daemon;
    (void)alloc;
    fail_msg("request \"%s\" was granted", w->req.name);
}

/* The line for a row: the refusal at once, or the wait's reason after a pass of the queue. */
static void reason_of(const row_t *r, char *buf, size_t len)
{
    gs_lease_request_t req;
    request_of(r, &req);
    if (r->never) {
        assert_int_not_equal(gs__place_possible(d->gpus, d->n_gpus, &req, buf, len), 0);
        return;
    }
    char why[512];
    assert_int_equal(gs__place_possible(d->gpus, d->n_gpus, &req, why, sizeof(why)), 0);
    gs__waiter_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->req = req;
    w->uid = r->viewer;
    snprintf(w->req.name, sizeof(w->req.name), "%s", "row");
    gs__queue_push(&d->queue, w);
    gs__queue_pass(d, 0, never_granted);
    gs__reason_wait(d, w, buf, len);
}

static void test_each_reason(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char got[512];
        set_up(&rows[i]);
        reason_of(&rows[i], got, sizeof(got));
        tear_down();
        if (strcmp(got, rows[i].expected) != 0) {
            print_error("%s:\n  expected \"%s\"\n  got      \"%s\"\n", rows[i].name,
                        rows[i].expected, got);
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
