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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MEMFD_LINK "/memfd:" GS_REGION_MEMFD_NAME

#define CGROUP_ROOT      "/sys/fs/cgroup"
#define CGROUP_DIR_MAX   1024 /* a hierarchy's directory and a cgroup path below it */
#define CGROUP_DEPTH_MAX 16   /* levels below a keyed lease's cgroup that are looked at */

/* What one pass over /proc reads of a process. */
typedef struct proc_info {
    pid_t pid, ppid;
    uint64_t start;
    char state; /* 'Z' (zombie), 'X' (dead), ... */
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
    info->state = p[2];
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

/* The real and effective uids of pid from /proc/PID/status. Returns 0 or GS_ENOENT. */
static int read_uids(pid_t pid, uid_t *ruid, uid_t *euid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GS_ENOENT;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return GS_ENOENT;
    buf[n] = '\0';
    const char *line = strstr(buf, "\nUid:");
    unsigned long r = 0, e = 0;
    if (line == NULL || sscanf(line + 5, "%lu %lu", &r, &e) != 2)
        return GS_ENOENT;
    *ruid = (uid_t)r;
    *euid = (uid_t)e;
    return 0;
}

/* The real uid of pid, or (uid_t)-1. */
static uid_t real_uid(pid_t pid)
{
    uid_t ruid = (uid_t)-1, euid = (uid_t)-1;
    read_uids(pid, &ruid, &euid);
    return ruid;
}

int gs__proc_identity(pid_t pid, gs__proc_id_t *id)
{
    proc_info_t info;
    memset(id, 0, sizeof(*id));
    if (pid <= 0 || read_stat(pid, &info) != 0 || info.state == 'Z' || info.state == 'X' ||
        info.start == 0 || read_uids(pid, &id->ruid, &id->euid) != 0)
        return GS_ENOENT;
    id->start = info.start;
    id->ppid = info.ppid;
    return 0;
}

/* Whether the process is uid's (its real or effective uid; (uid_t)-1: anyone's). */
static int owned_by(const gs__proc_id_t *id, uid_t uid)
{
    return uid == (uid_t)-1 || id->ruid == uid || id->euid == uid;
}

/* The pid a pidfd names now (its fdinfo), -1 once the process is gone (reaped). */
static pid_t pidfd_pid(int pidfd)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *line = strstr(buf, "Pid:");
    return line != NULL ? (pid_t)strtol(line + 4, NULL, 10) : -1;
}

int gs__proc_open_exact(pid_t pid, uint64_t start, uid_t uid)
{
    if (pid <= 1 || start == 0 || pid == getpid())
        return GS_EPERM;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return errno == ESRCH ? GS_ENOENT : -errno;
    /* Read after the pidfd is open: it cannot name another process any more, so a process with
     * the start time and owner expected is the one it names. */
    gs__proc_id_t id;
    if (gs__proc_identity(pid, &id) != 0 || id.start != start || !owned_by(&id, uid)) {
        close(fd);
        return GS_ENOENT;
    }
    return fd;
}

int gs__proc_signal(pid_t pid, uint64_t start, uid_t uid, int sig)
{
    int fd = gs__proc_open_exact(pid, start, uid);
    if (fd < 0)
        return fd;
    int result = syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0 ? 0 : -errno;
    close(fd);
    return result;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* A pidfd of the process that connected on sock: the kernel's own handle on it (Linux 6.5), no
 * pid can be reused under it; older kernels: a pidfd of the pid, which the callers' checks tie
 * to what they expect. Returns the descriptor or -errno. */
static int peer_pidfd(int sock, pid_t pid)
{
    int pidfd = -1;
    socklen_t len = sizeof(pidfd);
    if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0 || pidfd < 0)
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return pidfd >= 0 ? pidfd : -errno;
}

