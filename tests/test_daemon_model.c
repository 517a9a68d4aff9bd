/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the lease model: fit rules, placement and the wait queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "core/model.h"
#include "gpu/mode.h"
#include "core/place.h"
#include "core/queue.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static gs__gpu_t gpu(unsigned index, uint64_t total, uint64_t reserve, unsigned k)
{
    gs__gpu_t g;
    memset(&g, 0, sizeof(g));
    g.index = index;
    snprintf(g.uuid, sizeof(g.uuid), "GPU-%u", index);
    g.total = total;
    g.reserve = reserve;
    gs__gpu_set_mode(&g, GS_GPU_MODE_SHARED);
    g.overprovision = k;
    return g;
}

static gs_lease_request_t memory_req(uint64_t bytes, uint32_t compute)
{
    gs_lease_request_t r;
    gs_lease_request_init(&r);
    r.kind = GS_LEASE_MEMORY;
    r.memory = bytes;
    r.compute = compute;
    return r;
}

static gs_lease_request_t fraction_req(uint32_t milli)
{
    gs_lease_request_t r;
    gs_lease_request_init(&r);
    r.kind = GS_LEASE_FRACTION;
    r.fraction_milli = milli;
    return r;
}

static gs_lease_request_t gpus_req(uint32_t n)
{
    gs_lease_request_t r;
    gs_lease_request_init(&r);
    r.kind = GS_LEASE_GPUS;
    r.gpus = n;
    return r;
}

/* Places req and takes it on the chosen GPUs; returns gs__place's result. */
static int take(gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, gs__alloc_t *alloc)
{
    int result = gs__place(gpus, n, req, GS__POLICY_BESTFIT, alloc);
    if (result == 0) {
        for (unsigned i = 0; i < alloc->n; i++)
            gs__gpu_take(&gpus[alloc->part[i].gpu], &alloc->part[i]);
    }
    return result;
}

static void test_slices(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 2 * GIB, 4);
    assert_int_equal(gs__gpu_leasable(&g), 78 * GIB);
    assert_int_equal(gs__slot_memory(&g), 78 * GIB / 4);
    assert_int_equal(gs__slot_compute(&g), 250);
    gs__part_t p;
    gs_lease_request_t r = fraction_req(250);
    gs__part_for(&g, &r, 0, &p);
    assert_int_equal(p.memory, 78 * GIB / 4);
    assert_int_equal(p.compute, 250);
    assert_int_equal(gs__part_compute_percent(&p), 25);
    r = gpus_req(4);
    gs__part_for(&g, &r, 4, &p);
    assert_int_equal(p.memory, 78 * GIB);
    assert_int_equal(p.compute, 1000);
    assert_int_equal(p.slots, 4);
    assert_int_equal(gs__part_compute_percent(&p), 0); /* the whole GPU: not limited */
    r = memory_req(4 * GIB, 30);
    gs__part_for(&g, &r, 0, &p);
    assert_int_equal(p.memory, 4 * GIB);
    assert_int_equal(p.compute, 300);
    assert_int_equal(gs__part_compute_percent(&p), 30);
    r = fraction_req(1); /* 0.001 GPU still gets a 1 % share */
    gs__part_for(&g, &r, 0, &p);
    assert_int_equal(gs__part_compute_percent(&p), 1);
    gs__gpu_t three = gpu(0, 30 * GIB, 0, 3);
    assert_int_equal(gs__slot_compute(&three), 333);
    /* A reserve above the memory leaves nothing to lease. */
    gs__gpu_t tiny = gpu(0, GIB, 2 * GIB, 1);
    assert_int_equal(gs__gpu_leasable(&tiny), 0);
}

/* The driver's reserved memory is never leased; memory held outside the leases (the watchdog's
 * measure: unmanaged processes, leases over their limits) is not offered until it is freed,
 * and slices keep their size meanwhile. */
