/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the MIG planner (include/gpushare/mig.h): built-in tables, profile sizing,
 * placement that keeps large profiles possible, reuse and lazy destruction of idle instances. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gpushare/error.h"
#include "gpushare/mig.h"

#define GIB (UINT64_C(1) << 30)

static gs_mig_catalog_t catalog(const char *model)
{
    gs_mig_catalog_t cat;
    assert_int_equal(gs_mig_catalog_builtin(model, &cat), 0);
    return cat;
}

static int prof(const gs_mig_catalog_t *cat, const char *name)
{
    int p = gs_mig_profile_find(cat, name);
    assert_true(p >= 0);
    return p;
}

static const char *name_for(const gs_mig_catalog_t *cat, uint64_t memory, uint32_t compute)
{
    int p = gs_mig_profile_for(cat, memory, compute);
    return p >= 0 ? cat->profiles[p].name : "none";
}

/* Plans and applies one more instance of profile name; returns its start. */
static uint32_t add(const gs_mig_catalog_t *cat, gs_mig_layout_t *layout, const char *name)
{
    gs_mig_plan_t plan;
    int p = prof(cat, name);
    assert_int_equal(gs_mig_plan(cat, layout, p, &plan), 0);
    int at = gs_mig_apply(layout, p, &plan);
    assert_true(at >= 0);
    return layout->inst[at].start;
}

static void test_builtin_tables(void **state)
{
    (void)state;
    gs_mig_catalog_t a100 = catalog("A100-40GB");
    assert_int_equal(a100.compute_slices, 7);
    assert_int_equal(a100.memory_slots, 8);
    assert_int_equal(a100.n_profiles, 7);
    const gs_mig_profile_t *p = &a100.profiles[prof(&a100, "3g.20gb")];
    assert_int_equal(p->id, 9);
    assert_int_equal(p->compute, 3);
    assert_int_equal(p->size, 4);
    assert_int_equal(p->max_instances, 2);
    assert_int_equal(p->starts, 0x11);
    assert_int_equal(p->memory_bytes, 20 * GIB);
    assert_int_equal(a100.profiles[prof(&a100, "MIG 1g.5gb")].memory_bytes, 5 * GIB);
    assert_true(a100.profiles[prof(&a100, "1g.5gb+me")].media);
    gs_mig_catalog_t cat;
    assert_int_equal(gs_mig_catalog_builtin("L4-24GB", &cat), GS_ENOSYS);
    assert_int_equal(gs_mig_catalog_builtin("A100", &cat), GS_ENOENT);
    char models[256];
    gs_mig_builtin_models(models, sizeof(models));
    assert_string_equal(models, "A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB");
}

static void test_smallest_profile(void **state)
{
    (void)state;
    gs_mig_catalog_t a100 = catalog("A100-40GB");
    assert_string_equal(name_for(&a100, 4 * GIB, 0), "1g.5gb");
    assert_string_equal(name_for(&a100, 5 * GIB, 0), "1g.5gb");
    assert_string_equal(name_for(&a100, 8 * GIB, 0), "1g.10gb");
    assert_string_equal(name_for(&a100, 12 * GIB, 0), "3g.20gb");
    assert_string_equal(name_for(&a100, 4 * GIB, 20), "2g.10gb"); /* 20 % of 7 slices: 2 */
    assert_string_equal(name_for(&a100, 4 * GIB, 30), "3g.20gb"); /* 30 %: 3 slices */
    assert_string_equal(name_for(&a100, 21 * GIB, 0), "7g.40gb");
    assert_string_equal(name_for(&a100, 41 * GIB, 0), "none");
    gs_mig_catalog_t h100 = catalog("H100-80GB");
    assert_string_equal(name_for(&h100, 4 * GIB, 0), "1g.10gb");
    assert_string_equal(name_for(&h100, 12 * GIB, 0), "1g.20gb");
    assert_int_equal(gs_mig_compute_percent(&h100, prof(&h100, "3g.40gb")), 43);
}

