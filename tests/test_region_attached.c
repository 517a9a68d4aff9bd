/* SPDX-License-Identifier: Apache-2.0 */
/* Unit test of the region's lock-free attachment count (gs_region_attached), which lets the
 * daemon skip the process table of regions nobody joined. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/region.h"

static void test_attached_counts_records(void **state)
{
    (void)state;
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.limit[0] = 1 << 20;
    gs_region_t *region = NULL;
    assert_int_equal(gs_region_create_private(&cfg, &region), 0);
    assert_int_equal(gs_region_attached(region), 0);
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(region, &stats), 0);
    assert_int_equal(stats.n_procs, 0);
    gs_region_process_t procs[4];
    assert_int_equal(gs_region_processes(region, procs, 4), 0);
    assert_int_equal(gs_region_reap(region), 0);

    int slot = -1;
    assert_int_equal(gs_region_attach(region, &slot), 0);
    assert_int_equal(gs_region_attached(region), 1);
    assert_int_equal(gs_region_reserve(region, slot, 0, 4096), 0);

    /* A child attaches and dies without detaching: counted until reaped. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int child = -1;
        _exit(gs_region_attach(region, &child) == 0 &&
                      gs_region_reserve(region, child, 0, 8192) == 0
                  ? 0
                  : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(gs_region_attached(region), 2);
    assert_int_equal(gs_region_reap(region), 1);
    assert_int_equal(gs_region_attached(region), 1);
    assert_int_equal(gs_region_used(region, 0), 4096);

    gs_region_detach(region, slot);
    assert_int_equal(gs_region_attached(region), 0);
    assert_int_equal(gs_region_snapshot(region, &stats), 0);
    assert_int_equal(stats.n_procs, 0);
    assert_int_equal(stats.used[0], 0);
    gs_region_close(region);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attached_counts_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