static void test_driver_reserved_and_outside(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, UINT64_C(85520809984), 0, 4);
    g.driver_reserved = UINT64_C(503316480);
    assert_int_equal(gs__gpu_leasable(&g), UINT64_C(85017493504)); /* CUDA's total */
    assert_int_equal(gs__slot_memory(&g), UINT64_C(85017493504) / 4);
    g.outside = 10 * GIB;
    assert_int_equal(gs__gpu_taken(&g), 10 * GIB);
    assert_int_equal(gs__gpu_mem_free(&g), UINT64_C(85017493504) - 10 * GIB);
    assert_int_equal(gs__slot_memory(&g), UINT64_C(85017493504) / 4);
    gs__part_t p = {.memory = gs__gpu_mem_free(&g)};
    assert_true(gs__gpu_fits(&g, GS_LEASE_MEMORY, &p));
    p.memory++;
    assert_false(gs__gpu_fits(&g, GS_LEASE_MEMORY, &p));
    /* A whole logical GPU of four no longer fits... */
    assert_int_equal(gs__gpu_free_slots(&g), 3);
    /* ...and the placement sees the same free memory. */
    gs_lease_request_t r = memory_req(gs__gpu_mem_free(&g), 0);
    gs__alloc_t alloc;
    assert_int_equal(take(&g, 1, &r, &alloc), 0);
    assert_int_equal(gs__gpu_mem_free(&g), 0);
    g.outside = 0; /* the unmanaged process went */
    assert_int_equal(gs__gpu_mem_free(&g), 10 * GIB);
    /* An exclusive GPU is not given whole while something runs outside the leases. */
    gs__gpu_t x = gpu(1, 80 * GIB, 0, 1);
    gs__gpu_set_mode(&x, GS_GPU_MODE_EXCLUSIVE);
    gs__part_t whole = {.slots = 1, .memory = 80 * GIB};
    assert_true(gs__gpu_fits(&x, GS_LEASE_GPUS, &whole));
    x.outside = 1;
    assert_false(gs__gpu_fits(&x, GS_LEASE_GPUS, &whole));
}

static void test_memory_never_exceeds_leasable(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 0, 1);
    gs__alloc_t a;
    gs_lease_request_t r20 = memory_req(20 * GIB, 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(take(&g, 1, &r20, &a), 0);
    assert_int_equal(g.mem_leased, 80 * GIB);
    gs_lease_request_t one = memory_req(1, 0);
    assert_int_equal(take(&g, 1, &one, &a), GS_ENOFIT);
    gs__gpu_give(&g, &a.part[0]);
    assert_int_equal(g.mem_leased, 60 * GIB);
    assert_int_equal(g.n_leases, 3);
    assert_int_equal(take(&g, 1, &one, &a), 0);
}

static void test_compute_is_admitted(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 0, 1);
    gs__alloc_t a;
    gs_lease_request_t r = memory_req(GIB, 60);
    assert_int_equal(take(&g, 1, &r, &a), 0);
    r.compute = 50;
    assert_int_equal(take(&g, 1, &r, &a), GS_ENOFIT);
    r.compute = 40;
    assert_int_equal(take(&g, 1, &r, &a), 0);
    assert_int_equal(g.compute_leased, 1000);
    r.compute = 0; /* no guarantee: memory alone decides */
    assert_int_equal(take(&g, 1, &r, &a), 0);
}

static void test_whole_gpu_is_exclusive_of_others(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, 80 * GIB, 0, 1), gpu(1, 80 * GIB, 0, 1)};
    gs__alloc_t a, b;
    gs_lease_request_t small = memory_req(MIB, 0);
    assert_int_equal(take(gs, 2, &small, &a), 0);
    assert_int_equal(a.part[0].gpu, 0);
    gs_lease_request_t whole = gpus_req(1);
    assert_int_equal(take(gs, 2, &whole, &b), 0);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.part[0].gpu, 1); /* GPU 0 holds a lease: not whole any more */
    assert_int_equal(b.part[0].memory, 80 * GIB);
    assert_int_equal(take(gs, 2, &whole, &b), GS_ENOFIT);
    assert_int_equal(take(gs, 2, &small, &b), 0);
    assert_int_equal(b.part[0].gpu, 0); /* GPU 1 is held whole */
}

static void test_overprovision_four_logical(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 0, 4);
    gs__alloc_t a[5];
    gs_lease_request_t r = gpus_req(1);
    assert_int_equal(gs__gpu_free_slots(&g), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(take(&g, 1, &r, &a[i]), 0);
        assert_int_equal(a[i].n, 1);
        assert_int_equal(a[i].part[0].slots, 1);
        assert_int_equal(a[i].part[0].memory, 20 * GIB);
        assert_int_equal(a[i].part[0].compute, 250);
    }
    assert_int_equal(gs__gpu_free_slots(&g), 0);
    assert_int_equal(take(&g, 1, &r, &a[4]), GS_ENOFIT);
    gs__gpu_give(&g, &a[2].part[0]);
    assert_int_equal(take(&g, 1, &r, &a[4]), 0);
}

