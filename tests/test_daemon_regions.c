/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of gpushared's pool of idle regions (core/regions.c): a region given back goes only
 * to its own user's next lease, and one unused for GS__REGION_POOL_IDLE_MS is closed by
 * gs__regions_pool_trim, so an idle daemon holds no descriptor it does not need (issue 25's
 * "open fds at the end within 10 % of the start"). Counts the daemon's own open descriptors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <string.h>

#include "core/clock.h"
#include "core/regions.h"

static unsigned open_fds(void)
{
    unsigned n = 0;
    DIR *dir = opendir("/proc/self/fd");
    assert_non_null(dir);
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

static gs_region_t *take(gs__region_pool_t *pool, uid_t uid)
{
    gs_region_config_t rcfg;
    memset(&rcfg, 0, sizeof(rcfg));
    rcfg.limit[0] = UINT64_C(1) << 30;
    gs_region_t *region = NULL;
    char err[160];
    assert_int_equal(gs__regions_take(pool, &rcfg, uid, uid, &region, err, sizeof(err)), 0);
    assert_non_null(region);
    return region;
}

/* Given back, kept for the same user only; trimmed at the idle limit, not a millisecond before. */
static void test_pool_trim(void **state)
{
    (void)state;
    gs__region_pool_t pool;
    memset(&pool, 0, sizeof(pool));
    unsigned fds0 = open_fds();
    gs_region_t *a = take(&pool, 1000);
    gs_region_t *b = take(&pool, 1001);
    int64_t given = gs__now_ms();
    gs__regions_give_back(&pool, a, 1000, 1000);
    gs__regions_give_back(&pool, b, 1001, 1001);
    assert_int_equal(pool.n, 2);
    assert_true(open_fds() > fds0);
    gs_region_t *again = take(&pool, 1000);
    assert_ptr_equal(again, a); /* reused, not made anew */
    assert_int_equal(pool.n, 1);
    gs__regions_give_back(&pool, again, 1000, 1000);
    assert_int_equal(gs__regions_pool_trim(&pool, given + GS__REGION_POOL_IDLE_MS - 1000), 0);
    assert_int_equal(pool.n, 2);
    assert_int_equal(gs__regions_pool_trim(&pool, gs__now_ms() + GS__REGION_POOL_IDLE_MS), 2);
    assert_int_equal(pool.n, 0);
    assert_int_equal(open_fds(), fds0); /* nothing left open */
    assert_int_equal(gs__regions_pool_trim(&pool, INT64_MAX / 2), 0);
}

/* A full pool closes what it cannot keep; clear closes the rest. */
static void test_pool_bounded(void **state)
{
    (void)state;
    gs__region_pool_t pool;
    memset(&pool, 0, sizeof(pool));
    unsigned fds0 = open_fds();
    gs_region_t *r[GS__REGION_POOL_MAX + 4];
    for (unsigned i = 0; i < GS__REGION_POOL_MAX + 4; i++)
        r[i] = take(&pool, 1000);
    for (unsigned i = 0; i < GS__REGION_POOL_MAX + 4; i++)
        gs__regions_give_back(&pool, r[i], 1000, 1000);
    assert_int_equal(pool.n, GS__REGION_POOL_MAX);
    assert_int_equal(open_fds(), fds0 + GS__REGION_POOL_MAX);
    gs__regions_pool_clear(&pool);
    assert_int_equal(open_fds(), fds0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_trim),
        cmocka_unit_test(test_pool_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
