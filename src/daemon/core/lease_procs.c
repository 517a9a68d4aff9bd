/* SPDX-License-Identifier: Apache-2.0 */
/* The node's process table (/proc): region holders, descendants, signals, regions to adopt. */
#include "lease_procs.h"

#include "gpushare/error.h"
#include "gpushare/region.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEMFD_LINK "/memfd:" GS_REGION_MEMFD_NAME

/* What one pass over /proc reads of a process. */
typedef struct proc_info {
    pid_t pid, ppid;
    uint64_t start;
} proc_info_t;

typedef struct proc_table {
    proc_info_t *v;
    size_t n, cap;
} proc_table_t;

/* Reads ppid and start time from /proc/PID/stat. Returns 0 or GS_ENOENT (gone). */
static int read_stat(pid_t pid, proc_info_t *info)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GS_ENOENT;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return GS_ENOENT;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold anything: fields restart after it */
    if (p == NULL || p[1] != ' ')
        return GS_ENOENT;
    info->pid = pid;
    info->ppid = 0;
    info->start = 0;
    unsigned long long field = 0;
    p += 2;
    for (int k = 3; k <= 22 && *p != '\0'; k++) {
        char *end = strchr(p, ' ');
        if (k == 4 || k == 22)
            field = strtoull(p, NULL, 10);
        if (k == 4)
            info->ppid = (pid_t)field;
        if (k == 22)
            info->start = field;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

/* The real uid of pid from /proc/PID/status, or (uid_t)-1. */
static uid_t real_uid(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return (uid_t)-1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return (uid_t)-1;
    buf[n] = '\0';
    const char *line = strstr(buf, "\nUid:");
    return line != NULL ? (uid_t)strtoul(line + 5, NULL, 10) : (uid_t)-1;
}

static int list_has(const gs__proc_refs_t *list, pid_t pid)
{
    for (unsigned i = 0; i < list->n; i++) {
        if (list->v[i].pid == pid)
            return 1;
    }
    return 0;
}

static int list_add(gs__proc_refs_t *list, const proc_info_t *info)
{
    if (info->pid <= 1 || info->pid == getpid() || list_has(list, info->pid))
        return 0;
    if (list->n == list->cap) {
        unsigned cap = list->cap != 0 ? 2 * list->cap : 16;
        gs__proc_ref_t *grown = realloc(list->v, cap * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        list->v = grown;
        list->cap = cap;
    }
    list->v[list->n].pid = info->pid;
    list->v[list->n].start = info->start;
    list->n++;
    return 1;
}

/* Every process of the node: pid, ppid and start time. Returns 0 or -errno. */
static int read_table(proc_table_t *t)
{
    DIR *dir = opendir("/proc");
    if (dir == NULL)
        return -errno;
    struct dirent *e;
    int result = 0;
    while (result == 0 && (e = readdir(dir)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        if (t->n == t->cap) {
            size_t cap = t->cap != 0 ? 2 * t->cap : 256;
            proc_info_t *grown = realloc(t->v, cap * sizeof(*grown));
            if (grown == NULL) {
                result = GS_ENOMEM;
                break;
            }
            t->v = grown;
            t->cap = cap;
        }
        if (read_stat((pid_t)pid, &t->v[t->n]) == 0)
            t->n++;
    }
    closedir(dir);
    return result;
}

/* Calls visit(arg, dirfd-path, name) for each entry of /proc/PID/fd and /proc/PID/map_files
 * whose link names a region memfd; stops at the first nonzero return, which it returns. */
static int each_region_link(pid_t pid, int (*visit)(void *arg, const char *path), void *arg)
{
    static const char *const kinds[] = {"fd", "map_files"};
    int result = 0;
    for (unsigned k = 0; k < 2 && result == 0; k++) {
        char dirpath[64];
        snprintf(dirpath, sizeof(dirpath), "/proc/%d/%s", (int)pid, kinds[k]);
        DIR *dir = opendir(dirpath);
        if (dir == NULL)
            continue;
        struct dirent *e;
        while (result == 0 && (e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char link[128], path[384];
            snprintf(path, sizeof(path), "%s/%s", dirpath, e->d_name);
            ssize_t n = readlinkat(dirfd(dir), e->d_name, link, sizeof(link) - 1);
            if (n <= 0)
                continue;
            link[n] = '\0';
            if (strncmp(link, MEMFD_LINK, strlen(MEMFD_LINK)) == 0)
                result = visit(arg, path);
        }
        closedir(dir);
    }
    return result;
}

typedef struct inode_match {
    dev_t dev;
    ino_t ino;
} inode_match_t;

static int is_region(void *arg, const char *path)
{
    const inode_match_t *want = arg;
    struct stat st;
    return stat(path, &st) == 0 && st.st_dev == want->dev && st.st_ino == want->ino;
}

/* The region's holders (their real uid but root), then the holder's descendants of uid. */
static int add_lease_procs(const gs__lease_procs_query_t *q, const proc_table_t *t,
                           gs__proc_refs_t *list)
{
    int added = 0, r;
    struct stat st;
    inode_match_t want = {0};
    int by_region = q->region != NULL && gs_region_fd(q->region) >= 0 &&
                    fstat(gs_region_fd(q->region), &st) == 0;
    if (by_region) {
        want.dev = st.st_dev;
        want.ino = st.st_ino;
    }
    for (size_t i = 0; by_region && i < t->n; i++) {
        if (t->v[i].pid != getpid() && each_region_link(t->v[i].pid, is_region, &want) &&
            real_uid(t->v[i].pid) != 0 && (r = list_add(list, &t->v[i])) != 0)
            added += r > 0 ? 1 : 0;
    }
    /* Descendants: a breadth-first walk over the ppid links, in rounds (the table is small). */
    pid_t *frontier = calloc(t->n + 1, sizeof(pid_t));
    if (frontier == NULL)
        return GS_ENOMEM;
    size_t nf = 0;
    for (size_t i = 0; q->holder > 0 && i < t->n; i++) {
        if (t->v[i].pid == q->holder && (q->holder_start == 0 || t->v[i].start == q->holder_start))
            frontier[nf++] = q->holder;
    }
    for (size_t next = 0; next < nf; next++) {
        for (size_t i = 0; i < t->n; i++) {
            if (t->v[i].ppid != frontier[next] || nf == t->n)
                continue;
            frontier[nf++] = t->v[i].pid;
            if (real_uid(t->v[i].pid) == q->uid && (r = list_add(list, &t->v[i])) > 0)
                added++;
        }
    }
    for (size_t i = 0; nf > 0 && q->with_holder && i < t->n; i++) {
        if (t->v[i].pid == q->holder && real_uid(q->holder) == q->uid &&
            list_add(list, &t->v[i]) > 0)
            added++;
    }
    free(frontier);
    for (size_t i = 0; q->cgroup != NULL && q->cgroup[0] != '\0' && i < t->n; i++) {
        if (t->v[i].pid != getpid() && t->v[i].pid != 1 &&
            gs__proc_in_cgroup(t->v[i].pid, q->cgroup) && list_add(list, &t->v[i]) > 0)
            added++;
    }
    return added;
}

/* Nonzero when the cgroup named at line (a /proc/PID/cgroup line's path, up to its end) is path
 * or below it. */
static int under(const char *line, size_t len, const char *path)
{
    size_t n = strlen(path);
    return len >= n && memcmp(line, path, n) == 0 && (len == n || line[n] == '/');
}

int gs__proc_in_cgroup(pid_t pid, const char *path)
{
    char buf[4096];
    if (gs_proc_read(pid, "cgroup", buf, sizeof(buf)) == 0)
        return 0;
    /* Lines are "ID:CONTROLLERS:PATH": the path follows the second ':'. */
    for (char *line = buf, *end; *line != '\0'; line = *end != '\0' ? end + 1 : end) {
        end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line);
        char *colon = memchr(line, ':', (size_t)(end - line));
        colon = colon != NULL ? memchr(colon + 1, ':', (size_t)(end - colon - 1)) : NULL;
        if (colon != NULL && under(colon + 1, (size_t)(end - colon - 1), path))
            return 1;
    }
    return 0;
}

int gs__lease_procs_find(const gs__lease_procs_query_t *q, gs__proc_refs_t *list)
{
    proc_table_t t = {0};
    int result = read_table(&t);
    if (result == 0)
        result = add_lease_procs(q, &t, list);
    free(t.v);
    return result;
}

/* Whether p is still the process listed (same pid, same start time). */
static int still_there(const gs__proc_ref_t *p)
{
    proc_info_t info;
    uint64_t start = 0;
    if (read_stat(p->pid, &info) != 0 || !gs_proc_alive(p->pid, &start))
        return 0;
    return p->start == 0 || info.start == p->start;
}

static unsigned prune(gs__proc_refs_t *list, int sig)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < list->n; i++) {
        if (!still_there(&list->v[i]))
            continue;
        if (sig != 0)
            kill(list->v[i].pid, sig);
        list->v[kept++] = list->v[i];
    }
    list->n = kept;
    return kept;
}

unsigned gs__lease_procs_signal(gs__proc_refs_t *list, int sig)
{
    return prune(list, sig);
}

unsigned gs__lease_procs_alive(gs__proc_refs_t *list)
{
    return prune(list, 0);
}

void gs__lease_procs_clear(gs__proc_refs_t *list)
{
    free(list->v);
    list->v = NULL;
    list->n = list->cap = 0;
}

typedef struct finder {
    uid_t owner;
    void (*found)(void *arg, gs_region_t *region);
    void *arg;
    inode_match_t *seen;
    size_t n_seen, cap_seen;
    int count;
} finder_t;

static int seen_before(finder_t *f, const struct stat *st)
{
    for (size_t i = 0; i < f->n_seen; i++) {
        if (f->seen[i].dev == st->st_dev && f->seen[i].ino == st->st_ino)
            return 1;
    }
    if (f->n_seen == f->cap_seen) {
        size_t cap = f->cap_seen != 0 ? 2 * f->cap_seen : 64;
        inode_match_t *grown = realloc(f->seen, cap * sizeof(*grown));
        if (grown == NULL)
            return 1; /* out of memory: skip it rather than adopt it twice */
        f->seen = grown;
        f->cap_seen = cap;
    }
    f->seen[f->n_seen].dev = st->st_dev;
    f->seen[f->n_seen].ino = st->st_ino;
    f->n_seen++;
    return 0;
}

static int adopt_one(void *arg, const char *path)
{
    finder_t *f = arg;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || st.st_uid != f->owner || seen_before(f, &st)) {
        close(fd);
        return 0;
    }
    gs_region_t *region = NULL;
    if (gs_region_adopt(fd, GS_REGION_SEALED, &region) == 0) {
        f->found(f->arg, region);
        f->count++;
    }
    return 0;
}

int gs__lease_procs_find_regions(uid_t owner, void (*found)(void *arg, gs_region_t *region),
                                 void *arg)
{
    finder_t f = {.owner = owner, .found = found, .arg = arg};
    proc_table_t t = {0};
    if (read_table(&t) == 0) {
        for (size_t i = 0; i < t.n; i++) {
            if (t.v[i].pid != getpid())
                each_region_link(t.v[i].pid, adopt_one, &f);
        }
    }
    free(t.v);
    free(f.seen);
    return f.count;
}
