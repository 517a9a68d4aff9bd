/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of gpushared's regions: sealed memfds nobody can resize, membership from the kernel,
 * and regions whose records a process of the lease rewrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/region.h"
#include "region_internal.h"

#define GIB (UINT64_C(1) << 30)

static gs_region_t *make(void)
{
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.limit[0] = GIB;
    snprintf(cfg.lease_id, sizeof(cfg.lease_id), "17");
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create_sealed(&cfg, &r), 0);
    return r;
}

/* A writable mapping of r's bytes, as a process of the lease has. */
static region_layout_t *map_of(const gs_region_t *r)
{
    void *p =
        mmap(NULL, sizeof(region_layout_t), PROT_READ | PROT_WRITE, MAP_SHARED, gs_region_fd(r), 0);
    assert_true(p != MAP_FAILED);
    return p;
}

/* Neither the daemon's descriptor nor a member's (its own description, through /proc) can
 * shrink, grow or unseal the region: the daemon's mapping can never fault. */
static void test_sealed_cannot_be_resized(void **state)
{
    (void)state;
    gs_region_t *r = make();
    gs_region_t *member = NULL;
    assert_int_equal(
        gs_region_adopt(dup(gs_region_fd(r)), GS_REGION_SEALED | GS_REGION_MEMBER, &member), 0);
    for (int i = 0; i < 2; i++) {
        int fd = gs_region_fd(i == 0 ? r : member);
        assert_int_equal(ftruncate(fd, 0), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(ftruncate(fd, 2 * (off_t)sizeof(region_layout_t)), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(fallocate(fd, 0, 0, 64 << 20), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_size, sizeof(region_layout_t));
        assert_int_equal(st.st_mode & 0777, 0666);
    }
    assert_int_equal(gs_region_used(r, 0), 0);
    gs_region_close(member);
    gs_region_close(r);
}

/* Adopting refuses what is not a sealed region of the right size and layout. */
static void test_adopt_checks(void **state)
{
    (void)state;
    assert_int_equal(gs_region_adopt(-1, 0, NULL), GS_EINVAL);
    char path[] = "/tmp/gs-region-sealed-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(ftruncate(fd, 4096), 0);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_adopt(dup(fd), 0, &r), GS_EVERSION); /* the wrong size */
    assert_int_equal(ftruncate(fd, sizeof(region_layout_t)), 0);
    assert_int_equal(gs_region_adopt(dup(fd), 0, &r), GS_EVERSION); /* no magic */
    gs_region_t *sealed = make();
    region_layout_t *src = map_of(sealed);
    assert_int_equal(pwrite(fd, src, sizeof(*src), 0), (ssize_t)sizeof(*src));
    assert_int_equal(gs_region_adopt(dup(fd), GS_REGION_SEALED, &r), GS_EPERM); /* unsealed */
    assert_int_equal(gs_region_adopt(dup(fd), 0, &r), 0);
    gs_region_close(r);
    munmap(src, sizeof(*src));
    gs_region_close(sealed);
    close(fd);
}

/* Forks a member: it adopts r's descriptor, charges 4 KiB, and then (close_all) closes every
 * descriptor it has; it reports on report and waits. */
static pid_t fork_member(gs_region_t *r, int report, int close_all)
{
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid != 0)
        return kid;
    gs_region_t *m = NULL;
    int slot;
    if (gs_region_adopt(dup(gs_region_fd(r)), GS_REGION_SEALED | GS_REGION_MEMBER, &m) != 0 ||
        gs_region_attach(m, &slot) != 0 || gs_region_reserve(m, slot, 0, 4096) != 0)
        _exit(1);
    for (int fd = 3; close_all && fd < 1024; fd++) {
        if (fd != report)
            close(fd);
    }
    if (write(report, "x", 1) != 1)
        _exit(1);
    pause();
    _exit(0);
}

/* The kernel says who maps the region: a member that closed all its descriptors still counts,
 * a process that only holds a descriptor does not, and a SIGKILLed member stops counting. */
static void test_membership(void **state)
{
    (void)state;
    gs_region_t *r = make();
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(gs_region_in_use(r), 0);
    pid_t kid = fork_member(r, ready[1], 1);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(gs_region_in_use(r), 1);
    assert_int_equal(gs_region_used(r, 0), 4096);
    gs_region_config_t next;
    memset(&next, 0, sizeof(next));
    assert_int_equal(gs_region_recycle(r, &next), GS_EBUSY);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_int_equal(gs_region_in_use(r), 0);
    int holder = dup(gs_region_fd(r)); /* a descriptor alone is no membership */
    assert_int_equal(gs_region_in_use(r), 0);
    close(holder);
    /* Nobody maps it: recycling clears whatever the dead member left. */
    assert_int_equal(gs_region_recycle(r, &next), 0);
    assert_int_equal(gs_region_used(r, 0), 0);
    assert_int_equal(gs_region_attached(r), 0);
    close(ready[0]);
    close(ready[1]);
    gs_region_close(r);
}

/* Records rewritten to name live processes that never joined (pid 1, no lock): reaping them
 * costs one unit of budget each and stops when the budget is spent; the kernel still says that
 * nobody maps the region, and recycling clears them. */
static void test_forged_records_are_bounded(void **state)
{
    (void)state;
    gs_region_t *r = make();
    region_layout_t *map = map_of(r);
    map->attached = UINT32_MAX;
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        map->procs[i].pid = 1;
        map->procs[i].locked = 0;
        map->procs[i].start_time = 1;
    }
    memset(map->lease_id, 'x', sizeof(map->lease_id));
    unsigned cursor = 0, budget = 100;
    assert_int_equal(gs_region_reap_some(r, &cursor, &budget), 0);
    assert_int_equal(budget, 0);
    assert_int_equal(cursor, 100);
    budget = 2000;
    assert_int_equal(gs_region_reap_some(r, &cursor, &budget), 0);
    assert_int_equal(cursor, 0); /* the end of the table */
    assert_int_equal(budget, 2000 - (GS_REGION_MAX_PROCS - 100));
    assert_int_equal(gs_region_in_use(r), 0);
    assert_int_equal(strlen(gs_region_lease_id(r)), GS_REGION_LEASE_MAX - 1);
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.n_procs, GS_REGION_MAX_PROCS);
    assert_int_equal(strlen(stats.lease_id), GS_REGION_LEASE_MAX - 1);
    gs_region_config_t next;
    memset(&next, 0, sizeof(next));
    snprintf(next.lease_id, sizeof(next.lease_id), "18");
    assert_int_equal(gs_region_recycle(r, &next), 0);
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.n_procs, 0);
    assert_string_equal(stats.lease_id, "18");
    munmap(map, sizeof(*map));
    gs_region_close(r);
}

/* A record whose owner died is reaped within the budget: a dead pid, no lock held. */
static void test_dead_record_reaped_by_budget(void **state)
{
    (void)state;
    gs_region_t *r = make();
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t kid = fork_member(r, ready[1], 0);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    unsigned cursor = 0, budget = 1;
    assert_int_equal(gs_region_reap_some(r, &cursor, &budget), 1);
    assert_int_equal(gs_region_used(r, 0), 0);
    close(ready[0]);
    close(ready[1]);
    gs_region_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sealed_cannot_be_resized),
        cmocka_unit_test(test_adopt_checks),
        cmocka_unit_test(test_membership),
        cmocka_unit_test(test_forged_records_are_bounded),
        cmocka_unit_test(test_dead_record_reaped_by_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
