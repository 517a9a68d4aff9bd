/* SPDX-License-Identifier: Apache-2.0 */
/* Stopping what a job leaves running: see leftovers.h. */
#include "leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 4096
#define POLL_NS      10000000L /* 10 ms between rounds */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reap_exited(void)
{
    int status;
    while (waitpid(-1, &status, WNOHANG) > 0) {
    }
}

/* Appends the pids listed in one task's children file; returns the new count. */
static int read_children(const char *path, pid_t *pids, int n)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return n;
    long pid;
    while (n < MAX_CHILDREN && fscanf(f, "%ld", &pid) == 1) {
        if (pid > 0)
            pids[n++] = (pid_t)pid;
    }
    fclose(f);
    return n;
}

/* This process's children, from /proc/self/task/TID/children of each thread. Returns the count
 * (-1 when /proc cannot tell). */
static int children(pid_t *pids)
{
    DIR *dir = opendir("/proc/self/task");
    if (dir == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%.20s/children", e->d_name);
        n = read_children(path, pids, n);
    }
    closedir(dir);
    return n;
}

int gs__cli_leftovers(void)
{
    reap_exited();
    pid_t *pids = malloc(MAX_CHILDREN * sizeof(*pids));
    int n = pids != NULL ? children(pids) : -1;
    free(pids);
    return n > 0 ? n : 0;
}

/* Whether pid is in the first n of set; adds it when not and there is room. */
static int seen_before(pid_t *set, int *n, pid_t pid)
{
    for (int i = 0; i < *n; i++) {
        if (set[i] == pid)
            return 1;
    }
    if (*n < MAX_CHILDREN)
        set[(*n)++] = pid;
    return 0;
}

void gs__cli_stop_leftovers(int64_t grace_ms)
{
    pid_t *pids = malloc(2 * MAX_CHILDREN * sizeof(*pids));
    if (pids == NULL)
        return;
    pid_t *termed = pids + MAX_CHILDREN; /* SIGTERM goes once to each */
    int n_termed = 0;
    int64_t kill_at = mono_ms() + (grace_ms > 0 ? grace_ms : 0);
    for (;;) {
        reap_exited();
        int n = children(pids);
        if (n <= 0)
            break;
        int late = mono_ms() >= kill_at;
        for (int i = 0; i < n; i++) {
            if (late)
                kill(pids[i], SIGKILL);
            else if (!seen_before(termed, &n_termed, pids[i]))
                kill(pids[i], SIGTERM);
        }
        struct timespec pause = {.tv_sec = 0, .tv_nsec = POLL_NS};
        nanosleep(&pause, NULL);
    }
    reap_exited();
    free(pids);
}
