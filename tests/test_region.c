/* SPDX-License-Identifier: Apache-2.0 */
/* Unit and multi-process tests of the lease accounting region. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/region.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static char dir[] = "/tmp/gs-region-test-XXXXXX";

static void region_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static gs_region_config_t config_with_limit(uint64_t limit)
{
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.limit[0] = limit;
    cfg.compute_share = 30;
    snprintf(cfg.lease_id, sizeof(cfg.lease_id), "lease-test");
    return cfg;
}

static void test_create_open_validate(void **state)
{
    (void)state;
    char path[256];
    region_path(path, sizeof(path), "r1");
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *a = NULL, *b = NULL;
    assert_int_equal(gs_region_open(path, &a), GS_ENOENT);
    assert_int_equal(gs_region_create(path, &cfg, 0600, &a), 0);
    assert_int_equal(gs_region_create(path, &cfg, 0600, &b), GS_EEXIST);
    assert_int_equal(gs_region_open(path, &b), 0);
    assert_int_equal(gs_region_limit(b, 0), GIB);
    assert_int_equal(gs_region_limit(b, 1), 0);
    assert_int_equal(gs_region_compute_share(b), 30);
    gs_region_close(a);
    gs_region_close(b);

    /* A file of the right size but the wrong magic, and a short file, are refused. */
    char bad[256];
    region_path(bad, sizeof(bad), "bad");
    int fd = open(bad, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "garbage", 7), 7);
    assert_int_equal(gs_region_open(bad, &a), GS_EVERSION);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(ftruncate(fd, st.st_size), 0);
    assert_int_equal(gs_region_open(bad, &a), GS_EVERSION);
    close(fd);
}

static void test_reserve_exact_limit(void **state)
{
    (void)state;
    gs_region_config_t cfg = config_with_limit(1000);
    gs_region_t *r = NULL;
    int slot;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    assert_int_equal(gs_region_attach(r, &slot), 0);
    assert_int_equal(gs_region_reserve(r, slot, 0, 600), 0);
    assert_int_equal(gs_region_reserve(r, slot, 0, 400), 0);
    assert_int_equal(gs_region_used(r, 0), 1000);
    assert_int_equal(gs_region_reserve(r, slot, 0, 1), GS_ELIMIT);
    assert_int_equal(gs_region_reserve(r, slot, 0, UINT64_MAX), GS_ELIMIT);
    gs_region_release(r, slot, 0, 400, 1);
    assert_int_equal(gs_region_used(r, 0), 600);
    assert_int_equal(gs_region_reserve(r, slot, 0, 400), 0);
    /* Device 1 has no limit. */
    assert_int_equal(gs_region_reserve(r, slot, 1, 80 * GIB), 0);
    assert_int_equal(gs_region_reserve(r, slot, GS_MAX_DEVICES, 1), GS_EINVAL);
    assert_int_equal(gs_region_reserve(r, -1, 0, 1), GS_EINVAL);
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.used[0], 1000);
    assert_int_equal(stats.peak[0], 1000);
    assert_int_equal(stats.used[1], 80 * GIB);
    assert_int_equal(stats.oom_events, 2);
    assert_int_equal(stats.alloc_count, 4);
    assert_int_equal(stats.free_count, 1);
    assert_int_equal(stats.n_procs, 1);
    assert_string_equal(stats.lease_id, "lease-test");
    /* Releasing more than held clamps; detach returns everything. */
    gs_region_release(r, slot, 0, 5000, 0);
    assert_int_equal(gs_region_used(r, 0), 0);
    gs_region_detach(r, slot);
    assert_int_equal(gs_region_used(r, 1), 0);
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.n_procs, 0);
    gs_region_close(r);
}

