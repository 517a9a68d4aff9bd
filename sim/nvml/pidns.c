/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: a process's pid as the calling process's PID namespace sees it.
 *
 * NVIDIA's driver keeps each client's struct pid and translates it for the caller: RM's process
 * queries (gpuGetProcWithObject, _gpuConvertPid) call os_find_ns_pid, which is pid_vnr() — the
 * pid in the caller's namespace, and "not found" (the process is left out of the list) when the
 * caller's namespace cannot see it (NVIDIA/open-gpu-kernel-modules). A host tool therefore sees
 * host pids, also for jobs in their own PID namespace.
 *
 * gpusim records each process's namespace, its pid there and its start time (gsim_proc_t) and
 * translates here: a process of the caller's namespace has its own pid; any other is looked up in
 * the caller's /proc — the entry whose NSpid ends in that pid, with that start time (and, where
 * the ns/pid link is readable, that namespace) — and shown under the entry's name. The /proc scan
 * runs outside the node lock and its results (found or not) are kept per slot for as long as the
 * slot holds the same process. A caller whose /proc belongs to an outer namespace sees only the
 * processes of its own namespace. */
#include "nvml_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>

#define MAX_NS_DEPTH 33 /* the kernel nests PID namespaces 32 deep */

typedef struct seen {
    uint64_t pidns, start_ticks;
    int32_t ns_pid;
    uint32_t pid; /* as the caller sees it; 0 = not visible */
    int valid, found;
} seen_t;

typedef struct pidns_cache {
    pthread_mutex_t mutex;
    uint64_t self_ns; /* the caller's namespace, read at each refresh */
    int depth;        /* the caller's level in its /proc's NSpid: 0 when /proc is its own */
    seen_t slot[GSIM_MAX_PROCS];
} pidns_cache_t;

static pidns_cache_t cache = {.mutex = PTHREAD_MUTEX_INITIALIZER};

typedef struct want {
    int slot;
    seen_t id;
} want_t;

static int is_foreign(const gsim_proc_t *p, uint64_t self_ns)
{
    return p->pid != 0 && self_ns != 0 && p->pidns != 0 && p->pidns != self_ns;
}

static int same_process(const seen_t *s, const gsim_proc_t *p)
{
    return s->valid && s->pidns == p->pidns && s->ns_pid == p->ns_pid &&
           s->start_ticks == p->start_ticks;
}

/* Is /proc/<pid> (whose NSpid ends in the wanted pid) the wanted process? */
static int matches(int pid, const seen_t *id)
{
    if (id->start_ticks != 0 && gsim_start_ticks_of(pid) != id->start_ticks)
        return 0;
    uint64_t ns = gsim_pidns_of(pid); /* 0 when another user's link is not readable */
    return ns == 0 || ns == id->pidns;
}

/* One pass over /proc resolving every wanted identity. */
static void scan_proc(want_t *want, int n)
{
    DIR *dp = opendir("/proc");
    if (dp == NULL)
        return;
    struct dirent *e;
    int32_t ids[MAX_NS_DEPTH];
    while ((e = readdir(dp)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end != '\0')
            continue;
        int k = gsim_nspid_of((int)pid, ids, MAX_NS_DEPTH);
        if (k < 2 || k > MAX_NS_DEPTH)
            continue; /* a process of /proc's own namespace is never a foreign one */
        for (int i = 0; i < n; i++) {
            seen_t *id = &want[i].id;
            if (!id->found && ids[k - 1] == id->ns_pid && matches((int)pid, id)) {
                id->found = 1;
                id->pid = (uint32_t)pid;
            }
        }
    }
    closedir(dp);
}

/* Collects the foreign slots the cache does not know yet (node lock, then cache mutex). */
static int collect(gsim_node_t *node, uint64_t self_ns, want_t *want)
{
    int n = 0;
    gsim_node_lock(node);
    pthread_mutex_lock(&cache.mutex);
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        const gsim_proc_t *p = &node->procs[i];
        if (!is_foreign(p, self_ns) || same_process(&cache.slot[i], p))
            continue;
        want[n].slot = i;
        want[n].id = (seen_t){
            .pidns = p->pidns, .start_ticks = p->start_ticks, .ns_pid = p->ns_pid, .valid = 1};
        n++;
    }
    pthread_mutex_unlock(&cache.mutex);
    gsim_node_unlock(node);
    return n;
}

void gsim_nvml_pidns_refresh(gsim_node_t *node)
{
    int32_t ids[MAX_NS_DEPTH];
    uint64_t self_ns = gsim_pidns_of(0);
    int k = gsim_nspid_of(0, ids, MAX_NS_DEPTH);
    int depth = k > 0 ? k - 1 : 0;
    pthread_mutex_lock(&cache.mutex);
    cache.self_ns = self_ns;
    cache.depth = depth;
    pthread_mutex_unlock(&cache.mutex);
    want_t *want = malloc(sizeof(want_t) * GSIM_MAX_PROCS);
    if (want == NULL)
        return;
    int n = collect(node, self_ns, want);
    if (n > 0 && depth == 0)
        scan_proc(want, n);
    pthread_mutex_lock(&cache.mutex);
    for (int i = 0; i < n; i++)
        cache.slot[want[i].slot] = want[i].id;
    pthread_mutex_unlock(&cache.mutex);
    free(want);
}

uint32_t gsim_nvml_visible_pid(const gsim_node_t *node, int slot)
{
    const gsim_proc_t *p = &node->procs[slot];
    if (p->pid == 0)
        return 0;
    pthread_mutex_lock(&cache.mutex);
    if (cache.self_ns == 0)
        cache.self_ns = gsim_pidns_of(0);
    uint32_t pid;
    if (!is_foreign(p, cache.self_ns))
        pid = (uint32_t)(p->ns_pid != 0 ? p->ns_pid : p->pid);
    else
        pid = same_process(&cache.slot[slot], p) ? cache.slot[slot].pid : 0;
    pthread_mutex_unlock(&cache.mutex);
    return pid;
}

int gsim_nvml_slot_of_key(const gsim_node_t *node, int32_t key)
{
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        if (key != 0 && node->procs[i].pid == key)
            return i;
    }
    return -1;
}