static void test_slots_and_fractions_mix(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 0, 4);
    gs__alloc_t a;
    gs_lease_request_t frac = fraction_req(300); /* 24 GiB, 30 % */
    assert_int_equal(take(&g, 1, &frac, &a), 0);
    /* 56 GiB and 70 % are left: two whole 20 GiB / 25 % slices. */
    assert_int_equal(gs__gpu_free_slots(&g), 2);
    gs_lease_request_t two = gpus_req(2);
    assert_int_equal(take(&g, 1, &two, &a), 0);
    assert_int_equal(a.part[0].slots, 2);
    assert_int_equal(a.part[0].memory, 40 * GIB);
    assert_int_equal(gs__gpu_free_slots(&g), 0);
    gs_lease_request_t rest = memory_req(16 * GIB, 20);
    assert_int_equal(take(&g, 1, &rest, &a), 0);
    assert_int_equal(g.mem_leased, 80 * GIB);
}

static void test_multi_gpu_slots(void **state)
{
    (void)state;
    gs__gpu_t gs[3] = {gpu(0, 80 * GIB, 0, 2), gpu(1, 80 * GIB, 0, 2), gpu(2, 40 * GIB, 0, 1)};
    gs__alloc_t a;
    /* 2 logical GPUs fit on one K=2 GPU: the fewest GPUs win. */
    gs_lease_request_t two = gpus_req(2);
    assert_int_equal(take(gs, 3, &two, &a), 0);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.part[0].slots, 2);
    /* 3 logical GPUs: 3 GPUs of one kind with 1 each, or 1 with 3: neither exists now... */
    gs_lease_request_t three = gpus_req(3);
    assert_int_equal(take(gs, 3, &three, &a), GS_ENOFIT);
    /* ...and never: K=2 GPUs number two, the K=1 GPU is of another kind. */
    char why[256];
    assert_int_equal(gs__place_possible(gs, 3, &three, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "3 logical GPUs can never be given on this node (its GPUs offer at "
                             "most 4 in one lease)");
    /* Whole GPUs (K=1) across GPUs: only GPU 2 is K=1, so --gpus 1 on an empty K=2 GPU. */
    gs_lease_request_t one = gpus_req(1);
    assert_int_equal(take(gs, 3, &one, &a), 0);
    assert_int_equal(a.part[0].gpu, 1); /* the first kind (K=2) with room: GPU 1 */
}

/* Issue 27: --gpus 1 gets the smallest logical GPU that fits (a quarter of an A100, not a whole
 * H100 that a larger request may need); spread the largest. */
static void test_smallest_logical_gpu(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, 80 * GIB, 0, 1), gpu(1, 40 * GIB, 0, 4)};
    gs__alloc_t a;
    gs_lease_request_t one = gpus_req(1);
    assert_int_equal(take(gs, 2, &one, &a), 0);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.part[0].gpu, 1);
    assert_int_equal(a.part[0].slots, 1);
    assert_int_equal(a.part[0].memory, 10 * GIB);
    assert_int_equal(gs__place(gs, 2, &one, GS__POLICY_SPREAD, &a), 0);
    assert_int_equal(a.part[0].gpu, 0);
    /* Two logical GPUs: still half an A100 before the whole H100. */
    gs_lease_request_t two = gpus_req(2);
    assert_int_equal(take(gs, 2, &two, &a), 0);
    assert_int_equal(a.part[0].gpu, 1);
    assert_int_equal(a.part[0].memory, 20 * GIB);
    /* Three more: the A100 has one slot left, the H100 is one: no GPUs of one kind give three. */
    gs_lease_request_t three = gpus_req(3);
    assert_int_equal(take(gs, 2, &three, &a), GS_ENOFIT);
}

static void test_bestfit_and_spread(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, 80 * GIB, 0, 1), gpu(1, 80 * GIB, 0, 1)};
    gs__alloc_t a;
    gs_lease_request_t r = memory_req(10 * GIB, 0);
    assert_int_equal(take(gs, 2, &r, &a), 0);
    assert_int_equal(a.part[0].gpu, 0);
    assert_int_equal(take(gs, 2, &r, &a), 0);
    assert_int_equal(a.part[0].gpu, 0); /* best fit packs */
    assert_int_equal(gs__place(gs, 2, &r, GS__POLICY_SPREAD, &a), 0);
    assert_int_equal(a.part[0].gpu, 1); /* spread takes the emptiest */
    gs_lease_request_t big = memory_req(70 * GIB, 0);
    assert_int_equal(gs__place(gs, 2, &big, GS__POLICY_BESTFIT, &a), 0);
    assert_int_equal(a.part[0].gpu, 1); /* only GPU 1 has room */
}