/* Two 1g.5gb instances go where they leave 4g.20gb and 3g.20gb possible: the upper half. */
static void test_placement_keeps_large_profiles(void **state)
{
    (void)state;
    gs_mig_catalog_t cat = catalog("A100-40GB");
    gs_mig_layout_t layout = {0};
    assert_int_equal(add(&cat, &layout, "1g.5gb"), 6);
    assert_int_equal(add(&cat, &layout, "1g.5gb"), 4);
    assert_int_equal(gs_mig_room(&cat, &layout, prof(&cat, "4g.20gb")), 1);
    assert_int_equal(add(&cat, &layout, "3g.20gb"), 0);
    char drawn[256];
    gs_mig_draw(&cat, &layout, drawn, sizeof(drawn));
    assert_string_equal(drawn, "[ 0-3: 3g.20gb ][ 4: 1g.5gb ][ 5: free ][ 6: 1g.5gb ][ 7: free ]");
    /* Lowest-start placement would have put them at 0 and 1, ruling out 4g.20gb. */
    gs_mig_layout_t naive = {.n = 2,
                             .inst = {{.profile = prof(&cat, "1g.5gb"), .start = 0, .busy = 1},
                                      {.profile = prof(&cat, "1g.5gb"), .start = 1, .busy = 1}}};
    assert_int_equal(gs_mig_room(&cat, &naive, prof(&cat, "4g.20gb")), 0);
}

static void test_reuse_idle_instance(void **state)
{
    (void)state;
    gs_mig_catalog_t cat = catalog("A100-40GB");
    gs_mig_layout_t layout = {.n = 2,
                              .inst = {{.profile = prof(&cat, "2g.10gb"), .start = 0, .busy = 1},
                                       {.profile = prof(&cat, "2g.10gb"), .start = 2}}};
    gs_mig_plan_t plan;
    assert_int_equal(gs_mig_plan(&cat, &layout, prof(&cat, "2g.10gb"), &plan), 0);
    assert_int_equal(plan.reuse, 1);
    assert_int_equal(gs_mig_apply(&layout, prof(&cat, "2g.10gb"), &plan), 1);
    assert_int_equal(layout.inst[1].busy, 1);
    assert_int_equal(layout.n, 2);
}

/* An idle instance is destroyed only when its slots are needed, and as few as possible. */
static void test_evict_idle_only_when_needed(void **state)
{
    (void)state;
    gs_mig_catalog_t cat = catalog("A100-40GB");
    int one = prof(&cat, "1g.5gb"), three = prof(&cat, "3g.20gb");
    gs_mig_layout_t layout = {0};
    for (uint32_t s = 0; s < 7; s++)
        layout.inst[layout.n++] = (gs_mig_instance_t){.profile = one, .start = s};
    gs_mig_plan_t plan;
    /* The same profile reuses one. */
    assert_int_equal(gs_mig_plan(&cat, &layout, one, &plan), 0);
    assert_int_equal(plan.reuse, 0);
    /* 3g.20gb: at slot 4 it destroys the three idle instances 4, 5 and 6 (at 0: four). */
    assert_int_equal(gs_mig_plan(&cat, &layout, three, &plan), 0);
    assert_int_equal(plan.reuse, -1);
    assert_int_equal(plan.start, 4);
    assert_int_equal(plan.evict, 0x70);
    assert_int_equal(gs_mig_apply(&layout, three, &plan), 4);
    assert_int_equal(layout.n, 5);
    /* Busy instances are never destroyed: with 0-3 busy nothing else of 3g fits. */
    for (unsigned i = 0; i < 4; i++)
        layout.inst[i].busy = 1;
    assert_int_equal(gs_mig_plan(&cat, &layout, three, &plan), GS_ENOFIT);
    /* A free placement is preferred to any eviction. */
    gs_mig_layout_t half = {.n = 1, .inst = {{.profile = three, .start = 0}}};
    assert_int_equal(gs_mig_plan(&cat, &half, prof(&cat, "2g.10gb"), &plan), 0);
    assert_int_equal(plan.evict, 0);
    assert_int_equal(plan.start, 4);
}

