/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the watchdog's /proc reading (gpuprocs.c): a process's owner, command and start
 * time, its ancestors, and a command line that is the user's text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/nvml_procs.h"
#include "gpushare/error.h"
#include "gpushare/region.h"

static void test_self(void **state)
{
    (void)state;
    gs__proc_info_t info;
    assert_int_equal(gs__proc_read(getpid(), &info), 0);
    assert_int_equal(info.ppid, getppid());
    assert_int_equal(info.uid, getuid());
    uint64_t start = 0;
    assert_int_equal(gs_proc_alive(getpid(), &start), 1);
    assert_int_equal(info.start, start);
    assert_non_null(strstr(info.command, "test_daemon_gpuprocs"));
    assert_int_equal(gs__proc_read(0, &info), GS_ENOENT);
    assert_int_equal(gs__proc_read(0x3fffffff, &info), GS_ENOENT);
}

/* A child's chain starts with the child, then this process, then this process's parent. */
static void test_ancestors(void **state)
{
    (void)state;
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(go[1]);
        (void)read(go[0], &c, 1);
        _exit(0);
    }
    gs__proc_chain_t chain;
    gs__proc_ancestors(child, &chain);
    assert_true(chain.n >= 3);
    assert_int_equal(chain.pid[0], child);
    assert_int_equal(chain.pid[1], getpid());
    assert_int_equal(chain.pid[2], getppid());
    gs__proc_info_t me;
    assert_int_equal(gs__proc_read(getpid(), &me), 0);
    assert_int_equal(chain.start[1], me.start);
    close(go[1]);
    waitpid(child, NULL, 0);
    gs__proc_ancestors(child, &chain); /* gone */
    assert_int_equal(chain.n, 0);
}

/* Arguments are joined by spaces; control characters (a user could put escapes or newlines in
 * them to forge log lines) become '?'. */
static void test_command_is_sanitized(void **state)
{
    (void)state;
    int hold[2];
    assert_int_equal(pipe(hold), 0);
    pid_t child = fork();
    if (child == 0) {
        dup2(hold[0], 0);
        close(hold[1]);
        execl("/bin/sh", "sh", "-c", "read x", "a\nfake: line\033[2J", (char *)NULL);
        _exit(127);
    }
    close(hold[0]);
    gs__proc_info_t info;
    memset(&info, 0, sizeof(info));
    for (int i = 0; i < 300 && strstr(info.command, "read") == NULL; i++) {
        if (gs__proc_read(child, &info) != 0)
            info.command[0] = '\0';
        usleep(10000);
    }
    close(hold[1]);
    waitpid(child, NULL, 0);
    /* Escaped as everywhere user text is shown (gs_display_escape): no raw control byte. */
    assert_string_equal(info.command, "sh -c read x a\\x0afake: line\\x1b[2J");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_ancestors),
        cmocka_unit_test(test_command_is_sanitized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