int gs__proc_peer(int sock, pid_t pid, uid_t uid, uint64_t *start)
{
    *start = 0;
    int pidfd = peer_pidfd(sock, pid);
    if (pidfd < 0)
        return pidfd == -EMFILE || pidfd == -ENFILE ? pidfd : GS_ENOENT;
    gs__proc_id_t id;
    int result = gs__proc_identity(pid, &id) == 0 && owned_by(&id, uid) && pidfd_pid(pidfd) == pid
                     ? 0
                     : GS_ENOENT;
    if (result != 0 && (errno == EMFILE || errno == ENFILE))
        result = -errno; /* /proc could not be read: out of descriptors, not a process gone */
    close(pidfd);
    if (result == 0)
        *start = id.start;
    return result;
}

int gs__proc_peer_in_cgroup(int sock, pid_t pid, const char *path)
{
    int pidfd = peer_pidfd(sock, pid);
    if (pidfd < 0)
        return pidfd == -EMFILE || pidfd == -ENFILE ? pidfd : 0;
    /* The pidfd still naming pid after the read: the process read was the one it holds. */
    int in = gs__proc_in_cgroup(pid, path) && pidfd_pid(pidfd) == pid;
    close(pidfd);
    return in;
}

static int list_has(const gs__proc_refs_t *list, pid_t pid)
{
    for (unsigned i = 0; i < list->n; i++) {
        if (list->v[i].pid == pid)
            return 1;
    }
    return 0;
}

int gs__proc_refs_add(gs__proc_refs_t *list, pid_t pid, uint64_t start, uid_t uid)
{
    if (pid <= 1 || start == 0 || pid == getpid() || list_has(list, pid))
        return 0;
    if (list->n == list->cap) {
        unsigned cap = list->cap != 0 ? 2 * list->cap : 16;
        gs__proc_ref_t *grown = realloc(list->v, cap * sizeof(*grown));
        if (grown == NULL)
            return GS_ENOMEM;
        list->v = grown;
        list->cap = cap;
    }
    list->v[list->n++] = (gs__proc_ref_t){.pid = pid, .start = start, .uid = uid};
    return 1;
}

static int list_add(gs__proc_refs_t *list, const proc_info_t *info, uid_t uid)
{
    return gs__proc_refs_add(list, info->pid, info->start, uid);
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

/* The region's holders, their real uid but root (only scope's unless it is (uid_t)-1): a pass
 * over every process of the node. */
static int add_region_holders(const gs_region_t *region, uid_t scope, gs__proc_refs_t *list)
{
    struct stat st;
    if (gs_region_fd(region) < 0 || fstat(gs_region_fd(region), &st) != 0)
        return 0;
    inode_match_t want = {.dev = st.st_dev, .ino = st.st_ino};
    proc_table_t t = {0};
    int added = read_table(&t);
    for (size_t i = 0; added >= 0 && i < t.n; i++) {
        uid_t uid = real_uid(t.v[i].pid);
        int r = 0;
        if (t.v[i].pid != getpid() && uid != 0 && uid != (uid_t)-1 &&
            (scope == (uid_t)-1 || uid == scope) && each_region_link(t.v[i].pid, is_region, &want))
            r = list_add(list, &t.v[i], uid);
        added = r < 0 ? r : added + r;
    }
    free(t.v);
    return added;
}

/* pid's children (every thread's, from /proc/PID/task/TID/children), appended to out (room for
 * max). Returns how many. */
static int read_children(pid_t pid, pid_t *out, unsigned max)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return 0; /* gone */
    struct dirent *e;
    int n = 0;
    while ((unsigned)n < max && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/task/%.20s/children", (int)pid, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* the thread ended meanwhile */
        ssize_t len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[len > 0 ? len : 0] = '\0';
        for (char *p = buf, *end; (unsigned)n < max; p = end) {
            long child = strtol(p, &end, 10);
            if (end == p)
                break;
            out[n++] = (pid_t)child;
        }
    }
    closedir(dir);
    return n;
}

