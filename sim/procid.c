/* SPDX-License-Identifier: Apache-2.0 */
/* Process identity across PID namespaces: what /proc tells of a process's namespace, its pids in
 * the namespaces it is seen from, and its start time.
 *
 * A process in its own PID namespace (unshare --pid, a container) knows only its pid there; its
 * pid in an outer namespace is in the NSpid line of its /proc/<pid>/status when that /proc belongs
 * to the outer namespace. NVIDIA's driver records a client's struct pid and reports it translated
 * into the caller's namespace (sim/nvml/pidns.c), so gpusim records the identity below and
 * translates on the reader's side. Reads of /proc only: nothing here needs privileges except the
 * ns/pid link of another user's process (then 0). */
#include "node.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads at most len - 1 bytes of path into buf (NUL-terminated). Returns the length or -1. */
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

static void proc_path(char *buf, size_t len, int pid, const char *what)
{
    if (pid == 0)
        snprintf(buf, len, "/proc/self/%s", what);
    else
        snprintf(buf, len, "/proc/%d/%s", pid, what);
}

uint64_t gsim_pidns_of(int pid)
{
    char path[64], link[64];
    proc_path(path, sizeof(path), pid, "ns/pid");
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0)
        return 0;
    link[n] = '\0';
    unsigned long long ino = 0;
    return sscanf(link, "pid:[%llu]", &ino) == 1 ? (uint64_t)ino : 0;
}

int gsim_nspid_of(int pid, int32_t *ids, int max)
{
    char path[64], buf[4096];
    proc_path(path, sizeof(path), pid, "status");
    if (read_small(path, buf, sizeof(buf)) < 0)
        return 0;
    const char *line = strstr(buf, "\nNSpid:");
    if (line == NULL)
        return 0;
    const char *p = line + strlen("\nNSpid:");
    int n = 0;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (n < max)
            ids[n] = (int32_t)v;
        n++;
        p = end;
        if (*p == '\n' || *p == '\0')
            break;
    }
    return n;
}

uint64_t gsim_start_ticks_of(int pid)
{
    char path[64], buf[1024];
    proc_path(path, sizeof(path), pid, "stat");
    if (read_small(path, buf, sizeof(buf)) < 0)
        return 0;
    /* The command name may hold spaces and parentheses: fields start after the last ')'. */
    const char *p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    p++;
    if (p[0] == ' ' && (p[1] == 'Z' || p[1] == 'X'))
        return 0; /* exited: a zombie is no longer the process */
    /* Field 3 (state) follows; starttime is field 22: skip 19 more separators. */
    for (int field = 3; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}
