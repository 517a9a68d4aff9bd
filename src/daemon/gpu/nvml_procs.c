/* SPDX-License-Identifier: Apache-2.0 */
/* What really runs on the GPUs: NVML's per-process memory and /proc's facts of each process. */
#include "nvml_procs.h"

#include "gpushare/client.h"
#include "gpushare/error.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_START 64
#define LIST_MAX   4096 /* processes read per GPU */

/* Reads up to len - 1 bytes of path into buf (NUL-terminated). Returns the length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* Parses /proc/PID/stat: the state, parent and start time follow the last ')' of the command. */
static int read_stat(pid_t pid, pid_t *ppid, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return GS_ENOENT;
    const char *p = strrchr(buf, ')');
    char state = 0;
    int parent = 0;
    unsigned long long started = 0;
    if (p == NULL ||
        sscanf(p + 1,
               " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &state, &parent, &started) != 3 ||
        state == 'Z' || state == 'X')
        return GS_ENOENT;
    *ppid = (pid_t)parent;
    *start = started;
    return 0;
}

static uid_t read_uid(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return (uid_t)-1;
    const char *line = strstr(buf, "\nUid:");
    unsigned long uid = 0;
    if (line == NULL || sscanf(line + 5, "%lu", &uid) != 1)
        return (uid_t)-1;
    return (uid_t)uid;
}

/* The command line, arguments joined by spaces, escaped for display (it is the user's text and
 * goes into logs and replies: gs_display_escape); "[comm]" when it has none. */
static void read_command(pid_t pid, char *out, size_t len)
{
    char path[64], buf[GS__COMMAND_MAX * 4];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    ssize_t n = read_small(path, buf, sizeof(buf));
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    if (n <= 0) {
        char comm[64] = "";
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        if (read_small(path, comm, sizeof(comm)) > 0)
            comm[strcspn(comm, "\n")] = '\0';
        char bracketed[80];
        snprintf(bracketed, sizeof(bracketed), "[%s]", comm);
        gs_display_escape(out, len, bracketed);
        return;
    }
    for (ssize_t i = 0; i < n; i++)
        buf[i] = buf[i] == '\0' ? ' ' : buf[i];
    buf[(size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1] = '\0';
    gs_display_escape(out, len, buf);
}

static void user_name(uid_t uid, char *out, size_t len)
{
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (uid != (uid_t)-1 && getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(out, len, "%s", found->pw_name);
    else if (uid != (uid_t)-1)
        snprintf(out, len, "%u", (unsigned)uid);
    else
        snprintf(out, len, "?");
}

int gs__proc_read(pid_t pid, gs__proc_info_t *info)
{
    memset(info, 0, sizeof(*info));
    if (pid <= 0 || read_stat(pid, &info->ppid, &info->start) != 0)
        return GS_ENOENT;
    info->uid = read_uid(pid);
    user_name(info->uid, info->user, sizeof(info->user));
    read_command(pid, info->command, sizeof(info->command));
    return 0;
}

int gs__proc_parent(pid_t pid, pid_t *ppid, uint64_t *start)
{
    return read_stat(pid, ppid, start);
}

void gs__proc_ancestors(pid_t pid, gs__proc_chain_t *chain)
{
    chain->n = 0;
    for (pid_t cur = pid; cur > 0 && chain->n < GS__CHAIN_MAX;) {
        pid_t ppid = 0;
        uint64_t start = 0;
        if (read_stat(cur, &ppid, &start) != 0)
            return;
        chain->pid[chain->n] = cur;
        chain->start[chain->n] = start;
        chain->n++;
        if (ppid == cur)
            return;
        cur = ppid;
    }
}

/* Makes room for n entries. */
static int reserve(gs__nvml_procs_t *procs, unsigned n)
{
    if (n <= procs->cap)
        return 0;
    unsigned cap = procs->cap > 0 ? procs->cap : LIST_START;
    while (cap < n)
        cap *= 2;
    gs__nvml_proc_t *grown = realloc(procs->procs, cap * sizeof(*grown));
    if (grown == NULL)
        return GS_ENOMEM;
    procs->procs = grown;
    procs->cap = cap;
    return 0;
}

/* Appends GPU g's processes (at most LIST_MAX of them). */
static int collect_gpu(gs__inventory_t *inv, unsigned g, gs__nvml_procs_t *out)
{
    gs__gpu_process_t *found = malloc(LIST_MAX * sizeof(*found));
    unsigned count = LIST_MAX;
    int result = found != NULL ? gs__inventory_processes(inv, g, found, &count) : GS_ENOMEM;
    int listed = result == 0;
    if (result == 0)
        result = reserve(out, out->n + count);
    for (unsigned i = 0; result == 0 && i < count; i++) {
        gs__nvml_proc_t *p = &out->procs[out->n++];
        memset(p, 0, sizeof(*p));
        p->gpu = g;
        p->pid = found[i].pid;
        p->unknown = found[i].used == UINT64_MAX; /* NVML_VALUE_NOT_AVAILABLE */
        p->used = p->unknown ? 0 : found[i].used;
        p->alive = gs__proc_read(p->pid, &p->info) == 0;
        out->listed[g] += p->used;
    }
    out->complete[g] = listed && result == 0;
    free(found);
    return result == GS_ENOMEM ? result : 0;
}

int gs__nvml_procs_collect(gs__inventory_t *inv, unsigned n_gpus, gs__nvml_procs_t *out)
{
    out->n = 0;
    memset(out->listed, 0, sizeof(out->listed));
    memset(out->complete, 0, sizeof(out->complete));
    for (unsigned g = 0; g < n_gpus && g < GS_MAX_DEVICES; g++) {
        int result = collect_gpu(inv, g, out);
        if (result != 0)
            return result;
    }
    return 0;
}

void gs__nvml_procs_free(gs__nvml_procs_t *procs)
{
    free(procs->procs);
    procs->procs = NULL;
    procs->n = procs->cap = 0;
}