static void test_concurrent_create_agrees(void **state)
{
    (void)state;
    char path[256];
    region_path(path, sizeof(path), "race");
    enum { N = 16 };
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            gs_region_config_t cfg = config_with_limit(GIB);
            gs_region_t *r;
            int slot;
            if (gs_region_open_or_create(path, &cfg, &r, NULL) != 0 ||
                gs_region_attach(r, &slot) != 0 || gs_region_reserve(r, slot, 0, MIB) != 0)
                _exit(1);
            pause(); /* hold the charge until killed */
            _exit(0);
        }
    }
    gs_region_t *r = NULL;
    for (int tries = 0; tries < 500; tries++) {
        if (r == NULL && gs_region_open(path, &r) != 0)
            r = NULL;
        if (r != NULL && gs_region_used(r, 0) == N * MIB)
            break;
        usleep(10000);
    }
    assert_non_null(r);
    assert_int_equal(gs_region_used(r, 0), N * MIB);
    for (int i = 0; i < N; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    assert_int_equal(gs_region_reap(r), N);
    assert_int_equal(gs_region_used(r, 0), 0);
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.reclaimed_bytes, N * MIB);
    gs_region_close(r);
}

/* Children reserve and release random sizes as fast as they can; the parent samples the
 * counter: it never exceeds the limit. */
static void test_race_never_exceeds(void **state)
{
    (void)state;
    enum { N = 12 };
    const uint64_t limit = 64 * MIB;
    gs_region_config_t cfg = config_with_limit(limit);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int slot;
            if (gs_region_attach(r, &slot) != 0)
                _exit(1);
            unsigned seed = (unsigned)getpid();
            uint64_t held[8] = {0};
            for (int it = 0; it < 20000; it++) {
                int k = rand_r(&seed) % 8;
                if (held[k] != 0) {
                    gs_region_release(r, slot, 0, held[k], 1);
                    held[k] = 0;
                } else {
                    uint64_t bytes = (uint64_t)(1 + rand_r(&seed) % 16) * MIB;
                    if (gs_region_reserve(r, slot, 0, bytes) == 0)
                        held[k] = bytes;
                }
            }
            for (int k = 0; k < 8; k++)
                gs_region_release(r, slot, 0, held[k], 1);
            gs_region_detach(r, slot);
            _exit(0);
        }
    }
    uint64_t max_seen = 0;
    int running = N;
    while (running > 0) {
        uint64_t used = gs_region_used(r, 0);
        if (used > max_seen)
            max_seen = used;
        pid_t done = waitpid(-1, NULL, WNOHANG);
        if (done > 0)
            running--;
    }
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_true(max_seen <= limit);
    assert_true(stats.peak[0] <= limit);
    assert_int_equal(stats.used[0], 0);
    assert_true(stats.oom_events > 0); /* the limit was really contended */
    gs_region_close(r);
}

/* Processes are SIGKILLed at random moments while they reserve and release: afterwards the
 * counter equals exactly what the survivors hold, and no lock is left held. */
static void test_kill_at_random_moments(void **state)
{
    (void)state;
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t kid = fork();
        if (kid == 0) {
            int slot;
            if (gs_region_attach(r, &slot) != 0 || write(ready[1], "x", 1) != 1)
                _exit(1);
            for (;;) {
                if (gs_region_reserve(r, slot, 0, 3 * MIB) == 0)
                    gs_region_release(r, slot, 0, MIB, 1);
                else
                    gs_region_release(r, slot, 0, GIB, 1);
            }
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        close(ready[1]);
        usleep((useconds_t)(rand_r(&seed) % 1000));
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        assert_int_equal(gs_region_reap(r), 1);
        assert_int_equal(gs_region_used(r, 0), 0);
    }
    /* The lock still works. */
    int slot;
    assert_int_equal(gs_region_attach(r, &slot), 0);
    assert_int_equal(gs_region_reserve(r, slot, 0, GIB), 0);
    gs_region_close(r);
}