/* gpushare and fgd ask the placement engine: it chooses among the GPUs that fit, and a request
 * only one GPU can take goes there. */
static void test_engine_policies(void **state)
{
    (void)state;
    const gs__policy_t policies[] = {GS__POLICY_GPUSHARE, GS__POLICY_FGD};
    for (int p = 0; p < 2; p++) {
        gs__gpu_t gs[3] = {gpu(0, 80 * GIB, 0, 1), gpu(1, 80 * GIB, 0, 1), gpu(2, 40 * GIB, 0, 1)};
        gs__alloc_t a;
        for (int i = 0; i < 12; i++) {
            gs_lease_request_t r = memory_req((uint64_t)(5 + i % 3 * 5) * GIB, 0);
            assert_int_equal(gs__place(gs, 3, &r, policies[p], &a), 0);
            assert_int_equal(a.n, 1);
            assert_true(gs__gpu_fits(&gs[a.part[0].gpu], r.kind, &a.part[0]));
            gs__gpu_take(&gs[a.part[0].gpu], &a.part[0]);
        }
        uint64_t free0 = gs__gpu_leasable(&gs[0]) - gs[0].mem_leased;
        uint64_t free1 = gs__gpu_leasable(&gs[1]) - gs[1].mem_leased;
        uint64_t free2 = gs__gpu_leasable(&gs[2]) - gs[2].mem_leased;
        uint64_t most = free0 > free1 ? free0 : free1;
        most = most > free2 ? most : free2;
        gs_lease_request_t big = memory_req(most, 0);
        assert_int_equal(gs__place(gs, 3, &big, policies[p], &a), 0);
        assert_int_equal(gs__gpu_leasable(&gs[a.part[0].gpu]) - gs[a.part[0].gpu].mem_leased, most);
    }
}