/* Whether the kernel keeps children lists (CONFIG_PROC_CHILDREN), looked at once. */
static int children_lists(void)
{
    static int known = -1;
    if (known < 0)
        known = access("/proc/thread-self/children", R_OK) == 0;
    return known;
}

/* From each root (the holder, the members), their descendants whose real uid is uid, by the
 * kernel's children lists: work in proportion to the lease's own processes, no pass over the
 * node's. Returns how many were added, GS_ENOSYS (no children lists) or -errno. */
static int add_descendants(const pid_t *roots, unsigned n_roots, uid_t uid, gs__proc_refs_t *list)
{
    if (!children_lists())
        return GS_ENOSYS;
    pid_t *queue = malloc(GS__LEASE_PROCS_MAX * sizeof(*queue));
    if (queue == NULL)
        return GS_ENOMEM;
    unsigned n = 0;
    for (unsigned i = 0; i < n_roots && n < GS__LEASE_PROCS_MAX; i++)
        queue[n++] = roots[i];
    int added = 0;
    for (unsigned next = 0; next < n && added >= 0; next++) {
        int got = read_children(queue[next], queue + n, GS__LEASE_PROCS_MAX - n);
        if (got < 0) {
            added = got;
            break;
        }
        for (unsigned k = n; k < n + (unsigned)got; k++) {
            gs__proc_id_t id;
            if (gs__proc_identity(queue[k], &id) == 0 && id.ruid == uid &&
                gs__proc_refs_add(list, queue[k], id.start, uid) > 0)
                added++;
        }
        n += (unsigned)got;
    }
    free(queue);
    return added;
}

/* The same from a table of every process (kernels without children lists). */
static int add_descendants_table(const pid_t *roots, unsigned n_roots, uid_t uid,
                                 gs__proc_refs_t *list)
{
    proc_table_t t = {0};
    int added = read_table(&t);
    pid_t *frontier = added == 0 ? calloc(t.n + n_roots + 1, sizeof(pid_t)) : NULL;
    if (frontier == NULL) {
        free(t.v);
        return added != 0 ? added : GS_ENOMEM;
    }
    size_t nf = 0;
    for (unsigned i = 0; i < n_roots; i++)
        frontier[nf++] = roots[i];
    for (size_t next = 0; next < nf; next++) {
        for (size_t i = 0; i < t.n && nf < t.n + n_roots; i++) {
            if (t.v[i].ppid != frontier[next])
                continue;
            frontier[nf++] = t.v[i].pid;
            if (real_uid(t.v[i].pid) == uid && list_add(list, &t.v[i], uid) > 0)
                added++;
        }
    }
    free(frontier);
    free(t.v);
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

/* The processes of one cgroup directory (its cgroup.procs) and of those below it, of scope's
 * uid (real or effective; (uid_t)-1: whatever their user, root named the cgroup), into list; at
 * most GS__LEASE_PROCS_MAX looked at in all (*budget), and CGROUP_DEPTH_MAX levels. Returns how
 * many were added. */
static int add_cgroup_dir(const char *dir, unsigned depth, uid_t scope, unsigned *budget,
                          gs__proc_refs_t *list)
{
    char path[CGROUP_DIR_MAX + 16], buf[32];
    int added = 0;
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    while (f != NULL && *budget > 0 && fgets(buf, sizeof(buf), f) != NULL) {
        pid_t pid = (pid_t)strtol(buf, NULL, 10);
        gs__proc_id_t id;
        (*budget)--;
        if (pid > 1 && pid != getpid() && gs__proc_identity(pid, &id) == 0 &&
            owned_by(&id, scope) && gs__proc_refs_add(list, pid, id.start, scope) > 0)
            added++;
    }
    if (f != NULL)
        fclose(f);
    DIR *d = depth < CGROUP_DEPTH_MAX ? opendir(dir) : NULL;
    struct dirent *e;
    while (d != NULL && *budget > 0 && (e = readdir(d)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        int n = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < CGROUP_DIR_MAX)
            added += add_cgroup_dir(path, depth + 1, scope, budget, list);
    }
    if (d != NULL)
        closedir(d);
    return added;
}

/* Every process of scope (as add_cgroup_dir) in cgroup (a path as /proc/PID/cgroup writes it)
 * or below, in each hierarchy mounted in CGROUP_ROOT: the cgroups' own lists, work in proportion
 * to their processes. */
static int add_cgroup_procs(const char *cgroup, uid_t scope, gs__proc_refs_t *list)
{
    char dir[CGROUP_DIR_MAX];
    unsigned budget = GS__LEASE_PROCS_MAX;
    struct stat st;
    if (stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0) { /* cgroup v2 at the root */
        snprintf(dir, sizeof(dir), CGROUP_ROOT "%s", cgroup);
        return add_cgroup_dir(dir, 0, scope, &budget, list);
    }
    int added = 0;
    DIR *root = opendir(CGROUP_ROOT); /* v1 controllers, and v2's "unified" beside them */
    struct dirent *e;
    while (root != NULL && budget > 0 && (e = readdir(root)) != NULL) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR)
            continue; /* links (cpu -> cpu,cpuacct) name a hierarchy read anyway */
        snprintf(dir, sizeof(dir), CGROUP_ROOT "/%s%s", e->d_name, cgroup);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            added += add_cgroup_dir(dir, 0, scope, &budget, list);
    }
    if (root != NULL)
        closedir(root);
    return added;
}