static void test_proc_alive(void **state)
{
    (void)state;
    uint64_t start = 0;
    assert_int_equal(gs_proc_alive(getpid(), &start), 1);
    assert_true(start > 0);
    pid_t kid = fork();
    if (kid == 0)
        _exit(0);
    /* A zombie is not alive. */
    usleep(100000);
    assert_int_equal(gs_proc_alive(kid, &start), 0);
    waitpid(kid, NULL, 0);
    assert_int_equal(gs_proc_alive(kid, &start), 0);
}

/* Many threads of one process reap the same dead processes at once: each dead record is
 * reclaimed exactly once, and the live one is never touched. */
typedef struct reap_arg {
    gs_region_t *region;
    int reaped;
} reap_arg_t;

static void *reap_thread(void *p)
{
    reap_arg_t *arg = p;
    for (int i = 0; i < 50; i++)
        arg->reaped += gs_region_reap(arg->region);
    return NULL;
}

static void test_concurrent_reapers(void **state)
{
    (void)state;
    gs_region_config_t cfg = config_with_limit(GIB);
    char path[256];
    for (int round = 0; round < 30; round++) {
        gs_region_t *r = NULL, *other = NULL;
        int mine;
        snprintf(path, sizeof(path), "%s/reapers-%d", dir, round);
        assert_int_equal(gs_region_create(path, &cfg, 0600, &r), 0);
        assert_int_equal(gs_region_open(path, &other), 0);
        assert_int_equal(gs_region_attach(r, &mine), 0);
        assert_int_equal(gs_region_reserve(r, mine, 0, 500), 0);
        enum { KIDS = 8 };
        pid_t kids[KIDS];
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        for (int i = 0; i < KIDS; i++) {
            kids[i] = fork();
            if (kids[i] == 0) {
                gs_region_after_fork(r);
                int slot;
                if (gs_region_attach(r, &slot) != 0 || gs_region_reserve(r, slot, 0, 1000) != 0 ||
                    write(ready[1], "x", 1) != 1)
                    _exit(1);
                pause();
                _exit(0);
            }
        }
        for (int i = 0; i < KIDS; i++) {
            char c;
            assert_int_equal(read(ready[0], &c, 1), 1);
        }
        close(ready[0]);
        close(ready[1]);
        for (int i = 0; i < KIDS; i++) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
        /* Two threads share a handle (as a process's threads do); a third has its own. */
        reap_arg_t args[3];
        pthread_t threads[3];
        for (int t = 0; t < 3; t++) {
            args[t].reaped = 0;
            args[t].region = t < 2 ? r : other;
            pthread_create(&threads[t], NULL, reap_thread, &args[t]);
        }
        int total = 0;
        for (int t = 0; t < 3; t++) {
            pthread_join(threads[t], NULL);
            total += args[t].reaped;
        }
        assert_int_equal(total, KIDS);
        assert_int_equal(gs_region_used(r, 0), 500);
        gs_region_stats_t stats;
        assert_int_equal(gs_region_snapshot(r, &stats), 0);
        assert_int_equal(stats.n_procs, 1);
        assert_int_equal(stats.reclaimed_bytes, KIDS * 1000);
        gs_region_release(r, mine, 0, 500, 1);
        assert_int_equal(gs_region_used(r, 0), 0);
        gs_region_close(other);
        gs_region_close(r);
    }
}

static void *idle_thread(void *p)
{
    (void)p;
    pause();
    return NULL;
}

/* A process whose main thread has exited while another thread runs is alive: its record and
 * charge stay until the whole process is gone. */