static void test_never_fits(void **state)
{
    (void)state;
    gs__gpu_t gs[2] = {gpu(0, 80 * GIB, 0, 1), gpu(1, 80 * GIB, GIB, 1)};
    char why[256];
    gs_lease_request_t r = memory_req(100 * GIB, 0);
    assert_int_equal(gs__place_possible(gs, 2, &r, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "100 GiB of GPU memory can never fit on this node (the largest GPU "
                             "has 80 GiB)");
    /* What is not leasable is said as what it is: the driver's part is never the reserve's. */
    gs__gpu_t driver = gpu(0, 80 * GIB, 0, 1);
    driver.driver_reserved = 480 * MIB;
    assert_int_equal(gs__place_possible(&driver, 1, &r, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "100 GiB of GPU memory can never fit on this node (the largest GPU "
                             "has 79.53 GiB leasable: its 80 GiB less 480 MiB its driver keeps)");
    driver.reserve = 2 * GIB;
    assert_int_equal(gs__place_possible(&driver, 1, &r, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "100 GiB of GPU memory can never fit on this node (the largest GPU "
                             "has 77.53 GiB leasable: its 80 GiB less 480 MiB its driver keeps and "
                             "2 GiB of reserve)");
    r = memory_req(80 * GIB, 0);
    assert_int_equal(gs__place_possible(gs, 2, &r, why, sizeof(why)), 0);
    gs_lease_request_t three = gpus_req(3);
    assert_int_equal(gs__place_possible(gs, 2, &three, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "3 logical GPUs can never be given on this node (its GPUs offer at "
                             "most 2 in one lease)");
    /* A full node is not "never". */
    gs__alloc_t a;
    gs_lease_request_t two = gpus_req(2);
    assert_int_equal(take(gs, 2, &two, &a), 0);
    assert_int_equal(a.n, 2);
    assert_int_equal(gs__place_possible(gs, 2, &two, why, sizeof(why)), 0);
}

static void test_exclusive_mode(void **state)
{
    (void)state;
    gs__gpu_t g = gpu(0, 80 * GIB, 0, 1);
    gs__gpu_set_mode(&g, GS_GPU_MODE_EXCLUSIVE);
    gs__alloc_t a;
    gs_lease_request_t small = memory_req(GIB, 0);
    assert_int_equal(take(&g, 1, &small, &a), GS_ENOFIT);
    char why[256];
    assert_int_equal(gs__place_possible(&g, 1, &small, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "no GPU on this node serves fractional leases (they need mode = "
                             "shared, mps or mig; use --gpus for whole GPUs)");
    gs_lease_request_t one = gpus_req(1);
    assert_int_equal(take(&g, 1, &one, &a), 0);
    assert_int_equal(take(&g, 1, &one, &a), GS_ENOFIT);
}

static gs_lease_request_t pinned(gs_lease_request_t r, unsigned n, const unsigned *at)
{
    r.n_pinned = n;
    for (unsigned i = 0; i < n; i++)
        r.pinned[i] = (uint8_t)at[i];
    return r;
}

/* "gpus_at": a pinned request takes exactly its GPUs, in its order, or does not fit at all. */
static void test_pinned_placement(void **state)
{
    (void)state;
    /* NVML indexes 0 and 1 stored in reverse: placement goes by index, not by position. */
    gs__gpu_t gs[2] = {gpu(1, 80 * GIB, 0, 1), gpu(0, 80 * GIB, 0, 1)};
    gs__alloc_t a;
    static const unsigned at0[] = {0}, at1[] = {1}, at10[] = {1, 0}, at5[] = {5};
    /* Best fit alone would pick the fuller GPU (index 1 after this); pinning overrides it. */
    gs_lease_request_t r10 = memory_req(10 * GIB, 0);
    gs_lease_request_t on1 = pinned(r10, 1, at1);
    assert_int_equal(take(gs, 2, &on1, &a), 0);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.part[0].gpu, 0); /* position 0 holds NVML index 1 */
    gs_lease_request_t on0 = pinned(r10, 1, at0);
    assert_int_equal(take(gs, 2, &on0, &a), 0);
    assert_int_equal(a.part[0].gpu, 1);
    assert_int_equal(gs[0].mem_leased, 10 * GIB);
    assert_int_equal(gs[1].mem_leased, 10 * GIB);

    /* Several GPUs: the request's share on each, in the given (CUDA) order. */
    gs_lease_request_t half = pinned(fraction_req(500), 2, at10);
    assert_int_equal(take(gs, 2, &half, &a), 0);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.part[0].gpu, 0);
    assert_int_equal(a.part[1].gpu, 1);
    assert_int_equal(a.part[0].memory, 40 * GIB);
    assert_int_equal(a.part[0].compute, 500);
    assert_int_equal(gs[0].mem_leased, 50 * GIB);
    assert_int_equal(gs[1].compute_leased, 500);

    /* GPU 1 has 30 GiB left: 31 GiB pinned there does not fit now, though GPU 0 could not
     * hold it either; 30 GiB does; all-or-nothing over several GPUs. */
    gs_lease_request_t big = pinned(memory_req(31 * GIB, 0), 1, at1);
    assert_int_equal(gs__place(gs, 2, &big, GS__POLICY_BESTFIT, &a), GS_ENOFIT);
    char why[256];
    assert_int_equal(gs__place_possible(gs, 2, &big, why, sizeof(why)), 0); /* waits */
    gs_lease_request_t both = pinned(memory_req(31 * GIB, 0), 2, at10);
    assert_int_equal(gs__place(gs, 2, &both, GS__POLICY_BESTFIT, &a), GS_ENOFIT);
    assert_int_equal(gs[1].mem_leased, 50 * GIB); /* nothing taken by the failed attempt */
    gs_lease_request_t fits = pinned(memory_req(30 * GIB, 0), 1, at1);
    assert_int_equal(take(gs, 2, &fits, &a), 0);
    gs_lease_request_t one = pinned(memory_req(1, 0), 1, at1);
    assert_int_equal(gs__place(gs, 2, &one, GS__POLICY_BESTFIT, &a), GS_ENOFIT);
    one = pinned(memory_req(1, 0), 1, at0);
    assert_int_equal(gs__place(gs, 2, &one, GS__POLICY_BESTFIT, &a), 0);

    /* Never: a GPU the node does not have, or more than the GPU can ever hold. */
    gs_lease_request_t missing = pinned(memory_req(GIB, 0), 1, at5);
    assert_int_equal(gs__place_possible(gs, 2, &missing, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "this node has no GPU 5 (\"gpus_at\")");
    gs_lease_request_t huge = pinned(memory_req(81 * GIB, 0), 2, at10);
    assert_int_equal(gs__place_possible(gs, 2, &huge, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "this request can never fit on GPU 1 (shared mode, 80 GiB leasable; "
                             "the request takes 81 GiB of it)");
}

/* Pinned --gpus N: N / n slots on each named GPU, never more than K. */
static void test_pinned_slots(void **state)
{
    (void)state;
    gs__gpu_t gs[3] = {gpu(0, 80 * GIB, 0, 4), gpu(1, 80 * GIB, 0, 4), gpu(2, 80 * GIB, 0, 1)};
    gs__alloc_t a;
    static const unsigned at01[] = {0, 1}, at2[] = {2}, at1[] = {1};
    gs_lease_request_t four = pinned(gpus_req(4), 2, at01);
    assert_int_equal(take(gs, 3, &four, &a), 0);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.part[0].slots, 2);
    assert_int_equal(a.part[1].slots, 2);
    assert_int_equal(a.part[0].memory, 40 * GIB);
    gs_lease_request_t whole = pinned(gpus_req(1), 1, at2);
    assert_int_equal(take(gs, 3, &whole, &a), 0);
    assert_int_equal(a.part[0].gpu, 2);
    assert_int_equal(a.part[0].memory, 80 * GIB);
    assert_int_equal(gs__place(gs, 3, &whole, GS__POLICY_BESTFIT, &a), GS_ENOFIT);
    gs_lease_request_t five = pinned(gpus_req(5), 1, at1); /* K = 4 */
    char why[256];
    assert_int_equal(gs__place_possible(gs, 3, &five, why, sizeof(why)), GS_ENOFIT);
    assert_string_equal(why, "GPU 1 can never give 5 logical GPUs to one lease (shared mode, "
                             "overprovision 4)");
}

static gs__waiter_t waiter(int priority)
{
    gs__waiter_t w;
    memset(&w, 0, sizeof(w));
    gs_lease_request_init(&w.req);
    w.req.priority = priority;
    return w;
}

static void test_queue_fifo_within_priority(void **state)
{
    (void)state;
    gs__queue_t q;
    gs__queue_init(&q);
    gs__waiter_t a = waiter(0), b = waiter(0), c = waiter(5), d = waiter(-3), e = waiter(5),
                 f = waiter(0);
    gs__queue_push(&q, &a);
    gs__queue_push(&q, &b);
    gs__queue_push(&q, &c);
    gs__queue_push(&q, &d);
    gs__queue_push(&q, &e);
    gs__queue_push(&q, &f);
    /* Service order: c e (priority 5, FIFO), a b f (0), d (-3). */
    gs__waiter_t *order[] = {&c, &e, &a, &b, &f, &d};
    gs__waiter_t *it = q.head;
    for (int i = 0; i < 6; i++, it = it->next) {
        assert_ptr_equal(it, order[i]);
        assert_int_equal(gs__queue_position(&q, order[i]), i + 1);
    }
    assert_null(it);
    assert_ptr_equal(q.tail, &d);
    assert_int_equal(q.length, 6);
    assert_true(a.seq < b.seq && b.seq < f.seq);
    gs__queue_remove(&q, &c);
    gs__queue_remove(&q, &d);
    assert_ptr_equal(q.head, &e);
    assert_ptr_equal(q.tail, &f);
    assert_int_equal(gs__queue_position(&q, &f), 4);
    gs__queue_remove(&q, &e);
    gs__queue_remove(&q, &a);
    gs__queue_remove(&q, &b);
    gs__queue_remove(&q, &f);
    assert_null(q.head);
    assert_null(q.tail);
    assert_int_equal(q.length, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_driver_reserved_and_outside),
        cmocka_unit_test(test_memory_never_exceeds_leasable),
        cmocka_unit_test(test_compute_is_admitted),
        cmocka_unit_test(test_whole_gpu_is_exclusive_of_others),
        cmocka_unit_test(test_overprovision_four_logical),
        cmocka_unit_test(test_slots_and_fractions_mix),
        cmocka_unit_test(test_multi_gpu_slots),
        cmocka_unit_test(test_smallest_logical_gpu),
        cmocka_unit_test(test_bestfit_and_spread),
        cmocka_unit_test(test_engine_policies),
        cmocka_unit_test(test_never_fits),
        cmocka_unit_test(test_exclusive_mode),
        cmocka_unit_test(test_pinned_placement),
        cmocka_unit_test(test_pinned_slots),
        cmocka_unit_test(test_queue_fifo_within_priority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