/* A placement chosen elsewhere (gpushare-k8s: the Kubernetes scheduler's): exactly there, an
 * idle instance of the profile there taken as it is, idle ones in the way destroyed, busy ones
 * never. */
static void test_plan_at(void **state)
{
    (void)state;
    gs_mig_catalog_t cat = catalog("H100-80GB");
    int one = prof(&cat, "1g.10gb"), three = prof(&cat, "3g.40gb");
    gs_mig_layout_t layout = {0};
    gs_mig_plan_t plan;
    /* Empty: 3g.40gb at 0, not at 4 where gs_mig_plan would put it. */
    assert_int_equal(gs_mig_plan(&cat, &layout, three, &plan), 0);
    assert_int_equal(plan.start, 4);
    assert_int_equal(gs_mig_plan_at(&cat, &layout, three, 0, &plan), 0);
    assert_int_equal(plan.reuse, -1);
    assert_int_equal(plan.start, 0);
    assert_int_equal(plan.evict, 0);
    /* An idle 3g.40gb at 0 and an idle 1g.10gb at 5. */
    layout = (gs_mig_layout_t){
        .n = 2, .inst = {{.profile = three, .start = 0}, {.profile = one, .start = 5}}};
    assert_int_equal(gs_mig_plan_at(&cat, &layout, three, 0, &plan), 0);
    assert_int_equal(plan.reuse, 0);
    assert_int_equal(gs_mig_plan_at(&cat, &layout, three, 4, &plan), 0);
    assert_int_equal(plan.reuse, -1);
    assert_int_equal(plan.evict, 0x2); /* the idle 1g.10gb at 5 is in the way */
    assert_int_equal(gs_mig_apply(&layout, three, &plan), 1);
    assert_int_equal(layout.inst[1].start, 4);
    /* A busy instance in the way: no; a start the profile does not have: invalid. */
    layout = (gs_mig_layout_t){.n = 1, .inst = {{.profile = one, .start = 6, .busy = 1}}};
    assert_int_equal(gs_mig_plan_at(&cat, &layout, three, 4, &plan), GS_ENOFIT);
    assert_int_equal(gs_mig_plan_at(&cat, &layout, three, 2, &plan), GS_EINVAL);
    assert_int_equal(gs_mig_plan_at(&cat, &layout, one, 7, &plan), GS_EINVAL);
}

static void test_limits(void **state)
{
    (void)state;
    gs_mig_catalog_t cat = catalog("A100-40GB");
    int one = prof(&cat, "1g.5gb"), me = prof(&cat, "1g.5gb+me");
    gs_mig_layout_t layout = {0};
    for (uint32_t s = 0; s < 7; s++)
        layout.inst[layout.n++] = (gs_mig_instance_t){.profile = one, .start = s, .busy = 1};
    gs_mig_plan_t plan;
    /* Seven 1g.5gb take every compute slice: slot 7 is free but not a valid start. */
    assert_int_equal(gs_mig_plan(&cat, &layout, one, &plan), GS_ENOFIT);
    assert_false(gs_mig_fits_at(&cat, &layout, one, 7));
    gs_mig_layout_t empty = {0};
    assert_true(gs_mig_fits_at(&cat, &empty, me, 3));
    gs_mig_layout_t with_me = {.n = 1, .inst = {{.profile = me, .start = 0, .busy = 1}}};
    assert_false(gs_mig_fits_at(&cat, &with_me, me, 3)); /* at most one +me */
    assert_int_equal(gs_mig_plan(&cat, &empty, 99, &plan), GS_EINVAL);
    assert_int_equal(gs_mig_room(&cat, &empty, prof(&cat, "2g.10gb")), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_tables),
        cmocka_unit_test(test_smallest_profile),
        cmocka_unit_test(test_placement_keeps_large_profiles),
        cmocka_unit_test(test_reuse_idle_instance),
        cmocka_unit_test(test_evict_idle_only_when_needed),
        cmocka_unit_test(test_plan_at),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