static void test_zombie_leader_is_alive(void **state)
{
    (void)state;
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t kid = fork();
    if (kid == 0) {
        int slot;
        pthread_t t;
        if (gs_region_attach(r, &slot) != 0 || gs_region_reserve(r, slot, 0, 4096) != 0 ||
            pthread_create(&t, NULL, idle_thread, NULL) != 0 || write(ready[1], "x", 1) != 1)
            _exit(1);
        pthread_exit(NULL);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    usleep(100000); /* the main thread is a zombie by now */
    uint64_t start = 0;
    assert_int_equal(gs_proc_alive(kid, &start), 1);
    assert_int_equal(gs_region_reap(r), 0);
    assert_int_equal(gs_region_used(r, 0), 4096);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_int_equal(gs_region_reap(r), 1);
    assert_int_equal(gs_region_used(r, 0), 0);
    close(ready[0]);
    close(ready[1]);
    gs_region_close(r);
}

/* A member that closed all its descriptors (and with them its liveness lock) is still alive:
 * the fallback identity (pid + start time) keeps its record until it really exits. */
static void test_closed_descriptors_still_alive(void **state)
{
    (void)state;
    char path[256];
    region_path(path, sizeof(path), "closer");
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create(path, &cfg, 0600, &r), 0);
    volatile int *flag =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(flag != MAP_FAILED);
    pid_t kid = fork();
    if (kid == 0) {
        gs_region_t *mine;
        int slot;
        if (gs_region_open(path, &mine) != 0 || gs_region_attach(mine, &slot) != 0 ||
            gs_region_reserve(mine, slot, 0, 4096) != 0)
            _exit(1);
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        *flag = 1;
        pause();
        _exit(0);
    }
    while (*flag == 0)
        usleep(1000);
    assert_int_equal(gs_region_reap(r), 0);
    assert_int_equal(gs_region_used(r, 0), 4096);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_int_equal(gs_region_reap(r), 1);
    assert_int_equal(gs_region_used(r, 0), 0);
    munmap((void *)flag, 4096);
    gs_region_close(r);
}

/* A member's forked child that lives on (and never charges) does not keep the member alive: once
 * the member is SIGKILLed its record is reaped although the child still maps the region. */
static void test_forked_child_does_not_keep_parent_alive(void **state)
{
    (void)state;
    char path[256];
    region_path(path, sizeof(path), "forker");
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create(path, &cfg, 0600, &r), 0);
    int report[2];
    assert_int_equal(pipe(report), 0);
    pid_t member = fork();
    if (member == 0) {
        gs_region_t *mine;
        int slot;
        if (gs_region_open(path, &mine) != 0 || gs_region_attach(mine, &slot) != 0 ||
            gs_region_reserve(mine, slot, 0, 4096) != 0)
            _exit(1);
        pid_t child = fork();
        if (child == 0) {
            /* Reports only once it has dropped the inherited descriptor: the member is killed
             * after that, as it would be any time after fork() returned (pthread_atfork). */
            gs_region_after_fork(mine);
            pid_t self = getpid();
            if (write(report[1], &self, sizeof(self)) != (ssize_t)sizeof(self))
                _exit(1);
            pause();
            _exit(0);
        }
        pause();
        _exit(0);
    }
    pid_t child = 0;
    assert_int_equal(read(report[0], &child, sizeof(child)), (ssize_t)sizeof(child));
    assert_int_equal(gs_region_reap(r), 0);
    assert_int_equal(gs_region_used(r, 0), 4096);
    kill(member, SIGKILL);
    waitpid(member, NULL, 0);
    int child_alive = kill(child, 0) == 0;
    int reaped = gs_region_reap(r);
    uint64_t used = gs_region_used(r, 0);
    kill(child, SIGKILL); /* before the checks, so a failure leaves no process behind */
    assert_true(child_alive);
    assert_int_equal(reaped, 1);
    assert_int_equal(used, 0);
    close(report[0]);
    close(report[1]);
    gs_region_close(r);
}

/* A private region with limit on device 0, this process attached to it in *slot. */
static gs_region_t *attached_private(uint64_t limit, int *slot)
{
    gs_region_config_t cfg = config_with_limit(limit);
    gs_region_t *r = NULL;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    assert_int_equal(gs_region_attach(r, slot), 0);
    return r;
}