/* The roots of the lease's processes: its holder and its members, each only if it is still the
 * process recorded; those of uid go into the list themselves when with_self. */
static unsigned lease_roots(const gs__lease_procs_query_t *q, pid_t *roots, gs__proc_refs_t *list,
                            int *added)
{
    unsigned n = 0;
    gs__proc_id_t id;
    if (q->holder > 0 && gs__proc_identity(q->holder, &id) == 0 && id.start == q->holder_start) {
        roots[n++] = q->holder;
        if (q->with_holder && id.ruid == q->uid &&
            gs__proc_refs_add(list, q->holder, id.start, q->uid) > 0)
            (*added)++;
    }
    for (unsigned i = 0; q->members != NULL && i < q->members->n && n < GS__LEASE_MEMBERS_MAX + 1;
         i++) {
        const gs__proc_ref_t *m = &q->members->v[i];
        if (gs__proc_identity(m->pid, &id) != 0 || id.start != m->start || id.ruid != q->uid)
            continue;
        roots[n++] = m->pid;
        if (gs__proc_refs_add(list, m->pid, m->start, q->uid) > 0)
            (*added)++;
    }
    return n;
}

int gs__lease_procs_find(const gs__lease_procs_query_t *q, gs__proc_refs_t *list)
{
    pid_t roots[GS__LEASE_MEMBERS_MAX + 1];
    int added = 0;
    unsigned n = lease_roots(q, roots, list, &added);
    int r = n > 0 ? add_descendants(roots, n, q->uid, list) : 0;
    if (r == GS_ENOSYS)
        r = add_descendants_table(roots, n, q->uid, list);
    if (r < 0)
        return r;
    added += r;
    if (q->region != NULL) {
        r = add_region_holders(q->region, q->scope, list);
        if (r < 0)
            return r;
        added += r;
    }
    if (q->cgroup != NULL && q->cgroup[0] != '\0')
        added += add_cgroup_procs(q->cgroup, q->scope, list);
    return added;
}

/* Sends sig to each process of list that is still the one listed (through a pidfd, after its
 * start time and owner are checked), or only checks that when sig is 0; drops the others. */
static unsigned prune(gs__proc_refs_t *list, int sig)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < list->n; i++) {
        const gs__proc_ref_t *p = &list->v[i];
        gs__proc_id_t id;
        int there = sig != 0 ? gs__proc_signal(p->pid, p->start, p->uid, sig) == 0
                             : gs__proc_identity(p->pid, &id) == 0 && id.start == p->start;
        if (there)
            list->v[kept++] = *p;
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