/* Only the record a handle attached is its to charge. */
static void test_foreign_slot_refused(void **state)
{
    (void)state;
    int slot;
    gs_region_t *r = attached_private(GIB, &slot);
    assert_int_equal(gs_region_reserve(r, (slot + 1) % GS_REGION_MAX_PROCS, 0, 1), GS_EINVAL);
    gs_region_detach(r, slot);
    assert_int_equal(gs_region_reserve(r, slot, 0, 1), GS_EINVAL); /* after the exit-time detach */
    assert_int_equal(gs_region_used(r, 0), 0);
    gs_region_close(r);
}

/* A region whose lease ended is recycled only when nobody is in it. */
static void test_recycle(void **state)
{
    (void)state;
    gs_region_config_t cfg = config_with_limit(GIB);
    gs_region_t *r = NULL;
    int slot;
    assert_int_equal(gs_region_create_private(&cfg, &r), 0);
    assert_int_equal(gs_region_attach(r, &slot), 0);
    assert_int_equal(gs_region_reserve(r, slot, 0, 100), 0);
    gs_region_config_t next = config_with_limit(2 * GIB);
    snprintf(next.lease_id, sizeof(next.lease_id), "lease-next");
    assert_int_equal(gs_region_recycle(r, &next), GS_EBUSY);
    assert_int_equal(gs_region_limit(r, 0), GIB); /* untouched by the refusal */
    gs_region_detach(r, slot);
    assert_int_equal(gs_region_recycle(r, &next), 0);
    assert_int_equal(gs_region_limit(r, 0), 2 * GIB);
    assert_string_equal(gs_region_lease_id(r), "lease-next");
    gs_region_stats_t stats;
    assert_int_equal(gs_region_snapshot(r, &stats), 0);
    assert_int_equal(stats.alloc_count, 0);
    assert_int_equal(stats.peak[0], 0);
    gs_region_close(r);
}

/* A suspended lease's limit (issue 40): every reservation beside what is held is refused, a
 * free still goes through, and the lease's own limit comes back at resume. */
static void test_suspended_limit(void **state)
{
    (void)state;
    int slot;
    gs_region_t *r = attached_private(GIB, &slot);
    assert_int_equal(gs_region_reserve(r, slot, 0, 100 * MIB), 0);
    gs_region_set_limit(r, 0, GS_REGION_LIMIT_SUSPENDED);
    assert_int_equal(gs_region_limit(r, 0), GS_REGION_LIMIT_SUSPENDED);
    assert_int_equal(gs_region_reserve(r, slot, 0, 1), GS_ELIMIT);
    assert_int_equal(gs_region_reserve(r, slot, 0, 2 * MIB), GS_ELIMIT);
    gs_region_release(r, slot, 0, 50 * MIB, 1);
    assert_int_equal(gs_region_used(r, 0), 50 * MIB);
    assert_int_equal(gs_region_reserve(r, slot, 0, 1), GS_ELIMIT);
    gs_region_set_limit(r, GS_MAX_DEVICES, 0); /* beyond the table: ignored */
    gs_region_set_limit(r, 0, GIB);
    assert_int_equal(gs_region_reserve(r, slot, 0, 900 * MIB), 0);
    assert_int_equal(gs_region_reserve(r, slot, 0, 100 * MIB), GS_ELIMIT);
    gs_region_detach(r, slot);
    gs_region_close(r);
}

int main(void)
{
    if (mkdtemp(dir) == NULL)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_open_validate),
        cmocka_unit_test(test_reserve_exact_limit),
        cmocka_unit_test(test_concurrent_create_agrees),
        cmocka_unit_test(test_race_never_exceeds),
        cmocka_unit_test(test_kill_at_random_moments),
        cmocka_unit_test(test_proc_alive),
        cmocka_unit_test(test_concurrent_reapers),
        cmocka_unit_test(test_zombie_leader_is_alive),
        cmocka_unit_test(test_foreign_slot_refused),
        cmocka_unit_test(test_closed_descriptors_still_alive),
        cmocka_unit_test(test_forked_child_does_not_keep_parent_alive),
        cmocka_unit_test(test_recycle),
        cmocka_unit_test(test_suspended_limit),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
